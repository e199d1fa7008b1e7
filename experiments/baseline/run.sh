#!/usr/bin/env bash
# avg@8 of the embedded policy (paper protocol: k=8, T=0.7, top-p 0.95, 512 new tokens) on
#   - 64 built-in test problems (about 21 per level, small and large numbers mixed), and
#   - the first 24 problems of the GSM8K test file (../shared/data/gsm8k/test.jsonl).
# Resumable: rerunning continues where a killed run stopped. Results: experiments/baseline/results/.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
OUT=experiments/baseline/results
GSM=${GSM8K_TEST:-../shared/data/gsm8k/test.jsonl}
# The two evaluations run side by side, one torch thread each, so two processes do not oversubscribe 2 cores.
OMP_NUM_THREADS=1 .venv/bin/cooper eval --model smollm2-135m-instruct --datasets builtin:test:64 --k 8 --batch_size 64 --output_dir $OUT/builtin > $OUT/builtin.log 2>&1 &
OMP_NUM_THREADS=1 .venv/bin/cooper eval --model smollm2-135m-instruct --datasets "$GSM" --limit 24 --k 8 --batch_size 64 --output_dir $OUT/gsm8k > $OUT/gsm8k.log 2>&1 &
wait
.venv/bin/python - <<'PY'
import json, platform, os, torch, transformers
info = {"machine": platform.machine(), "cpu_count": os.cpu_count(), "python": platform.python_version(),
        "torch": torch.__version__, "transformers": transformers.__version__, "platform": platform.platform()}
json.dump(info, open("experiments/baseline/results/machine.json", "w"), indent=2)
PY
