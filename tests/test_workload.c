/* test_workload.c: workload profiles (sim/workload/): the built-ins load with their models'
 * exact parameter and tensor counts and published flops; a toy file parses to the layers,
 * tensors and flops written in it; the mapping by relative depth and by name; every bad input
 * is a usage error naming the file, the layer and the field; measured compute converts to flops
 * by hand-computed numbers; the small model's own profile. */
#include "testutil.h"

#include "trace.h"
#include "workload.h"

/* Writes text to DIR/name and returns the path in path[len]. */
static void write_file(const char *dir, const char *name, const char *text, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* Loads text as a profile file; returns the status, the workload in *out (NULL on error). */
static int load_text(const char *text, Workload **out, BwError *err, char *path, size_t len)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    write_file(dir, "prof.json", text, path, len);
    int rc = workload_load(path, "--workload", out, err);
    rm_tree(dir);
    return rc;
}

static void check_consistent(const Workload *w)
{
    size_t params = 0;
    int t = 0;
    for (int l = 0; l < w->n_layers; l++) {
        assert_int_equal(w->layers[l].first_tensor, t);
        for (int k = 0; k < w->layers[l].n_tensors; k++, t++) {
            const WorkloadTensor *x = &w->tensors[t];
            assert_int_equal(x->layer, l);
            size_t numel = 1;
            for (int d = 0; d < x->ndim; d++) numel *= (size_t)x->shape[d];
            assert_int_equal(x->numel, numel);
            assert_int_equal((size_t)x->rows * (size_t)x->cols, numel);
            params += numel;
        }
    }
    assert_int_equal(t, w->n_tensors);
    assert_int_equal(params, w->n_params);
}

static void test_every_builtin_loads(void **state)
{
    (void)state;
    const char *const *names = workload_builtin_names();
    int n = 0;
    for (; names[n]; n++) {
        Workload *w;
        BwError err = {{0}};
        if (workload_load(names[n], "--workload", &w, &err) != BW_OK)
            fail_msg("%s: %s", names[n], err.msg);
        assert_string_equal(w->name, names[n]);
        assert_string_equal(w->spec, names[n]);
        assert_int_equal(w->measured_batch, 0);
        assert_true(w->n_layers > 0 && w->n_tensors > 0);
        assert_true(workload_flops_per_sample(w) > 0);
        assert_non_null(strstr(w->source, "gen_profiles.py"));
        check_consistent(w);
        workload_free(w);
    }
    assert_int_equal(n, 10);
}

/* name, parameters, tensors, and the forward flops' range: 2 x the published multiply-adds (the
 * convs and linears; the elementwise work adds a little) or, for the transformers, 2 x
 * parameters x tokens plus the attention products 4 x layers x T^2 x d. */
