/* run_args.c: the flags of the simulating commands (run, compare, sweep) and the scenario
 * they describe (see run_args.h). */
#include "run_args.h"

#include <cblas.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cluster_args.h"
#include "engine.h"
#include "schedule.h"

#define RUN_OPT(name, kind, field, ...)                                                            \
    {                                                                                              \
        name, kind, NULL, __VA_ARGS__, offsetof(RunOpts, field)                                    \
    }

/* --allreduce; on islands the hierarchical allreduce over the islands (islands.c, whether the
 * default or said), unless a ring is asked for: a flat one across the WAN. */
static void set_algo(const Flags *f, RunConfig *cfg)
{
    cfg->algo = (CollAlgo)coll_algo_parse(f->run.algorithm);
    cfg->islands_flat = cfg->cluster.topology == TOPO_ISLANDS && cfg->algo == COLL_RING &&
                        cli_given(f->opts, f->n, f->set, "allreduce");
    if (cfg->cluster.topology == TOPO_ISLANDS && cfg->algo == COLL_HIERARCHICAL)
        cfg->algo = COLL_RING; /* the islands' default path */
}

/* --allreduce's choices, "|ring|halving-doubling|...": collectives.def's names, in its order */
static const char ALLREDUCE_CHOICES[] =
#define COLL_ALGO(ID, file, name) "|" name
#include "collectives.def"
#undef COLL_ALGO
    ;

