/* bench_driver.c: the share of wall time a simulated run spends outside the models' own math
 * (SimGrid, collectives, compressors, policies, bookkeeping), and the step rate, for the default
 * scenario (Fashion-MNIST mlp on a 10Gbps star, PowerSGD) at a given worker count.
 *   bench_driver POLICY WORKERS EPOCHS [transfer|analytic [COMPUTE_THREADS]]   prints one
 * key=value line (model_s sums the threads' model seconds, compress_s the workers' compressor
 * math, policy_s the policies' math on the gradients; outside_share: 1 - model_s / wall_s,
 * own_share: 1 - (model_s + compress_s + policy_s) / wall_s, with 1 thread) */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas_cpu.h"
#include "driver.h"
#include "engine.h"
#include "wallclock.h"

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 6) {
        fprintf(stderr, "usage: bench_driver POLICY WORKERS EPOCHS [transfer|analytic "
                        "[COMPUTE_THREADS]]\n");
        return 2;
    }
    blas_cpu_fix_kernels(argv);
    openblas_set_num_threads(1);
    BwError err;
    Dataset train = {0}, test = {0};
    if (dataset_load_fashion_mnist(DATASET_DEFAULT_DIR, 0, 0, &train, &test, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    RunConfig cfg = {0};
    cfg.model = model_find("mlp");
    cfg.mc = model_config_default();
    cfg.train = &train;
    cfg.test = &test;
    cfg.tc.epochs = atoi(argv[3]);
    cfg.tc.batch = 64;
    cfg.tc.seed = 1;
    cfg.tc.sgd.momentum = 0.9;
    cfg.tc.lr.base_lr = 0.02;
    cfg.cluster = cluster_default();
    cfg.cluster.workers = atoi(argv[2]);
    if (cluster_resolve(&cfg.cluster, &err)) return 2;
    cfg.algo = COLL_RING;
    cfg.backend = argc >= 5 && strcmp(argv[4], "analytic") == 0 ? COLL_ANALYTIC : COLL_TRANSFER;
    cfg.compressor = "powersgd";
    cfg.policy = argv[1];
    cfg.label = "bench";
    cfg.compute_threads = argc == 6 ? atoi(argv[5]) : 1;
    RunResult res;
    double t0 = wallclock_s();
    if (engine_init(0, NULL, "exact", &err) || driver_run(&cfg, &res, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    double wall = wallclock_s() - t0;
    const double algo_s = res.wall_model_s + res.wall_compress_s + res.wall_policy_s;
    printf("backend=%s policy=%s workers=%d threads=%d steps=%ld wall_s=%.3f model_s=%.3f "
           "compress_s=%.3f policy_s=%.3f outside_share=%.4f own_share=%.4f "
           "own_with_policy_share=%.4f steps_per_s=%.1f accuracy=%.4f\n",
           cfg.backend == COLL_ANALYTIC ? "analytic" : "transfer", argv[1], cfg.cluster.workers,
           cfg.compute_threads, res.n_steps, wall, res.wall_model_s, res.wall_compress_s,
           res.wall_policy_s, 1 - res.wall_model_s / wall, 1 - algo_s / wall,
           1 - algo_s / wall + res.wall_policy_s / wall, res.n_steps / wall, res.final_accuracy);
    driver_result_free(&res);
    dataset_free(&train);
    dataset_free(&test);
    return 0;
}
