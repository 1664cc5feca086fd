/* train_args.h: the flags that describe the model, the data and the optimiser, shared by every
 * command that trains (train, run, compare). Like cluster_args.h: one table, one resolver. */
#ifndef BELLOWS_TRAIN_ARGS_H
#define BELLOWS_TRAIN_ARGS_H

#include "model.h"
#include "trainer.h"
#include "cli.h"
#include "model_args.h"

#define TRAIN_MAX_EPOCHS   10000
#define TRAIN_CLI_MAX_OPTS 48

/* The flags' values as parsed. */
typedef struct {
    ModelArgs models; /* --model and the models' options (and the text of their flag rows) */
    const char *lr_schedule, *data_dir, *lr_scale, *warmup_shape, *optimizer;
    CliDoubleList decay_epochs;
    int epochs, batch, nesterov, train_samples, test_samples, threads;
    long seed;
    double lr, momentum, weight_decay, decay_factor, warmup_epochs;
} TrainFlags;

/* Writes the flag rows into out (room for cap, TRAIN_CLI_MAX_OPTS is enough) and returns how
 * many: --model and one per model option (from the model registry), bound to ta's values, then
 * the data and optimiser flags, which address a TrainFlags by offset (cli.h): give cli_concat
 * the offset of ta in the struct parsed into. */
int train_cli_opts(TrainFlags *ta, CliOpt *out, int cap);

typedef struct {
    const char *model; /* registered model name */
    ModelConfig mc;
    TrainConfig tc;                  /* epochs, batch, seed, optimiser, schedule */
    const char *data_dir;            /* Fashion-MNIST folder */
    int train_samples, test_samples; /* 0: all */
    int threads;                     /* OpenBLAS threads, 0: default */
} TrainArgs;

/* Fills a from the parsed flags ta (`set` is the part of cli_parse's set[] that belongs to
 * the rows of train_cli_opts) and checks the combinations cli_parse cannot see. */
int train_args_resolve(TrainArgs *a, const TrainFlags *ta, const int *set, BwError *err);

#endif
