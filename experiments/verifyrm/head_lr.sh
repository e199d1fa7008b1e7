#!/usr/bin/env bash
# Issue 14, item 4: why MiniLM-L6 VerifyRM training sits at the class prior. Same data (rm-data rows of 600
# built-in train problems, as the demo), same steps (100 x 16 rows, lr 5e-5, 5% warm-up), the fresh head's learning
# rate at 1x and 20x the backbone's (--head_lr_multiplier), SEEDS seeds each. Validation accuracy every 25 steps.
# Writes experiments/verifyrm/results/head_lr/{train_mult*_s*.json,summary.json}.
source "$(dirname "$0")/../common.sh"
R=experiments/verifyrm/results/head_lr
RUNS=${RUNS:-runs/verifyrm-head-lr}
mkdir -p $R $RUNS
test -f $RUNS/rows.jsonl || $C rm-data --solutions builtin:train:600 --output $RUNS/rows.jsonl --stats $R/rows.stats.json --seed 0 > /dev/null
for S in ${SEEDS:-0 1}; do
  for M in 1 20; do
    test -f $R/train_mult${M}_s$S.json && continue
    $C train-rm --data $RUNS/rows.jsonl --backbone minilm-l6 --output_dir $RUNS/mult${M}_s$S --max_steps 100 \
      --batch_size 16 --learning_rate 5e-5 --warmup_ratio 0.05 --max_length 256 --eval_steps 25 \
      --head_lr_multiplier $M --bf16_autocast false --seed $S > $RUNS/mult${M}_s$S.log 2>&1
    .venv/bin/python - $RUNS/mult${M}_s$S $R/train_mult${M}_s$S.json <<'PY'
import json, sys
from cooper_rl.io import atomic_write_json
run, out = sys.argv[1], sys.argv[2]
m = json.load(open(f"{run}/train_metrics.json"))
m["val_accuracy_by_eval"] = [h["accuracy"] for h in m["eval_history"]]  # train-rm records its validations
atomic_write_json(out, m)
print(run, m["val_accuracy_by_eval"])
PY
  done
done
.venv/bin/python - $R <<'PY'
import json, statistics, sys
from pathlib import Path
from cooper_rl.io import atomic_write_json
R = Path(sys.argv[1])
summary = {}
for m in (1, 20):
    runs = [json.loads(p.read_text()) for p in sorted(R.glob(f"train_mult{m}_s*.json"))]
    summary[f"head_lr_x{m}"] = {
        "seeds": [r["config"]["seed"] for r in runs],
        "val_accuracy_by_eval": [r["val_accuracy_by_eval"] for r in runs],
        "best_val_accuracy_mean": statistics.mean(r["best_val_accuracy"] for r in runs),
        "evals_at_class_prior": [sum(abs(a - r["class_balance"]["val"]["pos_rate"]) < 0.02 or abs(a - (1 - r["class_balance"]["val"]["pos_rate"])) < 0.02 for a in r["val_accuracy_by_eval"]) for r in runs],
    }
atomic_write_json(R / "summary.json", summary)
print(json.dumps(summary, indent=1))
PY
