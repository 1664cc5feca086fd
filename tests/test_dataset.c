/* test_dataset.c: the IDX reader on good and corrupted files (written here with zlib), the
 * real Fashion-MNIST files, standardisation, synthetic data, and the sampling order: seeded,
 * a permutation, disjoint shards whose t-th batches together equal a single process's t-th
 * batch. */
#include "testutil.h"

#include <zlib.h>

#include "dataset.h"
#include "smalldata.h"

static char DIR_[64];

static int setup(void **state)
{
    (void)state;
    make_tmpdir(DIR_, sizeof DIR_);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    rm_tree(DIR_);
    return 0;
}

static void put32(unsigned char *b, uint32_t v)
{
    b[0] = (unsigned char)(v >> 24), b[1] = (unsigned char)(v >> 16);
    b[2] = (unsigned char)(v >> 8), b[3] = (unsigned char)v;
}

/* Writes bytes to DIR_/name, gzip-compressed or plain; returns the path. */
static const char *write_file(const char *name, const unsigned char *bytes, size_t len, int gz)
{
    static char path[8][128];
    static int slot;
    char *p = path[slot++ % 8];
    snprintf(p, 128, "%s/%s", DIR_, name);
    if (gz) {
        gzFile f = gzopen(p, "wb");
        assert_non_null(f);
        assert_int_equal(gzwrite(f, bytes, (unsigned)len), (int)len);
        gzclose(f);
    } else {
        FILE *f = fopen(p, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(bytes, 1, len, f), len);
        fclose(f);
    }
    return p;
}

/* An IDX image file of n images rows x cols with pixel value (i*7 + j) % 256, and its labels
 * i % 10. `cut` bytes are dropped from the end, `extra` appended. */
static size_t idx_images(unsigned char *buf, int n, int rows, int cols, int cut, int extra)
{
    put32(buf, 0x00000803);
    put32(buf + 4, (uint32_t)n);
    put32(buf + 8, (uint32_t)rows);
    put32(buf + 12, (uint32_t)cols);
    size_t len = 16;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < rows * cols; j++) buf[len++] = (unsigned char)((i * 7 + j) % 256);
    for (int e = 0; e < extra; e++) buf[len++] = 0;
    return len - (size_t)cut;
}

static size_t idx_labels(unsigned char *buf, int n, int bad_at)
{
    put32(buf, 0x00000801);
    put32(buf + 4, (uint32_t)n);
    for (int i = 0; i < n; i++) buf[8 + i] = (unsigned char)(i == bad_at ? 10 : i % 10);
    return 8 + (size_t)n;
}

static unsigned char IMG[16 + 20 * 16 + 8], LAB[8 + 20];

static void test_reads_gzip_and_plain_idx(void **state)
{
    (void)state;
    for (int gz = 0; gz <= 1; gz++) {
        size_t li = idx_images(IMG, 20, 4, 4, 0, 0), ll = idx_labels(LAB, 20, -1);
        const char *pi = write_file(gz ? "i.gz" : "i.raw", IMG, li, gz);
        const char *pl = write_file(gz ? "l.gz" : "l.raw", LAB, ll, gz);
        Dataset d;
        BwError err;
        assert_int_equal(dataset_load_idx(pi, pl, 10, 0, &d, &err), BW_OK);
        assert_int_equal(d.n, 20);
        assert_int_equal(d.rows, 4);
        assert_int_equal(d.dim, 16);
        assert_float_equal(d.x[3 * 16 + 5], (float)((3 * 7 + 5) % 256) / 255.0f, 1e-7);
        assert_int_equal(d.y[13], 3);
        dataset_free(&d);
        /* a limit keeps a prefix */
        assert_int_equal(dataset_load_idx(pi, pl, 10, 5, &d, &err), BW_OK);
        assert_int_equal(d.n, 5);
        assert_int_equal(d.y[4], 4);
        dataset_free(&d);
        dataset_free(&d); /* twice is safe */
    }
    /* a gzip file of two members (libdeflate's whole-file path takes one: zlib reads it) */
    size_t li = idx_images(IMG, 20, 4, 4, 0, 0);
    const char *pi = write_file("two.gz", IMG, 100, 1);
    gzFile f = gzopen(pi, "ab");
    assert_non_null(f);
    assert_int_equal(gzwrite(f, IMG + 100, (unsigned)(li - 100)), (int)(li - 100));
    gzclose(f);
    Dataset d;
    BwError err;
    const char *pl = write_file("l2.gz", LAB, idx_labels(LAB, 20, -1), 1);
    assert_int_equal(dataset_load_idx(pi, pl, 10, 0, &d, &err), BW_OK);
    assert_int_equal(d.n, 20);
    assert_float_equal(d.x[19 * 16 + 15], (float)((19 * 7 + 15) % 256) / 255.0f, 1e-7);
    dataset_free(&d);
}

