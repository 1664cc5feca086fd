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

#include "../models/dataset.h"
#include "../models/model.h"
#include "../models/trainer.h"
#include "blas_cpu.h"
#include "cli.h"
#include "commands.h"
#include "outfile.h"

#define MAX_EPOCHS 10000

typedef struct {
    const char *model, *lr_schedule, *data_dir, *out;
    CliIntList hidden, channels;
    CliDoubleList decay_epochs;
    int kernel, epochs, batch, nesterov, train_samples, test_samples, threads, quiet;
    long seed;
    double lr, momentum, weight_decay, decay_factor, warmup_epochs;
} TrainArgs;

static TrainArgs A;

static const CliOpt train_opts[] = {
    {"model", CLI_CHOICE, &A.model, "mlp", NULL, "model to train", 0, 0, "softmax|mlp|cnn", 0},
    {"hidden", CLI_INT_LIST, &A.hidden, "128", "units", "mlp: hidden layer widths", 1, 65536, NULL,
     8},
    {"channels", CLI_INT_LIST, &A.channels, "16,32", "channels",
     "cnn: output channels of the two conv blocks", 1, 1024, NULL, 2},
    {"kernel", CLI_INT, &A.kernel, "3", "pixels", "cnn: square kernel side (odd)", 1, 11, NULL, 0},
    {"epochs", CLI_INT, &A.epochs, "5", "epochs", "passes over the training set", 1, MAX_EPOCHS,
     NULL, 0},
    {"batch", CLI_INT, &A.batch, "64", "samples", "mini-batch size", 1, 1 << 20, NULL, 0},
    {"lr", CLI_DOUBLE, &A.lr, "0.02", NULL, "base learning rate", 1e-12, 1e3, NULL, 0},
    {"momentum", CLI_DOUBLE, &A.momentum, "0.9", NULL, "SGD momentum (0 disables)", 0, 0.999999,
     NULL, 0},
    {"nesterov", CLI_FLAG, &A.nesterov, NULL, NULL, "use Nesterov momentum", 0, 0, NULL, 0},
    {"weight-decay", CLI_DOUBLE, &A.weight_decay, "0", NULL, "L2 weight decay", 0, 1, NULL, 0},
    {"lr-decay-epochs", CLI_DOUBLE_LIST, &A.decay_epochs, NULL, "epochs",
     "step schedule: epochs at which the rate is multiplied by --lr-decay-factor", 0, MAX_EPOCHS,
     NULL, 16},
    {"lr-decay-factor", CLI_DOUBLE, &A.decay_factor, "0.1", NULL, "step schedule: multiplier", 1e-6,
     1, NULL, 0},
    {"lr-schedule", CLI_CHOICE, &A.lr_schedule, "constant", NULL, "learning-rate schedule", 0, 0,
     "constant|step|cosine", 0},
    {"warmup-epochs", CLI_DOUBLE, &A.warmup_epochs, "0", "epochs",
     "linear warm-up of the rate over the first epochs", 0, MAX_EPOCHS, NULL, 0},
    {"seed", CLI_LONG, &A.seed, "1", NULL, "seed of the initialisation and of the sampling order",
     0, 2147483647.0, NULL, 0},
    {"data-dir", CLI_STRING, &A.data_dir, DATASET_DEFAULT_DIR, NULL,
     "folder with Fashion-MNIST's four IDX .gz files", 0, 0, NULL, 0},
    {"train-samples", CLI_INT, &A.train_samples, "0", "samples",
     "use the first N training samples (0: all 60000)", 0, 100000000, NULL, 0},
    {"test-samples", CLI_INT, &A.test_samples, "0", "samples",
     "use the first N test samples (0: all 10000)", 0, 100000000, NULL, 0},
    {"threads", CLI_INT, &A.threads, "0", "threads", "OpenBLAS threads (0: OpenBLAS's default)", 0,
     1024, NULL, 0},
    {"out", CLI_STRING, &A.out, NULL, NULL,
     "folder for summary.json and evals.csv (none: print only)", 0, 0, NULL, 0},
    {"quiet", CLI_FLAG, &A.quiet, NULL, NULL, "no progress line on stderr", 0, 0, NULL, 0},
};
#define N_TRAIN_OPTS ((int)(sizeof train_opts / sizeof *train_opts))

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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
    fprintf(stderr, "\r\033[K[train] epoch %d/%d  step %d/%d  loss %.4f  %.0fs", epoch, A.epochs,
            step, steps, loss, wall_now() - log->t0);
    fflush(stderr);
}

