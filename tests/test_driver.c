/* test_driver.c: simulated training end to end, on synthetic data (drivertest.h: one
 * simulation per forked child, since SimGrid allows one engine per process). Checked: `sync`
 * with P workers of batch b ends at the same model as single-process training with batch P*b;
 * replicas stay identical, and one shared replica gives the per-worker results; a sync step's
 * simulated time is compute plus the ring formula on a contention-free star, and DDP's schedule
 * the hand-computed max-plus; a profile's tensors are what moves and its costs do not change the
 * dynamics; the same seed, a mirror of the collectives and compute threads all give identical
 * results; stragglers show up as waiting; the TCP model is slower than the formula; periodic
 * evaluation takes the replicas' running statistics; divergence (a loss that is not finite, or
 * finite and DRIVER_DIVERGENCE_FACTOR x the first step's) is reported. The policies end to
 * end: test_driver_policies.c. */
#include "testutil.h"

#include <cblas.h>

#include "blas_cpu.h"

#include "drivertest.h"
#include "optim.h"

/* Two runs of what should be the same training: the same steps, evaluations, parameters, step
 * times and losses, bit for bit (each test adds what else it expects equal). */
static void expect_same_training(const Shared *a, const Shared *b)
{
    assert_int_equal(a->rc, BW_OK);
    assert_int_equal(b->rc, BW_OK);
    assert_int_equal(a->n_steps, b->n_steps);
    assert_int_equal(a->n_evals, b->n_evals);
    assert_memory_equal(a->params, b->params, sizeof a->params);
    assert_memory_equal(a->step_end, b->step_end, sizeof a->step_end);
    assert_memory_equal(a->step_loss, b->step_loss, sizeof a->step_loss);
}

static void test_sync_matches_single_process_training_with_the_global_batch(void **state)
{
    (void)state;
    const int P = 4, b = 16, epochs = 2;
    RunConfig cfg = base_config(P, b, epochs);
    Shared *sh = simulate(cfg);
    assert_int_equal(sh->rc, BW_OK);
    assert_string_equal(sh->status, "completed");
    assert_int_equal(sh->n_steps, epochs * (512 / (P * b)));

    Model *m = NULL;
    BwError err;
    assert_int_equal(model_create(cfg.model, &cfg.mc, cfg.tc.seed, &m, &err), BW_OK);
    TrainConfig tc = cfg.tc;
    tc.batch = P * b;
    assert_int_equal(train_single(m, &TRAIN, &TEST, &tc, NULL, &err), BW_OK);
    double e = rel_err(sh->params, m->params, m->n_params);
    if (e > 1e-4) fail_msg("simulated sync vs single process: relative error %.3g", e);
    /* and the training did something */
    assert_true(max_abs_diff(sh->params, m->params, m->n_params) < 1e-3);
    model_free(m);
    release(sh);
}

/* Per-worker replicas end bit-identical; a shared replica checks at every step that each
 * worker's decoded mean equals the one it applied (replica_max_diff), which is what keeps the
 * per-worker replicas identical (a dense step on a communicator that sums once stores its one
 * mean once: nothing to compare; test_shared_replica_gives_the_per_worker_results covers it). */
static void test_sync_replicas_stay_bit_identical(void **state)
{
    (void)state;
    const char *compressors[] = {"none", "powersgd", "topk"};
    const char *policies[] = {"sync", "static", "static"};
    for (int i = 0; i < 6; i++) {
        RunConfig cfg = base_config(3, 16, 1);
        cfg.compressor = compressors[i % 3];
        cfg.policy = policies[i % 3];
        cfg.per_worker_replicas = i >= 3;
        Shared *sh = simulate(cfg);
        assert_int_equal(sh->rc, BW_OK);
        if (sh->replica_diff != 0)
            fail_msg("%s (%s replicas): replicas differ by %g", compressors[i % 3],
                     cfg.per_worker_replicas ? "per-worker" : "shared", sh->replica_diff);
        release(sh);
    }
}