static void test_builtins_match_their_models(void **state)
{
    (void)state;
    struct {
        const char *name;
        size_t params;
        int tensors;
        double fwd_lo, fwd_hi;
    } want[] = {
        {"resnet50", 25557032, 161, 2 * 4.09e9, 2 * 4.09e9 * 1.04},
        {"resnet18-cifar", 11173962, 62, 2 * 0.556e9, 2 * 0.556e9 * 1.04},
        {"vgg16", 138357544, 32, 2 * 15.47e9, 2 * 15.47e9 * 1.02},
        /* cifar10-fast's ResNet-9: 9 x (3x64x32^2 + 64x128x32^2 + 2x128x128x16^2 + 128x256x16^2
         * + 256x512x8^2 + 2x512x512x4^2) + 512x10 = 0.3793 G multiply-adds */
        {"resnet9-cifar", 6573120, 25, 2 * 0.3793e9, 2 * 0.3793e9 * 1.04},
        {"bert-base", 110106428, 206, 0.97 * (2 * 110106428.0 * 128 + 4 * 12 * 128.0 * 128 * 768),
         1.03 * (2 * 110106428.0 * 128 + 4 * 12 * 128.0 * 128 * 768)},
        {"gpt2-small", 124439808, 148,
         0.97 * (2 * 124439808.0 * 1024 + 4 * 12 * 1024.0 * 1024 * 768),
         1.03 * (2 * 124439808.0 * 1024 + 4 * 12 * 1024.0 * 1024 * 768)},
        {"llama-2-7b", 6738415616, 291,
         0.97 * (2 * 6738415616.0 * 4096 + 4 * 32 * 4096.0 * 4096 * 4096),
         1.03 * (2 * 6738415616.0 * 4096 + 4 * 32 * 4096.0 * 4096 * 4096)},
        /* GPT-2 XL: Hugging Face gpt2-xl's GPT2LMHeadModel count (48 layers, d 1600) */
        {"gpt2-xl", 1557611200, 580,
         0.97 * (2 * 1557611200.0 * 1024 + 4 * 48 * 1024.0 * 1024 * 1600),
         1.03 * (2 * 1557611200.0 * 1024 + 4 * 48 * 1024.0 * 1024 * 1600)},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        Workload *w;
        assert_int_equal(workload_load(want[i].name, "--workload", &w, NULL), BW_OK);
        assert_int_equal(w->n_params, want[i].params);
        assert_int_equal(w->n_tensors, want[i].tensors);
        double fwd = 0, bwd = 0;
        for (int l = 0; l < w->n_layers; l++) {
            fwd += workload_fwd_flops(w, l, 1, 1e12, 1);
            bwd += workload_bwd_flops(w, l, 1, 1e12, 1);
        }
        if (fwd < want[i].fwd_lo || fwd > want[i].fwd_hi)
            fail_msg("%s: forward %g flops, outside [%g, %g]", want[i].name, fwd, want[i].fwd_lo,
                     want[i].fwd_hi);
        /* backward: between 1x (parameter-free layers) and 2x forward */
        assert_true(bwd > 1.5 * fwd && bwd < 2 * fwd);
        assert_float_equal(workload_flops_per_sample(w), fwd + bwd, 1e-9 * (fwd + bwd));
        workload_free(w);
    }
}

/* ZeRO++'s 18B GPT-2 (Megatron: L 40, h 6144, vocab 50304, positions 1024, head tied): the
 * parameters in closed form, 12 L h^2 + 13 L h + (V + P) h + 2 h, and with activation
 * checkpointing the blocks' backward is 3x their forward, so the whole backward is between 2.5x
 * and 3x the forward (the head's and embeddings' is 2x or less). */
static void test_gpt2_18b_recomputes(void **state)
{
    (void)state;
    Workload *w;
    assert_int_equal(workload_load("gpt2-18b", "--workload", &w, NULL), BW_OK);
    const double L = 40, h = 6144;
    assert_int_equal(w->n_params,
                     (size_t)(12 * L * h * h + 13 * L * h + (50304 + 1024) * h + 2 * h));
    double fwd = 0, bwd = 0;
    for (int l = 0; l < w->n_layers; l++) {
        fwd += workload_fwd_flops(w, l, 1, 1e12, 1);
        bwd += workload_bwd_flops(w, l, 1, 1e12, 1);
    }
    assert_true(bwd > 2.5 * fwd && bwd < 3 * fwd);
    workload_free(w);
}

static void test_resnet50_shapes(void **state)
{
    (void)state;
    Workload *w;
    assert_int_equal(workload_load("resnet50", "--workload", &w, NULL), BW_OK);
    const WorkloadTensor *first = &w->tensors[0], *last = &w->tensors[w->n_tensors - 1];
    assert_string_equal(first->name, "conv1.weight");
    assert_int_equal(first->ndim, 4);
    int conv1[] = {64, 3, 7, 7};
    for (int d = 0; d < 4; d++) assert_int_equal(first->shape[d], conv1[d]);
    assert_int_equal(first->rows, 64);
    assert_int_equal(first->cols, 3 * 7 * 7);
    assert_string_equal(last->name, "fc.bias");
    assert_int_equal(last->ndim, 1);
    assert_int_equal(last->numel, 1000);
    /* conv1: 2 x 49 x 3 x 64 x 112 x 112 flops; the first layer has no input gradient */
    assert_string_equal(w->layers[0].name, "conv1");
    assert_float_equal(w->layers[0].fwd_flops, 2.0 * 49 * 3 * 64 * 112 * 112, 0);
    assert_float_equal(w->layers[0].bwd_flops, w->layers[0].fwd_flops, 0);
    workload_free(w);
}

