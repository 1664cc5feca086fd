/* test_coll_time.c: how long the collectives take, on real SimGrid platforms (colltest.h: each
 * scenario in a forked child). Checked: times equal the closed-form costs of REFERENCES.md to
 * 1e-6 on contention-free platforms (ring, halving-doubling and tree on a star, the hierarchical
 * allreduce against its two-level formula, a ring on one node of a hierarchical cluster against
 * the ring's on its intra-node links; a ring, halving-doubling and the tree across nodes of a
 * hierarchical cluster, each step at its pairs' slowest hop), for the transfer-level and the
 * analytic backends;
 * an oversubscribed fat-tree and a node-shared NIC are slower by exactly the bottleneck the test
 * states. What the collectives compute: test_coll.c. */
#include "testutil.h"

#include "colltest.h"

/* ---- times against the closed forms, contention-free platforms ---- */

static void check_formula_on_star(CollAlgo algo, int P, size_t count, double bw, double lat)
{
    SC = (Scenario){.cl = star(P, bw, lat), .algo = algo, .count = count};
    Result r = simulate();
    double n = (double)count * sizeof(float);
    double want = coll_allreduce_formula_s(algo, P, 1, n, 2 * lat, 1 / bw, 0, 0);
    char what[96];
    snprintf(what, sizeof what, "%s on a star, P=%d, %zu floats, %g s latency",
             coll_algo_name(algo), P, count, lat);
    expect_close(r.time_s, want, 1e-6, what);
    /* and the analytic backend */
    SC.backend = COLL_ANALYTIC;
    Result a = simulate();
    expect_close(a.time_s, r.time_s, 1e-6, what);
    if (algo == COLL_RING || algo == COLL_HALVING_DOUBLING)
        expect_close(a.bytes0, r.bytes0, 1e-9, "bytes sent by rank 0");
}

static void test_ring_time_equals_formula_on_star(void **state)
{
    (void)state;
    int Ps[] = {2, 3, 5, 8, 12};
    for (size_t i = 0; i < sizeof Ps / sizeof *Ps; i++) {
        check_formula_on_star(COLL_RING, Ps[i], 1000 * (size_t)Ps[i], 1.25e9, 5e-6);
        check_formula_on_star(COLL_RING, Ps[i], 262144 * (size_t)Ps[i], 12.5e9, 50e-6);
    }
}

static void test_halving_doubling_time_equals_formula_on_star(void **state)
{
    (void)state;
    int Ps[] = {2, 3, 4, 6, 8, 16};
    for (size_t i = 0; i < sizeof Ps / sizeof *Ps; i++) {
        check_formula_on_star(COLL_HALVING_DOUBLING, Ps[i], 4096 * 16, 1.25e9, 5e-6);
        check_formula_on_star(COLL_HALVING_DOUBLING, Ps[i], 1 << 20, 12.5e9, 1e-6);
    }
}

static void test_tree_time_equals_formula_on_star(void **state)
{
    (void)state;
    int Ps[] = {2, 3, 5, 8};
    for (size_t i = 0; i < sizeof Ps / sizeof *Ps; i++)
        check_formula_on_star(COLL_TREE, Ps[i], 50000, 1.25e9, 10e-6);
}

static Cluster hier(int P, int G, int nic_per_gpu)
{
    Cluster c = star(P, 12.5e9, 5e-6);
    c.topology = TOPO_HIERARCHICAL;
    c.gpus_per_node = G;
    c.nic_per_gpu = nic_per_gpu;
    c.intra_bandwidth_Bps = 150e9;
    c.intra_latency_s = 1e-6;
    return c;
}

