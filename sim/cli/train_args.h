/* train_args.h: the flags that describe the model, the data and the optimiser, shared by every
 * command that trains (train, run, compare). Like cluster_args.h: one table, one resolver. */
#ifndef BELLOWS_TRAIN_ARGS_H
#define BELLOWS_TRAIN_ARGS_H

#include "model.h"
#include "trainer.h"
#include "cli.h"

#define TRAIN_MAX_EPOCHS 10000

/* The flags' values as parsed; train_cli_opts address them by offset (cli.h). */
typedef struct {
    const char *model, *lr_schedule, *data_dir;
    CliIntList hidden, channels;
    CliDoubleList decay_epochs;
    int kernel, epochs, batch, nesterov, train_samples, test_samples, threads;
    long seed;
    double lr, momentum, weight_decay, decay_factor, warmup_epochs;
} TrainFlags;

extern const CliOpt train_cli_opts[];
extern const int train_cli_n_opts;

typedef struct {
    const char *model; /* registered model name */
    ModelConfig mc;
    TrainConfig tc;                  /* epochs, batch, seed, optimiser, schedule */
    const char *data_dir;            /* Fashion-MNIST folder */
    int train_samples, test_samples; /* 0: all */
    int threads;                     /* OpenBLAS threads, 0: default */
} TrainArgs;

/* Fills a from the parsed flags ta (`set` is the part of cli_parse's set[] that belongs to
 * train_cli_opts) and checks the combinations cli_parse cannot see. */
int train_args_resolve(TrainArgs *a, const TrainFlags *ta, const int *set, BwError *err);

#endif
