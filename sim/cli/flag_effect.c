/* flag_effect.c: flags a run accepts whose effect depends on other flags (see run_args.h,
 * run_note_idle_flags). One table says, for each, when it does nothing and why; a flag given
 * then is a note on stderr, or a usage error where it can only be a mistake. */
#include <stdio.h>
#include <string.h>

#include "policy.h"
#include "run_args.h"
#include "schedule.h"
#include "spec.h"

typedef struct {
    const char *flag;
    int refuse; /* 1: a usage error (nothing could make it count in this command) */
    int (*idle)(const Flags *f, const RunConfig *cfg, char (*policies)[SPEC_MAX_TEXT], int n);
    const char *why;
} IdleFlag;

static int no_timeline(const Flags *f, const RunConfig *cfg, char (*policies)[SPEC_MAX_TEXT], int n)
{
    (void)cfg, (void)policies, (void)n;
    return !f->run.timeline;
}

static int no_buckets(const Flags *f, const RunConfig *cfg, char (*policies)[SPEC_MAX_TEXT], int n)
{
    (void)f, (void)policies, (void)n;
    return cfg->overlap == OVERLAP_NONE || cfg->overlap == OVERLAP_TENSOR;
}

/* fifo on parameter servers at the transfer level sends BytePS's partitions, not DDP's buckets
 * (schedules/schedule.c's prefill; driver_scheduled). */
static int ps_partitions(const Flags *f, const RunConfig *cfg, char (*policies)[SPEC_MAX_TEXT],
                         int n)
{
    (void)f, (void)policies, (void)n;
    return coll_algo_servers(cfg->algo) && cfg->backend == COLL_TRANSFER &&
           (cfg->overlap == OVERLAP_DDP || cfg->overlap == OVERLAP_LAYER) &&
           (!cfg->schedule || schedule_spec_is_fifo(cfg->schedule));
}

/* Horovod's fused calls (step_plan_hvd.c) are the buckets of a costed step beside the backward
 * (--overlap ddp, no schedule engine); elsewhere its threshold sizes nothing. */
static int hvd_plan(const RunConfig *cfg)
{
    return cfg->workload && cfg->costs && cfg->costs->horovod.present &&
           cfg->overlap == OVERLAP_DDP && !driver_scheduled(cfg);
}

static int no_hvd_fusion(const Flags *f, const RunConfig *cfg, char (*policies)[SPEC_MAX_TEXT],
                         int n)
{
    (void)f, (void)policies, (void)n;
    return !hvd_plan(cfg);
}

static int hvd_buckets(const Flags *f, const RunConfig *cfg, char (*policies)[SPEC_MAX_TEXT], int n)
{
    (void)f, (void)policies, (void)n;
    return hvd_plan(cfg);
}

static int ideal_costs(const Flags *f, const RunConfig *cfg, char (*policies)[SPEC_MAX_TEXT], int n)
{
    (void)f, (void)policies, (void)n;
    return !cfg->costs || cfg->costs->ideal;
}

int run_policy_uses_compressor(const char *spec)
{
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(spec, ":@"), spec);
    const PolicyOps *ops = policy_find(name); /* a built-in's mode; a plugin's is unknown here */
    return !strchr(spec, '@') && strcmp(name, "sync") != 0 &&
           !(ops && ops->mode == POLICY_PERIODIC);
}

/* No policy uses --compressor: each is sync (dense) or names its own (POLICY@COMPRESSOR). An
 * explicit --compressor none agrees with them and is not noted (reproduce's recipes say it). */
static int no_compressor(const Flags *f, const RunConfig *cfg, char (*policies)[SPEC_MAX_TEXT],
                         int n)
{
    (void)f;
    if (cfg->compressor && strncmp(cfg->compressor, "none", 4) == 0 &&
        (cfg->compressor[4] == '\0' || cfg->compressor[4] == ':'))
        return 0;
    for (int i = 0; i < n; i++)
        if (run_policy_uses_compressor(policies[i])) return 0;
    return 1;
}

/* A single run (run, bench, replay of one policy): no plots to skip (--no-plots), no speedup to
 * band (--cost-band: compare's). */
static int single_run(const Flags *f, const RunConfig *cfg, char (*policies)[SPEC_MAX_TEXT], int n)
{
    (void)cfg, (void)policies, (void)n;
    return f->mode == RUN_MODE_RUN;
}