/* Each corruption must be a usage error whose message names the bad file and says why. */
static void expect_bad(const char *img, const char *lab, const char *name_in_msg, const char *why)
{
    Dataset d;
    BwError err = {{0}};
    assert_int_equal(dataset_load_idx(img, lab, 10, 0, &d, &err), BW_EUSAGE);
    if (!strstr(err.msg, name_in_msg) || !strstr(err.msg, why))
        fail_msg("message '%s' lacks '%s' or '%s'", err.msg, name_in_msg, why);
    assert_null(d.x);
    assert_null(d.y);
}

static void test_corrupt_files_are_clear_errors(void **state)
{
    (void)state;
    size_t ll = idx_labels(LAB, 20, -1);
    const char *good_l = write_file("good-l.gz", LAB, ll, 1);
    size_t li = idx_images(IMG, 20, 4, 4, 0, 0);
    const char *good_i = write_file("good-i.gz", IMG, li, 1);

    expect_bad(write_file("trunc-i.gz", IMG, idx_images(IMG, 20, 4, 4, 9, 0), 1), good_l,
               "trunc-i.gz", "truncated");
    expect_bad(write_file("trail-i.gz", IMG, idx_images(IMG, 20, 4, 4, 0, 3), 1), good_l,
               "trail-i.gz", "trailing");
    expect_bad(write_file("short-hdr.gz", IMG, 6, 1), good_l, "short-hdr.gz", "truncated");
    idx_images(IMG, 20, 4, 4, 0, 0);
    IMG[2] = 0x0D; /* float type */
    expect_bad(write_file("magic-i.gz", IMG, li, 1), good_l, "magic-i.gz", "not an IDX");
    expect_bad(good_l, good_l, "good-l.gz", "not an IDX"); /* labels given as images */
    idx_images(IMG, 20, 4, 4, 0, 0);
    put32(IMG + 8, 0);
    expect_bad(write_file("zero-rows.gz", IMG, li, 1), good_l, "zero-rows.gz", "implausible");
    expect_bad(good_i, write_file("count-l.gz", LAB, idx_labels(LAB, 19, -1), 1), "count-l.gz",
               "19 labels");
    expect_bad(good_i, write_file("range-l.gz", LAB, idx_labels(LAB, 20, 7), 1), "range-l.gz",
               "outside");
    expect_bad("/nonexistent/x.gz", good_l, "/nonexistent/x.gz", "cannot open");
    expect_bad(DIR_, good_l, DIR_, "is a folder"); /* a folder where a file is expected */
    /* gzip stream damaged in the middle */
    idx_images(IMG, 20, 4, 4, 0, 0);
    const char *p = write_file("damaged.gz", IMG, li, 1);
    FILE *f = fopen(p, "r+b");
    fseek(f, 30, SEEK_SET);
    fputs("garbagegarbage", f);
    fclose(f);
    expect_bad(p, good_l, "damaged.gz", "");
}

/* Found by tests/fuzz/fuzz_idx.c (corpus_idx/lying-header): a 24-byte image file whose header
 * promises 10^8 images of 4096 x 4096 pixels (1.6 PB), with a label file that agrees. The
 * reader allocated what the header promised before reading, which failed as "out of memory"
 * (a runtime error) or, under AddressSanitizer, aborted; it must be a truncated file. */
static void test_a_lying_header_is_a_truncated_file(void **state)
{
    (void)state;
    unsigned char img[24] = {0}, lab[8];
    put32(img, 0x00000803);
    put32(img + 4, 100000000u);
    put32(img + 8, 4096);
    put32(img + 12, 4096);
    put32(lab, 0x00000801);
    put32(lab + 4, 100000000u);
    for (int gz = 0; gz <= 1; gz++) {
        const char *pi = write_file(gz ? "lying-i.gz" : "lying-i", img, sizeof img, gz);
        const char *pl = write_file(gz ? "lying-l.gz" : "lying-l", lab, sizeof lab, gz);
        expect_bad(pi, pl, "lying-i", "truncated (ended while reading the pixels)");
    }
}

/* A set that keeps its images as bytes, as floats through dataset_gather: a set of its own
 * (x, y), to read as a float set is read. */
static Dataset gathered(const Dataset *d)
{
    Dataset f = *d;
    f.px = NULL;
    f.x = malloc(sizeof(float) * (size_t)d->n * (size_t)d->dim + 1);
    f.y = malloc((size_t)d->n + 1);
    int *all = malloc(sizeof(int) * (size_t)d->n + 1);
    assert_true(f.x && f.y && all);
    for (int i = 0; i < d->n; i++) all[i] = i;
    dataset_gather(d, all, d->n, f.x, f.y);
    free(all);
    return f;
}

