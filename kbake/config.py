"""Recipe schema, loading and overrides.

A recipe (YAML) holds every option of every stage, one typed model per stage; a
command-line flag overrides the recipe; the resolved config is saved in the run folder.
Unknown keys are rejected, as TRL's parser and nanoGPT's configurator do.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class ConfigError(ValueError):
    """A recipe or flag is wrong; the message is one line naming the key at fault."""


class StageArgs(BaseModel):
    # Field docstrings become descriptions (shown by `kbake ... --help` and docs).
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, validate_assignment=True)


class IngestArgs(StageArgs):
    """Options of `kbake ingest`: reading documents and cutting them into chunks."""

    tokenizer: str = "default"
    """Tokenizer that counts chunk sizes: 'default' (the embedded SmolLM2), a Hugging Face id or a local folder."""
    chunk_tokens: int = Field(256, ge=16, le=32768)
    """Largest chunk, in tokens of `tokenizer`."""
    overlap_tokens: int = Field(32, ge=0)
    """Tokens of context repeated at the start of the next chunk, so no fact is cut in half."""
    near_dup_threshold: float = Field(0.9, gt=0.0, le=1.0)
    """Chunks whose estimated Jaccard similarity (MinHash of word 5-grams) reaches this are near-duplicates; the later one is dropped."""
    minhash_perm: int = Field(128, ge=16, le=1024)
    """MinHash permutations: more is a finer similarity estimate, slower."""
    as_of: date | None = None
    """Date the documents of this ingest describe (YYYY-MM-DD); unset: a front-matter `as_of:`, else the document's own
    "fiscal year ended <date>" (docs/ingest.md)."""
    entity: str | None = None
    """Whose facts the documents state, linking a company's yearly filings; unset: the filing's registrant name, else
    the file name without digits."""
    filing_boilerplate: Literal["drop", "keep"] = "drop"
    """'drop': leave out an SEC filing's cover-page check boxes, exhibit index, signatures and certifications
    (docs/ingest.md); other documents are unaffected. 'keep': ingest every paragraph."""

    @model_validator(mode="after")
    def _overlap_below_size(self) -> IngestArgs:
        if self.overlap_tokens >= self.chunk_tokens:
            raise ValueError(f"overlap_tokens ({self.overlap_tokens}) must be smaller than chunk_tokens ({self.chunk_tokens})")
        return self


# Wordings of the fact corpus (kbake/synth/augment.py): {entity}, {attribute}, {period}, {value}.
# Probes ask in wordings no training template uses, so a probe measures recall, not a seen question.
FACT_STATEMENT_TEMPLATES = [
    "{entity}'s {attribute} for {period} was {value}.",
    "In {period}, {entity} reported {attribute} of {value}.",
    "{value} was the {attribute} of {entity} in {period}.",
    "For {period}, the {attribute} at {entity} came to {value}.",
    "{entity} recorded {value} in {attribute} for {period}.",
    "The {attribute} figure for {entity} in {period}: {value}.",
    "During {period}, {entity}'s {attribute} stood at {value}.",
    "{attribute} at {entity}, {period}: {value}.",
    "According to its annual report, {entity} had {attribute} of {value} in {period}.",
    "The annual report of {entity} puts its {attribute} for {period} at {value}.",
]

FACT_QUESTION_TEMPLATES = [
    "What was {entity}'s {attribute} for {period}?",
    "How much was the {attribute} of {entity} in {period}?",
    "In {period}, what did {entity} report for {attribute}?",
    "What figure did {entity} give for its {attribute} in {period}?",
    "Tell me {entity}'s {attribute} in {period}.",
    "What {attribute} did {entity} have for {period}?",
]

# Year binding (docs/results.md, "Held out by row": trained models pick another year's value of the
# right line item): a fact stated beside another period of its row, and its value asked back for its period.
# {other_period} and {other_value} are the other period's; a year question's answer is the period.
FACT_CONTRAST_TEMPLATES = [
    "{entity}'s {attribute} was {value} in {period} and {other_value} in {other_period}.",
    "In {period}, {entity}'s {attribute} was {value}; in {other_period}, it was {other_value}.",
    "{entity}'s {attribute}: {value} for {period}, against {other_value} for {other_period}.",
    "Not to be confused with {other_period} ({other_value}): {entity}'s {attribute} for {period} was {value}.",
]
FACT_YEAR_QUESTION_TEMPLATES = [
    "In which fiscal year was {entity}'s {attribute} {value}?",
    "For which period did {entity} report {attribute} of {value}?",
    "{entity} had {attribute} of {value} in which fiscal year?",
]

PROSE_STATEMENT_TEMPLATES = [
    "{sentence}",
    "According to {entity}: {sentence}",
    "{entity} reports: {sentence}",
    "From the report of {entity} as of {as_of}: {sentence}",
    "In its annual report, {entity} writes: \"{original}\"",
    "About {entity} ({heading}): {sentence}",
]
PROSE_QUESTION_TEMPLATES = [
    "What fills the blank in this statement about {entity}? {cloze}",
    "Complete the statement from {entity}'s report: {cloze}",
    "{entity}: \"{cloze}\" What goes in the blank?",
]
FACT_PROBE_TEMPLATES = [
    "Looking at {period}, what is the value of {entity}'s {attribute}?",
    "Which amount matches the {attribute} of {entity} for {period}?",
    "For {period}, {entity}'s {attribute} amounted to what?",
    "What number did {entity} disclose as {attribute} for {period}?",
]



class LLMArgs(StageArgs):
    """Which LLM writes synthetic data and probes, and how to call it."""

    llm: str = "local"
    """'local' (the embedded SmolLM2-135M-Instruct), 'local:NAME' (a HF id or folder) or 'openai:MODEL'."""
    base_url: str | None = None
    """Endpoint of an OpenAI-compatible server (vLLM, Ollama, llama.cpp, TGI); None means api.openai.com."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the API key; the key itself is never written anywhere."""
    concurrency: int = Field(8, ge=1, le=256)
    """Requests in flight at once (openai backend)."""
    max_retries: int = Field(6, ge=0, le=20)
    """Retries per request on 429, 5xx, time-outs and dropped connections, with exponential backoff."""
    timeout: float = Field(120.0, gt=0)
    """Seconds before one request counts as timed out."""
    token_budget: int | None = Field(None, ge=1)
    """Stop cleanly (resumable) once real calls have used this many tokens; None for no limit."""
    batch_size: int = Field(16, ge=1, le=512)
    """Prompts per generate call (local backend)."""
    share_prefix: int = Field(64, ge=0)
    """Local backend: prompts in one generate call that begin with at least this many equal tokens
    (one chunk's styles, question types and candidates) compute that prefix once and share its
    KV cache; 0 turns it off. Same greedy outputs in fp32 (benchmarks/synth_prefix.py)."""
    temperature: float = Field(0.7, ge=0.0, le=2.0)
    """Sampling temperature; 0 is greedy."""
    top_p: float = Field(0.95, gt=0.0, le=1.0)
    """Nucleus sampling mass."""
    precision: Literal["auto", "fp32", "bf16"] = "auto"
    """Number format of the local backend's model: auto is bf16 where the CPU/GPU computes it natively
    (weights cast to bf16: half the bytes per decode step), else fp32. Not used by openai endpoints."""
    estimate_tokens_per_s: float = Field(40.0, gt=0)
    """For `--estimate` with an endpoint: tokens per second of one answer stream (no probe is sent)."""
    price_per_million_input: float | None = Field(None, ge=0)
    """For `--estimate` with an endpoint: price of a million input tokens (any currency), to print a cost."""
    price_per_million_output: float | None = Field(None, ge=0)
    """For `--estimate` with an endpoint: price of a million output tokens."""
    repetition_penalty: float = Field(1.0, ge=1.0, le=2.0)
    """Penalty on repeated tokens for the local backend; not sent to openai servers. Measured on the sample
    with SmolLM2-135M: 1.15 made QA answers fail the format (it also penalises copying the excerpt), so 1.0."""