static const CliOpt run_opts[] = {
    RUN_OPT("compressor", CLI_STRING, compressor, "powersgd", NULL,
            "gradient compressor NAME[:key=value,...] (bellows compressors)", 0, 0, NULL, 0),
    RUN_OPT("allreduce", CLI_CHOICE, algorithm, "ring", NULL,
            "allreduce algorithm; ps: parameter servers (--servers), each call or partition pushed "
            "to one and pulled back (a call over 4,096,000 bytes cut into partitions over all)",
            0, 0, ALLREDUCE_CHOICES + 1, 0),
    RUN_OPT("servers", CLI_INT, servers, NULL, "servers",
            "--allreduce ps: parameter servers, partitions spread over them round-robin "
            "(default: one a worker)",
            1, 4096, NULL, 0),
    RUN_OPT("ps-hosts", CLI_CHOICE, ps_hosts, "colocated", NULL,
            "--allreduce ps: colocated, server s on rank s's host and NIC (BytePS's default; "
            "off a star, spread over the leaves or nodes); own, on hosts of their own with NICs "
            "like the GPUs'",
            0, 0, "colocated|own", 0),
    RUN_OPT("collectives", CLI_CHOICE, collectives, "transfer", NULL,
            "transfer: every message simulated; analytic: the closed-form cost on the bottleneck "
            "link (equal to transfer on the exact network model when nothing contends; an "
            "approximation otherwise)",
            0, 0, "transfer|analytic", 0),
    RUN_OPT("network-model", CLI_CHOICE, network_model, "exact", NULL,
            "exact: contention-aware flows (CM02) that match the cost formulas; tcp: SimGrid's "
            "TCP-like default (LV08)",
            0, 0, "exact|tcp", 0),
    RUN_OPT("target-accuracy", CLI_DOUBLE, target, "0.85", NULL,
            "test accuracy for time-to-accuracy (0: none)", 0, 1, NULL, 0),
    RUN_OPT("stop-at-target", CLI_FLAG, stop_at_target, NULL, NULL,
            "stop a run once it reaches --target-accuracy", 0, 0, NULL, 0),
    RUN_OPT("eval-every", CLI_INT, eval_every, "0", "steps",
            "evaluate every N steps (0: at the end of every epoch); not charged simulated time", 0,
            100000000, NULL, 0),
    RUN_OPT("compute-jitter", CLI_DOUBLE, jitter, "0", NULL,
            "sigma of lognormal per-step compute-time noise per worker (mean 1; 0: none)", 0, 5,
            NULL, 0),
    RUN_OPT("cost-band", CLI_STRING, cost_band, NULL, "draws|off",
            "compare, sweep and bench: price each run again under K seeded draws (default 32) "
            "of its cost profile's stated uncertainty and print the band beside the figure "
            "(compare and sweep: the speedup's over seeds and costs; bench: the step time's "
            "and throughput's); summary.json, compare.csv and sweep_band.csv carry it; off: "
            "none (the table and files as without it)",
            0, 0, NULL, 0),
    RUN_OPT(
        "straggler-cv", CLI_DOUBLE, straggler_cv, "0", NULL,
        "coefficient of variation of a worker's step compute time; each synchronous step waits "
        "for the slowest of the priced workers, the extra booked as waiting (0: none; a "
        "normal-law approximation; one H200 measured 0.004-0.02 for ResNet-50 and 0.02-0.04 for "
        "GPT-2 small, a lower bound: sim/costs/measured/h200-hooks-*.json)",
        0, 2, NULL, 0),
    RUN_OPT("slowdown", CLI_DOUBLE_LIST, slowdown, NULL, "x",
            "compute-time multipliers of GPUs 0,1,2,... (stragglers; GPUs not listed: 1)", 0.01,
            1000, NULL, 16),
    RUN_OPT("compute-threads", CLI_INT, compute_threads, NULL, "threads",
            "threads computing the workers' real gradients of a step in parallel, each with "
            "one OpenBLAS thread (1: one at a time; the results are the same). Default: the "
            "cores, divided among the runs of a compare or sweep (--jobs), at most the workers; 1 "
            "with --threads above 1",
            1, 256, NULL, 0),
    RUN_OPT("workload", CLI_STRING, workload, NULL, "NAME|FILE",
            "charge a real model's costs (bellows workloads, or a profile .json, or a trace with "
            "per-layer times): its tensors' bytes at the policy's levels and its per-layer "
            "compute; the small model still gives the gradients and the accuracy",
            0, 0, NULL, 0),
    RUN_OPT("overlap", CLI_CHOICE, overlap, NULL, NULL,
            "ddp: the backward overlaps bucketed collectives as PyTorch DDP does; layer: as ddp, "
            "and the next step's forward of a layer waits only for that layer's update, so the "
            "last collectives overlap it; none: compute, then communication; tensor: no overlap "
            "and one collective per tensor (the Accordion authors' code). Default: layer with a "
            "--schedule other than fifo, ddp with --workload (what real jobs do), else none",
            0, 0, "none|ddp|tensor|layer", 0),
    RUN_OPT("sharding", CLI_CHOICE, sharding, "none", NULL,
            "sharded data parallel (docs/guide/sharded.md): zero1 shards the optimizer state, "
            "zero2 also the gradients (FSDP SHARD_GRAD_OP), zero3 also the parameters (FSDP "
            "FULL_SHARD), hybrid shards inside a node and replicates across nodes (FSDP "
            "HYBRID_SHARD; not priced yet: refused on costed steps). The small model's update is "
            "DDP's in every mode; the step's collectives, optimizer time and memory change",
            0, 0, "none|zero1|zero2|zero3|hybrid", 0),
    RUN_OPT("zeropp", CLI_STRING, zeropp, NULL, "LIST",
            "ZeRO++'s quantized collectives with --sharding zero3 (docs/guide/sharded.md), a "
            "comma-separated list: qwz[:int8|int4] (the gathered weights block-quantized, one "
            "scale a block of at most 8000; qwz alone is int8; the small model's forward and "
            "backward use them), hpz (a secondary shard in each node: the backward's all-gather "
            "inside the node, 2 bytes a parameter over the node's GPUs more memory), qgz (int4 "
            "gradients through a hierarchical all-to-all reduce-scatter; the small model's "
            "gradients pass through it). Needs a costed step (--workload). Default: none",
            0, 0, NULL, 0),
    /* ZeRO-3's schedule, FSDP's knobs (fsdp_args.c; defaults FSDP's, docs/guide/sharded.md) */
    RUN_OPT("fsdp-unit", CLI_STRING, fsdp_unit, "layer", "layer|block|N|size:MB",
            "--sharding zero3's units, each all-gathered and reduce-scattered as one collective "
            "(FSDP's auto_wrap_policy): layer, one a profile's layer; block, one a block (layers "
            "named PREFIX.K.*, as transformer_auto_wrap_policy wraps blocks); N, N layers with "
            "parameters a unit; size:MB, a unit closed once it holds MB MiB of fp32 parameters "
            "(size_based_auto_wrap_policy)",
            0, 0, NULL, 0),
    RUN_OPT("backward-prefetch", CLI_CHOICE, backward_prefetch, "pre", NULL,
            "--sharding zero3: when the backward's next all-gather is issued: pre, before the "
            "current unit's gradients (FSDP's BACKWARD_PRE, its default); post, after them and "
            "before its reduce-scatter (BACKWARD_POST); none, when its unit's backward starts",
            0, 0, "pre|post|none", 0),
    RUN_OPT("forward-prefetch", CLI_CHOICE, forward_prefetch, "off", NULL,
            "--sharding zero3: on issues the next unit's all-gather before the current unit's "
            "forward (FSDP's forward_prefetch, default False); off, when its forward starts",
            0, 0, "on|off", 0),
    RUN_OPT("limit-all-gathers", CLI_INT, limit_all_gathers, "2", "all-gathers",
            "--sharding zero3: all-gathers issued whose unit has not been computed yet, at most "
            "(FSDP's limit_all_gathers, 2 in flight); 1 allows no prefetch; 0, no limit",
            0, 1 << 20, NULL, 0),
    RUN_OPT("reshard-after-forward", CLI_CHOICE, reshard_after_forward, "on", NULL,
            "--sharding zero3: on frees each unit's gathered parameters after its forward and "
            "gathers them again for its backward (FULL_SHARD); off keeps them (SHARD_GRAD_OP's "
            "2x bytes instead of 3x, the whole fp16 model in memory)",
            0, 0, "on|off", 0),
    RUN_OPT("rs-comm", CLI_CHOICE, rs_comm, "shared", NULL,
            "--sharding zero3: the reduce-scatters' communicator: shared, the all-gathers' (one "
            "collective at a time, FSDP's default, pytorch#64803); own, a second one beside it "
            "(FSDP2's set_separate_reduce_scatter_group, pytorch#186335)",
            0, 0, "shared|own", 0),
    RUN_OPT("schedule", CLI_STRING, schedule, "fifo", NULL,
            "what is sent when: NAME[:key=value,...] (bellows schedules: fifo, bytescheduler, p3, "
            "tictac) or a plugin PATH.so[:key=value,...]: tensor priority, buckets, partition "
            "size and credit, per step",
            0, 0, NULL, 0),
    RUN_OPT("price-batch", CLI_INT, price_batch, NULL, "images",
            "images per GPU the workload's compute is charged for (default: --batch): the small "
            "model trains at --batch per worker, and each of its steps is priced as one step of "
            "the real model at this batch",
            1, 1 << 20, NULL, 0),
    RUN_OPT("price-workers", CLI_INT, price_workers, NULL, "GPUs",
            "price every step's communication as this many GPUs would pay it (the analytic "
            "collectives' closed forms on the same topology), while the small model trains on "
            "--workers; at least --workers, up to 1048576 (--collectives analytic; on "
            "--topology islands, K islands of N / K GPUs: a multiple of --islands)",
            1, 1 << 20, NULL, 0),
    RUN_OPT("bucket-mb", CLI_DOUBLE, bucket_mb, "25", "MiB",
            "DDP bucket size (PyTorch's bucket_cap_mb; the first bucket is 1 MiB as in DDP)", 0.001,
            1e6, NULL, 0),
    RUN_OPT("free-compression", CLI_FLAG, free_compression, NULL, NULL,
            "charge no time for the compressors' encode and decode on the GPU (costed runs)", 0, 0,
            NULL, 0),
    RUN_OPT("costs", CLI_STRING, costs, COSTS_DEFAULT, "NAME|FILE",
            "what the implementation pays beside the roofline (bellows costs, or a profile "
            ".json): fixed costs per tensor, kernel and collective call, each operation's rate, "
            "the collectives' share of the links, the compute's efficiency. pytorch: PyTorch "
            "DDP + NCCL on --gpu (PyTorch 1.x on a V100 or A100; pytorch2-v100, pytorch2-a100: "
            "2.x, derived); horovod-0.18-v100, horovod-0.21-v100: PyTorch 1.x + Horovod (over "
            "any profile: --horovod); ideal: the roofline (bellows before cost profiles)",
            0, 0, NULL, 0),
    RUN_OPT("transport", CLI_CHOICE, transport, "tcp", NULL,
            "the network's kind, whose share of the links the cost profile gives: tcp (NCCL or "
            "MPI over sockets, as on Ethernet), rdma (InfiniBand, RoCE), nvlink (one node)",
            0, 0, "tcp|rdma|nvlink", 0),
    RUN_OPT("average-momentum", CLI_FLAG, average_momentum, NULL, NULL,
            "periodic policies: average the momentum buffers with the parameters (one allreduce "
            "of twice the parameters); ignored by gradient-mode policies and with --momentum 0, "
            "whose buffers are equal or absent",
            0, 0, NULL, 0),
};
#define N_RUN_OPTS ((int)(sizeof run_opts / sizeof *run_opts))

