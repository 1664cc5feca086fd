/* test_islands.c: training across islands (--topology islands, sim/driver/islands.c) on
 * synthetic data (drivertest.h). The bytes across the WAN are the closed form: each outer
 * exchange (DiLoCo's) or synchronous step's allreduce is hierarchical, K islands exchanging
 * 2 (K-1)/K of the model each, so 2 (K-1) x 4 n_params bytes over all ranks, times the exchanges,
 * exactly; bad island flags are usage errors naming the flag; `bellows reproduce diloco`'s
 * verdicts follow the rows it reads (--report-only on made-up summaries). */
#include "testutil.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include "blas_cpu.h"

#include "costs.h"
#include "drivertest.h"

static RunConfig islands_config(int P, int K, int batch)
{
    RunConfig cfg = base_config(P, batch, 1);
    cfg.cluster.topology = TOPO_ISLANDS;
    cfg.cluster.islands = K;
    BwError err;
    assert_int_equal(cluster_resolve(&cfg.cluster, &err), BW_OK);
    return cfg;
}

static double model_bytes(const RunConfig *cfg)
{
    Model *m = NULL;
    assert_int_equal(model_create(cfg->model, &cfg->mc, cfg->tc.seed, &m, NULL), BW_OK);
    double b = 4.0 * (double)m->n_params;
    model_free(m);
    return b;
}

static size_t n_params(const RunConfig *cfg)
{
    return (size_t)(model_bytes(cfg) / 4);
}

static void check_wan(int P, int K, const char *policy, int batch, long exchanges)
{
    RunConfig cfg = islands_config(P, K, batch);
    cfg.policy = policy;
    Shared *sh = simulate(cfg);
    assert_int_equal(sh->rc, BW_OK);
    if (strcmp(policy, "sync") != 0) assert_int_equal(sh->averagings, exchanges);
    const double want = (double)exchanges * 2.0 * (K - 1) * model_bytes(&cfg);
    if (sh->wan_bytes != want)
        fail_msg("%s on %d islands of %d: %.0f WAN bytes, closed form %.0f", policy, K, P / K,
                 sh->wan_bytes, want);
    release(sh);
}

/* 4 workers x 8 samples: 16 steps of the 512; H = 4 gives 4 outer exchanges */
static void test_diloco_wan_bytes_are_the_closed_form(void **state)
{
    (void)state;
    check_wan(4, 2, "diloco:H=4", 8, 4);
    check_wan(8, 4, "diloco:H=8", 8, 1); /* 8 steps */
    /* H = 500 on 16 steps: no exchange at all, said, not tabled as DiLoCo's (issue 49 item 17) */
    RunConfig cfg = islands_config(4, 2, 8);
    cfg.policy = "diloco:H=500";
    Shared *sh = simulate(cfg);
    assert_int_equal(sh->averagings, 0);
    if (!strstr(sh->never_exchanged, "diloco:H=500 never averaged in the run's 16 steps"))
        fail_msg("'%s'", sh->never_exchanged);
    release(sh);
    cfg.policy = "diloco:H=4"; /* and a run that exchanged says nothing */
    sh = simulate(cfg);
    assert_string_equal(sh->never_exchanged, "");
    release(sh);
    check_wan(4, 4, "cpsgd:period=2", 8, 8);
}

/* Streaming DiLoCo: H = 4, 2 fragments (fc1's two tensors, out's two), offsets 0 and 2: 16
 * steps exchange fragment 0 at steps 4, 8, 12, 16 and fragment 1 at 6, 10, 14, each as
 * ceil(n x 4 / 32) + 1 floats (4-bit outer gradients and a scale), 2 (K - 1) of them per
 * exchange over the WAN. */
static void test_streaming_wan_bytes_are_the_quantised_fragments(void **state)
{
    (void)state;
    RunConfig cfg = islands_config(4, 2, 8);
    cfg.policy = "streaming-diloco:h=4,fragments=2,bits=4,tau=1";
    Shared *sh = simulate(cfg);
    assert_int_equal(sh->rc, BW_OK);
    assert_int_equal(sh->averagings, 7);
    Model *m = NULL;
    assert_int_equal(model_create(cfg.model, &cfg.mc, cfg.tc.seed, &m, NULL), BW_OK);
    const size_t f0 = layer_size(&m->layers[0]) + layer_size(&m->layers[1]);
    const size_t f1 = layer_size(&m->layers[2]) + layer_size(&m->layers[3]);
    model_free(m);
    const double want =
        2.0 * 4 *
        (4.0 * (double)outer_quantised_floats(f0, 4) + 3.0 * outer_quantised_floats(f1, 4));
    if (sh->wan_bytes != want) fail_msg("%.0f WAN bytes, closed form %.0f", sh->wan_bytes, want);
    cfg.policy = "streaming-diloco:h=4,fragments=2,bits=4,tau=0";
    Shared *now = simulate(cfg);
    assert_float_equal(now->wan_bytes, want, 0);
    assert_true(memcmp(now->params, sh->params, sizeof sh->params) != 0); /* tau matters */
    assert_true(sh->final_acc > 0.2);
    release(now);
    release(sh);
}

/* Synchronous data-parallel training across the islands: every step's allreduce crosses. */
static void test_sync_crosses_the_wan_every_step(void **state)
{
    (void)state;
    check_wan(4, 2, "sync", 32, 4); /* 4 steps, dense gradients (compressor none) */
}

