/* drivertest.h: the harness of the driver suites (test_driver.c, test_driver_policies.c):
 * synthetic data (512 training and 200 test samples), a small mlp run's configuration, a toy
 * workload profile, and
 * simulate(), which runs a configuration in a forked child (SimGrid allows one engine per
 * process) and brings its results back through shared memory. Header-only; every function is
 * static inline so each suite takes what it uses. */
#ifndef BELLOWS_DRIVERTEST_H
#define BELLOWS_DRIVERTEST_H

#include "testutil.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "driver.h"
#include "engine.h"

#define MAX_PARAMS 200000
#define MAX_STEPS  512

typedef struct {
    int rc;
    char status[32];
    char message[512];
    char never_exchanged[320]; /* RunResult's */
    double sim_time_s, compute_s, comm_s, wait_s, bytes, payload, final_acc, tta, replica_diff;
    double wan_bytes;
    double cross_node_bytes; /* per node and step (RunResult.cross_node_bytes_per_step) */
    long n_steps, averagings;
    int n_evals;
    double step_end[MAX_STEPS];
    double step_variance[MAX_STEPS];
    int step_averaged[MAX_STEPS];
    int step_batch[MAX_STEPS];
    int step_period[MAX_STEPS];
    double step_lr[MAX_STEPS];
    double step_loss[MAX_STEPS];
    double step_bytes[MAX_STEPS];
    double step_level[MAX_STEPS];
    double eval_acc[64];
    double eval_loss[64];
    double eval_time[64]; /* each evaluation's simulated time */
    float params[MAX_PARAMS];
} Shared;

static Dataset TRAIN, TEST;

static inline void make_data(void)
{
    BwError err;
    if (TRAIN.n) return;
    assert_int_equal(dataset_synthetic(&TRAIN, 512, 28, 28, 10, 0.5, 11, &err), BW_OK);
    assert_int_equal(dataset_synthetic(&TEST, 200, 28, 28, 10, 0.5, 11, &err), BW_OK);
}

static inline RunConfig base_config(int P, int batch, int epochs)
{
    make_data();
    RunConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.model = model_find("mlp");
    cfg.mc = model_config_default();
    model_config_set(&cfg.mc, cfg.model, "hidden", 1, (const int[]){32});
    cfg.train = &TRAIN;
    cfg.test = &TEST;
    cfg.tc.epochs = epochs;
    cfg.tc.batch = batch;
    cfg.tc.seed = 5;
    cfg.tc.sgd.momentum = 0.9;
    cfg.tc.lr.kind = LR_CONSTANT;
    cfg.tc.lr.base_lr = 0.05;
    cfg.cluster = cluster_default();
    cfg.cluster.workers = P;
    BwError err;
    assert_int_equal(cluster_resolve(&cfg.cluster, &err), BW_OK);
    cfg.algo = COLL_RING;
    cfg.backend = COLL_TRANSFER;
    cfg.compressor = "none";
    cfg.policy = "sync";
    cfg.label = "test";
    return cfg;
}

/* Runs cfg in a child; the result lands in shared memory. */
static const char *NETWORK_MODEL = "exact";

static inline Shared *simulate(RunConfig cfg)
{
    Shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        BwError err = {{0}};
        RunResult res;
        cfg.params_out = sh->params;
        int rc = engine_init(0, NULL, NETWORK_MODEL, &err);
        if (!rc) rc = driver_run(&cfg, &res, &err);
        sh->rc = rc;
        if (rc) {
            fprintf(stderr, "child: %s\n", err.msg);
            _exit(0);
        }
        snprintf(sh->status, sizeof sh->status, "%s", res.status);
        snprintf(sh->message, sizeof sh->message, "%s", res.message);
        sh->sim_time_s = res.sim_time_s;
        sh->compute_s = res.compute_s;
        sh->comm_s = res.communication_s;
        sh->wait_s = res.wait_s;
        sh->bytes = res.bytes_per_worker;
        sh->payload = res.payload_bytes_per_worker;
        sh->final_acc = res.final_accuracy;
        sh->tta = res.time_to_accuracy_s;
        sh->replica_diff = res.replica_max_diff;
        sh->wan_bytes = res.wan_bytes;
        sh->cross_node_bytes = res.cross_node_bytes_per_step;
        sh->n_steps = res.n_steps;
        sh->averagings = res.averagings;
        snprintf(sh->never_exchanged, sizeof sh->never_exchanged, "%s", res.never_exchanged);
        sh->n_evals = res.n_evals;
        for (long i = 0; i < res.n_steps && i < MAX_STEPS; i++) {
            sh->step_end[i] = res.steps[i].end_s;
            sh->step_variance[i] = res.steps[i].variance;
            sh->step_averaged[i] = res.steps[i].averaged;
            sh->step_batch[i] = res.steps[i].batch;
            sh->step_period[i] = res.steps[i].period;
            sh->step_lr[i] = res.steps[i].lr;
            sh->step_loss[i] = res.steps[i].loss;
            sh->step_bytes[i] = res.steps[i].bytes;
            sh->step_level[i] = res.steps[i].level_mean;
        }
        for (int i = 0; i < res.n_evals && i < 64; i++)
            sh->eval_acc[i] = res.evals[i].test_accuracy, sh->eval_loss[i] = res.evals[i].test_loss,
            sh->eval_time[i] = res.evals[i].sim_time_s;
        driver_result_free(&res);
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("simulation child failed (status %d)", st);
    return sh;
}

static inline void release(Shared *sh)
{
    munmap(sh, sizeof *sh);
}

/* A toy profile of three layers, one matrix each, 300, 200 and 100 x 1000 floats (1.2, 0.8 and
 * 0.4 MB), forward 1, 2, 3 and backward 2, 4, 6 GFLOP a sample. */
static inline Workload *toy_workload(void)
{
    static const int rows[3] = {300, 200, 100};
    static const double fwd[3] = {1e9, 2e9, 3e9}, bwd[3] = {2e9, 4e9, 6e9};
    Workload *w = calloc(1, sizeof *w);
    w->layers = calloc(3, sizeof *w->layers);
    w->tensors = calloc(3, sizeof *w->tensors);
    snprintf(w->name, sizeof w->name, "toy");
    w->n_layers = w->n_tensors = 3;
    for (int l = 0; l < 3; l++) {
        WorkloadLayer *L = &w->layers[l];
        snprintf(L->name, sizeof L->name, "layer%d", l);
        L->fwd_flops = fwd[l];
        L->bwd_flops = bwd[l];
        L->first_tensor = l;
        L->n_tensors = 1;
        WorkloadTensor *t = &w->tensors[l];
        snprintf(t->name, sizeof t->name, "layer%d.weight", l);
        t->layer = l;
        t->ndim = 2;
        t->shape[0] = t->rows = rows[l];
        t->shape[1] = t->cols = 1000;
        t->numel = (size_t)rows[l] * 1000;
        w->n_params += t->numel;
    }
    return w;
}

static inline void toy_free(Workload *w)
{
    free(w->layers);
    free(w->tensors);
    free(w);
}

#endif
