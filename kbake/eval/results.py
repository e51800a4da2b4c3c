"""What `kbake eval` writes to RUN/eval/metrics.json, as types: every model's results, every
change with its interval, and the decisions (advice, findings, equal learning).

eval checks what it is about to write against these models, so a key that a renderer or a
program reading the run relies on cannot disappear or change shape unnoticed; `kbake report`
checks a metrics.json it reads, and a file that does not fit fails with one line naming the
key. Sets whose keys follow the probe kinds of the run (`acc_fact_qa`, `closed_book_paraphrase`)
are typed as mappings of their value type. The in-memory form stays the plain dict that is
written (`validate_metrics` returns it unchanged).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Change(_Strict):
    """A change against a reference on the same items, with its paired bootstrap 95% interval
    (kbake.eval.intervals): accuracy in [0, 1] units, perplexity as a ratio minus one."""

    diff: float
    """The change of the mean (new minus reference)."""
    lo: float
    """Lower end of the 95% interval."""
    hi: float
    """Upper end of the 95% interval."""
    n: int
    """Items paired."""
    gained: int
    """Items whose score rose."""
    lost: int
    """Items whose score fell."""
    detectable: float | None = None
    """The smallest change this set would detect at its disagreement rate (absent for perplexity)."""
    seeds: int | None = None
    """Training seeds pooled (pooled changes only)."""
    per_seed: list[float] | None = None
    """Each seed's change (pooled changes only)."""


class Detects(_Strict):
    """What one comparison can detect: items, change, detectable change, whether it cleared noise."""

    n: int
    diff: float
    detectable: float | None
    beyond_noise: bool


class TrajectoryPoint(_Strict):
    """Learning and forgetting at one snapshot (or the final model) of a training run."""

    step: int | None
    """Optimizer step of the snapshot."""
    learning: Change | None
    """Test change of the learning kind against the base."""
    dev_learning: Change | None
    """Dev change of the learning kind: what the stopping point (epochs) is chosen on."""
    general_eval: Change | None
    """General-eval accuracy change against the base (forgetting)."""
    by_kind: dict[str, dict[str, Change | None]] | None = None
    """Per probe kind, {test, dev}: the change against the base (held-out facts beside QA-trained ones)."""
    novel_ppl: Change | None = None
    """Perplexity change on the novel (a ratio minus one): the cost to general prose."""
    replay_ppl: Change | None = None
    """Perplexity change on held-out Wikipedia, the replay domain."""
    updates: dict | None = None
    """Outcome shares on update probes, when the run has dated changes."""
    year_binding: dict[str, dict] | None = None
    """Which period, at this point of training (as `ModelResult.year_binding`): whether more
    exposures bind the asked period or only the line item."""
    eval_seconds: float | None = None


class ModelResult(_Strict):
    """Every number of one model; the base has no changes (it is the reference)."""

    name: str
    method: str
    """'base', or the training method (`train.METHODS`)."""
    closed_book: dict[str, float | int | None]
    """Test probes without retrieval: n, acc, acc_KIND per probe kind, margin."""
    rag: dict[str, float | int | None] | None = None
    """Test probes with the top-k retrieved chunks in the prompt, as closed_book."""
    dev: dict[str, dict[str, float | int | None] | None] | None = None
    """Dev probes without retrieval: {closed_book: …}; None when the run has no dev probes."""
    general_eval: dict[str, float | int | None] | None = None
    """General multiple-choice sets: n, acc, margin, acc_SET per set."""
    general: dict[str, float | int | None]
    """Perplexity and KL on held-out Wikipedia (replay domain) and a novel, their change against
    the base, general QA F1."""
    short_answer: dict[str, float | None] | None = None
    """Greedy short answers on the test probes: f1, em, f1_KIND."""
    memory: dict[str, float] | None = None
    """Memory-layer diagnostics (read shares)."""
    updates: dict | None = None
    """Outcome shares (newest / stale / other) on update probes."""
    eval_seconds: float
    eval_parts: dict[str, float]
    """Seconds per part of this model's eval."""
    trainable_params: int | None = None
    train_seconds: float | None = None
    data: list[str] | None = None
    """Synth kinds it trained on."""
    steps: int | None = None
    init: str | None = None
    """The model it started from (SFT then RL, a re-bake), when not the base."""
    ingest_round: int | None = None
    vs_base: dict[str, Change] | None = None
    """Every change against the base: closed_book[_KIND], dev_closed_book[_KIND], margin,
    trained_rag, general_eval[_SET], replay_ppl, novel_ppl, update_newest/stale."""
    vs_init: dict[str, Change] | None = None
    """The same changes against the model it started from."""
    closed_vs_base_rag: dict[str, Change] | None = None
    """Closed book minus RAG on the base, paired over test probes: 'all' and per kind."""
    detects: dict[str, Detects] | None = None
    knowledge_map: list[dict[str, str | int]] | None = None
    """Per table (a probe's group): held-out / QA-trained / other test probes answered by base and model."""
    year_binding: dict[str, dict] | None = None
    """Per fact probe kind and split ('fact_qa/test'): the share of choices from the probe's own
    table row, and among those the asked period's share against blind chance (kbake.eval.comparisons.year_binding)."""
    trajectory: list[TrajectoryPoint] | None = None


