/* comp_powersgd.c: PowerSGD, rank-r compression by one step of subspace (power) iteration with a
 * warm-started query (Vogels, Karimireddy, Jaggi, "PowerSGD: Practical Low-Rank Gradient
 * Compression for Distributed Optimization", NeurIPS 2019, Algorithm 1 and Section 3), as in
 * epfml/powersgd gradient_reducers.py RankKReducer (reuse_query=True). For each matrix M (n x m,
 * after error feedback M = g + e) at rank r = min(level, n, m):
 *   P = M Q; allreduce-sum every P in one buffer; orthogonalise P's columns (Gram-Schmidt);
 *   Q = M^T P; allreduce every Q in one buffer and divide by the workers; M' = P Q^T (the
 *   decoded mean); e = M - M'; the averaged Q is the next step's query (warm start).
 * Shapes here: Q is kept transposed, Qt [r x m], and P as Pt [r x n], so that a column of either
 * is a contiguous row and changing r keeps the other columns in place.
 * rank_change=reset is the Accordion code's (uw-mad-dash/Accordion): a layer whose rank changes
 * gets a new RankKReducer (sparsify_gradient.py:120-124), whose p_memory is None, so its Q is
 * drawn afresh (powersgd_grad.py:93, 127-132) and the warm start is lost; the error-feedback
 * memory stays (zero_memory is False in every published run). There every reducer's stream
 * starts from RandomState(42) (powersgd_grad.py:19, sparsify_gradient.py:122), so a reset Q is
 * the layer's very first one again; here it is a new draw of the run's shared stream, which is
 * as independent of the gradient.
 * comm=none is the ablation of pytorch/pytorch#74148 (Haijunlv, 2022: "when i remove the
 * q_memory_dict and p_memory_dict allreduce op ... speed up ratio is 6.29"): both allreduces are
 * skipped, so each worker orthogonalises its own P, computes its own Q = M^T P and decodes its
 * own M' = P Q^T, keeping that Q as its next query; Q is not divided by the workers (it was never
 * summed: the code may still have divided it, which changes no time but scales the
 * gradient). Nothing of the matrices reaches the other workers, so this no longer trains as
 * PowerSGD (the workers' models drift apart): it prices what the two allreduces cost. */
#include "compress_impl.h"
#include "xalloc.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    float *qt;  /* [rank x m] the warm-start query, transposed */
    size_t cap; /* floats allocated in qt */
    int rank;   /* columns of qt in use; 0: never drawn */
} Query;

typedef struct {
    int reset; /* rank_change=reset: redraw Q when a layer's rank changes (Accordion's code) */
    int local; /* comm=none: no allreduce of P or Q, each worker decodes its own P Q^T */
    Query *q;  /* [n_layers] */
    float *pbuf, *qbuf; /* every layer's Pt, then every Qt, one allreduce each */
    size_t pcap, qcap;
    size_t *poff, *qoff; /* [n_layers] offsets into pbuf and qbuf this step */
    int *rank;           /* [n_layers] this step's rank */
    gsl_rng *rng;        /* the shared stream, reseeded per (layer, step) */
} PowerSgd;

static const SpecOpt OPTS[] = {
    {"ef", SPEC_INT, "1", 0, 1, NULL, "1: error feedback (e = M - P Q^T), as the paper"},
    {"rank_change", SPEC_CHOICE, "warm", 0, 0, "warm|reset",
     "when a layer's rank changes: warm keeps Q's first columns (new ones drawn N(0,1));"
     " reset redraws all of Q (Accordion's code: reset); both keep the EF memory"},
    /* no default, so that a spec without it resolves (compress_spec_resolved) as before */
    {"comm", SPEC_CHOICE, NULL, 0, 0, "allreduce|none",
     "not given or allreduce: P and Q allreduced (PowerSGD); none: both allreduces skipped,"
     " each worker decodes its own P Q^T (the ablation of pytorch#74148, to price what those"
     " two allreduces cost; no longer PowerSGD's training: the workers' gradients differ)"},
};

