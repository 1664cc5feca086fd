/* driver_check.c: what driver_check finds wrong with a run before it starts (its flags
 * together, the memory it needs, whether a replayed trace holds what the policy reads, the
 * policy's first decision and the cost profile against what the run does), and the context a
 * policy starts from (run_policy_context), which the check and a run's creation share. */
#include "driver_impl.h"
#include "xalloc.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int check_level(const void *arg, double level, const char *what, BwError *err)
{
    return compress_check_level(arg, level, what, err);
}

/* What the policy is told of the run when it starts. */
/* The cluster as a policy's rank sees it (bellows_policy.h): the NIC's bandwidth, less a
 * fat-tree's oversubscription of the leaf uplinks, and its latency. Unknown (0) for a platform
 * file before it is loaded. */
static void policy_cluster(PolicyContext *ctx, const Cluster *c)
{
    if (!c) return;
    ctx->bandwidth_Bps = c->bandwidth_Bps;
    if (c->topology == TOPO_FAT_TREE && c->oversubscription > 1)
        ctx->bandwidth_Bps /= c->oversubscription;
    ctx->latency_s = c->latency_s;
    ctx->gpus_per_node = c->gpus_per_node;
    ctx->nodes = c->workers / c->gpus_per_node;
}

/* What a policy knows of the run when it starts. cluster: as loaded, or NULL if not known.
 * layers: room for m's n_layers entries, which ctx->layers points at. */
void run_policy_context(PolicyContext *ctx, const RunConfig *cfg, const Cluster *cluster,
                        const Model *m, int shard, PolicyLayer *layers)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->n_layers = m->n_layers;
    ctx->layers = layers;
    for (int l = 0; l < m->n_layers; l++) {
        snprintf(layers[l].name, sizeof layers[l].name, "%s", m->layers[l].name);
        layers[l].rows = m->layers[l].rows;
        layers[l].cols = m->layers[l].cols;
        layers[l].ndim = m->layers[l].ndim;
    }
    int P = cfg->cluster.workers;
    ctx->workers = P;
    ctx->epochs = cfg->tc.epochs;
    ctx->batch = cfg->tc.batch * P;
    ctx->steps_per_epoch = shard / cfg->tc.batch;
    ctx->lr0 = cfg->tc.lr.base_lr;
    if (cfg->tc.lr.kind == LR_STEP)
        for (int i = 0; i < cfg->tc.lr.n_milestones && i < POLICY_MAX_DECAYS; i++)
            ctx->decay_epochs[ctx->n_decays++] = (int)ceil(cfg->tc.lr.milestones[i]);
    const LrSchedule *lr = &cfg->tc.lr;
    ctx->overlap = cfg->overlap == OVERLAP_DDP      ? BELLOWS_OVERLAP_DDP
                   : cfg->overlap == OVERLAP_TENSOR ? BELLOWS_OVERLAP_TENSOR
                   : cfg->overlap == OVERLAP_LAYER  ? BELLOWS_OVERLAP_LAYER
                                                    : BELLOWS_OVERLAP_NONE;
    ctx->lr_known = !cfg->replay || cfg->priced;
    if (ctx->lr_known) {
        ctx->lr_peak_scale = lr->peak_scale > 0 ? lr->peak_scale : 1;
        ctx->warmup_epochs = lr->warmup_epochs;
        ctx->warmup_shape =
            lr->warmup_shape == WARMUP_EPOCH ? BELLOWS_WARMUP_EPOCH : BELLOWS_WARMUP_STEP;
        ctx->decay_factor = lr->kind == LR_STEP ? lr->decay_factor : 0;
    }
    Spec s;
    BwError ignore;
    /* a bad spec leaves it empty: compress_create says what is wrong */
    compress_spec_resolved(cfg->compressor, "--compressor", ctx->compressor_spec,
                           sizeof ctx->compressor_spec, &ignore);
    if (spec_parse(cfg->compressor, "--compressor", &s, &ignore) == BW_OK) {
        snprintf(ctx->compressor, sizeof ctx->compressor, "%s", s.name);
        const CompressorOps *ops = compress_find(s.name);
        ctx->compressor_level = ops ? ops->level_default : 0;
        if (ops) {
            ctx->check_level = check_level;
            ctx->check_level_arg = ops;
        }
    }
    policy_cluster(ctx, cluster);
}

/* --topology islands: which --allreduce runs on it (islands.c): hierarchical over the islands
 * (the default) or a flat ring crossing the WAN (--allreduce ring). */