/* Gradient mode's one shared replica (parameters, optimiser, one update per step) and scratch
 * per computing thread give what every worker keeping its own replica gives, bit for bit: plain
 * and costed steps, dense and compressed (error feedback, a compressor's own state), with and
 * without the pool, and a model with state of its own (batch norm's running statistics, kept
 * per worker). */
static void test_shared_replica_gives_the_per_worker_results(void **state)
{
    (void)state;
    const struct {
        const char *policy, *compressor, *model;
        int threads, ddp;
    } cases[] = {
        {"sync", "powersgd", "mlp", 1, 0},
        {"static:level=2", "powersgd", "mlp", 2, 0},
        {"accordion:interval=1", "topk", "mlp", 2, 1},
        {"sync", "none", "resnet", 1, 0},
    };
    /* under valgrind (scripts/valgrind.sh) the first case, whose paths the others share: the
     * rest is an end-to-end property, checked here and under ASan */
    const size_t n = getenv("BELLOWS_VALGRIND") ? 1 : sizeof cases / sizeof *cases;
    for (size_t k = 0; k < n; k++) {
        RunConfig cfg = base_config(3, 16, 2);
        cfg.policy = cases[k].policy;
        cfg.compressor = cases[k].compressor;
        cfg.compute_threads = cases[k].threads;
        cfg.eval_every = 4;
        if (cases[k].ddp) cfg.overlap = OVERLAP_DDP;
        if (strcmp(cases[k].model, "mlp") != 0) {
            cfg.model = model_find(cases[k].model);
            cfg.mc = model_config_default();
            model_config_set(&cfg.mc, cfg.model, "widths", 2, (const int[]){4, 8});
            cfg.tc.epochs = 1;
        }
        Shared *a = simulate(cfg);
        cfg.per_worker_replicas = 1;
        Shared *b = simulate(cfg);
        expect_same_training(a, b);
        assert_true(a->n_steps > 4);
        assert_true(a->replica_diff == 0 && b->replica_diff == 0);
        assert_memory_equal(a->step_bytes, b->step_bytes, sizeof a->step_bytes);
        assert_memory_equal(a->eval_acc, b->eval_acc, sizeof a->eval_acc);
        release(a);
        release(b);
    }
}

/* On a star without contention the dense allreduce of n floats takes the ring formula
 * 2(p-1) (2 l) + 2 (p-1)/p (4 n) / B, with n/p rounded up to whole floats (each of the ring's
 * 2(p-1) rounds waits for the largest chunk), and compute flops * b / rate; a step is their
 * sum. */
static void test_sync_step_time_is_compute_plus_ring_formula(void **state)
{
    (void)state;
    int Ps[] = {2, 3, 5};
    for (int k = 0; k < 3; k++) {
        int P = Ps[k];
        RunConfig cfg = base_config(P, 8, 1);
        cfg.cluster.bandwidth_Bps = 1.25e9;
        cfg.cluster.latency_s = 7e-6;
        Shared *sh = simulate(cfg);
        assert_int_equal(sh->rc, BW_OK);
        Model *m = NULL;
        BwError err;
        assert_int_equal(model_create(cfg.model, &cfg.mc, 1, &m, &err), BW_OK);
        double compute = model_flops_per_sample(m) * 8 / cfg.cluster.gpu_flops;
        double chunk_bytes = 4.0 * (double)((m->n_params + (size_t)P - 1) / (size_t)P);
        double ring = 2.0 * (P - 1) * (2 * 7e-6 + chunk_bytes / 1.25e9);
        double step = sh->step_end[1] - sh->step_end[0];
        if (fabs(step - (compute + ring)) > 1e-6 * (compute + ring))
            fail_msg("P=%d: step %.12g s, compute %.12g + ring %.12g = %.12g", P, step, compute,
                     ring, compute + ring);
        assert_true(fabs(sh->compute_s - compute * sh->n_steps) < 1e-9 * sh->sim_time_s + 1e-12);
        /* unequal ring chunks (n not a multiple of p) end ranks a few ns apart */
        assert_true(sh->wait_s < 1e-4 * sh->sim_time_s);
        model_free(m);
        release(sh);
    }
}