static int psgd_init(Compressor *c, const SpecVal *vals, BwError *err)
{
    PowerSgd *s = bw_xcalloc(1, sizeof *s, "comp_powersgd.c: s");
    if (!s) return bw_fail(err, BW_ERUNTIME, "powersgd: out of memory");
    c->state = s;
    size_t nl = (size_t)(c->n_layers ? c->n_layers : 1);
    s->reset = vals[1].choice == 1;
    s->local = vals[2].set && vals[2].choice == 1;
    s->q = bw_xcalloc(nl, sizeof *s->q, "comp_powersgd.c: s->q");
    s->poff = bw_xmalloc(nl * sizeof *s->poff, "comp_powersgd.c: s->poff");
    s->qoff = bw_xmalloc(nl * sizeof *s->qoff, "comp_powersgd.c: s->qoff");
    s->rank = bw_xmalloc(nl * sizeof *s->rank, "comp_powersgd.c: s->rank");
    s->rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!s->q || !s->poff || !s->qoff || !s->rank || !s->rng)
        return bw_fail(err, BW_ERUNTIME, "powersgd: out of memory");
    return vals[0].num != 0 ? comp_enable_memory(c, err) : BW_OK;
}

static void psgd_free(Compressor *c)
{
    PowerSgd *s = c->state;
    if (!s) return;
    if (s->q)
        for (int l = 0; l < c->n_layers; l++) free(s->q[l].qt);
    free(s->q);
    free(s->pbuf);
    free(s->qbuf);
    free(s->poff);
    free(s->qoff);
    free(s->rank);
    if (s->rng) gsl_rng_free(s->rng);
    free(s);
}

/* Grows *buf to hold n floats (only when the ranks grow: no allocation at a steady rank). */
static void reserve(float **buf, size_t *cap, size_t n)
{
    if (n <= *cap) return;
    /* in the middle of a collective: nothing sane to return */
    float *p = bw_xrealloc_n(*buf, n, sizeof(float), "powersgd's factors");
    *buf = p;
    *cap = n;
}

/* Makes the query of layer l ready for rank r. Columns to draw get N(0,1) entries from the
 * stream shared by every worker, seeded from (seed, layer, step), column after column in
 * ascending order; which columns: all of them the first time, or (rank_change=reset) when the
 * rank changed; the new ones when the rank grew; and any column that became exactly zero (a
 * zero gradient makes Q = M^T P = 0, which would otherwise stay zero for ever). */
static void prepare_query(Compressor *c, PowerSgd *s, int l, int r)
{
    Query *q = &s->q[l];
    const size_t m = (size_t)c->layers[l].cols;
    reserve(&q->qt, &q->cap, (size_t)r * m);
    int keep = q->rank == 0 || (s->reset && q->rank != r) ? 0 : (q->rank < r ? q->rank : r);
    int seeded = 0;
    for (int j = 0; j < r; j++) {
        float *col = q->qt + (size_t)j * m;
        int draw = j >= keep;
        if (!draw) {
            draw = 1;
            for (size_t i = 0; i < m && draw; i++) draw = col[i] == 0;
        }
        if (!draw) continue;
        if (!seeded) gsl_rng_set(s->rng, comp_seed(c->seed, COMP_STREAM_POWERSGD, l, c->step));
        seeded = 1;
        comp_gaussian_fill(s->rng, col, m);
    }
    q->rank = r;
}

/* Orthonormalises the r rows of pt [r x n] (the columns of P): modified Gram-Schmidt as in
 * epfml/powersgd gradient_reducers.py orthogonalize(), with a second projection pass for a
 * column that lost more than half its norm to the first (Kahan's "twice is enough", Giraud et
 * al., Numer. Math. 2005), so that P stays orthonormal to float precision even when it is
 * nearly rank-deficient (M of rank < r). Columns are divided by their bare norm, as epfml does
 * (no epsilon, which would shrink the columns of a layer whose gradients are tiny), except that
 * an exactly zero column stays zero instead of becoming NaN. Sums and the division in double. */
