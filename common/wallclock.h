/* wallclock.h: wall-clock seconds on the host, for progress lines and benchmarks. Never used for
 * simulated time, which comes from the network model, profiles and flop counts only. */
#ifndef BELLOWS_WALLCLOCK_H
#define BELLOWS_WALLCLOCK_H

#include <time.h>

/* Seconds on a monotonic clock (CLOCK_MONOTONIC): differences are wall seconds. */
static inline double wallclock_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
