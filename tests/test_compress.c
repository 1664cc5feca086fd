/* test_compress.c: the gradient compressors' contract. Each scenario runs W workers in a
 * forked child (compresstest.h's harness). A contract runs every registered compressor through
 * the same checks (error-feedback identity, bytes equal to the payload, identical results on
 * every rank, levels changing between steps, determinism, compress_plan's messages equal to the
 * collectives reduce really called); a dense step's mean goes once into a shared buffer; bad
 * names, options and levels are refused saying what was expected; the listing names every
 * compressor. Each compressor against its definition: test_compress_methods.c. */
#include "testutil.h"

#include "compresstest.h"

/* ---- levels for the contract ---- */

static double default_level(const CompressorOps *o)
{
    return o->level_name ? o->level_default : 1;
}

static double alt_level(const CompressorOps *o)
{
    if (!o->level_name) return 1;
    if (o->level_integer) return fmax(o->level_min, floor(o->level_default / 2));
    return o->level_default / 2;
}

/* Four steps: all at the default; some layers dense and some at another level; the other way
 * round; all back at the default. */
static void contract_schedule(const CompressorOps *o, Run *r)
{
    double d = default_level(o), a = alt_level(o);
    double rows[4][NL] = {
        {d, d, d, d, d, d}, {0, d, a, d, d, a}, {a, d, d, d, 0, d}, {d, d, d, d, d, d}};
    set_schedule(r, 4, rows);
}

/* "name:ef=1" when the compressor has an ef option, else "name". */
static void ef_spec(const CompressorOps *o, char *buf, size_t n)
{
    int has_ef = 0;
    for (int i = 0; i < o->n_opts; i++) has_ef |= strcmp(o->opts[i].key, "ef") == 0;
    snprintf(buf, n, has_ef ? "%s:ef=1" : "%s", o->name);
}

/* ---- the contract, for every registered compressor ---- */

static void test_contract_error_feedback_keeps_what_was_not_sent_with_one_worker(void **state)
{
    (void)state;
    for (const CompressorOps *const *o = compress_registry(); *o; o++) {
        char spec[64];
        ef_spec(*o, spec, sizeof spec);
        Run r = base_run(spec, 1, 4);
        contract_schedule(*o, &r);
        Shared *s = simulate(&r);
        for (int t = 0; t < r.steps; t++)
            for (int l = 0; l < NL; l++) {
                const LayerView *v = &LAYERS[l];
                size_t off = v->offset, n = layer_size(v);
                const float *in = IN(s, t, 0) + off, *m0 = MEM0(s, t, 0) + off;
                const float *m1 = MEM1(s, t, 0) + off, *out = OUT(s, t, 0) + off;
                double scale = layer_max_abs(in, m0, n) + 1e-6;
                for (size_t i = 0; i < n; i++) {
                    double lhs = (double)out[i] + m1[i], rhs = (double)in[i] + m0[i];
                    if (fabs(lhs - rhs) > 1e-5 * scale)
                        fail_msg("%s step %d layer %s [%zu]: decoded + memory %g, input + old "
                                 "memory %g",
                                 spec, t, v->name, i, lhs, rhs);
                }
                /* dense layers (vectors, level 0) leave no memory */
                if (v->ndim == 1 || levels_at(&r, t)[l] == 0)
                    for (size_t i = 0; i < n; i++) assert_true(m1[i] == 0);
            }
        /* a lossy compressor at a compressing level does leave something behind */
        if (strcmp((*o)->name, "none") != 0)
            assert_true(layer_max_abs(MEM1(s, 0, 0), NULL, NP) > 0);
        release(s);
    }
}

static void test_contract_bytes_equal_payload_and_ranks_agree_with_several_workers(void **state)
{
    (void)state;
    for (const CompressorOps *const *o = compress_registry(); *o; o++) {
        char specs[2][64];
        snprintf(specs[0], sizeof specs[0], "%s", (*o)->name);
        ef_spec(*o, specs[1], sizeof specs[1]);
        for (int k = 0; k < 2; k++) {
            if (k == 1 && strcmp(specs[0], specs[1]) == 0) continue;
            Run r = base_run(specs[k], 4, 4);
            contract_schedule(*o, &r);
            Shared *s = simulate(&r);
            check_bytes_and_agreement(&r, s);
            /* a compressing level sends fewer bytes than the dense fp32 gradient */
            if (strcmp((*o)->name, "none") != 0) assert_true(*BYTES(s, 0, 0) < NP * 4.0);
            release(s);
            /* the analytic backend, 3 workers, halving-doubling: the same contract */
            r.workers = 3;
            r.backend = COLL_ANALYTIC;
            r.algo = COLL_HALVING_DOUBLING;
            s = simulate(&r);
            check_bytes_and_agreement(&r, s);
            check_plan_matches_reduce(&r, s); /* per-rank bytes differ here: 3 is no power of 2 */
            release(s);
            r.workers = 4;
            r.algo = COLL_TREE;
            s = simulate(&r);
            check_plan_matches_reduce(&r, s);
            release(s);
        }
    }
}

