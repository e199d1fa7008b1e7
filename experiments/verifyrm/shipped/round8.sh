#!/usr/bin/env bash
# Round 8 (issue 104 §2): the shipped recipe on round 7's rows + long worked solutions + prefix traps
# (round8_data.py; predictions and decision rule in predictions.md, written before the training), evaluated on the
# shipped RM's suites and checks (build.sh), results in experiments/verifyrm/results/round8. Resumable.
#   [SEED=0] [RANK=16] bash experiments/verifyrm/shipped/round8.sh
source "$(dirname "$0")/../../common.sh"
[ -n "${PINNED:-}" ] || unset ATEN_CPU_CAPABILITY LD_PRELOAD
S=experiments/verifyrm/shipped
test -f runs/verifyrm-v7/train.jsonl || ROUND=7 DATA_ONLY=1 RUNS=runs/verifyrm-v7 bash experiments/verifyrm/run_v4.sh
git checkout -q experiments/verifyrm/v7/train.stats.json 2>/dev/null || true
mkdir -p runs/verifyrm-r8
test -f runs/verifyrm-r8/train.jsonl || .venv/bin/python $S/round8_data.py --base runs/verifyrm-v7/train.jsonl \
  --out runs/verifyrm-r8/train.jsonl --stats $S/round8.stats.json
# validation holds out 10 % of the questions (~2,200 rows with long ones, ~7 min): every 400 steps and at the end
DATA=runs/verifyrm-r8/train.jsonl RUNS=runs/verifyrm-r8 RESULTS=experiments/verifyrm/results/round8 EVAL_STEPS=400 \
  PACKAGE=${PACKAGE:-0} bash $S/build.sh