static const char *TOY = "{\"name\": \"toy\", \"source\": \"by hand\", \"compute\": \"flops\",\n"
                         " \"note\": \"unknown keys are ignored\",\n"
                         " \"layers\": [\n"
                         "  {\"name\": \"conv\", \"fwd_flops\": 1000, \"bwd_flops\": 1000.5,\n"
                         "   \"tensors\": [{\"name\": \"conv.weight\", \"shape\": [4, 3, 3, 3]},\n"
                         "                {\"name\": \"conv.bias\", \"shape\": [4]}]},\n"
                         "  {\"name\": \"relu\", \"fwd_flops\": 10, \"bwd_flops\": 10},\n"
                         "  {\"name\": \"fc\", \"fwd_flops\": 0, \"bwd_flops\": 0, \"tensors\": [\n"
                         "   {\"name\": \"a_tensor_name_longer_than_thirty_one_chars.weight\",\n"
                         "    \"shape\": [2, 36], \"follows\": \"fc2\"}]}]}\n";

static void test_toy_file_parses(void **state)
{
    (void)state;
    Workload *w;
    BwError err = {{0}};
    char path[128];
    if (load_text(TOY, &w, &err, path, sizeof path) != BW_OK) fail_msg("%s", err.msg);
    assert_string_equal(w->name, "toy");
    assert_string_equal(w->source, "by hand");
    assert_string_equal(w->spec, path);
    assert_int_equal(w->n_layers, 3);
    assert_int_equal(w->n_tensors, 3);
    assert_int_equal(w->n_params, 108 + 4 + 72);
    check_consistent(w);
    assert_string_equal(w->layers[1].name, "relu");
    assert_int_equal(w->layers[1].n_tensors, 0);
    assert_int_equal(w->layers[2].first_tensor, 2);
    const WorkloadTensor *c = &w->tensors[0], *b = &w->tensors[1], *f = &w->tensors[2];
    assert_int_equal(c->ndim, 4);
    assert_int_equal(c->rows, 4);
    assert_int_equal(c->cols, 27);
    assert_int_equal(b->ndim, 1);
    assert_int_equal(b->rows, 4);
    assert_int_equal(b->cols, 1);
    assert_string_equal(f->follows, "fc2");
    assert_string_equal(c->follows, "");
    /* flops x b; the per-sample total */
    assert_float_equal(workload_fwd_flops(w, 0, 8, 1e12, 1), 8000, 0);
    assert_float_equal(workload_bwd_flops(w, 0, 8, 1e12, 1), 8004, 0);
    assert_float_equal(workload_flops_per_sample(w), 2020.5, 0);
    LayerView v[3];
    workload_views(w, v);
    assert_string_equal(v[0].name, "conv.weight");
    assert_int_equal(v[0].offset, 0);
    assert_int_equal(v[0].ndim, 2);
    assert_int_equal(v[0].rows * v[0].cols, 108);
    assert_int_equal(v[1].offset, 108);
    assert_int_equal(v[1].ndim, 1);
    assert_int_equal(v[1].rows, 4);
    assert_int_equal(v[1].cols, 1);
    assert_int_equal(v[2].offset, 112);
    assert_int_equal(strlen(v[2].name), 31);
    assert_memory_equal(v[2].name, f->name, 31);
    workload_free(w);
}

/* A profile of n layers with one [4, 4] matrix and one [4] vector each, w0 .. w{n-1}. */
static Workload *matrices(int n, char *path, size_t len)
{
    char text[4096] = "{\"name\": \"m\", \"compute\": \"flops\", \"layers\": [";
    for (int i = 0; i < n; i++) {
        size_t k = strlen(text);
        snprintf(text + k, sizeof text - k,
                 "%s{\"name\": \"l%d\", \"fwd_flops\": 1, \"bwd_flops\": 2, \"tensors\": "
                 "[{\"name\": \"w%d\", \"shape\": [4, 4]}, {\"name\": \"b%d\", \"shape\": [4]}]}",
                 i ? ", " : "", i, i, i);
    }
    strcat(text, "]}");
    Workload *w;
    BwError err = {{0}};
    if (load_text(text, &w, &err, path, len) != BW_OK) fail_msg("%s", err.msg);
    return w;
}