/* The inner steps are synchronous inside an island, so an island's workers are one replica:
 * with one island, periodic averaging finds them equal (variance 0; local SGD's would not). */
static void test_one_island_is_one_replica(void **state)
{
    (void)state;
    RunConfig cfg = islands_config(4, 1, 8);
    cfg.policy = "cpsgd:period=4";
    Shared *sh = simulate(cfg);
    assert_int_equal(sh->rc, BW_OK);
    assert_int_equal(sh->wan_bytes, 0);
    for (long s = 0; s + 1 < sh->n_steps; s++)
        if (sh->step_averaged[s]) assert_float_equal(sh->step_variance[s], 0, 0);
    release(sh);
}

/* Streaming DiLoCo's overlap (outer_lane.c): 2 islands of one GPU, one fragment, 16 steps of C
 * seconds' compute each, 4 exchanges of E seconds each (at steps 4, 8, 12, 16, counted from 1),
 * E the closed form of a ring of two over NIC, WAN, NIC (on costed steps under a measured
 * profile, whose busbw curves scale the transfers, as the blocking run measures it). tau = 0
 * blocks, as before: 16 C + 4 E. tau > 0: each of the first three is applied tau steps later and
 * costs only what remains, max(0, E - tau C); the last is still in flight at the end, and the run
 * waits for it: E. */
static Shared *overlap_run(int tau, double gpu_flops, const CostProfile *prof)
{
    RunConfig cfg = islands_config(2, 2, 16);
    cfg.cluster.gpu_flops = gpu_flops;
    cfg.cluster.wan_latency_s = 1e-3;
    cfg.cluster.wan_bandwidth_Bps = 1.25e9;
    cfg.costs = prof;
    char policy[96];
    snprintf(policy, sizeof policy, "streaming-diloco:h=4,fragments=1,bits=4,tau=%d", tau);
    cfg.policy = policy;
    Shared *sh = simulate(cfg);
    if (sh->rc != BW_OK) fail_msg("tau=%d: %s", tau, sh->message);
    assert_int_equal(sh->averagings, 4);
    return sh;
}

static void check_overlap(double flops, const CostProfile *prof, const int *taus, int n_taus)
{
    RunConfig cfg = islands_config(2, 2, 16);
    /* the costed step prices the real model, here the small one's own profile: its floats, in
     * chunks of ceil(floats / 2), the larger on each message */
    const double chunk = 4.0 * ceil((double)outer_quantised_floats(n_params(&cfg), 4) / 2);
    double E =
        2 * (1e-3 + 2 * cfg.cluster.latency_s + chunk / fmin(1.25e9, cfg.cluster.bandwidth_Bps));
    Shared *b = overlap_run(0, flops, prof);
    const double C = b->compute_s / 16;
    if (prof) /* its busbw curves scale the transfers: E as the blocking run measured it */
        E = (b->sim_time_s - b->compute_s) / 4;
    assert_float_equal(b->sim_time_s, b->compute_s + 4 * E, 1e-9);
    assert_float_equal(b->comm_s, 4 * E, 1e-9);
    for (int i = 0; i < n_taus; i++) {
        const int tau = taus[i];
        Shared *o = overlap_run(tau, flops, prof);
        assert_float_equal(o->compute_s, b->compute_s, 1e-12);
        const double want = o->compute_s + 3 * fmax(0, E - tau * C) + E;
        if (fabs(o->sim_time_s - want) > 1e-9)
            fail_msg("C %g, E %g, tau=%d: %.12g s, closed form %.12g", C, E, tau, o->sim_time_s,
                     want);
        assert_memory_not_equal(o->params, b->params, sizeof o->params);
        release(o);
    }
    release(b);
}

static void test_streaming_exchange_overlaps_tau_steps(void **state)
{
    (void)state;
    /* C about 0.8 ms, E about 2 ms: 1.2 ms remain at tau 1, none at tau 3 (valgrind's time in
     * CI is short: one GPU rate, the fewest runs that reach both branches) */
    check_overlap(2e9, NULL, (const int[]){1, 3}, 2);
    CostProfile *prof = NULL;
    BwError err;
    assert_int_equal(costs_load("pytorch-v100", "--costs", "V100", &prof, &err), BW_OK);
    check_overlap(2e9, prof, (const int[]){1}, 1); /* costed steps (exec_ddp) */
    costs_free(prof);
}

/* --collectives analytic on islands: the hierarchical allreduce's closed form (coll.h) with
 * the islands as its nodes (sim/net/coll.c derive_costs: a_l, b_l an island's route; a, b the
 * route between islands, its WAN link shared by an island's G rings) and the WAN's bytes its
 * closed form, 2 (K-1) n over all ranks per allreduce, against the transfer level: DiLoCo (the
 * islands' rings every step, an outer exchange every 2), 4 GPUs in 2 islands, an mlp of 30 hidden
 * units (23,860 floats: every chunk whole). */
static Shared *backend_run(const char *policy, CollBackend backend, int price_workers)
{
    RunConfig cfg = islands_config(4, 2, 32);
    model_config_set(&cfg.mc, cfg.model, "hidden", 1, (const int[]){30});
    cfg.policy = policy;
    cfg.backend = backend;
    cfg.price_workers = price_workers;
    Shared *sh = simulate(cfg);
    if (sh->rc != BW_OK) fail_msg("%s: %s", policy, sh->message);
    return sh;
}