static const CliOpt policy_opts[] = {
    RUN_OPT("timeline", CLI_STRING, timeline, NULL, "FILE.json",
            "write the run's timeline as Chrome trace events (open in Perfetto or "
            "chrome://tracing): per worker, compute and communication lanes",
            0, 0, NULL, 0),
    RUN_OPT("timeline-steps", CLI_STRING, timeline_steps, "0:19", "A:B",
            "the steps the timeline keeps, A to B inclusive (A: alone: from A on)", 0, 0, NULL, 0),
    RUN_OPT("policy", CLI_STRING, policy, "sync", NULL,
            "policy NAME[:key=value,...] (bellows policies)", 0, 0, NULL, 0),
    RUN_OPT(
        "record-trace", CLI_STRING, record_trace, NULL, "FILE",
        "write the run's gradient trace (JSON Lines; gzip if FILE ends in .gz; traces/README.md)",
        0, 0, NULL, 0),
    /* accepted, so that one list of flags serves run, compare and sweep (issue 49, item 38) */
    RUN_OPT("no-plots", CLI_FLAG, no_plots, NULL, NULL,
            "accepted for compare's and sweep's sake; a single run draws no plots (bellows plot "
            "DIR draws them)",
            0, 0, NULL, 0),
};

#define N_POLICY_OPTS ((int)(sizeof policy_opts / sizeof *policy_opts))

static const CliOpt sweep_opts[] = {
    RUN_OPT("resume", CLI_FLAG, resume, NULL, NULL,
            "skip the runs already in DIR/sweep.csv (after an interruption)", 0, 0, NULL, 0),
    RUN_OPT(
        "shard", CLI_STRING, shard, NULL, "K/N",
        "run only the K-th of N deterministic slices of the runs (K from 1); bellows merge joins "
        "the shards",
        0, 0, NULL, 0),
    RUN_OPT("record-traces", CLI_FLAG, record_traces, NULL, NULL,
            "each run writes its gradient trace, trace.jsonl.gz in its folder (to replay it later "
            "on other clusters: a synchronous policy's training does not depend on the network)",
            0, 0, NULL, 0),
    RUN_OPT("train-each", CLI_FLAG, train_each, NULL, NULL,
            "train every run; by default a run whose scenario differs from an earlier one's only "
            "in its price (network, GPU, costs) is priced by replaying that run's trace (the same "
            "files, bit for bit)",
            0, 0, NULL, 0),
};
#define N_SWEEP_OPTS ((int)(sizeof sweep_opts / sizeof *sweep_opts))