/* DDP by hand on the toy (4 workers, batch 8, analytic ring on a 10 Gbps star): in reverse order
 * layer 2's 0.4 MB and layer 1's 0.8 MB fill the first bucket (1 MiB cap) after layer 1's
 * backward; layer 0's 1.2 MB is the second, full after the whole backward. The first bucket's
 * allreduce overlaps layer 0's backward; the second starts when both are done; the optimiser
 * follows. Without overlap: compute, then one allreduce of all 2.4 MB, then the optimiser. */
static void test_ddp_schedule_is_the_hand_computed_max_plus(void **state)
{
    (void)state;
    Workload *wl = toy_workload();
    for (int ddp = 0; ddp <= 1; ddp++) {
        RunConfig cfg = base_config(4, 8, 1);
        cfg.backend = COLL_ANALYTIC;
        cfg.workload = wl;
        cfg.overlap = ddp ? OVERLAP_DDP : OVERLAP_NONE;
        Shared *sh = simulate(cfg);
        assert_int_equal(sh->rc, BW_OK);
        const double rate = cfg.cluster.gpu_flops, P = 4;
        const double a = 2 * cfg.cluster.latency_s, b = 1 / cfg.cluster.bandwidth_Bps;
#define RING(bytes) (2 * (P - 1) * a + 2 * (P - 1) / P * (bytes)*b)
        double fwd = 6e9 * 8 / rate, bwd2 = 6e9 * 8 / rate, bwd1 = 4e9 * 8 / rate,
               bwd0 = 2e9 * 8 / rate;
        double opt_flops, opt_bytes;
        sgd_cost(wl->n_params, &cfg.tc.sgd, &opt_flops, &opt_bytes);
        double opt = fmax(opt_flops / rate, opt_bytes / cfg.cluster.gpu_mem_Bps);
        double step;
        if (ddp) {
            double ready0 = fwd + bwd2 + bwd1, end0 = ready0 + RING(1.2e6);
            double backward_end = ready0 + bwd0;
            double end1 = fmax(backward_end, end0) + RING(1.2e6);
            step = end1 + opt;
        } else {
            step = fwd + bwd2 + bwd1 + bwd0 + RING(2.4e6) + opt;
        }
#undef RING
        if (fabs(sh->step_end[0] - step) > 1e-9 * step ||
            fabs(sh->step_end[1] - sh->step_end[0] - step) > 1e-9 * step)
            fail_msg("overlap %s: steps end at %.12g and %.12g s, expected every %.12g s",
                     ddp ? "ddp" : "none", sh->step_end[0], sh->step_end[1], step);
        assert_true(fabs(sh->bytes / sh->n_steps - 2 * (P - 1) / P * 2.4e6) < 1e-6 * 2.4e6);
        release(sh);
    }
    toy_free(wl);
}

/* The bytes are the real model's: with ResNet-50's profile, sync and no overlap, every step's
 * payload is its 25,557,032 parameters in fp32, whatever the small model's size; periodic
 * averaging moves them too. */
static void test_a_profile_s_tensors_are_what_moves(void **state)
{
    (void)state;
    Workload *wl = NULL;
    BwError err;
    assert_int_equal(workload_load("resnet50", "--workload", &wl, &err), BW_OK);
    assert_int_equal((long)wl->n_params, 25557032L);
    const char *policies[] = {"sync", "cpsgd:period=4"};
    int n = getenv("BELLOWS_VALGRIND") ? 1 : 2; /* the memory is checked by one */
    for (int k = 0; k < n; k++) {
        RunConfig cfg = base_config(4, 8, 1);
        cfg.backend = COLL_ANALYTIC;
        cfg.workload = wl;
        cfg.policy = policies[k];
        Shared *sh = simulate(cfg);
        assert_int_equal(sh->rc, BW_OK);
        long moves = k == 0 ? sh->n_steps : sh->averagings;
        assert_true(moves > 0);
        if (sh->payload != 25557032.0 * 4 * (double)moves)
            fail_msg("%s: %.17g payload bytes over %ld, expected 25557032 x 4 each", policies[k],
                     sh->payload, moves);
        release(sh);
    }
    workload_free(wl);
}

