/* blas_cpu.h: makes OpenBLAS use the right kernels on CPUs it does not recognise.
 * Debian 12's OpenBLAS 0.3.21 picks its kernels at load time from the CPU model; on newer
 * Xeons (e.g. model 207, seen on this project's machines) it falls back to "Prescott" (SSE3),
 * 5x slower than its AVX-512 "SkylakeX" kernels (65 vs 327 GFLOP/s sgemm measured here). */
#ifndef BELLOWS_BLAS_CPU_H
#define BELLOWS_BLAS_CPU_H

/* If OPENBLAS_CORETYPE is unset, OpenBLAS chose Prescott and the CPU has AVX-512 (or AVX2),
 * sets OPENBLAS_CORETYPE to SkylakeX (or Haswell) and re-executes the program with the same
 * argv, so the choice takes effect. Returns (doing nothing) in every other case, including a
 * failed exec. The user's own OPENBLAS_CORETYPE is always respected. */
void blas_cpu_fix_kernels(char **argv);

/* The kernel family OpenBLAS is using, e.g. "SkylakeX". */
const char *blas_cpu_core(void);

#endif
