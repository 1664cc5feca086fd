/* results.c: writers for a run's summary.json, evals.csv and steps.csv (see results.h).
 * Every figure that is simulated says so in its name (_s: simulated seconds), wall_s is the
 * only wall-clock figure. Bytes: summary.json's bytes_per_worker is the mean over workers;
 * evals.csv's and steps.csv's running total bytes_rank0 is rank 0's (equal to the mean for a
 * ring allreduce; other algorithms may load the ranks unequally). A run on islands
 * (--topology islands) adds a last column to both, wan_bytes: the running total of
 * summary.json's wan_bytes, every rank's bytes between two islands, which its plots draw. */
#include "results.h"
#include "results_impl.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

#include "blas_cpu.h"
#include "policy.h"
#include "outfile.h"
#include "units.h"

/* Every model option marked for the summary, by its name: the run's value, or the default the
 * flag had when the run's model does not have the option. */
static void write_model_options(JsonW *w, const RunConfig *cfg)
{
    const ModelOption *o;
    for (int k = 0; (o = model_registry_option(k)); k++) {
        ModelInts v;
        if (!o->summary) continue;
        if (!model_config_get(&cfg->mc, cfg->model, o->name, &v)) v = model_option_default(o);
        jsonw_array(w, o->name);
        for (int i = 0; i < v.n; i++) jsonw_long(w, NULL, v.v[i]);
        jsonw_end_array(w);
    }
}

/* summary.json's scenario: the model, the data (or the trace) and the optimiser. */
static void summary_training(JsonW *w, const RunConfig *cfg, const RunMeta *meta,
                             const RunResult *res)
{
    jsonw_string(w, "model", meta->model);
    jsonw_long(w, "n_params", (long long)res->n_params);
    jsonw_double(w, "flops_per_sample", res->flops_per_sample);
    if (cfg->replay && !cfg->priced) { /* a priced run is the live run: its data's */
        jsonw_string(w, "trace_source", cfg->replay->h.source);
        jsonw_string(w, "dataset", cfg->replay->h.dataset);
        jsonw_long(w, "trace_steps", cfg->replay->n_steps);
    } else {
        jsonw_string(w, "dataset", "fashion-mnist");
        jsonw_long(w, "train_samples", cfg->train->n);
        jsonw_long(w, "test_samples", cfg->test->n);
    }
    jsonw_long(w, "epochs", cfg->tc.epochs);
    jsonw_long(w, "batch_per_worker", cfg->tc.batch);
    jsonw_long(w, "global_batch", (long long)cfg->tc.batch * res->cluster.workers);
    jsonw_double(w, "lr", cfg->tc.lr.base_lr);
    jsonw_string(w, "lr_schedule", lr_kind_name(cfg->tc.lr.kind));
    jsonw_double(w, "momentum", cfg->tc.sgd.momentum);
    if (cfg->tc.sgd.kind != OPT_SGD) /* only when asked: SGD runs' files stay as they were */
        jsonw_string(w, "optimizer", opt_kind_name(cfg->tc.sgd.kind));
    /* in effect: a periodic policy and a momentum (--average-momentum is ignored otherwise) */
    jsonw_bool(w, "average_momentum",
               res->policy_mode == POLICY_PERIODIC && driver_average_floats(cfg) == 2);
    jsonw_double(w, "weight_decay", cfg->tc.sgd.weight_decay);
    jsonw_long(w, "seed", (long long)cfg->tc.seed);
    jsonw_string(w, "blas_kernel", blas_cpu_kernel()); /* blas_cpu.h: pinned to one family */
    jsonw_long(w, "blas_threads", blas_cpu_threads());
}

/* A platform file's hosts and routes may differ: whose gpu_flops, bandwidth_bps and latency_s
 * the summary gives, and the spread where there is one. */
