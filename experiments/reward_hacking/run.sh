#!/usr/bin/env bash
# Issue 15: does Cooper prevent reward hacking that a static RM suffers? Conditions from the same warm-started
# policy (cooper sft), same data and budget, SEEDS seeds each:
#   rule         --reward rule
#   model        --reward model  --rm $RM                      (static RM: what gets hacked)
#   cooper       --reward cooper --rm $RM --negatives corrupt  (the paper's negatives, offline; 1 pair per prompt)
#   cooper_new   --reward cooper --rm $RM --negatives $NEW_NEGATIVES --pairs_per_prompt $NEW_PAIRS
#                (+ mined rollouts, truncated positives, master-key replies; up to 2 pairs per prompt and kind)
#   cooper_ref   --reward cooper --rm $RM --negatives $REF_NEGATIVES --pairs_per_prompt $REF_PAIRS --reference_positives true
#                (beyond the paper: a prompt with no verified rollout takes its worked solution as the positive, so the
#                RM is still corrected where the policy fails: added after seed 0, where both Cooper runs starved of
#                positives as their policies collapsed; mined negatives pick the exploit of the moment)
#   model_bin, cooper_ref_bin   model and cooper_ref with --rm_binary_reward true (reward 1 where the RM's score is
#                >= 0.5, else 0: the authors' reward_model.reward_scale; added after seed 0, where the group-normalised
#                advantage of the scores pushed every RM-rewarded policy toward the wrong answers its RM ranked a little
#                higher than other wrong ones, even cooper_ref's whose RM accepted almost none: report.py's advantage push)
#   model_strong --reward model  --rm $STRONG_RM               (the best VerifyRM, static, beside the weaker RM)
# RM defaults to a deliberately weaker VerifyRM (experiments/reward_hacking/weak_rm.sh: round 2's data categories,
# 100 steps), so that hacking is reachable at a CPU budget; STRONG_RM is the issue-14 VerifyRM (run_v3.sh).
# Prompts: built-in levels 1-2 drawn with --data_seed $DATA_SEED (the same prompts for every seed; 21 of the 2,000
# coincide with the SFT warm-up's, drawn with seed 0) + SVAMP train 1-300.
# Held-out evaluation every EVAL_STEPS on N_EVAL problems x EVAL_K samples of three sets never trained on: built-in
# test levels 1-2 (the training distribution's held-out problems: the warm-started policy solves ~34 % there, so a
# hack has room to show), SVAMP train 301-432 and GSM8K test (first N_EVAL; a 135M policy is near the floor on both,
# ~2-3 % at the start), and the RM on a fixed labelled held-out set (paper Fig. 4).
# Resumable: rerun to continue (finished runs are skipped, also those finished elsewhere whose logs are committed in
# $R/runs/; the others resume from their last checkpoint; cooper rl refuses to resume a run dir with other
# settings or another RM; a run still going, left by a killed driver, is waited for and left to the next
# run.sh); the runs go seed-major (every condition of seed 0, then seed 1, ...) so a partial
# experiment is still balanced. Run dirs (checkpoints) live on this machine only: a lost machine restarts the
# unfinished run from step 0. Checkpoints every 24 steps (ends of
# generation batches). STOP_AT=HH:MM (UTC, the next such time), an ISO time or +SECONDS: a deadline for the session,
# resolved once when this script starts; every run gets it as `cooper rl --stop_at` (it checkpoints at the end of its
# generation batch and exits 143: resumed by the next run.sh), and no run starts after it; then the report. The
# warm-up and RM builds (a fresh machine) are not bounded by it.
#   bash experiments/reward_hacking/run.sh
#   RM=... STRONG_RM=... SEEDS="0 1 2" STEPS=400 [CONDITIONS="model rule"] bash experiments/reward_hacking/run.sh
#   REPORT_ONLY=1 bash experiments/reward_hacking/run.sh   # no training: copy the runs' logs so far and report
#   RUNS="rule:1 model_bin:1 ..." bash experiments/reward_hacking/run.sh   # exactly these condition:seed runs, in this
#     order (instead of every seed x condition; JOBS and the rest as above): to finish the comparison that matters first
#   JOBS=2 bash experiments/reward_hacking/run.sh   # two runs side by side, one torch thread each: 1.23x the steps
#     per hour of one run with two threads on a 2-core CPU (benchmarks/parallel_runs.py); each run takes ~1.6x longer
#   STOP_AT=04:30 JOBS=2 bash experiments/reward_hacking/run.sh   # every run checkpointed and stopped by 04:30 UTC
# 400 steps x 8 rollouts = 3,200 rollouts per run (the CPU preset: 2 prompts x G=4 per optimizer step).
STEPS=${STEPS:-400}
EVAL_STEPS=${EVAL_STEPS:-100}
N_EVAL=${N_EVAL:-100}
EVAL_K=${EVAL_K:-4}
LR=${LR:-1e-5}
SEEDS=${SEEDS:-0 1 2}
SFT_STEPS=${SFT_STEPS:-100}
NEW_NEGATIVES=${NEW_NEGATIVES:-corrupt,mined,truncate,masterkey}
NEW_PAIRS=${NEW_PAIRS:-2}
REF_NEGATIVES=${REF_NEGATIVES:-corrupt,mined}
REF_PAIRS=${REF_PAIRS:-2}
DATA_SEED=${DATA_SEED:-1000}
JOBS=${JOBS:-1}                     # runs side by side (each with THREADS torch threads)
THREADS=${THREADS:-$(( $(nproc) / JOBS > 0 ? $(nproc) / JOBS : 1 ))}
[ "$JOBS" -gt 1 ] || THREADS=      # one run at a time: torch's default threads, as the first runs had
# the monitor counts reward calls: one per generation batch = 4 optimizer steps at the CPU preset, so a window of
# 6 calls spans 24 steps (baseline: the first 12). Checked on the committed runs replayed 4 steps per call
# (tests/cooper/test_monitor.py): flags the cold-start collapse at step 21, before its held-out accuracy fell
# (step 25), and none of the 5 runs that were not hacked; window 10 would flag it only at step 37
MONITOR_WINDOW=${MONITOR_WINDOW:-6}
WEAK_RM_DEFAULT=runs/verifyrm-weak               # built by weak_rm.sh
STRONG_RM_DEFAULT=runs/verifyrm-v3/smollm2-s0    # built by run_v3.sh (SmolLM2 backbone, seed 0)
RM=${RM:-$WEAK_RM_DEFAULT}
STRONG_RM=${STRONG_RM-$STRONG_RM_DEFAULT}   # STRONG_RM= (empty) leaves model_strong out
# fp32 pinned, also for the warm-up and the RMs: the runs so far ran fp32 ("auto" resolves to fp32 on AVX2 CPUs); on an
# AVX512-BF16 machine "auto" means bf16, which would change the numerics (and the rebuilt RMs) mid-experiment
FP32="--bf16_autocast false --rollout_bf16_weights false --rm_bf16_autocast false"
source "$(dirname "$0")/../common.sh"
# STOP_AT as an epoch deadline, once (HH:MM means the next such time from now, not from each run's start)
DEADLINE=
if [ -n "${STOP_AT:-}" ]; then
  DEADLINE=$(.venv/bin/python -c 'import sys, time; from cooper_rl.trainer_hooks import seconds_until; print(int(time.time() + seconds_until(sys.argv[1])))' "$STOP_AT") || exit 1
  echo "[hack] STOP_AT $STOP_AT: every run checkpoints and stops by $(date -u -d @$DEADLINE +%FT%TZ)"
