/* ender.c: a policy plug-in (or, built with -DENDER_SCHEDULE, a schedule plug-in) that ends
 * bellows its own way, as the environment says, for tests/test_plugin_end.c:
 *   BELLOWS_TEST_END="HOW WHEN"
 * HOW: exit (exit(0)), _exit (_exit(0)), abort, stall (suspends its SimGrid actor for good, so
 * that the simulation stalls; mid only), sigterm (raise(SIGTERM)), fork (a child that creates
 * $BELLOWS_TEST_DIR/forked-child and ends), chdir (into $BELLOWS_TEST_DIR/elsewhere); WHEN: load
 * (its constructor), init, first (its first decision, step 0, which bellows makes before the run
 * starts too) or mid (step 2). Without the variable it is a plug-in like any other (sync, or fifo).
 */
#include <fcntl.h>
#include <signal.h>
#include <simgrid/actor.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(ENDER_SCHEDULE)
#include "bellows_schedule.h"
#else
#include "bellows_policy.h"
#endif

/* Ends the process as HOW says if WHEN is when. */
static void maybe_end(const char *when)
{
    const char *e = getenv("BELLOWS_TEST_END");
    const char *sp = e ? strchr(e, ' ') : NULL;
    if (!sp || strcmp(sp + 1, when) != 0) return;
    size_t n = (size_t)(sp - e);
    if (n == 4 && !strncmp(e, "exit", 4)) exit(0);
    if (n == 5 && !strncmp(e, "_exit", 5)) _exit(0);
    if (n == 5 && !strncmp(e, "abort", 5)) abort();
    if (n == 5 && !strncmp(e, "stall", 5)) sg_actor_suspend(sg_actor_self());
    if (n == 7 && !strncmp(e, "sigterm", 7)) raise(SIGTERM);
    const char *dir = getenv("BELLOWS_TEST_DIR");
    char path[4096];
    if (n == 4 && !strncmp(e, "fork", 4) && fork() == 0) {
        snprintf(path, sizeof path, "%s/forked-child", dir ? dir : ".");
        close(open(path, O_CREAT | O_WRONLY, 0644));
        _exit(0);
    }
    snprintf(path, sizeof path, "%s/elsewhere", dir ? dir : ".");
    if (n == 5 && !strncmp(e, "chdir", 5) && chdir(path) != 0) abort();
}

__attribute__((constructor)) static void on_load(void)
{
    maybe_end("load");
}

#if defined(ENDER_SCHEDULE)
static void decide(BellowsSchedule *s, const BellowsScheduleObs *obs, BellowsScheduleDecision *d)
{
    (void)s, (void)d;
    if (obs->step == 0) maybe_end("first");
    if (obs->step == 2) maybe_end("mid");
}

static int init(BellowsSchedule *s, const BellowsScheduleValue *v, char *err, size_t n)
{
    (void)s, (void)v, (void)err, (void)n;
    maybe_end("init");
    return BELLOWS_SCHEDULE_OK;
}

static const BellowsScheduleOps ops = {
    .iVersion = BELLOWS_SCHEDULE_VERSION,
    .name = "ender",
    .help = "fifo, or ends bellows as BELLOWS_TEST_END says",
    .init = init,
    .decide = decide,
};

const BellowsScheduleOps *bellows_schedule_entry(void)
{
    return &ops;
}
#else
static void decide(BellowsPolicy *p, const BellowsPolicyObs *obs, BellowsPolicyDecision *d)
{
    (void)p, (void)d;
    if (obs->step == 0) maybe_end("first");
    if (obs->step == 2) maybe_end("mid");
}

static int init(BellowsPolicy *p, const BellowsPolicyValue *v, char *err, size_t n)
{
    (void)p, (void)v, (void)err, (void)n;
    maybe_end("init");
    return BELLOWS_POLICY_OK;
}

static const BellowsPolicyOps ops = {
    .iVersion = BELLOWS_POLICY_VERSION,
    .name = "ender",
    .help = "sync, or ends bellows as BELLOWS_TEST_END says",
    .mode = BELLOWS_POLICY_GRADIENT,
    .init = init,
    .decide = decide,
};

const BellowsPolicyOps *bellows_policy_entry(void)
{
    return &ops;
}
#endif
