/* fuzz_trace.c: libFuzzer harness for the gradient-trace reader (traces/trace.c). Each input is
 * written to a scratch file (the reader takes a path, plain or gzip) and read; any crash, leak,
 * overflow or undefined behaviour is a bug. Built and run by tests/fuzz/run.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "trace.h"

static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) snprintf(path, sizeof path, "/dev/shm/bellows-fuzz-%d.jsonl", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    Trace t;
    BwError err;
    if (trace_read(path, &t, &err) == BW_OK) trace_free(&t);
    return 0;
}
