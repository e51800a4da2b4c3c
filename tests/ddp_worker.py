"""Run by test_ddp under `torchrun --nproc_per_node 2` on CPUs: a few steps of the
shared loop; each rank writes which blocks it saw and a hash of its final weights."""

import hashlib
import json
import sys
from pathlib import Path

import torch
from accelerate import PartialState

from kbake.config import TrainArgs
from kbake.models import load_causal_lm
from kbake.train.loop import run_loop

tiny, out = sys.argv[1], Path(sys.argv[2])
state = PartialState(cpu=True)
model, _ = load_causal_lm(tiny)
model.train()
g = torch.Generator().manual_seed(0)
ids = torch.randint(3, 200, (16, 32), generator=g)  # same data on every rank: the sampler must split it
seen = []
model.register_forward_pre_hook(lambda m, a, kw: seen.extend(hash(tuple(r.tolist())) for r in kw["input_ids"]),
                                with_kwargs=True)
args = TrainArgs(method="full", base_model=tiny, batch_size=2, max_steps=3, lr=1e-2, warmup_ratio=0.0,
                 save_every=1000, eval_every=1000, eval_fraction=0.0)
run_loop(model, ids, ids.clone(), ids[:0], ids[:0], args, out / "train", seed=0, progress=False)
h = hashlib.sha256()
for _, v in sorted(model.state_dict().items()):
    h.update(v.detach().cpu().numpy().tobytes())
(out / f"rank{state.process_index}.json").write_text(json.dumps(
    {"rank": state.process_index, "world": state.num_processes, "backend": str(state.backend),
     "seen": seen, "weights": h.hexdigest()}))
