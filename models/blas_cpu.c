/* blas_cpu.c: see blas_cpu.h. */
#include "blas_cpu.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

const char *blas_cpu_core(void)
{
    const char *core = openblas_get_corename();
    return core ? core : "unknown";
}

int blas_cpu_threads(void)
{
    return openblas_get_num_threads();
}

static int cpu_can_pin(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

void blas_cpu_fix_kernels(char **argv)
{
    if (getenv("OPENBLAS_CORETYPE")) return;
    if (!cpu_can_pin()) {
        fprintf(stderr,
                "bellows: warning: this CPU has no AVX2; OpenBLAS uses its %s kernels, whose "
                "results differ in the last bits from the %s kernels of AVX2 machines\n",
                blas_cpu_core(), BLAS_CPU_PINNED);
        return;
    }
    setenv("OPENBLAS_CORETYPE", BLAS_CPU_PINNED, 1);
    if (strcasecmp(blas_cpu_core(), BLAS_CPU_PINNED) == 0) return;
    execv("/proc/self/exe", argv);
    /* exec failed: carry on with the kernels OpenBLAS chose; blas_cpu_kernel says so */
    unsetenv("OPENBLAS_CORETYPE");
}

const char *blas_cpu_kernel(void)
{
    static char text[160];
    const char *core = blas_cpu_core();
    const char *env = getenv("OPENBLAS_CORETYPE");
    if (strcasecmp(core, BLAS_CPU_PINNED) == 0)
        snprintf(text, sizeof text, "%s", core);
    else if (env)
        snprintf(text, sizeof text, "%s (OPENBLAS_CORETYPE=%.40s set by the user)", core, env);
    else if (!cpu_can_pin())
        snprintf(text, sizeof text, "%s (no AVX2: not pinned)", core);
    else
        snprintf(text, sizeof text, "%s (re-executing with %s failed)", core, BLAS_CPU_PINNED);
    return text;
}
