#!/usr/bin/env bash
# Stop the issue-15 experiment cleanly (before a session ends): run_hack.sh starts no new run, every running
# `cooper rl` of it finishes its generation batch (an evaluation in progress first finishes: ~15 min alone, ~25
# side by side), checkpoints and exits, and so does an RM build or warm-up it started (`cooper train-rm`, `cooper
# sft`: they checkpoint too); then the report of the logs so far (REPORT_ONLY=1 run_hack.sh), ready to commit.
#   bash experiments/reproduce/stop_hack.sh            [OUT=runs/hack] [NO_REPORT=1]
# A later `bash experiments/reproduce/run_hack.sh` (same JOBS) resumes every stopped run from its checkpoint.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-runs/hack}
pkill -TERM -f "bash experiments/reproduce/run_hack.sh" && echo "[stop] run_hack.sh stopped: no new run starts"
pids=$(pgrep -f "cooper (rl .*--output_dir $OUT/|train-rm |sft )" || true)
if [ -n "$pids" ]; then
  for p in $pids; do echo "[stop] $(tr '\0' ' ' < /proc/$p/cmdline | grep -o -- "--output_dir [^ ]*")"; done
  kill -TERM $pids
  t0=$(date +%s)
  while kill -0 $pids 2>/dev/null; do
    sleep 15
    echo "[stop] waiting for the runs to checkpoint ($(( $(date +%s) - t0 )) s)"
  done
  echo "[stop] all stopped after $(( $(date +%s) - t0 )) s"
else
  echo "[stop] no cooper rl (under $OUT), train-rm or sft running"
fi
[ -n "${NO_REPORT:-}" ] || REPORT_ONLY=1 bash experiments/reproduce/run_hack.sh