static const CliOpt compare_opts[] = {
    RUN_OPT("policies", CLI_STRING, policies, "sync,static:level=1,static:level=2,accordion", NULL,
            "policies to compare, NAME[:k=v,...] separated by commas; the first is the baseline. "
            "compare and replay: POLICY@COMPRESSOR[:k=v,...] gives a policy a compressor of its "
            "own, the others taking --compressor (static:level=2@powersgd,static:level=0.01@topk "
            "compares PowerSGD with Top-k)",
            0, 0, NULL, 0),
    RUN_OPT("jobs", CLI_INT, jobs, "2", "processes", "runs at a time", 1, 64, NULL, 0),
    RUN_OPT("seeds", CLI_INT_LIST, seeds, RUN_DEFAULT_SEEDS, "seeds",
            "repeat every policy (and point) with each of these seeds; --seed S alone, or a "
            "replay (--trace) without --seeds: just S. "
            "The table gives mean and standard deviation, and a 95% interval of the speedup "
            "paired by seed",
            0, 2147483647.0, NULL, 16),
    RUN_OPT(
        "trace", CLI_STRING, trace, NULL, "FILE",
        "replay this gradient trace instead of training (bellows replay; accuracy from the trace)",
        0, 0, NULL, 0),
    RUN_OPT("traces", CLI_STRING, traces, NULL, "FILE,...",
            "compare and sweep: price each policy on its own trace instead of training, following "
            "its recorded decisions (traces/pytorch/train_policy.py writes them; several seeds of "
            "a policy pair by seed; the policies, seeds and baseline, the first trace's policy, "
            "come from the traces); accuracy is each run's own; sweep prices every trace in "
            "every scenario",
            0, 0, NULL, 0),
    RUN_OPT("replay-engine", CLI_CHOICE, replay_engine, "auto", NULL,
            "replay with: fast (no actors or payloads: the trace's compute plus the analytic "
            "collectives' closed-form times; identical workers and --collectives analytic only), "
            "actors "
            "(one SimGrid actor per worker, real payloads through the compressors), or auto (fast "
            "whenever it gives the actors' results)",
            0, 0, "auto|actors|fast", 0),
    RUN_OPT("no-plots", CLI_FLAG, no_plots, NULL, NULL, "skip the gnuplot plots", 0, 0, NULL, 0),
};
#define N_COMPARE_OPTS ((int)(sizeof compare_opts / sizeof *compare_opts))
#undef RUN_OPT

/* compare's and sweep's defaults, the same for both (and for the runs of a sweep): long enough
 * for Accordion to check its regimes several times; RUN_EVALS_PER_EPOCH evaluations an epoch
 * (run_default_eval_every) so that time to accuracy is precise; compare writes into
 * runs/compare unless told, a sweep needs --out (sweep.c). */
static void shared_defaults(Flags *f, RunMode mode)
{
    for (int i = 0; i < f->n; i++) {
        CliOpt *o = &f->opts[i];
        if (strcmp(o->name, "epochs") == 0) o->def = "20";
        if (strcmp(o->name, "eval-every") == 0) {
            o->def = NULL;
            o->help = "evaluate every N steps (default: steps per epoch / 20, at least 1: twenty "
                      "evaluations an epoch; 0: at the end of every epoch); not charged simulated "
                      "time";
        }
        if (mode == RUN_MODE_COMPARE && strcmp(o->name, "out") == 0) {
            o->def = "runs/compare";
            o->help = "output folder, new or empty";
        } else if (mode == RUN_MODE_SWEEP && strcmp(o->name, "out") == 0)
            o->help = "output folder, new or empty (required: a sweep writes its runs there)";
        if (mode == RUN_MODE_SWEEP && strcmp(o->name, "jobs") == 0) {
            /* a sweep runs as many runs at a time as there are cores */
            long n = sysconf(_SC_NPROCESSORS_ONLN);
            snprintf(f->jobs_default, sizeof f->jobs_default, "%ld", n > 0 ? (n < 64 ? n : 64) : 1);
            o->def = f->jobs_default;
        }
    }
}