static void test_hierarchical_time_equals_two_level_formula(void **state)
{
    (void)state;
    int cfg[][2] = {{8, 4}, {12, 3}, {8, 2}};
    for (int k = 0; k < 3; k++) {
        int P = cfg[k][0], G = cfg[k][1];
        SC = (Scenario){.cl = hier(P, G, 1), .algo = COLL_HIERARCHICAL, .count = 240000};
        Result r = simulate();
        double n = 240000.0 * 4;
        double want = coll_allreduce_formula_s(COLL_HIERARCHICAL, P, G, n, 2 * 5e-6, 1 / 12.5e9,
                                               2 * 1e-6, 1 / 150e9);
        expect_close(r.time_s, want, 1e-6, "hierarchical allreduce, NIC per GPU");
        SC.backend = COLL_ANALYTIC;
        expect_close(simulate().time_s, r.time_s, 1e-6, "analytic hierarchical");
    }
    /* one GPU per node: the hierarchical platform is a star */
    check_formula_on_star(COLL_RING, 6, 6000, 1.25e9, 5e-6);
    SC.cl.topology = TOPO_HIERARCHICAL;
    SC.backend = COLL_TRANSFER;
    expect_close(simulate().time_s,
                 coll_allreduce_formula_s(COLL_RING, 6, 1, 24000, 10e-6, 0.8e-9, 0, 0), 1e-6,
                 "ring on hierarchical with G=1");
}

static void test_one_node_ring_takes_the_intra_node_links(void **state)
{
    (void)state;
    /* a hierarchical cluster of one node (P = G = 4): the ring never crosses the NIC, so both
     * backends price it on the intra-node links (150 GB/s, 1 us), not the NIC's 12.5 GB/s */
    const double n = 240000.0 * 4;
    SC = (Scenario){.cl = hier(4, 4, 0), .algo = COLL_RING, .count = 240000};
    const double want = coll_allreduce_formula_s(COLL_RING, 4, 1, n, 2 * 1e-6, 1 / 150e9, 0, 0);
    expect_close(simulate().time_s, want, 1e-6, "ring on one node, transfer level");
    SC.backend = COLL_ANALYTIC;
    expect_close(simulate().time_s, want, 1e-6, "ring on one node, analytic");
}

/* A ring over two nodes of four GPUs: its intra-node hops (nvl, nvl) and its cross-node ones
 * (with a NIC per node: nvl, nic, nic, nvl; per GPU: nic, nic) all move at every step, so a step
 * takes its slowest hop's a + (n/p) b. With intra links at 2 GB/s under a 12.5 GB/s NIC the
 * analytic level must slow down as the transfer level does (it once priced the NIC alone). */
static void test_ring_across_nodes_runs_at_its_slowest_hop(void **state)
{
    (void)state;
    const int P = 8, G = 4;
    const double B = 12.5e9, l = 5e-6, li = 1e-6, n = 60000.0 * 4, c = n / P;
    const double intra[] = {2e9, 200e9};
    for (int nic = 0; nic < 2; nic++) {
        double slow = 0;
        for (int k = 0; k < 2; k++) {
            const double Bi = intra[k];
            SC = (Scenario){.cl = hier(P, G, nic), .algo = COLL_RING, .count = 60000};
            SC.cl.intra_bandwidth_Bps = Bi;
            const double across = nic ? 2 * l + c / B : 2 * l + 2 * li + c / (Bi < B ? Bi : B);
            const double inside = 2 * li + c / Bi;
            const double want = 2.0 * (P - 1) * (inside > across ? inside : across);
            const double t = simulate().time_s;
            expect_close(t, want, 1e-6, "ring across nodes, transfer level");
            SC.backend = COLL_ANALYTIC;
            expect_close(simulate().time_s, t, 1e-6, "ring across nodes, analytic");
            if (k == 0)
                slow = t;
            else
                assert_true(slow > 1.2 * t);
            /* the ring allgather's steps the same (its blocks differ by at most 7 floats in
             * 60000: the closed form takes their mean) */
            SC.op = OP_ALLGATHER;
            const double ag = simulate().time_s;
            SC.backend = COLL_TRANSFER;
            expect_close(ag, simulate().time_s, 1e-3, "ring allgather across nodes");
        }
        /* the hierarchical allreduce's cross-node ring reaches a node's NIC over the intra
         * links: at 2 GB/s they, not the NIC's quarter of 12.5 GB/s, are its bottleneck */
        SC = (Scenario){.cl = hier(P, G, nic), .algo = COLL_HIERARCHICAL, .count = 60000};
        SC.cl.intra_bandwidth_Bps = intra[0];
        const double t = simulate().time_s;
        SC.backend = COLL_ANALYTIC;
        expect_close(simulate().time_s, t, 1e-6, "hierarchical allreduce, slow intra links");
    }
}