static void summary_platform_spread(JsonW *w, const Cluster *c)
{
    char of[512];
    snprintf(of, sizeof of, "rank 0's host (%s)", c->hosts[0]);
    jsonw_string(w, "gpu_flops_of", of);
    if (c->gpu_flops_min != c->gpu_flops_max) {
        jsonw_double(w, "gpu_flops_min", c->gpu_flops_min);
        jsonw_double(w, "gpu_flops_max", c->gpu_flops_max);
    }
    jsonw_string(w, "bandwidth_bps_of", "the narrowest route between ring neighbours");
    if (c->route_bandwidth_max_Bps != c->bandwidth_Bps)
        jsonw_double(w, "bandwidth_bps_max", c->route_bandwidth_max_Bps * 8);
    jsonw_string(w, "latency_s_of", "half the longest route latency between ring neighbours");
}

/* summary.json's scenario: the cluster as loaded, the collectives, the stragglers. */
static void summary_cluster(JsonW *w, const RunConfig *cfg, const RunMeta *meta, const Cluster *c)
{
    jsonw_long(w, "workers", c->workers);
    jsonw_long(w, "gpus_per_node", c->gpus_per_node);
    if (c->platform_file) {
        jsonw_string(w, "platform_file", c->platform_file);
        jsonw_array(w, "hosts");
        for (int i = 0; i < c->workers; i++) jsonw_string(w, NULL, c->hosts[i]);
        jsonw_end_array(w);
    } else {
        jsonw_string(w, "topology", cluster_topology_name(c->topology));
    }
    jsonw_string(w, "gpu", c->gpu ? c->gpu->name : "custom");
    jsonw_double(w, "gpu_flops", c->gpu_flops);
    if (c->gpu && !c->platform_file) { /* the sustained rate's fraction of the peak, and whose */
        char src[128];
        jsonw_double(w, "gpu_efficiency", c->efficiency);
        jsonw_string(w, "gpu_efficiency_source", cluster_efficiency_source(c, src, sizeof src));
    }
    jsonw_double(w, "bandwidth_bps", c->bandwidth_Bps * 8);
    jsonw_double(w, "latency_s", c->latency_s);
    if (c->platform_file) summary_platform_spread(w, c);
    if (c->topology == TOPO_HIERARCHICAL && !c->platform_file) {
        jsonw_double(w, "intra_bandwidth_bps", c->intra_bandwidth_Bps * 8);
        jsonw_double(w, "intra_latency_s", c->intra_latency_s);
    }
    if (c->topology == TOPO_FAT_TREE && !c->platform_file) {
        jsonw_long(w, "leaf_size", c->leaf_size);
        jsonw_double(w, "oversubscription", c->oversubscription);
    }
    if (c->topology == TOPO_ISLANDS) {
        jsonw_long(w, "islands", c->islands);
        jsonw_double(w, "wan_bandwidth_bps", c->wan_bandwidth_Bps * 8);
        jsonw_double(w, "wan_latency_s", c->wan_latency_s);
    }
    jsonw_string(w, "allreduce",
                 coll_algo_name(c->topology == TOPO_ISLANDS ? COLL_HIERARCHICAL : cfg->algo));
    if (coll_algo_servers(cfg->algo)) {
        jsonw_long(w, "servers", c->ps_servers);
        jsonw_string(w, "ps_hosts", c->ps_own_hosts ? "own" : "colocated");
    }
    jsonw_string(w, "collectives", meta->collectives);
    jsonw_string(w, "network_model", meta->network_model);
    jsonw_array(w, "simgrid_cfg"); /* the --cfg= options SimGrid was given, as given */
    for (int i = 0; i < cfg->n_simgrid_args; i++)
        if (strncmp(cfg->simgrid_args[i], "--cfg=", 6) == 0)
            jsonw_string(w, NULL, cfg->simgrid_args[i] + 6);
    jsonw_end_array(w);
    jsonw_double(w, "compute_jitter", cfg->jitter_sigma);
    if (cfg->straggler_cv > 0)
        jsonw_double(w, "straggler_cv", cfg->straggler_cv); /* files as before at 0 */
    jsonw_array(w, "slowdown");
    for (int i = 0; cfg->slowdown && i < c->workers; i++) jsonw_double(w, NULL, cfg->slowdown[i]);
    jsonw_end_array(w);
}