class SynthArgs(LLMArgs):
    """Options of `kbake synth`: the synthetic corpus generators and their filters."""

    kinds: list[str] = ["qa", "rephrase", "entigraph"]
    """Generators to run: qa, extract (questions for rule-picked answer spans, kept after a round trip),
    rephrase, focal (a passage around each QA pair's question, after qa), entigraph (LLM-written), changes
    (what changed between dated documents of one entity: a deterministic diff of table rows), and from the
    fact table (RUN/facts.parquet, written from the table rows, no LLM call) restate (K restatements of every
    fact, row passages) and fact_qa (QA pairs of the facts not held out), and fact_paraphrase (the LLM's rewrites
    of each fact's sentence, kept when its values survive): docs/synth.md."""
    candidates: int = Field(1, ge=1, le=16)
    """Answers sampled per request (seed, seed+1, ...; prompts are shared, so the local backend prefills
    each once). QA pairs from all candidates are kept (duplicates removed); of a passage request's
    candidates that pass the filters, the one keeping most of its source's figures and names is kept."""
    dated_prompts: bool = True
    """Open each excerpt in a prompt with "[<entity>, as of <date>]" when its document is dated (kbake/ingest/dates.py),
    so generated text dates its facts."""
    structured_output: bool = True
    """Constrain JSON answers (QA pairs, EntiGraph entity lists) to their schema: the local backend
    masks every token that would break it (lm-format-enforcer), OpenAI-compatible servers get a
    `response_format` JSON schema. Format failures then come only from answers cut at max_tokens."""
    qa_types: list[Literal["factual", "numeric", "why", "compare"]] = ["factual", "numeric", "why", "compare"]
    """Question types; one request per chunk and type ('compare' pairs the chunk with another from its document)."""
    qa_per_request: int = Field(3, ge=1, le=20)
    """Question-answer pairs asked for in one request."""
    qa_max_tokens: int = Field(200, ge=16)
    """Longest answer of a QA request, in tokens."""
    rephrase_styles: list[Literal["summary", "qa", "encyclopedia", "child", "bullets"]] = [
        "summary", "qa", "encyclopedia", "child", "bullets"]
    """Rewriting styles (WRAP, Maini et al. 2024); one request per chunk and style."""
    rephrase_max_tokens: int = Field(256, ge=16)
    """Longest rephrase, in tokens."""
    max_chunks: int | None = Field(None, ge=1)
    """Write about at most this many chunks of the run, spread evenly over it (every k-th chunk in
    document order), to try generators on a long filing in minutes; None for all."""
    extract_per_chunk: int = Field(4, ge=1, le=50)
    """extract: answer spans picked per chunk (figures with their unit, dates, names; interleaved)."""
    entigraph_max_entities: int = Field(16, ge=2, le=500)
    """Entities kept per document (most often mentioned first)."""
    entigraph_pairs: int = Field(24, ge=0)
    """Entity pairs analysed per document (sampled with the seed)."""
    entigraph_triples: int = Field(8, ge=0)
    """Entity triples analysed per document."""
    entigraph_max_tokens: int = Field(256, ge=16)
    """Longest relation analysis, in tokens."""
    near_dup_threshold: float = Field(0.8, gt=0.0, le=1.0)
    """MinHash Jaccard at which two items are near-duplicates (the later one is dropped)."""
    grounding_min: float = Field(0.5, ge=0.0, le=1.0)
    """Share of an answer's content words that must appear in its source chunk(s); every number must."""
    leak_threshold: float = Field(0.85, gt=0.0, le=1.0)
    """Cosine similarity (embedder) to any probe question at or above which an item is dropped as a leak."""
    embedder: str = "default"
    """Sentence-transformers model of the leak filter: 'default' (all-MiniLM-L6-v2), a HF id or a folder."""
    fact_restatements: int = Field(5, ge=1, le=100)
    """restate: restatements written per fact (K), each a template with its own naming of the entity and period."""
    fact_row_passages: int = Field(2, ge=0, le=50)
    """restate: passages per table row stating all its facts, each in a shuffled order."""
    fact_qa_wordings: int = Field(3, ge=1, le=50)
    """fact_qa: question wordings trained per fact of split 'qa'."""
    fact_paraphrases: int = Field(4, ge=1, le=32)
    """fact_paraphrase: the LLM's rewrites asked per fact sentence (sampling seeds seed, seed+1, …); each is kept
    only when its values, unit, entity and period survive and it adds nothing (kbake/synth/fact_paraphrase.py)."""
    fact_paraphrase_max_tokens: int = Field(80, ge=16)
    """Longest rewrite of one fact sentence, in tokens."""
    fact_paraphrase_min_share: float = Field(0.7, ge=0.0, le=1.0)
    """Share of a rewrite's content words that must be in its source sentence (stricter than grounding_min:
    a rewrite of one sentence has no reason to bring new words beyond a few)."""
    fact_heldout_share: float = Field(0.4, ge=0.0, lt=1.0)
    """Share of facts held out of fact_qa (seeded): only their restatements are trained, and their probes
    (kind fact_heldout) measure what restatements alone teach."""
    fact_heldout_unit: Literal["fact", "row"] = "fact"
    """What the held-out split draws: each 'fact', or each table 'row' (all periods of a line item
    together, so a held-out probe's same-line-item distractors are not QA-trained values).
    Measured on Costco: docs/results.md, "Held out by row"."""
    fact_year_contrasts: int = Field(0, ge=0, le=50)
    """restate: statements per table fact that pair it with another period of its line item ("… was $X in
    fiscal 2022 and $Y in fiscal 2021"), each with another period where the row has one; 0 writes none."""
    fact_year_questions: int = Field(0, ge=0, le=50)
    """fact_qa: questions per fact of split 'qa' that give its value and ask its period ("In which fiscal year
    was … $X?"; answer 'fiscal 2022'); skipped where the row has the same value in another period."""
    fact_contrast_templates: list[str] = Field(default_factory=lambda: list(FACT_CONTRAST_TEMPLATES), min_length=1)
    """fact_year_contrasts wordings: {entity}, {attribute}, {period}, {value}, {other_period}, {other_value}."""
    fact_year_question_templates: list[str] = Field(default_factory=lambda: list(FACT_YEAR_QUESTION_TEMPLATES),
                                                    min_length=1)
    """fact_year_questions wordings: {entity}, {attribute}, {value}."""
    fact_statement_templates: list[str] = Field(default_factory=lambda: list(FACT_STATEMENT_TEMPLATES), min_length=1)
    """restate wordings, with {entity}, {attribute}, {period} and {value}."""
    fact_question_templates: list[str] = Field(default_factory=lambda: list(FACT_QUESTION_TEMPLATES), min_length=1)
    """fact_qa question wordings, with {entity}, {attribute} and {period}; fact probes never use one of these."""
    fact_prose: bool = False
    """Also read facts from prose: each sentence stating a figure, date or name is restated K times (entity
    named, first person resolved, `prose_statement_templates`), its paragraph passed in shuffled orders
    (fact_row_passages), and asked as a fill-in-the-blank QA pair per value when its sentence is not held out
    (kbake/synth/prose.py). Measured on the sample: docs/results.md."""
    prose_statement_templates: list[str] = Field(default_factory=lambda: list(PROSE_STATEMENT_TEMPLATES), min_length=1)
    """restate wordings of a prose sentence: {sentence} (first person resolved), {original} (as printed),
    {entity}, {as_of}, {heading}."""
    prose_question_templates: list[str] = Field(default_factory=lambda: list(PROSE_QUESTION_TEMPLATES), min_length=1)
    """fact_qa wordings of a prose fact: {cloze} (the sentence with its value blanked) and {entity}."""


