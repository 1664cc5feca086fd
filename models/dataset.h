/* dataset.h: labelled image datasets in memory, and how workers draw batches from them.
 * Images are float, row-major [n, channels*rows*cols] with channels last (one channel for
 * Fashion-MNIST), labels are bytes in [0, classes). A set read from bytes may keep them as bytes
 * (px) with the float each byte value stands for (table): a quarter of the memory, and a batch
 * gathered through the table is faster than one copied from floats (fewer bytes from memory).
 * Fashion-MNIST comes from its IDX gzip files (the format of LeCun's MNIST page: big-endian header,
 * magic 0x0803 images / 0x0801 labels). Synthetic data is for unit tests only. */
#ifndef BELLOWS_DATASET_H
#define BELLOWS_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#define DATASET_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"

typedef struct {
    int n;        /* samples */
    int channels; /* 1 for Fashion-MNIST */
    int rows, cols;
    int dim; /* channels * rows * cols */
    int classes;
    float *x;         /* [n, dim]; NULL when px holds the images */
    uint8_t *px;      /* [n, dim]: the images as bytes, image value table[byte] (x is NULL) */
    float table[256]; /* with px */
    uint8_t *y;       /* [n] */
} Dataset;

/* Reads an IDX image file and its label file (gzip or plain). Every header field, the count
 * match, the label range and the byte count are checked; a failure names the file. Keeps the
 * first `limit` samples if limit > 0. Pixels are scaled to [0, 1]. */
int dataset_load_idx(const char *images_path, const char *labels_path, int classes, int limit,
                     Dataset *out, BwError *err);

/* Loads Fashion-MNIST's train and test sets from dir, keeping the first train_limit and
 * test_limit samples (0 = all), and standardises both with the train subset's mean and
 * standard deviation. The training set keeps its images as bytes (px and table: read only
 * through dataset_gather), the test set as floats (x). */
int dataset_load_fashion_mnist(const char *dir, int train_limit, int test_limit, Dataset *train,
                               Dataset *test, BwError *err);

/* A learnable synthetic set for tests: each class has a random blocky template image (a 4x4
 * grid of Gaussian values stretched over the image), samples are template + Gaussian noise.
 * Deterministic from seed. Never the default for a real run. */
int dataset_synthetic(Dataset *out, int n, int rows, int cols, int classes, double noise,
                      unsigned long seed, BwError *err);

/* Mean and standard deviation of all pixels (sums in double, in order), and x = (x - mean) / sd
 * (in float), of a set of floats (x). dataset_load_fashion_mnist standardises as these two would,
 * from the bytes' histogram in one pass; they are its naive twins (tests/test_dataset.c). */
void dataset_pixel_stats(const Dataset *d, double *mean, double *sd);
void dataset_standardize(Dataset *d, double mean, double sd);

void dataset_free(Dataset *d); /* safe on a zeroed or already freed Dataset */

/* The sampling order of one epoch, as PyTorch's DistributedSampler does it: a permutation of
 * [0, n) seeded by (seed, epoch); worker w of W takes positions w, w+W, w+2W, ... and every
 * worker keeps the same count floor(n / W). So the union of the workers' t-th batches of size
 * b is the same set as the t-th batch of size W*b of a single process: synchronous training
 * on W workers sees the same global batches as one process. */
void dataset_epoch_order(int n, unsigned long seed, int epoch, int *perm /* [n] */);
int dataset_shard_size(int n, int workers);
/* Index of the i-th sample of worker w's shard in an epoch order. */
static inline int dataset_shard_index(const int *perm, int workers, int w, int i)
{
    return perm[(size_t)i * (size_t)workers + (size_t)w];
}

/* Copies samples idx[0..count) into contiguous x [count, dim] and y [count] (through the table
 * when the set keeps bytes). */
void dataset_gather(const Dataset *d, const int *idx, int count, float *x, uint8_t *y);

#endif
