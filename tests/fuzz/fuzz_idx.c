/* fuzz_idx.c: libFuzzer harness for the IDX dataset reader (models/dataset.c). The input is cut
 * into an image file and a label file: its first byte picks the cut (as a fraction of the rest)
 * and whether the image file is gzip-compressed (the reader takes both through zlib), and its
 * second byte the number of classes. Both files are written to scratch paths and read with and
 * without a sample limit; any crash, leak, overflow, huge allocation from a lying header or
 * undefined behaviour is a bug. Built and run by tests/fuzz/run.sh idx. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <zlib.h>

#include "dataset.h"

static char images[64], labels[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int write_file(const char *path, const uint8_t *p, size_t n, int gzip)
{
    if (gzip) {
        gzFile g = gzopen(path, "wb1");
        if (!g) return -1;
        if (n) gzwrite(g, p, (unsigned)n);
        gzclose(g);
        return 0;
    }
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fwrite(p, 1, n, f);
    fclose(f);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    if (!images[0]) {
        snprintf(images, sizeof images, "/dev/shm/bellows-fuzz-%d-images", (int)getpid());
        snprintf(labels, sizeof labels, "/dev/shm/bellows-fuzz-%d-labels", (int)getpid());
    }
    int gzip = data[0] & 1;
    size_t rest = size - 2;
    size_t cut = rest * (size_t)(data[0] >> 1) / 127;
    if (cut > rest) cut = rest;
    int classes = 1 + data[1] % 16;
    if (write_file(images, data + 2, cut, gzip) ||
        write_file(labels, data + 2 + cut, rest - cut, 0))
        return 0;
    Dataset d;
    BwError err;
    for (int limit = 0; limit <= 1; limit++)
        if (dataset_load_idx(images, labels, classes, limit, &d, &err) == BW_OK) {
            /* a loaded set holds what its header promised, and nothing out of range */
            if (d.n < 1 || d.dim != d.rows * d.cols || (limit && d.n != 1)) abort();
            for (int i = 0; i < d.n; i++)
                if (d.y[i] >= classes) abort();
            dataset_free(&d);
        }
    return 0;
}
