"""Shared fixtures: a tiny randomly initialised Llama and a tokenizer trained here, in seconds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

TEST_DEVICE = os.environ.get("KBAKE_TEST_DEVICE", "cpu")
"""Where the suite runs: `cpu` (the default, also on a GPU machine) or `cuda` (KBAKE_TEST_DEVICE=cuda)."""
if TEST_DEVICE not in ("cpu", "cuda"):
    raise pytest.UsageError(f"KBAKE_TEST_DEVICE must be cpu or cuda, got {TEST_DEVICE!r}")
if TEST_DEVICE == "cpu":
    # Hidden before anything initialises CUDA, so kbake's own device choice (accelerate, eval) lands on the CPU.
    os.environ["CUDA_VISIBLE_DEVICES"] = ""

CPU_ONLY = pytest.mark.skipif(TEST_DEVICE != "cpu", reason="a claim about the CPU; KBAKE_TEST_DEVICE is not cpu")


def pytest_configure(config):
    if TEST_DEVICE == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise pytest.UsageError("KBAKE_TEST_DEVICE=cuda but torch sees no CUDA device")


@pytest.fixture(scope="session")
def device():
    """The torch device the suite runs on (KBAKE_TEST_DEVICE): tests that build tensors put them here."""
    import torch

    return torch.device(TEST_DEVICE)


def env_with_tests_on_path(**extra: str) -> dict:
    """The environment for a subprocess test: this folder added to PYTHONPATH, not replacing it
    (an install that relies on PYTHONPATH, e.g. a `pip --target` folder, keeps working)."""
    path = os.pathsep.join(p for p in (str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


def load_benchmark(name: str):
    """benchmarks/NAME.py as a module (the benchmarks are scripts, not a package), to test its functions."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"{name}_bench", Path(__file__).parents[1] / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_tiny_model(folder: Path, corpus: list[str], vocab_size: int = 512, seed: int = 0,
                     init_range: float = 0.02) -> Path:
    """Train a byte-level BPE on `corpus`, build a 2-layer Llama, save both to `folder`."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(corpus, trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", bos_token="<|im_start|>",
                                  pad_token="<|endoftext|>", unk_token=None)
    tok.chat_template = CHATML
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                         tie_word_embeddings=True, initializer_range=init_range)
    model = LlamaForCausalLM(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def sample_text() -> str:
    from kbake.ingest.readers import read_document
    from kbake.sample import sample_documents

    return read_document(sample_documents()[0])


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory, sample_text) -> str:
    """Path of a tiny Llama + BPE tokenizer trained on the shipped sample and some general text."""
    import json

    from kbake.sample import general_dir

    general = [json.loads(l)["text"] for l in (general_dir() / "paragraphs.jsonl").open()][:200]
    corpus = sample_text.split("\n\n") + general
    return str(build_tiny_model(tmp_path_factory.mktemp("tiny-llama"), corpus))


@pytest.fixture(scope="session")
def peaky_tiny_model(tmp_path_factory, sample_text) -> str:
    """The tiny model with a larger initialisation: its next-token distributions are far
    from uniform, so a policy-gradient step can visibly move them (GRPO tests)."""
    return str(build_tiny_model(tmp_path_factory.mktemp("tiny-llama-peaky"), sample_text.split("\n\n"), init_range=0.5))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Each test gets its own kbake cache unless it opts into the real one (slow tests)."""
    if "KBAKE_TEST_REAL_CACHE" not in os.environ:
        monkeypatch.setenv("KBAKE_CACHE", str(tmp_path / "kbake-cache"))
