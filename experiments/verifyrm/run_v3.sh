#!/usr/bin/env bash
# Issue 14: VerifyRM v3. Backbones SmolLM2-135M (decoder, last-token pooling) and MiniLM-L6, trained on
# `cooper rm-data` rows (answer-format variants, traps, real policy completions), SEEDS training seeds each,
# evaluated next to the strict rule verifier and raw Math-Verify on
#   heldout:    real completions on GSM8K test questions 101-300 (embedded + SFT policy, lenient-rule labels,
#               spot-checked by hand: spotcheck.py, v3/spotcheck.md; 4 labels changed, v3/heldout_hand_labels.jsonl)
#               plus the gold solutions;
#   robustness: every rm-data category once per GSM8K test question 101-200 (labels by construction).
# Never trains on GSM8K test questions (rm-data --exclude drops any that appear). Resumable: rerun to continue;
# every step skips what it already finished and training continues from its last checkpoint.
# fp32 (--bf16_autocast false), as the documented runs were; "auto" would mean bf16 on AVX512-BF16 CPUs.
#   bash experiments/verifyrm/run_v3.sh           [SEEDS="0 1 2"] [BACKBONES="minilm-l6 smollm2-135m-instruct"]
source "$(dirname "$0")/../common.sh"
D=experiments/verifyrm/data
V=experiments/verifyrm/v3            # data (committed: the samples and the built rows' stats)
R=experiments/verifyrm/results/v3    # evaluations (committed)
RUNS=${RUNS:-runs/verifyrm-v3}       # RM weights (gitignored)
SFT=${SFT:-runs/sft-builtin100}      # the SFT warm-start policy (shared with benchmarks/cooper_overhead.py)
SEEDS=${SEEDS:-0 1 2}
BACKBONES=${BACKBONES:-minilm-l6 smollm2-135m-instruct}   # MiniLM first: minutes per seed, SmolLM2 hours on a 2-core CPU
N_TRAIN_GSM=${N_TRAIN_GSM:-1200}     # GSM8K-train worked solutions restyled / trapped (also: SVAMP 300 x 2 cots, 400 built-in)
N_SAMPLE=${N_SAMPLE:-100}            # questions per training source the policies answer (GSM8K train, SVAMP train)
mkdir -p $V $R $RUNS
step() { echo "[v3] $* ($(date -u +%FT%TZ))"; }

test -f $D/svamp_rm_train.jsonl || .venv/bin/python experiments/verifyrm/prepare.py "$SHARED"
.venv/bin/python - "$SHARED" "$V" <<'PY'
import sys
from cooper_rl.data import load_problems, save_problems
shared, v = sys.argv[1], sys.argv[2]
test = load_problems(f"{shared}/gsm8k/test.jsonl").problems
save_problems(test[100:300], f"{v}/gsm8k_test_101_300.jsonl")   # held-out (the first 100 evaluate policies)
save_problems(test[100:200], f"{v}/gsm8k_test_101_200.jsonl")   # robustness suite
PY

# the collected samples are committed: the SFT policy and the collects run only while one of them is incomplete
lines() { [ -f "$1" ] && wc -l < "$1" || echo 0; }
if [ "$(lines $V/samples_train_T0.6.jsonl)" -lt $((4 * N_SAMPLE)) ] || [ "$(lines $V/samples_train_T1.0.jsonl)" -lt $((4 * N_SAMPLE)) ] \
   || [ "$(lines $V/samples_heldout.jsonl)" -lt 400 ]; then   # 4 = 2 question files x 2 policies; held-out 200 x 2
  if [ ! -f $SFT/sft_summary.json ]; then
    step "sft warm-up -> $SFT"
    $C sft --datasets builtin:train:2000:1,2 --max_steps 100 --output_dir $SFT --bf16_autocast false --seed 0 > $SFT.log 2>&1
  fi
  # real completions of the embedded and the SFT policy, two temperatures (collect resumes a killed run)
  for T in 0.6 1.0; do
    step "collect train questions, T=$T"
    $C collect --problems $SHARED/gsm8k/train.jsonl $D/svamp_rm_train.jsonl --limit $N_SAMPLE --samples_per_problem 1 \
      --sources hf:smollm2-135m-instruct hf:$SFT/policy --temperature $T --max_new_tokens 256 --batch_size 32 \
      --seed 0 --output $V/samples_train_T$T.jsonl >> $V/collect_train_T$T.log 2>&1
  done
  step "collect held-out questions"
  $C collect --problems $V/gsm8k_test_101_300.jsonl --samples_per_problem 1 --sources hf:smollm2-135m-instruct \
    hf:$SFT/policy --temperature 1.0 --max_new_tokens 256 --batch_size 32 --seed 0 \
    --output $V/samples_heldout.jsonl >> $V/collect_heldout.log 2>&1
