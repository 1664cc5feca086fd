/* driver.c: the public face of the training loop (driver.h): choosing the fast replay, and
 * creating, running and freeing one DriverRun (driver_check.c checks a run before it starts).
 * The run holds everything it allocates, and run_free releases it also after a failure
 * part-way through run_create. The rooms of a run: worker.c, rendezvous.c, replay.c and
 * record.c. */
#include "exec_impl.h"
#include "xalloc.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>

#include "engine.h"
#include "plugguard.h"

void driver_sum_order(const RunConfig *cfg, char *buf, size_t n)
{
    if (driver_costed(cfg))
        snprintf(buf, n, "rank"); /* cost.c: CostModel.data */
    else /* the analytic backend's, a server's or the algorithm's own (coll.h) */
        coll_algo_sum_order(cfg->algo, cfg->backend, cfg->cluster.gpus_per_node, buf, n);
    /* across islands the outer exchanges add in their collectives' order (islands.c): a
     * transfer-level exchange's differs from the analytic one's in the last bits */
    const size_t used = strlen(buf);
    if (cfg->cluster.topology == TOPO_ISLANDS && used < n)
        snprintf(buf + used, n - used, ", islands %s",
                 cfg->backend == COLL_ANALYTIC ? "analytic" : "transfer");
}

/* ---- one run ---- */

void run_free(DriverRun *run)
{
    if (!run) return;
    record_trace_abort(run);
    timeline_abort(run->tl);
    cost_free(run);
    if (!run->job.place || !run->job.place->pool) /* idle: every worker waits for its job first */
        pool_free(run->pool);
    for (int t = 0; run->slots && t < run->n_slots; t++) {
        model_free(run->slots[t].model); /* leaves the buffers it borrowed */
        free(run->slots[t].x);
        free(run->slots[t].y);
    }
    free(run->slots);
    if (run->bar) sg_barrier_destroy(run->bar);
    policy_free(run->pol);
    for (int w = 0; run->w && w < run->P; w++) worker_free(&run->w[w]);
    free(run->w);
    model_free(run->shared.replica); /* after the workers' models, which borrow its parameters */
    sgd_free(&run->shared.opt);
    outer_free(run);
    free(run->shared.applied);
    free(run->dec.level);
    free(run->grad_norm_rank0);
    free(run->grad_norm_mean);
    free(run->epoch_norm_rank0);
    free(run->epoch_norm_mean);
    islands_free(run); /* its rings before run->comm, whose books they share */
    zpp_free(run);     /* so are the nodes' rings (--zeropp) */
    /* hybrid sharding's rings, as the islands' */
    shard_comms_free(run);
    coll_comm_free(run->comm);
    coll_comm_free(run->mirror);
    model_free(run->eval_model);
    free(run->avg.eval_acc);
    free(run->perm);
    free(run);
}

/* The run's cluster (loaded into SimGrid unless the fast replay needs none), its collectives
 * and its workers, each knowing its run and rank (worker_init comes once the policy's mode is
 * known: run_workers_init), and the model the policy is described from (run->shared.replica). */