static void test_analytic_islands_match_the_transfer_level(void **state)
{
    (void)state;
    const char *policies[] = {"diloco:H=2"}; /* the islands' rings and the exchanges */
    for (int i = 0; i < 1; i++) {
        Shared *t = backend_run(policies[i], COLL_TRANSFER, 0);
        Shared *a = backend_run(policies[i], COLL_ANALYTIC, 0);
        if (fabs(a->sim_time_s - t->sim_time_s) > 1e-9 * t->sim_time_s)
            fail_msg("%s: analytic %.12g s, transfer level %.12g", policies[i], a->sim_time_s,
                     t->sim_time_s);
        assert_true(t->wan_bytes > 0);
        assert_float_equal(a->wan_bytes, t->wan_bytes, 0);
        assert_float_equal(a->bytes, t->bytes, 0);
        /* the same training, summed in another order (rank order, the messages' arrival) */
        for (size_t k = 0; k < sizeof a->params / sizeof a->params[0]; k++)
            assert_float_equal(a->params[k], t->params[k], 1e-4);
        release(t);
        release(a);
    }
}

/* --price-workers 1024 on 2 islands: the 4 GPUs that train are priced as 2 islands of 512. Per
 * allreduce of n bytes, g = 512, m = 2: 2 (g-1) a_l + 2 (g-1)/g n b_l + 2 (m-1) a + 2 (m-1)/m
 * (n/g) b, a_l = 2 l and b_l = 1 / B inside an island, a = 2 l + the WAN's latency and
 * b = max(g / the WAN's rate, b_l) between them (the island's 512 rings share its WAN link);
 * each GPU sends 2 (g-1)/g n + 2 (m-1)/m n/g; the WAN carries 2 (K-1) n over the 1024 GPUs.
 * DiLoCo's inner steps add an island's ring of 512, 2 (g-1) a_l + 2 (g-1)/g n b_l, each GPU
 * sending 2 (g-1)/g n. */
static void test_price_workers_on_islands_is_the_closed_form(void **state)
{
    (void)state;
    RunConfig cfg = islands_config(4, 2, 32);
    model_config_set(&cfg.mc, cfg.model, "hidden", 1, (const int[]){30});
    const double n = model_bytes(&cfg), g = 512, m = 2, l = cfg.cluster.latency_s;
    const double bl = 1 / (cfg.cluster.bandwidth_Bps * cluster_link_share(&cfg.cluster));
    const double a = 2 * l + cfg.cluster.wan_latency_s;
    const double b = fmax(g / cfg.cluster.wan_bandwidth_Bps, bl);
    const double ring = 2 * (g - 1) * 2 * l + 2 * (g - 1) / g * n * bl;
    const double hier = ring + 2 * (m - 1) * a + 2 * (m - 1) / m * (n / g) * b;
    const double sent = 2 * (g - 1) / g * n + 2 * (m - 1) / m * n / g,
                 sent_ring = 2 * (g - 1) / g * n;
    Shared *d = backend_run("diloco:H=2", COLL_ANALYTIC, 1024); /* 4 steps, 2 exchanges */
    assert_float_equal(d->sim_time_s, d->compute_s + 4 * ring + 2 * hier, 1e-9 * d->sim_time_s);
    assert_float_equal(d->bytes, 4 * sent_ring + 2 * sent, 1e-6 * d->bytes);
    assert_float_equal(d->wan_bytes, 2 * 2 * n, 1e-6 * d->wan_bytes);
    release(d);
}

/* DiLoCo on a real model (islands.c, cost.c): 8 GPUs in 2 islands of 4, ResNet-50's profile with
 * DDP's overlap, analytic collectives, ideal costs. An inner step is the workload's step on one
 * island alone (a star of 4 GPUs, sync): the same forward, backward, buckets on the island's ring.
 * An outer exchange (H = 4: steps 4 and 8) adds the hierarchical allreduce of the real model's n
 * bytes across the islands, S = 4, K = 2: 2 (S-1) a_l + 2 (S-1)/S n b_l + 2 (K-1) a +
 * 2 (K-1)/K (n/S) b, b = max(S / W, b_l): the WAN term is 2 (K-1)/K n / W, the island's S rings
 * sharing its WAN link; the WAN carries 2 (K-1) n over all ranks per exchange. */
static Shared *wl_run(RunConfig cfg, const Workload *wl, const char *policy)
{
    cfg.workload = wl;
    cfg.backend = COLL_ANALYTIC;
    cfg.overlap = OVERLAP_DDP;
    cfg.policy = policy;
    Shared *sh = simulate(cfg);
    if (sh->rc != BW_OK) fail_msg("%s: %s", policy, sh->message);
    return sh;
}

/* The hierarchical allreduce of n bytes across K islands of S GPUs (the closed form above). */
static double hier_s(const RunConfig *cfg, double n, double S, double K)
{
    const double l = cfg->cluster.latency_s, W = cfg->cluster.wan_bandwidth_Bps;
    const double bl = 1 / (cfg->cluster.bandwidth_Bps * cluster_link_share(&cfg->cluster));
    assert_true(S / W > bl); /* the WAN's term */
    return 2 * (S - 1) * 2 * l + 2 * (S - 1) / S * n * bl +
           2 * (K - 1) * (2 * l + cfg->cluster.wan_latency_s) + 2 * (K - 1) / K * n / W;
}