/* Halving-doubling and the tree over 2 and 4 nodes of 4 GPUs, with their closed forms written
 * from the messages they send (coll_halving_doubling.c, coll_tree.c): a step whose pairs are in
 * one node costs 2 li + x / Bi; one whose pairs cross nodes a + x / min(B / f, Bi) (NIC per node:
 * a = 2 l + 2 li over nvl, nic, nic, nvl) or 2 l + x / B (NIC per GPU), f the flows that cross a
 * NIC at once: halving-doubling's steps at distance d >= 4 send all 4 GPUs of a node across
 * (f = 4), the tree's levels of mask m >= 4 one sender a node (f = 1). The analytic level once
 * charged every step at a node's share of its NIC, the steps inside nodes too. Tolerance 1e-9:
 * both levels are the same sums of the same steps, apart only by rounding (measured: at most
 * 2.2e-16 relative, a few ulps; 1e-9 leaves room for another libm or SimGrid build), while a
 * step priced at a wrong rate is off by percents (an intra step's latency alone is 2 us of a
 * 30-120 us total). */
static double hier_step_s(int nic_per_gpu, int cross, int f, double x, double Bi)
{
    const double B = 12.5e9, l = 5e-6, li = 1e-6;
    if (!cross) return 2 * li + x / Bi;
    if (nic_per_gpu) return 2 * l + x / B;
    return 2 * l + 2 * li + x / (B / f < Bi ? B / f : Bi);
}

static void test_hd_and_tree_across_nodes_price_each_step_by_its_pairs(void **state)
{
    (void)state;
    const int G = 4;
    const double n = 4096.0 * 4, intra[] = {2e9, 200e9};
    for (int nodes = 2; nodes <= 4; nodes += 2)
        for (int nic = 0; nic < 2; nic++)
            for (int k = 0; k < 2; k++)
                for (int tree = 0; tree < 2; tree++) {
                    const int P = nodes * G;
                    double want = 0, x = n;
                    for (int d = P / 2; d >= 1; d /= 2) /* mask, or distance */
                        if (tree) {
                            want += 2 * hier_step_s(nic, d >= G, 1, n, intra[k]);
                        } else {
                            x /= 2;
                            want += 2 * hier_step_s(nic, d >= G, G, x, intra[k]);
                        }
                    SC = (Scenario){.cl = hier(P, G, nic),
                                    .algo = tree ? COLL_TREE : COLL_HALVING_DOUBLING,
                                    .count = 4096};
                    SC.cl.intra_bandwidth_Bps = intra[k];
                    char what[128];
                    snprintf(what, sizeof what, "%s, %d nodes of 4, NIC per %s, intra %g B/s",
                             tree ? "tree" : "halving-doubling", nodes, nic ? "GPU" : "node",
                             intra[k]);
                    const double t = simulate().time_s;
                    expect_close(t, want, 1e-9, what);
                    SC.backend = COLL_ANALYTIC;
                    expect_close(simulate().time_s, t, 1e-9, what);
                }
}

/* Layouts whose steps are not wholly inside or across nodes: halving-doubling on 12 GPUs (3
 * nodes of 4; its 4 extra ranks fold in, and its core's pairs mix the nodes) and the tree on 2
 * nodes of 6 (its level of mask 4 has pairs inside a node and across). The closed form prices
 * such a step pair by pair (coll_hier_steps.c), each pair's NIC at the flows that cross it, and
 * here every pair of a step still ends together: both levels agree (an odd number of GPUs a node
 * lets a rank run ahead, where the analytic level is an upper bound: not tested here). */
static void test_hd_and_tree_mixed_steps_priced_pair_by_pair(void **state)
{
    (void)state;
    for (int nic = 0; nic < 2; nic++)
        for (int k = 0; k < 2; k++)
            for (int tree = 0; tree < 2; tree++) {
                SC = (Scenario){.cl = tree ? hier(12, 6, nic) : hier(12, 4, nic),
                                .algo = tree ? COLL_TREE : COLL_HALVING_DOUBLING,
                                .count = 4096};
                SC.cl.intra_bandwidth_Bps = k ? 200e9 : 2e9;
                char what[96];
                snprintf(what, sizeof what, "%s, mixed steps, NIC per %s, intra %g B/s",
                         tree ? "tree" : "halving-doubling", nic ? "GPU" : "node",
                         SC.cl.intra_bandwidth_Bps);
                const double t = simulate().time_s;
                SC.backend = COLL_ANALYTIC;
                expect_close(simulate().time_s, t, 1e-9, what);
            }
}

