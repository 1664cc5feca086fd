/* splitmix.h: splitmix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators",
 * OOPSLA 2014; Vigna's reference splitmix64.c): one step of the generator, used to derive
 * well-mixed, independent seeds for GSL streams from a run's seed and a few small numbers. */
#ifndef BELLOWS_SPLITMIX_H
#define BELLOWS_SPLITMIX_H

#include <stdint.h>

/* The state advanced by the golden-ratio increment, then the output finaliser. */
static inline uint64_t splitmix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

#endif
