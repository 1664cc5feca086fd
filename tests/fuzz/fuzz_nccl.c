/* fuzz_nccl.c: libFuzzer harness for the nccl-tests log reader of `bellows costs
 * import-nccl-tests` (sim/costs/nccl_import.c). Each input is written to a scratch file as one
 * log and imported as a fragment (no --base) into a scratch profile; the first input byte picks
 * the collective (from the log, allreduce or allgather) and the transport, so that every branch
 * of the reader and the table builder is reached. A refusal is fine; any crash, leak, overflow
 * or undefined behaviour is a bug. Built and run by tests/fuzz/run.sh (nccl). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "nccl_import.h"

static char log_path[64], out_path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!log_path[0]) {
        snprintf(log_path, sizeof log_path, "/dev/shm/bellows-fuzz-%d.txt", (int)getpid());
        snprintf(out_path, sizeof out_path, "/dev/shm/bellows-fuzz-%d.json", (int)getpid());
    }
    if (size < 1) return 0;
    const unsigned pick = data[0];
    FILE *f = fopen(log_path, "wb");
    if (!f) return 0;
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);
    const char *logs[1] = {log_path};
    NcclImport a = {.logs = logs,
                    .n_logs = 1,
                    .net = (CostNet)(pick % 3),
                    .link_Bps = 100e9 / 8, /* a 100 Gbit/s NIC */
                    .gpus_per_node = (pick >> 2) & 1 ? 8 : 0,
                    .nics_per_node = (pick >> 3) & 1 ? 4 : 1,
                    .collective = (int)((pick >> 4) % 3) - 1,
                    .base = NULL,
                    .name = NULL,
                    .out = out_path};
    BwError err;
    if (costs_import_nccl_tests(&a, &err) == BW_OK) unlink(out_path);
    return 0;
}
