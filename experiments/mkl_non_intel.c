/* Preloaded on Intel CPUs by experiments/common.sh: oneMKL (torch's fp32 matrix products) then takes the code path
 * it takes on AMD CPUs, where this project's experiments built their warm-up policy and VerifyRMs. MKL picks its
 * kernels by CPU vendor (these functions), and its Intel-only kernels (AVX-512/AMX, or AVX2 with
 * MKL_ENABLE_INSTRUCTIONS=AVX2) round differently in the last bits, which 100 Adam steps turn into other weights.
 * Measured: with this shim an Intel Xeon rebuilt the warm-up byte-identically to the AMD one (docs/RESULTS.md,
 * "Machines and precision"); without it, or with MKL_ENABLE_INSTRUCTIONS=AVX2 or MKL_CBWR=COMPATIBLE, it did not. */
int mkl_serv_intel_cpu_true(void) { return 0; }
int mkl_serv_intel_cpu(void) { return 0; }
int mkl_serv_cpuiszen(void) { return 1; }
