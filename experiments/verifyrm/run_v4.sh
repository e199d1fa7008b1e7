#!/usr/bin/env bash
# Issue 69: VerifyRM v4 = v3's recipe (run_v3.sh: GSM8K-style answer formats, traps, real policy completions) plus
# rows around LaTeX answers of college-math problems (cooper rm-data --latex_problems: the same value written
# otherwise, and near / reciprocal / sign / dropped-term / swapped-bracket / partial / last-sentence traps, every
# label confirmed by the CAS). SmolLM2-135M, SEEDS seeds, evaluated next to the strict rule and raw Math-Verify on
#   v3's held-out and robustness sets (issue 14's; target: stay >= 99 % / 99 %) and
#   latex_heldout: every latex category once per held-out college-math problem (20 % of the problems by a hash of the
#   question, never trained on; target >= 95 %, every category >= 90 %).
# Never trains on GSM8K test questions (--exclude) or the held-out college-math problems (--latex_split).
# Resumable: every step skips what it finished; training continues from its last checkpoint; the CAS verdicts are
# cached next to the data. fp32, native kernels.
# ROUND=5: the same with every applicable latex form per training problem (--latex_forms all, as the held-out suite has
# them) instead of one correct and one wrong: round 4's seed 0 was weakest on the forms rare in its training rows; and
# the sign-flip, reciprocal and dropped-term traps of half the training problems written in the reference's own text
# (their near values as decimals where the value has one: a decimal answer to a reference written without one was
# right in 12 of round 4's 13 such rows)
# (--latex_trap_style mixed): in round 4's rows at least 70 % of the rows in the CAS's rendering were wrong ones
# (sign, reciprocal, dropped vs cas, reordered), and seed 0 rejected most correct CAS renderings (both chosen after
# seeing round 4's seed 0; the held-out suite is unchanged).
# ROUND=6: round 5's rows plus generated problems aimed at the forms round 5's seed 0 verified worst (a decimal answer,
# a swapped interval bracket, the CAS's rendering, a dropped term; latex_synth.py, committed in v6/; chosen after
# seeing round 5's seed 0; the held-out suite as corrected on 2026-12-04 by reverify_units.py: docs/VERIFYRM.md)
# ROUND=7: round 6's recipe with the problems whose reference the CAS misreads left out (rm-data's default
# --latex_ambiguous_refs skip, latex_forms.misread_reference; ambiguous_refs.py found 31 of round 6's CAS renderings
# labelled correct although wrong; chosen after seeing round 6's seed 0 and that audit; the held-out suite unchanged)
#   [ROUND=4|5|6|7] [SEEDS="0 1 2"] [DATA_ONLY=1] bash experiments/verifyrm/run_v4.sh
source "$(dirname "$0")/../common.sh"
# native kernels (PINNED=1: issue 14's AVX2 / non-Intel-MKL pinning): on an AVX-512/AMX CPU the pinned kernels take
# ~1.7x the time (benchmarks/pinning.py), and the RM only has to reproduce within its seed spread, not bit for bit
[ -n "${PINNED:-}" ] || unset ATEN_CPU_CAPABILITY LD_PRELOAD
D=experiments/verifyrm/data
V3=experiments/verifyrm/v3             # issue 14's samples and evaluation sets (committed)
ROUND=${ROUND:-4}
SYNTH=()                               # generated problems (round 6)
# rounds 4-6 were built with the forms of references the CAS misreads (`60,180` read as 60180; ambiguous_refs.py):
# kept (set per round below) so that they rebuild byte-identical; the held-out suite too (built once, committed)
case $ROUND in
  4) AMBIGUOUS=keep LATEX_FORMS=one_per_label TRAP_STYLE=cas ;;
  5) AMBIGUOUS=keep LATEX_FORMS=all TRAP_STYLE=mixed ;;
  6) AMBIGUOUS=keep LATEX_FORMS=all TRAP_STYLE=mixed SYNTH=(experiments/verifyrm/v6/synthetic_problems.jsonl) ;;
  7) AMBIGUOUS=skip LATEX_FORMS=all TRAP_STYLE=mixed SYNTH=(experiments/verifyrm/v6/synthetic_problems.jsonl) ;;
  *) echo "ROUND must be 4, 5, 6 or 7" >&2; exit 1 ;;
esac
V4=experiments/verifyrm/v4             # the held-out college-math suite: every round is evaluated on it (committed)
V=experiments/verifyrm/v$ROUND         # this round's training data stats and CAS verdicts (committed)
R=experiments/verifyrm/results/v$ROUND # evaluations (committed)
RUNS=${RUNS:-runs/verifyrm-v$ROUND}    # data and RM weights (gitignored; one per round: its train.jsonl is reused)
SEEDS=${SEEDS:-0 1 2}
N_TRAIN_GSM=${N_TRAIN_GSM:-1200}       # as v3
MAX_LENGTH=${MAX_LENGTH:-384}          # v3: 320; college-math questions and LaTeX answers are longer
# the CAS's deadline per check while building the data: generous, so that a busy machine does not change the rows
# (a check past it gives no verdict and its form is dropped, never labelled)
CAS_TIMEOUT=${CAS_TIMEOUT:-20}
mkdir -p $V $R $RUNS
step() { echo "[v$ROUND] $* ($(date -u +%FT%TZ))"; }
test -f $D/svamp_rm_train.jsonl || .venv/bin/python experiments/verifyrm/prepare.py "$SHARED"
for f in heldout robustness; do test -f $V3/$f.jsonl || { echo "missing $V3/$f.jsonl (run_v3.sh builds it)" >&2; exit 1; }; done

