"""Layer 2: every shipped recipe validates, opens with the command that uses it, and
the schema rejects what it should."""

from pathlib import Path

import pytest

from kbake.config import ConfigError, Recipe, load_recipe

RECIPES = sorted((Path(__file__).parent.parent / "recipes").rglob("*.yaml"))


def test_there_are_recipes():
    assert len(RECIPES) >= 1


def test_compare_lora_is_the_demo_lora():
    """`demo --compare`'s lora row must be the model `kbake demo` trains, plus snapshots."""
    root = Path(__file__).parent.parent / "recipes"
    demo, lora = load_recipe(root / "demo.yaml").train, load_recipe(root / "compare" / "lora.yaml").train
    assert lora.snapshot_every > 0
    assert lora.model_copy(update={"snapshot_every": demo.snapshot_every}) == demo


def test_compare_recipes_ship_with_the_package():
    from kbake.demo import compare_recipes

    names = [p.stem for p in compare_recipes()]
    assert {"lora", "lora-raw", "full", "tiny", "memory", "grpo", "full-aggressive"} <= set(names)


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.name)
def test_recipe_validates(path):
    recipe = load_recipe(path)
    assert isinstance(recipe, Recipe)


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.name)
def test_recipe_opens_with_its_command(path):
    first = path.read_text().splitlines()[0]
    assert first.startswith("# kbake "), f"{path.name} must open with the kbake command that uses it"


def test_unknown_key_rejected(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("ingest:\n  chunk_size: 10\n")
    with pytest.raises(ConfigError, match=r"unknown key 'ingest.chunk_size'; allowed: .*chunk_tokens"):
        load_recipe(p)


def test_unknown_section_rejected(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("ingset:\n  chunk_tokens: 10\n")
    with pytest.raises(ConfigError, match="unknown key 'ingset'"):
        load_recipe(p)


def test_wrong_type_rejected(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("ingest:\n  chunk_tokens: lots\n")
    with pytest.raises(ConfigError, match=r"ingest.chunk_tokens: .*integer.*'lots'"):
        load_recipe(p)


def test_overlap_must_be_below_size():
    with pytest.raises(ConfigError, match="overlap_tokens"):
        load_recipe(None, {"ingest.chunk_tokens": 64, "ingest.overlap_tokens": 64})


def test_override_beats_recipe(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("ingest:\n  chunk_tokens: 300\n")
    assert load_recipe(p).ingest.chunk_tokens == 300
    assert load_recipe(p, {"ingest.chunk_tokens": 128}).ingest.chunk_tokens == 128


def test_set_null_clears_a_key_the_recipe_sets(tmp_path):
    """`--set train.max_steps=null` trains by epochs again (it was silently ignored before)."""
    from kbake.config import parse_sets

    p = tmp_path / "r.yaml"
    p.write_text("train:\n  max_steps: 380\n  epochs: 3\n")
    assert load_recipe(p).train.max_steps == 380
    assert load_recipe(p, parse_sets(["train.max_steps=null"])).train.max_steps is None
    with pytest.raises(ConfigError, match="epochs"):
        load_recipe(p, parse_sets(["train.epochs=null"]))  # a key that may not be empty says so


def test_invalid_yaml_names_line(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("ingest:\n  chunk_tokens: [1,\n")
    with pytest.raises(ConfigError, match=r"r.yaml: not valid YAML at line"):
        load_recipe(p)


def test_every_field_documented():
    """Each option carries a docstring: it is the --help and the docs of that option."""
    from pydantic import BaseModel

    def walk(model: type[BaseModel], prefix=""):
        for name, field in model.model_fields.items():
            assert field.description, f"{prefix}{name} has no docstring"
            ann = field.annotation
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                walk(ann, f"{prefix}{name}.")

    walk(Recipe)


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.name)
def test_recipe_opens_with_its_command_and_names_its_result(path):
    """torchtune's rule: the first line is the command that uses it; the header names the result
    it produces (figures live with the result, not copied into the recipe)."""
    header = [line for line in path.read_text().splitlines() if line.startswith("#")]
    assert path.read_text().startswith("# kbake ")
    assert any("Result it produces" in line or "docs/results.md" in line for line in header), path.name


def test_each_method_has_its_own_section_and_flat_keys_move_into_it(tmp_path):
    """`train.lora.r` is the key; the flat `train.lora_r` of older recipes (and --set) lands there too."""
    p = tmp_path / "r.yaml"
    p.write_text("train:\n  method: memory\n  lora:\n    r: 4\n  memory_top_t: 7\n  grpo: {beta: 0.5}\n")
    t = load_recipe(p, {"train.tiny_params": 3}).train
    assert (t.lora.r, t.memory.top_t, t.grpo.beta, t.tiny.params) == (4, 7, 0.5, 3)
    assert "lora_r" not in t.model_dump() and t.model_dump()["memory"]["top_t"] == 7  # saved nested
    p.write_text("train:\n  lora_r: 4\n  lora: {r: 8}\n")
    with pytest.raises(ConfigError, match=r"lora_r and lora.r both given; keep lora.r"):
        load_recipe(p)
    p.write_text("train:\n  lora: {rank: 8}\n")
    with pytest.raises(ConfigError, match=r"unknown key 'train.lora.rank'; allowed: alpha, dropout, r, targets"):
        load_recipe(p)
    with pytest.raises(ConfigError, match=r"train.memory: .*slots must be a perfect square"):
        load_recipe(None, {"train.memory.slots": 1000})