static LayerView view(const char *name, int rows, int cols, int ndim)
{
    LayerView v = {.rows = rows, .cols = cols, .ndim = ndim};
    snprintf(v.name, sizeof v.name, "%s", name);
    return v;
}

static void test_map_by_relative_depth(void **state)
{
    (void)state;
    char path[128];
    /* small: fc1 (matrix), fc1.b, fc2 (matrix), fc2.b */
    LayerView small[] = {view("fc1", 8, 4, 2), view("fc1.b", 8, 1, 1), view("fc2", 2, 8, 2),
                         view("fc2.b", 2, 1, 1)};
    Workload *w = matrices(5, path, sizeof path);
    int follows[10];
    assert_int_equal(workload_map(w, small, 4, "--workload", follows, NULL), BW_OK);
    /* the j-th of 5 real matrices follows the floor(j * 2 / 5)-th small matrix: 0,0,0,1,1,
     * that is small[0] or small[2]; the vectors -1 */
    int want[] = {0, -1, 0, -1, 0, -1, 2, -1, 2, -1};
    for (int t = 0; t < 10; t++) assert_int_equal(follows[t], want[t]);
    workload_free(w);

    /* 7 real to 3 small: floor(j * 3 / 7) = 0,0,0,1,1,2,2 */
    LayerView three[] = {view("a", 2, 2, 2), view("b", 2, 2, 2), view("c", 2, 2, 2)};
    w = matrices(7, path, sizeof path);
    int f7[14];
    assert_int_equal(workload_map(w, three, 3, "--workload", f7, NULL), BW_OK);
    int want7[] = {0, 0, 0, 1, 1, 2, 2};
    for (int j = 0; j < 7; j++) {
        assert_int_equal(f7[2 * j], want7[j]);
        assert_int_equal(f7[2 * j + 1], -1);
    }
    workload_free(w);
}

static void test_map_by_name_and_its_errors(void **state)
{
    (void)state;
    char path[128];
    LayerView small[] = {view("fc1", 8, 4, 2), view("fc1.b", 8, 1, 1), view("fc2", 2, 8, 2)};
    Workload *w = matrices(3, path, sizeof path);
    int follows[6];
    /* w0 names fc2; the others by depth, floor(j * 2 / 3): w1 -> 0, w2 -> 1 */
    snprintf(w->tensors[0].follows, sizeof w->tensors[0].follows, "fc2");
    assert_int_equal(workload_map(w, small, 3, "--workload", follows, NULL), BW_OK);
    assert_int_equal(follows[0], 2);
    assert_int_equal(follows[2], 0);
    assert_int_equal(follows[4], 2);
    assert_int_equal(follows[1], -1);

    BwError err = {{0}};
    snprintf(w->tensors[0].follows, sizeof w->tensors[0].follows, "fc9");
    assert_int_equal(workload_map(w, small, 3, "--workload", follows, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "--workload"));
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "\"fc9\""));
    assert_non_null(strstr(err.msg, "\"follows\""));

    snprintf(w->tensors[0].follows, sizeof w->tensors[0].follows, "fc1.b");
    assert_int_equal(workload_map(w, small, 3, "--workload", follows, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "vector"));
    assert_non_null(strstr(err.msg, path));
    workload_free(w);

    /* more small matrix layers than real matrices */
    w = matrices(1, path, sizeof path);
    assert_int_equal(workload_map(w, small, 3, "--workload", follows, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "--workload"));
    assert_non_null(strstr(err.msg, "2 matrix layers"));
    workload_free(w);
}

/* Bad profiles: the text, and two things its message must name. */
#define L0                                                                                         \
    "{\"name\": \"x\", \"compute\": \"flops\", \"layers\": [{\"name\": \"ok\", "                   \
    "\"fwd_flops\": 1, \"bwd_flops\": 1}, "
#define M0                                                                                         \
    "{\"name\": \"x\", \"compute\": {\"measured\": {\"batch\": 32, \"gpu\": \"A100\", "            \
    "\"precision\": \"fp32\"}}, \"layers\": [{\"name\": \"ok\", \"fwd_s\": 1, \"bwd_s\": 1}, "
#define T(shape)                                                                                   \
    L0 "{\"name\": \"c2\", \"fwd_flops\": 1, \"bwd_flops\": 1, \"tensors\": "                      \
       "[{\"name\": \"c2.w\", \"shape\": " shape "}]}]}"
