/* coll_hier_steps.c: the halving-doubling and tree allreduces' closed forms on a hierarchical
 * cluster of several nodes, or a fat-tree of several leaves (CollShape.q > 0), step by step.
 * Both algorithms' one-rate forms are /work/shared/REFERENCES.md's "Collective cost" (Thakur,
 * Rabenseifner, Gropp, "Optimization of Collective Communication Operations in MPICH", IJHPCA
 * 19(1), 2005): 2 log2(p) a + 2 (p-1)/p n b for recursive halving-doubling and 2 log2(p) (a + n
 * b) for a binomial tree's reduce and broadcast (bellows' tree is that binomial tree, coll_tree.c
 * and coll_msg.c coll_tree_broadcast, not NCCL's double binary tree); each is a sum over steps of
 * a + x b. Here a step's a and b are those of the pairs that talk in it, as the transfer level
 * sends them (coll_halving_doubling.c, coll_tree.c): a pair of GPUs in one node talks over their
 * intra links (a_local + x b_local), a pair in two nodes over the route nvl, nic, nic, nvl (one
 * NIC a node, or --nics-per-node) or nic, nic (--nic-per-gpu) (cluster.c hierarchical_xml),
 * whose NIC each direction is shared by the flows that cross it at that step: a + x max(f b_nic,
 * b_local) for f such flows (SimGrid's CM02 model, --network-model exact, shares a link max-min
 * fairly). On a fat-tree a leaf is such a node (g = q = its GPUs, ranks filling the leaves in
 * order, cluster.c fat_tree_xml): a pair in one leaf talks over its two host links (a_local = 2
 * latency, b_local = a host link's), a pair across over nic, up, up, nic (a = 4 latency), the
 * leaf's uplink each way in the NIC's place (b_nic = oversubscription / (leaf x B)), never
 * faster than the host links. A step ends with its slowest pair, and the next one starts then:
 * the sum of the steps' maxima. It equals the transfer level when every pair of a step ends
 * together (tests/test_coll_time.c: nodes of a power of two GPUs, a power of two of them for
 * halving-doubling, and the mixed layouts tested there; leaves of 4 GPUs, 16 of them, and 12
 * for halving-doubling, 18 for the tree); elsewhere (an odd number of GPUs a node, leaves of 6,
 * halving-doubling folding ranks in on 10, 18 or 24 GPUs in leaves of 4, 20 or 48 in leaves of
 * 8) a rank whose step ended early may run ahead, and the sum is an upper bound (measured on
 * fat-trees: up to 11% over the transfer level for halving-doubling, 0.9% for the tree:
 * docs/guide/clusters.md). Such an irregular layout's steps are enumerated pair by pair once, in
 * O(p log p), into the communicator's table (CollStepTable), from which each call is priced in
 * O(log p), at any number of priced GPUs (--price-workers up to 1,048,576: about 0.1 s once). */
#include "coll_impl.h"

#include <assert.h>

typedef enum { HD_FOLD_IN, HD_CORE, HD_FOLD_OUT, TREE_UP, TREE_DOWN } StepKind;

/* One step's messages among the p ranks (halving-doubling: the p2 = 2^floor(log2 p) ranks of its
 * core, rem = p - p2 folded in; d the distance in the core's numbering; tree: the level's mask). */
typedef struct {
    StepKind kind;
    int p, d, rem;
} Step;

static int is_pow2(int x)
{
    return x > 0 && (x & (x - 1)) == 0;
}

/* halving-doubling's numbering of its core (coll_halving_doubling.c): rank of core index i */
static int hd_rank(const Step *st, int i)
{
    return i < st->rem ? 2 * i + 1 : i + st->rem;
}

static int hd_core(const Step *st, int r)
{
    if (r < 2 * st->rem) return r % 2 ? r / 2 : -1;
    return r - st->rem;
}

/* The rank r sends to at this step, or -1. */
static int step_to(const Step *st, int r)
{
    const int m = st->d;
    switch (st->kind) {
    case HD_FOLD_IN:
        return r < 2 * st->rem && r % 2 == 0 ? r + 1 : -1;
    case HD_FOLD_OUT:
        return r < 2 * st->rem && r % 2 == 1 ? r - 1 : -1;
    case HD_CORE: {
        const int i = hd_core(st, r);
        return i < 0 ? -1 : hd_rank(st, i ^ m);
    }
    case TREE_UP:
        return r % (2 * m) == m ? r - m : -1;
    case TREE_DOWN:
        return r % (2 * m) == 0 && r + m < st->p ? r + m : -1;
    }
    return -1;
}

/* The rank r receives from at this step, or -1. */
static int step_from(const Step *st, int r)
{
    const int m = st->d;
    switch (st->kind) {
    case HD_FOLD_IN:
        return r < 2 * st->rem && r % 2 == 1 ? r - 1 : -1;
    case HD_FOLD_OUT:
        return r < 2 * st->rem && r % 2 == 0 ? r + 1 : -1;
    case HD_CORE:
        return step_to(st, r); /* pairs exchange */
    case TREE_UP:
        return r % (2 * m) == 0 && r + m < st->p ? r + m : -1;
    case TREE_DOWN:
        return r % (2 * m) == m ? r - m : -1;
    }
    return -1;
}

/* Flows through NIC x at this step: out of it (out) or into it, those of its GPUs' messages
 * that cross nodes. */