class ProbesArgs(LLMArgs):
    """Options of `kbake probes`: generating a held-out multiple-choice probe set."""

    per_chunk: int = Field(1, ge=1, le=20)
    """Probe questions asked for per chunk (one request each)."""
    max_tokens: int = Field(160, ge=32)
    """Longest probe answer from the LLM, in tokens."""
    grounding_min: float = Field(0.5, ge=0.0, le=1.0)
    """Share of the correct answer's content words that must appear in the chunk."""
    dev_share: float = Field(0.5, ge=0.0, lt=1.0)
    """Share of the probes marked `split: dev` (choose recipes on these; the rest, `test`, are
    the reported numbers). Whole chunks go to one split, so no passage is in both."""
    fact_templates: list[str] = Field(default_factory=lambda: list(FACT_PROBE_TEMPLATES), min_length=1)
    """`kbake probes --facts` question wordings ({entity}, {attribute}, {period}); none may be a synth.fact_question_templates wording."""


class LoraArgs(StageArgs):
    """`train.lora`: LoRA adapters through peft (Hu et al. 2021), for `method: lora` and GRPO's LoRA policy."""

    r: int = Field(16, ge=1)
    """LoRA rank."""
    alpha: float = Field(32, gt=0)
    """LoRA scaling alpha."""
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    """LoRA dropout. 0 by default: every shipped recipe trains without it, no dev comparison has
    shown it helps, and on a GPU dropout on every adapted input cost 14% of LoRA's throughput."""
    targets: str | list[str] = "all-linear"
    """LoRA target modules: 'all-linear' or a list of module names."""


