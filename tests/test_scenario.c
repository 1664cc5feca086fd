/* test_scenario.c: answers the defaults would otherwise decide. The batch a workload is priced
 * at is its own flag (--price-batch), printed and recorded, and scales only the real model's
 * compute; a global batch above the one the default rate was tuned for gets the linear scaling
 * rule with a warm-up, said in the header, unless --lr or --lr-scale is given. */
#include "testutil.h"

#include "clitest.h"

/* Runs `bellows run FLAGS --out TMP/NAME`, its stdout into TMP/NAME.out; the exit status. */
static int run(const char *name, const char *flags)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, BELLOWS_BIN " run %s --quiet --out %s/%s >%s/%s.out 2>&1", flags, TMP,
             name, TMP, name);
    return WEXITSTATUS(system(cmd));
}

/* TMP/NAME/FILE, or TMP/NAME.out (what the command printed) when file is NULL. */
static char *out_file(const char *name, const char *file)
{
    char path[256];
    if (file)
        snprintf(path, sizeof path, "%s/%s/%s", TMP, name, file);
    else
        snprintf(path, sizeof path, "%s/%s.out", TMP, name);
    char *s = slurp(path, NULL);
    if (!s) fail_msg("no %s", path);
    return s;
}

static double json_number(const char *text, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *at = strstr(text, k);
    if (!at) fail_msg("no %s", key);
    return strtod(at + strlen(k), NULL);
}

#define SMALL                                                                                      \
    "--epochs 1 --train-samples 512 --test-samples 100 --collectives analytic --costs ideal "      \
    "--gpu V100 --overlap none --compressor none "

static void test_the_price_batch_scales_the_real_models_compute_only(void **state)
{
    (void)state;
    assert_int_equal(run("b8", SMALL "--workload resnet50 --workers 2 --batch 8"), 0);
    assert_int_equal(run("p32", SMALL "--workload resnet50 --workers 2 --batch 8 --price-batch 32"),
                     0);
    char *a = out_file("b8", "summary.json"), *b = out_file("p32", "summary.json");
    /* the same training (32 steps of 2 x 8), its compute at 4x the images: the optimiser's
     * memory traffic does not grow with the batch */
    assert_true(json_number(a, "steps") == 32 && json_number(b, "steps") == 32);
    assert_true(json_number(a, "final_test_accuracy") == json_number(b, "final_test_accuracy"));
    assert_true(json_number(a, "price_batch") == 8 && json_number(b, "price_batch") == 32);
    const double ca = json_number(a, "compute_s"), cb = json_number(b, "compute_s");
    const double opt = 32 * 20.0 * 25557032 / (0.85 * 900e9); /* sgd_cost at the roofline */
    if (!(fabs((cb - opt) - 4 * (ca - opt)) <= 1e-9 * cb))
        fail_msg("compute at 32 images %.9g, at 8 %.9g: not 4x beside the optimiser", cb, ca);
    char *hdr = out_file("p32", NULL);
    assert_non_null(strstr(hdr, "workload resnet50 at 32 images per GPU (each small step of 8 "
                                "priced as one real step)"));
    free(a);
    free(b);
    free(hdr);
    /* without a workload there is nothing to price at another batch */
    assert_int_equal(run("none", SMALL "--price-batch 32"), 2);
    char *msg = out_file("none", NULL);
    assert_non_null(strstr(msg, "--price-batch"));
    free(msg);
}

/* The lr column of steps.csv at the last step. */
static double last_lr(const char *name)
{
    char *s = out_file(name, "steps.csv");
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '\n') s[--n] = '\0';
    char *line = strrchr(s, '\n') ? strrchr(s, '\n') + 1 : s; /* the last row */
    double lr = 0;
    if (sscanf(line, "%*[^,],%*[^,],%*[^,],%lf", &lr) != 1) fail_msg("no lr in %s", line);
    free(s);
    return lr;
}

static void test_a_large_global_batch_gets_the_linear_scaling_rule(void **state)
{
    (void)state;
    /* 16 x 64 = 1024, twice the 512 --lr 0.02 was tuned for: 0.04 after the warm-up, which
     * on a slice of 4096 samples is 5 epochs (a fixed 240,000 samples, at most 5 epochs) */
#define BIG_RUN                                                                                    \
    "--train-samples 4096 --test-samples 100 --collectives analytic --costs ideal "                \
    "--compressor none --workers 16"
    const char *big = "--epochs 6 " BIG_RUN;
    char flags[512];
    assert_int_equal(run("auto", big), 0);
    assert_true(fabs(last_lr("auto") - 0.04) < 1e-12);
    char *hdr = out_file("auto", NULL);
    assert_non_null(strstr(hdr, "# lr: 0.02 x 2 = 0.04, the linear scaling rule (Goyal et al. "
                                "2017)"));
    assert_non_null(strstr(hdr, "warmed up over 5 epochs\n"));
    free(hdr);
    /* a run shorter than the warm-up says that the rate never reaches its peak */
    assert_int_equal(run("short", "--epochs 2 " BIG_RUN), 0);
    hdr = out_file("short", NULL);
    assert_non_null(strstr(hdr, "warmed up over 5 epochs (more than the run's 2: the rate never "
                                "reaches its peak)"));
    free(hdr);
    /* a rate given, or --lr-scale none: as given */
    snprintf(flags, sizeof flags, "%s --lr 0.02", big);
    assert_int_equal(run("given", flags), 0);
    assert_true(fabs(last_lr("given") - 0.02) < 1e-12);
    snprintf(flags, sizeof flags, "%s --lr-scale none", big);
    assert_int_equal(run("none", flags), 0);
    assert_true(fabs(last_lr("none") - 0.02) < 1e-12);
    hdr = out_file("none", NULL);
    assert_null(strstr(hdr, "# lr:"));
    free(hdr);
    /* the tuned size itself: no scaling */
    assert_int_equal(run("tuned", "--epochs 1 --train-samples 1024 --test-samples 100 "
                                  "--collectives analytic --costs ideal --compressor none"),
                     0);
    assert_true(fabs(last_lr("tuned") - 0.02) < 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_price_batch_scales_the_real_models_compute_only),
        cmocka_unit_test(test_a_large_global_batch_gets_the_linear_scaling_rule),
    };
    return cmocka_run_group_tests(tests, clitest_setup, clitest_teardown);
}