static void test_contract_same_seed_gives_identical_results(void **state)
{
    (void)state;
    for (const CompressorOps *const *o = compress_registry(); *o; o++) {
        Run r = base_run((*o)->name, 2, 3);
        contract_schedule(*o, &r);
        Shared *a = simulate(&r);
        size_t floats = 4 * (size_t)r.steps * r.workers * NP;
        float *first = malloc(floats * sizeof(float));
        memcpy(first, IN(a, 0, 0), floats * sizeof(float));
        release(a);
        Shared *b = simulate(&r);
        if (memcmp(first, IN(b, 0, 0), floats * sizeof(float)) != 0)
            fail_msg("%s: two runs with the same seed differ", r.spec);
        release(b);
        /* the randomised ones do depend on the seed */
        if (!strcmp((*o)->name, "powersgd") || !strcmp((*o)->name, "randomk") ||
            !strcmp((*o)->name, "qsgd")) {
            r.seed = 43;
            Shared *c = simulate(&r);
            assert_true(memcmp(first, IN(c, 0, 0), floats * sizeof(float)) != 0);
            release(c);
        }
        free(first);
    }
}

/* compress_reduce_into (a shared replica's one mean): the steps that send every layer dense,
 * also right after compressed ones (the error-feedback memory rides along), put their mean into
 * the buffer every rank shares, on the communicators that sum once (a ring, the analytic
 * backend), and only those; every output, memory and book is the bits of compress_reduce's. */
static void test_a_dense_step_s_mean_goes_once_into_a_shared_buffer(void **state)
{
    (void)state;
    const struct {
        CollAlgo algo;
        CollBackend backend;
        int sums_once;
    } comms[] = {{COLL_RING, COLL_TRANSFER, 1},
                 {COLL_RING, COLL_ANALYTIC, 1},
                 {COLL_HALVING_DOUBLING, COLL_TRANSFER, 0}};
    /* under valgrind (scripts/valgrind.sh) the ring alone: the others take the same paths */
    const int n_comms = getenv("BELLOWS_VALGRIND") ? 1 : 3;
    for (const CompressorOps *const *o = compress_registry(); *o; o++)
        for (int k = 0; k < n_comms; k++) {
            char spec[64];
            ef_spec(*o, spec, sizeof spec);
            Run r = base_run(spec, 3, 5);
            r.algo = comms[k].algo;
            r.backend = comms[k].backend;
            const double d = default_level(*o);
            double rows[5][NL] = {{d, d, d, d, d, d},
                                  {0, 0, 0, 0, 0, 0},
                                  {0, d, d, d, 0, d},
                                  {0, 0, 0, 0, 0, 0},
                                  {0, 0, 0, 0, 0, 0}};
            set_schedule(&r, 5, rows);
            Shared *a = simulate(&r);
            size_t floats = 4 * (size_t)r.steps * r.workers * NP;
            size_t books = N_BOOKS * (size_t)r.steps * r.workers;
            double *first = malloc(books * sizeof(double) + floats * sizeof(float));
            memcpy(first, a->data, books * sizeof(double) + floats * sizeof(float));
            release(a);
            r.into = 1;
            Shared *b = simulate(&r);
            for (int t = 0; t < r.steps; t++) {
                int dense = !strcmp((*o)->name, "none") || (t != 0 && t != 2);
                for (int w = 0; w < r.workers; w++) {
                    double want = comms[k].sums_once && dense;
                    if (*BOOK(b, B_INTO, t, w) != want)
                        fail_msg("%s, comm %d, step %d, rank %d: into %g, expected %g", spec, k, t,
                                 w, *BOOK(b, B_INTO, t, w), want);
                    *BOOK(b, B_INTO, t, w) = 0; /* compared below with compress_reduce's */
                }
            }
            if (memcmp(first, b->data, books * sizeof(double) + floats * sizeof(float)) != 0)
                fail_msg("%s, comm %d: compress_reduce_into differs from compress_reduce", spec, k);
            free(first);
            release(b);
        }
}

