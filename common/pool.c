/* pool.c: see pool.h. One mutex guards the queue and every job's state; a job's results are
 * published by the mutex (written before its state turns done under the lock, read after
 * pool_wait saw it done under the lock). */
#include "pool.h"
#include "xalloc.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

enum { JOB_IDLE, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

struct Pool {
    pthread_mutex_t mu;
    pthread_cond_t work; /* a job was queued, or the pool stops */
    pthread_cond_t done; /* a job finished */
    PoolJob *head, *tail;
    int stop;
    int n_threads;    /* started */
    int next_index;   /* the index the next thread to start takes (1 .. n-1) */
    PoolJob *helpers; /* [n_threads]: pool_for's jobs, one per thread of the pool */
    pthread_t threads[];
};

/* Takes the queue's first job; called with the lock held and a non-empty queue. */
static PoolJob *pop(Pool *p)
{
    PoolJob *j = p->head;
    p->head = j->next;
    if (!p->head) p->tail = NULL;
    j->next = NULL;
    j->state = JOB_RUNNING;
    return j;
}

/* Runs j on thread `thread` without the lock; returns with it held and j done. */
static void run_unlocked(Pool *p, PoolJob *j, int thread)
{
    pthread_mutex_unlock(&p->mu);
    j->fn(j->arg, thread);
    pthread_mutex_lock(&p->mu);
    j->state = JOB_DONE;
    pthread_cond_broadcast(&p->done);
}

static void *pool_thread(void *arg)
{
    Pool *p = arg;
    pthread_mutex_lock(&p->mu);
    const int index = ++p->next_index;
    for (;;) {
        while (!p->head && !p->stop) pthread_cond_wait(&p->work, &p->mu);
        if (!p->head) break; /* stopping, and nothing left */
        run_unlocked(p, pop(p), index);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

Pool *pool_create(int n)
{
    assert(n >= 2);
    Pool *p = bw_xcalloc(1, sizeof *p + sizeof(pthread_t) * (size_t)(n - 1), "pool.c: p");
    if (!p) return NULL;
    p->helpers = bw_xcalloc((size_t)(n - 1), sizeof *p->helpers, "pool.c: p->helpers");
    if (!p->helpers) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    for (int i = 0; i < n - 1; i++) {
        if (pthread_create(&p->threads[i], NULL, pool_thread, p) != 0) {
            pool_free(p);
            return NULL;
        }
        p->n_threads++;
    }
    return p;
}

void pool_submit(Pool *p, PoolJob *job, void (*fn)(void *arg, int thread), void *arg)
{
    pthread_mutex_lock(&p->mu);
    assert(job->state == JOB_IDLE);
    job->fn = fn;
    job->arg = arg;
    job->next = NULL;
    job->state = JOB_QUEUED;
    if (p->tail)
        p->tail->next = job;
    else
        p->head = job;
    p->tail = job;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
}

void pool_wait(Pool *p, PoolJob *job)
{
    pthread_mutex_lock(&p->mu);
    assert(job->state != JOB_IDLE);
    while (job->state != JOB_DONE) {
        if (p->head) /* help rather than sleep (the queue is in submission order) */
            run_unlocked(p, pop(p), 0);
        else
            pthread_cond_wait(&p->done, &p->mu);
    }
    job->state = JOB_IDLE;
    pthread_mutex_unlock(&p->mu);
}

/* One pool_for: its items are taken in turn by whoever runs the loop. */
typedef struct {
    void (*fn)(void *arg, int item, int thread);
    void *arg;
    int n;
    atomic_int next;
} ForLoop;

static void for_loop(void *arg, int thread)
{
    ForLoop *f = arg;
    for (int i; (i = atomic_fetch_add(&f->next, 1)) < f->n;) f->fn(f->arg, i, thread);
}

/* Waits for a helper of pool_for; one still queued has nothing left to do (the caller took
 * every item), so it leaves the queue instead of waiting behind other jobs. */
static void helper_finish(Pool *p, PoolJob *job)
{
    pthread_mutex_lock(&p->mu);
    if (job->state == JOB_QUEUED) {
        PoolJob **at = &p->head, *prev = NULL;
        while (*at != job) prev = *at, at = &(*at)->next;
        *at = job->next;
        if (p->tail == job) p->tail = prev;
        job->next = NULL;
        job->state = JOB_IDLE;
        pthread_mutex_unlock(&p->mu);
        return;
    }
    pthread_mutex_unlock(&p->mu);
    pool_wait(p, job);
}

void pool_for(Pool *p, int n, void (*fn)(void *arg, int item, int thread), void *arg)
{
    ForLoop f = {fn, arg, n, 0};
    int helpers = p ? p->n_threads : 0;
    if (helpers > n - 1) helpers = n - 1;
    for (int h = 0; h < helpers; h++) pool_submit(p, &p->helpers[h], for_loop, &f);
    for_loop(&f, 0);
    for (int h = 0; h < helpers; h++) helper_finish(p, &p->helpers[h]);
}

int pool_threads(const Pool *p)
{
    return p ? p->n_threads + 1 : 1;
}

void pool_free(Pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_threads; i++) pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    free(p->helpers);
    free(p);
}