static void orthogonalise(float *pt, int r, size_t n)
{
    for (int i = 0; i < r; i++) {
        float *v = pt + (size_t)i * n;
        double before = 0;
        for (size_t k = 0; k < n; k++) before += (double)v[k] * v[k];
        double after = before;
        for (int pass = 0; pass < 2 && i > 0; pass++) {
            for (int j = 0; j < i; j++) {
                const float *u = pt + (size_t)j * n;
                double dot = 0;
                for (size_t k = 0; k < n; k++) dot += (double)u[k] * v[k];
                for (size_t k = 0; k < n; k++) v[k] -= (float)dot * u[k];
            }
            double prev = after;
            after = 0;
            for (size_t k = 0; k < n; k++) after += (double)v[k] * v[k];
            if (after >= 0.25 * prev) break; /* kept more than half its norm */
        }
        if (after == 0) continue;
        const double norm = sqrt(after);
        for (size_t k = 0; k < n; k++) v[k] = (float)(v[k] / norm);
    }
}

/* The rank a layer is compressed at: r = min(level, n, m). */
static int layer_rank(const LayerView *v, double level)
{
    int r = (int)level;
    if (r > v->rows) r = v->rows;
    if (r > v->cols) r = v->cols;
    return r;
}

/* P = M Q, i.e. Pt [r x n] = Qt [r x m] M^T */
static void psgd_encode_p(Compressor *c, void *arg)
{
    PowerSgd *s = c->state;
    const CompWork *wk = arg;
    for (int t = 0; t < wk->n; t++) {
        int l = wk->todo[t], r = s->rank[l], n = c->layers[l].rows, m = c->layers[l].cols;
        const float *M = comp_feedback(c, wk->grads, l);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r, n, m, 1.0f, s->q[l].qt, m, M, m,
                    0.0f, s->pbuf + s->poff[l], n);
    }
}

/* orthogonalise; Q = M^T P, i.e. Qt [r x m] = Pt M */
static void psgd_encode_q(Compressor *c, void *arg)
{
    PowerSgd *s = c->state;
    const CompWork *wk = arg;
    for (int t = 0; t < wk->n; t++) {
        int l = wk->todo[t], r = s->rank[l], n = c->layers[l].rows, m = c->layers[l].cols;
        const float *M = (c->memory ? c->memory : wk->grads) + c->layers[l].offset;
        orthogonalise(s->pbuf + s->poff[l], r, (size_t)n);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, m, n, 1.0f, s->pbuf + s->poff[l],
                    n, M, m, 0.0f, s->qbuf + s->qoff[l], m);
    }
}

/* Q /= workers (not with comm=none: a Q never summed); M' = P Q^T = Pt^T Qt [n x m] into grads;
 * e = M - M'; keep Q for the next step */
static void psgd_decode(Compressor *c, void *arg)
{
    PowerSgd *s = c->state;
    const CompWork *wk = arg;
    const float w = (float)c->world;
    for (size_t i = 0; i < wk->size && !s->local; i++) s->qbuf[i] /= w; /* every Q */
    for (int t = 0; t < wk->n; t++) {
        int l = wk->todo[t], r = s->rank[l], n = c->layers[l].rows, m = c->layers[l].cols;
        size_t off = c->layers[l].offset, len = (size_t)n * (size_t)m;
        float *g = wk->grads;
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, m, r, 1.0f, s->pbuf + s->poff[l], n,
                    s->qbuf + s->qoff[l], m, 0.0f, g + off, m);
        if (c->memory)
            for (size_t i = 0; i < len; i++) c->memory[off + i] -= g[off + i];
        memcpy(s->q[l].qt, s->qbuf + s->qoff[l], (size_t)r * (size_t)m * sizeof(float));
    }
}

