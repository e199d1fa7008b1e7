#!/usr/bin/env bash
# Issue 104: the shipped VerifyRM = round 7's recipe (docs/VERIFYRM.md) trained as a PEFT LoRA adapter + score head over
# the embedded SmolLM2-135M-Instruct, small enough to commit (src/cooper_rl/assets/verifyrm, `--rm verifyrm`).
# Data: round 7's training file, rebuilt byte-identical from the committed record (run_v4.sh DATA_ONLY=1, ~1 min).
# Resumable: a rerun continues from the last checkpoint (SIGTERM checkpoints the step in flight).
#   [SEED=0] [RANK=16] [LR=2e-4] [HEAD_MULT=3] [RUNS=runs/verifyrm-lora] bash experiments/verifyrm/shipped/train.sh
source "$(dirname "$0")/../../common.sh"
[ -n "${PINNED:-}" ] || unset ATEN_CPU_CAPABILITY LD_PRELOAD   # native kernels, as round 7 (run_v4.sh)
SEED=${SEED:-0} RANK=${RANK:-16} LR=${LR:-2e-4} HEAD_MULT=${HEAD_MULT:-3}
# validation (1,761 rows, ~5 min on 2 cores) and a checkpoint every EVAL_STEPS (100, as round 7); the best validation
# is kept. A resumed run keeps its checkpoint's schedule (transformers restores eval/save/logging steps from
# trainer_state.json). The shipped seed-0 run validated at steps 100-400 and then 500 and 1,000: stopped at step 401,
# its checkpoint's schedule set to 500 there, to keep six validations of ~5 min out of one session (the trained
# weights do not depend on it; only which validated checkpoint is kept could)
EVAL_STEPS=${EVAL_STEPS:-100}
RUNS=${RUNS:-runs/verifyrm-lora}
DATA=${DATA:-runs/verifyrm-v7/train.jsonl}
test -f $DATA || ROUND=7 DATA_ONLY=1 RUNS=$(dirname $DATA) bash experiments/verifyrm/run_v4.sh
git checkout -q experiments/verifyrm/v7/train.stats.json 2>/dev/null || true  # run_v4.sh rewrites it (same rows)
out=$RUNS/r$RANK-s$SEED
mkdir -p $RUNS
resume=(); ls -d $out.checkpoints/checkpoint-* >/dev/null 2>&1 && resume=(--resume_from_checkpoint last)
test -f $out/train_metrics.json || $C train-rm --data $DATA --backbone smollm2-135m-instruct --output_dir $out \
  --epochs 1 --eval_steps $EVAL_STEPS --warmup_ratio 0.05 --bf16_autocast false --seed $SEED --max_length 384 --batch_size 16 \
  --lora_rank $RANK --learning_rate $LR --head_lr_multiplier $HEAD_MULT "${resume[@]}" >> $out.log 2>&1
