"""JSON-schema constrained decoding for the local backend: at every step only tokens that
keep the output a valid prefix of a document matching the schema may be sampled, so a
small model cannot break the format (format failures are zero by construction).

Built on lm-format-enforcer (pure Python, no compiled dependency: xgrammar's wheel pulls in
triton and outlines a Rust core, heavy for a CPU-only install). Its transformers
integration does not import under transformers 5, so the tokenizer table is built here.
"""

from __future__ import annotations

import functools
import json

_TABLES: dict[int, object] = {}


def tokenizer_table(tok):
    """lm-format-enforcer's per-tokenizer table (every regular token's text and whether it
    starts a word), built once per tokenizer (a few seconds for a 49k vocabulary)."""
    from lmformatenforcer.tokenenforcer import TokenEnforcerTokenizerData

    key = id(tok)
    if key not in _TABLES:
        special = set(tok.all_special_ids)
        zero = tok.encode("0", add_special_tokens=False)[-1]
        regular = []
        for i in range(len(tok)):
            if i in special:
                continue
            after_zero = tok.decode([zero, i])[1:]  # a word-start token decodes with its leading space here
            if "\ufffd" in after_zero or any(ord(ch) < 32 and ch not in "\t\n\r" for ch in after_zero):
                continue  # a piece of a multi-byte character, or a control character JSON must escape
            regular.append((i, after_zero, len(after_zero) > len(tok.decode([i]))))
        decode = functools.partial(_decode, tok)
        _TABLES[key] = TokenEnforcerTokenizerData(regular, decode, tok.eos_token_id, False, len(tok))
    return _TABLES[key]


def _decode(tok, ids: list[int]) -> str:
    return tok.decode(ids).rstrip("\ufffd")  # an incomplete UTF-8 character is not text yet


def allowed_tokens_fn(tok, schema: str | dict):
    """transformers' `prefix_allowed_tokens_fn(batch_id, ids) -> allowed token ids` for `schema`."""
    from lmformatenforcer import CharacterLevelParserConfig, JsonSchemaParser, TokenEnforcer

    # Compact JSON in the schema's field order: a small model otherwise spends its tokens on
    # whitespace (up to 12 in a row by default) or wanders between fields.
    config = CharacterLevelParserConfig(max_consecutive_whitespaces=2, force_json_field_order=True)
    parser = JsonSchemaParser(json.loads(schema) if isinstance(schema, str) else schema, config)
    enforcer = TokenEnforcer(tokenizer_table(tok), parser)

    def allowed(batch_id: int, ids) -> list[int]:
        return enforcer.get_allowed_tokens(ids.tolist()).allowed_tokens

    return allowed
