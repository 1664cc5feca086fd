/* blas_cpu.h: pins OpenBLAS's kernels so that the same command gives the same files on every
 * x86-64 machine. OpenBLAS (Debian 12: 0.3.21, built with DYNAMIC_ARCH) picks its kernels at
 * load time from the CPU: SkylakeX (AVX-512) on this project's Xeons, Haswell (AVX2) on others,
 * Prescott (SSE3) on CPUs it does not recognise. The families round differently in the last
 * bits of sgemm, and training amplifies those bits: the README's default compare printed
 * Accordion at 1.04x on one machine and 0.86x on another. Every x86-64 CPU with AVX2 and FMA
 * (Intel since 2013, AMD since 2015) runs the Haswell kernels, so bellows uses them there. */
#ifndef BELLOWS_BLAS_CPU_H
#define BELLOWS_BLAS_CPU_H

/* The kernel family bellows pins. */
#define BLAS_CPU_PINNED "Haswell"

/* If OPENBLAS_CORETYPE is unset and the CPU has AVX2 and FMA, sets it to BLAS_CPU_PINNED and,
 * unless OpenBLAS already uses that family, re-executes the program (/proc/self/exe) with the
 * same argv so that the choice takes effect (OpenBLAS reads the variable only when it loads).
 * The user's own OPENBLAS_CORETYPE is always respected. A CPU without AVX2 keeps the kernels
 * OpenBLAS chose, with a warning on stderr; blas_cpu_kernel says so in every summary.json. */
void blas_cpu_fix_kernels(char **argv);

/* The kernel family OpenBLAS is using, e.g. "Haswell". */
const char *blas_cpu_core(void);

/* OpenBLAS's thread count. It changes the last bits of sgemm too (measured: --threads 1 and 2
 * give different losses from the third step), which is why simulated runs use 1 thread unless
 * --threads says otherwise, and summary.json records it. */
int blas_cpu_threads(void);

/* What summary.json records: "Haswell" when the pinned family is in use, otherwise the family
 * and why it is not the pinned one, e.g. "SkylakeX (OPENBLAS_CORETYPE=SkylakeX set by the
 * user)" or "Sandybridge (no AVX2: not pinned)". */
const char *blas_cpu_kernel(void);

#endif
