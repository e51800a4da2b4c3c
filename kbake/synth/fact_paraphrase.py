"""`fact_paraphrase`: the LLM rewrites each fact's sentence in other words, and a rewrite is kept
only when its facts survive.

Templates give every fact K restatements that are right by construction, but in a handful of
fixed frames; a language model writes freer variation of wording and word order, the
diversity Allen-Zhu & Li 2023 ("Physics of Language Models 3.1") find makes a fact
extractable, and it also writes wrong figures (docs/results.md, "The synthetic corpus"). So
each rewrite is checked against the fact it restates, whatever model wrote it (the embedded
one or `--llm openai:…`), and dropped with the reason counted when:
- `copy`: it is the source sentence again, or all but a word of it (difflib ratio of the word
  sequences at or above COPY_RATIO);
- `value_lost`: a value of the fact is missing as printed (case, commas' spacing aside): a
  figure with its unit, a date, a name;
- `order_changed`: two values of one class (money, percent, date or year, count, name) appear in
  the other order: how a small model swaps two years or two figures of one sentence while
  keeping each (a value may move across classes: the period to the front is a rewrite);
- `entity_lost`: the source names the entity and the rewrite names it in no form
  ('Costco Wholesale Corporation', 'Costco');
- `period_lost`: a table fact's fiscal year is missing;
- `new_name`: it names something its source does not (a capitalised word past the first that
  the source lacks, case aside: the worked example's company turned up in rewrites);
- `ungrounded`: it states a number its source does not, or fewer than
  `fact_paraphrase_min_share` of its content words are in the source (something added).
The source of a table fact is its first template restatement; of a prose fact, its sentence
with the entity named (`prose.resolve_first_person`), once per sentence whatever the number of
values in it. Held-out facts are paraphrased too: a rewrite is a statement, not a question.
"""

from __future__ import annotations

import difflib
import random
import re

from kbake.llm.base import ChatRequest, Completion
from kbake.run import SynthItem
from kbake.synth import prose
from kbake.synth.augment import entity_names, variants
from kbake.synth.facts import Fact, short_name
from kbake.synth.filters import is_grounded, numbers
from kbake.synth.job import Job
from kbake.synth.kind import KindPlan, KindReport, SynthContext, SynthKind, collect, count_tokens
from kbake.synth.prompts import load_prompt

COPY_RATIO = 0.9
"""A rewrite whose word sequence matches its source's at this difflib ratio or above is a copy:
one word changed in a 12-word sentence scores 0.92, the period moved to the front about 0.7."""
CAPITALISED = re.compile(r"(?<!^)(?<![.!?] )\b[A-Z][A-Za-z'-]+")


def sources(facts: list[Fact], templates: list[str], seed: int) -> list[tuple[str, list[Fact], str]]:
    """(key, the facts it states, the sentence to rewrite): one per table fact (its first template
    restatement) and one per prose sentence (entity named), in table order."""
    out, seen = [], {}
    for f in facts:
        if f.source == "table":
            _, text = variants(templates, f, 1, random.Random(f"{seed}|{f.fact_id}|paraphrase"))[0]
            out.append((f.fact_id, [f], text))
        elif f.row_id in seen:
            out[seen[f.row_id]][1].append(f)
        else:
            seen[f.row_id] = len(out)
            text = prose.resolve_first_person(f.evidence, short_name(entity_names(f)[-1]))
            out.append((f.row_id.replace(":", "-"), [f], text))
    return out


def clean(text: str) -> str:
    """The rewrite's first line, without quotes or a leading label ('New sentence:')."""
    line = next((ln.strip() for ln in text.strip().split("\n") if ln.strip()), "")
    line = re.sub(r"^(?:new sentence|sentence|rewritten|answer)\s*:\s*", "", line, flags=re.I)
    return line.strip().strip('"“”').strip()


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower()).strip()


def value_class(value: str) -> str:
    """The class within which two values must keep their order: money, percent, date (any value
    with a year), count, name."""
    if "$" in value:
        return "money"
    if "%" in value:
        return "percent"
    if re.search(r"\b(?:19|20)\d\d\b", value):
        return "date"
    return "count" if re.search(r"\d", value) else "name"