/* A profile changes the prices, not the dynamics: the same losses and final parameters as the
 * uncosted run with analytic collectives, bit for bit (the real reduction runs on a zero-time
 * communicator, which sums in rank order as the analytic backend does; a ring sums in another
 * order, so a transfer-level run differs from it in the last bits). */
static void test_costs_do_not_change_the_dynamics(void **state)
{
    (void)state;
    /* end-to-end properties, slow under valgrind (scripts/valgrind.sh); their code paths'
     * memory is checked there by the shorter tests, and here under ASan */
    if (getenv("BELLOWS_VALGRIND")) skip();
    Workload *wl = NULL;
    BwError err;
    assert_int_equal(workload_load("resnet18-cifar", "--workload", &wl, &err), BW_OK);
    const char *policies[] = {"accordion:interval=1", "adacomm"};
    /* under valgrind one policy checks the memory; both check the identity */
    int n = getenv("BELLOWS_VALGRIND") ? 1 : 2;
    for (int k = 0; k < n; k++) {
        RunConfig cfg = base_config(4, 16, 2);
        cfg.compressor = "powersgd";
        cfg.policy = policies[k];
        cfg.backend = COLL_ANALYTIC;
        Shared *a = simulate(cfg);
        cfg.workload = wl;
        cfg.overlap = OVERLAP_DDP;
        Shared *b = simulate(cfg);
        assert_int_equal(a->rc, BW_OK);
        assert_int_equal(b->rc, BW_OK);
        assert_int_equal(a->n_steps, b->n_steps);
        assert_memory_equal(a->params, b->params, sizeof a->params);
        assert_memory_equal(a->step_loss, b->step_loss, sizeof a->step_loss);
        assert_memory_equal(a->step_batch, b->step_batch, sizeof a->step_batch);
        assert_true(b->sim_time_s > 10 * a->sim_time_s); /* a ResNet-18 costs far more */
        release(a);
        release(b);
    }
    workload_free(wl);
}

static void test_same_seed_gives_identical_results(void **state)
{
    (void)state;
    RunConfig cfg = base_config(4, 16, 2);
    cfg.compressor = "powersgd";
    cfg.policy = "accordion:interval=1";
    cfg.jitter_sigma = 0.3;
    Shared *a = simulate(cfg), *b = simulate(cfg);
    assert_int_equal(a->rc, BW_OK);
    assert_int_equal(a->n_steps, b->n_steps);
    assert_memory_equal(a->params, b->params, sizeof a->params);
    assert_memory_equal(a->step_end, b->step_end, sizeof a->step_end);
    assert_true(a->sim_time_s == b->sim_time_s && a->bytes == b->bytes);
    release(a);
    release(b);
}

/* A ring or analytic run reduces its data on a mirror first and replays the messages after
 * (driver.c run_mirror_create); RunConfig.direct_collectives does both together, as the other
 * algorithms do. The two give the same parameters, losses, evaluations, simulated times and
 * bytes, bit for bit: both backends, compressors with an allreduce and an allgather, a
 * periodic policy, workers out of step (jitter, a straggler), flows that share links, and with
 * the next gradients early on a pool. */
