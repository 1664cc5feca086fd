/* cost_lane.c: what every way of pricing a step shares (DDP's streams in cost.c, the closed form
 * in cost_fast.c, the scheduled engine in sched_*.c): seconds on the simulated GPU and an
 * execution on a worker's lane, its timeline spans and its notes for the books' split, a
 * bucket's compressor work per phase, the profile's cycle wait, the optimiser's seconds, this
 * step's slowdown and jitter, and a measured profile's GPU peak. A leaf of sim/driver/'s call
 * graph beside run_info.c (scripts/callgraph.py). */
#include "driver_impl.h"

#include <math.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>

#include "xalloc.h"

/* The measured GPU's peak over the simulated one's, at each one's precision (1 when the profile
 * is in flops, or its GPU is not one bellows knows, or the cluster's rate was given directly). */
double cost_peak_ratio(const Workload *wl, const Cluster *cl)
{
    if (!wl->measured_batch || !wl->measured_gpu[0] || !(cl->gpu_peak_flops > 0)) return 1.0;
    const GpuProfile *g = cluster_gpu_find(wl->measured_gpu);
    if (!g) return 1.0;
    const char *p = wl->measured_precision[0] ? wl->measured_precision : "fp32";
    double peak = strcmp(p, "tf32") == 0   ? g->tf32_flops
                  : strcmp(p, "bf16") == 0 ? g->bf16_flops
                                           : g->fp32_flops;
    return peak > 0 ? peak / cl->gpu_peak_flops : 1.0;
}

/* The roofline time of flops and bytes of memory traffic on the cluster's GPU: the larger of the
 * two (a GPU given only by its rate has no memory bound). */
double cost_gpu_seconds(const Cluster *cl, double flops, double bytes)
{
    double t = flops / cl->gpu_flops;
    if (cl->gpu_mem_Bps > 0 && bytes / cl->gpu_mem_Bps > t) t = bytes / cl->gpu_mem_Bps;
    return t;
}

/* Executes `flops` on the worker's host, scaled by its slowdown and this step's jitter; returns
 * the seconds it took (longer when its stream computes at the same time). */
double cost_gpu_exec(Worker *me, double flops)
{
    if (!(flops > 0)) return 0.0;
    double t0 = simgrid_get_clock();
    sg_actor_execute(flops * me->cost_mult);
    return simgrid_get_clock() - t0;
}

/* The profile's interference, or 1 (none). */
static double interference(const Worker *me)
{
    const CostProfile *prof = me->run->cost ? me->run->cost->prof : NULL;
    return prof && prof->interference > 1 ? prof->interference : 1.0;
}

void cost_comm_begin(Worker *me)
{
    const double s = interference(me);
    if (s == 1.0 || me->comm_busy++ > 0) return;
    const double speed = sg_host_get_speed(sg_host_self());
    /* more work than any run simulates (CLUSTER_MAX_SIM_S): it never ends, it is cancelled */
    me->interfering = sg_actor_exec_init(speed * 1e12);
    sg_exec_set_bound(me->interfering, speed * (1 - 1 / s));
    sg_exec_start(me->interfering);
}

void cost_comm_end(Worker *me)
{
    if (interference(me) == 1.0 || --me->comm_busy > 0) return;
    sg_exec_cancel(me->interfering);
    me->interfering = NULL;
}

void cost_span(Worker *me, TimelineLane lane, const char *cat, const char *name, double t0,
               double t1, const char *args)
{
    DriverRun *run = me->run;
    if (run->tl && t1 > t0 && timeline_wants(run->tl, me->cost_step))
        timeline_span(run->tl, me->rank, lane, cat, name, t0, t1, me->cost_step, args);
}

/* The stream's record of what it did this step, for the exposed-time split. */
void cost_note(Worker *me, int kind, double t0, double t1)
{
    if (!(t1 > t0)) return;
    if (me->n_spans == me->cap_spans) {
        me->cap_spans = me->cap_spans ? 2 * me->cap_spans : 16;
        me->spans =
            bw_xrealloc_n(me->spans, (size_t)me->cap_spans, sizeof *me->spans, "a stream's spans");
    }
    me->spans[me->n_spans++] = (CostSpan){t0, t1, kind};
}

/* A round of collectives submitted at once waits for the background thread that starts them,
 * under a profile with a cycle (CostProfile.cycle_s, Horovod's): half a cycle on average when
 * the thread was idle; nothing when the round was queued while the previous one ran (the busy
 * thread takes it at once, as Horovod fuses the tensors that are ready). */
double cost_cycle_wait_s(const CostProfile *prof, int queued)
{
    return prof && !queued ? 0.5 * prof->cycle_s : 0.0;
}

/* What a bucket's compressor work costs, per phase (CompressCost.phase_s): under the ideal
 * profile the roofline of its flops and bytes, half as the encode and half as the decode
 * after the last message (all of it as the encode when the compressor sends nothing of its
 * own: powersgd:comm=none); nothing with --free-compression. Returns the last phase. */
int cost_phases(const DriverRun *run, int nm, CompressCost *cc)
{
    const int last = nm - cc->first_msg;
    if (run->cfg->free_compression) {
        memset(cc->phase_s, 0, sizeof cc->phase_s);
    } else if (!run->cost->prof) {
        double whole = cost_gpu_seconds(&run->cluster, cc->flops, cc->bytes);
        cc->phase_s[0] = last > 0 ? 0.5 * whole : whole;
        if (last > 0) cc->phase_s[last] = 0.5 * whole;
    }
    return last;
}

/* The optimiser's step over the real model's parameters on the GPU: the profile's rate, or the
 * roofline of its flops and memory traffic. */
double cost_opt_seconds(const DriverRun *run)
{
    const CostModel *cm = run->cost;
    if (cm->prof) return costs_op_seconds(cm->prof, COST_OP_OPTIMIZER, (double)cm->wl->n_params);
    return cost_gpu_seconds(&run->cluster, cm->opt_flops, cm->opt_bytes);
}

/* This step's multiplier of every GPU time: the worker's slowdown, the slowest worker's when
 * there are stragglers (driver_straggler_factor: the same for every worker, as each waits for
 * it; exec_step books its extra as waiting) and a lognormal jitter of mean 1 (drawn as the
 * uncosted step draws it). me->cost_step is the step's. */
double cost_step_multiplier(Worker *me)
{
    const RunConfig *cfg = me->run->cfg;
    double mult = cfg->slowdown ? cfg->slowdown[me->rank] : 1.0;
    mult *= driver_straggler_factor(cfg, me->cost_step);
    if (cfg->jitter_sigma > 0) {
        double s = cfg->jitter_sigma;
        mult *= exp(s * gsl_ran_gaussian(me->rng, 1.0) - 0.5 * s * s);
    }
    return mult;
}
