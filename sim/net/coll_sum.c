/* coll_sum.c: the allreduces' sums done in memory, once for all ranks, block by block: each
 * block of SUM_BLOCK_BYTES is summed in L1 over the ranks' buffers and stored to every rank's
 * out (its buffer, or one out shared by all, once), so every buffer is read once and written at
 * most once, with no whole-size accumulator. Each element sees the additions its algorithm
 * makes, in their order, whichever block or thread it falls in:
 *   analytic: rank 0's value, then + rank 1's, ..., + rank P-1's (rank order, so the sum does
 *     not depend on the ranks' arrival order);
 *   ring: the order in which a ring allreduce adds it. In its reduce-scatter, at step s rank i
 *     sends chunk (i - s) mod P to rank i + 1, which adds it to its own copy of that chunk
 *     (coll_msg.c coll_ring_reduce_scatter); so chunk j starts as rank j's, and ranks j + 1, j + 2,
 * ..., j + P - 1 (mod P, around c->ranks) each add theirs in turn. Addition commutes, so the sum of
 * a chunk here, added in that order, has the bits the messages would have made. The blocks are
 * spread over the communicator's pool when it has one. */
#include "coll_impl.h"

#include <string.h>

#include "pool.h"

enum { SUM_BLOCK_BYTES = 8192, SUM_ITEM_BYTES = 16 * SUM_BLOCK_BYTES };

/* The end of ring chunk j of n elements over P ranks (coll_impl.h's coll_chunk(0, n, P, j, ..)). */
static size_t ring_chunk_end(size_t n, int P, int j)
{
    return n * (size_t)(j + 1) / (size_t)P;
}

/* Elements [lo, lo + cnt) summed over the ranks c->ranks[(first + k) mod P], k = 0 .. P-1, and
 * stored to every rank's out (once for a run of ranks that share one). */
static void sum_block(const SumJob *s, size_t lo, size_t cnt, int first)
{
    const Comm *c = s->c;
    const int P = c->P;
    _Alignas(64) unsigned char blk[SUM_BLOCK_BYTES];
    const size_t es = dt_size(s->dt), off = lo * es;
    memcpy(blk, (const unsigned char *)c->bufs[c->ranks[first]] + off, cnt * es);
    for (int k = 1; k < P; k++) {
        int r = c->ranks[(first + k) % P];
        dt_add(s->dt, blk, (const unsigned char *)c->bufs[r] + off, cnt);
    }
    if (s->mean) {
        float *f = (float *)(void *)blk;
        const float w = (float)P;
        for (size_t i = 0; i < cnt; i++) f[i] = (f[i] + 0.0f) / w;
    }
    for (int r = 0; r < P; r++)
        if (r == 0 || c->outs[r] != c->outs[r - 1])
            memcpy((unsigned char *)c->outs[r] + off, blk, cnt * es);
}

/* Item i: elements [i * item, (i + 1) * item), block by block; a ring's blocks stop at its
 * chunks' ends, each chunk's additions starting from its own rank. */
static void sum_item(void *arg, int item, int thread)
{
    (void)thread;
    const SumJob *s = arg;
    const size_t es = dt_size(s->dt), per = SUM_BLOCK_BYTES / es, item_n = SUM_ITEM_BYTES / es;
    const size_t start = (size_t)item * item_n;
    const size_t end = s->n - start < item_n ? s->n : start + item_n;
    int j = 0; /* the ring chunk that holds lo */
    for (size_t lo = start; lo < end;) {
        size_t hi = end - lo < per ? end : lo + per;
        if (s->ring) {
            while (ring_chunk_end(s->n, s->c->P, j) <= lo) j++;
            size_t chunk_end = ring_chunk_end(s->n, s->c->P, j);
            if (hi > chunk_end) hi = chunk_end;
        }
        sum_block(s, lo, hi - lo, s->ring ? j : 0);
        lo = hi;
    }
}

static int sum_items(const SumJob *s)
{
    const size_t item_n = SUM_ITEM_BYTES / dt_size(s->dt);
    return (int)((s->n + item_n - 1) / item_n);
}

void coll_sum_into_all(Comm *c, size_t n, Dtype dt, int mean, int ring)
{
    SumJob s = {c, n, dt, mean, ring};
    pool_for(c->pool, sum_items(&s), sum_item, &s);
}

void coll_sum_job(void *arg, int thread)
{
    for (int i = 0, n = sum_items(arg); i < n; i++) sum_item(arg, i, thread);
}