static int check_islands(const RunConfig *cfg, BwError *err)
{
    if (cfg->cluster.topology != TOPO_ISLANDS || cfg->algo == COLL_RING) return BW_OK;
    if (cfg->algo == COLL_PS)
        return bw_fail(err, BW_EUSAGE,
                       "--allreduce ps: not with --topology islands (where its servers would sit "
                       "among the islands is not modelled; use ring or hierarchical)");
    return bw_fail(err, BW_EUSAGE,
                   "--allreduce %s: not with --topology islands yet (several of its flows "
                   "share an island's WAN link at once, which its closed form does not price; use "
                   "hierarchical, the "
                   "default, or ring, a flat ring crossing the WAN)",
                   coll_algo_name(cfg->algo));
}

/* The checks that need no model: worker count, batch, slowdowns, the replay engine asked for. */
static int check_config(const RunConfig *cfg, int shard, BwError *err)
{
    const int P = cfg->cluster.workers;
    if (P > DRIVER_MAX_WORKERS)
        return bw_fail(err, BW_EUSAGE, "--workers: at most %d", DRIVER_MAX_WORKERS);
    if (!cfg->replay && shard < 1)
        return bw_fail(err, BW_EUSAGE,
                       "--train-samples: %d training samples leave nothing for each of the %d "
                       "workers; give at least %d (workers x --batch)",
                       cfg->train->n, P, P * cfg->tc.batch);
    if (!cfg->replay && cfg->tc.batch > shard)
        return bw_fail(err, BW_EUSAGE,
                       "--batch: %d per worker, but each of the %d workers has a shard of only %d "
                       "of the %d training samples (--train-samples)",
                       cfg->tc.batch, P, shard, cfg->train->n);
    if (cfg->slowdown)
        for (int w = 0; w < P; w++) assert(cfg->slowdown[w] > 0);
    if (cfg->sharding == SHARD_HYBRID && driver_costed(cfg) && cfg->cluster.platform_file)
        return bw_fail(err, BW_EUSAGE,
                       "--sharding hybrid: its nodes are a generated cluster's (--topology "
                       "hierarchical --gpus-per-node G), not a --platform file's; use zero3");
    char why[160];
    if (cfg->replay && cfg->replay_engine == REPLAY_FAST &&
        !driver_replay_fast(cfg, why, sizeof why))
        return bw_fail(err, BW_EUSAGE, "--replay-engine fast: %s; use auto or actors", why);
    return BW_OK;
}

/* Whether cfg's policy runs in periodic mode (each worker its own replica); no policy, or one
 * that cannot be created, counts as periodic, the larger estimate (driver_check says what is
 * wrong). */
static int memory_periodic(const RunConfig *cfg, const Model *m)
{
    PolicyContext ctx;
    PolicyLayer *layers =
        bw_xmalloc(sizeof *layers * (size_t)m->n_layers, "driver_check.c: layers");
    Policy *p = NULL;
    BwError ignore;
    int periodic = 1;
    if (!layers || !cfg->policy) { /* no policy yet: the larger estimate */
        free(layers);
        return periodic;
    }
    run_policy_context(&ctx, cfg, NULL, m, run_shard_of(cfg), layers);
    /* a --compressor that does not parse leaves the context without one: driver_check says so */
    if (ctx.compressor[0] && policy_create(cfg->policy, "--policy", &ctx, &p, &ignore) == BW_OK)
        periodic = p->ops->mode == POLICY_PERIODIC;
    policy_free(p);
    free(layers);
    return periodic;
}

/* Memory, fitted to measurements (maximum resident set, /usr/bin/time -v, mlp of 101,770
 * parameters, batch 4, analytic collectives; tests/perf/run_memory.sh): before the workers
 * shared their replica, 174 MiB with 64 workers and 587 MiB with 256, so 2.15 MiB per worker =
 * 22 bytes per parameter (replica, gradient, velocity, compressor memory and buffers), which
 * periodic mode still keeps (less the activations, now per computing thread); in gradient
 * mode 2.44 GiB with 4096 workers, 0.6 MiB per worker: its gradient and the compressor's
 * error-feedback memory (8 bytes per parameter with compression, fewer without) and about
 * 64 KiB of its own (actor, stack, buffers). Over about 40 MiB for the process and the data,
 * the shared replica and each computing thread's activations (bounded by batch x flops / 16
 * bytes for these models). A fast replay holds one worker. */
