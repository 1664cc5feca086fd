/* cmd_bench.c: `bellows bench`, a throughput check as GRACE's scripts measure one: a few steady
 * steps of a workload priced on a cluster, printed as samples (images) per second per GPU and
 * in all, without training to a target. It is `bellows run` cut short: the small model trains
 * BENCH_STEPS steps of one epoch on a slice of Fashion-MNIST just large enough, the workload
 * prices each step (its compute, its tensors on the network, the policy's and the compressor's
 * costs), and the steps after BENCH_WARMUP are timed. Writes nothing unless --out. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "costs_band.h"
#include "dataset.h"
#include "driver.h"
#include "engine.h"
#include "outfile.h"
#include "results.h"
#include "run_args.h"
#include "train_args.h"
#include "wallclock.h"

#define BENCH_STEPS 12 /* steps priced */
#define BENCH_WARMUP                                                                               \
    2 /* of them, the first ones not timed (DDP's first buckets, a policy's                        \
         first decisions) */

static const char BENCH_ABOUT[] =
    "Prices a few steady steps of --workload on the cluster and prints its throughput in samples\n"
    "(images; sequences for the language models) per second, per GPU and in all, as GRACE's\n"
    "scripts measure it: a quick check against a real cluster's figure. The small model trains\n"
    "12 steps of a slice of Fashion-MNIST (only their dynamics drive the policy), each priced as\n"
    "the workload's step (fewer where 12 global batches exceed the set); all but the first 2\n"
    "are timed. No target, one evaluation at the end; writes nothing unless --out. The flags\n"
    "are bellows run's. --cost-band K (32 by default; off) adds the step time's and the\n"
    "throughput's band over K seeded draws of the cost profile's stated uncertainty.";

/* run's flags that bench refuses: it times BENCH_STEPS steps, with no target. */
static const char *const NOT_HERE[] = {"epochs",          "train-samples",  "test-samples",
                                       "target-accuracy", "stop-at-target", "eval-every"};

/* run's scenario, cut to BENCH_STEPS steps of one epoch and one evaluation of a batch. */
static int bench_setup(Flags *f, TrainArgs *ta, RunConfig *cfg, double *slowdown, int *band,
                       BwError *err)
{
    if (!f->run.workload)
        return bw_fail(err, BW_EUSAGE,
                       "--workload: bench prices a workload's steps; name one (bellows workloads)");
    for (size_t i = 0; i < sizeof NOT_HERE / sizeof *NOT_HERE; i++)
        if (cli_given(f->opts, f->n, f->set, NOT_HERE[i]))
            return bw_fail(err, BW_EUSAGE, "--%s: bench times %d steps, with no target",
                           NOT_HERE[i], BENCH_STEPS);
    int rc = costs_band_parse(f->run.cost_band ? f->run.cost_band : COSTS_BAND_DEFAULT, band, err);
    if (rc == BW_OK) rc = run_setup("bench", f, ta, cfg, slowdown, err);
    if (rc) return rc;
    const CostProfile *p = cfg->costs;
    if (*band && (!p || p->ideal || !p->has_uncertainty)) { /* as compare's (cmd_run.c) */
        if (f->run.cost_band)
            fprintf(stderr,
                    "bellows: note: --cost-band: the cost profile %s states no uncertainty "
                    "(sim/costs/README.md): no band\n",
                    p ? p->name : "ideal");
        *band = 0;
    }
    /* BENCH_STEPS steps, or as many as Fashion-MNIST's training set holds */
    const long step = (long)cfg->cluster.workers * cfg->tc.batch;
    const long steps =
        RUN_FASHION_MNIST_TRAIN / step < BENCH_STEPS ? RUN_FASHION_MNIST_TRAIN / step : BENCH_STEPS;
    if (steps <= BENCH_WARMUP)
        return bw_fail(err, BW_EUSAGE,
                       "--workers x --batch: %ld samples a step; bench takes at least %d steps "
                       "of the %d training samples (at most %d a step)",
                       step, BENCH_WARMUP + 1, RUN_FASHION_MNIST_TRAIN,
                       RUN_FASHION_MNIST_TRAIN / (BENCH_WARMUP + 1));
    ta->train_samples = (int)(steps * step);
    ta->test_samples = cfg->tc.batch;
    cfg->tc.epochs = 1;
    cfg->target_accuracy = 0;
    cfg->eval_every = 0;
    return BW_OK;
}

