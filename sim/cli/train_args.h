/* train_args.h: the flags that describe the model, the data and the optimiser, shared by every
 * command that trains (train, run, compare). Like cluster_args.h: one table, one resolver. */
#ifndef BELLOWS_TRAIN_ARGS_H
#define BELLOWS_TRAIN_ARGS_H

#include "model.h"
#include "trainer.h"
#include "cli.h"

#define TRAIN_MAX_EPOCHS   10000
#define TRAIN_CLI_MAX_OPTS 48

/* The flags: --model and one per model option (from the model registry), then the data and
 * optimiser flags. train_cli_init fills them; call it before using them. */
extern CliOpt train_cli_opts[];
extern int train_cli_n_opts;
void train_cli_init(void);

typedef struct {
    const char *model; /* registered model name */
    ModelConfig mc;
    TrainConfig tc;                  /* epochs, batch, seed, optimiser, schedule */
    const char *data_dir;            /* Fashion-MNIST folder */
    int train_samples, test_samples; /* 0: all */
    int threads;                     /* OpenBLAS threads, 0: default */
} TrainArgs;

/* Fills a from the parsed flags (`set` is the part of cli_parse's set[] that belongs to
 * train_cli_opts) and checks the combinations cli_parse cannot see. */
int train_args_resolve(TrainArgs *a, const int *set, BwError *err);

#endif