static void test_real_fashion_mnist_loads_and_is_standardised(void **state)
{
    (void)state;
    Dataset tr, te;
    BwError err;
    assert_int_equal(dataset_load_fashion_mnist(DATASET_DEFAULT_DIR, 0, 0, &tr, &te, &err), BW_OK);
    assert_int_equal(tr.n, 60000);
    assert_int_equal(te.n, 10000);
    assert_int_equal(tr.rows, 28);
    assert_int_equal(tr.cols, 28);
    /* the first training images are an ankle boot (9) and two T-shirts (0) */
    assert_int_equal(tr.y[0], 9);
    assert_int_equal(tr.y[1], 0);
    long count[10] = {0};
    for (int i = 0; i < tr.n; i++) count[tr.y[i]]++;
    for (int c = 0; c < 10; c++) assert_int_equal(count[c], 6000); /* balanced classes */
    /* the suites' small copy (smalldata.h) holds the first samples, byte for byte */
    char small[128];
    snprintf(small, sizeof small, "%s/small", DIR_);
    smalldata_write(small, 64, 16);
    Dataset str, ste;
    assert_int_equal(dataset_load_fashion_mnist(small, 0, 0, &str, &ste, &err), BW_OK);
    assert_true(str.n == 64 && ste.n == 16 && str.dim == tr.dim && ste.dim == te.dim);
    assert_memory_equal(str.px, tr.px, 64 * (size_t)tr.dim);
    assert_memory_equal(str.y, tr.y, 64);
    assert_memory_equal(ste.y, te.y, 16);
    dataset_free(&str);
    dataset_free(&ste);
    /* the training images are kept as bytes (a quarter of the floats' memory) */
    assert_null(tr.x);
    assert_non_null(tr.px);
    Dataset f = gathered(&tr);
    double mean, sd;
    dataset_pixel_stats(&f, &mean, &sd);
    assert_true(fabs(mean) < 1e-4 && fabs(sd - 1.0) < 1e-4);
    dataset_free(&f);
    dataset_free(&tr);
    dataset_free(&te);
    /* a missing folder names the file it looked for */
    assert_int_equal(dataset_load_fashion_mnist("/nonexistent", 0, 0, &tr, &te, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "/nonexistent/train-images-idx3-ubyte.gz"));
}

/* The loader standardises from the bytes' histogram in one pass: its floats, train and test,
 * must be those of its naive twins (the floats k / 255, dataset_pixel_stats' chains of
 * additions, dataset_standardize), for all the training set and for a prefix of it. */
static void test_one_pass_standardising_equals_its_naive_twins(void **state)
{
    (void)state;
    char path[4][4096];
    const char *names[4] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                            "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
    for (int i = 0; i < 4; i++)
        snprintf(path[i], sizeof path[i], "%s/%s", DATASET_DEFAULT_DIR, names[i]);
    /* under valgrind, the prefix only (the naive twins' passes over 47 million floats are slow) */
    for (int limit = getenv("BELLOWS_VALGRIND") ? 1000 : 0; limit <= 1000; limit += 1000) {
        Dataset tr, te, ntr, nte;
        BwError err;
        assert_int_equal(dataset_load_fashion_mnist(DATASET_DEFAULT_DIR, limit, 0, &tr, &te, &err),
                         BW_OK);
        assert_int_equal(dataset_load_idx(path[0], path[1], 10, limit, &ntr, &err), BW_OK);
        assert_int_equal(dataset_load_idx(path[2], path[3], 10, 0, &nte, &err), BW_OK);
        double mean, sd;
        dataset_pixel_stats(&ntr, &mean, &sd);
        dataset_standardize(&ntr, mean, sd);
        dataset_standardize(&nte, mean, sd);
        assert_int_equal(tr.n, ntr.n);
        Dataset f = gathered(&tr);
        assert_memory_equal(f.x, ntr.x, sizeof(float) * (size_t)tr.n * (size_t)tr.dim);
        assert_memory_equal(te.x, nte.x, sizeof(float) * (size_t)te.n * (size_t)te.dim);
        assert_memory_equal(f.y, ntr.y, (size_t)tr.n);
        dataset_free(&f), dataset_free(&tr), dataset_free(&te);
        dataset_free(&ntr), dataset_free(&nte);
    }
}

