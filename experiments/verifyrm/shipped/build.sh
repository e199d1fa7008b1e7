#!/usr/bin/env bash
# Issue 104: the pipeline of a LoRA VerifyRM from nothing: its data (DATA, default round 7's, rebuilt byte-identical
# from the committed record), LoRA training (train.sh), evaluation on round 3's held-out set, the robustness suite,
# the LaTeX suite, the prefix probe and the checks outside the suites (outside_checks.py, policy_check.py) into
# RESULTS, and with PACKAGE=1 the package files with their model card (package.py -> src/cooper_rl/assets/verifyrm;
# RECIPE names the rows).
# The shipped RM is round 8's: `bash experiments/verifyrm/shipped/round8.sh` runs this with its data and packages it.
# Alone, it rebuilds the first shipped RM (round 7's rows, results/shipped) without packaging it. Resumable: each step
# skips what it finished; training continues from its checkpoint.
#   [SEED=0] [RANK=16] [PACKAGE=0] [EXTRA=1] [REBUILD=1] [FP16=1] bash experiments/verifyrm/shipped/build.sh
source "$(dirname "$0")/../../common.sh"
[ -n "${PINNED:-}" ] || unset ATEN_CPU_CAPABILITY LD_PRELOAD   # native kernels, as round 7 (run_v4.sh)
SEED=${SEED:-0} RANK=${RANK:-16}
RUNS=${RUNS:-runs/verifyrm-lora}
R=${RESULTS:-experiments/verifyrm/results/shipped}
V3=experiments/verifyrm/v3 V4=experiments/verifyrm/v4
out=$RUNS/r$RANK-s$SEED
mkdir -p $R
# the trained RM of the shipped run is committed (results/shipped/rm): a fresh clone evaluates and packages it
# without retraining (REBUILD=1 trains it again)
if [ -z "${REBUILD:-}" ] && [ ! -f $out/train_metrics.json ] && [ "$SEED/$RANK" = 0/16 ] && [ -f $R/rm/SHA256SUMS ]; then
  (cd $R/rm && sha256sum -c --quiet SHA256SUMS) && mkdir -p $out && cp $R/rm/* $out/
fi
SEED=$SEED RANK=$RANK RUNS=$RUNS bash experiments/verifyrm/shipped/train.sh
test -f $out/train_metrics.json || { echo "training did not finish: $out.log" >&2; exit 1; }
cp $out/train_metrics.json $R/train_smollm2_s$SEED.json
S=experiments/verifyrm/shipped   # the checks outside the suites' templates (outside_checks.py; predictions.md)
rm_dir=$out   # the RM evaluated and packaged; FP16=1: its copy with the adapter stored in fp16 (half.py; rank 32)
if [ "${FP16:-0}" = 1 ]; then
  # evaluations are named by seed only: an fp32 RM's already in RESULTS would be taken for the fp16 copy's
  if [ -f $R/eval_heldout_smollm2_s$SEED.json ] && [ ! -f $R/half_s$SEED.json ]; then
    echo "build.sh: $R holds evaluations of the fp32 RM: FP16=1 needs its own RESULTS=<dir>" >&2; exit 2
  fi
  [ -f $out-fp16/half.json ] && [ $out-fp16/half.json -nt $out/train_metrics.json ] ||  # a retrained RM: anew
    .venv/bin/python $S/half.py --rm $out --out $out-fp16
  cp $out-fp16/half.json $R/half_s$SEED.json && rm_dir=$out-fp16
fi
evaluate() {  # eval-rm of the trained RM on each set named, skipping the ones evaluated already
  for E in "$@"; do
    data=$V3/$E.jsonl; [ $E = latex_heldout ] && data=$V4/$E.jsonl; [ -f $S/$E.jsonl ] && data=$S/$E.jsonl
    test -f $R/eval_${E}_smollm2_s$SEED.json || { echo "[shipped] eval-rm seed $SEED on $E ($(date -u +%T))";
      $C eval-rm --rm $rm_dir --data $data --output $R/eval_${E}_smollm2_s$SEED.json \
        --scores $R/scores_${E}_smollm2_s$SEED.jsonl.gz > $R/eval_${E}_smollm2_s$SEED.log; }
  done
}
evaluate heldout robustness latex_heldout   # the suites the card reports beside round 7
.venv/bin/python experiments/verifyrm/report_v4.py $R
[ "${EXTRA:-1}" = 1 ] && evaluate prefix_probe svamp_cots long_check policy_samples   # EXTRA=0: the card's suites only
# the embedded policy's college-math solutions, where policy_check.py --college has built them (it needs the cores)
[ "${EXTRA:-1}" = 1 ] && [ -f $S/policy_college.jsonl ] && evaluate policy_college
# the package last, so that its card carries the outside checks (RECIPE: the card's name for the training rows)
[ "${PACKAGE:-0}" = 1 ] && .venv/bin/python experiments/verifyrm/shipped/package.py --rm $rm_dir --results $R \
  --data ${DATA:-runs/verifyrm-v7/train.jsonl} ${RECIPE:+--recipe "$RECIPE"}
exit 0