/* summary.json's scenario: evaluations, the lr schedule, the model's options, the target. */
static void summary_schedule(JsonW *w, const RunConfig *cfg)
{
    jsonw_long(w, "eval_every", cfg->eval_every);
    jsonw_bool(w, "stop_at_target", cfg->stop_at_target);
    jsonw_bool(w, "nesterov", cfg->tc.sgd.nesterov);
    jsonw_double(w, "lr_warmup_epochs", cfg->tc.lr.warmup_epochs);
    jsonw_string(w, "lr_warmup_shape", lr_warmup_shape_name(cfg->tc.lr.warmup_shape));
    jsonw_double(w, "lr_peak_scale", cfg->tc.lr.peak_scale > 0 ? cfg->tc.lr.peak_scale : 1.0);
    jsonw_array(w, "lr_decay_epochs");
    for (int i = 0; cfg->tc.lr.kind == LR_STEP && i < cfg->tc.lr.n_milestones; i++)
        jsonw_double(w, NULL, cfg->tc.lr.milestones[i]);
    jsonw_end_array(w);
    jsonw_double(w, "lr_decay_factor", cfg->tc.lr.decay_factor);
    write_model_options(w, cfg);
    jsonw_double(w, "target_accuracy", cfg->target_accuracy > 0 ? cfg->target_accuracy : NAN);
}

/* summary.json's scenario: what the steps are priced at (a workload profile's costs, or the
 * small model's own) and how the backward overlaps the collectives. */
void driver_cost_setting(const RunConfig *cfg, CostSetting *s)
{
    memset(s, 0, sizeof *s);
    if (cfg->workload) {
        const char *name = cfg->workload->name;
        snprintf(s->family, sizeof s->family, "%.*s", (int)strcspn(name, "-"), name);
    }
    const CostProfile *p = cfg->costs ? cfg->costs : costs_ideal();
    snprintf(s->framework, sizeof s->framework, "%s", costs_framework(p));
    s->transport = cfg->transport;
    const CostNetShare *net = &p->net[cfg->transport];
    s->sockets = !p->ideal && net->cap_Bps > 0 && net->threads > 0 ? net->threads * net->socks : 1;
    s->gbps = cfg->cluster.bandwidth_Bps * 8 / 1e9;
    s->gpus_per_nic = cluster_gpus_per_nic(&cfg->cluster);
    if (cfg->cluster.gpu) snprintf(s->gpu, sizeof s->gpu, "%s", cfg->cluster.gpu->name);
    if (cfg->sharding != SHARD_NONE)
        snprintf(s->sharding, sizeof s->sharding, "%s", driver_sharding_name(cfg->sharding));
    zeropp_name(&cfg->zeropp, s->zeropp, sizeof s->zeropp);
}

