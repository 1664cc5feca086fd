/* model_args.h: the --model flag and one --NAME flag per model option, made from the model
 * registry (models/models.def), and the model configuration they describe. A model's option
 * gets its flag, its help line and its "applies to --model X only" refusal here, with no edit to
 * the CLI. */
#ifndef BELLOWS_MODEL_ARGS_H
#define BELLOWS_MODEL_ARGS_H

#include "model.h"
#include "cli.h"

#define MODEL_ARGS_MAX_OPTIONS 16 /* distinct option names in the registry */

/* The flags' values and the text their rows point to: keep it alive as long as the rows. */
typedef struct {
    const char *model; /* --model */
    int n_options;
    const ModelOption *options[MODEL_ARGS_MAX_OPTIONS]; /* the option of flag row 1 + i */
    CliIntList lists[MODEL_ARGS_MAX_OPTIONS];           /* its values, if it takes a list */
    int ints[MODEL_ARGS_MAX_OPTIONS];                   /* its value, if it takes one integer */
    char owners[MODEL_ARGS_MAX_OPTIONS][128];           /* "mlp": the models that have it */
    char help[MODEL_ARGS_MAX_OPTIONS][256];             /* "mlp: hidden layer widths" */
    char choices[256];                                  /* "softmax|mlp|cnn" */
} ModelArgs;

/* Writes the flag rows, bound to ma, into out (room for cap): --model, then one per option of
 * the registry (model_registry_option's order). Returns how many. */
int model_args_flags(ModelArgs *ma, CliOpt *out, int cap);

/* After cli_parse: the chosen model's name and its configuration (the shape's defaults and
 * the option values, given or default). `set` is the part of cli_parse's set[] for the rows
 * model_args_flags wrote. BW_EUSAGE when an option was given for a model that does not have it
 * or the model refuses a value (model_check). */
int model_args_resolve(const ModelArgs *ma, const int *set, const char **model, ModelConfig *mc,
                       BwError *err);

#endif
