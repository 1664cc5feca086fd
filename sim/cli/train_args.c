/* train_args.c: the model, data and optimiser flags (see train_args.h). */
#include "train_args.h"

#include <string.h>

#include "dataset.h"

#define TRAIN_OPT(name, kind, field, ...)                                                          \
    {                                                                                              \
        name, kind, NULL, __VA_ARGS__, offsetof(TrainFlags, field)                                 \
    }

const CliOpt train_cli_opts[] = {
    TRAIN_OPT("model", CLI_CHOICE, model, "mlp", NULL, "model to train", 0, 0, "softmax|mlp|cnn",
              0),
    TRAIN_OPT("hidden", CLI_INT_LIST, hidden, "128", "units", "mlp: hidden layer widths", 1, 65536,
              NULL, 8),
    TRAIN_OPT("channels", CLI_INT_LIST, channels, "16,32", "channels",
              "cnn: output channels of the two conv blocks", 1, 1024, NULL, 2),
    TRAIN_OPT("kernel", CLI_INT, kernel, "3", "pixels", "cnn: square kernel side (odd)", 1, 11,
              NULL, 0),
    TRAIN_OPT("epochs", CLI_INT, epochs, "5", "epochs", "passes over the training set", 1,
              TRAIN_MAX_EPOCHS, NULL, 0),
    TRAIN_OPT("batch", CLI_INT, batch, "64", "samples",
              "mini-batch size (simulated runs: per worker; the global batch is workers x batch)",
              1, 1 << 20, NULL, 0),
    TRAIN_OPT("lr", CLI_DOUBLE, lr, "0.02", NULL, "base learning rate", 1e-12, 1e3, NULL, 0),
    TRAIN_OPT("momentum", CLI_DOUBLE, momentum, "0.9", NULL, "SGD momentum (0 disables)", 0,
              0.999999, NULL, 0),
    TRAIN_OPT("nesterov", CLI_FLAG, nesterov, NULL, NULL, "use Nesterov momentum", 0, 0, NULL, 0),
    TRAIN_OPT("weight-decay", CLI_DOUBLE, weight_decay, "0", NULL, "L2 weight decay", 0, 1, NULL,
              0),
    TRAIN_OPT("lr-decay-epochs", CLI_DOUBLE_LIST, decay_epochs, NULL, "epochs",
              "step schedule: epochs at which the rate is multiplied by --lr-decay-factor", 0,
              TRAIN_MAX_EPOCHS, NULL, 16),
    TRAIN_OPT("lr-decay-factor", CLI_DOUBLE, decay_factor, "0.1", NULL, "step schedule: multiplier",
              1e-6, 1, NULL, 0),
    TRAIN_OPT("lr-schedule", CLI_CHOICE, lr_schedule, "constant", NULL, "learning-rate schedule", 0,
              0, "constant|step|cosine", 0),
    TRAIN_OPT("warmup-epochs", CLI_DOUBLE, warmup_epochs, "0", "epochs",
              "linear warm-up of the rate over the first epochs", 0, TRAIN_MAX_EPOCHS, NULL, 0),
    TRAIN_OPT("seed", CLI_LONG, seed, "1", NULL,
              "seed of the initialisation, the sampling order and every random stream", 0,
              2147483647.0, NULL, 0),
    TRAIN_OPT("data-dir", CLI_STRING, data_dir, DATASET_DEFAULT_DIR, NULL,
              "folder with Fashion-MNIST's four IDX .gz files", 0, 0, NULL, 0),
    TRAIN_OPT("train-samples", CLI_INT, train_samples, "0", "samples",
              "use the first N training samples (0: all 60000)", 0, 100000000, NULL, 0),
    TRAIN_OPT("test-samples", CLI_INT, test_samples, "0", "samples",
              "use the first N test samples (0: all 10000)", 0, 100000000, NULL, 0),
    TRAIN_OPT("threads", CLI_INT, threads, "0", "threads",
              "OpenBLAS threads (0: OpenBLAS's default)", 0, 1024, NULL, 0),
};
const int train_cli_n_opts = (int)(sizeof train_cli_opts / sizeof *train_cli_opts);
#undef TRAIN_OPT

int train_args_resolve(TrainArgs *a, const TrainFlags *ta, const int *set, BwError *err)
{
#define GIVEN(name) cli_given(train_cli_opts, train_cli_n_opts, set, name)
    int is_cnn = strcmp(ta->model, "cnn") == 0, is_mlp = strcmp(ta->model, "mlp") == 0;
    if (GIVEN("hidden") && !is_mlp)
        return bw_fail(err, BW_EUSAGE, "--hidden: applies to --model mlp only");
    if (GIVEN("channels") && !is_cnn)
        return bw_fail(err, BW_EUSAGE, "--channels: applies to --model cnn only");
    if (GIVEN("kernel") && !is_cnn)
        return bw_fail(err, BW_EUSAGE, "--kernel: applies to --model cnn only");
#undef GIVEN
    if (ta->channels.n != 2)
        return bw_fail(err, BW_EUSAGE, "--channels: expected two counts (conv1,conv2)");
    if (ta->nesterov && ta->momentum == 0.0)
        return bw_fail(err, BW_EUSAGE, "--nesterov: needs a nonzero --momentum");
    int is_step = strcmp(ta->lr_schedule, "step") == 0;
    if (is_step && ta->decay_epochs.n == 0)
        return bw_fail(err, BW_EUSAGE, "--lr-schedule step: needs --lr-decay-epochs");
    if (!is_step && ta->decay_epochs.n > 0)
        return bw_fail(err, BW_EUSAGE, "--lr-decay-epochs: needs --lr-schedule step");
    for (int i = 1; i < ta->decay_epochs.n; i++)
        if (ta->decay_epochs.v[i] <= ta->decay_epochs.v[i - 1])
            return bw_fail(err, BW_EUSAGE, "--lr-decay-epochs: must be increasing");

    memset(a, 0, sizeof *a);
    a->model = ta->model;
    a->mc = model_config_default();
    a->mc.n_hidden = ta->hidden.n;
    memcpy(a->mc.hidden, ta->hidden.v, sizeof(int) * (size_t)ta->hidden.n);
    a->mc.channels[0] = ta->channels.v[0];
    a->mc.channels[1] = ta->channels.v[1];
    a->mc.kernel = ta->kernel;

    TrainConfig *tc = &a->tc;
    tc->epochs = ta->epochs;
    tc->batch = ta->batch;
    tc->seed = (unsigned long)ta->seed;
    tc->sgd = (SgdConfig){
        .momentum = ta->momentum, .weight_decay = ta->weight_decay, .nesterov = ta->nesterov};
    tc->lr.base_lr = ta->lr;
    tc->lr.kind = is_step                                  ? LR_STEP
                  : strcmp(ta->lr_schedule, "cosine") == 0 ? LR_COSINE
                                                           : LR_CONSTANT;
    tc->lr.decay_factor = ta->decay_factor;
    tc->lr.n_milestones = ta->decay_epochs.n;
    memcpy(tc->lr.milestones, ta->decay_epochs.v, sizeof(double) * (size_t)ta->decay_epochs.n);
    tc->lr.warmup_epochs = ta->warmup_epochs;
    tc->lr.total_epochs = ta->epochs;

    a->data_dir = ta->data_dir;
    a->train_samples = ta->train_samples;
    a->test_samples = ta->test_samples;
    a->threads = ta->threads;
    return BW_OK;
}
