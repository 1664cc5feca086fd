/* comp_none.c: no compression, the baseline of every paper compared here: the whole gradient
 * in one dense fp32 allreduce, averaged (synchronous data-parallel SGD; the ring allreduce of
 * Patarasuk and Yuan, JPDC 2009, or whichever algorithm the run uses). The core does all of it:
 * a compressor without a reduce hook sends every layer dense. */
#include "compress.h"

const CompressorOps comp_none_ops = {
    .name = "none",
    .help = "no compression: every layer dense fp32, one fused allreduce, averaged",
    .source = "synchronous data-parallel SGD; epfml/powersgd gradient_reducers.py ExactReducer",
    .wire = "allreduce of 4 bytes per element",
    .level_name = NULL,
    .level_default = 0,
    .level_min = 0,
    .level_max = 1,
};
