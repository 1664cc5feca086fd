/* cmd_train.c: `bellows train`, the single-process reference trainer on Fashion-MNIST (no
 * network, no simulated time). Prints a per-epoch table and writes summary.json and evals.csv
 * into --out atomically. Wall-clock figures (wall_s) are the only part of the output that
 * differs between two runs of the same command. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset.h"
#include "xalloc.h"
#include "model.h"
#include "trainer.h"
#include "blas_cpu.h"
#include "cli.h"
#include "commands.h"
#include "outfile.h"
#include "train_args.h"
#include "wallclock.h"

#define MAX_EPOCHS TRAIN_MAX_EPOCHS

/* The command's flag values: the shared training flags and its own. */
typedef struct {
    TrainFlags train;
    const char *out;
    int quiet;
} TrainCmdFlags;

#define OWN_OPT(name, kind, field, ...)                                                            \
    {                                                                                              \
        name, kind, NULL, __VA_ARGS__, offsetof(TrainCmdFlags, field)                              \
    }
static const CliOpt own_opts[] = {
    OWN_OPT("out", CLI_STRING, out, NULL, NULL,
            "folder for summary.json and evals.csv; without it nothing is written, the results are "
            "printed only (a path: --out none is a folder)",
            0, 0, NULL, 0),
    OWN_OPT("quiet", CLI_FLAG, quiet, NULL, NULL, "no progress line on stderr", 0, 0, NULL, 0),
};
#undef OWN_OPT

typedef struct {
    EpochStats rows[MAX_EPOCHS];
    int n;
    double t0;
    int epochs;   /* of the run, for the progress line */
    int progress; /* stderr is a terminal and not --quiet */
} TrainLog;

static void on_step(int epoch, int step, int steps, double loss, void *ctx)
{
    TrainLog *log = ctx;
    if (!log->progress) return;
    fprintf(stderr, "\r\033[K[train] epoch %d/%d  step %d/%d  loss %.4f  %.0fs", epoch, log->epochs,
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

static int write_summary(const char *dir, const TrainArgs *a, const Model *m, const Dataset *train,
                         const Dataset *test, const TrainLog *log, const char *status,
                         double wall_s, BwError *err)
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
    jsonw_string(&w, "model", a->model);
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
    jsonw_long(&w, "epochs", a->tc.epochs);
    jsonw_long(&w, "batch", a->tc.batch);
    jsonw_double(&w, "lr", a->tc.lr.base_lr);
    jsonw_string(&w, "lr_schedule", lr_kind_name(a->tc.lr.kind));
    jsonw_double(&w, "momentum", a->tc.sgd.momentum);
    if (a->tc.sgd.kind != OPT_SGD) jsonw_string(&w, "optimizer", opt_kind_name(a->tc.sgd.kind));
    jsonw_bool(&w, "nesterov", a->tc.sgd.nesterov);
    jsonw_double(&w, "weight_decay", a->tc.sgd.weight_decay);
    jsonw_long(&w, "seed", (long long)a->tc.seed);
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

/* Trains a's model on the data and reports each epoch; writes the files when out is set. */
static int train_and_report(const TrainArgs *a, const char *out, int quiet, TrainLog *log,
                            BwError *err)
{
    const TrainConfig tc = a->tc;
    Dataset train = {0}, test = {0};
    Model *m = NULL;
    double t0 = wallclock_s();
    int rc = dataset_load_fashion_mnist(a->data_dir, a->train_samples, a->test_samples, &train,
                                        &test, err);
    if (rc == BW_OK && tc.batch > train.n)
        rc = bw_fail(err, BW_EUSAGE, "--batch: %d is larger than the training set (%d samples)",
                     tc.batch, train.n);
    if (rc == BW_OK) rc = model_create(model_find(a->model), &a->mc, tc.seed, &m, err);
    /* Only now that the inputs are known good does the output folder appear. */
    if (rc == BW_OK && out) rc = outdir_create(out, err);
    if (rc) goto done;

    printf("# bellows train: %s (%zu parameters, %.3g MFLOP/sample fwd+bwd), %d train / %d test "
           "samples, batch %d, lr %g, seed %ld, OpenBLAS %s\n",
           a->model, m->n_params, model_flops_per_sample(m) / 1e6, train.n, test.n, tc.batch,
           tc.lr.base_lr, (long)tc.seed, blas_cpu_core());
    printf("epoch  train_loss  train_acc  test_loss  test_acc         lr   wall_s\n");
    fflush(stdout);
    log->n = 0;
    log->t0 = t0;
    log->epochs = tc.epochs;
    log->progress = !quiet && isatty(STDERR_FILENO);
    TrainHooks hooks = {.on_epoch = on_epoch, .on_step = on_step, .ctx = log};
    int train_rc = train_single(m, &train, &test, &tc, &hooks, err);
    if (log->progress) fputs("\r\033[K", stderr);
    const char *status = train_rc == BW_OK ? "completed" : "diverged";
    rc = train_rc; /* a divergence (BW_ERUNTIME) still writes what was done */
    if (train_rc && train_rc != BW_ERUNTIME) goto done;
    if (out) {
        BwError werr = {{0}};
        int wrc = write_evals(out, log, &werr);
        if (wrc == BW_OK)
            wrc = write_summary(out, a, m, &train, &test, log, status, wallclock_s() - t0, &werr);
        if (wrc) {
            *err = werr;
            rc = wrc;
            goto done;
        }
        printf("# wrote %s/summary.json and %s/evals.csv\n", out, out);
    }
done:
    model_free(m);
    dataset_free(&train);
    dataset_free(&test);
    return rc;
}

int cmd_train(int argc, char **argv, BwError *err)
{
    TrainCmdFlags v;
    memset(&v, 0, sizeof v);
    CliOpt train_opts[TRAIN_CLI_MAX_OPTS], opts[TRAIN_CLI_MAX_OPTS + 2];
    const CliOpt *tables[] = {train_opts, own_opts};
    const int counts[] = {train_cli_opts(&v.train, train_opts, TRAIN_CLI_MAX_OPTS),
                          (int)(sizeof own_opts / sizeof *own_opts)};
    const size_t bases[] = {offsetof(TrainCmdFlags, train), 0};
    int n_opts = cli_concat(opts, TRAIN_CLI_MAX_OPTS + 2, tables, counts, bases, 2);
    int set[TRAIN_CLI_MAX_OPTS + 2];
    int rc = cli_parse("bellows train", opts, n_opts, &v, argc, argv, set, err);
    if (rc == CLI_HELP) {
        cli_print_help(stdout, "bellows train [flags]",
                       "Trains one model on Fashion-MNIST in this process (no network, no "
                       "simulated time),\nevaluating on the test set after every epoch. Writes "
                       "summary.json and evals.csv to --out.",
                       opts, n_opts);
        return BW_OK;
    }
    TrainArgs a;
    if (rc == BW_OK) rc = train_args_resolve(&a, &v.train, set, err);
    if (rc) return rc;
    if (cli_given(opts, n_opts, set, "lr-scale")) /* issue 47: no flag dropped silently */
        fprintf(stderr, "bellows: note: --lr-scale has no effect here: train runs one process, "
                        "whose learning rate is --lr (the scale is by bellows run's --workers)\n");
    if (a.threads > 0) openblas_set_num_threads(a.threads);
    TrainLog *log =
        bw_xmalloc(sizeof *log, "cmd_train.c: log"); /* an epoch's row for up to TRAIN_MAX_EPOCHS */
    if (!log) return bw_fail(err, BW_ERUNTIME, "out of memory");
    rc = train_and_report(&a, v.out, v.quiet, log, err);
    free(log);
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