def _words(text: str) -> list[str]:
    return re.findall(r"[\w$%.,']+", text.lower().replace(",", ""))


def check(text: str, source: str, facts: list[Fact], min_share: float) -> str | None:
    """Why `text` is not a faithful rewrite of `source` stating `facts` (a reason for the synth
    report), or None when it is."""
    low = text.lower()
    if not text or difflib.SequenceMatcher(None, _words(text), _words(source)).ratio() >= COPY_RATIO:
        return "copy"
    have, norm, norm_source = numbers(text), _norm(text), _norm(source)
    values = list(dict.fromkeys(f.value for f in facts))
    if any(_norm(v) not in norm for v in values):
        return "value_lost"
    for cls in {value_class(v) for v in values}:
        same = sorted((v for v in values if value_class(v) == cls), key=lambda v: norm_source.find(_norm(v)))
        if [norm.find(_norm(v)) for v in same] != sorted(norm.find(_norm(v)) for v in same):
            return "order_changed"
    names = entity_names(facts[0])
    if any(n.lower() in source.lower() for n in names) and not any(n.lower() in low for n in names):
        return "entity_lost"
    if facts[0].source == "table" and facts[0].period and facts[0].period not in have:
        return "period_lost"
    known = source + " " + " ".join(names)  # the entity in any of its namings is not something added
    source_words = {re.sub(r"'s$", "", w) for w in _words(known)}
    if any(re.sub(r"'s$", "", w.lower()) not in source_words for w in CAPITALISED.findall(text)):
        return "new_name"
    if not is_grounded(text, known, min_share):
        return "ungrounded"
    return None


def jobs(facts: list[Fact], args, seed: int) -> list[Job]:
    """`args.fact_paraphrases` requests per source sentence, one per sampling seed."""
    from kbake.llm import Sampling

    prompt = load_prompt("fact_paraphrase")
    out = []
    for key, fs, text in sources(facts, args.fact_statement_templates, seed):
        for k in range(args.fact_paraphrases):
            sampling = Sampling(args.fact_paraphrase_max_tokens, args.temperature, args.top_p, seed + k,
                                args.repetition_penalty)
            out.append(Job(ChatRequest(prompt.messages(sentence=text), sampling), "fact_paraphrase",
                           "fact_paraphrase/llm", prompt.version, fs[0].doc_id, sorted({f.chunk_id for f in fs}), text,
                           extra={"id": f"fact_paraphrase-{key}-{k}", "facts": fs}))
    return out


def to_items(min_share: float):
    def items(job: Job, completion: Completion, model: str) -> list[SynthItem] | str:
        text = clean(completion.text)
        why = check(text, job.context, job.extra["facts"], min_share)
        if why:
            return why
        return [SynthItem(id=job.extra["id"], kind=job.kind, doc_id=job.doc_id, chunk_ids=job.chunk_ids,
                          generator=job.generator, prompt_version=job.prompt_version, model=model, text=text)]
    return items


def generate(ctx: SynthContext, rep: KindReport):
    todo = jobs(ctx.facts(), ctx.args, ctx.seed)
    done = ctx.complete(todo, "fact_paraphrase")
    return collect(todo, done, to_items(ctx.args.fact_paraphrase_min_share), ctx.model, rep), todo, len(todo)


def plan(chunks_by_doc, args, seed: int, tokenizer) -> KindPlan:
    from kbake.synth.facts import build_facts

    chunks = [c for cs in chunks_by_doc.values() for c in cs]
    facts = build_facts(chunks, args.fact_heldout_share, seed, args.fact_heldout_unit)
    if args.fact_prose:
        facts += prose.prose_facts(chunks, args.fact_heldout_share, seed, start=len(facts))
    todo = jobs(facts, args, seed)
    return KindPlan(len(todo), count_tokens(todo, tokenizer), args.fact_paraphrase_max_tokens, todo)


KIND = SynthKind("fact_paraphrase", generate, candidates_compete=False, reads_facts=True, plan=plan)
