/* bad_schedule.c: a schedule plugin that decides a priority that is not finite from step 2 on
 * (BAD_STEP), or (BAD_VERSION) claims an interface version bellows does not know: the core must
 * refuse the first at run time naming it (exit 1) and the second before anything runs (exit 2).
 * Built by CMake for tests/test_schedules.c. */
#include <math.h>

#include "bellows_schedule.h"

static void decide(BellowsSchedule *s, const BellowsScheduleObs *obs, BellowsScheduleDecision *d)
{
    (void)s;
    if (obs->step >= 2) d->priority[0] = NAN;
}

static const BellowsScheduleOps ops = {
#ifdef BAD_VERSION
    .iVersion = BELLOWS_SCHEDULE_VERSION + 1,
#else
    .iVersion = BELLOWS_SCHEDULE_VERSION,
#endif
    .name = "bad",
    .help = "a priority that is not finite from step 2 on",
    .decide = decide,
};

const BellowsScheduleOps *bellows_schedule_entry(void)
{
    return &ops;
}