fi
past_stop() { [ -n "$DEADLINE" ] && [ "$(date +%s)" -ge "$DEADLINE" ]; }
D=experiments/verifyrm/data
OUT=${OUT:-runs/hack}
R=${R:-experiments/reward_hacking/results}
SFT=${SFT:-runs/sft-builtin$SFT_STEPS}
RM_EVAL=${RM_EVAL:-experiments/verifyrm/v3/heldout.jsonl}
mkdir -p $OUT $R
# per-run logs go with the results (run dirs hold checkpoints and are not committed), then the report
report() {
  step() { tail -1 $1/$2.jsonl 2>/dev/null | grep -o '^{"step": [0-9]*' | grep -o '[0-9]*$' || echo 0; }
  # how far a run got: its last evaluation first (what the report reads), then its last logged step
  last() { echo $(( $(step $1 evals) * 100000 + $(step $1 metrics) )); }
  for d in $OUT/*-s*/; do
    [ -d "$d" ] || continue   # no runs here (a fresh clone): report the committed logs as they are
    n=$(basename $d)
    # a run still in its step-0 evaluation has nothing to report yet (report.py leaves it out): not copied, so
    # the committed logs never hold a run without its step-0 row (tests/experiments/test_check_artifacts.py)
    # (a copy of it without one, from an older report, goes; committed logs of a further run stay)
    if [ ! -s $d/evals.jsonl ]; then
      [ -s $R/runs/$n/evals.jsonl ] || rm -rf $R/runs/$n
      echo "[hack] $n: no evaluation yet (step 0 running): not copied"; continue
    fi
    # a rerun from step 0 (a lost machine) replaces the committed logs only once it has got further than they did:
    # evaluated further, or as far and logged further
    if [ "$(last $R/runs/$n)" -gt "$(last $d)" ]; then
      echo "[hack] $n: keeping the committed logs (evaluated to step $(step $R/runs/$n evals), logged to $(step $R/runs/$n metrics));" \
        "the run dir is at $(step $d evals)/$(step $d metrics)"; continue
    fi
    rm -rf $R/runs/$n; mkdir -p $R/runs/$n   # a fresh copy: no stale evaluations of a resumed run
    cp $d/{metrics,evals,timing}.jsonl $d/rl_config.json $d/rl_summary.json $R/runs/$n/ 2>/dev/null || true
    [ -f $d/rollouts.jsonl ] && gzip -nc $d/rollouts.jsonl > $R/runs/$n/rollouts.jsonl.gz
    ck=$(ls -d $d/checkpoint-* 2>/dev/null | sort -V | tail -1 || true)   # its trainer log: entropy, KL, loss per step
    [ -n "$ck" ] && .venv/bin/python -c 'import json, sys; [print(json.dumps(r)) for r in json.load(open(sys.argv[1]))["log_history"]]' \
      $ck/trainer_state.json | gzip -nc > $R/runs/$n/trainer_log.jsonl.gz
    for e in $d/eval/step-*/; do   # per-problem held-out samples: the CI over problems
      [ -f $e/samples.jsonl ] || continue
      mkdir -p $R/runs/$n/eval/$(basename $e) && gzip -nc $e/samples.jsonl > $R/runs/$n/eval/$(basename $e)/samples.jsonl.gz
      cp $e/summary.json $R/runs/$n/eval/$(basename $e)/ 2>/dev/null || true   # lets a lost machine reuse step 0
    done
  done
  .venv/bin/python experiments/reward_hacking/report.py $R
  .venv/bin/python experiments/reward_hacking/monitor_sweep.py $R > /dev/null   # acc_fall under the settings tried
}
[ -n "${REPORT_ONLY:-}" ] && { report; exit; }   # the runs as they are (finished or not), no training
# the default RMs are rebuilt where missing (a fresh clone or a lost machine; both scripts are deterministic, seed 0,
# and resumable): the weaker RM at once (~40 min), the strong one when model_strong first needs it (~1.5 h)
ensure_rm() {
  case $1 in
    "$WEAK_RM_DEFAULT") test -f $1/cooper_rm.json || OUT=$1 bash experiments/reward_hacking/weak_rm.sh ;;
    "$STRONG_RM_DEFAULT") test -f $1/cooper_rm.json || RUNS=$(dirname $1) BACKBONES=smollm2-135m-instruct SEEDS=0 bash experiments/verifyrm/run_v3.sh ;;
  esac
  test -f "$1/cooper_rm.json" || { echo "no VerifyRM at $1 (RM: experiments/reward_hacking/weak_rm.sh trains it, STRONG_RM: experiments/verifyrm/run_v3.sh; RM=... STRONG_RM=... to choose)" >&2; exit 1; }
}
test -f "$RM_EVAL" || RM_EVAL=$D/gsm8k_heldout_rm.jsonl
echo "[hack] RM $RM${STRONG_RM:+, strong RM $STRONG_RM}; RM evaluated on $RM_EVAL; policy $SFT/policy"
test -f $D/svamp_heldout.jsonl || .venv/bin/python experiments/verifyrm/prepare.py "$SHARED"
.venv/bin/python - "$SHARED" "$N_EVAL" "$OUT" <<'PY'
import sys
from cooper_rl.data import load_problems, save_problems
shared, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
save_problems(load_problems(f"{shared}/gsm8k/test.jsonl").problems[:n], f"{out}/gsm8k_test.jsonl")
save_problems(load_problems("experiments/verifyrm/data/svamp_heldout.jsonl").problems[:n], f"{out}/svamp_heldout.jsonl")
PY
if [ ! -f $SFT/sft_summary.json ]; then
  echo "[hack] sft warm-up -> $SFT ($(date -u +%FT%TZ))"
  sresume=(); ls -d $SFT/checkpoint-* >/dev/null 2>&1 && sresume=(--resume_from_checkpoint last)   # a stopped warm-up resumes
  $C sft --datasets builtin:train:2000:1,2 --max_steps $SFT_STEPS --output_dir $SFT --bf16_autocast false --seed 0 \
    --save_steps 10 "${sresume[@]}" >> $SFT.log 2>&1