static void test_diloco_on_a_workload_is_its_island_step_and_wan_exchange(void **state)
{
    (void)state;
    Workload *wl = NULL;
    BwError err;
    assert_int_equal(workload_load("resnet50", "--workload", &wl, &err), BW_OK);
    RunConfig cfg = islands_config(8, 2, 8); /* 8 steps */
    Shared *d = wl_run(cfg, wl, "diloco:H=4");
    Shared *one = wl_run(base_config(4, 8, 1), wl, "sync"); /* one island alone: 16 steps */
    const double inner = one->step_end[1] - one->step_end[0];
    assert_true(inner > 0);
    for (int s = 1; s < 8; s++) {
        const double t = d->step_end[s] - d->step_end[s - 1];
        if (s != 3 && s != 7 && fabs(t - inner) > 1e-12 * inner)
            fail_msg("inner step %d: %.15g s, one island's %.15g", s, t, inner);
    }
    const double n = 4.0 * (double)wl->n_params, K = 2;
    const double hier = hier_s(&cfg, n, 4, K);
    const double x = d->step_end[3] - d->step_end[2] - inner;
    if (fabs(x - hier) > 1e-9 * hier) fail_msg("exchange %.12g s, closed form %.12g", x, hier);
    assert_float_equal(d->step_end[7] - d->step_end[6] - inner, hier, 1e-9 * hier);
    assert_int_equal(d->averagings, 2);
    assert_float_equal(d->wan_bytes, 2 * 2 * (K - 1) * n, 1e-6 * d->wan_bytes);
    release(one);
    release(d);
    workload_free(wl);
}

/* Streaming DiLoCo on a real model: its fragments are the workload's own layers, split as the
 * small model's (outer.c): h = 4, 2 fragments, 8 steps exchange fragment 0 at steps 4 and 8 and
 * fragment 1 at step 6, each ceil(n_f x 4 / 32) + 1 floats over the WAN, 2 (K-1) times; and each
 * exchange step (tau = 0: it blocks) takes the inner step plus the hierarchical allreduce of its
 * own fragment (the step plan's builder sizes it before the outer step runs: it fails when the
 * plan takes the fragment exchanged last, 0 at step 6 and 1 at step 8). */
static void test_streaming_fragments_are_the_workload_s_layers(void **state)
{
    (void)state;
    Workload *wl = NULL;
    BwError err;
    assert_int_equal(workload_load("resnet50", "--workload", &wl, &err), BW_OK);
    size_t nf[2] = {0, 0};
    for (int l = 0; l < wl->n_layers; l++)
        for (int t = 0; t < wl->layers[l].n_tensors; t++)
            nf[2 * l >= wl->n_layers] += wl->tensors[wl->layers[l].first_tensor + t].numel;
    assert_int_equal((long)(nf[0] + nf[1]), (long)wl->n_params);
    Shared *s = wl_run(islands_config(4, 2, 16), wl, "streaming-diloco:h=4,fragments=2,bits=4");
    assert_int_equal(s->averagings, 3);
    const double want =
        2.0 * 4 * (2.0 * outer_quantised_floats(nf[0], 4) + outer_quantised_floats(nf[1], 4));
    if (s->wan_bytes != want) fail_msg("%.0f WAN bytes, the fragments' %.0f", s->wan_bytes, want);
    const RunConfig cfg = islands_config(4, 2, 16);
    const double inner = s->step_end[1] - s->step_end[0];
    for (int k = 0; k < 3; k++) { /* steps 4, 6, 8: fragments 0, 1, 0 */
        const int at = 3 + 2 * k;
        const double hier = hier_s(&cfg, 4.0 * outer_quantised_floats(nf[k % 2], 4), 2, 2);
        const double x = s->step_end[at] - s->step_end[at - 1] - inner;
        if (fabs(x - hier) > 1e-9 * hier)
            fail_msg("step %d's exchange %.12g s, fragment %d's closed form %.12g", at + 1, x,
                     k % 2, hier);
    }
    release(s);
    workload_free(wl);
}

/* --allreduce ring on islands (islands.c, cfg.islands_flat): one flat ring over the 4 ranks of 2
 * islands, 2 of its 4 hops across the WAN; each of its 2 (P-1) steps waits for them:
 * 2 (P-1) a + 2 (P-1)/P n b, a = 2 l + the WAN's latency, b = max(1 / W, b_l), the transfer level
 * and the analytic backend alike; the WAN carries K x 2 (P-1)/P n per allreduce (the two border
 * ranks' sends), not the hierarchical allreduce's 2 (K-1) n. */