static double memory_need(const RunConfig *cfg, const Model *m)
{
    const int P = driver_replay_fast(cfg, NULL, 0) ? 1 : cfg->cluster.workers;
    const double per_param = memory_periodic(cfg, m) || cfg->per_worker_replicas ? 22.0 : 8.0;
    const int threads = cfg->compute_threads > 1 ? cfg->compute_threads : 1;
    const double activations = cfg->replay ? 0 : (double)cfg->tc.batch * model_flops_per_sample(m);
    return 40.0 * (1 << 20) + 22.0 * (double)m->n_params + threads * activations / 16.0 +
           (double)P * (per_param * (double)m->n_params + 64.0 * 1024);
}

double driver_memory_bytes(const RunConfig *cfg, double *machine)
{
    Model *m = NULL;
    BwError ignore;
    *machine = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGE_SIZE);
    if (run_model_create(cfg, &m, &ignore)) return 0;
    double need = memory_need(cfg, m);
    model_free(m);
    return need;
}

int driver_replay_exact(const RunConfig *cfg)
{
    Model *m = NULL;
    BwError ignore;
    if (!cfg->policy || run_model_create(cfg, &m, &ignore)) return 1; /* driver_check says */
    PolicyContext ctx;
    PolicyLayer *layers =
        bw_xmalloc(sizeof *layers * (size_t)m->n_layers, "driver_check.c: layers");
    Policy *p = NULL;
    PolicyOuter o;
    int exact = 1;
    if (layers) {
        run_policy_context(&ctx, cfg, NULL, m, run_shard_of(cfg), layers);
        if (ctx.compressor[0] &&
            policy_create(cfg->policy, "--policy", &ctx, &p, &ignore) == BW_OK &&
            policy_outer(p, &o)) /* the actors' replay prices the overlap (outer_lane.c) */
            exact = (o.tau == 0 && !o.eager) || !driver_replay_fast(cfg, NULL, 0);
    }
    policy_free(p);
    free(layers);
    model_free(m);
    return exact;
}

DriverPolicyKind driver_policy_kind(const RunConfig *cfg, BwError *err, int *rc)
{
    Model *m = NULL;
    DriverPolicyKind kind = DRIVER_POLICY_GRADIENT;
    /* what driver_check says first (a shard too small for the policy's context) */
    if ((*rc = check_config(cfg, run_shard_of(cfg), err))) return kind;
    if ((*rc = run_model_create(cfg, &m, err))) return kind;
    PolicyContext ctx;
    PolicyLayer *layers = bw_xcalloc((size_t)m->n_layers, sizeof *layers, "a policy's layers");
    Policy *p = NULL;
    PolicyOuter o;
    run_policy_context(&ctx, cfg, NULL, m, run_shard_of(cfg), layers);
    /* a --compressor that does not parse leaves the context without one: driver_check says so */
    *rc = ctx.compressor[0] ? policy_create(cfg->policy, "--policy", &ctx, &p, err) : BW_OK;
    if (*rc == BW_ERUNTIME) *rc = BW_EUSAGE; /* a plugin's failure before the run starts */
    if (!*rc && p && policy_outer(p, &o))
        kind = o.eager ? DRIVER_POLICY_EAGER_OUTER : DRIVER_POLICY_OUTER;
    else if (!*rc && p && p->ops->mode == POLICY_PERIODIC)
        kind = DRIVER_POLICY_PERIODIC;
    policy_free(p);
    free(layers);
    model_free(m);
    return kind;
}

static int check_memory(const RunConfig *cfg, const Model *m, BwError *err)
{
    const int P = cfg->cluster.workers;
    double need = memory_need(cfg, m);
    double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGE_SIZE);
    if (phys > 0 && need > 0.8 * phys)
        return bw_fail(err, BW_EUSAGE,
                       "--workers %d: the %d replicas of this %zu-parameter model need about "
                       "%.1f GiB, more than 80%% of this machine's %.1f GiB; use fewer workers or "
                       "a smaller model",
                       P, P, m->n_params, need / (1 << 30), phys / (1 << 30));
    return BW_OK;
}

/* A replay refuses a policy that needs a part of the observation the trace never holds (its
 * decisions would rest on stand-ins: ADPSGD without the variance grows its period forever).
 * A priced twin's trace is its own live run's record: what it lacks, the live run's policy
 * never saw either (a run too short for ADPSGD to average), so the twin sees what it saw. */
