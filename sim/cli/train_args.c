/* train_args.c: the model, data and optimiser flags (see train_args.h). */
#include "train_args.h"

#include <assert.h>
#include <string.h>

#include "dataset.h"
#include "model_args.h"

#define TRAIN_OPT(name, kind, field, ...)                                                          \
    {                                                                                              \
        name, kind, NULL, __VA_ARGS__, offsetof(TrainFlags, field)                                 \
    }

static const CliOpt own_opts[] = {
    TRAIN_OPT("epochs", CLI_INT, epochs, "5", "epochs", "passes over the training set", 1,
              TRAIN_MAX_EPOCHS, NULL, 0),
    TRAIN_OPT("batch", CLI_INT, batch, "64", "samples",
              "mini-batch size (simulated runs: per worker; the global batch is workers x batch)",
              1, 1 << 20, NULL, 0),
    TRAIN_OPT("lr", CLI_DOUBLE, lr, "0.02", NULL, "base learning rate", 1e-12, 1e3, NULL, 0),
    TRAIN_OPT("momentum", CLI_DOUBLE, momentum, "0.9", NULL, "SGD momentum (0 disables)", 0,
              0.999999, NULL, 0),
    TRAIN_OPT("optimizer", CLI_CHOICE, optimizer, "sgd", NULL,
              "the (inner) optimizer: sgd (torch.optim.SGD: --momentum, --nesterov, "
              "--weight-decay as L2) or adamw (torch.optim.AdamW: betas 0.9, 0.999, eps 1e-8, "
              "--weight-decay decoupled; --momentum and --nesterov refused)",
              0, 0, "sgd|adamw", 0),
    TRAIN_OPT("nesterov", CLI_FLAG, nesterov, NULL, NULL, "use Nesterov momentum", 0, 0, NULL, 0),
    TRAIN_OPT("weight-decay", CLI_DOUBLE, weight_decay, "0", NULL, "L2 weight decay", 0, 1, NULL,
              0),
    TRAIN_OPT("lr-decay-epochs", CLI_DOUBLE_LIST, decay_epochs, NULL, "epochs",
              "step schedule: epochs at which the rate is multiplied by --lr-decay-factor (the "
              "Accordion authors: 152,252 of 300, x 0.1)",
              0, TRAIN_MAX_EPOCHS, NULL, 16),
    TRAIN_OPT("lr-decay-factor", CLI_DOUBLE, decay_factor, "0.1", NULL, "step schedule: multiplier",
              1e-6, 1, NULL, 0),
    TRAIN_OPT("lr-schedule", CLI_CHOICE, lr_schedule, "constant", NULL, "learning-rate schedule", 0,
              0, "constant|step|cosine", 0),
    TRAIN_OPT("warmup-epochs", CLI_DOUBLE, warmup_epochs, "0", "epochs",
              "linear warm-up of the rate over the first epochs (the Accordion authors: 5)", 0,
              TRAIN_MAX_EPOCHS, NULL, 0),
    TRAIN_OPT("warmup-shape", CLI_CHOICE, warmup_shape, "step", NULL,
              "step: the warm-up's rate grows every step; epoch: once an epoch, one epoch late "
              "(epoch e at (e - 1) / --warmup-epochs of the way; needs --lr-scale workers), as "
              "the Accordion authors' code (main.py get_lr)",
              0, 0, "step|epoch", 0),
    TRAIN_OPT("lr-scale", CLI_CHOICE, lr_scale, "auto", NULL,
              "none: --lr is the rate; workers: the rate is --lr x workers (Goyal et al.'s "
              "linear scaling), the warm-up climbing from --lr to it, as the Accordion authors' "
              "code; auto: with the default --lr, a global batch above the 512 the defaults "
              "were tuned for (8 workers x 64) scales the rate by global / 512, warmed up over "
              "--warmup-epochs or a fixed 240000 samples (4 epochs of Fashion-MNIST), at most 5 "
              "epochs, whatever --epochs plans (simulated runs)",
              0, 0, "none|workers|auto", 0),
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
#undef TRAIN_OPT

int train_cli_opts(TrainFlags *ta, CliOpt *out, int cap)
{
    int n = model_args_flags(&ta->models, out, cap);
    const int n_own = (int)(sizeof own_opts / sizeof *own_opts);
    assert(n + n_own <= cap);
    memcpy(out + n, own_opts, sizeof own_opts);
    return n + n_own;
}

/* Whether own flag `name` was given: set holds the model's rows first (model_args_flags: --model
 * and its options), then own_opts'. */
static int own_given(const TrainFlags *ta, const int *set, const char *name)
{
    for (size_t i = 0; i < sizeof own_opts / sizeof *own_opts; i++)
        if (strcmp(own_opts[i].name, name) == 0) return set[1 + ta->models.n_options + (int)i];
    return 0;
}

int train_args_resolve(TrainArgs *a, const TrainFlags *ta, const int *set, BwError *err)
{
    const char *model;
    ModelConfig mc;
    int rc = model_args_resolve(&ta->models, set, &model, &mc, err);
    if (rc) return rc;
    const int adamw = strcmp(ta->optimizer, "adamw") == 0;
    if (adamw && ta->nesterov)
        return bw_fail(err, BW_EUSAGE, "--nesterov: an SGD option; --optimizer adamw has none");
    if (adamw && own_given(ta, set, "momentum")) /* AdamW's first moment is beta1, fixed 0.9 */
        return bw_fail(err, BW_EUSAGE,
                       "--momentum: an SGD option; --optimizer adamw has none (its betas are "
                       "0.9, 0.999, as torch.optim.AdamW's defaults)");
    if (ta->nesterov && ta->momentum == 0.0)
        return bw_fail(err, BW_EUSAGE, "--nesterov: needs a nonzero --momentum");
    int is_step = strcmp(ta->lr_schedule, "step") == 0;
    if (is_step && ta->decay_epochs.n == 0)
        return bw_fail(err, BW_EUSAGE, "--lr-schedule step: needs --lr-decay-epochs");
    if (!is_step && ta->decay_epochs.n > 0)
        return bw_fail(err, BW_EUSAGE, "--lr-decay-epochs: needs --lr-schedule step");
    int by_workers = strcmp(ta->lr_scale, "workers") == 0;
    int per_epoch = strcmp(ta->warmup_shape, "epoch") == 0;
    if (per_epoch && !by_workers)
        return bw_fail(err, BW_EUSAGE,
                       "--warmup-shape epoch: climbs from --lr to --lr x workers; add "
                       "--lr-scale workers");
    if (per_epoch && !(ta->warmup_epochs > 0))
        return bw_fail(err, BW_EUSAGE, "--warmup-shape epoch: needs --warmup-epochs above 0");
    for (int i = 1; i < ta->decay_epochs.n; i++)
        if (ta->decay_epochs.v[i] <= ta->decay_epochs.v[i - 1])
            return bw_fail(err, BW_EUSAGE, "--lr-decay-epochs: must be increasing");

    memset(a, 0, sizeof *a);
    a->model = model;
    a->mc = mc;

    TrainConfig *tc = &a->tc;
    tc->epochs = ta->epochs;
    tc->batch = ta->batch;
    tc->seed = (unsigned long)ta->seed;
    tc->sgd = (SgdConfig){.momentum = adamw ? 0.0 : ta->momentum,
                          .weight_decay = ta->weight_decay,
                          .nesterov = ta->nesterov,
                          .kind = adamw ? OPT_ADAMW : OPT_SGD};
    tc->lr.base_lr = ta->lr;
    tc->lr.kind = is_step                                  ? LR_STEP
                  : strcmp(ta->lr_schedule, "cosine") == 0 ? LR_COSINE
                                                           : LR_CONSTANT;
    tc->lr.decay_factor = ta->decay_factor;
    tc->lr.n_milestones = ta->decay_epochs.n;
    memcpy(tc->lr.milestones, ta->decay_epochs.v, sizeof(double) * (size_t)ta->decay_epochs.n);
    tc->lr.warmup_epochs = ta->warmup_epochs;
    tc->lr.warmup_shape = per_epoch ? WARMUP_EPOCH : WARMUP_STEP;
    tc->lr.peak_scale = 1; /* the run sets the worker count when scale_by_workers */
    tc->lr.scale_by_workers = by_workers;
    tc->lr.total_epochs = ta->epochs;

    a->data_dir = ta->data_dir;
    a->train_samples = ta->train_samples;
    a->test_samples = ta->test_samples;
    a->threads = ta->threads;
    return BW_OK;
}
