# Sourced by the experiment scripts: strict mode, repo root, environment set up, offline, `$C` = cooper.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
SHARED=${SHARED:-../shared/data}
C=.venv/bin/cooper