static const struct {
    const char *text, *want1, *want2;
} BAD[] = {
    {T("[]"), "layers[1] \"c2\": tensors[0] \"c2.w\"", "\"shape\""},
    {T("[0, 3]"), "tensors[0] \"c2.w\"", "\"shape\" must be a list of 1 to 4 positive"},
    {T("[-2]"), "layers[1] \"c2\"", "\"shape\""},
    {T("[2.5, 3]"), "layers[1] \"c2\"", "\"shape\""},
    {T("[2, 3, 3, 3, 1]"), "layers[1] \"c2\"", "\"shape\""},
    {T("\"3x3\""), "layers[1] \"c2\"", "\"shape\""},
    {T("[65536, 65536, 65536]"), "layers[1] \"c2\"", "\"shape\""},
    {L0 "{\"name\": \"c2\", \"fwd_flops\": 1, \"bwd_flops\": 1, \"tensors\": "
        "[{\"name\": \"c2.w\"}]}]}",
     "layers[1] \"c2\": tensors[0] \"c2.w\"", "\"shape\""},
    {L0 "{\"name\": \"c2\", \"fwd_flops\": 1, \"bwd_flops\": 1, \"tensors\": "
        "[{\"shape\": [3]}]}]}",
     "layers[1] \"c2\": tensors[0]: ", "\"name\""},
    {L0 "{\"name\": \"c2\", \"fwd_flops\": 1, \"bwd_flops\": 1, \"tensors\": {}}]}", "layers[1]",
     "\"tensors\" must be a list"},
    {L0 "{\"name\": \"c2\", \"fwd_flops\": -1, \"bwd_flops\": 1}]}", "layers[1] \"c2\"",
     "\"fwd_flops\" must be a number >= 0"},
    {L0 "{\"name\": \"c2\", \"bwd_flops\": 1}]}", "layers[1] \"c2\"", "\"fwd_flops\""},
    {L0 "{\"name\": \"c2\", \"fwd_flops\": 1, \"bwd_flops\": \"2\"}]}", "layers[1] \"c2\"",
     "\"bwd_flops\""},
    {L0 "{\"fwd_flops\": 1, \"bwd_flops\": 1}]}", "layers[1]: ", "\"name\""},
    {L0 "{\"name\": \"c2\", \"fwd_flops\": 1, \"bwd_flops\": 1, \"tensors\": "
        "[{\"name\": \"c2.w\", \"shape\": [3], "
        "\"follows\": \"a_small_layer_name_of_32_chars__\"}]}]}",
     "tensors[0] \"c2.w\"", "\"follows\""},
    {M0 "{\"name\": \"c2\", \"fwd_s\": 0.1}]}", "layers[1] \"c2\"", "\"bwd_s\""},
    {M0 "{\"name\": \"c2\", \"fwd_s\": -0.1, \"bwd_s\": 0.2}]}", "layers[1] \"c2\"",
     "\"fwd_s\" must be a number >= 0"},
    {M0 "{\"name\": \"c2\", \"fwd_flops\": 5, \"bwd_flops\": 5}]}", "layers[1] \"c2\"",
     "\"fwd_s\""},
    {"{\"name\": \"x\", \"compute\": {\"measured\": {\"batch\": 0, \"gpu\": \"A100\", "
     "\"precision\": \"fp32\"}}, \"layers\": [{\"name\": \"a\", \"fwd_s\": 1, \"bwd_s\": 1}]}",
     "\"compute\"", "\"batch\""},
    {"{\"name\": \"x\", \"compute\": {\"measured\": {\"batch\": 8, \"gpu\": \"A100\", "
     "\"precision\": \"fp64\"}}, \"layers\": [{\"name\": \"a\", \"fwd_s\": 1, \"bwd_s\": 1}]}",
     "\"compute\"", "\"precision\""},
    {"{\"name\": \"x\", \"compute\": {\"measured\": {\"batch\": 8, "
     "\"precision\": \"fp32\"}}, \"layers\": [{\"name\": \"a\", \"fwd_s\": 1, \"bwd_s\": 1}]}",
     "\"compute\"", "\"gpu\""},
    {"{\"name\": \"x\", \"layers\": [{\"name\": \"a\", \"fwd_flops\": 1, \"bwd_flops\": 1}]}",
     "prof.json: ", "\"compute\""},
    {"{\"compute\": \"flops\", \"layers\": [{\"name\": \"a\", \"fwd_flops\": 1, "
     "\"bwd_flops\": 1}]}",
     "prof.json: ", "\"name\""},
    {"{\"name\": \"x\", \"compute\": \"flops\", \"layers\": []}", "prof.json: ", "\"layers\""},
    {"{\"name\": \"x\", \"compute\": \"flops\", \"layers\": [", "prof.json: ", "line"},
    {"[1, 2]", "prof.json: ", "JSON object"},
};
#undef T
#undef L0
#undef M0

