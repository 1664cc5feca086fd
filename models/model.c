/* model.c: the model registry, model options and configurations, creation and
 * initialisation, and the pieces shared by every model (loss and its gradient, evaluation in
 * chunks).
 *
 * Adding a model: write models/NAME.c defining `const ModelOps model_NAME_ops` (its name, help
 * line, options table, optional check, setup, forward, backward, flops_per_sample, free_impl;
 * mlp.c and cnn.c are examples; resnet.c for a model with state and a train mode), and add the line
 * MODEL(NAME) to models/models.def. CMake compiles every .c in models/; --model, one --OPTION flag
 * per option, the "applies to --model NAME only" refusal and summary.json's keys all come from the
 * registry. */
#include "model.h"
#include "xalloc.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_rng.h>

#include "layers.h"

/* The registry is models.def: one MODEL(name) line per model declares its ModelOps and puts
 * it in the table, so a new model touches no list here. */
/* clang-format off */
#define MODEL(name) extern const ModelOps model_##name##_ops;
#include "models.def"
#undef MODEL

static const ModelOps *const registry[] = {
#define MODEL(name) &model_##name##_ops,
#include "models.def"
#undef MODEL
    NULL};
/* clang-format on */

const ModelOps *const *model_registry(void)
{
    return registry;
}

const ModelOps *model_find(const char *name)
{
    for (int i = 0; registry[i]; i++)
        if (strcmp(registry[i]->name, name) == 0) return registry[i];
    return NULL;
}

int model_option_index(const ModelOps *ops, const char *name)
{
    assert(ops->n_options <= MODEL_MAX_OPTIONS);
    for (int k = 0; k < ops->n_options; k++)
        if (strcmp(ops->options[k].name, name) == 0) return k;
    return -1;
}

/* The first declaration of name in the registry. */
static const ModelOption *first_declaration(const char *name)
{
    for (const ModelOps *const *r = registry; *r; r++) {
        int k = model_option_index(*r, name);
        if (k >= 0) return &(*r)->options[k];
    }
    return NULL;
}

/* One flag serves every model that declares the name, so they must describe it alike. */
#if defined(__GNUC__)
__attribute__((unused)) /* read by an assert only */
#endif
static int
same_option(const ModelOption *a, const ModelOption *b)
{
    return strcmp(a->def, b->def) == 0 && a->min == b->min && a->max == b->max &&
           a->min_count == b->min_count && a->max_count == b->max_count && a->summary == b->summary;
}

const ModelOption *model_registry_option(int i)
{
    assert(i >= 0);
    for (const ModelOps *const *r = registry; *r; r++)
        for (int k = 0; k < (*r)->n_options; k++) {
            const ModelOption *o = &(*r)->options[k], *first = first_declaration(o->name);
            if (first != o) {
                assert(same_option(first, o) && "models declare one option name differently");
                continue;
            }
            if (i-- == 0) return o;
        }
    return NULL;
}

ModelInts model_option_default(const ModelOption *o)
{
    assert(o->min_count >= 1 && o->min_count <= o->max_count &&
           o->max_count <= MODEL_OPTION_MAX_INTS);
    ModelInts d = {0};
    for (const char *p = o->def; d.n < MODEL_OPTION_MAX_INTS;) {
        char *end;
        long v = strtol(p, &end, 10);
        assert(end != p && v >= o->min && v <= o->max && "a model option's default");
        d.v[d.n++] = (int)v;
        if (*end != ',') {
            assert(*end == '\0' && "a model option's default");
            break;
        }
        p = end + 1;
    }
    assert(d.n >= o->min_count && d.n <= o->max_count && "a model option's default");
    return d;
}

ModelConfig model_config_default(void)
{
    ModelConfig c;
    memset(&c, 0, sizeof c);
    c.in_channels = 1;
    c.in_rows = 28;
    c.in_cols = 28;
    c.classes = 10;
    return c;
}

void model_config_set(ModelConfig *c, const ModelOps *ops, const char *name, int n, const int *v)
{
    int k = model_option_index(ops, name);
    assert(k >= 0 && "the model has no such option");
    assert(n >= 0 && n <= MODEL_OPTION_MAX_INTS);
    assert((!c->ops || c->ops == ops) && "a configuration holds one model's options");
    c->ops = ops;
    c->opt[k].n = n;
    if (n) memcpy(c->opt[k].v, v, sizeof(int) * (size_t)n);
}

