"""Layer 1: every command answers --help, and bad options fail with one clear line."""

import pytest
from typer.testing import CliRunner

from kbake.cli import app

runner = CliRunner()
COMMANDS = [c.name or c.callback.__name__ for c in app.registered_commands]


def test_top_level_help_lists_every_command():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for name in COMMANDS:
        assert name in result.output


@pytest.mark.parametrize("command", COMMANDS)
def test_command_help(command):
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output
    if command != "report":  # report takes evaluated run folders as arguments
        assert "--run" in result.output


def test_unknown_set_key_names_the_key(tmp_path):
    (tmp_path / "a.txt").write_text("Some text about pumps.")
    result = runner.invoke(app, ["ingest", str(tmp_path / "a.txt"), "--run", str(tmp_path / "r"), "--set", "ingest.chunk_tokns=3"])
    assert result.exit_code == 2
    assert "unknown key 'ingest.chunk_tokns'" in result.output
    assert "chunk_tokens" in result.output  # the allowed keys are listed


def test_bad_value_names_key_and_value(tmp_path):
    (tmp_path / "a.txt").write_text("Some text about pumps.")
    result = runner.invoke(app, ["ingest", str(tmp_path / "a.txt"), "--run", str(tmp_path / "r"), "--chunk-tokens", "8"])
    assert result.exit_code == 2
    assert "ingest.chunk_tokens" in result.output and "8" in result.output