/* Separates SimGrid's --cfg=/--log= options from bellows' flags, then parses the latter. */
int run_parse_flags(const char *cmd, RunMode mode, int argc, char **argv, Flags *f, BwError *err)
{
    const int compare = mode == RUN_MODE_COMPARE || mode == RUN_MODE_SWEEP;
    memset(f, 0, sizeof *f);
    f->mode = mode;
    CliOpt train_opts[TRAIN_CLI_MAX_OPTS];
    const int n_train = train_cli_opts(&f->train, train_opts, TRAIN_CLI_MAX_OPTS);
    const CliOpt *own = compare ? compare_opts : policy_opts;
    const int n_own = compare ? N_COMPARE_OPTS : N_POLICY_OPTS;
    const CliOpt *tables[] = {train_opts, cluster_cli_opts, run_opts, out_cli_opts, hvd_cli_opts,
                              own,        sweep_opts};
    const int counts[] = {n_train, cluster_cli_n_opts, N_RUN_OPTS, out_cli_n_opts, hvd_cli_n_opts,
                          n_own,   N_SWEEP_OPTS};
    const size_t run = offsetof(Flags, run),
                 bases[] = {
                     offsetof(Flags, train), offsetof(Flags, cluster), run, run, run, run, run};
    f->n = cli_concat(f->opts, RUN_MAX_OPTS, tables, counts, bases, mode == RUN_MODE_SWEEP ? 7 : 6);
    f->train_at = 0;
    f->cluster_at = n_train;
    f->run_at = f->cluster_at + cluster_cli_n_opts;
    if (mode != RUN_MODE_RUN) shared_defaults(f, mode);
    char *rest[512];
    int n_rest = 0;
    f->n_simgrid = 0;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "--cfg=", 6) == 0 || strncmp(argv[i], "--log=", 6) == 0) {
            if (f->n_simgrid == RUN_MAX_SIMGRID_ARGS)
                return bw_fail(err, BW_EUSAGE, "--cfg: more than %d --cfg/--log options",
                               RUN_MAX_SIMGRID_ARGS);
            f->simgrid_args[f->n_simgrid++] = argv[i];
        } else if (n_rest < 512) {
            rest[n_rest++] = argv[i];
        } else {
            return bw_fail(err, BW_EUSAGE, "%s: more than 512 arguments",
                           strncmp(cmd, "bellows ", 8) == 0 ? cmd + 8 : cmd);
        }
    }
    return cli_parse(cmd, f->opts, f->n, f, n_rest, rest, f->set, err);
}

int run_seeds(const Flags *f, int *seeds, int *n, BwError *err)
{
    int given_seeds = cli_given(f->opts, f->n, f->set, "seeds");
    if (cli_given(f->opts, f->n, f->set, "seed")) {
        if (given_seeds) return bw_fail(err, BW_EUSAGE, "--seed: give --seeds or --seed, not both");
        seeds[0] = (int)f->train.seed;
        *n = 1;
        return BW_OK;
    }
    if (!given_seeds && f->run.trace) { /* a replay: the trace fixes losses and accuracies */
        seeds[0] = (int)f->train.seed;
        *n = 1;
        return BW_OK;
    }
    *n = f->run.seeds.n;
    memcpy(seeds, f->run.seeds.v, sizeof(int) * (size_t)f->run.seeds.n);
    if (*n == 0) return bw_fail(err, BW_EUSAGE, "--seeds: expected at least one seed");
    for (int i = 0; i < *n; i++)
        for (int j = 0; j < i; j++)
            if (seeds[i] == seeds[j])
                return bw_fail(err, BW_EUSAGE, "--seeds: %d is listed twice", seeds[i]);
    return BW_OK;
}

void run_default_eval_every(const Flags *f, RunConfig *cfg)
{
    if (f->mode == RUN_MODE_RUN && !cfg->record_trace) return;
    run_compare_eval_every(f, cfg);
}

void run_compare_eval_every(const Flags *f, RunConfig *cfg)
{
    if (cfg->replay || !cfg->train || cli_given(f->opts, f->n, f->set, "eval-every")) return;
    long steps = cfg->train->n / cfg->cluster.workers / cfg->tc.batch;
    cfg->eval_every = steps / RUN_EVALS_PER_EPOCH > 1 ? (int)(steps / RUN_EVALS_PER_EPOCH) : 1;
    /* the step evaluations time the crossing of the target; after it, epoch ends suffice (a
     * fifth of the default compare's wall time went into evaluations after the target). A
     * recorded trace keeps them all: its replays may ask for any target */
    cfg->eval_sparse_after_target = cfg->target_accuracy > 0 && !cfg->record_trace;
}

void run_flags_release(Flags *f)
{
    cluster_flags_release(&f->cluster);
    workload_free(f->workload);
    f->workload = NULL;
    costs_free(f->costs);
    f->costs = NULL;
}

/* "A:B" or "A:" into [lo, hi] (hi -1: no end). */
static int parse_steps(const char *text, long *lo, long *hi, BwError *err)
{
    char *end;
    errno = 0;
    long a = strtol(text, &end, 10), b = -1;
    int ok = end != text && *end == ':' && a >= 0 && errno == 0;
    if (ok && end[1]) {
        const char *rest = end + 1;
        b = strtol(rest, &end, 10);
        ok = end != rest && !*end && b >= a && errno == 0;
    }
    if (!ok)
        return bw_fail(err, BW_EUSAGE,
                       "--timeline-steps: expected A:B or A: with 0 <= A <= B, got '%s'", text);
    *lo = a;
    *hi = b;
    return BW_OK;
}

/* --costs for the cluster's GPU (loaded once and kept by the flags) and --transport; the
 * profile's compute efficiency at the run's precision unless --gpu-efficiency is given. */