static void summary_costs(JsonW *w, const RunConfig *cfg, const RunResult *res)
{
    jsonw_string(w, "workload", res->workload);
    if (res->workload) {
        jsonw_long(w, "workload_params", (long long)res->workload_params);
        jsonw_long(w, "price_batch", cfg->price_batch > 0 ? cfg->price_batch : cfg->tc.batch);
    }
    if (cfg->price_workers) /* --price-workers: the GPUs the collectives were priced at */
        jsonw_long(w, "price_workers", cfg->price_workers);
    jsonw_string(w, "overlap", res->overlap ? res->overlap : "none");
    jsonw_string(w, "schedule", res->schedule[0] ? res->schedule : "fifo");
    ShardMemory mem; /* --sharding given: its mode and memory per GPU (none: as before) */
    if (cfg->sharding != SHARD_NONE) {
        jsonw_string(w, "sharding", driver_sharding_name(cfg->sharding));
        if (driver_shard_memory(cfg, cfg->sharding, &mem)) {
            jsonw_double(w, "memory_per_gpu_bytes", mem.total);
            jsonw_double(w, "memory_gpu_bytes", mem.capacity);
        }
    }
    char zpp[48]; /* --zeropp given: its collectives and the bytes a node sends across a step */
    if (*zeropp_name(&cfg->zeropp, zpp, sizeof zpp)) {
        jsonw_string(w, "zeropp", zpp);
        jsonw_double(w, "cross_node_bytes_per_step", res->cross_node_bytes_per_step);
    }
    if (res->scheduled) {
        jsonw_string(w, "schedule_state", res->schedule_state);
        jsonw_double(w, "partitions_per_step", res->partitions_per_step);
    } else if (cfg->schedule && strcmp(res->schedule, "fifo") != 0) /* given, and not run */
        jsonw_string(w, "schedule_note", "periodic policies average parameters unscheduled");
    const CostHorovod *hvd = cfg->costs ? &cfg->costs->horovod : NULL;
    if (res->buckets && hvd && hvd->present) { /* Horovod's fused calls, not DDP's buckets */
        jsonw_string(w, "horovod_version", hvd->version);
        jsonw_double(w, "horovod_fusion_mb", hvd->fusion_bytes / (1024.0 * 1024.0));
        jsonw_double(w, "horovod_cycle_ms", 1e3 * hvd->cycle_s);
        jsonw_long(w, "horovod_calls", res->buckets);
    } else if (res->buckets) {
        jsonw_double(w, "bucket_mb",
                     (cfg->bucket_bytes > 0 ? cfg->bucket_bytes : DRIVER_BUCKET_BYTES) /
                         (1024.0 * 1024.0));
        jsonw_long(w, "ddp_buckets", res->buckets);
    }
    jsonw_bool(w, "free_compression", cfg->free_compression);
    const CostProfile *p = cfg->costs;
    jsonw_string(w, "costs", p ? p->name : "ideal");
    if (p && !p->ideal) {
        jsonw_string(w, "costs_spec", p->spec);
        jsonw_string(w, "costs_implementation", p->implementation);
        jsonw_string(w, "costs_source", p->source);
        if (p->software[0]) jsonw_string(w, "costs_software", p->software);
        if (p->device[0]) jsonw_string(w, "costs_measured_on", p->device);
        if (p->validation[0]) jsonw_string(w, "costs_validation", p->validation);
        /* issue 48's keys before the older ones, never an object's last */
        CostSetting here;
        char near[1024];
        driver_cost_setting(cfg, &here);
        costs_validation_near(&here, near, sizeof near);
        jsonw_string(w, "validation_near", near);
        const CostNetShare *net = &p->net[cfg->transport];
        if (net->cap_Bps > 0 && net->threads > 0) { /* NCCL's sockets: what the cap is of */
            char sockets[32];
            snprintf(sockets, sizeof sockets, "%dx%d", net->threads, net->socks);
            jsonw_string(w, "nccl_sockets", sockets);
        }
        jsonw_string(w, "transport", costs_net_name(cfg->transport));
        const double link = cfg->cluster.bandwidth_Bps;
        jsonw_double(w, "link_share", costs_link_share(p, cfg->transport, 0, link));
        jsonw_double(w, "allgather_link_share", costs_link_share(p, cfg->transport, 1, link));
        if (p->interference > 1) jsonw_double(w, "costs_interference", p->interference);
    }
}