static int run_alloc(DriverRun *run, BwError *err)
{
    const RunConfig *cfg = run->cfg;
    RunResult *res = run->res;
    int rc;
    driver_cluster_loaded(cfg, &run->cluster);
    const CostProfile *prof = cfg->costs && !cfg->costs->ideal ? cfg->costs : NULL;
    if (run->job.place) /* a job of several: the cluster is loaded, its ranks placed on it */
        engine_measure_job(&run->cluster, run->job.place->gpus);
    else if (!run->fast && (rc = engine_load_cluster(&run->cluster, err)))
        return rc;
    res->cluster = run->cluster; /* what the files say of it */
    run->comm =
        run->fast ? coll_comm_create_offline(&run->cluster, cfg->algo)
                  : islands_comm_create(&run->cluster, cfg->algo, cfg->backend, cfg->islands_flat);
    /* the cluster the closed forms price */
    Cluster priced = run->cluster;
    if (run->comm && cfg->price_workers > run->P) { /* --price-workers: the closed forms at N */
        priced.workers = cfg->price_workers;
        if (priced.topology == TOPO_ISLANDS) /* the hierarchical allreduce's groups (islands.c) */
            priced.gpus_per_node = cluster_island_size(&priced);
        coll_comm_set_price(run->comm, &priced);
    }
    if (run->comm && run->job.place && run->job.place->layout) /* its ring's hops as placed */
        coll_comm_set_layout(run->comm, &priced, run->job.place->layout);
    if (run->comm && driver_ps_inflight(cfg)) /* fifo's partitions in flight, as transfer's */
        coll_comm_set_ps_partition(run->comm, SCHEDULE_PS_PARTITION_BYTES);
    if (run->comm && run->job.place) {
        coll_comm_set_tag(run->comm, run->job.place->tag);
        coll_comm_set_wire(run->comm, run->job.place->wire, run->job.place->wire_arg);
        if (run->job.place->fabric)
            coll_comm_set_fabric(run->comm, run->job.place->fabric, run->job.place->fabric_arg);
    }
    if (run->comm && prof)
        coll_comm_set_allgather_factor(run->comm,
                                       driver_allgather_factor(prof, cfg, &run->cluster));
    CollShareCurve curve[2]; /* nccl-tests' busbw for the cluster's GPUs per NIC (costs_busbw.c) */
    const double per_nic = cluster_gpus_per_nic(&run->cluster);
    if (run->comm && prof && costs_busbw_curve(prof, cfg->transport, 0, per_nic, &curve[0]) &&
        costs_busbw_curve(prof, cfg->transport, 1, per_nic, &curve[1]))
        coll_comm_set_share_curves(run->comm, &curve[0], &curve[1]);
    run->w = bw_xcalloc((size_t)run->P, sizeof *run->w, "driver.c: run->w");
    run->perm =
        bw_xmalloc(sizeof(int) * (size_t)(cfg->replay ? 1 : cfg->train->n), "driver.c: run->perm");
    if (!run->comm || !run->w || !run->perm)
        return bw_fail(err, BW_ERUNTIME, "out of memory for %d workers", run->P);
    for (int w = 0; w < run->P; w++) { /* also the fast replay's, which only report the trace's */
        run->w[w].run = run;
        run->w[w].rank = w;
    }
    if (run->fast) return replay_fast_init(run, err);
    return run_model_create(cfg, &run->shared.replica, err);
}

/* The workers. Gradient mode keeps run->shared.replica as the one replica every worker shares, with
 * its optimiser (unless cfg->per_worker_replicas); otherwise each worker's own replica is a copy
 * of it, and it is freed. */
static int run_workers_init(DriverRun *run, BwError *err)
{
    const RunConfig *cfg = run->cfg;
    const int own = run->periodic || cfg->per_worker_replicas;
    int rc;
    run->avg.averaged_step = -1;
    if (!own) {
        const size_t n = run->shared.replica->n_params;
        run->shared.updated_step = -1;
        if ((rc = sgd_init(&run->shared.opt, n, cfg->tc.sgd, err))) return rc;
        if (!(run->shared.applied = bw_xmalloc(sizeof(float) * n, "driver.c: run->shared.applied")))
            return bw_fail(err, BW_ERUNTIME, "out of memory for %zu parameters", n);
    }
    for (int w = 0; w < run->P; w++)
        if ((rc = worker_init(&run->w[w], run, w, own, err))) return rc;
    if (own && (rc = outer_init(run, run->shared.replica, err))) return rc;
    if (own) { /* each worker made its own, a copy of it */
        model_free(run->shared.replica);
        run->shared.replica = NULL;
    }
    return BW_OK;
}