static int check_trace_holds(const RunConfig *cfg, const PolicyOps *ops, BwError *err)
{
    static const struct {
        unsigned bit;
        const char *field;
    } parts[] = {{BELLOWS_HAS_EPOCH_NORMS, "epoch_norms"},
                 {BELLOWS_HAS_VARIANCE, "param_variance"}};
    const Trace *tr = cfg->replay;
    if (!tr || !ops->needs || cfg->priced) return BW_OK;
    unsigned have = 0;
    for (long i = 0; i < tr->n_steps; i++)
        have |= (tr->steps[i].has_epoch_norms ? BELLOWS_HAS_EPOCH_NORMS : 0u) |
                (tr->steps[i].has_variance ? BELLOWS_HAS_VARIANCE : 0u);
    for (size_t k = 0; k < sizeof parts / sizeof *parts; k++)
        if ((ops->needs & parts[k].bit) && !(have & parts[k].bit))
            return bw_fail(err, BW_EUSAGE,
                           "--policy %s: it needs \"%s\", which the trace %s does not hold; "
                           "record a trace that has it or replay other policies",
                           ops->name, parts[k].field, tr->path);
    return BW_OK;
}

/* A schedule orders each step's gradient collectives around the backward (sched_*.c). A periodic
 * or outer policy (cpsgd, diloco, ...) sends no gradient: each worker steps on its own replica
 * and the averaging (or the outer exchange) is one dense call of the parameters after the
 * optimiser, with no compute of the step left to overlap, so a schedule has nothing to order.
 * Refused, never dropped (issue 47: it used to price the run as without --schedule). */
static int check_schedule_mode(const RunConfig *cfg, const PolicyOps *ops, BwError *err)
{
    if (ops->mode != POLICY_PERIODIC) return BW_OK;
    if (cfg->overlap == OVERLAP_LAYER && (!cfg->schedule || schedule_spec_is_fifo(cfg->schedule)))
        return bw_fail(err, BW_EUSAGE,
                       "--overlap layer: applies each layer's update once its gradients are "
                       "reduced; --policy %s sends no gradient (periodic or outer: each worker "
                       "steps alone, then one dense exchange after the optimiser): use --overlap "
                       "none, or a gradient policy",
                       cfg->policy);
    if (!cfg->schedule || schedule_spec_is_fifo(cfg->schedule)) return BW_OK;
    return bw_fail(err, BW_EUSAGE,
                   "--schedule %s: orders a step's gradient collectives around its backward; "
                   "--policy %s averages parameters (periodic or outer: each worker steps alone, "
                   "then one dense exchange after the optimiser), which no schedule reorders; "
                   "drop --schedule or use a gradient policy (sync, accordion, ...)",
                   cfg->schedule, cfg->policy);
}

/* --sharding with a gradient policy (issue 50): the sharded step reduce-scatters the dense
 * gradients (step_plan.c); a policy that may compress them (any but sync) is not priced with
 * sharding yet. Periodic and outer policies are the compatibility table's (compat.def). */
static int check_sharding_policy(const RunConfig *cfg, const PolicyOps *ops, BwError *err)
{
    const char *pol = cfg->policy ? cfg->policy : "sync";
    if (cfg->sharding == SHARD_NONE || ops->mode == POLICY_PERIODIC ||
        (strncmp(pol, "sync", 4) == 0 && (!pol[4] || pol[4] == ':')))
        return BW_OK;
    return bw_fail(err, BW_EUSAGE,
                   "--sharding: the sharded step reduce-scatters dense gradients; --policy %s may "
                   "compress them, which is not priced with sharding yet (issue 50); use --policy "
                   "sync",
                   pol);
}

/* The compressor and the policy are created as the run would, and the policy's first decision,
 * on an empty observation, must already be valid. */
