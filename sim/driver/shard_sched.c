/* shard_sched.c: ZeRO-3's FSDP schedule over the step plan (issue 50 items 1-3; step_plan.h,
 * docs/guide/sharded.md). The plan's builder (step_plan.c) hands ZeRO-3 beside the compute to
 * fsdp_plan_create: the layers grouped into units as FSDP's auto_wrap_policy groups modules, each
 * unit's all-gather one collective (FSDP's FlatParameter, all-gathered whole) and its
 * reduce-scatter one bucket. fsdp_walk is the step as FSDP's hooks issue it
 * (torch/distributed/fsdp/_runtime_utils.py), shared by DDP's streams (cost_shard.c) and the
 * closed form (cost_fast.c) so that both decide the same:
 *   - the pre-forward hook all-gathers its unit unless it was prefetched (_pre_forward_unshard);
 *     with forward_prefetch it then prefetches the next unit in the forward's order, before the
 *     current forward computation (_prefetch_handle, _PrefetchMode.FORWARD);
 *   - the pre-backward hook all-gathers its unit (again: FULL_SHARD resharded it after the
 *     forward, _post_forward_reshard) unless prefetched, then with BACKWARD_PRE prefetches the
 *     next unit in the backward's order before this unit's gradients are computed
 *     (_pre_backward_hook);
 *   - the post-backward hook reshards the unit, with BACKWARD_POST prefetches the next one
 *     (_post_backward_reshard), then reduce-scatters the unit's gradients (_reduce_grad): the
 *     prefetched all-gather is issued before this reduce-scatter;
 *   - limit_all_gathers: the CPU waits before an all-gather when _max_num_inflight_all_gathers
 *     gathered units are not yet freed (_limiter_utils.py). bellows has no CPU running ahead of
 *     the GPU (the compute issues each collective at its hook's instant), so the limit counts
 *     the all-gathers issued whose unit's compute has not ended, and an all-gather it holds back
 *     is issued at its own unit's turn; prefetching is one unit ahead, as FSDP's
 *     backward_prefetch and forward_prefetch are (their _ExecOrderData limits are 1).
 * reshard_after_forward off (ShardingStrategy.SHARD_GRAD_OP) keeps every unit gathered from its
 * forward to its backward: no all-gather in the backward, the whole fp16 model in memory. */
#include "driver_impl.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

static double layer_params(const Workload *wl, int l)
{
    double n = 0;
    for (int t = 0; t < wl->layers[l].n_tensors; t++)
        n += (double)wl->tensors[wl->layers[l].first_tensor + t].numel;
    return n;
}

/* The length of a layer's block key: its name up to its first all-digit component
 * ("model.layers.7" of "model.layers.7.mlp.up_proj", "layer2.1" of "layer2.1.conv1"), 0 when
 * the name has none (an embedding, a head: a unit alone). */
static size_t block_key(const char *name)
{
    const char *c = name;
    while (*c) {
        const char *end = c + strcspn(c, ".");
        int digits = end > c;
        for (const char *d = c; d < end; d++) digits &= *d >= '0' && *d <= '9';
        if (digits) return (size_t)(end - name);
        if (!*end) break;
        c = end + 1;
    }
    return 0;
}

static int same_block(const Workload *wl, int a, int b)
{
    const char *x = wl->layers[a].name, *y = wl->layers[b].name;
    const size_t k = block_key(x);
    return k > 0 && k == block_key(y) && strncmp(x, y, k) == 0;
}

/* Consecutive layers into units: N layers a unit (one by default), or as
 * size_based_auto_wrap_policy (torch/distributed/fsdp/wrap.py) wraps a module once its
 * parameters reach min_num_params, a unit closed once it holds unit_min_params, or as
 * transformer_auto_wrap_policy wraps each transformer block (ModuleWrapPolicy of the block's
 * class), one unit a block: the layers whose names share their block key. A unit holds
 * parameters: a layer without any joins the unit after it (the last ones the unit before), and
 * the layers left over at the end, which FSDP leaves to the root unit, are a unit of their own. */
int fsdp_units(const Workload *wl, const FsdpSched *s, int *first)
{
    const int per = s->unit_layers > 0 ? s->unit_layers : 1;
    if (wl->n_params == 0) return 0;
    int n = 0, layers = 0;
    double acc = 0;
    first[0] = 0;
    for (int l = 0; l < wl->n_layers; l++) {
        const double p = layer_params(wl, l);
        acc += p;
        layers += p > 0;
        const int full = s->unit_blocks ? l + 1 == wl->n_layers || !same_block(wl, l, l + 1)
                         : s->unit_min_params > 0 ? acc >= s->unit_min_params
                                                  : layers >= per;
        if (full && acc > 0) {
            first[++n] = l + 1;
            acc = 0;
            layers = 0;
        }
    }
    if (acc > 0)
        first[++n] = wl->n_layers; /* the rest, a unit of its own */
    else
        first[n] = wl->n_layers; /* parameterless layers at the end join the last unit */
    return n;
}

static size_t unit_tensor_range(const Workload *wl, const int *first, int u, int *t0)
{
    int lo = -1, hi = -1;
    for (int l = first[u]; l < first[u + 1]; l++) {
        const WorkloadLayer *L = &wl->layers[l];
        if (L->n_tensors == 0) continue;
        if (lo < 0) lo = L->first_tensor;
        hi = L->first_tensor + L->n_tensors - 1;
    }
    *t0 = lo;
    return lo < 0 ? 0 : (size_t)(hi - lo + 1);
}

/* The units (PlanUnit: its layers, parameters and all-gather) and their reduce-scatters as the
 * plan's buckets, in the backward's order: unit u's tensors in reverse (CostModel.order), ready
 * after its first layer's backward. Replaces DDP's buckets (plan_create). */