static double psgd_reduce(Compressor *c, Comm *comm, float *grads, const int *todo, int nt,
                          const double *levels)
{
    PowerSgd *s = c->state;
    size_t ptot = 0, qtot = 0;
    for (int t = 0; t < nt; t++) {
        int l = todo[t];
        const LayerView *v = &c->layers[l];
        int r = layer_rank(v, levels[l]);
        s->rank[l] = r;
        s->poff[l] = ptot;
        s->qoff[l] = qtot;
        ptot += (size_t)r * (size_t)v->rows;
        qtot += (size_t)r * (size_t)v->cols;
        prepare_query(c, s, l, r);
    }
    reserve(&s->pbuf, &s->pcap, ptot);
    reserve(&s->qbuf, &s->qcap, qtot);
    CompWork wk = {grads, todo, nt, levels, qtot, NULL};
    comp_parallel(c, psgd_encode_p, &wk);
    if (!s->local) comp_allreduce(c, comm, s->pbuf, ptot);
    comp_parallel(c, psgd_encode_q, &wk);
    if (!s->local) comp_allreduce(c, comm, s->qbuf, qtot);
    comp_parallel(c, psgd_decode, &wk);
    return s->local ? 0 : (double)(ptot + qtot) * sizeof(float);
}

/* Two allreduces: every layer's P (r x n floats), then every Q (r x m); none with comm=none. */
static int psgd_plan(const Compressor *c, const LayerView *layers, const int *todo, int nt,
                     const double *levels, CompressMsg *msgs)
{
    const PowerSgd *s = c->state;
    if (s->local) return 0;
    size_t ptot = 0, qtot = 0;
    for (int t = 0; t < nt; t++) {
        const LayerView *v = &layers[todo[t]];
        size_t r = (size_t)layer_rank(v, levels[todo[t]]);
        ptot += r * (size_t)v->rows;
        qtot += r * (size_t)v->cols;
    }
    msgs[0] = (CompressMsg){COMPRESS_ALLREDUCE_F32, ptot};
    msgs[1] = (CompressMsg){COMPRESS_ALLREDUCE_F32, qtot};
    return 2;
}

/* The stages of psgd_reduce on M [n x m] at rank r, as epfml/powersgd RankKReducer.reduce runs
 * them (a GEMM of [a x b] by [b x c] is 2 a b c flops and reads its operands and writes its
 * result once: r is small, so M streams through once while P or Q stay in cache):
 *   error feedback M = g + e (ef=1):      n m flops, 12 n m bytes (comp_cost_feedback)
 *   P = M Q:                            2 n m r flops, 4 (n m + m r + n r) bytes
 *   orthogonalise P (Gram-Schmidt, as epfml's orthogonalize(): per column a norm (2 n) and a
 *     division (n), then a dot (2 n) and a subtraction (2 n) with each later column):
 *                                       2 n r^2 + n r flops; P [n x r] stays in cache, so
 *                                       8 n r bytes (read and write it once); the rare second
 *                                       projection pass ("twice is enough") is not counted
 *   Q = M^T P:                          2 n m r flops, 4 (n m + n r + m r) bytes
 *   Q /= workers (after its allreduce):     m r flops, 8 m r bytes (not with comm=none)
 *   decode M' = P Q^T into grads:       2 n m r flops, 4 (n r + m r + n m) bytes
 *   new error e = M - M' (ef=1):          n m flops, 12 n m bytes
 * In all, with ef=1: 6 n m r + 2 n m + 2 n r^2 + n r + m r flops, 36 n m + 20 (n + m) r bytes.
 * A cost profile whose PowerSGD hook orthogonalises the query (costs.h CostHook) adds Q's
 * Gram-Schmidt before P = M Q: 2 m r^2 + m r flops, 8 m r bytes, r columns of m. A hook that runs
 * torch.linalg.qr above a rank (qr_above_rank) is priced one "qr" call a factor there instead of
 * r Gram-Schmidt columns; the flops and bytes the roofline counts stay Gram-Schmidt's.
 * With comm=none there are no collectives to run between: every stage is in phase 0. */
/* Orthogonalising an [rows x r] factor as the profile's hook does: Gram-Schmidt column by column,
 * or, above the hook's qr_above_rank, one torch.linalg.qr call (PyTorch's _orthogonalize since
 * pytorch/pytorch PR #72043; costs.h CostHook). */
static void price_orth(const Compressor *c, CompressCost *cost, int phase, const CostHook *hook,
                       double rows, double r)
{
    if (hook && hook->qr_above_rank > 0 && r > hook->qr_above_rank)
        comp_price(c, cost, phase, COST_OP_QR, rows, 1);
    else
        comp_price(c, cost, phase, COST_OP_ORTHOGONALISE, rows, r); /* column by column */
}

