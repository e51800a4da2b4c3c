"""`kbake demo` end to end on the tiny model (with the shipped corpus: --fast), and
`kbake report` comparing runs."""

import json

from typer.testing import CliRunner

from kbake.cli import app

runner = CliRunner()


def test_demo_end_to_end_on_the_tiny_model(tmp_path, tiny_model):
    run = tmp_path / "demo"
    sets = ["--set", "train.block_size=64", "--set", "train.epochs=1", "--set", "train.batch_size=8",
            "--set", "eval.general_paragraphs=4", "--set", "eval.general_questions=2",
            "--set", "eval.short_answer_tokens=4", "--set", "train.max_steps=3", "--set", "eval.general_eval_items=3",
            "--set", "eval.novel_passages=3"]
    result = runner.invoke(app, ["demo", "--run", str(run), "--fast", "--model", tiny_model, "-q", *sets])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "kbake results" in out and "report:" in out and "lora" in out
    metrics = json.loads((run / "eval" / "metrics.json").read_text())
    assert [m["name"] for m in metrics["models"]] == ["base", "lora"]
    assert (run / "eval" / "report.html").exists()
    state = json.loads((run / "train" / "lora" / "trainer_state.json").read_text())
    assert state["global_step"] == 3
    # Run again: nothing is retrained, the report is rewritten.
    again = runner.invoke(app, ["demo", "--run", str(run), "--fast", "--model", tiny_model, "-q", *sets])
    assert again.exit_code == 0 and "already trained, kept" in again.output

    cmp = runner.invoke(app, ["report", str(run), str(run)])
    assert cmp.exit_code == 0 and cmp.output.count("| lora |") == 2
    missing = runner.invoke(app, ["report", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no eval results" in missing.output


def test_demo_compare_trains_each_recipe_of_the_folder(tmp_path, tiny_model):
    """`--compare` trains one model per recipe file, named by file, each exactly as the file says
    (on the demo's model), and evaluates them all, snapshots included."""
    recipes = tmp_path / "compare"
    recipes.mkdir()
    common = "  base_model: default\n  block_size: 64\n  batch_size: 8\n  max_steps: 4\n  data: [raw]\n"
    (recipes / "small-lora.yaml").write_text(f"# kbake train\ntrain:\n  method: lora\n{common}  snapshot_every: 2\n")
    (recipes / "small-full.yaml").write_text(f"# kbake train\ntrain:\n  method: full\n{common}  lr: 1.0e-4\n")
    run = tmp_path / "demo"
    sets = ["--set", "eval.general_paragraphs=3", "--set", "eval.general_questions=0", "--set", "eval.short_answers=false",
            "--set", "eval.general_eval_items=3", "--set", "eval.novel_passages=2"]
    result = runner.invoke(app, ["demo", "--run", str(run), "--fast", "--compare", "--compare-recipes", str(recipes),
                                 "--model", tiny_model, "-q", *sets])
    assert result.exit_code == 0, result.output
    metrics = json.loads((run / "eval" / "metrics.json").read_text())
    assert [m["name"] for m in metrics["models"]] == ["base", "small-full", "small-lora"]
    lora = metrics["models"][2]
    assert [p["step"] for p in lora["trajectory"]] == [2, 4]
    assert json.loads((run / "train" / "small-full" / "trainer_state.json").read_text())["method"] == "full"
    bad = runner.invoke(app, ["demo", "--run", str(run), "--fast", "--compare", "--compare-recipes", str(tmp_path / "none"),
                              "--model", tiny_model, "-q"])
    assert bad.exit_code != 0 and "no compare recipes" in bad.output


def test_demo_compare_with_seeds_trains_each_recipe_per_seed_and_pools_them(tmp_path, tiny_model):
    """`--compare --seeds 0,1`: one model per recipe and seed (NAME-sSEED), each trained with its
    seed, and the report's seed groups pool them."""
    recipes = tmp_path / "compare"
    recipes.mkdir()
    (recipes / "small-lora.yaml").write_text("# kbake train\ntrain:\n  method: lora\n  base_model: default\n"
                                             "  block_size: 64\n  batch_size: 8\n  max_steps: 2\n  data: [raw]\n")
    run = tmp_path / "demo"
    sets = ["--set", "eval.general_paragraphs=3", "--set", "eval.general_questions=0", "--set", "eval.short_answers=false",
            "--set", "eval.general_eval_items=3", "--set", "eval.novel_passages=2"]
    result = runner.invoke(app, ["demo", "--run", str(run), "--fast", "--compare", "--compare-recipes", str(recipes),
                                 "--seeds", "0,1", "--model", tiny_model, "-q", *sets])
    assert result.exit_code == 0, result.output
    metrics = json.loads((run / "eval" / "metrics.json").read_text())
    assert [m["name"] for m in metrics["models"]] == ["base", "small-lora-s0", "small-lora-s1"]
    assert [json.loads((run / "train" / f"small-lora-s{s}" / "provenance.json").read_text())["seed"]
            for s in (0, 1)] == [0, 1]
    assert [(g["group"], g["seeds"]) for g in metrics["seed_groups"]] == [("small-lora", [0, 1])]
    bad = runner.invoke(app, ["demo", "--run", str(run), "--fast", "--seeds", "0,x", "--model", tiny_model, "-q"])
    assert bad.exit_code != 0 and "--seeds" in bad.output
