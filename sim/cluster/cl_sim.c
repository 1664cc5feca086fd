/* cl_sim.c: one engine, several jobs (driver.h's driver_job_*): the cluster's platform loaded
 * once, every job created on its GPUs with its own mailboxes and start, one pool of threads for
 * all of them, SimGrid run once, then each job's files written as `bellows run` writes a run's
 * (results.h), each job's timeline in the engine's clock, and the links' use over time. The
 * same code runs a job alone on the same GPUs of the same platform, from time 0, for the
 * comparison. Runs in a child process: SimGrid allows one engine per process. */
#include "cl_impl.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

#include <simgrid/engine.h>

#include "engine.h"
#include "outfile.h"
#include "pool.h"
#include "results.h"
#include "wallclock.h"

/* What one engine holds for its jobs. */
typedef struct {
    int n;
    RunConfig *cfg;
    DriverPlace *place;
    RunResult *res;
    DriverRun **run;
    char (*dir)[4096];
    char (*timeline)[4200]; /* the configurations point here */
    Pool *pool;
    ClLinks *links;    /* the shared run's, or NULL */
    ClWireJob *wire;   /* [n]: each job's view of links */
    ClFabric **fabric; /* [n]: a priced job's flows on the shared links, or NULL */
} Sim;

static void sim_free(Sim *s)
{
    for (int k = 0; s->run && k < s->n; k++) {
        driver_job_free(s->run[k]);
        driver_result_free(&s->res[k]);
    }
    for (int k = 0; s->fabric && k < s->n; k++) cl_fabric_free(s->fabric[k]);
    free(s->fabric);
    free(s->cfg);
    free(s->place);
    free(s->res);
    free(s->run);
    free(s->dir);
    free(s->timeline);
    free(s->wire);
    pool_free(s->pool);
    cl_links_free(s->links);
}

/* Job k of the engine: plan's job `which`, its folder and its timeline. */
static int sim_job(Sim *s, const ClPlan *p, int k, int which, int alone, const char *dir,
                   BwError *err)
{
    const ClJob *job = &p->jobs[which];
    snprintf(s->dir[k], sizeof s->dir[k], "%s/%s/%s", dir, alone ? "alone" : "jobs",
             job->spec->name);
    int rc = outdir_create(s->dir[k], err);
    if (rc) return rc;
    outdir_track_below(dir, s->dir[k]); /* removed on a signal while empty */
    s->cfg[k] = job->cfg;
    if (p->timeline_steps[0] && !alone) {
        snprintf(s->timeline[k], sizeof s->timeline[k], "%s/timeline.json", s->dir[k]);
        s->cfg[k].timeline = s->timeline[k];
        cl_timeline_range(p, &s->cfg[k].timeline_lo, &s->cfg[k].timeline_hi);
    }
    s->wire[k] = (ClWireJob){s->links, job->gpus};
    if (job->cfg.price_workers) /* a priced job's ring on the shared links (cl_fabric.c) */
        s->fabric[k] = cl_fabric_create(p, job, s->links ? &s->wire[k] : NULL);
    s->place[k] = (DriverPlace){job->gpus,
                                alone ? 0 : job->spec->start_s,
                                k + 1,
                                s->pool,
                                s->links ? cl_links_wire : NULL,
                                &s->wire[k],
                                s->fabric[k] ? cl_fabric_call : NULL,
                                s->fabric[k],
                                job->layout};
    rc = driver_job_create(&s->cfg[k], &s->place[k], &s->res[k], &s->run[k], err);
    if (rc) {
        char where[128];
        snprintf(where, sizeof where, "job \"%s\": ", job->spec->name);
        return cl_fail_keys(err, rc, where, err->msg);
    }
    return BW_OK;
}

/* The jobs' books and files, once the engine has run. */
static int sim_finish(Sim *s, const ClPlan *p, const int *which, double wall0, BwError *err)
{
    int rc = BW_OK;
    for (int k = 0; k < s->n && !rc; k++) {
        const ClJob *job = &p->jobs[which[k]];
        if ((rc = driver_job_finish(s->run[k], err))) break;
        RunMeta meta = {"cluster",
                        job->ta.model,
                        p->spec->network_model,
                        job->f.run.collectives,
                        wallclock_s() - wall0,
                        s->cfg[k].target_accuracy,
                        0,
                        0};
        rc = results_write(s->dir[k], &s->cfg[k], &meta, &s->res[k], err);
        if (!rc && s->res[k].output_error[0])
            rc = bw_fail(err, BW_ERUNTIME, "job \"%s\": %.400s", job->spec->name,
                         s->res[k].output_error);
    }
    return rc;
}

int cl_simulate(const ClPlan *p, const int *which, int n, int alone, const char *dir, int threads,
                double wall0, BwError *err)
{
    Sim s = {.n = n};
    s.cfg = bw_xcalloc((size_t)n, sizeof *s.cfg, "cl_sim.c: s.cfg");
    s.place = bw_xcalloc((size_t)n, sizeof *s.place, "cl_sim.c: s.place");
    s.res = bw_xcalloc((size_t)n, sizeof *s.res, "cl_sim.c: s.res");
    s.run = bw_xcalloc((size_t)n, sizeof *s.run, "cl_sim.c: s.run");
    s.dir = bw_xcalloc((size_t)n, sizeof *s.dir, "cl_sim.c: s.dir");
    s.timeline = bw_xcalloc((size_t)n, sizeof *s.timeline, "cl_sim.c: s.timeline");
    s.wire = bw_xcalloc((size_t)n, sizeof *s.wire, "cl_sim.c: s.wire");
    s.fabric = bw_xcalloc((size_t)n, sizeof *s.fabric, "cl_sim.c: s.fabric");
    int rc = engine_init(0, NULL, p->spec->network_model, err);
    outfile_interrupt_softly(); /* again: SimGrid's engine_init puts its own (exit 1) in */
    Cluster platform = p->platform;
    if (!rc) rc = engine_load_cluster(&platform, err);
    if (!rc && !alone) s.links = cl_links_create(platform.workers);
    if (!rc && threads > 1 && !(s.pool = pool_create(threads)))
        rc = bw_fail(err, BW_ERUNTIME, "cannot start %d threads", threads);
    for (int k = 0; k < n && !rc; k++) rc = sim_job(&s, p, k, which[k], alone, dir, err);
    if (!rc) {
        for (int k = 0; k < n; k++) driver_job_start(s.run[k]);
        simgrid_run();
        rc = sim_finish(&s, p, which, wall0, err);
    }
    if (!rc && s.links) rc = cl_links_write(s.links, dir, err);
    sim_free(&s);
    return rc;
}