static void test_synthetic_is_seeded(void **state)
{
    (void)state;
    Dataset a, b, c;
    assert_int_equal(dataset_synthetic(&a, 50, 8, 8, 4, 0.5, 3, NULL), BW_OK);
    assert_int_equal(dataset_synthetic(&b, 50, 8, 8, 4, 0.5, 3, NULL), BW_OK);
    assert_int_equal(dataset_synthetic(&c, 50, 8, 8, 4, 0.5, 4, NULL), BW_OK);
    assert_memory_equal(a.x, b.x, 50 * 64 * sizeof(float));
    assert_memory_equal(a.y, b.y, 50);
    assert_true(memcmp(a.x, c.x, 50 * 64 * sizeof(float)) != 0);
    for (int i = 0; i < 50; i++) assert_true(a.y[i] < 4);
    dataset_free(&a), dataset_free(&b), dataset_free(&c);
}

static void test_epoch_order_is_a_seeded_permutation(void **state)
{
    (void)state;
    enum { N = 1000 };
    int a[N], b[N], c[N], seen[N] = {0};
    dataset_epoch_order(N, 5, 0, a);
    dataset_epoch_order(N, 5, 0, b);
    dataset_epoch_order(N, 5, 1, c);
    assert_memory_equal(a, b, sizeof a);
    assert_true(memcmp(a, c, sizeof a) != 0);
    for (int i = 0; i < N; i++) seen[a[i]]++;
    for (int i = 0; i < N; i++) assert_int_equal(seen[i], 1);
}

static int cmp_int(const void *x, const void *y)
{
    return *(const int *)x - *(const int *)y;
}

static void test_shards_are_disjoint_and_match_single_process_batches(void **state)
{
    (void)state;
    enum { N = 1003, W = 4, B = 8 };
    int perm[N], owner[N];
    dataset_epoch_order(N, 11, 2, perm);
    int per = dataset_shard_size(N, W);
    assert_int_equal(per, N / W);
    for (int i = 0; i < N; i++) owner[i] = -1;
    for (int w = 0; w < W; w++)
        for (int i = 0; i < per; i++) {
            int s = dataset_shard_index(perm, W, w, i);
            assert_int_equal(owner[s], -1); /* disjoint */
            owner[s] = w;
        }
    /* batch t of the W workers == batch t of size W*B of one process, as sets */
    for (int t = 0; t < per / B; t++) {
        int dist[W * B], single[W * B];
        for (int w = 0; w < W; w++)
            for (int i = 0; i < B; i++)
                dist[w * B + i] = dataset_shard_index(perm, W, w, t * B + i);
        memcpy(single, perm + t * W * B, sizeof single);
        qsort(dist, W * B, sizeof(int), cmp_int);
        qsort(single, W * B, sizeof(int), cmp_int);
        assert_memory_equal(dist, single, sizeof dist);
    }
}

static void test_gather_copies_rows(void **state)
{
    (void)state;
    Dataset d;
    assert_int_equal(dataset_synthetic(&d, 10, 2, 3, 3, 1.0, 1, NULL), BW_OK);
    int idx[3] = {7, 0, 7};
    float x[3 * 6];
    uint8_t y[3];
    dataset_gather(&d, idx, 3, x, y);
    assert_memory_equal(x, d.x + 7 * 6, 6 * sizeof(float));
    assert_memory_equal(x + 6, d.x, 6 * sizeof(float));
    assert_int_equal(y[2], d.y[7]);
    dataset_free(&d);
    /* a set of bytes: each through the table */
    Dataset b = {.n = 2, .channels = 1, .rows = 1, .cols = 3, .dim = 3, .classes = 2};
    uint8_t px[6] = {0, 255, 7, 9, 9, 128}, lab[2] = {1, 0};
    for (int k = 0; k < 256; k++) b.table[k] = (float)k * 0.5f - 1;
    b.px = px, b.y = lab;
    int bi[3] = {1, 0, 1};
    float bx[9];
    dataset_gather(&b, bi, 3, bx, y);
    const float want[9] = {3.5f, 3.5f, 63, -1, 126.5f, 2.5f, 3.5f, 3.5f, 63};
    assert_memory_equal(bx, want, sizeof want);
    assert_true(y[0] == 0 && y[1] == 1 && y[2] == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_gzip_and_plain_idx),
        cmocka_unit_test(test_corrupt_files_are_clear_errors),
        cmocka_unit_test(test_a_lying_header_is_a_truncated_file),
        cmocka_unit_test(test_real_fashion_mnist_loads_and_is_standardised),
        cmocka_unit_test(test_one_pass_standardising_equals_its_naive_twins),
        cmocka_unit_test(test_synthetic_is_seeded),
        cmocka_unit_test(test_epoch_order_is_a_seeded_permutation),
        cmocka_unit_test(test_shards_are_disjoint_and_match_single_process_batches),
        cmocka_unit_test(test_gather_copies_rows),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