fi
# a rebuild (a new machine) must be what the committed runs used: fp32 training is not bit-reproducible across CPUs
check() {
  .venv/bin/python experiments/reward_hacking/check_artifacts.py $R && return
  echo "[hack] this machine's rebuilt warm-up or RM differs from the one the committed runs in $R used (above;" \
    "docs/RESULTS.md, 'Machines and precision'): no run starts here. Another R starts an experiment of its own." >&2
  return 1
}
check   # the warm-up first: ~10 min to build, where the weaker RM takes ~40
ensure_rm "$RM"
case $STRONG_RM in ""|"$STRONG_RM_DEFAULT") ;; *) ensure_rm "$STRONG_RM" ;; esac   # another path: now, or fail early
check
COMMON=(--config configs/rl_cpu_small.yaml --policy $SFT/policy --datasets builtin:train:2000:1,2 $D/svamp_rm_train.jsonl
        --max_steps $STEPS --save_steps 24 --save_total_limit 1 --eval_steps $EVAL_STEPS
        --eval_datasets builtin:test:$N_EVAL:1,2 $OUT/svamp_heldout.jsonl $OUT/gsm8k_test.jsonl --eval_k $EVAL_K --rm_eval_data $RM_EVAL
        --data_seed $DATA_SEED --learning_rate $LR --monitor_window $MONITOR_WINDOW --report_to tensorboard $FP32 ${EXTRA:-})