/* Every communicator's allgather is a ring (coll_allgather), one flow a NIC each way across
 * nodes, whatever its allreduce: on 2 nodes of 4 GPUs behind one NIC, halving-doubling's, the
 * tree's and the hierarchical allreduce's communicators once priced it at a quarter of the NIC
 * (their allreduces' share when a node's 4 GPUs cross at once): 2.85x the transfer level for
 * halving-doubling. */
static void test_allgathers_are_rings_whatever_the_allreduce(void **state)
{
    (void)state;
    const CollAlgo algos[] = {COLL_HALVING_DOUBLING, COLL_TREE, COLL_HIERARCHICAL};
    for (int i = 0; i < 3; i++) {
        SC = (Scenario){.cl = hier(8, 4, 0), .algo = algos[i], .op = OP_ALLGATHER, .count = 60000};
        const double t = simulate().time_s;
        SC.backend = COLL_ANALYTIC;
        expect_close(simulate().time_s, t, 1e-3, coll_algo_name(algos[i]));
    }
}

/* ---- bottlenecks ---- */

static void test_oversubscribed_fat_tree_slows_cross_leaf_steps(void **state)
{
    (void)state;
    /* 8 GPUs, leaves of 4, uplinks of 4 B / 4 = B. Halving-doubling's first and last steps
     * (distance 4) send the four GPUs of a leaf across at once: they share the uplink, so
     * each gets B/4, and the route has four links (nic, up, up, nic). The other steps stay in
     * the leaf. */
    const double B = 1.25e9, l = 5e-6, n = 65536.0 * 4;
    SC = (Scenario){.cl = star(8, B, l), .algo = COLL_HALVING_DOUBLING, .count = 65536};
    SC.cl.topology = TOPO_FAT_TREE;
    SC.cl.leaf_size = 4;
    SC.cl.oversubscription = 4;
    double want =
        2 * (4 * l + (n / 2) / (B / 4)) + 2 * (2 * l + (n / 4) / B) + 2 * (2 * l + (n / 8) / B);
    double fat = simulate().time_s;
    expect_close(fat, want, 1e-6, "halving-doubling on an oversubscribed fat-tree");
    /* not oversubscribed: only the extra latency of the cross-leaf route remains */
    SC.cl.oversubscription = 1;
    double flat = simulate().time_s;
    expect_close(flat,
                 2 * (4 * l + (n / 2) / B) + 2 * (2 * l + (n / 4) / B) + 2 * (2 * l + (n / 8) / B),
                 1e-6, "halving-doubling on a non-blocking fat-tree");
    assert_true(fat > 2 * flat);
}

/* Halving-doubling and the tree on fat-trees of leaves of 4 (ranks fill the leaves in order),
 * their closed forms written from their messages: a step whose pairs stay in a leaf costs
 * 2 l + x / B over the two host links; one whose pairs cross 4 l + x max(f os / (L B), 1 / B)
 * over nic, up, up, nic, f the flows through a leaf's uplink of L B / os at once (4 at
 * halving-doubling's distances d >= 4, one at the tree's masks m >= 4). The analytic level once
 * charged every step at the cross-leaf rate of a whole leaf (os / B, 4 l: +19% for
 * halving-doubling, +288% for the tree on 16 GPUs at 4:1 in bellows run, docs/guide/clusters.md);
 * now both are the same sums (1e-9, as on nodes above). os = 8 > L slows the tree's single
 * flows too. Halving-doubling on 12 ranks (it folds 4 in) and the tree on 18 (a last leaf of 2)
 * are priced pair by pair and agree as well. */
static double ft_step_s(int cross, int f, double x, double os)
{
    const double B = 1.25e9, l = 5e-6, L = 4;
    if (!cross) return 2 * l + x / B;
    return 4 * l + x * (f * os / (L * B) > 1 / B ? f * os / (L * B) : 1 / B);
}

