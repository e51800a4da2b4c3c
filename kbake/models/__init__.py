"""Loading models: the embedded defaults (offline) or any Hugging Face id / local folder."""

from kbake.models.loading import (
    DEFAULT_EMBEDDER,
    DEFAULT_LM,
    cache_root,
    load_causal_lm,
    load_embedder,
    load_tokenizer,
    resolve_lm_path,
)

__all__ = [
    "DEFAULT_EMBEDDER",
    "DEFAULT_LM",
    "cache_root",
    "load_causal_lm",
    "load_embedder",
    "load_tokenizer",
    "resolve_lm_path",
]
