/* trainer.h: the single-process reference trainer: mini-batch SGD over a dataset for a number
 * of epochs, evaluating on the test set after each epoch. It is the ground truth that the
 * simulated data-parallel runs are compared against (same seed, same global batches). */
#ifndef BELLOWS_TRAINER_H
#define BELLOWS_TRAINER_H

#include "dataset.h"
#include "model.h"
#include "optim.h"

typedef struct {
    int epochs;
    int batch;          /* samples per step */
    unsigned long seed; /* the sampling order; callers seed the initialisation with it too */
    SgdConfig sgd;
    LrSchedule lr;
} TrainConfig;

typedef struct {
    int epoch;         /* 1-based, completed */
    long step;         /* steps done so far */
    double lr;         /* at the epoch's last step */
    double train_loss; /* mean over the epoch's steps */
    double train_accuracy;
    double test_loss;
    double test_accuracy;
} EpochStats;

typedef struct {
    /* After every epoch; return nonzero to stop early (e.g. interrupted). */
    int (*on_epoch)(const EpochStats *s, void *ctx);
    /* Every few steps, for progress lines; may be NULL. */
    void (*on_step)(int epoch, int step_in_epoch, int steps_per_epoch, double loss, void *ctx);
    void *ctx;
} TrainHooks;

/* Trains m in place. Returns BW_OK, BW_EUSAGE (batch larger than the data) or BW_ERUNTIME
 * (divergence: a non-finite loss; out of memory), with err set. */
int train_single(Model *m, const Dataset *train, const Dataset *test, const TrainConfig *cfg,
                 const TrainHooks *hooks, BwError *err);

#endif
