/* run_print.c: the commented header the simulating commands (run, compare, sweep) print
 * before they start: the scenario, the evaluations, the learning-rate scaling, what a step is
 * priced at, the replay engine and a rough estimate of the wall-clock time (see run_args.h). */
#include <stdio.h>
#include <string.h>

#include "cluster_args.h"
#include "compress.h"
#include "run_args.h"
#include "units.h"

void run_print_replay_engine(const RunConfig *cfg, long fast_points, long points)
{
    char why[160];
    if (points > 1 && fast_points > 0 && fast_points < points)
        printf("# replay engine: fast at %ld of %ld points, actors at the others (summary.json "
               "says why)\n",
               fast_points, points);
    else if (points > 1 ? fast_points == points : driver_replay_fast(cfg, why, sizeof why))
        printf("# replay engine: fast (identical workers, analytic collectives: no actors or "
               "payloads)\n");
    else if (points > 1)
        printf("# replay engine: actors (summary.json says why)\n");
    else
        printf("# replay engine: actors (%s)\n", why);
}

/* "seed 1" (run), or "seeds 1,2,3" (compare, sweep) */
static void seed_list(const Flags *f, const RunConfig *cfg, char *buf, size_t n)
{
    int seeds[CLI_LIST_MAX], k = 0;
    BwError err;
    if (f->mode == RUN_MODE_RUN || f->mode == RUN_MODE_SWEEP_RUN || run_seeds(f, seeds, &k, &err))
        k = 0;
    if (k <= 1) {
        snprintf(buf, n, "seed %lu", k ? (unsigned long)seeds[0] : cfg->tc.seed);
        return;
    }
    size_t used = (size_t)snprintf(buf, n, "seeds ");
    for (int i = 0; i < k && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%d", i ? "," : "", seeds[i]);
}

void run_describe_evals(const RunConfig *cfg, char *buf, size_t n)
{
    if (cfg->replay) { /* the trace's evaluations: their widest gap in steps */
        const Trace *t = cfg->replay;
        long gap = 0;
        for (long i = 1; i < t->n_evals; i++)
            gap = t->evals[i].step - t->evals[i - 1].step > gap
                      ? t->evals[i].step - t->evals[i - 1].step
                      : gap;
        snprintf(buf, n, "evaluation by the trace: %ld evaluations, at most %ld steps apart",
                 t->n_evals, gap);
        return;
    }
    long steps = cfg->train->n / cfg->cluster.workers / cfg->tc.batch;
    if (cfg->eval_every > 0)
        snprintf(buf, n, "evaluation every %d step%s (%.3g an epoch of %ld steps)%s",
                 cfg->eval_every, cfg->eval_every == 1 ? "" : "s", (double)steps / cfg->eval_every,
                 steps,
                 cfg->eval_sparse_after_target ? " until the target, then at epoch ends" : "");
    else
        snprintf(buf, n, "evaluation at the end of every epoch (%ld steps)", steps);
}

/* "# evaluation every 5 steps (23 an epoch); target accuracy 0.85": what the runs do. */
static void print_evaluations(const RunConfig *cfg)
{
    char evals[160];
    run_describe_evals(cfg, evals, sizeof evals);
    printf("# %s", evals);
    if (cfg->target_accuracy > 0)
        printf("; target accuracy %.4g\n", cfg->target_accuracy);
    else
        printf("; no target accuracy\n");
}

/* "# lr: ..." when the rate is scaled with the workers or the global batch. */
static void print_lr_scale(const RunConfig *cfg)
{
    const LrSchedule *lr = &cfg->tc.lr;
    if (!(lr->peak_scale > 1)) return;
    if (lr->scale_by_workers)
        printf("# lr: %g x %g workers = %g (--lr-scale workers)", lr->base_lr, lr->peak_scale,
               lr->base_lr * lr->peak_scale);
    else
        printf("# lr: %g x %g = %g, the linear scaling rule (Goyal et al. 2017): the global batch "
               "is %g times the %d --lr was tuned for (--lr-scale none keeps %g)",
               lr->base_lr, lr->peak_scale, lr->base_lr * lr->peak_scale, lr->peak_scale,
               RUN_TUNED_GLOBAL_BATCH, lr->base_lr);
    if (lr->warmup_epochs > 0) printf(", warmed up over %g epochs", lr->warmup_epochs);
    if (lr->warmup_epochs > cfg->tc.epochs)
        printf(" (more than the run's %d: the rate never reaches its peak)", cfg->tc.epochs);
    printf("\n");
}

/* NCCL's sockets, when more than one stream: ": 2x1 NCCL sockets at 7.5 Gbit/s each" beside a
 * cap that binds, else " (2x8 NCCL sockets, at most 120 Gbit/s)"; "" for one stream (the text
 * runs printed before sockets were a setting), in buf. */
static const char *sockets_text(const CostProfile *p, CostNet net, int unbound, char *buf, size_t n)
{
    const CostNetShare *s = &p->net[net];
    *buf = '\0';
    if (!(s->cap_Bps > 0) || s->threads * s->socks <= 1) return buf;
    if (unbound)
        snprintf(buf, n, " (%dx%d NCCL sockets, at most %.3g Gbit/s)", s->threads, s->socks,
                 s->cap_Bps * 8 / 1e9);
    else
        snprintf(buf, n, ": %dx%d NCCL sockets at %.3g Gbit/s each", s->threads, s->socks,
                 s->socket_cap_Bps * 8 / 1e9);
    return buf;
}

/* "# price: ..." the workload, the overlap and the cost profile a run's steps are priced at. */
static void print_price(const RunConfig *cfg)
{
    const CostProfile *p = cfg->costs;
    char sk[96];
    const char *ov = cfg->overlap == OVERLAP_DDP      ? "DDP's overlap"
                     : cfg->overlap == OVERLAP_LAYER  ? "DDP's overlap and layer-wise "
                                                        "dependencies across steps"
                     : cfg->overlap == OVERLAP_TENSOR ? "one tensor after another after the "
                                                        "backward"
                                                      : "no overlap";
    printf("# price: %s%s", cfg->workload ? "workload " : "the small model's own costs",
           cfg->workload ? cfg->workload->name : "");
    if (cfg->workload)
        printf(" at %d images per GPU (each small step of %d priced as one real step)",
               cfg->price_batch > 0 ? cfg->price_batch : cfg->tc.batch, cfg->tc.batch);
    printf(", %s", ov);
    if (driver_scheduled(cfg))
        printf(", schedule %s", cfg->schedule);
    else if (cfg->overlap == OVERLAP_DDP && p && p->horovod.present) { /* step_plan_hvd.c */
        if (p->horovod.fusion_bytes > 0)
            printf(" (Horovod %s's fused calls: a cycle of %g ms, up to %g MiB)",
                   p->horovod.version, 1e3 * p->horovod.cycle_s,
                   p->horovod.fusion_bytes / 1048576.0);
        else /* --horovod-fusion 0 */
            printf(" (Horovod %s's calls, a tensor each: a cycle of %g ms, no fusion)",
                   p->horovod.version, 1e3 * p->horovod.cycle_s);
    } else if (cfg->overlap == OVERLAP_DDP)
        printf(" (buckets of %g MiB)",
               (cfg->bucket_bytes > 0 ? cfg->bucket_bytes : DRIVER_BUCKET_BYTES) / 1048576.0);
    if (!p || p->ideal) {
        printf("; costs ideal (the roofline)%s\n",
               cfg->free_compression ? ", compression free" : "");
        return;
    }
    printf("; costs %s (%s: %s", p->name, p->gpu, p->implementation);
    if (p->software[0]) printf("; software: %s", p->software);
    if (p->device[0]) printf(", measured on %s %s", p->device, p->date);
    if (p->validation[0]) printf("; validated: %s", p->validation);
    if (p->interference > 1 && cfg->overlap != OVERLAP_NONE && cfg->overlap != OVERLAP_TENSOR)
        printf("; compute beside a collective %.3gx as long", p->interference);
    if (p->net[cfg->transport].busbw) /* costs_busbw.c: each call at its size's busbw */
        printf("), %s collectives at nccl-tests' busbw for %d GPUs per NIC%s\n",
               costs_net_name(cfg->transport), cluster_gpus_per_nic(&cfg->cluster),
               cfg->free_compression ? ", compression free" : "");
    else if (costs_link_share(p, cfg->transport, 0, cfg->cluster.bandwidth_Bps) <
             costs_share(p, cfg->transport, 0)) /* the transport's cap, below share x link */
        printf("), %s collectives at %.3g Gbit/s, the transport's cap%s (%.0f%% of the link)%s\n",
               costs_net_name(cfg->transport), p->net[cfg->transport].cap_Bps * 8 / 1e9,
               sockets_text(p, cfg->transport, 0, sk, sizeof sk),
               100 * costs_link_share(p, cfg->transport, 0, cfg->cluster.bandwidth_Bps),
               cfg->free_compression ? ", compression free" : "");
    else
        printf("), %s links at %.0f%% of their rate%s%s\n", costs_net_name(cfg->transport),
               100 * costs_share(p, cfg->transport, 0),
               sockets_text(p, cfg->transport, 1, sk, sizeof sk),
               cfg->free_compression ? ", compression free" : "");
}

/* "# wall time: about 2.3 hours per run ...", for a run of more than a minute: what it will
 * cost before it starts (driver_wall_estimate_s). */
static void print_wall_estimate(const RunConfig *cfg)
{
    double messages, wall = driver_wall_estimate_s(cfg, &messages);
    if (wall < 60) return;
    char when[32];
    if (wall < 3600)
        snprintf(when, sizeof when, "%.0f minutes", wall / 60);
    else if (wall < 48 * 3600)
        snprintf(when, sizeof when, "%.1f hours", wall / 3600);
    else
        snprintf(when, sizeof when, "%.1f days", wall / 86400);
    printf("# wall time: about %s per run (estimated: %.3g simulated messages at about 3 us each, "
           "and the real gradients%s); Ctrl-C stops it at the next step\n",
           when, messages,
           cfg->backend == COLL_TRANSFER ? "; --collectives analytic simulates no messages" : "");
}

/* --sharding given: the training state's memory per GPU (shard_mem.c) and the GPU's. */
static void print_sharding(const RunConfig *cfg)
{
    ShardMemory mem;
    if (cfg->sharding != SHARD_NONE && driver_shard_memory(cfg, cfg->sharding, &mem)) {
        char of[48] = "";
        if (mem.capacity > 0) snprintf(of, sizeof of, " of the GPU's %.0f GB", mem.capacity / 1e9);
        printf("# --sharding %s: %.2f GB per GPU of training state%s (parameters %.2f, gradients "
               "%.2f, optimizer %.2f, gathered units %.2f; %s, activations not counted)\n",
               driver_sharding_name(cfg->sharding), mem.total / 1e9, of, mem.params / 1e9,
               mem.grads / 1e9, mem.optimizer / 1e9, mem.gathered / 1e9,
               driver_shard_memory_model(cfg));
    }
    char zpp[48];
    if (*zeropp_name(&cfg->zeropp, zpp, sizeof zpp))
        printf("# --zeropp %s: ZeRO++'s collectives (qwZ int%d weights, hpZ's secondary shard "
               "%.2f GB per GPU, qgZ int4 gradients as given; docs/guide/sharded.md)\n",
               zpp, cfg->zeropp.qwz_bits ? cfg->zeropp.qwz_bits : 8,
               driver_shard_memory(cfg, cfg->sharding, &mem) ? mem.secondary / 1e9 : 0.0);
}

/* "# intra-node: ..." for the hierarchical topology: each GPU's link to its node's fabric, and
 * the share of its rate the cost profile gives NVLink (driver_cluster_loaded, as the run uses
 * it). */
static void print_intra_node(const RunConfig *cfg)
{
    const Cluster *c = &cfg->cluster;
    if (c->platform_file || c->topology != TOPO_HIERARCHICAL) return;
    Cluster loaded;
    driver_cluster_loaded(cfg, &loaded);
    const CostProfile *p = cfg->costs && !cfg->costs->ideal ? cfg->costs : NULL;
    char bw[32], lat[32], why[160];
    units_format_bandwidth(c->intra_bandwidth_Bps, bw, sizeof bw);
    units_format_duration(c->intra_latency_s, lat, sizeof lat);
    if (!p)
        snprintf(why, sizeof why, "costs ideal");
    else if (p->net[COST_NET_NVLINK].present)
        snprintf(why, sizeof why, "the nvlink share of costs %s", p->name);
    else
        snprintf(why, sizeof why, "costs %s has no nvlink share: its %s one", p->name,
                 costs_net_name(cfg->transport));
    printf("# intra-node: %s / %s per GPU (--intra-bandwidth, --intra-latency), at %.0f%% of its "
           "rate (%s)\n",
           bw, lat, 100 * cluster_intra_link_share(&loaded), why);
}

void run_print_policy(const RunConfig *cfg)
{
    if (run_policy_uses_compressor(cfg->policy)) {
        printf("# policy %s, compressor %s\n", cfg->policy, cfg->compressor);
        const char *note = compress_spec_note(cfg->compressor);
        if (note) printf("# note: %s\n", note);
    } else if (!strchr(cfg->policy, '@') && strncmp(cfg->policy, "sync", 4) != 0)
        printf("# policy %s (dense parameters averaged, no compressor)\n", cfg->policy);
    else
        printf("# policy %s (dense gradients, no compressor)\n", cfg->policy);
}

void run_print_scenario(const Flags *f, const RunConfig *cfg, const TrainArgs *ta)
{
    const Cluster *c = &cfg->cluster;
    char bw[32], lat[32];
    units_format_bandwidth(c->bandwidth_Bps, bw, sizeof bw);
    units_format_duration(c->latency_s, lat, sizeof lat);
    if (cfg->replay) {
        const Trace *t = cfg->replay;
        printf("# replay of a trace: %s, %ld steps recorded on %d workers (%s); batch %d per "
               "worker here (%d global)\n",
               t->h.model, t->n_steps, t->h.workers, t->h.source, cfg->tc.batch,
               cfg->tc.batch * c->workers);
        print_evaluations(cfg);
    } else {
        char seeds[256];
        seed_list(f, cfg, seeds, sizeof seeds);
        printf("# %s on Fashion-MNIST (%d train / %d test), %d epoch%s, batch %d per worker (%d "
               "global), lr %g, %s\n",
               ta->model, cfg->train->n, cfg->test->n, cfg->tc.epochs,
               cfg->tc.epochs == 1 ? "" : "s", cfg->tc.batch, cfg->tc.batch * c->workers,
               cfg->tc.lr.base_lr, seeds);
        print_lr_scale(cfg);
        print_evaluations(cfg);
    }
    double machine, need = driver_memory_bytes(cfg, &machine);
    if (need > (double)(1 << 30)) /* large: say it before the wait (per run of a compare) */
        printf("# memory: about %.1f GiB per run, of this machine's %.1f GiB (estimated)\n",
               need / (1 << 30), machine / (1 << 30));
    print_sharding(cfg);
    print_wall_estimate(cfg);
    if (cfg->simgrid_cfg) { /* they change results: the header says which */
        printf("# SimGrid options:");
        for (int i = 0; i < cfg->n_simgrid_args; i++)
            if (strncmp(cfg->simgrid_args[i], "--cfg=", 6) == 0)
                printf(" %s", cfg->simgrid_args[i]);
        printf("\n");
    }
    if (c->platform_file) {
        printf("# %d ranks on the hosts of %s (speeds and links from the file), %s allreduce "
               "(%s), %s network model\n",
               c->workers, c->platform_file, f->run.algorithm, f->run.collectives,
               f->run.network_model);
    } else {
        char rate[256];
        cluster_describe_rate(c, rate, sizeof rate);
        printf("# %d x %s (%s), %d per node, %s, %s / %s, %s allreduce (%s), %s network model\n",
               c->workers, c->gpu ? c->gpu->name : "custom GPU", rate, c->gpus_per_node,
               cluster_topology_name(c->topology), bw, lat,
               c->topology == TOPO_ISLANDS && !cfg->islands_flat ? "hierarchical"
               : cfg->islands_flat                               ? "flat ring (across the WAN)"
                                                                 : f->run.algorithm,
               f->run.collectives, f->run.network_model);
        if (c->topology == TOPO_ISLANDS)
            printf("# %d islands of %d GPUs, joined by WAN links of %g Mbps / %g ms\n", c->islands,
                   cluster_island_size(c), c->wan_bandwidth_Bps * 8 / 1e6, c->wan_latency_s * 1e3);
        print_intra_node(cfg);
        const CloudPreset *k = cluster_cloud_find(f->cluster.cloud);
        if (k)
            printf("# cloud %s: %s, NCCL's %dx%d sockets there (--cloud; a flag given beside it "
                   "wins)\n",
                   k->name, k->what, k->threads, k->socks);
    }
    print_price(cfg);
    if (cfg->costs && !cfg->costs->ideal) { /* the published rows near this run (issue 48) */
        CostSetting here;
        char near[1024];
        driver_cost_setting(cfg, &here);
        costs_validation_near(&here, near, sizeof near);
        printf("# validation: %s\n", near);
    }
    if (cfg->price_workers) /* the closed forms at N GPUs, the small model on P */
        printf("# price at scale: every step's communication as %d GPUs pay it (the analytic "
               "collectives' closed forms on this %s; the small model trains on %d; the transfer "
               "level simulates at most %d actors)\n",
               cfg->price_workers, cluster_topology_name(c->topology), c->workers,
               DRIVER_MAX_WORKERS);
}