/* summary.json after the scenario: where accuracy comes from and what the run gave. */
static void summary_outcome(JsonW *w, const RunConfig *cfg, const RunMeta *meta,
                            const RunResult *res)
{
    jsonw_string(w, "accuracy_source",
                 res->accuracy_from_trace == 2 ? "own trace"
                 : res->accuracy_from_trace    ? "trace"
                                               : "simulated training");
    if (res->replay_engine) { /* how the replay was simulated, and why not fast if it was not */
        jsonw_string(w, "replay_engine", res->replay_engine);
        if (res->replay_engine_why[0])
            jsonw_string(w, "replay_engine_fallback", res->replay_engine_why);
    }
    jsonw_double(w, "final_test_accuracy", res->final_accuracy);
    jsonw_double(w, "best_test_accuracy", res->best_accuracy);
    jsonw_double(w, "time_to_accuracy_s", res->time_to_accuracy_s);
    jsonw_double(w, "time_to_accuracy_resolution_s",
                 results_tta_resolution(res, meta->target_accuracy));
    jsonw_double(w, "sim_time_s", res->sim_time_s);
    jsonw_double(w, "bytes_per_worker", res->bytes_per_worker);
    jsonw_double(w, "payload_bytes_per_worker", res->payload_bytes_per_worker);
    jsonw_double(w, "compute_s", res->compute_s);
    jsonw_double(w, "compression_s", res->compression_s);
    jsonw_double(w, "communication_s", res->communication_s);
    jsonw_double(w, "wait_s", res->wait_s);
    jsonw_long(w, "steps", res->n_steps);
    jsonw_long(w, "epochs_done", res->epochs_done);
    jsonw_long(w, "averagings", res->averagings);
    if (res->cluster.topology == TOPO_ISLANDS) {
        jsonw_double(w, "wan_bytes", res->wan_bytes);
        jsonw_double(w, "wan_peak_step_bytes", res->wan_peak_step_bytes);
    }
    if (res->message[0]) jsonw_string(w, "message", res->message);
    if (res->never_exchanged[0]) jsonw_string(w, "never_exchanged", res->never_exchanged);
    results_band_keys(w, cfg, meta, res);
    jsonw_double(w, "wall_s", meta->wall_s);
}

static int write_summary(const char *dir, const RunConfig *cfg, const RunMeta *meta,
                         const RunResult *res, BwError *err)
{
    OutFile of;
    int rc = outfile_open(&of, dir, "summary.json", err);
    if (rc) return rc;
    JsonW w;
    jsonw_begin(&w, of.f);
    jsonw_object(&w, NULL);
    jsonw_string(&w, "command", meta->command);
    jsonw_string(&w, "status", res->status);
    jsonw_string(&w, "policy", res->policy_spec);
    jsonw_string(&w, "policy_mode", res->policy_mode == POLICY_PERIODIC ? "periodic" : "gradient");
    jsonw_string(&w, "compressor", res->compressor_spec);
    jsonw_object(&w, "scenario");
    summary_training(&w, cfg, meta, res);
    summary_cluster(&w, cfg, meta, &res->cluster);
    summary_schedule(&w, cfg);
    summary_costs(&w, cfg, res);
    jsonw_end_object(&w);
    summary_outcome(&w, cfg, meta, res);
    jsonw_end_object(&w);
    return outfile_commit(&of, err);
}

/* Policy states are short words without commas or quotes, but quote them anyway. */
static void csv_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static int write_evals(const char *dir, const RunResult *res, BwError *err)
{
    OutFile of;
    int rc = outfile_open(&of, dir, "evals.csv", err);
    if (rc) return rc;
    const int wan = res->cluster.topology == TOPO_ISLANDS;
    fputs("sim_time_s,epoch,step,train_loss,test_loss,test_accuracy,bytes_rank0,policy_state",
          of.f);
    fputs(wan ? ",wan_bytes\n" : "\n", of.f);
    for (int i = 0; i < res->n_evals; i++) {
        const EvalRow *e = &res->evals[i];
        fprintf(of.f, "%.9g,%d,%ld,%.9g,%.9g,%.9g,%.17g,", e->sim_time_s, e->epoch, e->step,
                e->train_loss, e->test_loss, e->test_accuracy, e->bytes_per_worker);
        csv_string(of.f, e->state);
        if (wan) fprintf(of.f, ",%.17g", e->wan_bytes);
        fputc('\n', of.f);
    }
    return outfile_commit(&of, err);
}

