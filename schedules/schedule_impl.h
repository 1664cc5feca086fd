/* schedule_impl.h: what the built-in schedule files share. It sees only the public header,
 * bellows_schedule.h, the one a plugin sees: a built-in schedule could be built as a plugin as
 * it is, given an entry point. */
#ifndef BELLOWS_SCHEDULE_IMPL_H
#define BELLOWS_SCHEDULE_IMPL_H

#include <stdio.h>

#include "bellows_schedule.h"

/* Formats a one-line message into err and returns rc: `return schedule_fail(err, errlen,
 * BELLOWS_SCHEDULE_EUSAGE, "partition=%g: ...", x);`. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
int schedule_fail(char *err, size_t errlen, int rc, const char *fmt, ...);

/* A partition size given as an option: refused (EUSAGE, naming the option) when it is larger
 * than the whole model, which no message can reach. */
int schedule_check_partition(const BellowsScheduleContext *ctx, double bytes, const char *what,
                             char *err, size_t errlen);

/* A partition size's default: `bytes`, or the whole model when it is smaller (but never below
 * BELLOWS_SCHEDULE_MIN_PARTITION_BYTES). */
double schedule_default_partition(const BellowsScheduleContext *ctx, double bytes);

/* Every tensor's priority is its layer's index in the forward pass: the first layers, which the
 * next forward needs first, go first (ByteScheduler, P3). */
void schedule_priority_by_layer(const BellowsScheduleContext *ctx, BellowsScheduleDecision *d);

#endif