/* A single run that prices no band: bench bands its step time (cmd_bench.c), run has nothing to. */
static int no_band(const Flags *f, const RunConfig *cfg, char (*policies)[SPEC_MAX_TEXT], int n)
{
    return single_run(f, cfg, policies, n) && !f->bench;
}

/* ZeRO-3's schedule (fsdp_args.c) exists only beside the compute: --sharding zero3 under
 * --overlap ddp on DDP's streams (step_plan.c's units, --zeropp's too); elsewhere its flags would
 * change nothing. */
static int no_fsdp(const Flags *f, const RunConfig *cfg, char (*policies)[SPEC_MAX_TEXT], int n)
{
    (void)f, (void)policies, (void)n;
    return cfg->sharding != SHARD_ZERO3 || cfg->overlap != OVERLAP_DDP || driver_scheduled(cfg);
}

#define FSDP_WHY                                                                                   \
    "it schedules ZeRO-3's all-gathers and reduce-scatters beside the compute: add --sharding "    \
    "zero3 (with --overlap ddp, the default with --workload; not with a --schedule other than "    \
    "fifo)"

static const IdleFlag IDLE[] = {
    {"fsdp-unit", 1, no_fsdp, FSDP_WHY},
    {"backward-prefetch", 1, no_fsdp, FSDP_WHY},
    {"forward-prefetch", 1, no_fsdp, FSDP_WHY},
    {"limit-all-gathers", 1, no_fsdp, FSDP_WHY},
    {"reshard-after-forward", 1, no_fsdp, FSDP_WHY},
    {"rs-comm", 1, no_fsdp, FSDP_WHY},
    {"cost-band", 1, no_band,
     "the band is a speedup's, over the seeds and draws of the costs: bellows compare's"},
    {"timeline-steps", 1, no_timeline, "the steps a timeline keeps; add --timeline FILE"},
    {"bucket-mb", 0, no_buckets,
     "DDP's buckets form only with --overlap ddp or layer (the default with --workload or a "
     "--schedule); this run has no overlap"},
    {"bucket-mb", 0, ps_partitions,
     "on parameter servers fifo sends each tensor as its gradient is ready, in 4,096,000-byte "
     "partitions (BytePS's), not in DDP's buckets"},
    {"bucket-mb", 0, hvd_buckets,
     "Horovod's fused calls take the place of DDP's buckets (--horovod-fusion sizes them)"},
    {"horovod-fusion", 0, no_hvd_fusion,
     "Horovod fuses the tensors its cycles find ready beside the backward of a --workload, with "
     "--overlap ddp (the default) and no --schedule; here only its cycle prices the rounds"},
    {"transport", 0, ideal_costs,
     "it picks the cost profile's share of the links, and --costs ideal gives the links whole"},
    {"compressor", 0, no_compressor,
     "no policy here compresses with it (sync sends dense gradients, a periodic policy averages "
     "dense parameters; POLICY@COMPRESSOR names its own)"},
    {"no-plots", 0, single_run, "a single run draws no plots (bellows plot DIR draws them)"},
};

static int in_table(const Flags *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->opts[i].name, name) == 0) return 1;
    return 0;
}

unsigned run_idle_flags(const Flags *f, const RunConfig *cfg, char (*policies)[SPEC_MAX_TEXT],
                        int n)
{
    unsigned idle = 0;
    for (size_t k = 0; k < sizeof IDLE / sizeof *IDLE; k++) {
        const IdleFlag *x = &IDLE[k];
        if (in_table(f, x->flag) && cli_given(f->opts, f->n, f->set, x->flag) &&
            x->idle(f, cfg, policies, n))
            idle |= 1u << k;
    }
    return idle;
}

int run_note_idle(unsigned idle, BwError *err)
{
    for (size_t k = 0; k < sizeof IDLE / sizeof *IDLE; k++) {
        const IdleFlag *x = &IDLE[k];
        if (!(idle >> k & 1u)) continue;
        if (x->refuse)
            return bw_fail(err, BW_EUSAGE, "--%s: has no effect alone: %s", x->flag, x->why);
        fprintf(stderr, "bellows: note: --%s has no effect here: %s\n", x->flag, x->why);
    }
    return BW_OK;
}

int run_note_idle_flags(const Flags *f, const RunConfig *cfg, char (*policies)[SPEC_MAX_TEXT],
                        int n, BwError *err)
{
    return run_note_idle(run_idle_flags(f, cfg, policies, n), err);
}