/* A column's last number and its text: steps.csv repeats most figures from row to row (the lr,
 * the compute, communication and waiting times, the levels), and formatting doubles was most of
 * the time of writing it. The same bits give the same text, so the file is unchanged. */
typedef struct {
    double x;
    int set;
    char text[40];
} NumText;

static const char *num_text(NumText *c, const char *fmt, double x)
{
    if (!c->set || memcmp(&c->x, &x, sizeof x) != 0) {
        snprintf(c->text, sizeof c->text, fmt, x);
        c->x = x;
        c->set = 1;
    }
    return c->text;
}

/* steps.csv; a scheduled run (RunResult.scheduled) adds the schedule's state of each step as a
 * column, `schedule`, and a run on islands the WAN bytes so far, `wan_bytes`, last (the files
 * of other runs keep the columns they had). */
static int write_steps(const char *dir, const RunResult *res, BwError *err)
{
    OutFile of;
    int rc = outfile_open(&of, dir, "steps.csv", err);
    if (rc) return rc;
    fputs("step,epoch,global_batch,lr,loss,end_s,compute_s,compression_s,communication_s,wait_s,"
          "bytes_rank0,averaged,param_variance,level_mean,period,policy_state",
          of.f);
    const int wan = res->cluster.topology == TOPO_ISLANDS;
    if (res->scheduled) fputs(",schedule", of.f);
    fputs(wan ? ",wan_bytes\n" : "\n", of.f);
    enum { LR, LOSS, COMPUTE, COMPRESS, COMM, WAIT, VARIANCE, LEVEL, N_CACHED };
    NumText c[N_CACHED];
    memset(c, 0, sizeof c);
    for (long i = 0; i < res->n_steps; i++) {
        const StepRow *r = &res->steps[i];
        fprintf(of.f, "%ld,%d,%d,%s,%s,%.9g,%s,%s,%s,%s,%.17g,%d,%s,%s,%d,", r->step, r->epoch,
                r->batch, num_text(&c[LR], "%.9g", r->lr), num_text(&c[LOSS], "%.9g", r->loss),
                r->end_s, num_text(&c[COMPUTE], "%.9g", r->compute_s),
                num_text(&c[COMPRESS], "%.9g", r->compress_s),
                num_text(&c[COMM], "%.9g", r->comm_s), num_text(&c[WAIT], "%.9g", r->wait_s),
                r->bytes, r->averaged, num_text(&c[VARIANCE], "%.9g", r->variance),
                num_text(&c[LEVEL], "%.6g", r->level_mean), r->period);
        csv_string(of.f, r->state);
        if (res->scheduled) {
            fputc(',', of.f);
            csv_string(of.f, r->schedule);
        }
        if (wan) fprintf(of.f, ",%.17g", r->wan_bytes);
        fputc('\n', of.f);
    }
    return outfile_commit(&of, err);
}

/* epochs.csv, for policies that read gradient norms: the signal Accordion decides on. */
static int write_epochs(const char *dir, const RunResult *res, BwError *err)
{
    OutFile of;
    int rc = outfile_open(&of, dir, "epochs.csv", err);
    if (rc) return rc;
    fputs("epoch,last_step,grad_norm,norm_change\n", of.f);
    for (int e = 0; e < res->n_epoch_norms; e++) {
        fprintf(of.f, "%d,%ld,%.9g,", res->epoch_index[e], res->epoch_last_step[e],
                res->epoch_norm[e]);
        if (e > 0 && res->epoch_norm[e - 1] > 0)
            fprintf(of.f, "%.9g",
                    fabs(res->epoch_norm[e - 1] - res->epoch_norm[e]) / res->epoch_norm[e - 1]);
        fputc('\n', of.f);
    }
    return outfile_commit(&of, err);
}