/* One scratch model per computing thread (live runs: a replay computes no gradient), made like
 * worker 0's and left without buffers of its own: it borrows each worker's in turn. */
static int run_slots_create(DriverRun *run, int threads, BwError *err)
{
    if (run->cfg->replay) return BW_OK;
    run->n_slots = threads > 1 ? threads : 1;
    run->slots = bw_xcalloc((size_t)run->n_slots, sizeof *run->slots, "driver.c: run->slots");
    if (!run->slots) return bw_fail(err, BW_ERUNTIME, "out of memory");
    Model *w0 = run->w[0].model;
    for (int t = 0; t < run->n_slots; t++) {
        int rc = model_create_sharing(w0, &run->slots[t].model, err);
        if (rc) return rc;
        model_borrow(run->slots[t].model, w0->params, w0->grads, w0->state);
    }
    return BW_OK;
}

/* The arrays of one entry per layer of m0: every worker's norms (the fast replay's too), the
 * run's gathered norms and the decision's levels. */
static int run_layer_arrays(DriverRun *run, const Model *m0, BwError *err)
{
    const size_t n = (size_t)m0->n_layers;
    int ok =
        (run->dec.level = bw_xcalloc(n, sizeof(double), "driver.c: run->dec.level")) &&
        (run->grad_norm_rank0 = bw_xcalloc(n, sizeof(double), "driver.c: run->grad_norm_rank0")) &&
        (run->grad_norm_mean = bw_xcalloc(n, sizeof(double), "driver.c: run->grad_norm_mean")) &&
        (run->epoch_norm_rank0 =
             bw_xcalloc(n, sizeof(double), "driver.c: run->epoch_norm_rank0")) &&
        (run->epoch_norm_mean = bw_xcalloc(n, sizeof(double), "driver.c: run->epoch_norm_mean"));
    for (int w = 0; ok && w < run->P; w++)
        ok = (run->w[w].norms = bw_xcalloc(n, sizeof(double), "driver.c: run->w[w].norms")) != 0;
    return ok ? BW_OK : bw_fail(err, BW_ERUNTIME, "out of memory for %zu layers", n);
}

/* The policy, and (with actors) the model evaluated at time 0 and, in periodic mode, as the
 * mean of the replicas. */
static int run_policy_create(DriverRun *run, BwError *err)
{
    const RunConfig *cfg = run->cfg;
    RunResult *res = run->res;
    const Model *m0 = run->fast ? run->w[0].model : run->shared.replica;
    PolicyContext ctx;
    PolicyLayer *layers = bw_xmalloc(sizeof *layers * (size_t)m0->n_layers, "driver.c: layers");
    if (!layers) return bw_fail(err, BW_ERUNTIME, "out of memory for %d layers", m0->n_layers);
    run_policy_context(&ctx, cfg, &run->cluster, m0, run->shard, layers);
    int rc = run_layer_arrays(run, m0, err);
    if (!rc) rc = policy_create(cfg->policy, "--policy", &ctx, &run->pol, err);
    free(layers); /* the policy keeps its own copy */
    if (rc) return rc;
    run->cops = compress_find(ctx.compressor);
    run->periodic = run->pol->ops->mode == POLICY_PERIODIC;
    res->policy_mode = run->pol->ops->mode;
    /* summary.json says what ran: sync and a periodic policy send no compressor's output, so
     * --compressor's default (powersgd) is not theirs (the trace's header says the same) */
    if (!run_uses_compressor(run))
        snprintf(res->compressor_spec, sizeof res->compressor_spec, "none");
    res->n_params = m0->n_params;
    res->flops_per_sample = model_flops_per_sample(m0);
    /* a replay takes its norms from the trace */
    run->want_norms = !cfg->replay && (run->pol->ops->needs_grad_norms || cfg->record_trace);
    if (run->fast) { /* runs no outer step (outer_init), but its decisions' fingerprint says it */
        if (run->periodic) run->outer.asked = policy_outer(run->pol, &run->outer.o);
        return BW_OK;
    }
    rc = cfg->replay ? run_model_create(cfg, &run->eval_model, err)
                     : model_create_copy(run->shared.replica, &run->eval_model, err);
    if (rc) return rc;
    run->avg.eval_acc = bw_xcalloc(m0->n_params + m0->n_state, sizeof(double),
                                   "driver.c: run->avg.eval_acc"); /* worker_evaluate */
    if (!run->avg.eval_acc) return bw_fail(err, BW_ERUNTIME, "out of memory");
    return BW_OK;
}