static void psgd_cost(const Compressor *c, const LayerView *v, double level, CompressCost *cost)
{
    const double n = v->rows, m = v->cols, r = layer_rank(v, level);
    const int local = ((const PowerSgd *)c->state)->local;
    const int after_p = local ? 0 : 1, after_q = local ? 0 : 2; /* the phases */
    comp_cost_feedback(c, layer_size(v), cost);
    const CostHook *hook = costs_hook(cost->prof, "powersgd");
    if (hook && hook->orthogonalises_query) {
        /* PyTorch's powerSGD_hook with warm start orthogonalises the kept Q before P = M Q,
         * every step (`for q in qs: _orthogonalize(q)`; torch/distributed/algorithms/
         * ddp_comm_hooks/powerSGD_hook.py, PyTorch 1.8 to 2.x): Q [m x r] */
        comp_cost_add(cost, 2 * m * r * r + m * r, 8 * m * r);
        price_orth(c, cost, 0, hook, m, r);
    }
    comp_cost_add(cost, 2 * n * m * r, 4 * (n * m + m * r + n * r)); /* P = M Q */
    comp_price(c, cost, 0, COST_OP_MATMUL, n * m, 1);
    comp_cost_add(cost, 2 * n * r * r + n * r,
                  8 * n * r); /* orthogonalise P, after its allreduce */
    price_orth(c, cost, after_p, hook, n, r);
    comp_cost_add(cost, 2 * n * m * r, 4 * (n * m + n * r + m * r)); /* Q = M^T P */
    comp_price(c, cost, after_p, COST_OP_MATMUL, n * m, 1);
    if (!local) {
        comp_cost_add(cost, m * r, 8 * m * r); /* Q /= workers, after its allreduce */
        comp_price(c, cost, after_q, COST_OP_ELEMENTWISE, 8 * m * r, 1);
    }
    comp_cost_add(cost, 2 * n * m * r, 4 * (n * r + m * r + n * m)); /* M' = P Q^T */
    comp_price(c, cost, after_q, COST_OP_MATMUL, n * m, 1);
    if (c->memory) {
        comp_cost_add(cost, n * m, 12 * n * m); /* e = M - M' */
        comp_price(c, cost, after_q, COST_OP_ELEMENTWISE, 12 * n * m, 1);
    }
}

static const char *psgd_note(const SpecVal *vals)
{
    return vals[2].set && vals[2].choice == 1
               ? "comm=none skips PowerSGD's P and Q allreduces (pytorch#74148's ablation): each "
                 "worker decodes only its own low-rank gradient, so what trains is not PowerSGD "
                 "(the shared model takes the first worker's); the times price the step without "
                 "those two allreduces"
               : NULL;
}

const CompressorOps comp_powersgd_ops = {
    .name = "powersgd",
    .help = "rank-r low-rank approximation by one warm-started power iteration, error feedback",
    .source = "Vogels, Karimireddy, Jaggi, NeurIPS 2019, Algorithm 1; epfml/powersgd "
              "gradient_reducers.py RankKReducer; Accordion (uw-mad-dash/Accordion) for "
              "rank_change=reset",
    .wire = "two allreduces (every P, then every Q): r (n + m) fp32 per n x m matrix, "
            "r = min(rank, n, m); none with comm=none",
    .level_name = "rank",
    .level_default = 2,
    .level_min = 1,
    .level_max = 4096,
    .level_integer = 1,
    .opts = OPTS,
    .n_opts = SPEC_N(OPTS),
    .init = psgd_init,
    .reduce = psgd_reduce,
    .plan = psgd_plan,
    .cost = psgd_cost,
    .cost_ops = COST_OP_BIT(COST_OP_ELEMENTWISE) | COST_OP_BIT(COST_OP_MATMUL) |
                COST_OP_BIT(COST_OP_ORTHOGONALISE),
    .free_state = psgd_free,
    .note = psgd_note,
};
