/* parallel.h: runs one function on several threads at once (the caller's and threads started
 * for the call), for a model that splits its batch itself. The function gets its thread's
 * index and shares out the work itself (typically through an atomic counter), so that the
 * result does not depend on how many threads ran it. */
#ifndef BELLOWS_PARALLEL_H
#define BELLOWS_PARALLEL_H

typedef void (*ParallelFn)(void *ctx, int thread);

/* Calls fn(ctx, t) for t = 0 .. threads - 1 concurrently (t = 0 on the caller's thread) and
 * returns when all have returned. If a thread cannot be started, the calls that could not be
 * made are skipped and the return is -1 (work shared through a counter is then done by the
 * others); otherwise 0. At most PARALLEL_MAX_THREADS threads. */
enum { PARALLEL_MAX_THREADS = 64 };
int parallel_run(int threads, ParallelFn fn, void *ctx);

#endif