/* The timed steps' band (band >= 2 draws): their time re-priced first-order under the cost
 * profile's draws from rank 0's books (costs_band.h), as a step's time and a throughput. */
/* A rate with at least 4 significant digits and no exponent: a 7B model's 0.4123 samples/s as
 * well as 2038 in all (the CSV and JSON keep every digit). */
static const char *sig4(double v, char *buf, size_t n)
{
    int decimals = 0;
    if (isfinite(v) && fabs(v) > 0 && fabs(v) < 1000) decimals = 3 - (int)floor(log10(fabs(v)));
    if (decimals > 12) decimals = 12;
    snprintf(buf, n, "%.*f", decimals, v);
    return buf;
}

static void bench_print_band(const RunConfig *cfg, const RunResult *res, int band, long per_gpu,
                             int P)
{
    double books[COSTS_BOOKS] = {0}, lo, hi;
    const long n = res->n_steps, timed = n - BENCH_WARMUP;
    for (long i = BENCH_WARMUP; i < n; i++) {
        books[COSTS_BOOK_COMPUTE] += res->steps[i].compute_s;
        books[COSTS_BOOK_COMPRESSION] += res->steps[i].compress_s;
        books[COSTS_BOOK_COMMUNICATION] += res->steps[i].comm_s;
    }
    const double t = res->steps[n - 1].end_s - res->steps[BENCH_WARMUP - 1].end_s;
    costs_band_range(cfg->costs->uncertainty, band, t, books, &lo, &hi);
    lo /= (double)timed;
    hi /= (double)timed;
    char r[5][32];
    printf("cost band: %.4g s a step [%.4g,%.4g], %s samples/s per GPU [%s,%s], in all "
           "[%s,%s]\n(95%% of %d seeded draws of the cost profile's stated uncertainty, "
           "bellows costs %s; each\ntimed step's compute, compression and communication re-priced "
           "first-order, overlap held)\n",
           t / (double)timed, lo, hi, sig4((double)per_gpu * (double)timed / t, r[0], 32),
           sig4((double)per_gpu / hi, r[1], 32), sig4((double)per_gpu / lo, r[2], 32),
           sig4((double)per_gpu * P / hi, r[3], 32), sig4((double)per_gpu * P / lo, r[4], 32), band,
           cfg->costs->name);
}

/* The timed steps' throughput, from the steps' ends on rank 0; their band if band >= 2. */
static void bench_print(const RunConfig *cfg, const RunResult *res, int band)
{
    const long n = res->n_steps;
    const int P = cfg->price_workers ? cfg->price_workers : cfg->cluster.workers; /* priced */
    const long per_gpu = cfg->price_batch > 0 ? cfg->price_batch : cfg->tc.batch;
    if (n <= BENCH_WARMUP) {
        printf("# bench: only %ld step(s) ran; no throughput\n", n);
        return;
    }
    const double t = res->steps[n - 1].end_s - res->steps[BENCH_WARMUP - 1].end_s;
    const long timed = n - BENCH_WARMUP;
    const double step_s = t / (double)timed, rate = (double)per_gpu / step_s;
    printf("# bench: %ld steps timed after %d; %.4g s a step (rank 0), %ld samples per GPU a "
           "step\n",
           timed, BENCH_WARMUP, step_s, per_gpu);
    char r[2][32];
    printf("throughput: %s samples/s per GPU, %s samples/s in all (%d GPUs)\n",
           sig4(rate, r[0], sizeof r[0]), sig4(rate * P, r[1], sizeof r[1]), P);
    if (band >= 2) bench_print_band(cfg, res, band, per_gpu, P);
}

/* The peak memory per GPU of the workload under --sharding (issue 50; ZeRO's model, shard_mem.c)
 * and the activations' estimate (act_mem.c). The state is what run and bench refuse when it
 * does not fit (driver_check_shard_memory, exit 2); the activations are an estimate, so when
 * they alone take the peak over the GPU's memory the line says so and by how much. */
