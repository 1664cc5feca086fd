/* cmd_train.c: `bellows train`, the single-process reference trainer on Fashion-MNIST (no
 * network, no simulated time). Prints a per-epoch table and writes summary.json and evals.csv
 * into --out atomically. Wall-clock figures (wall_s) are the only part of the output that
 * differs between two runs of the same command. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dataset.h"
#include "model.h"
#include "trainer.h"
#include "blas_cpu.h"
#include "cli.h"
#include "commands.h"
#include "outfile.h"
#include "train_args.h"
#include "wallclock.h"

#define MAX_EPOCHS TRAIN_MAX_EPOCHS

static struct {
    const char *out;
    int quiet;
} O;

static const CliOpt own_opts[] = {
    {"out", CLI_STRING, &O.out, NULL, NULL,
     "folder for summary.json and evals.csv (none: print only)", 0, 0, NULL, 0},
    {"quiet", CLI_FLAG, &O.quiet, NULL, NULL, "no progress line on stderr", 0, 0, NULL, 0},
};

static TrainArgs A;

typedef struct {
    EpochStats rows[MAX_EPOCHS];
    int n;
    double t0;
    int progress; /* stderr is a terminal and not --quiet */
} TrainLog;

static TrainLog LOG;

static void on_step(int epoch, int step, int steps, double loss, void *ctx)
{
    TrainLog *log = ctx;
    if (!log->progress) return;
    fprintf(stderr, "\r\033[K[train] epoch %d/%d  step %d/%d  loss %.4f  %.0fs", epoch, A.tc.epochs,
            step, steps, loss, wallclock_s() - log->t0);
    fflush(stderr);
}

static int on_epoch(const EpochStats *s, void *ctx)
{
    TrainLog *log = ctx;
    if (log->progress) fputs("\r\033[K", stderr);
    log->rows[log->n++] = *s;
    printf("%5d  %10.4f  %9.4f  %9.4f  %8.4f  %9.4g  %7.1f\n", s->epoch, s->train_loss,
           s->train_accuracy, s->test_loss, s->test_accuracy, s->lr, wallclock_s() - log->t0);
    fflush(stdout);
    return 0;
}

static int write_evals(const char *dir, const TrainLog *log, BwError *err)
{
    OutFile of;
    int rc = outfile_open(&of, dir, "evals.csv", err);
    if (rc) return rc;
    fputs("epoch,step,lr,train_loss,train_accuracy,test_loss,test_accuracy\n", of.f);
    for (int i = 0; i < log->n; i++) {
        const EpochStats *s = &log->rows[i];
        fprintf(of.f, "%d,%ld,%.9g,%.9g,%.9g,%.9g,%.9g\n", s->epoch, s->step, s->lr, s->train_loss,
                s->train_accuracy, s->test_loss, s->test_accuracy);
    }
    return outfile_commit(&of, err);
}

static int write_summary(const char *dir, const Model *m, const Dataset *train, const Dataset *test,
                         const TrainLog *log, const char *status, double wall_s, BwError *err)
{
    OutFile of;
    int rc = outfile_open(&of, dir, "summary.json", err);
    if (rc) return rc;
    double best = -1, final = -1;
    int best_epoch = 0;
    for (int i = 0; i < log->n; i++) {
        if (log->rows[i].test_accuracy > best) {
            best = log->rows[i].test_accuracy;
            best_epoch = log->rows[i].epoch;
        }
        final = log->rows[i].test_accuracy;
    }
    JsonW w;
    jsonw_begin(&w, of.f);
    jsonw_object(&w, NULL);
    jsonw_string(&w, "command", "train");
    jsonw_string(&w, "status", status);
    jsonw_string(&w, "model", A.model);
    jsonw_long(&w, "n_params", (long long)m->n_params);
    jsonw_double(&w, "flops_per_sample", model_flops_per_sample(m));
    jsonw_array(&w, "layers");
    for (int l = 0; l < m->n_layers; l++) {
        jsonw_object(&w, NULL);
        jsonw_string(&w, "name", m->layers[l].name);
        jsonw_long(&w, "rows", m->layers[l].rows);
        jsonw_long(&w, "cols", m->layers[l].cols);
        jsonw_end_object(&w);
    }
    jsonw_end_array(&w);
    jsonw_string(&w, "dataset", "fashion-mnist");
    jsonw_long(&w, "train_samples", train->n);
    jsonw_long(&w, "test_samples", test->n);
    jsonw_long(&w, "epochs", A.tc.epochs);
    jsonw_long(&w, "batch", A.tc.batch);
    jsonw_double(&w, "lr", A.tc.lr.base_lr);
    jsonw_string(&w, "lr_schedule", lr_kind_name(A.tc.lr.kind));
    jsonw_double(&w, "momentum", A.tc.sgd.momentum);
    jsonw_bool(&w, "nesterov", A.tc.sgd.nesterov);
    jsonw_double(&w, "weight_decay", A.tc.sgd.weight_decay);
    jsonw_long(&w, "seed", (long long)A.tc.seed);
    jsonw_long(&w, "epochs_done", log->n);
    jsonw_long(&w, "steps", log->n ? log->rows[log->n - 1].step : 0);
    if (log->n) {
        jsonw_double(&w, "final_test_accuracy", final);
        jsonw_double(&w, "best_test_accuracy", best);
        jsonw_long(&w, "best_epoch", best_epoch);
        jsonw_double(&w, "final_train_loss", log->rows[log->n - 1].train_loss);
    } else {
        jsonw_null(&w, "final_test_accuracy");
        jsonw_null(&w, "best_test_accuracy");
        jsonw_null(&w, "best_epoch");
        jsonw_null(&w, "final_train_loss");
    }
    jsonw_double(&w, "wall_s", wall_s);
    jsonw_end_object(&w);
    return outfile_commit(&of, err);
}