static void test_flat_ring_crosses_the_wan(void **state)
{
    (void)state;
    RunConfig cfg = islands_config(4, 2, 32); /* 4 steps of sync */
    model_config_set(&cfg.mc, cfg.model, "hidden", 1, (const int[]){30});
    cfg.islands_flat = 1;
    const double n = model_bytes(&cfg), P = 4, K = 2, l = cfg.cluster.latency_s;
    const double bl = 1 / (cfg.cluster.bandwidth_Bps * cluster_link_share(&cfg.cluster));
    const double a = 2 * l + cfg.cluster.wan_latency_s;
    const double ring =
        2 * (P - 1) * a + 2 * (P - 1) / P * n * fmax(1 / cfg.cluster.wan_bandwidth_Bps, bl);
    for (int b = 0; b < 2; b++) {
        cfg.backend = b ? COLL_ANALYTIC : COLL_TRANSFER;
        Shared *sh = simulate(cfg);
        assert_int_equal(sh->rc, BW_OK);
        if (fabs(sh->sim_time_s - (sh->compute_s + 4 * ring)) > 1e-9 * sh->sim_time_s)
            fail_msg("%s: %.12g s, closed form %.12g", b ? "analytic" : "transfer", sh->sim_time_s,
                     sh->compute_s + 4 * ring);
        assert_float_equal(sh->wan_bytes, 4 * K * 2 * (P - 1) / P * n, 1e-6 * sh->wan_bytes);
        release(sh);
    }
    cfg.islands_flat = 0; /* hierarchical: 2 (K-1) n over the WAN */
    Shared *h = simulate(cfg);
    assert_float_equal(h->wan_bytes, 4 * 2 * (K - 1) * n, 0);
    release(h);
}

/* A replay prices Streaming DiLoCo's and eager DiLoCo's overlap as the trained run (outer_lane.c
 * in replays; the fast replay refused them, run_info.c): 4 GPUs, ResNet-50's profile, costed steps
 * (exec_ddp's lanes) on a star and on 2 islands; the replay of the recorded trace has the trained
 * run's step times, bit for bit. Before, the replay priced each exchange at its step and eager
 * DiLoCo was refused (live steps on islands: test_sweep_priced's priced runs). */
static void check_replay_prices_the_overlap(const char *policy, int islands, const Workload *wl)
{
    RunConfig cfg = islands ? islands_config(4, 2, 16) : base_config(4, 16, 1);
    cfg.workload = wl;
    cfg.backend = COLL_ANALYTIC;
    cfg.policy = policy;
    char path[] = "/tmp/bellows-test-replay-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    cfg.record_trace = path;
    Shared *t = simulate(cfg);
    if (t->rc != BW_OK) fail_msg("%s: %s", policy, t->message);
    Trace tr;
    BwError err;
    assert_int_equal(trace_read(path, &tr, &err), BW_OK);
    unlink(path);
    cfg.record_trace = NULL;
    cfg.replay = &tr;
    Shared *r = simulate(cfg);
    if (r->rc != BW_OK) fail_msg("replay of %s: %s", policy, r->message);
    assert_int_equal(r->n_steps, t->n_steps);
    assert_true(t->averagings > 0);
    for (long s = 0; s < t->n_steps; s++)
        if (r->step_end[s] != t->step_end[s])
            fail_msg("%s on %s, step %ld: replay %.12g s, trained %.12g", policy,
                     islands ? "islands" : "a star", s, r->step_end[s], t->step_end[s]);
    trace_free(&tr);
    release(r);
    release(t);
}

static void test_a_replay_prices_the_outer_overlap(void **state)
{
    (void)state;
    Workload *wl = NULL;
    BwError err;
    assert_int_equal(workload_load("resnet50", "--workload", &wl, &err), BW_OK);
    check_replay_prices_the_overlap("streaming-diloco:h=4,fragments=2,bits=4,tau=2", 0, wl);
    if (!getenv("BELLOWS_VALGRIND")) { /* the same code paths: their memory is checked once */
        check_replay_prices_the_overlap("diloco:h=4,eager=1", 0, wl);
        check_replay_prices_the_overlap("diloco:h=4,eager=1", 1, wl);
    }
    workload_free(wl);
}

/* A plugin asks for DiLoCo's outer step through the public interface: on 2 islands it trains
 * bit for bit as the built-in diloco:H=4, with the same WAN bytes; an outer step out of range
 * (tau = h) is a usage error naming the plugin (`name`) and the field. */
static void check_outer_is_dilocos(const char *path, const char *name)
{
    RunConfig cfg = islands_config(4, 2, 8); /* 16 steps */
    cfg.policy = "diloco:H=4";
    Shared *b = simulate(cfg);
    char spec[600];
    snprintf(spec, sizeof spec, "%s:h=4", path);
    cfg.policy = spec;
    Shared *p = simulate(cfg);
    if (p->rc != BW_OK) fail_msg("%s", p->message);
    assert_int_equal(p->averagings, 4);
    assert_memory_equal(p->params, b->params, sizeof p->params);
    assert_float_equal(p->wan_bytes, b->wan_bytes, 0);
    assert_float_equal(p->sim_time_s, b->sim_time_s, 0);
    BwError err = {{0}};
    snprintf(spec, sizeof spec, "%s:h=4,bad=1", path);
    assert_int_equal(driver_check(&cfg, &err), BW_EUSAGE);
    if (!strstr(err.msg, name) || !strstr(err.msg, "tau: expected")) fail_msg("%s", err.msg);
    release(b);
    release(p);
}

