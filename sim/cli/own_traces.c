/* own_traces.c: the traces of compare --traces, read, checked against each other and grouped
 * into policies and seeds (own_traces.h). */
#include "own_traces.h"
#include "xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compress.h"
#include "spec.h"

/* The first field in which b differs from a (the experiment's), or NULL. */
static const char *differs(const TraceHeader *a, const TraceHeader *b, char *what, size_t n)
{
    if (strcmp(a->model, b->model) != 0) return "model";
    if (strcmp(a->dataset, b->dataset) != 0) return "dataset";
    if (a->workers != b->workers) return "workers";
    if (a->batch != b->batch) return "batch";
    if (a->train_samples != b->train_samples) return "policy.train_samples";
    if (a->test_samples != b->test_samples) return "policy.test_samples";
    if (a->n_layers != b->n_layers) return "layers";
    for (int l = 0; l < a->n_layers; l++)
        if (a->layers[l].rows != b->layers[l].rows || a->layers[l].cols != b->layers[l].cols) {
            snprintf(what, n, "layers[%d]", l);
            return what;
        }
    return NULL;
}

/* What a field reads in a header, for the message. */
static void field_value(const TraceHeader *h, const char *field, char *out, size_t n)
{
    if (strcmp(field, "model") == 0)
        snprintf(out, n, "\"%s\"", h->model);
    else if (strcmp(field, "dataset") == 0)
        snprintf(out, n, "\"%s\"", h->dataset);
    else if (strcmp(field, "workers") == 0)
        snprintf(out, n, "%d", h->workers);
    else if (strcmp(field, "batch") == 0)
        snprintf(out, n, "%d", h->batch);
    else if (strcmp(field, "policy.train_samples") == 0)
        snprintf(out, n, "%ld", h->train_samples);
    else if (strcmp(field, "policy.test_samples") == 0)
        snprintf(out, n, "%ld", h->test_samples);
    else if (strcmp(field, "layers") == 0)
        snprintf(out, n, "%d layers", h->n_layers);
    else
        snprintf(out, n, "a different shape");
}

/* The header's "policy.compressor" and every step's "levels" as the run will take them
 * (compress_spec_resolved, compress_check_level), checked as the trace is read, so that an error
 * names the file, the line and the field, not --compressor or the run's policy. */
static int check_levels(const Trace *t, BwError *err)
{
    char resolved[SPEC_MAX_TEXT];
    Spec spec;
    const CompressorOps *ops = NULL;
    if (compress_spec_resolved(t->h.policy_compressor, "\"policy\": \"compressor\"", resolved,
                               sizeof resolved, err) ||
        spec_parse(t->h.policy_compressor, "\"policy\": \"compressor\"", &spec, err) ||
        !(ops = compress_find(spec.name))) {
        BwError why = *err;
        return bw_fail(err, BW_EUSAGE, "--traces %s:%ld: %s", t->path, t->h.line, why.msg);
    }
    for (long s = 0; s < t->n_steps; s++)
        for (int l = 0; t->steps[s].levels && l < t->h.n_layers; l++) {
            char what[64];
            snprintf(what, sizeof what, "\"levels\"[%d]", l);
            if (compress_check_level(ops, t->steps[s].levels[l], what, err)) {
                BwError why = *err;
                return bw_fail(err, BW_EUSAGE, "--traces %s:%ld: %s (the compressor is %s)",
                               t->path, t->steps[s].line, why.msg, t->h.policy_compressor);
            }
        }
    return BW_OK;
}

/* A trace a policy can be priced on: it records the policy and every step's decision. */
static int check_own(const Trace *t, BwError *err)
{
    if (!t->h.has_policy)
        return bw_fail(err, BW_EUSAGE,
                       "--traces %s: \"policy\": the header names no policy, so the trace holds "
                       "no decisions to price (record it with traces/pytorch/train_policy.py; a "
                       "trace of one run for every policy is bellows replay's)",
                       t->path);
    for (long s = 0; s < t->n_steps; s++)
        if (!t->steps[s].has_decision)
            return bw_fail(err, BW_EUSAGE,
                           "--traces %s: step %ld: no decision (\"levels\" or \"average\"): a "
                           "policy's own trace records one every step",
                           t->path, s);
    return check_levels(t, err);
}

/* The payload bytes one worker sends for decision s of trace t: an averaging the model's
 * parameters in fp32, none between averagings; a gradient-mode step what the trace's compressor
 * hands to the collectives at the recorded levels (compress_plan, whose sizes the replay
 * charges). Plans on c, made for t's layers. */