fi

step "rm-data"
$C rm-data --solutions $SHARED/gsm8k/train.jsonl $D/svamp_rm_train.jsonl builtin:train:400 --limit $N_TRAIN_GSM \
  --samples $V/samples_train_T0.6.jsonl $V/samples_train_T1.0.jsonl --exclude $SHARED/gsm8k/test.jsonl \
  --output $RUNS/train.jsonl --stats $V/train.stats.json --seed 0 > $V/rm_data_train.log
# the evaluation suites are committed (issue 67's RL runs read heldout.jsonl while they run): a rebuild goes to $RUNS
# and must match them byte for byte; it never rewrites them
$C rm-data --solutions $V/gsm8k_test_101_200.jsonl --mode suite --output $RUNS/robustness.jsonl --seed 0 > $V/rm_data_suite.log
$C rm-data --solutions $V/gsm8k_test_101_300.jsonl --mode suite --categories fmt:hash \
  --samples $V/samples_heldout.jsonl --sample_labels lenient --label_overrides $V/heldout_hand_labels.jsonl \
  --output $RUNS/heldout.jsonl --seed 0 > $V/rm_data_heldout.log
for f in robustness heldout; do
  if [ ! -f $V/$f.jsonl ]; then cp $RUNS/$f.jsonl $RUNS/$f.stats.json $V/
  elif ! cmp -s $RUNS/$f.jsonl $V/$f.jsonl; then
    echo "the rebuilt $RUNS/$f.jsonl differs from the committed $V/$f.jsonl (left unchanged): compare them" >&2; exit 1
  fi
done

for B in $BACKBONES; do
  case $B in
    minilm*) HP=(--learning_rate 5e-5 --max_length 256 --batch_size 32) ;;
    *)       HP=(--learning_rate 3e-5 --max_length 320 --batch_size 16) ;;
  esac
  for S in $SEEDS; do
    out=$RUNS/${B%%-*}-s$S
    if [ ! -f $out/train_metrics.json ]; then
      resume=(); ls -d $out.checkpoints/checkpoint-* >/dev/null 2>&1 && resume=(--resume_from_checkpoint last)
      step "train-rm $B seed $S -> $out"
      $C train-rm --data $RUNS/train.jsonl --backbone $B --output_dir $out --epochs ${EPOCHS:-1} --eval_steps 100 \
        --warmup_ratio 0.05 --bf16_autocast false --seed $S "${HP[@]}" "${resume[@]}" >> $out.log 2>&1
    fi
    # the record of the documented RM is kept: a rebuild (a new machine) writes its record beside it (*_rebuilt.json)
    rec=$R/train_${B%%-*}_s$S.json
    if [ -f $rec ] && ! cmp -s $out/train_metrics.json $rec; then cp $out/train_metrics.json ${rec%.json}_rebuilt.json; else cp $out/train_metrics.json $rec; fi
    for E in heldout robustness; do
      if [ ! -f $R/eval_${E}_${B%%-*}_s$S.json ]; then
        step "eval-rm $B seed $S on $E"
        plot=(); [ "$S" = "0" ] && plot=(--plot $R/reliability_${E}_${B%%-*}.png)
        $C eval-rm --rm $out --data $V/$E.jsonl --output $R/eval_${E}_${B%%-*}_s$S.json "${plot[@]}" > $R/eval_${E}_${B%%-*}_s$S.log
      fi
    done
  done
done
.venv/bin/python experiments/verifyrm/report_v3.py $R
