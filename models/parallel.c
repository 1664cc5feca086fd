/* parallel.c: see parallel.h. Threads are started and joined at each call (about 20 us each
 * here): the cnn calls it twice per step of several milliseconds. */
#include "parallel.h"

#include <pthread.h>

typedef struct {
    ParallelFn fn;
    void *ctx;
    int thread;
} ParallelArg;

static void *parallel_main(void *p)
{
    ParallelArg *a = p;
    a->fn(a->ctx, a->thread);
    return NULL;
}

int parallel_run(int threads, ParallelFn fn, void *ctx)
{
    if (threads > PARALLEL_MAX_THREADS) threads = PARALLEL_MAX_THREADS;
    pthread_t tid[PARALLEL_MAX_THREADS];
    ParallelArg args[PARALLEL_MAX_THREADS];
    int started = 1, rc = 0;
    for (; started < threads; started++) {
        args[started] = (ParallelArg){.fn = fn, .ctx = ctx, .thread = started};
        if (pthread_create(&tid[started], NULL, parallel_main, &args[started]) != 0) {
            rc = -1;
            break;
        }
    }
    fn(ctx, 0);
    for (int t = 1; t < started; t++) pthread_join(tid[t], NULL);
    return rc;
}