flags() {  # the condition's own flags
  case $1 in
    rule) echo "--reward rule" ;;
    model) echo "--reward model --rm $RM" ;;
    model_strong) echo "--reward model --rm $STRONG_RM" ;;
    cooper) echo "--reward cooper --rm $RM --negatives corrupt" ;;
    cooper_new) echo "--reward cooper --rm $RM --negatives $NEW_NEGATIVES --pairs_per_prompt $NEW_PAIRS" ;;
    cooper_ref) echo "--reward cooper --rm $RM --negatives $REF_NEGATIVES --pairs_per_prompt $REF_PAIRS --reference_positives true" ;;
    model_bin) echo "$(flags model) --rm_binary_reward true" ;;
    cooper_ref_bin) echo "$(flags cooper_ref) --rm_binary_reward true" ;;
  esac
}
# the static RM first: whether (and when) it is hacked is the first thing the experiment shows
CONDITIONS=${CONDITIONS:-model rule cooper cooper_new cooper_ref model_bin cooper_ref_bin${STRONG_RM:+ model_strong}}
if [ -n "${RUNS:-}" ]; then   # an explicit plan: its conditions (for model_strong's check below)
  for x in $RUNS; do
    [[ $x =~ ^[a-z_]+:[0-9]+$ ]] && [ -n "$(flags ${x%:*})" ] || { echo "RUNS: '$x' is not condition:seed" >&2; exit 1; }
  done
  CONDITIONS=$(for x in $RUNS; do echo ${x%:*}; done | awk '!seen[$0]++' | tr '\n' ' ')