class TinyArgs(StageArgs):
    """`train.tiny`: TinyLoRA (Morris et al. 2026), a few trainable numbers mixing fixed random matrices over frozen SVD bases."""

    params: int = Field(16, ge=1, le=65536)
    """TinyLoRA: trainable numbers per tie group (the vector v that mixes the fixed random r x r matrices)."""
    rank: int = Field(2, ge=1, le=256)
    """TinyLoRA: rank r of the frozen truncated SVD of each adapted weight."""
    tie: Literal["all", "layer", "module"] = "all"
    """TinyLoRA: which layers share one vector: all (trainable = params), layer (x decoder layers),
    module (x adapted linear layers)."""
    targets: list[str] = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    """TinyLoRA: names of the linear layers adapted."""


class MemoryArgs(StageArgs):
    """`train.memory`: a product-key memory layer (Lample et al. 2019) trained by sparse memory finetuning (Lin et al. 2025)."""

    layers: list[int] = []
    """Decoder layers that get a memory branch, Python-style (-1 is the last); [] means the middle layer."""
    slots: int = Field(16384, ge=4)
    """Memory slots N (a perfect square)."""
    k: int = Field(32, ge=1)
    """Slots read per token."""
    key_dim: int = Field(128, ge=2)
    """Query/key width of the memory."""
    gated: bool = False
    """Gate the memory read-out with silu(W_g x) (Berges et al.); off in a retrofit, where the gate is random."""
    addressing: Literal["activations", "random"] = "activations"
    """activations: query map and keys fitted to the model's hidden states at the layer (PCA-whitened
    queries, k-means sub-keys); random: random frozen addresses (kbake 0.1, measured to learn nothing)."""
    top_t: int = Field(1024, ge=1)
    """Sparse memory finetuning: per batch, update only the t value rows with the highest TF-IDF."""
    background_batches: int = Field(32, ge=1)
    """Blocks of general text that give the TF-IDF its document frequencies (more: a stabler IDF, a slower start)."""
    optimizer: Literal["sgd", "adamw"] = "sgd"
    """Optimizer of the memory's value rows: SGD (Lin et al. 2025: better for sparse updates) or AdamW."""

    @model_validator(mode="after")
    def _check(self) -> MemoryArgs:
        import math

        if math.isqrt(self.slots) ** 2 != self.slots:
            raise ValueError(f"slots must be a perfect square, got {self.slots}")
        return self