static double decision_bytes(const Trace *t, const TraceStep *s, const Compressor *c)
{
    double params = 0, bytes = 0;
    for (int l = 0; l < t->h.n_layers; l++)
        params += (double)t->h.layers[l].rows * (double)t->h.layers[l].cols;
    if (t->h.policy_periodic) return s->average ? 4 * params : 0;
    CompressMsg msgs[COMPRESS_MAX_MSGS];
    const int n = compress_plan(c, s->levels, msgs);
    for (int k = 0; k < n; k++)
        bytes += (double)msgs[k].count * (msgs[k].op == COMPRESS_ALLREDUCE_F32   ? 4
                                          : msgs[k].op == COMPRESS_ALLREDUCE_F16 ? 2
                                                                                 : 1);
    return bytes;
}

/* Each step's recorded "bytes" against what its decision sends (traces/README.md): a trace
 * whose figure is not its decision's is refused with its file and line, since the replay
 * charges the decision's bytes and the figure would say otherwise. Levels are checked first
 * (the plan takes only valid ones). */
static int check_bytes(const Trace *t, BwError *err)
{
    char name[SPEC_MAX_TEXT];
    snprintf(name, sizeof name, "%s", t->h.policy_compressor);
    name[strcspn(name, ":")] = '\0';
    const CompressorOps *ops = compress_find(name);
    LayerView *views = bw_xcalloc((size_t)t->h.n_layers, sizeof *views, "own_traces.c: views");
    Compressor *c = NULL;
    int rc = views ? BW_OK : bw_fail(err, BW_ERUNTIME, "out of memory");
    size_t offset = 0;
    for (int l = 0; rc == BW_OK && l < t->h.n_layers; l++) {
        const TraceLayer *L = &t->h.layers[l];
        views[l] = (LayerView){
            .offset = offset, .rows = L->rows, .cols = L->cols, .ndim = L->cols == 1 ? 1 : 2};
        snprintf(views[l].name, sizeof views[l].name, "%.31s", L->name);
        offset += (size_t)L->rows * (size_t)L->cols;
    }
    if (rc == BW_OK && !t->h.policy_periodic) {
        BwError why = {{0}};
        if (!ops || compress_create(t->h.policy_compressor, "--compressor", views, t->h.n_layers,
                                    t->h.workers, 0, 1, &c, &why))
            rc = bw_fail(err, BW_EUSAGE, "--traces %s: \"policy\": \"compressor\": %s", t->path,
                         ops ? why.msg : "not a compressor of bellows (bellows compressors)");
    }
    for (long i = 0; rc == BW_OK && i < t->n_steps; i++) {
        const TraceStep *s = &t->steps[i];
        BwError why = {{0}};
        for (int l = 0; c && l < t->h.n_layers && rc == BW_OK; l++)
            if (compress_check_level(ops, s->levels[l], NULL, &why))
                rc = bw_fail(err, BW_EUSAGE, "%s:%ld: \"levels\"[%d]: %s", t->path, s->line, l,
                             why.msg);
        const double want = rc ? 0 : decision_bytes(t, s, c);
        if (rc == BW_OK && fabs(s->bytes - want) > 0.5)
            rc = bw_fail(err, BW_EUSAGE,
                         "%s:%ld: \"bytes\": %.0f, but the decision sends %.0f (%s; bytes are "
                         "checked against the decisions, which the replay charges)",
                         t->path, s->line, s->bytes, want,
                         t->h.policy_periodic
                             ? (s->average ? "an averaging: 4 bytes a parameter" : "no averaging")
                             : t->h.policy_compressor);
    }
    compress_free(c);
    free(views);
    return rc;
}

/* The index of t's policy in specs (adding it), or -1 when there are too many. */
static int policy_of(OwnTraces *o, const Trace *t, char (*specs)[SPEC_MAX_TEXT],
                     char (*policy)[SPEC_MAX_TEXT], char (*compressor)[SPEC_MAX_TEXT], int max)
{
    char label[SPEC_MAX_TEXT];
    snprintf(label, sizeof label, "%.120s@%.120s", t->h.policy_spec, t->h.policy_compressor);
    for (int k = 0; k < o->n_pol; k++)
        if (strcmp(specs[k], label) == 0) return k;
    if (o->n_pol == max) return -1;
    snprintf(specs[o->n_pol], SPEC_MAX_TEXT, "%s", label);
    snprintf(policy[o->n_pol], SPEC_MAX_TEXT, "%s", t->h.policy_periodic ? "cpsgd" : "sync");
    snprintf(compressor[o->n_pol], SPEC_MAX_TEXT, "%s", t->h.policy_compressor);
    return o->n_pol++;
}

static int seed_index(const OwnTraces *o, long seed)
{
    for (int i = 0; i < o->n_seeds; i++)
        if (o->seeds[i] == seed) return i;
    return -1;
}

