/* fuzz_costs.c: libFuzzer harness for the cost-profile reader (sim/costs/costs_json.c) and
 * what a run asks of a profile (sim/costs/costs.c). Each input is a profile's JSON text, parsed
 * as `--costs FILE.json` would parse it. Besides no crash, leak or undefined behaviour, the
 * properties a profile the reader accepts must have: its names printable (no control
 * character: they are printed in the "# price:" header); every constant finite and in its
 * range (fixed costs in (0, 1] s, kernels in (0, 1e6], shares in (0, 1], efficiencies in
 * [CLUSTER_MIN_EFFICIENCY, 1] and giving its GPU a rate bellows simulates); every rate table of
 * 1 to 16 points, sizes rising, rates in [CLUSTER_MIN_RATE, CLUSTER_MAX_FLOPS]; an operation's
 * seconds finite, positive and between what its slowest and fastest rates give, at any size
 * (1e-300 to 1e300); and the link check on any bandwidth either passes, leaving a simulable
 * rate, or refuses in one line naming the field. A refusal is one line (no newline) naming
 * the flag, a usage error or out of memory. Built and run by tests/fuzz/run.sh. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "costs_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_text(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) abort();
}

static void check_rate(const CostProfile *p, CostOp op)
{
    const CostOpRate *r = &p->ops[op];
    if (r->n_points < 1 || r->n_points > COSTS_MAX_POINTS) abort();
    if (!(r->kernels > 0 && r->kernels <= 1e6)) abort();
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < r->n_points; i++) {
        const CostPoint *pt = &r->points[i];
        if (!(pt->size > 0) || !isfinite(pt->size)) abort();
        if (i > 0 && !(pt->size > r->points[i - 1].size)) abort();
        if (!(pt->rate >= CLUSTER_MIN_RATE && pt->rate <= CLUSTER_MAX_FLOPS)) abort();
        lo = fmin(lo, pt->rate);
        hi = fmax(hi, pt->rate);
    }
    static const double sizes[] = {1e-300, 1e-5, 1, 3, 1e3, 2.5e7, 1e12, 1e200, 1e300};
    const double fixed = r->kernels * p->kernel_s;
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        double s = costs_op_seconds(p, op, sizes[k]);
        if (!isfinite(s) || !(s > 0)) abort();
        /* between the fastest and the slowest rate's price, rounding aside */
        double a = fixed + sizes[k] / hi, b = fixed + sizes[k] / lo;
        if (s < a * (1 - 1e-9) || s > b * (1 + 1e-9)) abort();
    }
}

static void check_profile(const CostProfile *p)
{
    check_text(p->name);
    check_text(p->implementation);
    check_text(p->gpu);
    check_text(p->source);
    check_text(p->device);
    check_text(p->versions);
    check_text(p->date);
    const GpuProfile *g = cluster_gpu_find(p->gpu);
    if (!g) abort();
    const double peak[3] = {g->fp32_flops, g->tf32_flops, g->bf16_flops};
    for (int i = 0; i < 3; i++) {
        double e = p->efficiency[i];
        if (e == 0) continue;
        if (!(e >= CLUSTER_MIN_EFFICIENCY && e <= 1)) abort();
        if (!(peak[i] * e >= CLUSTER_MIN_FLOPS && peak[i] * e <= CLUSTER_MAX_FLOPS)) abort();
    }
    const double fixed[] = {p->tensor_s, p->kernel_s, p->collective_s};
    for (int i = 0; i < 3; i++)
        if (!(fixed[i] > 0 && fixed[i] <= 1)) abort();
    if (!(p->cycle_s >= 0 && p->cycle_s <= 1)) abort();
    for (int op = 0; op < COST_OP_COUNT; op++)
        if (p->ops[op].present) check_rate(p, (CostOp)op);
    int nets = 0;
    for (int n = 0; n < COST_NET_COUNT; n++) {
        const CostNetShare *s = &p->net[n];
        if (!s->present) continue;
        nets++;
        if (!(s->allreduce > 0 && s->allreduce <= 1 && s->allgather > 0 && s->allgather <= 1))
            abort();
    }
    if (!nets) abort();
}

/* A refusal is one line, naming the flag. */
static void check_refusal(int rc, const BwError *err)
{
    if (rc != BW_EUSAGE && rc != BW_ERUNTIME) abort();
    if (strchr(err->msg, '\n') || strncmp(err->msg, "--costs", 7) != 0) abort();
}

/* The links of a run at a few bandwidths: a pass leaves a rate bellows simulates. */
static void check_links(CostProfile *p)
{
    static const double bws[] = {CLUSTER_MIN_BANDWIDTH_BPS, 1.25e9, CLUSTER_MAX_BANDWIDTH_BPS};
    snprintf(p->spec, sizeof p->spec, "fuzz.json");
    for (int n = 0; n < COST_NET_COUNT; n++)
        for (size_t k = 0; k < sizeof bws / sizeof *bws; k++) {
            BwError err = {{0}};
            int rc = costs_check_links(p, (CostNet)n, bws[k], 300e9, "--costs", &err);
            if (rc) {
                check_refusal(rc, &err);
                continue;
            }
            if (!p->net[n].present) continue;
            for (int ag = 0; ag < 2; ag++) {
                double x = costs_link_share(p, (CostNet)n, ag, bws[k]) * bws[k];
                if (!(x >= CLUSTER_MIN_RATE && x <= CLUSTER_MAX_BANDWIDTH_BPS)) abort();
            }
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    CostProfile *p = NULL;
    BwError err = {{0}};
    int rc = costs_parse(NULL, (const char *)data, size, "--costs", "fuzz.json", &p, &err);
    if (rc) {
        check_refusal(rc, &err);
        if (p) abort(); /* a complete profile or none */
        return 0;
    }
    check_profile(p);
    check_links(p);
    costs_free(p);
    return 0;
}