/* Every bad input: a usage error naming the file, where, and the field. */
static void test_bad_profiles_are_usage_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        Workload *w = (Workload *)&w; /* must come back NULL */
        BwError err = {{0}};
        char path[128];
        if (load_text(BAD[i].text, &w, &err, path, sizeof path) != BW_EUSAGE)
            fail_msg("bad[%zu] was accepted: %s", i, BAD[i].text);
        assert_null(w);
        if (!strstr(err.msg, "--workload ") || !strstr(err.msg, path) ||
            !strstr(err.msg, BAD[i].want1) || !strstr(err.msg, BAD[i].want2))
            fail_msg("bad[%zu]: the message '%s' does not name '%s' and '%s'", i, err.msg,
                     BAD[i].want1, BAD[i].want2);
    }
}

static void test_bad_names_and_paths(void **state)
{
    (void)state;
    Workload *w;
    BwError err = {{0}};
    assert_int_equal(workload_load("resnet1000", "--workload", &w, &err), BW_EUSAGE);
    assert_null(w);
    for (const char *const *n = workload_builtin_names(); *n; n++)
        assert_non_null(strstr(err.msg, *n));
    assert_non_null(strstr(err.msg, "--workload resnet1000"));
    assert_int_equal(workload_load("dir/prof.txt", "--workload", &w, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "--workload dir/prof.txt: a profile file must be .json"));
    /* .jsonl and .jsonl.gz are traces (test_profile_from_a_traces_timing) */
    const char *traces[] = {"trace.jsonl", "run/trace.jsonl.gz"};
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(workload_load(traces[i], "--workload", &w, &err), BW_EUSAGE);
        assert_non_null(strstr(err.msg, "--workload"));
        assert_non_null(strstr(err.msg, traces[i]));
    }
    assert_int_equal(workload_load("/nonexistent/prof.json", "--workload", &w, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "--workload /nonexistent/prof.json"));
}

/* Measured compute: seconds x b / batch x peak ratio x speed, by hand. */
static void test_measured_compute_converts_to_flops(void **state)
{
    (void)state;
    const char *text = "{\"name\": \"meas\", \"compute\": {\"measured\": {\"batch\": 64, \"gpu\": "
                       "\"V100\", \"precision\": \"tf32\"}}, \"layers\": [{\"name\": \"a\", "
                       "\"fwd_s\": 0.032, \"bwd_s\": 0.064, \"tensors\": [{\"name\": \"w\", "
                       "\"shape\": [3, 3]}]}, {\"name\": \"b\", \"fwd_s\": 0, \"bwd_s\": 0.001}]}";
    Workload *w;
    BwError err = {{0}};
    char path[128];
    if (load_text(text, &w, &err, path, sizeof path) != BW_OK) fail_msg("%s", err.msg);
    assert_int_equal(w->measured_batch, 64);
    assert_string_equal(w->measured_gpu, "V100");
    assert_string_equal(w->measured_precision, "tf32");
    /* 0.032 s at batch 64 is 0.5 ms a sample; 16 samples 8 ms; on a GPU twice as fast (ratio
     * 0.5) 4 ms; at 10 Tflop/s 4e10 flops */
    assert_float_equal(workload_fwd_flops(w, 0, 16, 10e12, 0.5), 4e10, 1e-3);
    assert_float_equal(workload_bwd_flops(w, 0, 16, 10e12, 0.5), 8e10, 1e-3);
    /* 0.001 s x 128 / 64 x 1 x 2e12 = 4e9 */
    assert_float_equal(workload_bwd_flops(w, 1, 128, 2e12, 1), 4e9, 1e-4);
    assert_float_equal(workload_fwd_flops(w, 1, 128, 2e12, 1), 0, 0);
    assert_float_equal(workload_flops_per_sample(w), 0, 0);
    workload_free(w);
}