/* Policies and seeds, and the run table; every policy must have every seed once. */
static int group(OwnTraces *o, char (*specs)[SPEC_MAX_TEXT], char (*policy)[SPEC_MAX_TEXT],
                 char (*compressor)[SPEC_MAX_TEXT], int max_pol, int *pol_of, BwError *err)
{
    for (int i = 0; i < o->n; i++) {
        pol_of[i] = policy_of(o, &o->t[i], specs, policy, compressor, max_pol);
        if (pol_of[i] < 0)
            return bw_fail(err, BW_EUSAGE, "--traces %s: more than %d policies", o->t[i].path,
                           max_pol);
        long seed = o->t[i].h.policy_seed;
        if (seed_index(o, seed) < 0) {
            int j = o->n_seeds++;
            while (j > 0 && o->seeds[j - 1] > seed) o->seeds[j] = o->seeds[j - 1], j--;
            o->seeds[j] = (int)seed;
        }
    }
    o->run =
        bw_xcalloc((size_t)o->n_pol * (size_t)o->n_seeds, sizeof *o->run, "own_traces.c: o->run");
    if (!o->run) return bw_fail(err, BW_ERUNTIME, "out of memory");
    for (int i = 0; i < o->n; i++) {
        const Trace **slot = &o->run[seed_index(o, o->t[i].h.policy_seed) * o->n_pol + pol_of[i]];
        if (*slot)
            return bw_fail(err, BW_EUSAGE,
                           "--traces %s: \"policy.seed\": %s with seed %ld is %s already",
                           o->t[i].path, specs[pol_of[i]], o->t[i].h.policy_seed, (*slot)->path);
        *slot = &o->t[i];
    }
    int same = 1; /* one compressor for all: the labels are the policies' specs alone */
    for (int k = 1; k < o->n_pol; k++) same &= strcmp(compressor[k], compressor[0]) == 0;
    for (int k = 0; same && k < o->n_pol; k++) *strrchr(specs[k], '@') = '\0';
    for (int j = 0; j < o->n_pol * o->n_seeds; j++)
        if (!o->run[j])
            return bw_fail(err, BW_EUSAGE,
                           "--traces: \"policy.seed\": %s has no trace of seed %d, which others "
                           "have (speedups pair the policies by seed: give every policy the same "
                           "seeds)",
                           specs[j % o->n_pol], o->seeds[j / o->n_pol]);
    return BW_OK;
}

int own_traces_load(const char *list, OwnTraces *o, char (*specs)[SPEC_MAX_TEXT],
                    char (*policy)[SPEC_MAX_TEXT], char (*compressor)[SPEC_MAX_TEXT], int max_pol,
                    BwError *err)
{
    memset(o, 0, sizeof *o);
    char(*paths)[SPEC_MAX_TEXT] =
        bw_xmalloc(sizeof *paths * OWN_TRACES_MAX, "own_traces.c: SPEC_MAX_TEXT]");
    int n = 0;
    int rc = paths ? spec_split_list(list, "--traces", paths, OWN_TRACES_MAX, &n, err)
                   : bw_fail(err, BW_ERUNTIME, "out of memory");
    if (rc == BW_OK && !(o->t = bw_xcalloc((size_t)n, sizeof *o->t, "own_traces.c: o->t")))
        rc = bw_fail(err, BW_ERUNTIME, "out of memory");
    for (int i = 0; i < n && rc == BW_OK; i++) {
        for (int j = 0; j < i && rc == BW_OK; j++)
            if (strcmp(paths[i], paths[j]) == 0)
                rc = bw_fail(err, BW_EUSAGE, "--traces %s: listed twice", paths[i]);
        if (rc == BW_OK && (rc = trace_read_flag(paths[i], "--traces", &o->t[i], err)) == BW_OK)
            o->n++;
        if (rc == BW_OK) rc = check_own(&o->t[i], err);
        if (rc == BW_OK) rc = check_bytes(&o->t[i], err);
        char what[32], was[96], is[96];
        const char *field = rc ? NULL : differs(&o->t[0].h, &o->t[i].h, what, sizeof what);
        if (field) {
            field_value(&o->t[0].h, field, was, sizeof was);
            field_value(&o->t[i].h, field, is, sizeof is);
            rc = bw_fail(err, BW_EUSAGE,
                         "--traces %s: \"%s\" is %s, but %s's is %s: the traces compared must "
                         "share the model, data, workers and batch",
                         paths[i], field, is, paths[0], was);
        }
    }
    free(paths);
    int *pol_of = rc ? NULL : bw_xcalloc((size_t)n, sizeof *pol_of, "own_traces.c: memory");
    if (rc == BW_OK && !pol_of) rc = bw_fail(err, BW_ERUNTIME, "out of memory");
    if (rc == BW_OK) rc = group(o, specs, policy, compressor, max_pol, pol_of, err);
    free(pol_of);
    if (rc) own_traces_free(o);
    return rc;
}

void own_traces_free(OwnTraces *o)
{
    for (int i = 0; i < o->n; i++) trace_free(&o->t[i]);
    free(o->t);
    free(o->run);
    memset(o, 0, sizeof *o);
}