static void test_check_level_names_what_was_expected(void **state)
{
    (void)state;
    BwError err;
    const CompressorOps *topk = compress_find("topk"), *psgd = compress_find("powersgd");
    const CompressorOps *sign = compress_find("signsgd"), *qsgd = compress_find("qsgd");
    assert_non_null(topk);
    assert_int_equal(compress_check_level(topk, 1.5, "--level", &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "--level: topk level 1.5: expected a fraction in (0, 1]"));
    assert_int_equal(compress_check_level(topk, -0.1, NULL, &err), BW_EUSAGE);
    assert_int_equal(compress_check_level(topk, NAN, NULL, &err), BW_EUSAGE);
    assert_int_equal(compress_check_level(topk, 0.01, NULL, &err), BW_OK);
    assert_int_equal(compress_check_level(topk, 1, NULL, &err), BW_OK);
    assert_int_equal(compress_check_level(psgd, 2.5, "layer fc1", &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "layer fc1: powersgd level 2.5: expected an integer rank"));
    assert_int_equal(compress_check_level(psgd, 4, NULL, &err), BW_OK);
    assert_int_equal(compress_check_level(psgd, 5000, NULL, &err), BW_EUSAGE);
    assert_int_equal(compress_check_level(qsgd, 0, NULL, &err), BW_OK); /* dense */
    assert_int_equal(compress_check_level(sign, 2, NULL, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "signsgd takes no level"));
    assert_int_equal(compress_check_level(sign, 1, NULL, &err), BW_OK);
    /* every default is a valid level */
    for (const CompressorOps *const *o = compress_registry(); *o; o++)
        assert_int_equal(compress_check_level(*o, (*o)->level_default, NULL, &err), BW_OK);
}

static void test_create_rejects_unknown_names_and_bad_options(void **state)
{
    (void)state;
    BwError err;
    Compressor *c = (Compressor *)&err;
    assert_int_equal(compress_create("zip", "--compressor", LAYERS, NL, 2, 0, 1, &c, &err),
                     BW_EUSAGE);
    assert_null(c);
    assert_non_null(strstr(err.msg, "--compressor: unknown compressor 'zip' (known: none, fp16"));
    assert_int_equal(compress_create("topk:ef=2", "--compressor", LAYERS, NL, 2, 0, 1, &c, &err),
                     BW_EUSAGE);
    assert_non_null(strstr(err.msg, "ef=2"));
    assert_int_equal(
        compress_create("powersgd:bogus=1", "--compressor", LAYERS, NL, 2, 0, 1, &c, &err),
        BW_EUSAGE);
    assert_non_null(strstr(err.msg, "unknown option 'bogus'"));
    assert_int_equal(
        compress_create("powersgd:rank_change=cold", "--compressor", LAYERS, NL, 2, 0, 1, &c, &err),
        BW_EUSAGE);
    assert_int_equal(
        compress_create("topk:ef=0,divide=0", "--compressor", LAYERS, NL, 2, 1, 1, &c, &err),
        BW_OK);
    assert_null(compress_memory(c));
    assert_string_equal(compress_spec(c), "topk:ef=0,divide=0");
    compress_free(c);
    compress_free(NULL);
    /* every compressor, with and without its memory, creates and frees cleanly (ASan/LSan) */
    for (const CompressorOps *const *o = compress_registry(); *o; o++) {
        char spec[64];
        ef_spec(*o, spec, sizeof spec);
        for (int k = 0; k < 2; k++) {
            assert_int_equal(compress_create(k ? spec : (*o)->name, "--compressor", LAYERS, NL, 4,
                                             3, 1, &c, &err),
                             BW_OK);
            compress_free(c);
        }
    }
}

static void test_bellows_compressors_lists_every_compressor(void **state)
{
    (void)state;
    FILE *p = popen(BELLOWS_BIN " compressors", "r");
    assert_non_null(p);
    char out[16384];
    size_t len = fread(out, 1, sizeof out - 1, p);
    out[len] = '\0';
    assert_int_equal(pclose(p), 0);
    for (const CompressorOps *const *o = compress_registry(); *o; o++) {
        char line[64];
        snprintf(line, sizeof line, "\n%s ", (*o)->name);
        assert_non_null(strstr(out, line));
    }
    assert_non_null(strstr(out, "rank_change=warm (warm|reset)"));
    assert_int_equal(system(BELLOWS_BIN " compressors extra 2>/dev/null") >> 8, 2);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contract_error_feedback_keeps_what_was_not_sent_with_one_worker),
        cmocka_unit_test(test_contract_bytes_equal_payload_and_ranks_agree_with_several_workers),
        cmocka_unit_test(test_contract_same_seed_gives_identical_results),
        cmocka_unit_test(test_a_dense_step_s_mean_goes_once_into_a_shared_buffer),
        cmocka_unit_test(test_check_level_names_what_was_expected),
        cmocka_unit_test(test_create_rejects_unknown_names_and_bad_options),
        cmocka_unit_test(test_bellows_compressors_lists_every_compressor),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]); /* run one test alone */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