# the CAS verdicts of the committed build (a fresh clone asks nothing new, so a slower machine's timeouts cannot
# change the rows; rm-data adds what it lacks)
# (round 5 starts from round 4's: the same problems' forms, the same CAS)
# (round 6: round 5's record plus what its generated problems added, committed alone: v6/train.cas_cache.added.jsonl;
# round 7: round 6's record plus its checks of misread references, v7/train.cas_cache.added.jsonl)
BASE=; [ $ROUND -ge 6 ] && BASE=experiments/verifyrm/v5/train.cas_cache.jsonl
ADDED=(); [ $ROUND = 7 ] && ADDED=(experiments/verifyrm/v6/train.cas_cache.added.jsonl)
if [ -n "$BASE" ]; then
  test -f $RUNS/train.cas_cache.jsonl || { cat $BASE "${ADDED[@]}" > $RUNS/train.cas_cache.jsonl
    test -f $V/train.cas_cache.added.jsonl && cat $V/train.cas_cache.added.jsonl >> $RUNS/train.cas_cache.jsonl; }
else
  test -f $RUNS/train.cas_cache.jsonl || cp $V/train.cas_cache.jsonl $RUNS/ 2>/dev/null \
    || cp experiments/verifyrm/v$((ROUND - 1))/train.cas_cache.jsonl $RUNS/ 2>/dev/null || true
fi
for f in "${SYNTH[@]}"; do test -f $f || .venv/bin/python experiments/verifyrm/latex_synth.py --out $f; done
step "rm-data: v3's rows + college-math LaTeX rows (train split)"
test -f $RUNS/train.jsonl || $C rm-data --solutions $SHARED/gsm8k/train.jsonl $D/svamp_rm_train.jsonl builtin:train:400 \
  --limit $N_TRAIN_GSM --samples $V3/samples_train_T0.6.jsonl $V3/samples_train_T1.0.jsonl \
  --exclude $SHARED/gsm8k/test.jsonl --latex_problems $SHARED/college_math/problems.jsonl "${SYNTH[@]}" --latex_split train \
  --latex_forms $LATEX_FORMS --latex_trap_style $TRAP_STYLE --latex_ambiguous_refs $AMBIGUOUS --output $RUNS/train.jsonl --stats $V/train.stats.json --seed 0 --verify_timeout $CAS_TIMEOUT --quiet
if [ -n "$BASE" ]; then  # committed: the lines after the base record's (rm-data only appends to it)
  tail -n +$(($(cat $BASE "${ADDED[@]}" | wc -l) + 1)) $RUNS/train.cas_cache.jsonl > $V/train.cas_cache.added.jsonl
else
  cmp -s $RUNS/train.cas_cache.jsonl $V/train.cas_cache.jsonl || cp $RUNS/train.cas_cache.jsonl $V/   # committed
fi
step "rm-data: held-out college-math problems, every latex category"
test -f $V4/latex_heldout.jsonl || $C rm-data --solutions none --latex_problems $SHARED/college_math/problems.jsonl \
  --latex_split heldout --mode suite --latex_ambiguous_refs keep --output $V4/latex_heldout.jsonl --seed 0 --verify_timeout $CAS_TIMEOUT --quiet
[ -n "${DATA_ONLY:-}" ] && exit 0

for S in $SEEDS; do
  out=$RUNS/smollm2-s$S
  if [ ! -f $out/train_metrics.json ]; then
    resume=(); ls -d $out.checkpoints/checkpoint-* >/dev/null 2>&1 && resume=(--resume_from_checkpoint last)
    step "train-rm smollm2 seed $S -> $out"
    $C train-rm --data $RUNS/train.jsonl --backbone smollm2-135m-instruct --output_dir $out --epochs 1 --eval_steps 100 \
      --warmup_ratio 0.05 --bf16_autocast false --seed $S --learning_rate 3e-5 --max_length $MAX_LENGTH --batch_size 16 \
      "${resume[@]}" >> $out.log 2>&1
  fi
  cp $out/train_metrics.json $R/train_smollm2_s$S.json
  for E in heldout robustness latex_heldout prefix_probe; do  # prefix_probe: v3's probe (prefix_probe.py, Known limits)
    data=$V3/$E.jsonl; [ $E = latex_heldout ] && data=$V4/$E.jsonl
    test -f $R/eval_${E}_smollm2_s$S.json || { step "eval-rm seed $S on $E";
      $C eval-rm --rm $out --data $data --output $R/eval_${E}_smollm2_s$S.json \
        --scores $R/scores_${E}_smollm2_s$S.jsonl.gz > $R/eval_${E}_smollm2_s$S.log; }  # (per row: for later audits)
  done
done
# issue 14's RM on the new held-out suite, beside (its v3 evaluations are in results/v3; this one in results/v4 for
# every round): where it is built (run_v3.sh, seed 0; the RL comparison of issue 67 builds it too)
V3RM=${V3RM:-runs/verifyrm-v3/smollm2-s0}
R4=experiments/verifyrm/results/v4
if [ -f $V3RM/cooper_rm.json ] && [ ! -f $R4/eval_latex_heldout_v3smollm2_s0.json ]; then
  step "eval-rm issue 14's RM ($V3RM) on latex_heldout"
  $C eval-rm --rm $V3RM --data $V4/latex_heldout.jsonl --output $R4/eval_latex_heldout_v3smollm2_s0.json > $R4/eval_latex_heldout_v3smollm2_s0.log
fi
.venv/bin/python experiments/verifyrm/report_v4.py $R
