/* test_pool.c: the thread pool (common/pool.c): jobs run once each, pool_wait helps with the
 * queue, and pool_for runs every item exactly once, on the pool's threads and the caller's, with
 * helpers it no longer needs taken off the queue; NULL runs pool_for in order on the caller. */
#include "testutil.h"

#include <stdatomic.h>
#include <time.h>

#include "pool.h"

typedef struct {
    atomic_int runs[1000];
    atomic_int threads_seen[4];
    int n_threads;
} Counts;

static void count_item(void *arg, int item, int thread)
{
    Counts *c = arg;
    assert_true(thread >= 0 && thread < c->n_threads);
    atomic_fetch_add(&c->runs[item], 1);
    atomic_fetch_add(&c->threads_seen[thread], 1);
}

static void check_once(Counts *c, int n)
{
    for (int i = 0; i < n; i++) assert_int_equal(atomic_load(&c->runs[i]), 1);
    for (int i = n; i < 1000; i++) assert_int_equal(atomic_load(&c->runs[i]), 0);
}

static void test_pool_for_runs_every_item_once(void **state)
{
    (void)state;
    for (int threads = 1; threads <= 3; threads++) {
        Pool *p = threads > 1 ? pool_create(threads) : NULL;
        assert_true(threads == 1 || p != NULL);
        assert_int_equal(pool_threads(p), threads);
        const int sizes[] = {0, 1, 2, 3, 7, 1000};
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            static Counts c;
            memset(&c, 0, sizeof c);
            c.n_threads = threads;
            pool_for(p, sizes[k], count_item, &c);
            check_once(&c, sizes[k]);
            if (!p) /* in order, on the caller */
                assert_int_equal(atomic_load(&c.threads_seen[0]), sizes[k]);
        }
        pool_free(p);
    }
}

/* A slow job queued ahead: pool_for still returns with every item done, and the job too. */
typedef struct {
    atomic_int done;
} Slow;

static void slow_job(void *arg, int thread)
{
    (void)thread;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    atomic_store(&((Slow *)arg)->done, 1);
}

static void test_pool_for_behind_a_queued_job(void **state)
{
    (void)state;
    Pool *p = pool_create(2);
    assert_non_null(p);
    for (int round = 0; round < 20; round++) {
        PoolJob jobs[2] = {{0}};
        Slow s[2] = {{0}};
        pool_submit(p, &jobs[0], slow_job, &s[0]);
        pool_submit(p, &jobs[1], slow_job, &s[1]); /* the pool's thread is busy: one stays queued */
        static Counts c;
        memset(&c, 0, sizeof c);
        c.n_threads = 2;
        pool_for(p, 50, count_item, &c);
        check_once(&c, 50);
        pool_wait(p, &jobs[0]);
        pool_wait(p, &jobs[1]);
        assert_int_equal(atomic_load(&s[0].done) + atomic_load(&s[1].done), 2);
    }
    pool_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_for_runs_every_item_once),
        cmocka_unit_test(test_pool_for_behind_a_queued_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
