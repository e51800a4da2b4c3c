"""Environments GRPO trains in: where the prompts come from, how a completion is rolled out,
and how it is rewarded (after Verifiers' single-turn and tool environments: the ideas, not
the code).

An environment gives TRL's GRPOTrainer three things:
- `dataset(run, args, seed)`: conversational prompts with their reference answers, made from
  the run's synthetic QA pairs, never from the held-out probes;
- `rollout`: None (TRL samples one turn), or TRL's `rollout_func(prompts, trainer)`, which
  plays several turns and returns the token ids, an `env_mask` (0 on tokens the environment
  wrote, so the policy is not trained to predict them) and fields the rewards receive;
- `reward_funcs(args)`: the recipe's rewards (kbake/train/rewards.py) with their weights.

`qa`: one turn, the answer scored against the reference. `lookup`: the model may first
write `lookup: <query>` and gets the run's best-matching chunk (BM25) before it answers; a
lookup costs `grpo.lookup_cost` of reward, so RL can teach it to retrieve only when that pays
(the middle ground between baking knowledge in and retrieving it).
"""

from __future__ import annotations

import re

import torch

from kbake.config import TrainArgs
from kbake.models.generate import SHORT_ANSWER_SUFFIX
from kbake.run import RunDir, read_chunks, read_items
from kbake.train.rewards import trl_reward

LOOKUP_INSTRUCTION = ("\nIf you need to check the documents first, reply only `lookup: <a few words>` and you will "
                      "be shown the best-matching passage; otherwise answer directly.")
LOOKUP_CALL = re.compile(r"^\s*`?lookup\s*[:(]\s*(?P<query>[^\n`)]+)", re.I)


def qa_rows(run: RunDir, args: TrainArgs, seed: int, suffix: str = SHORT_ANSWER_SUFFIX):
    """The run's synthetic QA pairs as conversational prompts with their reference answers."""
    from datasets import Dataset

    path = run.synth_dir / "qa.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{path}: grpo needs QA pairs; run `kbake synth --run {run.root} --kind qa` first")
    items = [i for i in read_items(path) if i.question and i.answer]
    if not items:
        raise ValueError(f"{path} is empty: nothing to train on")
    rows = [{"prompt": [{"role": "user", "content": i.question + suffix}], "reference": i.answer} for i in items]
    ds = Dataset.from_list(rows).shuffle(seed=seed)
    return ds.select(range(min(len(ds), args.grpo.prompts))) if args.grpo.prompts else ds


class QAEnvironment:
    """Single turn: a synthetic question, a short answer, the recipe's rewards on it."""

    name = "qa"
    rollout = None

    def __init__(self, run: RunDir, args: TrainArgs):
        self.run, self.args = run, args

    def dataset(self, seed: int):
        return qa_rows(self.run, self.args, seed)

    def reward_funcs(self) -> tuple[list, list[float]]:
        names = list(self.args.grpo.rewards)
        return [trl_reward(n) for n in names], [self.args.grpo.rewards[n] for n in names]