/* A trace's header with a timing profile: a recorder puts a module's time on its first tensor,
 * so each timed tensor starts a layer named after its module and the untimed ones after it join
 * it (the leading untimed one joins the first); the times and the batch are the trace's. */
static void write_timed_trace(const char *path, int timing, double scale)
{
    static const struct {
        const char *name;
        int rows, cols;
        double fwd, bwd;
    } T[] = {{"embed.scale", 8, 1, 0, 0},      {"conv1.weight", 4, 9, 1e-3, 2e-3},
             {"bn1.weight", 4, 1, 5e-4, 1e-4}, {"bn1.bias", 4, 1, 0, 0},
             {"fc.weight", 10, 4, 2e-4, 3e-4}, {"fc.bias", 10, 1, 0, 0}};
    TraceLayer layers[6];
    memset(layers, 0, sizeof layers);
    TraceHeader h;
    memset(&h, 0, sizeof h);
    snprintf(h.model, sizeof h.model, "toy-net");
    snprintf(h.source, sizeof h.source, "pytorch");
    h.workers = 1, h.batch = 32, h.flops_per_sample = 1, h.n_layers = 6, h.layers = layers;
    for (int t = 0; t < 6; t++) {
        snprintf(layers[t].name, sizeof layers[t].name, "%s", T[t].name);
        layers[t].rows = T[t].rows, layers[t].cols = T[t].cols;
        layers[t].fwd_s = scale * T[t].fwd, layers[t].bwd_s = scale * T[t].bwd;
    }
    h.has_timing = timing, h.timing_steps = 4;
    snprintf(h.timing_device, sizeof h.timing_device, "cpu");
    TraceWriter *tw;
    BwError err;
    if (trace_writer_open(path, &h, &tw, &err) != BW_OK) fail_msg("%s", err.msg);
    double norms[6] = {1, 1, 1, 1, 1, 1};
    TraceStep st = {.lr = 0.1, .loss = 1, .batch = 32, .grad_norms = norms};
    trace_write_step(tw, &st);
    if (trace_writer_close(tw, &err) != BW_OK) fail_msg("%s", err.msg);
}

static void test_profile_from_a_traces_timing(void **state)
{
    (void)state;
    char dir[64], path[128];
    make_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/run.jsonl.gz", dir);
    write_timed_trace(path, 1, 1);
    Workload *w = NULL;
    BwError err = {{0}};
    if (workload_load(path, "--workload", &w, &err) != BW_OK) fail_msg("%s", err.msg);
    check_consistent(w);
    assert_string_equal(w->name, "toy-net");
    assert_int_equal(w->n_tensors, 6);
    assert_int_equal(w->n_layers, 3);
    assert_int_equal(w->n_params, 8 + 36 + 4 + 4 + 40 + 10);
    static const char *names[] = {"conv1", "bn1", "fc"};
    static const int first[] = {0, 2, 4}, count[] = {2, 2, 2};
    static const double fwd[] = {1e-3, 5e-4, 2e-4}, bwd[] = {2e-3, 1e-4, 3e-4};
    for (int l = 0; l < 3; l++) {
        assert_string_equal(w->layers[l].name, names[l]);
        assert_int_equal(w->layers[l].first_tensor, first[l]);
        assert_int_equal(w->layers[l].n_tensors, count[l]);
        assert_true(w->layers[l].fwd_s == fwd[l] && w->layers[l].bwd_s == bwd[l]);
        assert_true(w->layers[l].fwd_flops == 0 && w->layers[l].bwd_flops == 0);
    }
    assert_int_equal(w->tensors[0].ndim, 1); /* cols 1: a vector */
    assert_int_equal(w->tensors[1].ndim, 2);
    assert_int_equal(w->tensors[4].rows, 10);
    assert_int_equal(w->tensors[4].cols, 4);
    /* measured at the trace's batch, taken as they are: 1e-3 s at batch 32 for 16 samples at
     * 1e12 flop/s and ratio 1 is 5e8 flops */
    assert_int_equal(w->measured_batch, 32);
    assert_string_equal(w->measured_gpu, "");
    assert_float_equal(workload_fwd_flops(w, 0, 16, 1e12, 1), 5e8, 1e-3);
    assert_float_equal(workload_bwd_flops(w, 2, 32, 1e12, 1), 3e8, 1e-3);
    assert_non_null(strstr(w->source, "cpu"));
    workload_free(w);
    /* without "timing", or with every time 0: a usage error naming the file */
    write_timed_trace(path, 0, 1);
    assert_int_equal(workload_from_trace(path, "--workload", &w, &err), BW_EUSAGE);
    assert_null(w);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "lacks per-layer times"));
    write_timed_trace(path, 1, 0);
    assert_int_equal(workload_load(path, "--workload", &w, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "every layer's time is 0"));
    rm_tree(dir);
}