static int costs_setup(Flags *f, RunConfig *cfg, BwError *err)
{
    Cluster *c = &cfg->cluster;
    int rc;
    if (!f->costs && /* loaded, and --horovod applied, once */
        ((rc = costs_load(f->run.costs, "--costs", c->gpu ? c->gpu->name : NULL, &f->costs, err)) ||
         (rc = hvd_args_apply(f, f->costs, err))))
        return rc;
    cfg->costs = f->costs;
    if (!c->gpu && !f->costs->ideal && !f->costs_noted) { /* --gpu-flops: said once */
        fprintf(stderr,
                "bellows: note: --costs %s: compute at --gpu-flops; the calls, cycle, link shares "
                "and the optimiser's and compressors' rates as the profile measured them on the "
                "%s\n",
                f->costs->spec, f->costs->gpu);
        f->costs_noted = 1;
    }
    cfg->transport = (CostNet)costs_net_parse(f->run.transport);
    if ((rc = cluster_apply_sockets(&f->cluster, f->set + f->cluster_at, f->costs, cfg->transport,
                                    err)))
        return rc;
    return cluster_apply_costs(c, cfg->costs, f->workload ? f->workload->name : NULL, err);
}

/* --price-workers N: the closed forms at N GPUs of the same cluster (coll_comm_set_price). */
static int price_workers_setup(const Flags *f, RunConfig *cfg, BwError *err)
{
    const int N = f->run.price_workers, P = cfg->cluster.workers;
    if (!N) return BW_OK;
    if (N < P)
        return bw_fail(err, BW_EUSAGE,
                       "--price-workers: %d is below --workers %d; the GPUs a step is priced at "
                       "include those that train, so give at least %d",
                       N, P, P);
    /* with --collectives transfer, --platform or --allreduce ps: compat.def */
    if (P < 2)
        return bw_fail(err, BW_EUSAGE,
                       "--price-workers: needs --workers 2 or more (a step priced at N GPUs "
                       "trains on at least 2)");
    if (N % cfg->cluster.gpus_per_node != 0)
        return bw_fail(err, BW_EUSAGE,
                       "--price-workers: %d is not a multiple of --gpus-per-node %d", N,
                       cfg->cluster.gpus_per_node);
    if (cfg->cluster.topology == TOPO_ISLANDS && N % cfg->cluster.islands != 0)
        return bw_fail(err, BW_EUSAGE,
                       "--price-workers: %d GPUs do not make --islands %d equal islands", N,
                       cfg->cluster.islands);
    cfg->price_workers = N;
    return BW_OK;
}

/* The costs' flags: the workload (loaded once and kept by the flags), overlap, buckets,
 * compression, timeline, the cost profile. */
static int cost_setup(Flags *f, RunConfig *cfg, BwError *err)
{
    int rc;
    if (f->run.workload && !f->workload &&
        (rc = workload_load(f->run.workload, "--workload", &f->workload, err)))
        return rc;
    if ((rc = costs_setup(f, cfg, err))) return rc;
    cfg->workload = f->workload;
    const char *ov = f->run.overlap                            ? f->run.overlap
                     : !schedule_spec_is_fifo(f->run.schedule) ? "layer"
                     : cfg->workload                           ? "ddp"
                                                               : "none";
    cfg->overlap = strcmp(ov, "ddp") == 0      ? OVERLAP_DDP
                   : strcmp(ov, "tensor") == 0 ? OVERLAP_TENSOR
                   : strcmp(ov, "layer") == 0  ? OVERLAP_LAYER
                                               : OVERLAP_NONE;
    cfg->schedule = f->run.schedule;
    const char *sh = f->run.sharding ? f->run.sharding : "none";
    cfg->sharding = strcmp(sh, "zero1") == 0    ? SHARD_ZERO1
                    : strcmp(sh, "zero2") == 0  ? SHARD_ZERO2
                    : strcmp(sh, "zero3") == 0  ? SHARD_ZERO3
                    : strcmp(sh, "hybrid") == 0 ? SHARD_HYBRID
                                                : SHARD_NONE;
    if ((rc = zeropp_parse(f->run.zeropp, &cfg->zeropp, err))) return rc; /* zeropp.c */
    if ((rc = run_ps_setup(f, cfg, err)) || (rc = fsdp_args_setup(f, cfg, err))) return rc;
    cfg->bucket_bytes = f->run.bucket_mb * 1024 * 1024;
    if (f->run.price_batch && !cfg->workload)
        return bw_fail(err, BW_EUSAGE,
                       "--price-batch: the batch a workload is charged for; add --workload");
    cfg->price_batch = f->run.price_batch;
    if ((rc = price_workers_setup(f, cfg, err))) return rc;
    if ((rc = zeropp_check(cfg, err))) return rc;
    cfg->free_compression = f->run.free_compression;
    cfg->average_momentum = f->run.average_momentum;
    if (f->run.timeline) {
        if ((rc = parse_steps(f->run.timeline_steps, &cfg->timeline_lo, &cfg->timeline_hi, err)) ||
            (rc = run_check_out_file("--timeline", f->run.timeline, "timeline.json", err)))
            return rc;
        cfg->timeline = f->run.timeline;
    }
    return BW_OK;
}

const char *const RUN_ABOUT =
    "Simulates data-parallel training of a model on Fashion-MNIST: one SimGrid actor per GPU\n"
    "computes real gradients on its shard, the policy decides each step, the gradients go\n"
    "through the compressor and the collectives on the simulated network. Reports the\n"
    "simulated time to reach --target-accuracy, bytes per worker and where the time went.\n"
    "SimGrid options --cfg=... (those bellows vouches for: network/TCP-gamma, crosstraffic,\n"
    "latency-factor, bandwidth-factor and weight-S with --network-model tcp; contexts/factory)\n"
    "and --log=... are passed to SimGrid, and the --cfg= ones recorded in summary.json.";

