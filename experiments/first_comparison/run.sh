#!/usr/bin/env bash
# Issue 5: rule vs static RM vs Cooper from the same start (SmolLM2-135M-Instruct), same data, seed and budget.
#   STEPS=100 EVAL_STEPS=25 bash experiments/first_comparison/run.sh        (resumable: rerun to continue; rerun with
#   a larger STEPS to extend finished runs from their last checkpoint — the learning rate is constant)
#   PARALLEL=1 ...: the three runs at once, one torch thread each (on 2 cores the HF-generate-bound steps
#   overlap better than one run at a time, and the runs stay at the same step if stopped).
# LR=1e-5 (policy; the CPU preset's 1e-6 moves a 135M policy too little in ~100 steps), EXTRA="--bf16_autocast true".
# SFT_STEPS=N: first a supervised warm-up of the policy (cooper sft, N steps on built-in worked solutions) and
# all three runs start from it (the embedded policy answers ~0% correctly: no rule signal, no Cooper positives).
# Needs VerifyRM round 2's rm_v2 of experiments/verifyrm (RM=... to use another) and ../shared/data (SHARED=...).
# Writes $OUT (default experiments/first_comparison/runs)/{rule,model,cooper}/ and $R (results)/{dynamics.png,table.md,summary.json,examples.md}.
STEPS=${STEPS:-100}
EVAL_STEPS=${EVAL_STEPS:-25}
N_EVAL=${N_EVAL:-24}   # problems per held-out set (CPU: every evaluation samples 3 x N_EVAL x EVAL_K completions)
EVAL_K=${EVAL_K:-4}
LR=${LR:-1e-5}
POLICY=${POLICY:-smollm2-135m-instruct}
RM=${RM:-experiments/verifyrm/results/rm_v2}
source "$(dirname "$0")/../common.sh"
D=experiments/verifyrm/data
OUT=${OUT:-experiments/first_comparison/runs}
R=${R:-experiments/first_comparison/results}
mkdir -p $OUT $R
# rm_v2 (VerifyRM round 2) was built by experiments/verifyrm/run_v2.sh, now in git history: git checkout d112bad --
# experiments/verifyrm/run_v2.sh experiments/verifyrm/augment.py restores it with the augment.py it calls
test -f $RM/cooper_rm.json || { echo "no VerifyRM at $RM: build it with experiments/verifyrm/run_v2.sh (git history, commit d112bad) or pass RM=..." >&2; exit 1; }
test -f $D/svamp_heldout.jsonl || .venv/bin/python experiments/verifyrm/prepare.py "$SHARED"
# held-out evaluation sets (never trained on): built-in test split, the first N_EVAL of GSM8K test and of SVAMP train 301-432
.venv/bin/python - "$SHARED" "$N_EVAL" "$OUT" <<'PY'
import sys
from cooper_rl.data import load_problems, save_problems
shared, n = sys.argv[1], int(sys.argv[2])
save_problems(load_problems(f"{shared}/gsm8k/test.jsonl").problems[:n], f"{sys.argv[3]}/gsm8k_test.jsonl")
save_problems(load_problems("experiments/verifyrm/data/svamp_heldout.jsonl").problems[:n], f"{sys.argv[3]}/svamp_heldout.jsonl")
PY
if [ "${SFT_STEPS:-0}" -gt 0 ]; then
  if [ ! -f $OUT/sft/sft_summary.json ]; then
    echo "[first_comparison] sft warm-up -> $OUT/sft ($(date -u +%FT%TZ))"
    $C sft --policy "$POLICY" --datasets builtin:train:2000:1,2 --max_steps "$SFT_STEPS" --output_dir $OUT/sft \
      --bf16_autocast true --seed 0 > $OUT/sft.log 2>&1
  fi
  POLICY=$OUT/sft/policy
fi
EVAL_SETS="builtin:test:$N_EVAL:1,2 $OUT/gsm8k_test.jsonl $OUT/svamp_heldout.jsonl"
COMMON=(--config configs/rl_cpu_small.yaml --policy "$POLICY" --rm "$RM" --datasets builtin:train:512:1,2 $D/svamp_rm_train.jsonl
        --max_steps "$STEPS" --save_steps "${SAVE_STEPS:-$EVAL_STEPS}" --save_total_limit 1 --eval_steps "$EVAL_STEPS"
        --eval_datasets $EVAL_SETS --eval_k $EVAL_K --rm_eval_data $D/gsm8k_heldout_rm.jsonl --seed 0 --learning_rate "$LR" ${EXTRA:-})
run_mode() {
  local mode=$1 dir=$OUT/$1 resume=()
  local done_steps=$(grep -o '"global_step": [0-9]*' $dir/rl_summary.json 2>/dev/null | grep -o '[0-9]*$')
  if [ "${done_steps:-0}" -ge "$STEPS" ]; then echo "[first_comparison] $mode done ($done_steps steps)"; return; fi
  ls -d $dir/checkpoint-* >/dev/null 2>&1 && resume=(--resume_from_checkpoint last)
  echo "[first_comparison] $mode -> $dir ($(date -u +%FT%TZ))"
  if $C rl "${COMMON[@]}" --reward $mode --output_dir $dir "${resume[@]}" >> $dir.log 2>&1; then
    echo "[first_comparison] $mode finished ($(date -u +%FT%TZ))"
  else echo "[first_comparison] $mode FAILED, see $dir.log" >&2; return 1; fi
}
for mode in ${MODES:-rule model cooper}; do
  if [ -n "${PARALLEL:-}" ]; then OMP_NUM_THREADS=1 run_mode $mode & else run_mode $mode; fi
done
wait
# keep the Cooper RM of each leg (a later, larger STEPS overwrites cooper/rm): input of rescore.py
[ -f $OUT/cooper/rm/model.safetensors ] && { rm -rf $OUT/cooper/rm@$STEPS; cp -r $OUT/cooper/rm $OUT/cooper/rm@$STEPS; }
RUNS=$(for m in rule model cooper; do [ -f $OUT/$m/metrics.jsonl ] && echo $OUT/$m; done)
$C plot $RUNS --output $R/dynamics.png --title "SmolLM2-135M ($POLICY), CPU preset, $STEPS steps"
.venv/bin/python experiments/first_comparison/report.py $OUT $R
# the per-run logs go with the results (the run dirs hold GBs of checkpoints and are not committed)
for m in rule model cooper; do
  [ -d $OUT/$m ] || continue
  mkdir -p $R/runs/$m && cp $OUT/$m/{metrics,evals,timing,rollouts}.jsonl $OUT/$m/rl_config.json $R/runs/$m/ 2>/dev/null || true
done