void fsdp_plan_create(DriverRun *run, StepPlan *p)
{
    CostModel *cm = run->cost;
    const Workload *wl = cm->wl;
    int *first = bw_xcalloc((size_t)wl->n_layers + 1, sizeof *first, "the FSDP units");
    const int U = fsdp_units(wl, &run->cfg->fsdp, first);
    if (U == 0) {
        free(first);
        return;
    }
    p->unit = bw_xcalloc((size_t)U, sizeof *p->unit, "the FSDP units");
    p->n_units = p->n_buckets = U;
    const int n = wl->n_tensors;
    for (int u = 0; u < U; u++) {
        PlanUnit *un = &p->unit[u];
        un->first_layer = first[u];
        un->n_layers = first[u + 1] - first[u];
        int t0;
        const size_t nt = unit_tensor_range(wl, first, u, &t0);
        for (size_t i = 0; i < nt; i++) un->floats += wl->tensors[t0 + (int)i].numel;
        un->first_tensor = t0;
        un->n_tensors = (int)nt;
        for (int k = 0; k < 2; k++) {
            un->gather[k][0] =
                (PlanStage){.kind = STAGE_COLL,
                            .comm = PLAN_COMM_RUN,
                            .shard = PLAN_SHARD_AG,
                            .msg = {COMPRESS_ALLGATHER, 0}, /* plan_create's */
                            .call_s = cm->prof ? cm->prof->collective_s : PLAN_NO_CALL};
            un->n_gather[k] = 1;
        }
        assert(nt > 0 && cm->order[n - 1 - t0] == t0);
        p->bucket[U - 1 - u] = (PlanBucket){.tensors = cm->order + (n - 1 - (t0 + (int)nt - 1)),
                                            .n_tensors = (int)nt,
                                            .layer = first[u],
                                            .queued = -1};
    }
    free(first);
}

static int limit_of(const FsdpSched *s)
{
    return s->limit == 0 ? FSDP_DEFAULT_LIMIT : s->limit;
}

/* Whether one more all-gather may be issued with `held` issued whose unit's compute is not
 * done. */
static int may_gather(const FsdpSched *s, int held)
{
    const int lim = limit_of(s);
    return lim == FSDP_NO_LIMIT || held < lim;
}

/* The most fp16 bytes of gathered units a GPU holds: the largest unit's, once for the unit
 * computing and once more when a prefetch holds the next one beside it (forward prefetch in the
 * forward, BACKWARD_PRE in the backward, when the limit allows two); BACKWARD_POST frees the
 * unit before it prefetches the next. Without resharding after the forward every unit stays
 * gathered until its backward: the whole model's. Not counted: the unsharded gradient of the
 * unit in its backward (FSDP's docs count it at the peak too) and activations. */
double fsdp_gathered_bytes(const Workload *wl, const FsdpSched *s)
{
    if (s->keep_after_forward) return 2.0 * (double)wl->n_params;
    int *first = bw_xcalloc((size_t)wl->n_layers + 1, sizeof *first, "the FSDP units");
    const int U = fsdp_units(wl, s, first);
    double largest = 0;
    for (int u = 0; u < U; u++) {
        double n = 0;
        for (int l = first[u]; l < first[u + 1]; l++) n += layer_params(wl, l);
        if (n > largest) largest = n;
    }
    free(first);
    const int two = U > 1 && may_gather(s, 1);
    const int fwd = 1 + (two && s->forward), bwd = 1 + (two && s->backward == FSDP_PREFETCH_PRE);
    return 2.0 * largest * (fwd > bwd ? fwd : bwd);
}

const PlanStage *fsdp_req_stages(const StepPlan *p, int req, int *n)
{
    const int U = p->n_units;
    if (req < 2 * U) {
        const int bw = req >= U;
        const PlanUnit *un = &p->unit[bw ? 2 * U - 1 - req : req];
        *n = un->n_gather[bw];
        return un->gather[bw];
    }
    const PlanBucket *b = &p->bucket[U - 1 - (req - 2 * U)];
    *n = b->n_stages;
    return &p->stage[b->first_stage];
}

/* The step's turns as FSDP's hooks issue their collectives (the file's header). */
void fsdp_walk(const StepPlan *p, const FsdpSched *s, const FsdpOps *o)
{
    const int U = p->n_units, T = 2 * U, rs_lane = s->rs_own ? 1 : 0;
    int held = 0;       /* all-gathers issued whose turn has not ended */
    int prefetched = 0; /* this turn's all-gather was issued at the turn before */
    for (int t = 0; t < T; t++) {
        const int bw = t >= U, u = bw ? T - 1 - t : t;
        const int need = !bw || !s->keep_after_forward;
        const int next = t + 1 < T && (t + 1 < U || !s->keep_after_forward);
        if (need && !prefetched) {
            o->issue(o->arg, t, 0);
            held++;
        }
        prefetched = 0;
        const int pre = next && (bw ? s->backward == FSDP_PREFETCH_PRE : s->forward && t + 1 < U);
        if (pre && may_gather(s, held)) {
            o->issue(o->arg, t + 1, 0);
            held++;
            prefetched = 1;
        }
        if (need) o->wait(o->arg, t);
        o->compute(o->arg, u, bw);
        held -= need;
        if (!bw) continue;
        if (next && !prefetched && s->backward == FSDP_PREFETCH_POST && may_gather(s, held)) {
            o->issue(o->arg, t + 1, 0);
            held++;
            prefetched = 1;
        }
        o->issue(o->arg, T + u, rs_lane);
    }
    for (int u = U - 1; u >= 0; u--) o->wait(o->arg, T + u);
}