/* A run on a ring or the analytic backend, without costed steps or a trace replay (nor
 * RunConfig.direct_collectives), takes its collectives apart (data on a mirror, then the
 * messages), with the mirror's sums on the pool as the run's. When the step's data goes through
 * a zero-time communicator (the mirror, or a costed step's), the workers reach each stretch of
 * compressor math at the same simulated instant, so the compressors share the pool too. */
static int run_mirror_create(DriverRun *run, BwError *err)
{
    const RunConfig *cfg = run->cfg;
    if (run->fast || cfg->replay) return BW_OK;
    if (!run->cost && !cfg->direct_collectives && cfg->cluster.topology != TOPO_ISLANDS &&
        !(cfg->backend == COLL_TRANSFER && !coll_algo_sums_once(cfg->algo))) {
        if (!(run->mirror = coll_comm_create_mirror(&run->cluster, run->comm)))
            return bw_fail(err, BW_ERUNTIME, "out of memory for %d workers", run->P);
        coll_comm_set_pool(run->mirror, run->pool);
    }
    if (run->mirror || run->cost)
        for (int w = 0; w < run->P; w++) compress_set_pool(run->w[w].comp, run->pool);
    return BW_OK;
}

int run_create(const RunConfig *cfg, const DriverPlace *place, RunResult *res, DriverRun **out,
               BwError *err)
{
    DriverRun *run = bw_xcalloc(1, sizeof *run, "driver.c: run");
    *out = run;
    if (!run) return bw_fail(err, BW_ERUNTIME, "out of memory");
    run->cfg = cfg;
    run->job.place = place;
    run->job.start_s = place ? place->start_s : 0;
    run->res = res;
    run->P = cfg->cluster.workers;
    run->shard = run_shard_of(cfg);
    run->b0 = cfg->tc.batch;
    run->fast = driver_replay_fast(cfg, res->replay_engine_why, sizeof res->replay_engine_why);
    if (cfg->replay && !cfg->priced) res->replay_engine = run->fast ? "fast" : "actors";
    int rc = run_alloc(run, err);
    if (rc == BW_OK) rc = run_policy_create(run, err);
    if (rc == BW_OK && !run->fast) rc = run_workers_init(run, err);
    if (rc == BW_OK && cfg->record_trace) rc = record_trace_open(run, run->w[0].model, err);
    if (rc == BW_OK && driver_costed(cfg)) rc = cost_create(run, run->w[0].model, err);
    if (rc == BW_OK && cfg->timeline)
        rc = timeline_open(cfg->timeline, cfg->timeline_lo, cfg->timeline_hi, run->P,
                           fsdp_lanes(run) > 1 ? fsdp_lanes(run) : sched_lanes(run), &run->tl, err);
    int threads = cfg->compute_threads < run->P ? cfg->compute_threads : run->P;
    if (place && place->pool && !cfg->replay) /* the jobs' threads */
        threads = pool_threads(run->pool = place->pool);
    else if (rc == BW_OK && !cfg->replay && threads > 1 && !(run->pool = pool_create(threads)))
        rc = bw_fail(err, BW_ERUNTIME, "--compute-threads %d: cannot start the threads", threads);
    if (rc == BW_OK && run->pool) { /* the analytic sums too (the same bits on any thread) */
        coll_comm_set_pool(run->comm, run->pool);
        if (run->cost) coll_comm_set_pool(run->cost->data, run->pool);
    }
    if (rc == BW_OK) rc = islands_init(run, err);
    if (rc == BW_OK) rc = zpp_init(run, err);
    if (rc == BW_OK) rc = shard_comms_init(run, err); /* hybrid sharding's groups */
    if (rc == BW_OK) rc = outer_lanes_alloc(run, err);
    if (rc == BW_OK) rc = run_mirror_create(run, err);
    if (rc == BW_OK && !run->fast) rc = run_slots_create(run, run->pool ? threads : 1, err);
    return rc;
}

