/* blockq.h: symmetric block quantization, as ZeRO++'s quantized collectives use it (Wang et al.,
 * "ZeRO++: Extremely Efficient Collective Communication for Giant Model Training", 2023,
 * arXiv:2306.10209: qwZ's block-based quantization, each block with its own scale; DeepSpeed's
 * kernels in csrc/quantization/ and csrc/includes/quantization_utils.h, Type::Symmetric). A block
 * of values x is sent as signed integers of `bits` bits, q = round(x / s), and one fp32 scale s per
 * block; it is decoded as q s. The round trip's error is at most s / 2 per element.
 *
 * The step here is s = max|x| / (2^(bits-1) - 1) (127 for int8, 7 for int4), so the block's
 * largest value is represented exactly and no value is clipped. DeepSpeed's kernel uses
 * s = 2 max|x| / 2^bits and clamps to [-2^(bits-1), 2^(bits-1) - 1] (quantization_utils.h,
 * Params<Symmetric>), which clips the largest value by up to one step; bellows keeps the
 * unclipped step, a documented difference (docs/guide/sharded.md, "ZeRO++"). */
#ifndef BELLOWS_BLOCKQ_H
#define BELLOWS_BLOCKQ_H

#include <stddef.h>

/* DeepSpeed's qwZ groups: the CUDAQuantizer in deepspeed/runtime/zero/partition_parameters.py
 * aims at groups of at most target_group_size = 8000 values over each parameter's partition
 * ("the optimal size is 4k, so we set the target to be below 8k"). bellows takes
 * ceil(n / 8000) groups of equal size (the last one shorter), without DeepSpeed's rounding of
 * the group count to a multiple of 8 values. */
#define BLOCKQ_QWZ_TARGET 8000

/* The step (scale) of a block of n values at `bits` bits: max|x| / (2^(bits-1) - 1); 0 for a
 * block of zeros. bits in 2 .. 8. */
float blockq_scale(const float *x, size_t n, int bits);

/* y[0 .. n) = x quantized to `bits` bits in consecutive blocks of `block` values (the last one
 * may be shorter) and decoded back. y may be x. */
void blockq_roundtrip(const float *x, float *y, size_t n, size_t block, int bits);

/* qwZ's blocks over a partition of n values: ceil(n / BLOCKQ_QWZ_TARGET) groups, each
 * ceil(n / groups) values. Returns the block size (n when n <= the target; 1 for n = 0). */
size_t blockq_qwz_block(size_t n);

/* The wire bytes of n values quantized to `bits` bits in blocks of `block`: the packed integers
 * (ceil(n bits / 8)) and one fp32 scale per block. */
double blockq_bytes(size_t n, size_t block, int bits);

#endif