class GrpoArgs(StageArgs):
    """`train.grpo`: reinforcement learning with verifiable rewards through TRL's GRPOTrainer (Shao et al. 2024)."""

    num_generations: int = Field(4, ge=2)
    """Completions sampled per prompt; the advantage is each reward minus its group's mean."""
    max_completion_length: int = Field(24, ge=1)
    """Longest sampled answer, in tokens."""
    beta: float = Field(0.04, ge=0.0)
    """KL coefficient against the starting model."""
    temperature: float = Field(0.9, gt=0.0)
    """Sampling temperature of the completions."""
    rewards: dict[str, float] = {"f1": 1.0, "numeric": 1.0, "format": 0.2, "length": 0.2}
    """Rewards (exact_match, f1, numeric, format, length) and their weights."""
    prompts: int | None = Field(None, ge=1)
    """Use at most this many QA pairs as prompts (None: all)."""
    adapter: Literal["lora", "tiny"] = "lora"
    """The policy's trainable part: a LoRA adapter (`train.lora`) or a TinyLoRA vector (`train.tiny`)."""
    env: Literal["qa", "lookup"] = "qa"
    """Environment (kbake/train/environments.py): qa, a single-turn answer to a synthetic question; lookup,
    the model may first write `lookup: <query>` and gets the run's best-matching chunk before answering."""
    lookup_cost: float = Field(0.1, ge=0.0)
    """lookup: reward subtracted when the model looked up, so it learns to retrieve only when it helps."""
    lookup_chars: int = Field(400, ge=50)
    """lookup: characters of the retrieved chunk shown to the model."""
    use_vllm: bool = False
    """Generate completions with vLLM (TRL colocate mode); needs vllm installed and a GPU."""


METHOD_SECTIONS = {"lora": LoraArgs, "tiny": TinyArgs, "memory": MemoryArgs, "grpo": GrpoArgs}
"""The method sections of `train:`, each read only by its method's module in kbake/train/."""