static void test_hd_and_tree_on_a_fat_tree_price_each_step_by_its_pairs(void **state)
{
    (void)state;
    const double n = 4096.0 * 4, oss[] = {1, 4, 8};
    const int Ps[] = {16, 12, 18};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 3; i++)
            for (int tree = 0; tree < 2; tree++) {
                const int P = Ps[i];
                if ((P == 12 && tree) || (P == 18 && !tree)) continue;
                SC = (Scenario){.cl = star(P, 1.25e9, 5e-6),
                                .algo = tree ? COLL_TREE : COLL_HALVING_DOUBLING,
                                .count = 4096};
                SC.cl.topology = TOPO_FAT_TREE;
                SC.cl.leaf_size = 4;
                SC.cl.oversubscription = oss[k];
                char what[96];
                snprintf(what, sizeof what, "%s on a fat-tree, P=%d, leaves of 4, os %g",
                         tree ? "tree" : "halving-doubling", P, oss[k]);
                const double t = simulate().time_s;
                if (P == 16) {
                    double want = 0, x = n;
                    for (int d = P / 2; d >= 1; d /= 2) /* mask, or distance */
                        want += tree ? 2 * ft_step_s(d >= 4, 1, n, oss[k])
                                     : 2 * ft_step_s(d >= 4, 4, x /= 2, oss[k]);
                    expect_close(t, want, 1e-9, what);
                }
                SC.backend = COLL_ANALYTIC;
                expect_close(simulate().time_s, t, 1e-9, what);
                if (P != 16) continue;
                /* their allgathers are rings (coll_allgather): one flow an uplink each way, not
                 * a leaf's (the blocks differ by at most 15 ints in 60000: 1e-3) */
                SC.op = OP_ALLGATHER;
                SC.count = 60000;
                const double ag = simulate().time_s;
                SC.backend = COLL_TRANSFER;
                expect_close(ag, simulate().time_s, 1e-3, "its allgather");
            }
}

static void test_node_shared_nic_divides_inter_node_bandwidth(void **state)
{
    (void)state;
    /* 2 nodes of 4 GPUs with one NIC each: in the inter-node phase the 4 rings (one per local
     * GPU index) share each NIC, so each flow gets B/4; the route is nvl, nic, nic, nvl. */
    const int P = 8, G = 4, m = 2;
    const double B = 12.5e9, l = 5e-6, Bi = 150e9, li = 1e-6, n = 240000.0 * 4;
    SC = (Scenario){.cl = hier(P, G, 0), .algo = COLL_HIERARCHICAL, .count = 240000};
    double shared = simulate().time_s;
    double want = 2.0 * (G - 1) * 2 * li + 2.0 * (G - 1) / G * n / Bi +
                  2.0 * (m - 1) * (2 * l + 2 * li) + 2.0 * (m - 1) / m * (n / G) / (B / G);
    expect_close(shared, want, 1e-6, "hierarchical allreduce, one NIC per node");
    SC.cl.nic_per_gpu = 1;
    double own = simulate().time_s;
    assert_true(shared > own);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_time_equals_formula_on_star),
        cmocka_unit_test(test_halving_doubling_time_equals_formula_on_star),
        cmocka_unit_test(test_tree_time_equals_formula_on_star),
        cmocka_unit_test(test_hierarchical_time_equals_two_level_formula),
        cmocka_unit_test(test_one_node_ring_takes_the_intra_node_links),
        cmocka_unit_test(test_ring_across_nodes_runs_at_its_slowest_hop),
        cmocka_unit_test(test_hd_and_tree_across_nodes_price_each_step_by_its_pairs),
        cmocka_unit_test(test_hd_and_tree_mixed_steps_priced_pair_by_pair),
        cmocka_unit_test(test_allgathers_are_rings_whatever_the_allreduce),
        cmocka_unit_test(test_oversubscribed_fat_tree_slows_cross_leaf_steps),
        cmocka_unit_test(test_hd_and_tree_on_a_fat_tree_price_each_step_by_its_pairs),
        cmocka_unit_test(test_node_shared_nic_divides_inter_node_bandwidth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
