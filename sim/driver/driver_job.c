/* driver_job.c: several runs in one SimGrid engine (driver.h, bellows cluster). A job is a
 * DriverRun whose place says where its ranks sit on the loaded cluster, when its clock starts
 * and which names its mailboxes take; its life is a run's (driver.c), with the engine run once
 * for all the jobs by the caller between their start and their finish. */
#include "driver_impl.h"

#include <simgrid/actor.h>

int driver_job_create(const RunConfig *cfg, const DriverPlace *place, RunResult *res,
                      DriverRun **out, BwError *err)
{
    *out = NULL;
    int rc = driver_check(cfg, err);
    if (rc) return rc;
    if (driver_replay_fast(cfg, NULL, 0))
        return bw_fail(err, BW_EUSAGE, "a job of several needs the actors, not the fast replay");
    run_result_init(cfg, res);
    return run_create(cfg, place, res, out, err);
}

void driver_job_start(DriverRun *run)
{
    run_begin(run);
}

int driver_job_finish(DriverRun *run, BwError *err)
{
    int rc = run_finish(run, err);
    if (run->cfg->progress) fputs("\r\033[K", stderr);
    return rc;
}

void driver_job_free(DriverRun *run)
{
    run_free(run);
}
