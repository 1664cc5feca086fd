/* model_args.c: the model flags from the registry (see model_args.h). An option that takes one
 * integer is a plain integer flag (--kernel N), any other a list (--hidden N,N,...), so the
 * parser checks ranges and counts with the messages every flag has. */
#include "model_args.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

/* Appends "|word" (no bar first) to a bounded text. */
static void join(char *text, size_t cap, const char *word)
{
    size_t len = strlen(text);
    int n = snprintf(text + len, cap - len, "%s%s", len ? "|" : "", word);
    assert(n >= 0 && (size_t)n < cap - len && "a generated flag text is too long");
    (void)n;
}

/* The row of option i: its value type, range and count, and "owners: help". */
static CliOpt option_row(ModelArgs *ma, int i)
{
    const ModelOption *o = ma->options[i];
    ma->owners[i][0] = '\0';
    for (const ModelOps *const *r = model_registry(); *r; r++)
        if (model_option_index(*r, o->name) >= 0)
            join(ma->owners[i], sizeof ma->owners[i], (*r)->name);
    snprintf(ma->help[i], sizeof ma->help[i], "%s: %s", ma->owners[i], o->help);
    int one = o->max_count == 1;
    assert(o->max_count <= CLI_LIST_MAX && o->max_count <= MODEL_OPTION_MAX_INTS);
    return (CliOpt){.name = o->name,
                    .kind = one ? CLI_INT : CLI_INT_LIST,
                    .dest = one ? (void *)&ma->ints[i] : (void *)&ma->lists[i],
                    .def = o->def,
                    .unit = o->unit,
                    .help = ma->help[i],
                    .min = o->min,
                    .max = o->max,
                    .max_items = one ? 0 : o->max_count};
}

int model_args_flags(ModelArgs *ma, CliOpt *out, int cap)
{
    (void)cap; /* read by the asserts only */
    ma->choices[0] = '\0';
    for (const ModelOps *const *r = model_registry(); *r; r++)
        join(ma->choices, sizeof ma->choices, (*r)->name);
    ma->n_options = 0;
    for (const ModelOption *o; (o = model_registry_option(ma->n_options));) {
        assert(ma->n_options < MODEL_ARGS_MAX_OPTIONS);
        ma->options[ma->n_options++] = o;
    }
    assert(1 + ma->n_options <= cap && model_find("mlp"));
    out[0] = (CliOpt){.name = "model",
                      .kind = CLI_CHOICE,
                      .dest = &ma->model,
                      .def = "mlp",
                      .help = "model to train",
                      .choices = ma->choices};
    for (int i = 0; i < ma->n_options; i++) out[1 + i] = option_row(ma, i);
    return 1 + ma->n_options;
}

int model_args_resolve(const ModelArgs *ma, const int *set, const char **model, ModelConfig *mc,
                       BwError *err)
{
    const ModelOps *ops = model_find(ma->model);
    assert(ops && "--model's choices are the registry's names");
    for (int i = 0; i < ma->n_options; i++)
        if (set[1 + i] && model_option_index(ops, ma->options[i]->name) < 0)
            return bw_fail(err, BW_EUSAGE, "--%s: applies to --model %s only", ma->options[i]->name,
                           ma->owners[i]);
    ModelConfig c = model_config_default();
    for (int i = 0; i < ma->n_options; i++) {
        const ModelOption *o = ma->options[i];
        if (model_option_index(ops, o->name) < 0) continue;
        if (o->max_count == 1)
            model_config_set(&c, ops, o->name, 1, &ma->ints[i]);
        else
            model_config_set(&c, ops, o->name, ma->lists[i].n, ma->lists[i].v);
    }
    int rc = model_check(ops, &c, err);
    if (rc) return rc;
    *model = ma->model;
    *mc = c;
    return BW_OK;
}
