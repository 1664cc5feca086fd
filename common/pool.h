/* pool.h: a small pool of POSIX threads for the simulation's real work: the workers' gradients,
 * the shared replica's update and the evaluations (sim/driver), the compressors' math
 * (sim/compress) and the collectives' in-memory sums (sim/net), in parallel.
 * A job is a caller-owned PoolJob (no allocation per job): pool_submit queues it, pool_wait
 * returns once it has run. The thread that waits helps: while its job is not done it runs
 * queued jobs itself, so a pool of N computes on N threads with N-1 of its own. Jobs run in
 * any order and on any thread: each must touch only its own data, read-only shared data, or
 * the scratch of the thread it runs on: a job is told its thread's index in [0, n), 0 for the
 * caller of pool_wait (one caller at a time: the simulation's actors wait in turn), 1 .. n-1
 * for the pool's own threads, so a thread's scratch serves every job it runs, one at a time. */
#ifndef BELLOWS_POOL_H
#define BELLOWS_POOL_H

typedef struct PoolJob {
    void (*fn)(void *arg, int thread);
    void *arg;
    struct PoolJob *next; /* the queue's link */
    int state;            /* the pool's: idle, queued, running, done */
} PoolJob;

typedef struct Pool Pool;

/* A pool that computes on n threads (n >= 2): n-1 threads of its own and the waiting caller.
 * Returns NULL if a thread could not be started (nothing is left running). */
Pool *pool_create(int n);
/* Queues job (idle: never submitted, or waited for) to run fn(arg, thread). */
void pool_submit(Pool *p, PoolJob *job, void (*fn)(void *arg, int thread), void *arg);
/* Returns once job has run (everything it wrote is visible to the caller); the job is idle
 * again. Runs other queued jobs meanwhile. */
void pool_wait(Pool *p, PoolJob *job);
/* Runs fn(arg, item, thread) for every item in [0, n), spread over the pool's threads and the
 * caller (thread 0), and returns once all have run. Items must be independent (each writes only
 * its own part of the output), so the result does not depend on which thread ran which item.
 * p NULL: all items in order on the caller. One caller at a time, as pool_wait. */
void pool_for(Pool *p, int n, void (*fn)(void *arg, int item, int thread), void *arg);
/* The threads that compute: the pool's own and the caller (1 for NULL). */
int pool_threads(const Pool *p);
/* Stops the threads once the queue is empty and frees the pool; NULL is a no-op. */
void pool_free(Pool *p);

#endif