int model_config_get(const ModelConfig *c, const ModelOps *ops, const char *name, ModelInts *out)
{
    int k = ops ? model_option_index(ops, name) : -1;
    if (k < 0) return 0;
    assert((!c->ops || c->ops == ops) && "a configuration holds one model's options");
    *out = c->opt[k].n ? c->opt[k] : model_option_default(&ops->options[k]);
    return 1;
}

/* cfg bound to ops with every option filled (defaults for the empty ones). */
static ModelConfig config_filled(const ModelOps *ops, const ModelConfig *cfg)
{
    assert((!cfg->ops || cfg->ops == ops) && "a configuration holds one model's options");
    ModelConfig c = *cfg;
    c.ops = ops;
    for (int k = 0; k < MODEL_MAX_OPTIONS; k++) {
        assert((k < ops->n_options || c.opt[k].n == 0) && "a value for an undeclared option");
        if (k < ops->n_options && c.opt[k].n == 0)
            c.opt[k] = model_option_default(&ops->options[k]);
    }
    return c;
}

int model_check(const ModelOps *ops, const ModelConfig *cfg, BwError *err)
{
    ModelConfig c = config_filled(ops, cfg);
    if (ops->check) {
        int rc = ops->check(&c, err);
        if (rc) return rc;
    }
    for (int k = 0; k < ops->n_options; k++) {
        const ModelOption *o = &ops->options[k];
        const ModelInts *v = &c.opt[k];
        if (v->n < o->min_count || v->n > o->max_count)
            return bw_fail(err, BW_EUSAGE, "--%s: expected from %d to %d integers, got %d", o->name,
                           o->min_count, o->max_count, v->n);
        for (int i = 0; i < v->n; i++)
            if (v->v[i] < o->min || v->v[i] > o->max)
                return bw_fail(err, BW_EUSAGE, "--%s: expected integers in [%d, %d], got %d",
                               o->name, o->min, o->max, v->v[i]);
    }
    return BW_OK;
}

void model_add_layer(Model *m, const char *name, int rows, int cols, int ndim)
{
    if (m->layers_cap < 0) return; /* an earlier append ran out of memory */
    if (m->n_layers == m->layers_cap) {
        int cap = m->layers_cap ? 2 * m->layers_cap : 8;
        LayerView *p = bw_xrealloc(m->layers, sizeof *p * (size_t)cap, "model.c: p");
        if (!p) {
            m->layers_cap = -1;
            return;
        }
        m->layers = p;
        m->layers_cap = cap;
    }
    LayerView *v = &m->layers[m->n_layers++];
    snprintf(v->name, sizeof v->name, "%s", name);
    v->offset = m->n_params;
    v->rows = rows;
    v->cols = cols;
    v->ndim = ndim;
    m->n_params += layer_size(v);
}

int model_reserve(float **buf, size_t *cap, size_t count)
{
    if (count <= *cap) return 1;
    float *p = bw_xrealloc(*buf, count * sizeof(float), "model.c: p");
    if (!p) return 0;
    *buf = p;
    *cap = count;
    return 1;
}

/* Allocates the parameters and gradients of m's layer table and initialises the parameters
 * from seed: every weight matrix U(-1/sqrt(cols), 1/sqrt(cols)) and every vector with the fan-in
 * of the matrix before it, as PyTorch's nn.Linear and nn.Conv2d defaults do. */
static int init_params(Model *m, unsigned long seed, BwError *err)
{
    m->params = bw_xcalloc(m->n_params, sizeof(float), "model.c: m->params");
    m->grads = bw_xcalloc(m->n_params, sizeof(float), "model.c: m->grads");
    m->state = m->n_state ? bw_xcalloc(m->n_state, sizeof(float), "model.c: memory") : NULL;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!m->params || !m->grads || (m->n_state && !m->state) || !rng) {
        if (rng) gsl_rng_free(rng);
        return bw_fail(err, BW_ERUNTIME, "out of memory for %zu parameters", m->n_params);
    }
    gsl_rng_set(rng, seed);
    int fan_in = 1;
    for (int l = 0; l < m->n_layers; l++) {
        const LayerView *v = &m->layers[l];
        if (v->ndim == 2) fan_in = v->cols;
        double bound = 1.0 / sqrt((double)fan_in);
        float *p = m->params + v->offset;
        for (size_t i = 0; i < layer_size(v); i++)
            p[i] = (float)((2.0 * gsl_rng_uniform(rng) - 1.0) * bound);
    }
    gsl_rng_free(rng);
    return BW_OK;
}

