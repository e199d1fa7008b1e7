#!/usr/bin/env bash
# Round 2 of the VerifyRM experiment (docs/VERIFYRM.md): hard negatives in varied answer styles.
#  1. prepare.py (splits, held-out GSM8K set) and augment.py (SVAMP-train cots + built-in solutions: positive,
#     same-style corruption, wrong-reference copy), plus the policy samples collected by run.sh;
#  2. cooper label --policy rule --verify_mode lenient (the local judge is too weak, see the doc);
#  3. cooper train-rm (MiniLM-L6, 2 epochs, lr 1e-4, max 256 tokens);
#  4. cooper eval-rm on the held-out GSM8K set, RM and rule verifier side by side.
source "$(dirname "$0")/../common.sh"
D=experiments/verifyrm/data
R=experiments/verifyrm/results
.venv/bin/python experiments/verifyrm/prepare.py "$SHARED"
.venv/bin/python experiments/verifyrm/augment.py "$SHARED"
cat $D/collected.jsonl $D/augmented.jsonl > $D/all_v2.jsonl
$C label --input $D/all_v2.jsonl --policy rule --verify_mode lenient --output $D/labelled_v2.jsonl --stats $R/label_stats_v2.json
$C train-rm --data $D/labelled_v2.jsonl --output_dir $R/rm_v2 --epochs 2 --batch_size 32 --learning_rate 1e-4 \
  --max_length 256 --eval_steps 100 | tee $R/train_v2.log
cp $R/rm_v2/train_metrics.json $R/train_metrics_v2.json
$C eval-rm --rm $R/rm_v2 --data $D/gsm8k_heldout_rm.jsonl --output $R/eval_rm_gsm8k_heldout_v2.json | tee $R/eval_rm_v2.log