/* the C interface's (bellows_policy.h version 6, BellowsPolicyOps.outer; tests/plugins/outer.c) */
static void test_plugin_outer_step_is_dilocos(void **state)
{
    (void)state;
    check_outer_is_dilocos(PLUGIN_OUTER, "outer_policy");
    /* the same table declaring iVersion 5: its outer would be dropped; refused, as Python's */
    RunConfig cfg = islands_config(4, 2, 8);
    cfg.policy = PLUGIN_OUTER5 ":h=4";
    BwError err = {{0}};
    assert_int_equal(driver_check(&cfg, &err), BW_EUSAGE);
    if (!strstr(err.msg, "outer5_policy") || !strstr(err.msg, ".outer is set, but iVersion 5"))
        fail_msg("%s", err.msg);
}

/* the Python interface's (bellows_policy.Policy.outer; tests/plugins/outer.py), through the
 * same check; under valgrind (scripts/valgrind.sh) skipped: the embedded CPython alone takes
 * most of a minute there, and ASan checks this path's memory */
static void test_python_outer_step_is_dilocos(void **state)
{
    (void)state;
#if defined(BW_HAVE_PYTHON)
    if (getenv("BELLOWS_VALGRIND")) return;
    check_outer_is_dilocos(PY_OUTER, "outer.py");
    RunConfig cfg = islands_config(4, 2, 8);
    /* 4 fragments asked for, averaging only at each period's first step: 3 never exchanged,
     * which the run says (RunResult.never_exchanged, summary.json's), the one it exchanged
     * said nothing of (issue 49 item 16) */
    cfg.policy = PY_OUTER ":h=4,frags=4";
    Shared *sh = simulate(cfg);
    if (sh->rc != BW_OK) fail_msg("%s", sh->message);
    if (!strstr(sh->never_exchanged, "asked for 4 fragments and never exchanged 3 of them"))
        fail_msg("'%s'", sh->never_exchanged);
    release(sh);
    const char *bad[][2] = {{PY_OUTER ":bad=2", "Outer.outer(): lr: expected a number, got '0.7'"},
                            {PY_OUTER ":bad=3", "Outer.outer(): 'beta': not a key of"}};
    for (int i = 0; i < 2; i++) {
        BwError err = {{0}};
        cfg.policy = bad[i][0];
        assert_int_equal(driver_check(&cfg, &err), BW_EUSAGE);
        if (!strstr(err.msg, "outer.py: ") || !strstr(err.msg, bad[i][1])) fail_msg("%s", err.msg);
    }
    /* an outer() in a class written against version 5 would be ignored: refused instead */
    char path[64] = "/tmp/bellows-v5-XXXXXX.py";
    int fd = mkstemps(path, 3);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("import bellows_policy as bp\n\nclass Old(bp.Policy):\n    name = 'old'\n"
          "    version = 5\n    mode = bp.PERIODIC\n\n    def decide(self, obs, decision):\n"
          "        decision.average = True\n\n    def outer(self):\n"
          "        return {'lr': 0.7, 'h': 4}\n",
          f);
    fclose(f);
    BwError err = {{0}};
    cfg.policy = path;
    assert_int_equal(driver_check(&cfg, &err), BW_EUSAGE);
    unlink(path);
    if (!strstr(err.msg, "Old.outer: the outer step needs version 6 or later, but the class sets "
                         "version 5"))
        fail_msg("%s", err.msg);
#endif
}

static int cli_status_of(const char *cmdline)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s %s >/dev/null 2>&1", BELLOWS_BIN, cmdline);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int cli_status(const char *args)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s run %s --out /nonexistent/x >/dev/null 2>&1", BELLOWS_BIN, args);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_bad_island_flags_are_usage_errors(void **state)
{
    (void)state;
    Cluster c = cluster_default();
    c.workers = 6;
    c.topology = TOPO_ISLANDS;
    c.islands = 4;
    BwError err = {{0}};
    assert_int_equal(cluster_resolve(&c, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "--islands"));
    c.islands = 2;
    c.wan_bandwidth_Bps = 100; /* 800 bps, under 1 kbps */
    assert_int_equal(cluster_resolve(&c, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "--wan-bandwidth"));
    assert_int_equal(cli_status("--topology islands --islands 3 --workers 8"), 2);
    assert_int_equal(cli_status("--topology islands --wan-bandwidth 999bps"), 2);
    assert_int_equal(cli_status("--islands 2"), 2); /* without --topology islands */
    assert_int_equal(cli_status("--topology islands --allreduce tree"), 2); /* no closed form */
    assert_int_equal(cli_status("--topology islands --allreduce ps"), 2);
    assert_int_equal(cli_status("--topology islands --islands 2 --workers 4 --collectives analytic "
                                "--price-workers 1025"),
                     2); /* not K equal islands */
    char cmd[512];       /* a reproduction never writes into a folder that exists */
    snprintf(cmd, sizeof cmd, "%s reproduce diloco --out /tmp >/dev/null 2>&1", BELLOWS_BIN);
    int st = system(cmd);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 2);
}

/* `bellows reproduce diloco --report-only`: the verdicts follow the rows it reads. */
static void write_summary(const char *dir, const char *run, const char *bw, double wan, double peak,
                          double acc, double tta)
{
    char path[512];
    snprintf(path, sizeof path, "%s/runs/%s-%s", dir, run, bw);
    assert_int_equal(mkdir(path, 0777), 0);
    strcat(path, "/summary.json");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"final_test_accuracy\": %g, \"time_to_accuracy_s\": %g, \"sim_time_s\": 20, "
            "\"wan_bytes\": %g, \"wan_peak_step_bytes\": %g, \"steps\": 1000, "
            "\"averagings\": 2}\n",
            acc, tta, wan, peak);
    fclose(f);
}

