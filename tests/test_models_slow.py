"""The real embedded defaults, loaded offline (marked slow: tens of seconds on 2 cores)."""

import pytest


@pytest.mark.slow
def test_default_lm_converts_once_then_loads_from_the_cache(monkeypatch):
    import torch

    from kbake.models import load_causal_lm

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import kbake.models.loading as loading

    model, tok = load_causal_lm("default")  # first load converts the GGUF into the cache (if not there yet)
    n = sum(p.numel() for p in model.parameters())
    assert 130e6 < n < 140e6
    converted = []
    monkeypatch.setattr(loading, "_convert_default", lambda target: converted.append(target))
    again, _ = load_causal_lm("default")  # reads the converted folder: no second conversion
    assert converted == []
    x = tok("The capital of France is", return_tensors="pt")
    with torch.no_grad():
        assert torch.allclose(model(**x).logits, again(**x).logits)
    msgs = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
    ids = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    out = again.generate(**ids, max_new_tokens=12, do_sample=False)
    assert "Paris" in tok.decode(out[0][ids["input_ids"].shape[1]:])


@pytest.mark.slow
def test_default_embedder_ranks_related_text_first():
    from kbake.models import load_embedder

    emb = load_embedder("default")
    vecs = emb.encode(["Where are the membranes made?", "ClearSpan membranes are produced in Aarhus, Denmark.",
                       "The dividend was $0.21 per share."], normalize_embeddings=True)
    assert vecs.shape == (3, 384)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2]


@pytest.mark.slow
def test_default_tokenizer_is_saved_on_first_use_then_read_without_the_gguf(monkeypatch):
    import kbake.models.loading as loading
    from kbake.models import load_tokenizer

    first = load_tokenizer("default")  # parses the GGUF (seconds) and saves the tokenizer in the cache
    assert (loading.cache_root() / "models" / f"{loading._CONVERTED_NAME}-tokenizer" / "tokenizer_config.json").exists()

    def no_gguf():
        raise AssertionError("the GGUF was read again")

    monkeypatch.setattr(loading, "default_gguf", no_gguf)
    again = load_tokenizer("default")
    text = "Costco's net sales for fiscal 2022 were $222,730 million."
    assert again(text)["input_ids"] == first(text)["input_ids"]
    assert again.pad_token == first.pad_token and again.chat_template == first.chat_template
