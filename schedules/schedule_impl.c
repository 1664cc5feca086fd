/* schedule_impl.c: the helpers of schedule_impl.h, on the public header only. */
#include "schedule_impl.h"

#include <stdarg.h>

int schedule_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

int schedule_check_partition(const BellowsScheduleContext *ctx, double bytes, const char *what,
                             char *err, size_t errlen)
{
    if (bytes > ctx->model_bytes)
        return schedule_fail(err, errlen, BELLOWS_SCHEDULE_EUSAGE,
                             "%s=%.15g: larger than the whole model (%.15g bytes of fp32); "
                             "expected %.0f to %.15g",
                             what, bytes, ctx->model_bytes, BELLOWS_SCHEDULE_MIN_PARTITION_BYTES,
                             ctx->model_bytes);
    return BELLOWS_SCHEDULE_OK;
}

double schedule_default_partition(const BellowsScheduleContext *ctx, double bytes)
{
    if (ctx->model_bytes < bytes) bytes = ctx->model_bytes;
    return bytes < BELLOWS_SCHEDULE_MIN_PARTITION_BYTES ? BELLOWS_SCHEDULE_MIN_PARTITION_BYTES
                                                        : bytes;
}

void schedule_priority_by_layer(const BellowsScheduleContext *ctx, BellowsScheduleDecision *d)
{
    for (int t = 0; t < ctx->n_tensors; t++) d->priority[t] = ctx->tensors[t].layer;
}
