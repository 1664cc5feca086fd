/* smalldata.h: a small copy of the packaged Fashion-MNIST, for the suites that start many tiny
 * bellows runs. bellows reads every byte of the four IDX files whatever --train-samples says
 * (dataset_load_fashion_mnist checks the whole file); inflating the 47 MB of training images was
 * a quarter of the CPU of the ctest pass in build/ (perf, 2026-11-28), 0.15 s in every bellows
 * that loads the data. The copy keeps the first n_train training and n_test test samples with
 * their headers' counts rewritten; bellows keeps the first --train-samples and --test-samples of
 * a set and standardises over those it kept (dataset.h), so a run on the copy with at most that
 * many samples is the run on the packaged set, byte for byte (test_dataset checks the copy's
 * bytes, test_cli_runs' test_simulated_run_is_complete_and_reproducible a run's files).
 * Header-only; include it after testutil.h. */
#ifndef BELLOWS_SMALLDATA_H
#define BELLOWS_SMALLDATA_H

#include <sys/stat.h>
#include <zlib.h>

#include "dataset.h"

static inline uint32_t smalldata_be32(const unsigned char *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* Copies the IDX file `name` of the packaged set into dir, keeping its first n samples. */
static inline void smalldata_copy(const char *dir, const char *name, int n)
{
    char src[512], dst[512];
    snprintf(src, sizeof src, "%s/%s", DATASET_DEFAULT_DIR, name);
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    gzFile in = gzopen(src, "rb"), out = gzopen(dst, "wb1");
    assert_true(in && out);
    unsigned char h[16];
    assert_int_equal(gzread(in, h, 8), 8);
    const int images = h[3] == 3; /* 0x0803 images (n, rows, cols), 0x0801 labels (n) */
    if (images) assert_int_equal(gzread(in, h + 8, 8), 8);
    const uint32_t had = smalldata_be32(h + 4);
    assert_true(n > 0 && (uint32_t)n <= had);
    for (int k = 0; k < 4; k++) h[4 + k] = (unsigned char)((uint32_t)n >> (24 - 8 * k));
    const size_t dim = images ? (size_t)smalldata_be32(h + 8) * smalldata_be32(h + 12) : 1;
    const size_t len = (size_t)n * dim; /* rows * cols bytes an image, one a label */
    unsigned char *b = malloc(len);
    assert_non_null(b);
    assert_int_equal(gzread(in, b, (unsigned)len), (int)len);
    assert_int_equal(gzwrite(out, h, images ? 16 : 8), images ? 16 : 8);
    assert_int_equal(gzwrite(out, b, (unsigned)len), (int)len);
    free(b);
    gzclose(in);
    assert_int_equal(gzclose(out), Z_OK);
}

/* dir (made here): the packaged Fashion-MNIST's first n_train training and n_test test
 * samples, as a --data-dir. */
static inline void smalldata_write(const char *dir, int n_train, int n_test)
{
    assert_int_equal(mkdir(dir, 0777), 0);
    smalldata_copy(dir, "train-images-idx3-ubyte.gz", n_train);
    smalldata_copy(dir, "train-labels-idx1-ubyte.gz", n_train);
    smalldata_copy(dir, "t10k-images-idx3-ubyte.gz", n_test);
    smalldata_copy(dir, "t10k-labels-idx1-ubyte.gz", n_test);
}

#endif