static int on_epoch(const EpochStats *s, void *ctx)
{
    TrainLog *log = ctx;
    if (log->progress) fputs("\r\033[K", stderr);
    log->rows[log->n++] = *s;
    printf("%5d  %10.4f  %9.4f  %9.4f  %8.4f  %9.4g  %7.1f\n", s->epoch, s->train_loss,
           s->train_accuracy, s->test_loss, s->test_accuracy, s->lr, wall_now() - log->t0);
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
    jsonw_long(&w, "epochs", A.epochs);
    jsonw_long(&w, "batch", A.batch);
    jsonw_double(&w, "lr", A.lr);
    jsonw_string(&w, "lr_schedule", A.lr_schedule);
    jsonw_double(&w, "momentum", A.momentum);
    jsonw_bool(&w, "nesterov", A.nesterov);
    jsonw_double(&w, "weight_decay", A.weight_decay);
    jsonw_long(&w, "seed", A.seed);
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

/* Flag combinations that cli_parse cannot see. */
static int check_combinations(const int *set, BwError *err)
{
    int is_cnn = strcmp(A.model, "cnn") == 0, is_mlp = strcmp(A.model, "mlp") == 0;
    if (cli_given(train_opts, N_TRAIN_OPTS, set, "hidden") && !is_mlp)
        return bw_fail(err, BW_EUSAGE, "--hidden: applies to --model mlp only");
    if (cli_given(train_opts, N_TRAIN_OPTS, set, "channels") && !is_cnn)
        return bw_fail(err, BW_EUSAGE, "--channels: applies to --model cnn only");
    if (cli_given(train_opts, N_TRAIN_OPTS, set, "kernel") && !is_cnn)
        return bw_fail(err, BW_EUSAGE, "--kernel: applies to --model cnn only");
    if (A.channels.n != 2)
        return bw_fail(err, BW_EUSAGE, "--channels: expected two counts (conv1,conv2)");
    if (A.nesterov && A.momentum == 0.0)
        return bw_fail(err, BW_EUSAGE, "--nesterov: needs a nonzero --momentum");
    int is_step = strcmp(A.lr_schedule, "step") == 0;
    if (is_step && A.decay_epochs.n == 0)
        return bw_fail(err, BW_EUSAGE, "--lr-schedule step: needs --lr-decay-epochs");
    if (!is_step && A.decay_epochs.n > 0)
        return bw_fail(err, BW_EUSAGE, "--lr-decay-epochs: needs --lr-schedule step");
    for (int i = 1; i < A.decay_epochs.n; i++)
        if (A.decay_epochs.v[i] <= A.decay_epochs.v[i - 1])
            return bw_fail(err, BW_EUSAGE, "--lr-decay-epochs: must be increasing");
    return BW_OK;
}

int cmd_train(int argc, char **argv)
{
    BwError err = {{0}};
    int set[N_TRAIN_OPTS];
    int rc = cli_parse("bellows train", train_opts, N_TRAIN_OPTS, argc, argv, set, &err);
    if (rc == CLI_HELP) {
        cli_print_help(stdout, "bellows train [flags]",
                       "Trains one model on Fashion-MNIST in this process (no network, no "
                       "simulated time),\nevaluating on the test set after every epoch. Writes "
                       "summary.json and evals.csv to --out.",
                       train_opts, N_TRAIN_OPTS);
        return BW_OK;
    }
    if (rc == BW_OK) rc = check_combinations(set, &err);
    if (rc) {
        fprintf(stderr, "bellows: %s\n", err.msg);
        return rc;
    }
    if (A.threads > 0) openblas_set_num_threads(A.threads);

    ModelConfig mc = model_config_default();
    mc.n_hidden = A.hidden.n;
    memcpy(mc.hidden, A.hidden.v, sizeof(int) * (size_t)A.hidden.n);
    mc.channels[0] = A.channels.v[0];
    mc.channels[1] = A.channels.v[1];
    mc.kernel = A.kernel;

    TrainConfig tc = {.epochs = A.epochs, .batch = A.batch, .seed = (unsigned long)A.seed};
    tc.sgd =
        (SgdConfig){.momentum = A.momentum, .weight_decay = A.weight_decay, .nesterov = A.nesterov};
    tc.lr.base_lr = A.lr;
    tc.lr.kind = strcmp(A.lr_schedule, "step") == 0     ? LR_STEP
                 : strcmp(A.lr_schedule, "cosine") == 0 ? LR_COSINE
                                                        : LR_CONSTANT;
    tc.lr.decay_factor = A.decay_factor;
    tc.lr.n_milestones = A.decay_epochs.n;
    memcpy(tc.lr.milestones, A.decay_epochs.v, sizeof(double) * (size_t)A.decay_epochs.n);
    tc.lr.warmup_epochs = A.warmup_epochs;
    tc.lr.total_epochs = A.epochs;

    Dataset train = {0}, test = {0};
    Model *m = NULL;
    double t0 = wall_now();
    if ((rc = dataset_load_fashion_mnist(A.data_dir, A.train_samples, A.test_samples, &train, &test,
                                         &err)))
        goto fail;
    if (A.batch > train.n) {
        rc = bw_fail(&err, BW_EUSAGE, "--batch: %d is larger than the training set (%d samples)",
                     A.batch, train.n);
        goto fail;
    }
    if ((rc = model_create(model_find(A.model), &mc, (unsigned long)A.seed, &m, &err))) goto fail;
    /* Only now that the inputs are known good does the output folder appear. */
    if (A.out && (rc = outdir_create(A.out, &err))) goto fail;

    printf("# bellows train: %s (%zu parameters, %.3g MFLOP/sample fwd+bwd), %d train / %d test "
           "samples, batch %d, lr %g, seed %ld, OpenBLAS %s\n",
           A.model, m->n_params, model_flops_per_sample(m) / 1e6, train.n, test.n, A.batch, A.lr,
           A.seed, blas_cpu_core());
    printf("epoch  train_loss  train_acc  test_loss  test_acc         lr   wall_s\n");
    fflush(stdout);
    LOG.n = 0;
    LOG.t0 = t0;
    LOG.progress = !A.quiet && isatty(STDERR_FILENO);
    TrainHooks hooks = {.on_epoch = on_epoch, .on_step = on_step, .ctx = &LOG};
    int train_rc = train_single(m, &train, &test, &tc, &hooks, &err);
    if (LOG.progress) fputs("\r\033[K", stderr);
    const char *status = train_rc == BW_OK ? "completed" : "diverged";
    if (train_rc && train_rc != BW_ERUNTIME) {
        rc = train_rc;
        goto fail;
    }
    if (train_rc) fprintf(stderr, "bellows: %s\n", err.msg);
    if (A.out) {
        BwError werr = {{0}};
        if ((rc = write_evals(A.out, &LOG, &werr)) ||
            (rc = write_summary(A.out, m, &train, &test, &LOG, status, wall_now() - t0, &werr))) {
            err = werr;
            goto fail;
        }
        printf("# wrote %s/summary.json and %s/evals.csv\n", A.out, A.out);
    }
    rc = train_rc;
    model_free(m);
    dataset_free(&train);
    dataset_free(&test);
    return rc;
fail:
    fprintf(stderr, "bellows: %s\n", err.msg);
    model_free(m);
    dataset_free(&train);
    dataset_free(&test);
    return rc;
}

int cmd_models(int argc, char **argv)
{
    (void)argv;
    if (argc > 0 && strcmp(argv[0], "--help") != 0) {
        fprintf(stderr, "bellows: models: takes no arguments\n");
        return BW_EUSAGE;
    }
    ModelConfig mc = model_config_default();
    printf("%-8s %10s %14s  %s\n", "model", "params", "MFLOP/sample", "description");
    for (const ModelOps *const *r = model_registry(); *r; r++) {
        Model *m = NULL;
        BwError err;
        if (model_create(*r, &mc, 1, &m, &err) != BW_OK) continue;
        printf("%-8s %10zu %14.3f  %s\n", (*r)->name, m->n_params, model_flops_per_sample(m) / 1e6,
               (*r)->help);
        model_free(m);
    }
    return BW_OK;
}