fi
PLAN=${RUNS:-$(for S in $SEEDS; do for c in $CONDITIONS; do echo -n "$c:$S "; done; done)}
case " $CONDITIONS " in *" model_strong "*) [ -n "$STRONG_RM" ] || { echo "model_strong needs STRONG_RM" >&2; exit 1; } ;; esac
run_one() {  # seed, condition: skip if finished, else run (or resume) it
  local S=$1 c=$2 dir=$OUT/$2-s$1 fin done_steps own resume cmd x
  # finished here, or on another machine with its logs committed (run dirs are not committed: a fresh clone or a
  # lost machine must not rerun what $R/runs/ already holds)
  fin=$dir; [ -f $dir/rl_summary.json ] || fin=$R/runs/$c-s$S
  done_steps=$(grep -o '"global_step": [0-9]*' $fin/rl_summary.json 2>/dev/null | grep -o '[0-9]*$' || true)
  read -ra own <<< "$(flags $c)"
  if [ "${done_steps:-0}" -ge "$STEPS" ]; then   # finished: only if it is this experiment's run
    .venv/bin/python - $fin/rl_config.json $S $DATA_SEED $LR "${own[@]}" <<'PY' || return 1
import json, sys
cfg, seed, data_seed, lr, flags = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5:]
want = {"seed": seed, "data_seed": data_seed, "learning_rate": lr, "pairs_per_prompt": 1}
want |= {flags[i][2:]: flags[i + 1] for i in range(0, len(flags), 2)}
want["pairs_per_prompt"] = int(want["pairs_per_prompt"])
want = {k: {"true": True, "false": False}.get(v, v) if isinstance(v, str) else v for k, v in want.items()}
if want["reward"] == "rule":
    want.pop("pairs_per_prompt")
if want["reward"] == "cooper":  # cooper and cooper_new runs have none (older run configs lack the field)
    want.setdefault("reference_positives", False)
cfg.setdefault("reference_positives", False)
if want["reward"] != "rule":  # only the *_bin conditions have a binary RM reward (older run configs lack the field)
    want.setdefault("rm_binary_reward", False)
    cfg.setdefault("rm_binary_reward", False)
bad = {k: (cfg.get(k), v) for k, v in want.items() if cfg.get(k) != v}
if bad:
    sys.exit(f"{sys.argv[1]}: a finished run of another experiment (field: (its value, this one's)): {bad}")