static void test_from_model(void **state)
{
    (void)state;
    LayerView small[] = {view("w1", 8, 4, 2), view("b1", 8, 1, 1), view("w2", 2, 8, 2),
                         view("b2", 2, 1, 1)};
    Workload *w;
    assert_int_equal(workload_from_model(small, 4, 300, &w, NULL), BW_OK);
    assert_int_equal(w->n_layers, 2);
    assert_int_equal(w->n_tensors, 4);
    assert_int_equal(w->n_params, 32 + 8 + 16 + 2);
    check_consistent(w);
    /* flops split by the matrices' sizes, 32 : 16; a third forward */
    assert_float_equal(w->layers[0].fwd_flops, 300.0 * 32 / 48 / 3, 1e-9);
    assert_float_equal(w->layers[0].bwd_flops, 300.0 * 32 / 48 * 2 / 3, 1e-9);
    assert_float_equal(w->layers[1].fwd_flops, 300.0 * 16 / 48 / 3, 1e-9);
    assert_float_equal(workload_flops_per_sample(w), 300, 1e-9);
    assert_int_equal(w->layers[1].first_tensor, 2);
    assert_int_equal(w->layers[1].n_tensors, 2);
    int follows[4];
    assert_int_equal(workload_map(w, small, 4, "--workload", follows, NULL), BW_OK);
    int want[] = {0, -1, 2, -1};
    for (int t = 0; t < 4; t++) assert_int_equal(follows[t], want[t]);
    LayerView v[4];
    workload_views(w, v);
    for (int t = 0; t < 4; t++) {
        assert_string_equal(v[t].name, small[t].name);
        assert_int_equal(v[t].rows, small[t].rows);
        assert_int_equal(v[t].cols, small[t].cols);
        assert_int_equal(v[t].ndim, small[t].ndim);
    }
    assert_int_equal(v[3].offset, 32 + 8 + 16);
    workload_free(w);
}

static void test_listing_has_one_line_each(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    workload_print_list(f);
    assert_int_equal(fclose(f), 0);
    const char *const *names = workload_builtin_names();
    const char *line = buf;
    int n = 0;
    for (; names[n]; n++) {
        assert_memory_equal(line, names[n], strlen(names[n]));
        assert_int_equal(line[strlen(names[n])], ' ');
        const char *end = strchr(line, '\n');
        assert_non_null(end);
        line = end + 1;
    }
    assert_string_equal(line, "");
    assert_non_null(strstr(buf, "25557032 params  161 tensors"));
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_builtin_loads),
        cmocka_unit_test(test_builtins_match_their_models),
        cmocka_unit_test(test_resnet50_shapes),
        cmocka_unit_test(test_gpt2_18b_recomputes),
        cmocka_unit_test(test_toy_file_parses),
        cmocka_unit_test(test_map_by_relative_depth),
        cmocka_unit_test(test_map_by_name_and_its_errors),
        cmocka_unit_test(test_bad_profiles_are_usage_errors),
        cmocka_unit_test(test_bad_names_and_paths),
        cmocka_unit_test(test_measured_compute_converts_to_flops),
        cmocka_unit_test(test_profile_from_a_traces_timing),
        cmocka_unit_test(test_from_model),
        cmocka_unit_test(test_listing_has_one_line_each),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