int results_write(const char *dir, const RunConfig *cfg, const RunMeta *meta, const RunResult *res,
                  BwError *err)
{
    int rc = write_evals(dir, res, err);
    if (!rc) rc = write_steps(dir, res, err);
    if (!rc && res->n_epoch_norms) rc = write_epochs(dir, res, err);
    if (!rc && !res->n_epoch_norms) { /* no stale signal from an earlier run in this folder */
        char path[4096];
        snprintf(path, sizeof path, "%s/epochs.csv", dir);
        unlink(path);
    }
    if (!rc) rc = write_summary(dir, cfg, meta, res, err); /* last: its presence means done */
    return rc;
}

static void fmt_bytes(double b, char *buf, size_t n)
{
    const char *u[] = {"B", "kB", "MB", "GB", "TB"};
    int i = 0;
    while (b >= 1000 && i < 4) {
        b /= 1000;
        i++;
    }
    snprintf(buf, n, "%.3g %s", b, u[i]);
}

double results_tta_resolution(const RunResult *res, double target)
{
    if (!isfinite(res->time_to_accuracy_s)) return NAN;
    for (int i = 1; i < res->n_evals; i++)
        if (res->evals[i].test_accuracy >= target)
            return res->evals[i].sim_time_s - res->evals[i - 1].sim_time_s;
    return 0; /* the untrained model's evaluation reached it */
}

/* "1 epoch", "2 epochs" */
static const char *plural(long n)
{
    return n == 1 ? "" : "s";
}

/* "time to 0.8500 ...": with its resolution, as evals describes the evaluations. */
static void print_tta(FILE *out, const RunConfig *cfg, const RunResult *res, const char *evals)
{
    if (isnan(res->time_to_accuracy_s)) {
        fprintf(out, "time to %.4f          not reached\n", cfg->target_accuracy);
        fprintf(out, "                       (%s)\n", evals);
        return;
    }
    double tta = res->time_to_accuracy_s, res_s = results_tta_resolution(res, cfg->target_accuracy);
    fprintf(out, "time to %.4f          %.4f simulated s, crossed in its last %.4f s (%.1f%%)\n",
            cfg->target_accuracy, tta, res_s, tta > 0 ? 100 * res_s / tta : 0.0);
    fprintf(out, "                       (%s%s)\n", evals,
            res_s > 0.02 * tta ? "; a smaller --eval-every sharpens it" : "");
}

void results_print(FILE *out, const RunConfig *cfg, const RunResult *res, const char *evals)
{
    char bytes[32], payload[32];
    fmt_bytes(res->bytes_per_worker, bytes, sizeof bytes);
    fmt_bytes(res->payload_bytes_per_worker, payload, sizeof payload);
    double t = res->sim_time_s > 0 ? res->sim_time_s : 1;
    fprintf(out, "status                 %s\n", res->status);
    fprintf(out, "final test accuracy    %.4f   (best %.4f)\n", res->final_accuracy,
            res->best_accuracy);
    if (cfg->target_accuracy > 0) print_tta(out, cfg, res, evals);
    fprintf(out, "simulated time         %.4f s over %ld step%s, %d epoch%s\n", res->sim_time_s,
            res->n_steps, plural(res->n_steps), res->epochs_done, plural(res->epochs_done));
    fprintf(out, "  compute              %.4f s (%.1f%%)\n", res->compute_s,
            100 * res->compute_s / t);
    if (res->compression_s > 0)
        fprintf(out, "  compression          %.4f s (%.1f%%)\n", res->compression_s,
                100 * res->compression_s / t);
    fprintf(out, "  communication        %.4f s (%.1f%%)\n", res->communication_s,
            100 * res->communication_s / t);
    fprintf(out, "  waiting              %.4f s (%.1f%%)\n", res->wait_s, 100 * res->wait_s / t);
    fprintf(out, "bytes per worker       %s on the wire (%s of encoded payload)\n", bytes, payload);
    if (res->policy_mode == POLICY_PERIODIC)
        fprintf(out, "parameter averagings   %ld\n", res->averagings);
}
