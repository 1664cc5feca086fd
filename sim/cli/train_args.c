/* train_args.c: the model, data and optimiser flags (see train_args.h). */
#include "train_args.h"

#include <assert.h>
#include <string.h>

#include "dataset.h"
#include "model_args.h"

static struct {
    ModelArgs models; /* --model and the models' options */
    const char *lr_schedule, *data_dir;
    CliDoubleList decay_epochs;
    int epochs, batch, nesterov, train_samples, test_samples, threads;
    long seed;
    double lr, momentum, weight_decay, decay_factor, warmup_epochs;
} TA;

static const CliOpt own_opts[] = {
    {"epochs", CLI_INT, &TA.epochs, "5", "epochs", "passes over the training set", 1,
     TRAIN_MAX_EPOCHS, NULL, 0},
    {"batch", CLI_INT, &TA.batch, "64", "samples",
     "mini-batch size (simulated runs: per worker; the global batch is workers x batch)", 1,
     1 << 20, NULL, 0},
    {"lr", CLI_DOUBLE, &TA.lr, "0.02", NULL, "base learning rate", 1e-12, 1e3, NULL, 0},
    {"momentum", CLI_DOUBLE, &TA.momentum, "0.9", NULL, "SGD momentum (0 disables)", 0, 0.999999,
     NULL, 0},
    {"nesterov", CLI_FLAG, &TA.nesterov, NULL, NULL, "use Nesterov momentum", 0, 0, NULL, 0},
    {"weight-decay", CLI_DOUBLE, &TA.weight_decay, "0", NULL, "L2 weight decay", 0, 1, NULL, 0},
    {"lr-decay-epochs", CLI_DOUBLE_LIST, &TA.decay_epochs, NULL, "epochs",
     "step schedule: epochs at which the rate is multiplied by --lr-decay-factor", 0,
     TRAIN_MAX_EPOCHS, NULL, 16},
    {"lr-decay-factor", CLI_DOUBLE, &TA.decay_factor, "0.1", NULL, "step schedule: multiplier",
     1e-6, 1, NULL, 0},
    {"lr-schedule", CLI_CHOICE, &TA.lr_schedule, "constant", NULL, "learning-rate schedule", 0, 0,
     "constant|step|cosine", 0},
    {"warmup-epochs", CLI_DOUBLE, &TA.warmup_epochs, "0", "epochs",
     "linear warm-up of the rate over the first epochs", 0, TRAIN_MAX_EPOCHS, NULL, 0},
    {"seed", CLI_LONG, &TA.seed, "1", NULL,
     "seed of the initialisation, the sampling order and every random stream", 0, 2147483647.0,
     NULL, 0},
    {"data-dir", CLI_STRING, &TA.data_dir, DATASET_DEFAULT_DIR, NULL,
     "folder with Fashion-MNIST's four IDX .gz files", 0, 0, NULL, 0},
    {"train-samples", CLI_INT, &TA.train_samples, "0", "samples",
     "use the first N training samples (0: all 60000)", 0, 100000000, NULL, 0},
    {"test-samples", CLI_INT, &TA.test_samples, "0", "samples",
     "use the first N test samples (0: all 10000)", 0, 100000000, NULL, 0},
    {"threads", CLI_INT, &TA.threads, "0", "threads", "OpenBLAS threads (0: OpenBLAS's default)", 0,
     1024, NULL, 0},
};
CliOpt train_cli_opts[TRAIN_CLI_MAX_OPTS];
int train_cli_n_opts;

void train_cli_init(void)
{
    if (train_cli_n_opts) return;
    int n = model_args_flags(&TA.models, train_cli_opts, TRAIN_CLI_MAX_OPTS);
    assert(n + (int)(sizeof own_opts / sizeof *own_opts) <= TRAIN_CLI_MAX_OPTS);
    memcpy(train_cli_opts + n, own_opts, sizeof own_opts);
    train_cli_n_opts = n + (int)(sizeof own_opts / sizeof *own_opts);
}

int train_args_resolve(TrainArgs *a, const int *set, BwError *err)
{
    const char *model;
    ModelConfig mc;
    int rc = model_args_resolve(&TA.models, set, &model, &mc, err);
    if (rc) return rc;
    if (TA.nesterov && TA.momentum == 0.0)
        return bw_fail(err, BW_EUSAGE, "--nesterov: needs a nonzero --momentum");
    int is_step = strcmp(TA.lr_schedule, "step") == 0;
    if (is_step && TA.decay_epochs.n == 0)
        return bw_fail(err, BW_EUSAGE, "--lr-schedule step: needs --lr-decay-epochs");
    if (!is_step && TA.decay_epochs.n > 0)
        return bw_fail(err, BW_EUSAGE, "--lr-decay-epochs: needs --lr-schedule step");
    for (int i = 1; i < TA.decay_epochs.n; i++)
        if (TA.decay_epochs.v[i] <= TA.decay_epochs.v[i - 1])
            return bw_fail(err, BW_EUSAGE, "--lr-decay-epochs: must be increasing");

    memset(a, 0, sizeof *a);
    a->model = model;
    a->mc = mc;

    TrainConfig *tc = &a->tc;
    tc->epochs = TA.epochs;
    tc->batch = TA.batch;
    tc->seed = (unsigned long)TA.seed;
    tc->sgd = (SgdConfig){
        .momentum = TA.momentum, .weight_decay = TA.weight_decay, .nesterov = TA.nesterov};
    tc->lr.base_lr = TA.lr;
    tc->lr.kind = is_step                                 ? LR_STEP
                  : strcmp(TA.lr_schedule, "cosine") == 0 ? LR_COSINE
                                                          : LR_CONSTANT;
    tc->lr.decay_factor = TA.decay_factor;
    tc->lr.n_milestones = TA.decay_epochs.n;
    memcpy(tc->lr.milestones, TA.decay_epochs.v, sizeof(double) * (size_t)TA.decay_epochs.n);
    tc->lr.warmup_epochs = TA.warmup_epochs;
    tc->lr.total_epochs = TA.epochs;

    a->data_dir = TA.data_dir;
    a->train_samples = TA.train_samples;
    a->test_samples = TA.test_samples;
    a->threads = TA.threads;
    return BW_OK;
}
