"""Private documents stay private: the API key is never written anywhere a run writes,
the run folder and cache are owner-only, and remote calls need an explicit yes."""

from __future__ import annotations

import stat

from openai_server import FakeOpenAI, grounded_answer
from typer.testing import CliRunner

from kbake.cli import app

KEY = "sk-kbake-PLANTED-7f3a9c1e5d"


def test_api_key_never_written_and_folders_private(tmp_path, tiny_model, monkeypatch):
    monkeypatch.setenv("KBAKE_TEST_KEY", KEY)
    runner = CliRunner()
    run = tmp_path / "run"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "memo.md").write_text("Corvane's Muncie foundry employs 1,150 hourly workers. The plant opened in 1952.\n\n"
                                  "The Aarhus plant makes every ClearSpan membrane; 210 chemists work there.")
    r = runner.invoke(app, ["ingest", str(docs), "--run", str(run), "--tokenizer", tiny_model, "-q"])
    assert r.exit_code == 0, r.output
    with FakeOpenAI(answer=grounded_answer) as server:
        common = ["--run", str(run), "--llm", "openai:scripted", "--base-url", server.base_url, "--yes", "-q"]
        r1 = runner.invoke(app, ["probes", *common, "--set", "probes.api_key_env=KBAKE_TEST_KEY"])
        r2 = runner.invoke(app, ["synth", *common, "--api-key-env", "KBAKE_TEST_KEY", "--kind", "qa,rephrase"])
        assert server.seen_auth and all(a == f"Bearer {KEY}" for a in server.seen_auth)  # it was really used
    # ... and a failing call: the error message must not carry it either
    r3 = runner.invoke(app, ["synth", *common[:4], "--base-url", "http://127.0.0.1:9/v1", "--yes", "-q",
                             "--api-key-env", "KBAKE_TEST_KEY", "--set", "synth.max_retries=0"])
    assert r1.exit_code == 0 and r2.exit_code == 0, r1.output + r2.output
    assert r3.exit_code == 1 and "did not answer" in r3.output
    for out in (r.output, r1.output, r2.output, r3.output):
        assert KEY not in out
    files = [p for p in run.rglob("*") if p.is_file()]
    assert len(files) > 5
    for p in files:
        assert KEY.encode() not in p.read_bytes(), p
    for d in [run, *[p for p in run.rglob("*") if p.is_dir()]]:
        assert stat.S_IMODE(d.stat().st_mode) & 0o077 == 0, d
    assert stat.S_IMODE((run / "cache" / "llm.sqlite").stat().st_mode) & 0o077 == 0