class LookupEnvironment(QAEnvironment):
    """Two turns at most: `lookup: <query>` → the best chunk of the run → the answer."""

    name = "lookup"

    def __init__(self, run: RunDir, args: TrainArgs):
        super().__init__(run, args)
        import numpy as np

        from kbake.ingest.index import ChunkIndex

        chunks = read_chunks(run.chunks)
        if not chunks:
            raise ValueError(f"{run.chunks}: the lookup environment needs the run's chunks; run `kbake ingest` first")
        self.index = ChunkIndex([c["chunk_id"] for c in chunks], [c["text"] for c in chunks], np.zeros((len(chunks), 1)),
                                None)

    def dataset(self, seed: int):
        return qa_rows(self.run, self.args, seed, suffix=SHORT_ANSWER_SUFFIX + LOOKUP_INSTRUCTION)

    def lookup(self, queries: list[str]) -> list[str]:
        """The best-matching chunk of each query (BM25), cut to `grpo.lookup_chars`."""
        best = self.index.search(queries, k=1, retriever="lexical")
        return [self.index.texts[b[0]][: self.args.grpo.lookup_chars] if b else "" for b in best]

    def reward_funcs(self) -> tuple[list, list[float]]:
        funcs, weights = super().reward_funcs()
        cost = self.args.grpo.lookup_cost

        def lookup_cost(prompts, completions, lookups=None, **kwargs) -> list[float]:
            return [-cost if lk else 0.0 for lk in (lookups or [None] * len(completions))]

        return funcs + [lookup_cost], weights + [1.0]

    def rollout(self, prompts: list, trainer) -> dict:
        """TRL's rollout_func: one completion per prompt given (TRL has repeated each prompt
        `num_generations` times). A completion that opens with a lookup call is cut after the
        call's line, the passage is appended (env_mask 0), and the model answers after it."""
        tok = trainer.processing_class
        model = trainer.accelerator.unwrap_model(trainer.model)
        texts = [tok.apply_chat_template(p, add_generation_prompt=True, tokenize=False) for p in prompts]
        prompt_ids = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
        first = self._sample(model, tok, prompt_ids)
        completion_ids, env_mask, lookups, answers = [], [], [], []
        second_prompts, second_at = [], []
        for i, ids in enumerate(first):
            text = tok.decode(ids, skip_special_tokens=True)
            call = LOOKUP_CALL.match(text)
            if call is None:
                completion_ids.append(ids)
                env_mask.append([1] * len(ids))
                lookups.append(None)
                answers.append(text.strip())
                continue
            line = text[: call.end()].split("\n")[0]
            call_ids = tok(line, add_special_tokens=False)["input_ids"]
            lookups.append({"query": call.group("query").strip(), "passage": None})
            completion_ids.append(call_ids)
            env_mask.append([1] * len(call_ids))
            answers.append("")
            second_at.append(i)
        if second_at:
            passages = self.lookup([lookups[i]["query"] for i in second_at])
            for i, passage in zip(second_at, passages):
                lookups[i]["passage"] = passage
                obs = tok(f"\nResult: {passage}\nAnswer:", add_special_tokens=False)["input_ids"]
                completion_ids[i] = completion_ids[i] + obs
                env_mask[i] = env_mask[i] + [0] * len(obs)
                second_prompts.append(prompt_ids[i] + completion_ids[i])
            for i, ids in zip(second_at, self._sample(model, tok, second_prompts)):
                completion_ids[i] = completion_ids[i] + ids
                env_mask[i] = env_mask[i] + [1] * len(ids)
                answers[i] = tok.decode(ids, skip_special_tokens=True).strip()
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": None, "env_mask": env_mask,
                "lookups": lookups, "answers": answers}

    def _sample(self, model, tok, prompt_ids: list[list[int]]) -> list[list[int]]:
        """One sampled continuation per prompt (left-padded batch), up to and including EOS."""
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        width = max(len(p) for p in prompt_ids)
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompt_ids])
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompt_ids])
        device = next(model.parameters()).device
        with torch.no_grad():
            out = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), do_sample=True,
                                 temperature=self.args.grpo.temperature, top_p=1.0, top_k=0,
                                 max_new_tokens=self.args.grpo.max_completion_length, pad_token_id=pad)
        eos = {tok.eos_token_id, *([tok.convert_tokens_to_ids("<|im_end|>")] if "<|im_end|>" in tok.get_vocab() else [])}
        result = []
        for row in out[:, width:].tolist():
            cut = next((k + 1 for k, t in enumerate(row) if t in eos), len(row))
            result.append(row[:cut])
        return result


ENVIRONMENTS = {"qa": QAEnvironment, "lookup": LookupEnvironment}


def make_environment(run: RunDir, args: TrainArgs):
    return ENVIRONMENTS[args.grpo.env](run, args)