static int report_says(const char *dir, double h500_acc, const char *what)
{
    static const char *const runs[] = {"sync",        "diloco-H1",   "diloco-H10",    "diloco-H50",
                                       "diloco-H100", "diloco-H500", "streaming-H100"};
    static const char *const bws[] = {"100Mbps", "1Gbps", "10Gbps"};
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf %s/runs && mkdir -p %s/runs", dir, dir);
    assert_int_equal(system(cmd), 0);
    for (int r = 0; r < 7; r++)
        for (int b = 0; b < 3; b++) {
            const int sync = r == 0, h500 = r == 5, st = r == 6;
            write_summary(dir, runs[r], bws[b],
                          sync   ? 1e9
                          : h500 ? 2e6
                                 : 1e7,
                          st ? 1e5 : 1e6, h500 ? h500_acc : 0.86,
                          sync ? 10
                          : st ? 0.9
                               : 1.0);
        }
    snprintf(cmd, sizeof cmd,
             "%s reproduce diloco --workload none --report-only --out %s >/dev/null 2>&1",
             BELLOWS_BIN, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "grep -qF '%s' %s/report.md", what, dir);
    return system(cmd) == 0;
}

static void test_reproduce_diloco_verdicts_follow_the_rows(void **state)
{
    (void)state;
    char dir[] = "/tmp/bellows-test-diloco-XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_true(report_says(dir, 0.85, "H=500 2000000: 500.0x less"));
    assert_true(report_says(dir, 0.85, "0.8500 against 0.8600 (-0.0100;"));
    assert_true(report_says(dir, 0.85, "**Verdict: holds.**"));
    assert_false(report_says(dir, 0.85, "not for the accuracy"));
    assert_true(report_says(dir, 0.80, "**Verdict: holds for the bytes, not for the accuracy.**"));
    assert_true(report_says(dir, 0.80, "1000000, Streaming DiLoCo"));
    assert_true(report_says(dir, 0.80, "10.0x less.")); /* the peak: 1e6 / 1e5 */
    assert_true(report_says(dir, 0.80, "fastest across islands streaming-H100, 0.9 s (11.1x"));
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* `bellows reproduce diloco --workload W --report-only` (diloco_wl.c): the same on its rows,
 * 4 runs x 2 island counts x 2 WANs; H100's bytes 100x fewer than sync's, H500's 500x; the
 * streaming run's peak 1e8 / stream_peak less than DiLoCo's. */
static int says(const char *dir, const char *what)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "grep -qF '%s' %s/report.md", what, dir);
    return system(cmd) == 0;
}