int model_create(const ModelOps *ops, const ModelConfig *cfg, unsigned long seed, Model **out,
                 BwError *err)
{
    *out = NULL;
    if (cfg->in_channels <= 0 || cfg->in_rows <= 0 || cfg->in_cols <= 0 || cfg->classes < 2)
        return bw_fail(err, BW_EUSAGE, "model %s: bad input shape", ops->name);
    int rc = model_check(ops, cfg, err);
    if (rc) return rc;
    Model *m = bw_xcalloc(1, sizeof *m, "model.c: m");
    if (!m) return bw_fail(err, BW_ERUNTIME, "out of memory");
    m->ops = ops;
    m->cfg = config_filled(ops, cfg);
    rc = ops->setup(m, err);
    if (!rc && m->layers_cap < 0)
        rc = bw_fail(err, BW_ERUNTIME, "model %s: out of memory for its layer table", ops->name);
    if (rc) {
        model_free(m);
        return rc;
    }
    if ((rc = init_params(m, seed, err))) {
        model_free(m);
        return bw_fail(err, rc, "model %s: out of memory", ops->name);
    }
    if (ops->init) ops->init(m);
    *out = m;
    return BW_OK;
}

void model_free(Model *m)
{
    if (!m) return;
    if (m->ops && m->ops->free_impl) m->ops->free_impl(m);
    if (!(m->borrowed & MODEL_BORROWS_PARAMS)) free(m->params);
    if (!(m->borrowed & MODEL_BORROWS_GRADS)) free(m->grads);
    if (!(m->borrowed & MODEL_BORROWS_STATE)) free(m->state);
    free(m->dlogits);
    free(m->layers);
    free(m);
}

/* One buffer of model_borrow: the own one freed once, then pointed at the lent one. */
static void borrow_one(Model *m, float **buf, float *lent, unsigned bit)
{
    if (!lent) return;
    if (!(m->borrowed & bit)) free(*buf);
    *buf = lent;
    m->borrowed |= bit;
}

void model_borrow(Model *m, float *params, float *grads, float *state)
{
    borrow_one(m, &m->params, params, MODEL_BORROWS_PARAMS);
    borrow_one(m, &m->grads, grads, MODEL_BORROWS_GRADS);
    borrow_one(m, &m->state, state, MODEL_BORROWS_STATE);
}

/* A model of owner's kind and configuration, with its own layer table, activations, gradients
 * (zero) and a copy of owner's state; its parameters owner's (share) or a copy of them. */
static int create_like(Model *owner, int share, Model **out, BwError *err)
{
    *out = NULL;
    assert(owner->ops->setup && "a registered model");
    Model *m = bw_xcalloc(1, sizeof *m, "model.c: m");
    if (!m) return bw_fail(err, BW_ERUNTIME, "out of memory");
    m->ops = owner->ops;
    m->cfg = owner->cfg;
    int rc = m->ops->setup(m, err);
    if (!rc && m->layers_cap < 0)
        rc = bw_fail(err, BW_ERUNTIME, "model %s: out of memory for its layer table", m->ops->name);
    if (!rc) {
        assert(m->n_params == owner->n_params && m->n_state == owner->n_state);
        const size_t np = m->n_params ? m->n_params : 1;
        if (share) {
            m->params = owner->params;
            m->borrowed = MODEL_BORROWS_PARAMS;
        } else if ((m->params = bw_xmalloc(sizeof(float) * np, "model.c: m->params"))) {
            memcpy(m->params, owner->params, sizeof(float) * m->n_params);
        }
        m->grads = bw_xcalloc(np, sizeof(float), "model.c: m->grads");
        m->state = m->n_state ? bw_xmalloc(sizeof(float) * m->n_state, "model.c: memory") : NULL;
        if (!m->params || !m->grads || (m->n_state && !m->state))
            rc = bw_fail(err, BW_ERUNTIME, "out of memory for %zu parameters", m->n_params);
        else if (m->n_state)
            memcpy(m->state, owner->state, sizeof(float) * m->n_state);
    }
    if (rc) {
        model_free(m);
        return rc;
    }
    *out = m;
    return BW_OK;
}

int model_create_sharing(Model *owner, Model **out, BwError *err)
{
    return create_like(owner, 1, out, err);
}

int model_create_copy(Model *owner, Model **out, BwError *err)
{
    return create_like(owner, 0, out, err);
}