static void test_a_mirror_gives_the_direct_collectives_results(void **state)
{
    (void)state;
    const struct {
        const char *policy, *compressor;
        CollBackend backend;
        int threads, fat_tree, workers;
    } cases[] = {
        {"static:level=1", "powersgd", COLL_TRANSFER, 1, 0, 4},
        {"accordion:interval=1", "topk", COLL_TRANSFER, 2, 1, 4},
        {"static:level=1", "powersgd", COLL_ANALYTIC, 2, 0, 4},
        {"cpsgd:period=3", "none", COLL_TRANSFER, 2, 0, 4},
        /* the averaging of a group of four workers and a partial one, on the pool */
        {"adpsgd", "none", COLL_ANALYTIC, 2, 0, 6},
    };
    const size_t n = getenv("BELLOWS_VALGRIND") ? 1 : sizeof cases / sizeof *cases;
    for (size_t k = 0; k < n; k++) {
        RunConfig cfg = base_config(cases[k].workers, 64 / cases[k].workers, 2);
        cfg.policy = cases[k].policy;
        cfg.compressor = cases[k].compressor;
        cfg.backend = cases[k].backend;
        cfg.compute_threads = cases[k].threads;
        cfg.eval_every = 5;
        cfg.jitter_sigma = 0.3;
        cfg.slowdown = (const double[]){1, 1.5, 1, 1, 1, 1.2};
        if (cases[k].fat_tree) {
            cfg.cluster.topology = TOPO_FAT_TREE;
            cfg.cluster.leaf_size = 2;
            cfg.cluster.oversubscription = 4;
            BwError err;
            assert_int_equal(cluster_resolve(&cfg.cluster, &err), BW_OK);
        }
        Shared *a = simulate(cfg);
        cfg.direct_collectives = 1;
        Shared *b = simulate(cfg);
        expect_same_training(a, b);
        assert_true(a->n_steps > 8);
        assert_memory_equal(a->step_bytes, b->step_bytes, sizeof a->step_bytes);
        assert_memory_equal(a->step_variance, b->step_variance, sizeof a->step_variance);
        assert_memory_equal(a->eval_acc, b->eval_acc, sizeof a->eval_acc);
        assert_true(a->comm_s == b->comm_s && a->wait_s == b->wait_s && a->bytes == b->bytes);
        release(a);
        release(b);
    }
}

/* --compute-threads: the workers' gradients computed on a pool give the sequential run's
 * results bit for bit, in gradient mode (with the norms Accordion reads) and periodic mode. */
static void test_compute_threads_give_the_sequential_results(void **state)
{
    (void)state;
    /* the fourth: the transfer-level ring, whose next gradients go on the pool while its
     * messages are simulated; the fifth: the same with batch norm, whose running statistics the
     * early gradients must not move before an evaluation has read them; the sixth: TopK on
     * the ring; the seventh: a costed step (its next gradients go on the pool while the
     * actors price it) of the batch-norm model in periodic mode, evaluated every 3 steps */
    const char *policies[] = {"sync", "accordion:interval=1", "cpsgd:period=4", "sync",
                              "sync", "accordion:interval=1", "cpsgd:period=2"};
    /* under valgrind (scripts/valgrind.sh), which runs threads one at a time, the first policy
     * is enough to check the pool's memory; the identity needs real threads */
    int n_policies = getenv("BELLOWS_VALGRIND") ? 1 : 7;
    static Dataset big_test;
    if (!big_test.n)
        assert_int_equal(dataset_synthetic(&big_test, 1250, 28, 28, 10, 0.5, 12, NULL), BW_OK);
    for (int i = 0; i < n_policies; i++) {
        RunConfig cfg = base_config(4, 16, 2);
        cfg.test = &big_test; /* evaluations in several chunks, the last one partial */
        /* PowerSGD's and TopK's math between their collectives on the pool too (a costed
         * step's zero-time communicator, a mirror) */
        cfg.compressor = i == 1 ? "powersgd" : i == 5 ? "topk" : "none";
        cfg.policy = policies[i];
        /* the costed step meets before its gradients are waited for: the leader waits them */
        if (i == 1) cfg.overlap = OVERLAP_DDP;
        cfg.backend = i >= 3 ? COLL_TRANSFER : COLL_ANALYTIC;
        cfg.eval_every = 5;
        /* jobs long enough that one read before it is done would see an unfinished gradient */
        if (!getenv("BELLOWS_VALGRIND")) /* valgrind runs threads one at a time anyway */
            model_config_set(&cfg.mc, cfg.model, "hidden", 1, (const int[]){128});
        if (i == 6) cfg.overlap = OVERLAP_TENSOR;
        if (i == 4 || i == 6) {
            cfg.model = model_find("resnet");
            cfg.mc = model_config_default();
            model_config_set(&cfg.mc, cfg.model, "widths", 2, (const int[]){4, 8});
            cfg.eval_every = 3;
        }
        cfg.compute_threads = 1;
        Shared *a = simulate(cfg);
        cfg.compute_threads = 2;
        Shared *b = simulate(cfg);
        cfg.compute_threads = 3; /* fewer threads than workers, and not a divisor */
        Shared *c = simulate(cfg);
        assert_int_equal(a->rc, BW_OK);
        assert_true(a->n_steps > 8);
        for (Shared *x = b; x; x = x == b ? c : NULL) {
            expect_same_training(a, x);
            assert_memory_equal(a->step_batch, x->step_batch, sizeof a->step_batch);
            assert_memory_equal(a->step_variance, x->step_variance, sizeof a->step_variance);
            assert_memory_equal(a->eval_acc, x->eval_acc, sizeof a->eval_acc);
            assert_memory_equal(a->eval_loss, x->eval_loss, sizeof a->eval_loss);
        }
        release(a);
        release(b);
        release(c);
    }
}