static int check_first_decision(const RunConfig *cfg, const Model *m, int shard, BwError *err)
{
    Policy *p = NULL;
    Compressor *c = NULL;
    PolicyContext ctx;
    PolicyLayer *layers =
        bw_xmalloc(sizeof *layers * (size_t)m->n_layers, "driver_check.c: layers");
    double *zeros = bw_xcalloc((size_t)m->n_layers, sizeof *zeros,
                               "driver_check.c: zeros"); /* the norms observed */
    double *level = bw_xmalloc(sizeof *level * (size_t)m->n_layers, "driver_check.c: level");
    if (!layers || !zeros || !level) {
        free(layers);
        free(zeros);
        free(level);
        return bw_fail(err, BW_ERUNTIME, "out of memory for %d layers", m->n_layers);
    }
    run_policy_context(&ctx, cfg, cfg->cluster.platform_file ? NULL : &cfg->cluster, m, shard,
                       layers);
    int rc = compress_create(cfg->compressor, "--compressor", m->layers, m->n_layers,
                             cfg->cluster.workers, 0, cfg->tc.seed, &c, err);
    if (rc == BW_OK) rc = policy_create(cfg->policy, "--policy", &ctx, &p, err);
    if (rc == BW_OK) rc = check_trace_holds(cfg, p->ops, err);
    if (rc == BW_OK) rc = check_schedule_mode(cfg, p->ops, err);
    if (rc == BW_OK) rc = check_sharding_policy(cfg, p->ops, err);
    if (rc == BW_OK) rc = outer_eager_check(cfg, p, err); /* outer_eager.c */
    if (rc == BW_OK) {
        PolicyObs obs = {.epoch_start = 1,
                         .lr = cfg->tc.lr.base_lr,
                         .loss = 1,
                         .grad_norm_rank0 = zeros,
                         .grad_norm_mean = zeros};
        PolicyDecision d = {.level = level}; /* policy_step resets it and sets its batch */
        rc = policy_step(p, &obs, &d, err);
        if (rc == BW_ERUNTIME) rc = BW_EUSAGE; /* a plugin's failure before the run starts */
        if (rc == BW_OK)
            rc = rendezvous_check_decision(cfg, m, compress_find(ctx.compressor), &d,
                                           p->ops->mode == POLICY_PERIODIC, err);
    }
    policy_free(p);
    compress_free(c);
    free(layers);
    free(zeros);
    free(level);
    return rc;
}

int driver_check(const RunConfig *cfg, BwError *err)
{
    int shard = run_shard_of(cfg);
    int rc = check_config(cfg, shard, err);
    if (!rc) rc = check_islands(cfg, err); /* the CLI's table (compat.def) refuses these first */
    if (rc) return rc;
    Model *m = NULL;
    if ((rc = run_model_create(cfg, &m, err))) return rc;
    if ((rc = check_memory(cfg, m, err)) == BW_OK) rc = check_first_decision(cfg, m, shard, err);
    if (rc == BW_OK && cfg->costs) { /* the profile prices what this run will do */
        char who[320];
        snprintf(who, sizeof who, "--compressor %s (or the optimiser)", cfg->compressor);
        rc = costs_check(cfg->costs,
                         compress_cost_ops(cfg->compressor) | COST_OP_BIT(COST_OP_OPTIMIZER),
                         cfg->transport, who, "--costs", err);
        if (rc == BW_OK && !cfg->cluster.platform_file) /* a platform's links: at its end */
            rc = costs_check_links(
                cfg->costs, cfg->transport, cfg->cluster.bandwidth_Bps,
                cfg->cluster.topology == TOPO_HIERARCHICAL ? cfg->cluster.intra_bandwidth_Bps : 0,
                "--costs", err);
    }
    if (rc == BW_OK) rc = estimate_check_sim_time(cfg, m, shard, err); /* at the profile's rates */
    if (rc == BW_OK) rc = sched_check(cfg, m, err);
    if (rc == BW_OK) rc = driver_check_shard_memory(cfg, err); /* shard_mem.c */
    if (rc == BW_OK) rc = zeropp_check(cfg, err);              /* zeropp.c */
    const Workload *wl = cfg->workload;
    if (rc == BW_OK && wl && wl->measured_gpu[0] && !cluster_gpu_find(wl->measured_gpu))
        rc = bw_fail(err, BW_EUSAGE,
                     "--workload %s: measured on \"%s\", not a GPU bellows knows "
                     "(V100, A100, H100, H200)",
                     wl->spec, wl->measured_gpu);
    if (rc == BW_OK && cfg->workload) { /* the real tensors must map onto the small layers */
        int *follows =
            bw_xmalloc(sizeof(int) * (size_t)cfg->workload->n_tensors, "driver_check.c: follows");
        rc = follows
                 ? workload_map(cfg->workload, m->layers, m->n_layers, "--workload", follows, err)
                 : bw_fail(err, BW_ERUNTIME, "out of memory");
        free(follows);
    }
    model_free(m);
    return rc;
}
