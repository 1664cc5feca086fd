/* train_args.c: the model, data and optimiser flags (see train_args.h). */
#include "train_args.h"

#include <string.h>

#include "dataset.h"

static struct {
    const char *model, *lr_schedule, *data_dir;
    CliIntList hidden, channels;
    CliDoubleList decay_epochs;
    int kernel, epochs, batch, nesterov, train_samples, test_samples, threads;
    long seed;
    double lr, momentum, weight_decay, decay_factor, warmup_epochs;
} TA;

const CliOpt train_cli_opts[] = {
    {"model", CLI_CHOICE, &TA.model, "mlp", NULL, "model to train", 0, 0, "softmax|mlp|cnn", 0},
    {"hidden", CLI_INT_LIST, &TA.hidden, "128", "units", "mlp: hidden layer widths", 1, 65536, NULL,
     8},
    {"channels", CLI_INT_LIST, &TA.channels, "16,32", "channels",
     "cnn: output channels of the two conv blocks", 1, 1024, NULL, 2},
    {"kernel", CLI_INT, &TA.kernel, "3", "pixels", "cnn: square kernel side (odd)", 1, 11, NULL, 0},
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
const int train_cli_n_opts = (int)(sizeof train_cli_opts / sizeof *train_cli_opts);

int train_args_resolve(TrainArgs *a, const int *set, BwError *err)
{
#define GIVEN(name) cli_given(train_cli_opts, train_cli_n_opts, set, name)
    int is_cnn = strcmp(TA.model, "cnn") == 0, is_mlp = strcmp(TA.model, "mlp") == 0;
    if (GIVEN("hidden") && !is_mlp)
        return bw_fail(err, BW_EUSAGE, "--hidden: applies to --model mlp only");
    if (GIVEN("channels") && !is_cnn)
        return bw_fail(err, BW_EUSAGE, "--channels: applies to --model cnn only");
    if (GIVEN("kernel") && !is_cnn)
        return bw_fail(err, BW_EUSAGE, "--kernel: applies to --model cnn only");
#undef GIVEN
    if (TA.channels.n != 2)
        return bw_fail(err, BW_EUSAGE, "--channels: expected two counts (conv1,conv2)");
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
    a->model = TA.model;
    a->mc = model_config_default();
    a->mc.n_hidden = TA.hidden.n;
    memcpy(a->mc.hidden, TA.hidden.v, sizeof(int) * (size_t)TA.hidden.n);
    a->mc.channels[0] = TA.channels.v[0];
    a->mc.channels[1] = TA.channels.v[1];
    a->mc.kernel = TA.kernel;

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