/* One actor per worker, on its rank's host, handed its Worker. */
static void run_actors(DriverRun *run)
{
    run->bar = sg_barrier_init((unsigned)run->P);
    for (int w = 0; w < run->P; w++) {
        run_actor_start(run, w, "worker", worker_actor, &run->w[w]);
    }
    exec_start(run);
    outer_lanes_start(run);
}

/* The untrained model at time 0 and the first step; with actors, the actors, which take every
 * step until the rendezvous says stop once SimGrid runs them. */
void run_begin(DriverRun *run)
{
    snprintf(run->state, sizeof run->state, "start");
    record_eval(run, run->eval_model, NULL, 0.0);
    rendezvous_first_step(run);
    run->res->accuracy_from_trace =
        run->cfg->replay && !run->cfg->priced ? (run->cfg->follow_decisions ? 2 : 1) : 0;
    if (!run->fast) run_actors(run);
}

static void run_simulate(DriverRun *run)
{
    run_begin(run);
    if (run->fast)
        replay_fast(run);
    else
        simgrid_run();
    if (run->cfg->progress) fputs("\r\033[K", stderr);
}

/* The means over workers of their books, and how far the replicas drifted apart. */
static void run_totals(DriverRun *run)
{
    RunResult *res = run->res;
    const int P = run->P;
    for (int w = 0; w < P; w++) {
        const CollStats *cs = coll_stats(run->comm, w);
        res->compute_s += run->w[w].compute_s / P;
        res->wait_s += run->w[w].wait_s / P;
        res->communication_s += run->w[w].comm_s / P;
        res->compression_s += run->w[w].compress_s / P;
        res->bytes_per_worker += cs->bytes_sent / P;
        res->payload_bytes_per_worker += cs->payload_bytes / P;
        res->wall_model_s += run->w[w].wall_model_s;
        res->wall_policy_s += run->w[w].wall_policy_s;
        if (run->w[w].comp) res->wall_compress_s += compress_math_seconds(run->w[w].comp);
    }
    /* a job of several ends with its last actor, the engine with the last job */
    res->sim_time_s = run->job.place ? run->job.end_clock - run->job.start_s : run_now(run);
    /* a worker done before the run's end (a platform whose routes differ, a straggler's last
     * step) waits for it, so that every worker's books add up to the simulated time */
    for (int w = 0; w < P && !run->fast; w++) {
        const double end_s = run->w[w].end_s - run->job.start_s;
        if (run->w[w].end_s > 0 && end_s < res->sim_time_s)
            res->wait_s += (res->sim_time_s - end_s) / P;
    }
    const CostModel *cm = run->cost;
    const int scheduled = cm && cm->sched;
    res->overlap = cm && cm->ddp                                     ? "ddp"
                   : scheduled && run->cfg->overlap == OVERLAP_LAYER ? "layer"
                   : scheduled                                       ? "ddp"
                   : run->cfg->overlap == OVERLAP_TENSOR && cm       ? "tensor"
                                                                     : "none";
    res->scheduled = scheduled;
    res->workload = run->cfg->workload ? run->cfg->workload->name : NULL;
    res->workload_params = run->cfg->workload ? run->cfg->workload->n_params : 0;
    res->buckets = !cm || !cm->ddp    ? 0
                   : cm->plan.horovod ? cm->plan.n_buckets /* Horovod's calls (step_plan_hvd.c) */
                                      : cm->n_buckets;
    const Model *m = run->w[0].model;
    /* a shared replica measured its workers' decoded means as it went (shared_update) */
    for (int w = 1; w < P && !run->fast && !run->shared.replica; w++)
        for (size_t i = 0; i < m->n_params; i++) {
            double d = fabs((double)run->w[w].model->params[i] - m->params[i]);
            if (!(d <= res->replica_max_diff)) res->replica_max_diff = d;
        }
}