static void test_a_slow_gpu_makes_the_others_wait(void **state)
{
    (void)state;
    static const double slow[4] = {1, 3, 1, 1};
    RunConfig cfg = base_config(4, 8, 1);
    /* 23860 parameters: equal ring chunks, so ranks finish together */
    model_config_set(&cfg.mc, cfg.model, "hidden", 1, (const int[]){30});
    Shared *fast = simulate(cfg);
    cfg.slowdown = slow;
    Shared *sh = simulate(cfg);
    assert_int_equal(sh->rc, BW_OK);
    /* workers 0, 2 and 3 wait 2 compute-times per step, worker 1 none: mean 6/4 */
    double per_step = fast->compute_s / fast->n_steps;
    double want_wait = 6.0 / 4.0 * per_step * sh->n_steps;
    if (fabs(sh->wait_s - want_wait) > 1e-6 * want_wait)
        fail_msg("mean wait %.9g s, expected %.9g s (compute %.9g s per step, %ld steps)",
                 sh->wait_s, want_wait, per_step, sh->n_steps);
    assert_true(sh->sim_time_s > fast->sim_time_s);
    release(fast);
    release(sh);
}

/* SimGrid's TCP-like model (latency x13.01, bandwidth x0.97, window cap) is slower than the
 * formula that the exact model matches. */
static void test_tcp_network_model_is_slower_than_the_formula(void **state)
{
    (void)state;
    RunConfig cfg = base_config(4, 8, 1);
    model_config_set(&cfg.mc, cfg.model, "hidden", 1, (const int[]){30});
    Shared *exact = simulate(cfg);
    NETWORK_MODEL = "tcp";
    Shared *tcp = simulate(cfg);
    NETWORK_MODEL = "exact";
    assert_int_equal(tcp->rc, BW_OK);
    double e = exact->step_end[1] - exact->step_end[0], t = tcp->step_end[1] - tcp->step_end[0];
    if (!(t > 1.03 * e)) fail_msg("tcp step %.9g s, exact %.9g s", t, e);
    /* the training itself does not depend on the network model */
    assert_memory_equal(exact->params, tcp->params, sizeof exact->params);
    release(exact);
    release(tcp);
}

/* Periodic mode evaluates a model of the replicas' mean parameters and mean batch-norm running
 * statistics (each replica keeps its own). With one worker that mean is the replica itself, so
 * cpsgd's evaluations equal sync's, which evaluate the replica: an evaluated model left with
 * its initial statistics (mean 0, variance 1) would score otherwise. */
