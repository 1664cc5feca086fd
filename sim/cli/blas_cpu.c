/* blas_cpu.c: see blas_cpu.h. */
#include "blas_cpu.h"

#include <cblas.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

const char *blas_cpu_core(void)
{
    const char *core = openblas_get_corename();
    return core ? core : "unknown";
}

void blas_cpu_fix_kernels(char **argv)
{
    if (getenv("OPENBLAS_CORETYPE")) return;
    if (strcasecmp(blas_cpu_core(), "prescott") != 0) return;
    __builtin_cpu_init();
    const char *pick = __builtin_cpu_supports("avx512f") ? "SkylakeX"
                       : __builtin_cpu_supports("avx2")  ? "Haswell"
                                                         : NULL;
    if (!pick) return;
    setenv("OPENBLAS_CORETYPE", pick, 1);
    execv("/proc/self/exe", argv);
    /* exec failed: carry on with the slow kernels (the variable stays set, harmlessly) */
}