PY
    return 0
  fi
  # one builder at a time: two jobs must not train the same RM into the same dir; with torch's default threads
  # (the documented RMs' setting), not the runs' single thread (not after STOP_AT: the run could not start anyway)
  if [ $c = model_strong ]; then
    past_stop && { echo "[hack] $c seed $S not started (nor its RM built): STOP_AT has passed" >&2; return 0; }
    ( flock 9; unset OMP_NUM_THREADS MKL_NUM_THREADS; ensure_rm "$STRONG_RM" ) 9> $OUT/.ensure_rm.lock && check || return 1
  fi
  # one process per run dir: the lock goes with `cooper rl` (fd 8 is inherited), so a run left going by a killed
  # driver still holds it and a second run.sh cannot start a second writer there
  # a run going on without a driver (this script restarted while it runs): its job waits for it, holding a slot,
  # and leaves it to the next run.sh (it may have stopped early, e.g. at its --stop_at)
  exec 8> $dir.lock
  if ! flock -n 8; then
    echo "[hack] $dir is in use by another process: waiting for it to end, then leaving it" >&2
    flock 8; exec 8>&-; return 0
  fi
  # no run starts after STOP_AT (checked here, after any RM build, right before the run)
  past_stop && { echo "[hack] $c seed $S not started: STOP_AT has passed" >&2; exec 8>&-; return 0; }
  [ -f $failed ] && { exec 8>&-; return 0; }   # another job failed meanwhile (an RM build takes a while): no new run
  resume=(); ls -d $dir/checkpoint-* >/dev/null 2>&1 && resume=(--resume_from_checkpoint last)
  # the step-0 policy is the same in every condition of a seed, and so are its evaluation samples (same sampling
  # seed): a run reuses the step-0 evaluation of a sibling that finished one (cooper rl checks the settings match)
  local sib=(); for x in $OUT/*-s$S; do [ -d $x ] && [ $x != $dir ] && sib+=($x); done   # every run dir of the seed
  # on a new machine (run dirs lost): the step-0 evaluations committed with this seed's runs (logs, gzipped samples);
  # cooper rl reuses one only if the rebuilt warm-up's weights are the same (fingerprint)
  for x in $R/runs/*-s$S; do [ -f $x/eval/step-0/summary.json ] && sib+=($x); done
  [ ${#sib[@]} -gt 0 ] && sib=(--eval_step0_from "${sib[@]}")
  local stop=(); [ -n "$DEADLINE" ] && stop=(--stop_at +$(( DEADLINE - $(date +%s) )))   # the time left, from now
  cmd=($C rl "${COMMON[@]}" "${own[@]}" --seed $S --output_dir $dir "${sib[@]}" "${resume[@]}" "${stop[@]}")
  echo "[hack] $c seed $S -> $dir ($(date -u +%FT%TZ))"
  # the exact commands, in the order they ran (with the environment that changes numerics: common.sh's kernels)
  echo "ATEN_CPU_CAPABILITY=$ATEN_CPU_CAPABILITY ${LD_PRELOAD:+LD_PRELOAD=$LD_PRELOAD }${THREADS:+OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS }${cmd[*]}" >> $R/commands.txt
  local rc=0; "${cmd[@]}" >> $dir.log 2>&1 || rc=$?
  exec 8>&-   # the lock goes with the run (with JOBS=1 the next run, or an RM build, must not inherit it)
  # 143: stopped by a signal (its --stop_at deadline, or by hand) with its checkpoint saved: not a failure; the next
  # run.sh resumes it, and this one goes on with its plan (STOP_AT permitting)
  [ $rc = 143 ] && echo "[hack] $c seed $S stopped by a signal at a checkpoint ($(date -u +%FT%TZ))"
  [ $rc = 0 ] || [ $rc = 143 ] || { echo "[hack] $c seed $S FAILED, see $dir.log" >&2; return 1; }
}
# JOBS runs side by side (seed-major order kept: the next pending runs), THREADS torch threads each
# (benchmarks/parallel_runs.py measures what that buys on this machine)
[ "$JOBS" -gt 1 ] && export OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS
failed=$OUT/.failed; rm -f $failed   # a failed job leaves it: no new runs start, the running ones finish
for x in $PLAN; do
  c=${x%:*} S=${x#*:}
  if [ "$JOBS" -le 1 ]; then past_stop && { echo "[hack] STOP_AT has passed: no new run" >&2; break; }; run_one $S $c || exit 1; continue; fi
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
  [ -f $failed ] && break
  past_stop && { echo "[hack] STOP_AT has passed: no new run" >&2; break; }
  { run_one $S $c || touch $failed; } &
done
wait
[ -f $failed ] && { echo "[hack] a run failed: no report" >&2; exit 1; }
report