/* --lr-scale auto (the default): with the default --lr, a global batch above the one the
 * defaults were tuned for gets the linear scaling rule with a warm-up (Goyal et al., "Accurate,
 * Large Minibatch SGD", 2017, Sections 2.1-2.2): without it, 64 workers x 64 train the mlp at
 * an eighth of the rate its batch needs, and a run that cannot reach its target says nothing. */
static void auto_lr_scale(const Flags *f, const TrainArgs *ta, RunConfig *cfg)
{
    LrSchedule *lr = &cfg->tc.lr;
    const long global = (long)cfg->cluster.workers * cfg->tc.batch;
    if (strcmp(f->train.lr_scale, "auto") != 0 || cli_given(f->opts, f->n, f->set, "lr") ||
        global <= RUN_TUNED_GLOBAL_BATCH)
        return;
    lr->peak_scale = (double)global / RUN_TUNED_GLOBAL_BATCH;
    const int n = ta->train_samples > 0 && ta->train_samples < RUN_FASHION_MNIST_TRAIN
                      ? ta->train_samples
                      : RUN_FASHION_MNIST_TRAIN;
    if (!cli_given(f->opts, f->n, f->set, "warmup-epochs"))
        lr->warmup_epochs = fmin(RUN_AUTO_WARMUP_SAMPLES / n, RUN_AUTO_WARMUP_MAX_EPOCHS);
}

void run_io_files(const Flags *f, IoFiles *io)
{
    static const char *const own[] = {"summary.json", "evals.csv", "steps.csv", "epochs.csv"};
    io_flags(io, f->opts, f->n, f, NULL);
    for (size_t k = 0; f->mode == RUN_MODE_RUN && f->run.out && k < 4; k++) {
        char path[4200];
        snprintf(path, sizeof path, "%.4000s/%s", f->run.out, own[k]);
        io_output(io, "--out", path);
    }
}

/* Inputs are never outputs (io_check.h): the flags' files, and a run's own in --out. */
static int check_io(const Flags *f, BwError *err)
{
    IoFiles io = {0};
    run_io_files(f, &io);
    int rc = io_check(&io, err);
    io_free(&io);
    return rc;
}

int run_setup(const char *cmd, Flags *f, TrainArgs *ta, RunConfig *cfg, double *slowdown,
              BwError *err)
{
    int rc = train_args_resolve(ta, &f->train, f->set + f->train_at, err);
    if (rc) return rc;
    memset(cfg, 0, sizeof *cfg);
    if ((rc = cluster_from_cli(&cfg->cluster, &f->cluster, f->set + f->cluster_at, err))) return rc;
    if (f->trace_workers > 0 && !f->cluster.platform &&
        !cli_given(f->opts, f->n, f->set, "workers")) { /* a replay: the trace's cluster */
        cfg->cluster.workers = f->trace_workers;
        if ((rc = cluster_resolve(&cfg->cluster, err))) return rc;
    }
    if (f->run.slowdown.n > cfg->cluster.workers)
        return bw_fail(err, BW_EUSAGE, "--slowdown: %d values for %d workers", f->run.slowdown.n,
                       cfg->cluster.workers);
    if (cfg->cluster.workers > DRIVER_MAX_WORKERS)
        return bw_fail(err, BW_EUSAGE, "--workers: at most %d", DRIVER_MAX_WORKERS);
    if (f->run.replay_engine && strcmp(f->run.replay_engine, "auto") != 0 && !f->run.trace)
        return bw_fail(err, BW_EUSAGE, "--replay-engine: only for a replay (--trace FILE)");
    if (f->run.stop_at_target && f->run.target <= 0)
        return bw_fail(err, BW_EUSAGE, "--stop-at-target: needs a --target-accuracy above 0");
    if (coll_algo_per_node((CollAlgo)coll_algo_parse(f->run.algorithm)) &&
        cfg->cluster.gpus_per_node < 2 && cfg->cluster.topology != TOPO_ISLANDS)
        return bw_fail(err, BW_EUSAGE, "--allreduce %s: needs --gpus-per-node of 2 or more",
                       f->run.algorithm);
    cfg->model = model_find(ta->model);
    cfg->mc = ta->mc;
    cfg->tc = ta->tc;
    if (cfg->tc.lr.scale_by_workers) cfg->tc.lr.peak_scale = cfg->cluster.workers; /* --lr-scale */
    auto_lr_scale(f, ta, cfg);
    set_algo(f, cfg);
    cfg->backend = strcmp(f->run.collectives, "analytic") == 0 ? COLL_ANALYTIC : COLL_TRANSFER;
    cfg->compressor = f->run.compressor;
    cfg->policy = f->run.policy;
    cfg->model_name = ta->model;
    if (f->run.record_trace &&
        (rc = run_check_out_file("--record-trace", f->run.record_trace, "trace.jsonl.gz", err)))
        return rc;
    cfg->record_trace = f->run.record_trace;
    if ((rc = check_io(f, err))) return rc;
    cfg->eval_every = f->run.eval_every;
    cfg->target_accuracy = f->run.target;
    cfg->stop_at_target = f->run.stop_at_target;
    cfg->jitter_sigma = f->run.jitter;
    cfg->straggler_cv = f->run.straggler_cv;
    if (f->run.slowdown.n) {
        for (int w = 0; w < cfg->cluster.workers; w++)
            slowdown[w] = w < f->run.slowdown.n ? f->run.slowdown.v[w] : 1.0;
        cfg->slowdown = slowdown;
    }
    cfg->progress = !f->run.quiet && isatty(STDERR_FILENO);
    cfg->label = cmd;
    if ((rc = engine_check_cfg(f->n_simgrid, f->simgrid_args, f->run.network_model,
                               cfg->backend == COLL_ANALYTIC, err)))
        return rc;
    for (int i = 0; i < f->n_simgrid; i++)
        cfg->simgrid_cfg += strncmp(f->simgrid_args[i], "--cfg=", 6) == 0;
    cfg->simgrid_args = f->simgrid_args;
    cfg->n_simgrid_args = f->n_simgrid;
    /* One OpenBLAS thread unless asked: the models are small, and compare runs in parallel.
     * Set only when it changes: OpenBLAS stops its thread pool before a fork, and setting the
     * count (even to the same value) starts it again in the child, where its threads spin on
     * sched_yield for a while before they sleep; in a sweep, every forked run paid that. */
    int threads = ta->threads > 0 ? ta->threads : 1;
    if (openblas_get_num_threads() != threads) openblas_set_num_threads(threads);
    cfg->compute_threads = f->run.compute_threads;
    if (!cfg->compute_threads && ta->threads > 1) /* OpenBLAS's own threads take the cores */
        cfg->compute_threads = 1;
    if (!cfg->compute_threads) { /* the cores, shared by the runs going at a time */
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        int jobs = f->mode == RUN_MODE_RUN || f->run.jobs < 1 ? 1 : f->run.jobs;
        cfg->compute_threads = cores > jobs ? (int)(cores / jobs) : 1;
    }
    if ((rc = run_check_compat(cmd, f, cfg, NULL, 0, err))) return rc; /* compat.def */
    return cost_setup(f, cfg, err);
}