static void wl_report(const char *dir, double stream_peak)
{
    static const char *const runs[] = {"sync", "diloco-H100", "diloco-H500", "streaming-H100"};
    static const double wan[] = {1e10, 1e8, 2e7, 3e7}, tta[] = {10, 2, 3, 1};
    char cmd[1024], name[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s/runs && mkdir -p %s/runs", dir, dir);
    assert_int_equal(system(cmd), 0);
    for (int r = 0; r < 4; r++)
        for (int k = 2; k <= 4; k += 2)
            for (int b = 0; b < 2; b++) {
                snprintf(name, sizeof name, "%s-K%d", runs[r], k);
                write_summary(dir, name, b ? "10Gbps" : "1Gbps", wan[r], r == 3 ? stream_peak : 1e8,
                              0.86, tta[r]);
            }
    snprintf(cmd, sizeof cmd, "%s reproduce diloco --report-only --out %s >/dev/null 2>&1",
             BELLOWS_BIN, dir);
    assert_int_equal(system(cmd), 0);
}

static void test_reproduce_diloco_workload_verdicts_follow_the_rows(void **state)
{
    (void)state;
    char dir[] = "/tmp/bellows-test-dilocowl-XXXXXX";
    assert_non_null(mkdtemp(dir));
    wl_report(dir, 1e7);
    assert_true(says(dir, "priced as gpt2-small"));
    assert_true(says(dir, "2 islands, diloco-H100: 100000000 WAN bytes against "
                          "synchronous 10000000000, 100.0x less (H = 100)"));
    assert_true(says(dir, "500.0x less (H = 500)"));
    assert_true(says(dir, "Streaming DiLoCo 10000000, 10.0x less"));
    assert_false(says(dir, "does not hold")); /* bytes and peak hold */
    wl_report(dir, 5e7);
    assert_true(says(dir, "Streaming DiLoCo 50000000, 2.0x less"));
    assert_true(says(dir, "**Verdict: does not hold.**")); /* the peak's */
    assert_true(says(dir, "fastest across islands streaming-H100, 1 s (10.00x)"));
    assert_true(says(dir, "sooner in every scenario"));
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(cli_status_of("reproduce diloco --workload nosuch --out /tmp/x-none"), 2);
    assert_int_equal(cli_status_of("reproduce diloco --workload none --quick --out /tmp/x-none"),
                     2);
}

/* Runs the shell command tmpl, "{B}" in it the binary and "{D}" dir; returns its exit status. */
static int sh(const char *tmpl, const char *dir)
{
    char cmd[2048];
    size_t n = 0;
    for (const char *c = tmpl; *c && n + 600 < sizeof cmd; c++) {
        if (strncmp(c, "{B}", 3) == 0 || strncmp(c, "{D}", 3) == 0) {
            n += (size_t)snprintf(cmd + n, sizeof cmd - n, "%s", c[1] == 'B' ? BELLOWS_BIN : dir);
            c += 2;
        } else {
            cmd[n++] = *c;
        }
    }
    cmd[n] = '\0';
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define DIL "{B} reproduce diloco --workload none"

/* --report-only needs runs (a folder without any is refused, its report.md kept); on a partial
 * folder a run that never started is "not run", one that left its log "failed"; the folder is
 * refused without --resume, and --resume runs only what is missing (here one run, for real). */
static void test_reproduce_diloco_resumes_and_says_not_run(void **state)
{
    (void)state;
    static const char *const runs[] = {"sync",        "diloco-H1",   "diloco-H10",    "diloco-H50",
                                       "diloco-H100", "diloco-H500", "streaming-H100"};
    static const char *const bws[] = {"100Mbps", "1Gbps", "10Gbps"};
    char dir[] = "/tmp/bellows-test-dilocor-XXXXXX", path[512];
    assert_non_null(mkdtemp(dir));
    assert_int_equal(sh("echo mine > {D}/report.md && mkdir {D}/runs", dir), 0);
    assert_int_equal(sh(DIL " --report-only --out {D} 2>/dev/null", dir), 2);
    assert_int_equal(sh("grep -qx mine {D}/report.md", dir), 0); /* not written over */
    write_summary(dir, "sync", "100Mbps", 1e9, 1e6, 0.86, 10);
    assert_int_equal(sh("touch {D}/runs/diloco-H1-1Gbps.log", dir), 0);
    assert_int_equal(sh(DIL " --report-only --out {D} >/dev/null", dir), 0);
    assert_int_equal(sh("grep -qF '| diloco-H1 | 1Gbps | failed |' {D}/report.md", dir), 0);
    assert_int_equal(sh("grep -qF '| diloco-H1 | 100Mbps | not run |' {D}/report.md", dir), 0);
    assert_int_equal(sh("grep -qF 'diloco-H10,10Gbps,not run,' {D}/diloco.csv", dir), 0);
    assert_int_equal(sh(DIL " --out {D} 2>&1 | grep -q -- 'finish it with --resume'", dir), 0);
    for (int r = 0; r < 7; r++) /* every run done but H500 over 10 Gbps, which left its folder */
        for (int b = 0; b < 3; b++) {
            snprintf(path, sizeof path, "%s/runs/%s-%s/summary.json", dir, runs[r], bws[b]);
            if (!file_exists(path) && !(r == 5 && b == 2))
                write_summary(dir, runs[r], bws[b], 1e9, 1e6, 0.86, 10);
        }
    assert_int_equal(sh("mkdir {D}/runs/diloco-H500-10Gbps", dir), 0);
    assert_int_equal(sh(DIL " --resume --out {D} > {D}/out.txt", dir), 0);
    assert_int_equal(sh("grep -c 'done already (--resume)' {D}/out.txt | grep -qx 20", dir), 0);
    assert_int_equal(
        sh("grep -q '^| diloco-H500 | 10Gbps | 1000 | 2 | 1628320 |' {D}/report.md", dir),
        0); /* the run it made: the closed form's bytes, as the guide's table */
    assert_int_equal(sh("grep -qE 'failed|not run' {D}/diloco.csv", dir), 1);
    assert_int_equal(sh("rm -rf {D}", dir), 0);
}

int main(int argc, char **argv)
{
    blas_cpu_fix_kernels(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diloco_wan_bytes_are_the_closed_form),
        cmocka_unit_test(test_streaming_wan_bytes_are_the_quantised_fragments),
        cmocka_unit_test(test_sync_crosses_the_wan_every_step),
        cmocka_unit_test(test_one_island_is_one_replica),
        cmocka_unit_test(test_streaming_exchange_overlaps_tau_steps),
        cmocka_unit_test(test_analytic_islands_match_the_transfer_level),
        cmocka_unit_test(test_price_workers_on_islands_is_the_closed_form),
        cmocka_unit_test(test_diloco_on_a_workload_is_its_island_step_and_wan_exchange),
        cmocka_unit_test(test_streaming_fragments_are_the_workload_s_layers),
        cmocka_unit_test(test_flat_ring_crosses_the_wan),
        cmocka_unit_test(test_a_replay_prices_the_outer_overlap),
        cmocka_unit_test(test_plugin_outer_step_is_dilocos),
        cmocka_unit_test(test_python_outer_step_is_dilocos),
        cmocka_unit_test(test_bad_island_flags_are_usage_errors),
        cmocka_unit_test(test_reproduce_diloco_verdicts_follow_the_rows),
        cmocka_unit_test(test_reproduce_diloco_workload_verdicts_follow_the_rows),
        cmocka_unit_test(test_reproduce_diloco_resumes_and_says_not_run),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]); /* run one test alone */
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dataset_free(&TRAIN);
    dataset_free(&TEST);
    return rc;
}