int cmd_train(int argc, char **argv, BwError *err)
{
    CliOpt opts[64];
    train_cli_init();
    const CliOpt *tables[] = {train_cli_opts, own_opts};
    const int counts[] = {train_cli_n_opts, (int)(sizeof own_opts / sizeof *own_opts)};
    int n_opts = cli_concat(opts, 64, tables, counts, 2);
    int set[64];
    int rc = cli_parse("bellows train", opts, n_opts, argc, argv, set, err);
    if (rc == CLI_HELP) {
        cli_print_help(stdout, "bellows train [flags]",
                       "Trains one model on Fashion-MNIST in this process (no network, no "
                       "simulated time),\nevaluating on the test set after every epoch. Writes "
                       "summary.json and evals.csv to --out.",
                       opts, n_opts);
        return BW_OK;
    }
    if (rc == BW_OK) rc = train_args_resolve(&A, set, err);
    if (rc) return rc;
    if (A.threads > 0) openblas_set_num_threads(A.threads);
    const TrainConfig tc = A.tc;

    Dataset train = {0}, test = {0};
    Model *m = NULL;
    double t0 = wallclock_s();
    if ((rc = dataset_load_fashion_mnist(A.data_dir, A.train_samples, A.test_samples, &train, &test,
                                         err)))
        goto fail;
    if (tc.batch > train.n) {
        rc = bw_fail(err, BW_EUSAGE, "--batch: %d is larger than the training set (%d samples)",
                     tc.batch, train.n);
        goto fail;
    }
    if ((rc = model_create(model_find(A.model), &A.mc, tc.seed, &m, err))) goto fail;
    /* Only now that the inputs are known good does the output folder appear. */
    if (O.out && (rc = outdir_create(O.out, err))) goto fail;

    printf("# bellows train: %s (%zu parameters, %.3g MFLOP/sample fwd+bwd), %d train / %d test "
           "samples, batch %d, lr %g, seed %ld, OpenBLAS %s\n",
           A.model, m->n_params, model_flops_per_sample(m) / 1e6, train.n, test.n, tc.batch,
           tc.lr.base_lr, (long)tc.seed, blas_cpu_core());
    printf("epoch  train_loss  train_acc  test_loss  test_acc         lr   wall_s\n");
    fflush(stdout);
    LOG.n = 0;
    LOG.t0 = t0;
    LOG.progress = !O.quiet && isatty(STDERR_FILENO);
    TrainHooks hooks = {.on_epoch = on_epoch, .on_step = on_step, .ctx = &LOG};
    int train_rc = train_single(m, &train, &test, &tc, &hooks, err);
    if (LOG.progress) fputs("\r\033[K", stderr);
    const char *status = train_rc == BW_OK ? "completed" : "diverged";
    if (train_rc && train_rc != BW_ERUNTIME) {
        rc = train_rc;
        goto fail;
    }
    if (O.out) {
        BwError werr = {{0}};
        if ((rc = write_evals(O.out, &LOG, &werr)) ||
            (rc =
                 write_summary(O.out, m, &train, &test, &LOG, status, wallclock_s() - t0, &werr))) {
            *err = werr;
            goto fail;
        }
        printf("# wrote %s/summary.json and %s/evals.csv\n", O.out, O.out);
    }
    rc = train_rc;
    model_free(m);
    dataset_free(&train);
    dataset_free(&test);
    return rc;
fail:
    model_free(m);
    dataset_free(&train);
    dataset_free(&test);
    return rc;
}

int cmd_models(int argc, char **argv, BwError *err)
{
    if (argc > 0 && strcmp(argv[0], "--help") != 0)
        return bw_fail(err, BW_EUSAGE, "models: takes no arguments");
    ModelConfig mc = model_config_default();
    printf("%-8s %10s %14s  %s\n", "model", "params", "MFLOP/sample", "description");
    for (const ModelOps *const *r = model_registry(); *r; r++) {
        Model *m = NULL;
        if (model_create(*r, &mc, 1, &m, err) != BW_OK) continue;
        printf("%-8s %10zu %14.3f  %s\n", (*r)->name, m->n_params, model_flops_per_sample(m) / 1e6,
               (*r)->help);
        model_free(m);
    }
    return BW_OK;
}