static int count_correct(const float *logits, const uint8_t *y, int n, int c)
{
    int correct = 0;
    for (int r = 0; r < n; r++) {
        const float *z = logits + (size_t)r * c;
        int best = 0;
        for (int j = 1; j < c; j++)
            if (z[j] > z[best]) best = j;
        correct += best == y[r];
    }
    return correct;
}

double model_forward_backward_count(Model *m, const float *x, const uint8_t *y, int n, int *correct)
{
    int c = m->cfg.classes;
    if (n > m->dlogits_cap) {
        float *p = bw_xrealloc(m->dlogits, (size_t)n * c * sizeof(float), "model.c: p");
        if (!p) return NAN;
        m->dlogits = p;
        m->dlogits_cap = n;
    }
    m->train = 1;
    const float *logits = m->ops->forward(m, x, n);
    double loss = NAN;
    if (logits) {
        if (correct) *correct = count_correct(logits, y, n, c);
        loss = softmax_xent(m->dlogits, logits, y, n, c);
        m->ops->backward(m, x, m->dlogits, n);
    }
    m->train = 0;
    return loss;
}

double model_forward_backward(Model *m, const float *x, const uint8_t *y, int n)
{
    return model_forward_backward_count(m, x, y, n, NULL);
}

int model_evaluate_part(Model *m, const float *x, const uint8_t *y, int k, double *xent_sum,
                        long *correct)
{
    const int c = m->cfg.classes;
    *xent_sum = 0;
    *correct = 0;
    float *dl = bw_xmalloc((size_t)k * c * sizeof(float), "model.c: dl");
    const float *logits = dl ? m->ops->forward(m, x, k) : NULL;
    if (!logits) {
        free(dl);
        return BW_ERUNTIME;
    }
    *correct = count_correct(logits, y, k, c);
    *xent_sum = softmax_xent(dl, logits, y, k, c) * k;
    free(dl);
    return BW_OK;
}

int model_evaluate(Model *m, const float *x, const uint8_t *y, int n, int dim, double *loss,
                   double *accuracy, BwError *err)
{
    double total = 0.0;
    long correct = 0;
    *loss = 0.0;
    *accuracy = 0.0;
    for (int at = 0; at < n; at += MODEL_EVAL_CHUNK) {
        int k = n - at < MODEL_EVAL_CHUNK ? n - at : MODEL_EVAL_CHUNK;
        double part;
        long right;
        if (model_evaluate_part(m, x + (size_t)at * dim, y + at, k, &part, &right))
            return bw_fail(err, BW_ERUNTIME, "evaluation: out of memory");
        correct += right;
        total += part;
    }
    *loss = n ? total / n : 0.0;
    *accuracy = n ? (double)correct / n : 0.0;
    return BW_OK;
}

/* ---- a model that is only a layer table (model_create_from_layers) ---- */

static double layer_table_flops(const Model *m)
{
    return *(const double *)m->impl;
}

static void layer_table_free(Model *m)
{
    free(m->impl);
    m->impl = NULL;
}

/* Not registered: its models come only from model_create_from_layers, never from model_create
 * (it has no setup, forward or backward). */
static const ModelOps layer_table_ops = {.name = "layers",
                                         .help = "a layer table without forward or backward",
                                         .flops_per_sample = layer_table_flops,
                                         .free_impl = layer_table_free};

int model_create_from_layers(const LayerView *layers, int n_layers, double flops_per_sample,
                             unsigned long seed, Model **out, BwError *err)
{
    *out = NULL;
    if (n_layers < 0) return bw_fail(err, BW_EUSAGE, "%d layers", n_layers);
    Model *m = bw_xcalloc(1, sizeof *m, "model.c: m");
    double *fps = bw_xmalloc(sizeof *fps, "model.c: fps");
    if (!m || !fps) {
        free(m);
        free(fps);
        return bw_fail(err, BW_ERUNTIME, "out of memory");
    }
    *fps = flops_per_sample;
    m->ops = &layer_table_ops;
    m->impl = fps; /* where layer_table_flops finds it: the ops carry no data */
    for (int l = 0; l < n_layers; l++)
        model_add_layer(m, layers[l].name, layers[l].rows, layers[l].cols, layers[l].ndim);
    int rc = m->layers_cap < 0
                 ? bw_fail(err, BW_ERUNTIME, "out of memory for %d layers", n_layers)
                 : init_params(m, seed,
                               err); /* as model_create does: same table and seed, same values */
    if (rc) {
        model_free(m);
        return rc;
    }
    *out = m;
    return BW_OK;
}