/* The final model, for cfg->params_out: rank 0's replica, or in periodic mode the mean of the
 * replicas, as evaluated. */
static void run_params_out(const DriverRun *run)
{
    const RunConfig *cfg = run->cfg;
    const Model *m = run->w[0].model;
    assert(!run->fast);
    if (!run->periodic) {
        memcpy(cfg->params_out, m->params, sizeof(float) * m->n_params);
        return;
    }
    for (size_t i = 0; i < m->n_params; i++) {
        double s = 0;
        for (int w = 0; w < run->P; w++) s += run->w[w].model->params[i];
        cfg->params_out[i] = (float)(s / run->P);
    }
}

/* Whether rank 0's parameters are all finite (a replay's stand-in model trains nothing). */
static int params_finite(const DriverRun *run)
{
    if (run->cfg->replay) return 1;
    const Model *m = run->w[0].model;
    for (size_t i = 0; i < m->n_params; i++)
        if (!isfinite(m->params[i])) return 0;
    return 1;
}

/* A replay that went to the end of a trace whose run stopped early (its last record's
 * "stopped") ends as that run did: a diverged run replayed is a diverged run. */
static void replay_stopped_as_recorded(DriverRun *run)
{
    const Trace *tr = run->cfg->replay;
    if (!tr || run->stop == STOP_DIVERGED || run->stop == STOP_TARGET) return;
    const TraceStep *last = &tr->steps[tr->n_steps - 1];
    if (strcmp(last->stopped, "diverged") == 0) {
        run->stop = STOP_DIVERGED;
        snprintf(run->res->message, sizeof run->res->message,
                 "the recorded run diverged at step %ld (the trace's last record)", last->step);
    } else if (strcmp(last->stopped, "reached_target") == 0) {
        run->stop = STOP_TARGET;
    }
}

/* A run that did not reach its end, or whose result is past what bellows promises, is a
 * failure, never a completed run: SimGrid stalled (it reports a deadlock and returns with
 * actors left: an activity at a rate its solver takes for none), no step was taken, or the
 * simulated time is not finite or past CLUSTER_MAX_SIM_S (the estimate checks the scenario
 * before it runs; this checks the run as priced: profiles, --price-batch, stragglers). */
static int check_run_end(const DriverRun *run, BwError *err)
{
    const RunResult *res = run->res;
    if (!run->fast && run->job.actors_ended < run->P)
        return bw_fail(err, BW_ERUNTIME,
                       "the simulation stalled at %.6g simulated s: %d of %d workers never "
                       "finished (SimGrid found activities that will never complete; a rate "
                       "too small for its solver?); no results",
                       run_now(run), run->P - run->job.actors_ended, run->P);
    if (res->n_steps == 0)
        return bw_fail(err, BW_ERUNTIME, "the run ended without taking a step; no results");
    if (!(res->sim_time_s >= 0 && res->sim_time_s <= CLUSTER_MAX_SIM_S))
        return bw_fail(err, BW_EUSAGE,
                       "the run simulated %.3g s over %ld steps, more than the %.0e s bellows "
                       "simulates with representable times (as priced: the cost profile, "
                       "--price-batch, --slowdown and the platform included); shorten the run "
                       "or check the rates that price it; no results",
                       res->sim_time_s, res->n_steps, CLUSTER_MAX_SIM_S);
    return BW_OK;
}

