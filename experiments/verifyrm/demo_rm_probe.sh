#!/usr/bin/env bash
# Issue 14, item 5: which VerifyRM trains within `cooper demo`'s first-run budget (<= 10 min for the whole demo;
# the demo's RM phase has ~1-2 min of it)? Same rows as the demo (rm-data of 600 built-in train problems, seed 0),
# MiniLM-L6 with the demo's settings (40 steps x 16 rows, lr 5e-5) next to SmolLM2-135M at budgets around the
# same wall time (STEPS x 8 rows, lr 3e-5, the strong RM's rate), SEEDS seeds, validation every 10 steps.
# Writes experiments/verifyrm/results/demo_rm/{<arm>_s<seed>.json,summary.json} (val accuracy by evaluation, train s).
source "$(dirname "$0")/../common.sh"
R=experiments/verifyrm/results/demo_rm
RUNS=${RUNS:-runs/verifyrm-demo-rm}
ROWS=runs/verifyrm-head-lr/rows.jsonl   # = the demo's rm-data rows (builtin:train:600, seed 0)
mkdir -p $R $RUNS runs/verifyrm-head-lr
test -f $ROWS || $C rm-data --solutions builtin:train:600 --output $ROWS --seed 0 > /dev/null
for S in ${SEEDS:-0 1}; do
  for arm in minilm-40x16 smollm2-20x8 smollm2-40x8; do
    test -f $R/${arm}_s$S.json && continue
    case $arm in
      minilm-40x16) A=(--backbone minilm-l6 --max_steps 40 --batch_size 16 --learning_rate 5e-5) ;;
      smollm2-20x8) A=(--backbone smollm2-135m-instruct --max_steps 20 --batch_size 8 --learning_rate 3e-5) ;;
      smollm2-40x8) A=(--backbone smollm2-135m-instruct --max_steps 40 --batch_size 8 --learning_rate 3e-5) ;;
    esac
    $C train-rm --data $ROWS --output_dir $RUNS/${arm}_s$S "${A[@]}" --warmup_ratio 0.05 --max_length 256 \
      --eval_steps 10 --bf16_autocast false --seed $S > $RUNS/${arm}_s$S.log 2>&1
    .venv/bin/python - $RUNS/${arm}_s$S $R/${arm}_s$S.json <<'PY'
import json, sys
from cooper_rl.io import atomic_write_json
run, out = sys.argv[1], sys.argv[2]
m = json.load(open(f"{run}/train_metrics.json"))
m["val_accuracy_by_eval"] = [h["accuracy"] for h in m["eval_history"]]
m["train_seconds_without_validation"] = m["train_seconds"] - m["eval_seconds"]  # the demo validates less often
atomic_write_json(out, m)
print(run, round(m["train_seconds_without_validation"]), m["val_accuracy_by_eval"])
PY
  done
done
.venv/bin/python - $R <<'PY'
import json, statistics, sys
from pathlib import Path
from cooper_rl.io import atomic_write_json
R = Path(sys.argv[1])
summary = {}
for arm in ("minilm-40x16", "smollm2-20x8", "smollm2-40x8"):
    runs = [json.loads(p.read_text()) for p in sorted(R.glob(f"{arm}_s*.json"))]
    if runs:
        summary[arm] = {
            "seeds": [r["config"]["seed"] for r in runs],
            "val_accuracy_by_eval": [r["val_accuracy_by_eval"] for r in runs],
            "final_val_accuracy_mean": statistics.mean(r["val_accuracy"] for r in runs),
            "train_seconds_without_validation_median": statistics.median(
                r["train_seconds_without_validation"] for r in runs
            ),
        }
atomic_write_json(R / "summary.json", summary)
print(json.dumps(summary, indent=1))
PY