int run_load_data(const TrainArgs *ta, RunConfig *cfg, Dataset *train, Dataset *test, BwError *err)
{
    int rc = dataset_load_fashion_mnist(ta->data_dir, ta->train_samples, ta->test_samples, train,
                                        test, err);
    cfg->train = train;
    cfg->test = test;
    return rc;
}

/* Flags a live run computes with and a replay has no use for. */
static const char *const live_only[] = {"eval-every", "compute-threads"};

int run_replay_refuses(const Flags *f, int i)
{
    if (i >= f->train_at && i < f->cluster_at)
        return strcmp(f->opts[i].name, "seed") != 0 && strcmp(f->opts[i].name, "threads") != 0;
    for (size_t k = 0; k < sizeof live_only / sizeof *live_only; k++)
        if (strcmp(f->opts[i].name, live_only[k]) == 0) return 2;
    return 0;
}

int run_apply_trace(const Flags *f, RunConfig *cfg, const Trace *trace, BwError *err)
{
    for (int i = 0; i < f->n; i++) {
        int why = f->set[i] ? run_replay_refuses(f, i) : 0;
        if (why == 1)
            return bw_fail(err, BW_EUSAGE,
                           "--%s: a replay takes the model, the data, the optimiser and the "
                           "learning-rate schedule from --trace",
                           f->opts[i].name);
        if (why == 2)
            return bw_fail(err, BW_EUSAGE,
                           "--%s: a replay computes no gradients and evaluates nothing: its "
                           "accuracies are the trace's, at the trace's evaluations (record the "
                           "trace with --eval-every to have more)",
                           f->opts[i].name);
    }
    if (trace->n_evals == 0)
        return bw_fail(err, BW_EUSAGE,
                       "--trace %s: holds no evaluation records, and a replay takes its "
                       "accuracies from them; record it with evaluations (bellows run "
                       "--record-trace evaluates %d times an epoch)",
                       trace->path, RUN_EVALS_PER_EPOCH);
    int P = cfg->cluster.workers;
    int global = trace->steps[0].batch;
    if (global % P != 0)
        return bw_fail(err, BW_EUSAGE,
                       "--workers: %d does not divide the trace's global batch of %d", P, global);
    cfg->replay = trace;
    cfg->replay_engine = !f->run.replay_engine || strcmp(f->run.replay_engine, "auto") == 0
                             ? REPLAY_AUTO
                         : strcmp(f->run.replay_engine, "fast") == 0 ? REPLAY_FAST
                                                                     : REPLAY_ACTORS;
    cfg->tc.batch = global / P;
    cfg->tc.epochs = trace->steps[trace->n_steps - 1].epoch + 1;
    /* the policies' lr0: the header's base, or the first step's that is above 0 (a warm-up
     * may start at 0) */
    double lr0 = trace->h.lr_base;
    for (long i = 0; !(lr0 > 0) && i < trace->n_steps; i++) lr0 = trace->steps[i].lr;
    if (!(lr0 > 0))
        return bw_fail(err, BW_EUSAGE,
                       "--trace %s: its learning rate is 0 at every step (and its header gives "
                       "no \"lr\": {\"base\"}); a policy scales its decisions by it",
                       trace->path);
    cfg->tc.lr.base_lr = lr0;
    cfg->model_name = trace->h.model;
    return BW_OK;
}