int run_finish(DriverRun *run, BwError *err)
{
    RunResult *res = run->res;
    if (run->stop == STOP_ERROR) {
        *err = run->err;
        return run->err_status;
    }
    if (!run->fast && run->job.actors_ended < run->P) return check_run_end(run, err);
    /* the trace and the timeline are written beside the results: a failure there (a full
     * disk) leaves the results standing, and the caller reports it once they are written */
    BwError trace_err = {{0}}, tl_err = {{0}};
    record_trace_close(run, &trace_err);
    if (run->tl) timeline_close(run->tl, &tl_err);
    run->tl = NULL;
    snprintf(res->output_error, sizeof res->output_error, "%s",
             trace_err.msg[0] ? trace_err.msg : tl_err.msg);
    replay_stopped_as_recorded(run);
    if (run->stop != STOP_DIVERGED && !params_finite(run)) {
        run->stop = STOP_DIVERGED;
        snprintf(res->message, sizeof res->message,
                 "training diverged: the final parameters are not finite; try a smaller --lr");
    }
    res->status = run->stop == STOP_DIVERGED ? "diverged"
                  : run->stop == STOP_TARGET ? "reached_target"
                                             : "completed";
    res->epochs_done = run->cur.epoch;
    record_step_variance(run); /* the last averaging had no next step to report it */
    islands_step_done(run);
    run_totals(run);
    outer_check_exchanged(run, res);
    sched_record(run);
    /* the books add up to the simulated time on every path (compute, compression, exposed
     * communication, waiting: each worker's, its tail to the run's end as waiting): a run whose
     * figures would not is a bug of bellows, stopped here in every test that runs one */
    const double books = res->compute_s + res->compression_s + res->communication_s + res->wait_s;
    assert(fabs(books - res->sim_time_s) <= 1e-9 * res->sim_time_s + 1e-12);
    (void)books;
    int rc = check_run_end(run, err);
    if (rc) { /* no results: the trace and the timeline written above go too */
        if (run->cfg->record_trace) unlink(run->cfg->record_trace);
        if (run->cfg->timeline) unlink(run->cfg->timeline);
        return rc;
    }
    if (run->cfg->params_out) run_params_out(run);
    return BW_OK;
}

void run_result_init(const RunConfig *cfg, RunResult *res)
{
    memset(res, 0, sizeof *res);
    res->time_to_accuracy_s = NAN;
    res->best_accuracy = NAN;
    res->final_accuracy = NAN;
    snprintf(res->policy_spec, sizeof res->policy_spec, "%s", cfg->policy);
    snprintf(res->compressor_spec, sizeof res->compressor_spec, "%s", cfg->compressor);
    /* what a scheduled run resolves (sched_free) replaces it */
    snprintf(res->schedule, sizeof res->schedule, "%s", cfg->schedule ? cfg->schedule : "fifo");
}

int driver_run(const RunConfig *cfg, RunResult *res, BwError *err)
{
    int rc = driver_check(cfg, err);
    if (rc) return rc;
    run_result_init(cfg, res);
    DriverRun *run = NULL;
    rc = run_create(cfg, NULL, res, &run, err);
    if (rc == BW_OK) {
        run_simulate(run);
        rc = run_finish(run, err);
    }
    run_free(run);
    char what[600];
    if (rc == BW_OK && plugguard_forked(what, sizeof what))
        rc = bw_fail(err, BW_ERUNTIME,
                     "%s, called fork(): a plug-in may not start a copy of bellows (its child was "
                     "ended at once); no results",
                     what);
    return rc;
}

void driver_result_free(RunResult *res)
{
    free(res->evals);
    free(res->steps);
    free(res->epoch_norm);
    free(res->epoch_last_step);
    free(res->epoch_index);
    res->epoch_index = NULL;
    res->epoch_norm = NULL;
    res->epoch_last_step = NULL;
    res->evals = NULL;
    res->steps = NULL;
}