static void test_periodic_evaluation_takes_the_replicas_running_statistics(void **state)
{
    (void)state;
    /* slow under valgrind; its memory is checked under ASan */
    if (getenv("BELLOWS_VALGRIND")) skip();
    RunConfig cfg = base_config(1, 32, 2);
    cfg.model = model_find("resnet");
    cfg.mc = model_config_default();
    model_config_set(&cfg.mc, cfg.model, "widths", 2, (const int[]){4, 8});
    Shared *a = simulate(cfg);
    cfg.policy = "cpsgd:period=2";
    Shared *b = simulate(cfg);
    assert_int_equal(a->rc, BW_OK);
    assert_int_equal(b->rc, BW_OK);
    assert_memory_equal(a->params, b->params, sizeof a->params); /* the same training */
    assert_int_equal(a->n_evals, b->n_evals);
    assert_true(a->n_evals >= 3);
    assert_true(a->eval_acc[a->n_evals - 1] > 0.3); /* it learns; chance is 0.1 */
    assert_memory_equal(a->eval_acc, b->eval_acc, sizeof a->eval_acc);
    release(a);
    release(b);
}

static void test_divergence_is_reported(void **state)
{
    (void)state;
    RunConfig cfg = base_config(2, 16, 2);
    cfg.tc.lr.base_lr = 1e6;
    Shared *sh = simulate(cfg);
    assert_int_equal(sh->rc, BW_OK);
    assert_string_equal(sh->status, "diverged");
    release(sh);
}

/* A loss that stays finite but climbs past DRIVER_DIVERGENCE_FACTOR x the first step's is a
 * divergence too, and stops the run there; a sane run's is not. */
static void test_a_finite_exploding_loss_is_a_divergence(void **state)
{
    (void)state;
    RunConfig cfg = base_config(2, 16, 2);
    cfg.tc.lr.base_lr = 3;
    Shared *sh = simulate(cfg);
    assert_int_equal(sh->rc, BW_OK);
    assert_string_equal(sh->status, "diverged");
    if (!strstr(sh->message, "exceeds")) fail_msg("not the finite rule: %s", sh->message);
    assert_true(sh->n_steps < 32);
    release(sh);
}

int main(int argc, char **argv)
{
    blas_cpu_fix_kernels(argv); /* the kernels bellows itself uses */
    /* one OpenBLAS thread, as bellows run sets it (run_args.c): with the default (the cores),
     * the compute pool's threads each called a threaded sgemm, and on two cores the batch-norm
     * cases of the compute-threads test took 9x as long, OpenBLAS's threads spinning */
    openblas_set_num_threads(1);
    if (argc > 1) cmocka_set_test_filter(argv[1]); /* run one test alone */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sync_matches_single_process_training_with_the_global_batch),
        cmocka_unit_test(test_sync_replicas_stay_bit_identical),
        cmocka_unit_test(test_shared_replica_gives_the_per_worker_results),
        cmocka_unit_test(test_sync_step_time_is_compute_plus_ring_formula),
        cmocka_unit_test(test_ddp_schedule_is_the_hand_computed_max_plus),
        cmocka_unit_test(test_a_profile_s_tensors_are_what_moves),
        cmocka_unit_test(test_costs_do_not_change_the_dynamics),
        cmocka_unit_test(test_same_seed_gives_identical_results),
        cmocka_unit_test(test_compute_threads_give_the_sequential_results),
        cmocka_unit_test(test_a_mirror_gives_the_direct_collectives_results),
        cmocka_unit_test(test_a_slow_gpu_makes_the_others_wait),
        cmocka_unit_test(test_tcp_network_model_is_slower_than_the_formula),
        cmocka_unit_test(test_periodic_evaluation_takes_the_replicas_running_statistics),
        cmocka_unit_test(test_divergence_is_reported),
        cmocka_unit_test(test_a_finite_exploding_loss_is_a_divergence),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dataset_free(&TRAIN);
    dataset_free(&TEST);
    return rc;
}
