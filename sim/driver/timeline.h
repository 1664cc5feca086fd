/* timeline.h: a run's timeline as Chrome trace events ({"traceEvents": [...]}, opened in
 * Perfetto or chrome://tracing): one process per worker (pid = rank), lanes (threads) for its
 * compute and its communication stream, complete events ("ph": "X", ts and dur in microseconds
 * of simulated time) whose cat is compute, compression, communication or wait, with the layer
 * or bucket and the bytes in args, and the policy's decisions as instant events ("ph": "i").
 * Only steps inside [step_lo, step_hi] are kept, which bounds the file's size. The file is
 * written whole when the run ends (through a temporary file renamed into place), or not at all. */
#ifndef BELLOWS_TIMELINE_H
#define BELLOWS_TIMELINE_H

#include "status.h"

typedef struct Timeline Timeline;

/* A worker's threads: its compute, and its communication lanes TL_LANE_COMM + k for k below the
 * comm_lanes given at open (a schedule's partitions in flight to parameter servers run on
 * lanes of their own). */
typedef enum { TL_LANE_COMPUTE, TL_LANE_COMM } TimelineLane;

/* step_hi < 0: no upper bound. workers: the run's P (names the processes); comm_lanes >= 1. */
int timeline_open(const char *path, long step_lo, long step_hi, int workers, int comm_lanes,
                  Timeline **out, BwError *err);
/* Whether events of this step are kept (callers skip building args otherwise). NULL: no. */
int timeline_wants(const Timeline *tl, long step);
/* A complete event. cat: "compute", "compression", "communication" or "wait"; name: e.g.
 * "forward", "backward layer4.1.conv2", "bucket 3"; args_json: extra members without braces,
 * e.g. "\"bucket\":3,\"bytes\":1048576" (may be NULL); "step" is added. Times in simulated s. */
void timeline_span(Timeline *tl, int worker, TimelineLane lane, const char *cat, const char *name,
                   double t0_s, double t1_s, long step, const char *args_json);
/* An instant event on worker's compute lane (the policy's decision at a step). */
void timeline_instant(Timeline *tl, int worker, const char *name, double t_s, long step,
                      const char *args_json);
/* Writes the file (atomically) and frees; timeline_abort frees without writing. NULL: no-op. */
int timeline_close(Timeline *tl, BwError *err);
void timeline_abort(Timeline *tl);

#endif
