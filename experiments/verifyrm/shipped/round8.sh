#!/usr/bin/env bash
# Round 8, the shipped VerifyRM (issue 104 §2): the LoRA recipe on round 7's rows + long worked solutions + prefix
# traps (round8_data.py; predictions and decision rule in predictions.md, written before the training), evaluated on
# the suites and checks (build.sh), results in experiments/verifyrm/results/round8, then packaged into
# src/cooper_rl/assets/verifyrm with its card (PACKAGE=0: not). Resumable; the committed RM (results/round8/rm) is
# evaluated and packaged without retraining (REBUILD=1 trains it again: ~3.5 h on 2 cores).
#   [SEED=0] [RANK=16] [PACKAGE=1] [REBUILD=1] [DATA_ONLY=1] bash experiments/verifyrm/shipped/round8.sh
# Another seed or rank needs its own RESULTS dir (its evaluations are named by seed only: in round 8's dir they would
# be skipped as done, or overwrite the shipped RM's) and is not packaged unless PACKAGE=1, e.g.
#   RANK=32 FP16=1 PACKAGE=0 RESULTS=experiments/verifyrm/results/round8_r32 bash experiments/verifyrm/shipped/round8.sh
# (FP16=1: evaluated, and packaged, from a copy of its adapter stored in fp16: half.py)
if [ "${SEED:-0}/${RANK:-16}" != 0/16 ] && [ -z "${RESULTS:-}" ]; then
  echo "round8.sh: SEED=${SEED:-0} RANK=${RANK:-16} is not the shipped RM: give it its own RESULTS=<dir>" >&2; exit 2
fi
source "$(dirname "$0")/../../common.sh"
[ -n "${PINNED:-}" ] || unset ATEN_CPU_CAPABILITY LD_PRELOAD
S=experiments/verifyrm/shipped
test -f runs/verifyrm-v7/train.jsonl || ROUND=7 DATA_ONLY=1 RUNS=runs/verifyrm-v7 bash experiments/verifyrm/run_v4.sh
git checkout -q experiments/verifyrm/v7/train.stats.json 2>/dev/null || true
mkdir -p runs/verifyrm-r8
test -f runs/verifyrm-r8/train.jsonl || .venv/bin/python $S/round8_data.py --base runs/verifyrm-v7/train.jsonl \
  --out runs/verifyrm-r8/train.jsonl --stats $S/round8.stats.json
[ -n "${DATA_ONLY:-}" ] && exit 0   # DATA_ONLY=1: the training rows alone (e.g. to rehearse them in cooper rl)
# validation holds out 10 % of the questions (~2,200 rows with long ones, ~7 min): every 400 steps and at the end
DATA=runs/verifyrm-r8/train.jsonl RUNS=runs/verifyrm-r8 RESULTS=${RESULTS:-experiments/verifyrm/results/round8} EVAL_STEPS=400 \
  PACKAGE=${PACKAGE:-$([ "${SEED:-0}/${RANK:-16}" = 0/16 ] && echo 1 || echo 0)} bash $S/build.sh
