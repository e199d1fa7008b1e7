#!/usr/bin/env bash
# Issue 15: a deliberately weaker static VerifyRM, so that reward hacking is reachable at a CPU budget (the issue
# allows one if the document says so and reports the strong RM beside it). Same backbone and recipe as the strong
# RM (run_v3.sh: SmolLM2-135M, lr 3e-5, 16 rows per step), but
#   - data: round 2's categories only (experiments/verifyrm/README.md, round 2: answers in four styles, corrupted
#     solutions, the wrong reference), i.e. the data this project had before issue 14: no hedged, echoed, truncated, answer-less or
#     "master key" traps and no real policy completions;
#   - budget: 100 steps x 16 rows (the issue's probe budget; the strong RM trains one full epoch, ~260 steps).
# Then both evaluations of run_v3.sh (held-out real completions, robustness suite), next to the rules, so the
# document can say where this RM is weak.
# fp32 (--bf16_autocast false): the RM the experiment used was trained fp32; "auto" would mean bf16 on AVX512-BF16 CPUs.
#   bash experiments/reward_hacking/weak_rm.sh          (resumable; writes runs/verifyrm-weak, results/weak_rm/)
source "$(dirname "$0")/../common.sh"
D=experiments/verifyrm/data
V=experiments/verifyrm/v3
R=experiments/reward_hacking/results/weak_rm   # its evaluations (report_v3.py's table beside the rules)
OUT=${OUT:-runs/verifyrm-weak}
mkdir -p $R runs
step() { echo "[weak-rm] $* ($(date -u +%FT%TZ))"; }
test -f $D/svamp_rm_train.jsonl || .venv/bin/python experiments/verifyrm/prepare.py "$SHARED"
test -f $V/robustness.jsonl -a -f $V/heldout.jsonl || { echo "run experiments/verifyrm/run_v3.sh first (it builds the evaluation sets)" >&2; exit 1; }
test -f $OUT.train.jsonl || { step "rm-data (round 2's categories)"; $C rm-data --solutions $SHARED/gsm8k/train.jsonl $D/svamp_rm_train.jsonl builtin:train:400 --limit 1200 \
  --categories fmt:hash fmt:answer_is fmt:boxed fmt:plain trap:corrupted trap:wrong_reference \
  --exclude $SHARED/gsm8k/test.jsonl --output $OUT.train.jsonl --stats $OUT.stats.json --seed 0 > $OUT.rm_data.log
  test -f $R/train.stats.json || cp $OUT.stats.json $R/train.stats.json; }   # a rebuild keeps the committed record
if [ ! -f $OUT/train_metrics.json ]; then
  resume=(); ls -d $OUT.checkpoints/checkpoint-* >/dev/null 2>&1 && resume=(--resume_from_checkpoint last)
  step "train-rm -> $OUT"
  $C train-rm --data $OUT.train.jsonl --backbone smollm2-135m-instruct --output_dir $OUT --max_steps 100 \
    --eval_steps 50 --warmup_ratio 0.05 --bf16_autocast false --seed 0 --learning_rate 3e-5 --max_length 320 \
    --batch_size 16 "${resume[@]}" >> $OUT.log 2>&1
fi
# the record of the RM the finished runs used is kept: a rebuild's record goes beside it (*_rebuilt.json)
rec=$R/train_weak_s0.json
# (compared on the record's fields but the timings, in its config too: a bit-identical rebuild on a slower machine, or
# by a newer cooper that records more fields, e.g. lora_rank, is the same RM; one that lacks a field is not; lists such
# as eval_history compare whole)
same() { .venv/bin/python -c '
import json, sys
def same(a, b):  # b: the record; a field of it that the rebuild lacks is a difference
    keys = {k for k in b if "_seconds" not in k}
    return keys <= set(a) and all(same(a[k], b[k]) if isinstance(a[k], dict) and isinstance(b[k], dict) else a[k] == b[k] for k in keys)
sys.exit(not same(json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))))' "$@"; }
if [ ! -f $rec ]; then cp $OUT/train_metrics.json $rec; elif ! same $OUT/train_metrics.json $rec; then cp $OUT/train_metrics.json ${rec%.json}_rebuilt.json; fi
for E in heldout robustness; do
  if [ ! -f $R/eval_${E}_weak_s0.json ]; then
    step "eval-rm on $E"
    $C eval-rm --rm $OUT --data $V/$E.jsonl --output $R/eval_${E}_weak_s0.json > $R/eval_${E}_weak_s0.log
  fi
done
.venv/bin/python experiments/verifyrm/report_v3.py $R > /dev/null
step "done ($R/table.md): RM=$OUT bash experiments/reward_hacking/run.sh uses it (STRONG_RM=runs/verifyrm-v3/smollm2-s0 beside it)"