class Advice(_Strict):
    """Bake, retrieve or both (kbake.eval.decide.decide): the first rule whose interval test holds."""

    verdict: Literal["nothing_trained", "retrieve_no_learning", "retrieve_forgot", "both", "bake", "either",
                     "retrieve_rag_better"]
    model: str | None
    """The trained model it speaks for, or the seed group (NAME of NAME-s0, NAME-s1, …)."""
    models: list[str] = []
    """The trained models behind `model`: the group's seeds, whose changes were pooled."""
    chosen_on: Literal["dev", "test", "none"]
    """How it was chosen: the largest dev learning change ('test' only without dev probes)."""
    learning: Change | None = None
    forgetting: Change | None = None
    closed_minus_rag: Change | None = None
    both_minus_rag: Change | None = None
    both_minus_closed: Change | None = None


class Finding(_Strict):
    """What one trained model's changes show (kbake.eval.decide.findings)."""

    learning_beyond_noise: bool
    closed_vs_base_rag: Literal["above", "below", "equal"]
    general_eval: Literal["forgot", "gained", "no_change"] | None = None
    items_for_2pt_drop: int | None = None
    """General-eval items a 2-point drop would need to clear its interval, when this one did not."""
    vs_init_beyond_noise: bool | None = None


class EqualLearning(_Strict):
    """Two models' general-eval change at the learning level both reach (decide.equal_learning)."""

    a: str
    b: str
    level: float | None
    a_general_eval: float | None
    b_general_eval: float | None
    a_checkpoints: int
    b_checkpoints: int


class SeedGroup(_Strict):
    """A recipe trained on several seeds (NAME-sSEED), its changes pooled (kbake.eval.seeds)."""

    group: str
    models: list[str]
    seeds: list[int]
    changes: dict[str, Change]


class Probes(_Strict):
    n: int
    n_test: int
    n_dev: int
    learning_kind: str | None
    """The probe kind learning is judged on (kbake.eval.comparisons.LEARNING_KINDS)."""
    kinds: dict[str, int]
    """Test probes per kind."""


class Metrics(_Strict):
    """RUN/eval/metrics.json."""

    rebake: dict | None
    """A re-bake's training time against a retrain of the same method, when the run has both."""
    provenance: dict
    """Version, git hash, seed, model, precision, the resolved eval config."""
    probes: Probes
    retrieval: dict
    """Retriever, k, recall@k on test probes, embedder."""
    general: dict
    """How many general passages, novel passages, questions and general-eval items were scored."""
    source_tokens: int
    models: list[ModelResult]
    """The base first, then each trained model."""
    per_probe: list[dict]
    """One row per probe: its text, split, kind and each model's answer."""
    general_eval_items: list[dict]
    """One row per general-eval item: each model's correctness and margin."""
    seed_groups: list[SeedGroup] = []
    advice: Advice | None = None
    """Absent only in a metrics.json written before decisions were stored (the report then decides)."""
    findings: dict[str, Finding] = {}
    equal_learning: list[EqualLearning] = []


def validate_metrics(metrics: dict, source: str = "metrics.json") -> dict:
    """`metrics` unchanged if it fits `Metrics`; else ValueError with one line naming `source`
    and the first key at fault."""
    try:
        Metrics.model_validate(metrics)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise ValueError(f"{source}: {where}: {err['msg']} ({e.error_count()} problem(s))") from None
    return metrics


def load_metrics(path: Path) -> dict:
    """A metrics.json read and checked (`validate_metrics`)."""
    return validate_metrics(json.loads(Path(path).read_text()), str(path))
