/* schedule.h: the core's side of the schedule interface, what the driver and the commands call.
 * A schedule itself sees only the public header, bellows_schedule.h; the names below are the
 * core's names for the same structs.
 *
 * A schedule is built in (one file schedules/NAME.c and one line in schedules.def) or loaded at
 * run time from a shared object: a spec whose name part holds a '/' or ends in ".so" is a path,
 * `--schedule ./mysched.so:key=value` (schedule_load.c).
 *
 * Call order, per step t of a costed run (the driver does it once, for all workers, after the
 * policy has decided the step's levels): schedule_step(s, &obs_t, &d). */
#ifndef BELLOWS_SCHEDULE_H
#define BELLOWS_SCHEDULE_H

#include <stdio.h>

#include "bellows_schedule.h"
#include "spec.h"
#include "status.h"

typedef BellowsScheduleOps ScheduleOps;
typedef BellowsScheduleContext ScheduleContext;
typedef BellowsScheduleObs ScheduleObs;
typedef BellowsScheduleDecision ScheduleDecision;
typedef BellowsSchedule Schedule;

/* The default --schedule: DDP's buckets in the order the backward fills them. */
#define SCHEDULE_DEFAULT "fifo"

/* BytePS's BYTEPS_PARTITION_BYTES (byteps/common/global.cc): fifo's partitions on parameter
 * servers, and ByteScheduler's default partition. */
#define SCHEDULE_PS_PARTITION_BYTES 4096000.0

const ScheduleOps *schedule_find(const char *name);
const ScheduleOps *const *schedule_registry(void); /* NULL-terminated */

/* Parses "name[:k=v,...]" or "path.so[:k=v,...]" (flag names the CLI flag for messages), loads a
 * plugin, checks the options and initialises the schedule on a copy of ctx (its tensor and
 * layer tables are copied). Usage errors (unknown schedule, a plugin that cannot be loaded or is
 * inconsistent, a bad option, an init that refuses its options) return BW_EUSAGE. */
int schedule_create(const char *spec, const char *flag, const ScheduleContext *ctx, Schedule **out,
                    BwError *err);
/* Pre-fills *d with fifo's decision (d->priority must point at the caller's n_tensors doubles),
 * lets the schedule decide and checks the decision. Returns BW_OK, or for a plugin BW_ERUNTIME
 * with the message in err; a built-in's invalid decision aborts (a bug of bellows). */
int schedule_step(Schedule *s, const ScheduleObs *obs, ScheduleDecision *d, BwError *err);
void schedule_describe(const Schedule *s, char *buf, size_t n);
void schedule_free(Schedule *s); /* NULL is a no-op */
/* The spec with every option spelled out, defaults included, in the order of the option table:
 * "bytescheduler:partition=4096000,credit=4" (what summary.json records). */
const char *schedule_spec(const Schedule *s);

/* Whether spec names the built-in fifo (with no options to change it): the driver then prices
 * a step as it always has (DDP's buckets on one stream, sim/driver/cost.c). A spec that does not
 * parse is not fifo (schedule_create says what is wrong). */
int schedule_spec_is_fifo(const char *spec);

/* The `bellows schedules` listing: every schedule with its help, source and options. */
void schedule_print_list(FILE *out);
/* One plugin's entry in the same form (out NULL: only load and check it). */
int schedule_print_plugin(FILE *out, const char *path, const char *flag, BwError *err);

/* ---- shared by schedule.c and schedule_load.c ---- */

/* Loads the plugin at path: dlopen, the entry point, the version, the ops table's consistency.
 * Fills *ops with the ops zero-extended to this core's version; *handle is for
 * schedule_plugin_close. Messages start with "FLAG PATH: ". */
int schedule_plugin_open(const char *path, const char *flag, void **handle, ScheduleOps *ops,
                         BwError *err);
void schedule_plugin_close(void *handle);
/* Checks an ops table (built in or loaded); what prefixes the message. */
int schedule_ops_check(const ScheduleOps *ops, const char *what, BwError *err);
/* Converts an option table for spec_resolve and spec_print_opts (n <= BELLOWS_SCHEDULE_MAX_OPTS).
 */
void schedule_spec_opts(const BellowsScheduleOpt *opts, int n, SpecOpt *out);

#endif