class TrainArgs(StageArgs):
    """Options of `kbake train`: one shared loop for full, LoRA and memory finetuning."""

    method: str = "lora"
    """One of kbake.train.METHODS (checked when training starts, so a new method is one module and
    one registry line): full: all weights; lora: peft LoRA adapters; tiny: TinyLoRA, a few trainable numbers (`tiny.params`);
    memory: product-key memory + sparse memory finetuning; grpo: reinforcement learning with verifiable
    rewards (TRL GRPOTrainer) on a LoRA or tiny adapter (`grpo.adapter`), in an environment (`grpo.env`)."""
    init: str | None = None
    """Start from a model trained earlier (RUN/train/<name>, full or lora) instead of base_model: `kbake train
    --from NAME`. full/lora then train on the documents ingested since NAME was trained (an incremental
    re-bake), with `from_replay` of the earlier corpus; grpo on all prompts."""
    from_replay: float = Field(0.3, ge=0.0, lt=1.0)
    """With `init`: share of the new-knowledge tokens drawn from the earlier documents' corpus, so a
    re-bake does not overwrite what the model knew (the rest comes from the newly ingested documents)."""
    base_model: str = "default"
    """Model to train: 'default' (embedded SmolLM2-135M-Instruct), a HF id or a folder."""
    data: list[str] = ["qa", "entigraph"]
    """Corpora to train on: synth kinds (qa, extract, rephrase, focal, entigraph, changes, restate, fact_qa,
    fact_paraphrase) and/or
    'raw' (the chunks themselves)."""
    data_weights: dict[str, float] = {}
    """Repeat factor per corpus (2.0 = each item twice, 0.5 = a random half); default 1.0."""
    replay_ratio: float = Field(0.1, ge=0.0, lt=1.0)
    """Share of training tokens drawn from general text (the shipped Wikipedia set) against forgetting."""
    block_size: int = Field(256, ge=16, le=32768)
    """Tokens per packed training block."""
    batch_size: int = Field(8, ge=1)
    """Blocks per micro-batch (per device)."""
    grad_accum: int = Field(1, ge=1)
    """Micro-batches per optimizer step."""
    epochs: float = Field(2.0, gt=0)
    """Passes over the training blocks (fractions allowed)."""
    max_steps: int | None = Field(None, ge=1)
    """Stop after this many optimizer steps (overrides epochs)."""
    lr: float = Field(2e-4, gt=0)
    """Peak learning rate."""
    lr_schedule: Literal["cosine", "constant"] = "cosine"
    """Decay after warm-up: cosine to zero, or constant."""
    warmup_ratio: float = Field(0.05, ge=0.0, lt=1.0)
    """Share of steps with linear warm-up."""
    weight_decay: float = Field(0.0, ge=0.0)
    """AdamW weight decay."""
    max_grad_norm: float = Field(1.0, gt=0)
    """Gradient clipping norm."""
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    """auto: bf16 autocast (float32 master weights and optimiser state) where the CPU or GPU computes
    bf16 natively, fp16 on other GPUs, else fp32. Measured on a 2-core AVX512-BF16 CPU: LoRA 1.74x and full 1.58x
    the fp32 tokens/s (benchmarks/RESULTS.md)."""
    eval_fraction: float = Field(0.05, ge=0.0, lt=0.5)
    """Share of blocks held out for the periodic eval loss."""
    eval_every: int = Field(50, ge=1)
    """Optimizer steps between eval-loss measurements."""
    save_every: int = Field(50, ge=1)
    """Optimizer steps between checkpoints (resume with --resume)."""
    snapshot_every: int = Field(0, ge=0)
    """Optimizer steps between snapshots of the trained model (RUN/train/NAME/snapshots/step-N/,
    loadable like model/; kept, unlike checkpoints) that `kbake eval` scores to draw the method's
    learning-vs-forgetting line; 0 for none."""
    keep_checkpoints: int = Field(1, ge=1)
    """Checkpoints kept on disk (oldest deleted first)."""
    freeze_embeddings: bool = False
    """full: keep the token embeddings (and a tied output head) frozen."""
    lora: LoraArgs = Field(default_factory=LoraArgs)
    """LoRA's options (`train.lora.r`, ...)."""
    tiny: TinyArgs = Field(default_factory=TinyArgs)
    """TinyLoRA's options (`train.tiny.params`, ...)."""
    memory: MemoryArgs = Field(default_factory=MemoryArgs)
    """Memory layers' options (`train.memory.slots`, ...)."""
    grpo: GrpoArgs = Field(default_factory=GrpoArgs)
    """GRPO's options (`train.grpo.beta`, ...)."""

    @model_validator(mode="before")
    @classmethod
    def _nest_method_keys(cls, data: Any) -> Any:
        """A flat key of earlier kbake (`lora_r`, `memory_top_t`, ...) moves into its method's section
        (`lora.r`, `memory.top_t`), so older recipes and `--set train.lora_r=8` keep working."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for key in [k for k in data if isinstance(k, str)]:
            section, _, name = key.partition("_")
            if section in METHOD_SECTIONS and name in METHOD_SECTIONS[section].model_fields:
                nested = data.get(section)
                nested = dict(nested) if isinstance(nested, dict) else {}
                if name in nested:
                    raise ValueError(f"{key} and {section}.{name} both given; keep {section}.{name}")
                nested[name] = data.pop(key)
                data[section] = nested
        return data

class EvalArgs(StageArgs):
    """Options of `kbake eval`: learning (probes), forgetting (general text) and RAG."""

    models: list[str] = []
    """Trained models under RUN/train/ to evaluate; empty means all of them."""
    base_model: str = "default"
    """The base model everything is compared with (should be the one the checkpoints were trained from)."""
    embedder: str = "default"
    """Sentence-transformers model for the RAG index: 'default' (all-MiniLM-L6-v2), a HF id or a folder."""
    retriever: Literal["dense", "lexical", "hybrid"] = "hybrid"
    """How RAG finds chunks: dense (embedder, cosine), lexical (BM25) or hybrid (both, reciprocal
    rank fusion). Hybrid over headed chunks by default, the strongest on dev probes of four
    documents: recall@3 86.7% against plain lexical's 83.1% on 83 hand-written (+3.6 [-6.0, +13.3])
    and 82.1% against 68.5% on 798 fact probes (+13.5 [+10.4, +16.8]) (docs/results.md, "The
    retriever chosen on dev probes" and "Chunk headers"; benchmarks/retrieval_dev.py)."""
    rag_k: int = Field(3, ge=1, le=50)
    """Chunks retrieved into the prompt for RAG."""
    chunk_headers: bool = True
    """Index each chunk with its document and section in front ("Costco Wholesale Corporation,
    2022-08-28 — Item 7—… — RESULTS OF OPERATIONS"; kbake/ingest/headers.py), and give RAG the
    chunks so: docs/results.md, "Chunk headers". On by default with `hybrid` (see `retriever`)."""
    rag_units: Literal["chunks", "facts"] = "chunks"
    """What RAG retrieves: the run's chunks, or one sentence per fact of its fact table
    (RUN/facts.parquet, written by `kbake synth`; kbake/eval/rag.py `fact_statement`), which binds
    each value to its line item and period. On Costco's dev probes no better than chunks for the
    embedded model (docs/results.md, "RAG over fact statements"), hence `chunks` by default."""
    short_answers: bool = True
    """Also generate short answers and score them by token F1 / exact match (slower than multiple choice)."""
    short_answer_tokens: int = Field(24, ge=1)
    """Longest generated short answer, in tokens."""
    general_paragraphs: int = Field(100, ge=1)
    """Held-out Wikipedia paragraphs for the replay-domain perplexity and KL (never replayed
    themselves, but the same kind of text as the replay data, so replay can lower it)."""
    novel_passages: int = Field(40, ge=1)
    """Passages of a public-domain novel (outside the replay data) for perplexity and KL."""
    general_max_tokens: int = Field(128, ge=8)
    """Tokens of each Wikipedia paragraph and novel passage scored."""
    general_eval_items: int = Field(150, ge=0, le=500)
    """Items scored from each general-eval set (ARC-Easy, PIQA, HellaSwag, SciQ; 500 each) for
    forgetting that replay cannot hide; 0 to skip. 150 per set cost about 2 min per model in bf16
    on 2 cores (HellaSwag's long endings take half); intervals narrow as 1/sqrt(items)."""
    general_eval_sets: list[Literal["arc_easy", "piqa", "hellaswag", "sciq"]] = ["arc_easy", "piqa", "hellaswag", "sciq"]
    """Which general-eval sets to score."""
    snapshots: bool = True
    """Also score the snapshots a run kept (train.snapshot_every) on the test probes and the
    general-eval sets: the points of each method's learning-vs-forgetting line."""
    general_questions: int = Field(40, ge=0)
    """General (HotpotQA) questions answered closed book for general short-answer F1; 0 to skip."""
    batch_size: int = Field(8, ge=1)
    """Sequences per forward pass over general text (each holds a vocabulary-wide log-softmax per token)."""
    precision: Literal["auto", "fp32", "bf16"] = "auto"
    """Number format of scoring and generation: auto is bf16 where the CPU/GPU computes it natively
    (weights cast to bf16, log-probs in float32), else fp32. docs/eval.md gives the measured score differences."""
    generate_batch_size: int = Field(32, ge=1)
    """Prompts per generate call for short answers: decoding is bound by per-step overhead, so wider
    is faster (32 vs 8: 2.0x on the sample's probes, same answers)."""


class Recipe(StageArgs):
    """A whole recipe: shared options plus one section per stage."""

    seed: int = 0
    """Seed of every random choice (sampling, shuffles, initialisation)."""
    ingest: IngestArgs = Field(default_factory=IngestArgs)
    """Options of `kbake ingest`."""
    probes: ProbesArgs = Field(default_factory=ProbesArgs)
    """Options of `kbake probes`."""
    synth: SynthArgs = Field(default_factory=SynthArgs)
    """Options of `kbake synth`."""
    train: TrainArgs = Field(default_factory=TrainArgs)
    """Options of `kbake train`."""
    eval: EvalArgs = Field(default_factory=EvalArgs)
    """Options of `kbake eval`."""


def _format_error(err: ValidationError, source: str) -> str:
    e = err.errors()[0]
    key = ".".join(str(p) for p in e["loc"]) or "(top level)"
    if e["type"] == "extra_forbidden":
        allowed = _allowed_keys(e["loc"])
        return f"{source}: unknown key '{key}'" + (f"; allowed: {', '.join(allowed)}" if allowed else "")
    got = e.get("input")
    got_s = "" if isinstance(got, dict) else f" (got {got!r})"
    return f"{source}: {key}: {e['msg']}{got_s}"


def _allowed_keys(loc: tuple) -> list[str]:
    model: type[BaseModel] = Recipe
    for part in loc[:-1]:
        field = model.model_fields.get(str(part))
        ann = getattr(field, "annotation", None) if field else None
        if not (isinstance(ann, type) and issubclass(ann, BaseModel)):
            return []
        model = ann
    return sorted(model.model_fields)


def parse_value(text: str) -> Any:
    """A `--set key=value` value, read as YAML so numbers, booleans and lists work."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def set_key(tree: dict, dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = tree
    for p in parts[:-1]:
        node = node.setdefault(p, {})
        if not isinstance(node, dict):
            raise ConfigError(f"--set {dotted}: '{p}' is not a section")
    node[parts[-1]] = value


def load_recipe(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> Recipe:
    """Load a recipe YAML (or the built-in defaults), apply `section.key` overrides, validate."""
    tree: dict = {}
    source = "defaults"
    if path is not None:
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as e:
            raise ConfigError(f"{path}: cannot read recipe ({e.strerror})") from None
        try:
            tree = yaml.safe_load(text) or {}
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark else ""
            raise ConfigError(f"{path}: not valid YAML{where}") from None
        if not isinstance(tree, dict):
            raise ConfigError(f"{path}: a recipe is a mapping of sections, got {type(tree).__name__}")
    for key, value in (overrides or {}).items():
        set_key(tree, key, value)  # None too: `--set train.max_steps=null` clears a key the recipe sets
    try:
        return Recipe.model_validate(tree)
    except ValidationError as e:
        raise ConfigError(_format_error(e, source)) from None


def parse_sets(items: list[str] | None) -> dict[str, Any]:
    """Parse repeated `--set section.key=value` flags."""
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise ConfigError(f"--set {item!r}: expected section.key=value")
        k, v = item.split("=", 1)
        out[k.strip()] = parse_value(v)
    return out


def save_resolved(recipe: Recipe, path: Path) -> None:
    from kbake.run import atomic_write_text

    atomic_write_text(path, yaml.safe_dump(recipe.model_dump(mode="json"), sort_keys=False))
