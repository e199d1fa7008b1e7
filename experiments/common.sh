# Sourced by the experiment scripts: strict mode, repo root, environment set up, offline, `$C` = cooper (COOPER_CMD overrides).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# torch's own CPU kernels (softmax, norms, activations...) as on the AVX2 machines of the first runs: with its AVX-512
# kernels the same fp32 training came out different on an AMD Zen 5 CPU (the weaker VerifyRM: validation accuracy 76.1
# instead of 67.9 %; Adam turns last-bit differences into other weights), with AVX2 ones it is the same to the last
# printed digit (docs/RESULTS.md, "Machines and precision"). Matrix products (MKL) were the same either way here.
export ATEN_CPU_CAPABILITY=${ATEN_CPU_CAPABILITY:-avx2}
# MKL's matrix products as on the AMD CPUs that built the experiments' warm-up and RMs: MKL picks its kernels by CPU
# vendor, and on an Intel CPU its Intel-only kernels gave another warm-up (sha256 3bf7bda6... by default, 3888c3d1...
# with MKL_ENABLE_INSTRUCTIONS=AVX2, instead of dd71158a...). experiments/mkl_non_intel.c, preloaded, makes MKL take
# its non-Intel path there: the warm-up then came out byte-identical. COOPER_MKL_NATIVE=1 keeps MKL's own choice.
if [ -z "${COOPER_MKL_NATIVE:-}" ] && grep -q -m1 GenuineIntel /proc/cpuinfo; then
  MKL_SHIM=$PWD/.venv/mkl_non_intel.so
  [ -f "$MKL_SHIM" ] || gcc -shared -fPIC -O2 -o "$MKL_SHIM" experiments/mkl_non_intel.c
  case ":${LD_PRELOAD:-}:" in *":$MKL_SHIM:"*) ;; *) export LD_PRELOAD=$MKL_SHIM${LD_PRELOAD:+:$LD_PRELOAD} ;; esac
fi
SHARED=${SHARED:-../shared/data}
C=${COOPER_CMD:-.venv/bin/cooper}   # another cooper (a wrapper, a test's fake): COOPER_CMD=...