static int nic_flows(const CollShape *s, const Step *st, int x, int out)
{
    int f = 0;
    for (int r = x * s->q; r < (x + 1) * s->q && r < st->p; r++) {
        const int peer = out ? step_to(st, r) : step_from(st, r);
        if (peer >= 0 && peer / s->g != r / s->g) f++;
    }
    return f;
}

static double cross_b(const CollShape *s, int flows)
{
    const double b = flows * s->b_nic;
    return s->q > 1 && s->b_local > b ? s->b_local : b; /* the route reaches the NIC over nvl */
}

/* A step's pairs, whatever the bytes: whether one stays inside a node, and the most flows a
 * NIC carries either way. A pair across nodes is slowest where its NIC, out of the sender's node
 * or into the receiver's, carries the most flows, and every NIC with a flow carries one of a
 * pair across: the most flows any NIC carries prices the step's slowest such pair. O(p). */
static void step_pairs(const CollShape *s, const Step *st, CollStepTable *t)
{
    int intra = 0, most = 0;
    for (int r = 0; r < st->p; r++) {
        const int to = step_to(st, r);
        if (to >= 0 && to / s->g == r / s->g) intra = 1;
    }
    for (int nic = 0; nic * s->q < st->p; nic++) {
        const int fo = nic_flows(s, st, nic, 1), fi = nic_flows(s, st, nic, 0);
        if (fo > most) most = fo;
        if (fi > most) most = fi;
    }
    assert(t->n < COLL_STEPS_MAX);
    t->intra[t->n] = (unsigned char)intra;
    t->most[t->n++] = most;
}

/* Step i of t moving x bytes a message: its slowest pair's time. */
static double step_s(const CollShape *s, const CollStepTable *t, int i, double x)
{
    const double inside = t->intra[i] ? s->a_local + x * s->b_local : 0;
    const double across = t->most[i] ? s->a + x * cross_b(s, t->most[i]) : 0;
    return inside > across ? inside : across;
}

/* The steps of s's irregular layout in order (the tree: each level's reduce, then its
 * broadcast), enumerated into s->steps unless it holds them already (the communicator's table:
 * O(p log p) once, not at every call), or into own when s has none. */
static const CollStepTable *layout_steps(const CollShape *s, int tree, CollStepTable *own)
{
    CollStepTable *t = s->steps ? s->steps : own;
    const int p = s->p;
    if (t->p == p && t->g == s->g && t->q == s->q && t->tree == tree) return t;
    t->n = 0;
    if (tree) {
        for (int m = 1; m < p; m *= 2) {
            step_pairs(s, &(Step){TREE_UP, p, m, 0}, t);
            step_pairs(s, &(Step){TREE_DOWN, p, m, 0}, t);
        }
    } else {
        int p2 = 1;
        while (p2 * 2 <= p) p2 *= 2;
        Step st = {HD_FOLD_IN, p, 0, p - p2};
        if (st.rem) step_pairs(s, &st, t);
        st.kind = HD_CORE;
        for (st.d = p2 / 2; st.d >= 1; st.d /= 2) step_pairs(s, &st, t);
        st.kind = HD_FOLD_OUT;
        if (st.rem) step_pairs(s, &st, t);
    }
    t->p = p;
    t->g = s->g;
    t->q = s->q;
    t->tree = tree;
    return t;
}

int coll_hier_steps_apply(const CollShape *s)
{
    return s->q > 0 && s->g > 1 && s->p > s->g;
}

/* Regular layouts (the file's header): a step at distance d is across nodes iff d >= g, and
 * then all of a NIC's q GPUs cross it at once (halving-doubling), or one (the tree: its senders
 * at a level of mask m >= g are m apart). */
double coll_hier_hd_s(const CollShape *s, double n)
{
    const int p = s->p, g = s->g;
    if (is_pow2(p) && is_pow2(g) && p % g == 0) {
        double t = 0, x = n;
        for (int d = p / 2; d >= 1; d /= 2) {
            x /= 2;
            t += d >= g ? s->a + x * cross_b(s, s->q) : s->a_local + x * s->b_local;
        }
        return 2 * t; /* the reduce-scatter, then the allgather over the same pairs */
    }
    CollStepTable own = {0};
    const CollStepTable *st = layout_steps(s, 0, &own);
    int p2 = 1, i = 0;
    while (p2 * 2 <= p) p2 *= 2;
    double t = p > p2 ? step_s(s, st, i++, n) : 0, x = n; /* the fold in */
    for (int d = p2 / 2; d >= 1; d /= 2) {
        x /= 2;
        t += 2 * step_s(s, st, i++, x);
    }
    return p > p2 ? t + step_s(s, st, i, n) : t; /* the fold out */
}

double coll_hier_tree_s(const CollShape *s, double n)
{
    const int p = s->p, g = s->g;
    if (is_pow2(g) && p % g == 0) {
        double t = 0;
        for (int m = 1; m < p; m *= 2)
            t += m >= g ? s->a + n * cross_b(s, 1) : s->a_local + n * s->b_local;
        return 2 * t; /* the reduce, then the broadcast down the same levels */
    }
    CollStepTable own = {0};
    const CollStepTable *st = layout_steps(s, 1, &own);
    double t = 0;
    for (int i = 0; i < st->n; i += 2) t += step_s(s, st, i, n) + step_s(s, st, i + 1, n);
    return t;
}