static void bench_print_memory(const RunConfig *cfg)
{
    ShardMemory m;
    if (!driver_shard_memory(cfg, cfg->sharding, &m)) return;
    const double act = driver_activation_bytes(cfg), peak = m.total + act;
    char of[64] = "";
    if (m.capacity > 0)
        snprintf(of, sizeof of, " of the %s's %.0f GB", cfg->cluster.gpu->name, m.capacity / 1e9);
    printf("memory: %.2f GB per GPU at peak%s with --sharding %s: training state %.2f "
           "(parameters %.2f, gradients %.2f, optimizer %.2f, gathered units %.2f) + "
           "activations %.2f (an estimate from the workload's layers, at %d samples per GPU)\n",
           peak / 1e9, of, driver_sharding_name(cfg->sharding), m.total / 1e9, m.params / 1e9,
           m.grads / 1e9, m.optimizer / 1e9, m.gathered / 1e9, act / 1e9,
           driver_price_batch(cfg, cfg->tc.batch));
    if (m.capacity > 0 && peak > m.capacity)
        printf("# memory: the state fits, but with the activations' estimate the peak exceeds "
               "the GPU by %.2f GB (a smaller --batch, or activation checkpointing)\n",
               (peak - m.capacity) / 1e9);
}

int cmd_bench(int argc, char **argv, BwError *err)
{
    Flags f;
    int rc = run_parse_flags("bellows bench", RUN_MODE_RUN, argc, argv, &f, err);
    f.bench = 1;
    if (rc == CLI_HELP) {
        CliOpt own[RUN_MAX_OPTS]; /* the flags bench takes */
        int n_own = 0;
        for (int i = 0; i < f.n; i++) {
            int refused = 0;
            for (size_t k = 0; k < sizeof NOT_HERE / sizeof *NOT_HERE; k++)
                refused |= strcmp(f.opts[i].name, NOT_HERE[k]) == 0;
            if (!refused) own[n_own++] = f.opts[i];
        }
        cli_print_help(stdout, "bellows bench --workload NAME [flags]", BENCH_ABOUT, own, n_own);
        run_flags_release(&f);
        return BW_OK;
    }
    TrainArgs ta;
    RunConfig cfg;
    Dataset train = {0}, test = {0};
    double slowdown[DRIVER_MAX_WORKERS];
    RunResult res;
    memset(&res, 0, sizeof res);
    double t0 = wallclock_s();
    int existed = 0, band = 0;
    if (rc == BW_OK) rc = bench_setup(&f, &ta, &cfg, slowdown, &band, err);
    if (rc == BW_OK && f.run.out) rc = run_check_out(f.run.out, f.run.force, err);
    if (rc == BW_OK) rc = run_load_data(&ta, &cfg, &train, &test, err);
    char one[1][SPEC_MAX_TEXT]; /* the policy, for its kind and its idle flags (as run's) */
    if (rc == BW_OK) snprintf(one[0], sizeof one[0], "%s", cfg.policy);
    if (rc == BW_OK) rc = run_check_compat("bench", &f, &cfg, one, 1, err);
    if (rc == BW_OK) rc = driver_check(&cfg, err);
    if (rc == BW_OK) rc = run_note_idle_flags(&f, &cfg, one, 1, err); /* issue 47 */
    if (rc == BW_OK)
        rc = engine_check_options(f.n_simgrid, f.simgrid_args, f.run.network_model, err);
    if (rc == BW_OK) rc = engine_init(f.n_simgrid, f.simgrid_args, f.run.network_model, err);
    existed = f.run.out && access(f.run.out, F_OK) == 0;
    if (rc == BW_OK && f.run.out) rc = outdir_create(f.run.out, err);
    if (rc) goto fail;
    run_print_scenario(&f, &cfg, &ta);
    run_print_policy(&cfg);
    fflush(stdout);
    if ((rc = driver_run(&cfg, &res, err))) goto fail;
    bench_print(&cfg, &res, band);
    bench_print_memory(&cfg);
    if (f.run.out) {
        RunMeta meta = {
            "bench", ta.model, f.run.network_model, f.run.collectives, wallclock_s() - t0,
            0,       band,     BENCH_WARMUP};
        if ((rc = results_write(f.run.out, &cfg, &meta, &res, err))) goto fail;
        printf("# wrote %s/summary.json, evals.csv and steps.csv\n", f.run.out);
    }
    if (strcmp(res.status, "diverged") == 0) rc = bw_fail(err, BW_ERUNTIME, "%s", res.message);
fail:
    if (rc) outdir_remove_if_new(f.run.out, existed);
    driver_result_free(&res);
    dataset_free(&train);
    dataset_free(&test);
    run_flags_release(&f);
    return rc;
}
