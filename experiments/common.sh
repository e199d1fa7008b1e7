# Sourced by the experiment scripts: strict mode, repo root, environment set up, offline, `$C` = cooper.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# torch's own CPU kernels (softmax, norms, activations...) as on the AVX2 machines of the first runs: with its AVX-512
# kernels the same fp32 training came out different on an AMD Zen 5 CPU (the weaker VerifyRM: validation accuracy 76.1
# instead of 67.9 %; Adam turns last-bit differences into other weights), with AVX2 ones it is the same to the last
# printed digit (docs/RESULTS.md, "Machines and precision"). Matrix products (MKL) were the same either way here.
export ATEN_CPU_CAPABILITY=${ATEN_CPU_CAPABILITY:-avx2}
SHARED=${SHARED:-../shared/data}
C=.venv/bin/cooper
