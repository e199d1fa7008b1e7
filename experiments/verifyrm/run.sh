#!/usr/bin/env bash
# VerifyRM trained fully offline on the embedded defaults, then evaluated on a held-out GSM8K set.
#  1. prepare.py: problem splits, worked solutions (SVAMP cots, built-in solutions) and their corruptions,
#     and the held-out labelled GSM8K set (labels by construction, independent of any verifier);
#  2. cooper collect: completions of the embedded policy on built-in and SVAMP-train questions;
#  3. cooper label: a probe of the local judge (SmolLM2-135M) against the rule verifier, then the labels
#     used for training;
#  4. cooper train-rm on the labelled rows (MiniLM-L6 backbone);
#  5. cooper eval-rm on the held-out GSM8K set: RM and rule verifier side by side.
# Every step is resumable or cheap to redo. Threads: 2-core machine, one torch process at a time.
source "$(dirname "$0")/../common.sh"
D=experiments/verifyrm/data
R=experiments/verifyrm/results
mkdir -p $D $R
.venv/bin/python experiments/verifyrm/prepare.py "$SHARED"

$C collect --problems $D/builtin_train.jsonl $D/svamp_rm_train.jsonl --limit ${N_PROBLEMS:-48} \
  --samples_per_problem 4 --sources hf:smollm2-135m-instruct --temperature 1.0 --max_new_tokens 256 \
  --batch_size 64 --output $D/collected.jsonl | tee $R/collect.log

cat $D/collected.jsonl $D/solutions.jsonl > $D/all.jsonl
# judge probe: 100 rows (fixed seed) labelled by the local judge and the rule verifier
.venv/bin/python -c "
import random; rows = open('$D/all.jsonl').readlines(); random.Random(0).shuffle(rows)
open('$D/judge_probe.jsonl', 'w').writelines(rows[:100])"
$C label --input $D/judge_probe.jsonl --judge hf:smollm2-135m-instruct --policy agree --judge_max_tokens 8 \
  --output $R/judge_probe/labelled.jsonl --stats $R/judge_probe/stats.json
# training labels: rule verifier (the local judge is too weak; see docs/VERIFYRM.md)
$C label --input $D/all.jsonl --policy rule --output $D/labelled.jsonl --stats $R/label_stats.json

$C train-rm --data $D/labelled.jsonl --output_dir $R/rm --epochs ${EPOCHS:-2} --batch_size 16 | tee $R/train.log
$C eval-rm --rm $R/rm --data $D/gsm8k_heldout_rm.jsonl --output $R/eval_rm_gsm8k_heldout.json | tee $R/eval_rm.log
