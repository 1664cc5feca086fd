/* fsdp_args.c: ZeRO-3's schedule flags (issue 50 item 2; their table entries in run_args.c,
 * RunConfig.fsdp in driver.h, the schedule in sim/driver/shard_sched.c): --fsdp-unit,
 * --backward-prefetch, --forward-prefetch, --limit-all-gathers, --reshard-after-forward,
 * --rs-comm. The choices are checked by the flag table; --fsdp-unit here. Where they do nothing
 * (no ZeRO-3 beside the compute) flag_effect.c refuses them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "run_args.h"

/* The largest unit a --fsdp-unit may name: WORKLOAD_MAX-free bounds that a profile never
 * reaches (layers), and a petabyte of parameters. */
#define FSDP_MAX_UNIT_LAYERS (1 << 20)
#define FSDP_MAX_UNIT_MB     1e9

/* "layer", "block", N (layers with parameters a unit) or "size:MB" (MiB of fp32 parameters, as
 * --bucket-mb counts). */
static int parse_unit(const char *text, FsdpSched *s, BwError *err)
{
    if (!text || strcmp(text, "layer") == 0) return BW_OK;
    if (strcmp(text, "block") == 0) {
        s->unit_blocks = 1;
        return BW_OK;
    }
    char *end;
    errno = 0;
    if (strncmp(text, "size:", 5) == 0) {
        const double mb = strtod(text + 5, &end);
        if (errno || end == text + 5 || *end || !(mb > 0) || mb > FSDP_MAX_UNIT_MB)
            return bw_fail(err, BW_EUSAGE,
                           "--fsdp-unit: size:MB wants MiB of fp32 parameters above 0 (up to "
                           "%.0g), got '%s'",
                           FSDP_MAX_UNIT_MB, text);
        s->unit_min_params = mb * 1024 * 1024 / 4;
        return BW_OK;
    }
    const long n = strtol(text, &end, 10);
    if (errno || end == text || *end || n < 1 || n > FSDP_MAX_UNIT_LAYERS)
        return bw_fail(err, BW_EUSAGE,
                       "--fsdp-unit: expected layer, block, a number of layers a unit (1 to %d) "
                       "or size:MB, got '%s'",
                       FSDP_MAX_UNIT_LAYERS, text);
    s->unit_layers = (int)n;
    return BW_OK;
}

/* Whether the flag is in the command's table and was given (cli_given wants it in the table). */
static int given(const Flags *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->opts[i].name, name) == 0) return f->set[i];
    return 0;
}

static int is(const char *value, const char *want)
{
    return value && strcmp(value, want) == 0;
}

int fsdp_args_setup(const Flags *f, RunConfig *cfg, BwError *err)
{
    FsdpSched *s = &cfg->fsdp;
    *s = (FsdpSched){0};
    const RunOpts *o = &f->run;
    int rc = parse_unit(o->fsdp_unit, s, err);
    if (rc) return rc;
    s->backward = is(o->backward_prefetch, "post")   ? FSDP_PREFETCH_POST
                  : is(o->backward_prefetch, "none") ? FSDP_PREFETCH_NONE
                                                     : FSDP_PREFETCH_PRE;
    s->forward = is(o->forward_prefetch, "on");
    const int lim = o->limit_all_gathers; /* a table without the flag leaves it 0: the default */
    if (given(f, "limit-all-gathers") && lim != FSDP_DEFAULT_LIMIT)
        s->limit = lim == 0 ? FSDP_NO_LIMIT : lim;
    s->keep_after_forward = is(o->reshard_after_forward, "off");
    s->rs_own = is(o->rs_comm, "own");
    return BW_OK;
}
