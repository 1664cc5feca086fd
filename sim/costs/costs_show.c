/* costs_show.c: `bellows costs NAME|FILE.json`, one profile's every rate with its software
 * generation and its source (issue 48: a Top-k verdict that rests on PyTorch 1.1's torch.topk must
 * say so). The profile is checked by the parser first (costs_parse); the sources and "software"
 * labels are read from the same JSON text, where each object of the format may carry them
 * (sim/costs/README.md). A constant without its own "software" is of the profile's. */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "costs_impl.h"
#include "infile.h"

static const char *str_of(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* "    software: S\n    source: X\n" of object o (the profile's software when o has none). */
static void print_about(FILE *out, const json_t *o, const char *software)
{
    const char *sw = str_of(o, "software"), *src = str_of(o, "source");
    fprintf(out, "    software: %s\n", sw ? sw : software[0] ? software : "not stated");
    fprintf(out, "    source: %s\n", src ? src : "not stated");
}

static void print_compute(FILE *out, const CostProfile *p, const json_t *eff)
{
    static const char *const prec[] = {"fp32", "tf32", "bf16"};
    for (int i = 0; i < 3; i++)
        if (p->efficiency[i] > 0)
            fprintf(out, "  compute %s: %.4g of the GPU's peak\n", prec[i], p->efficiency[i]);
    for (int w = 0; w < p->n_workload_eff; w++)
        for (int i = 0; i < 3; i++)
            if (p->workload_eff[w].efficiency[i] > 0)
                fprintf(out, "  compute %s for %s: %.4g of the peak, in its direct flops\n",
                        prec[i], p->workload_eff[w].workload, p->workload_eff[w].efficiency[i]);
    if (eff) print_about(out, eff, p->software);
    const json_t *wl = json_object_get(eff, "workloads");
    if (wl && str_of(wl, "source")) {
        fprintf(out, "  compute of the workloads above\n");
        print_about(out, wl, p->software);
    }
}

static void print_ops(FILE *out, const CostProfile *p, const json_t *ops)
{
    for (int op = 0; op < COST_OP_COUNT; op++) {
        const CostOpRate *r = &p->ops[op];
        if (!r->present) continue;
        fprintf(out, "  op %s: %g kernel%s a call;", costs_op_name(op), r->kernels,
                r->kernels == 1 ? "" : "s");
        if (r->n_points == 1)
            fprintf(out, " %.4g units/s at every size\n", r->points[0].rate);
        else
            for (int i = 0; i < r->n_points; i++)
                fprintf(out, " %.4g/s at %.3g%s", r->points[i].rate, r->points[i].size,
                        i + 1 < r->n_points ? "," : "\n");
        print_about(out, json_object_get(ops, costs_op_name(op)), p->software);
    }
}

static void print_networks(FILE *out, const CostProfile *p, const json_t *nets)
{
    for (int n = 0; n < COST_NET_COUNT; n++) {
        const CostNetShare *s = &p->net[n];
        if (!s->present) continue;
        if (s->busbw)
            fprintf(out, "  network %s: nccl-tests' busbw, %d and %d tables, on %.4g Gbit/s\n",
                    costs_net_name(n), s->n_tables[0], s->n_tables[1], s->link_Bps * 8 / 1e9);
        else
            fprintf(out, "  network %s: allreduce %.3g, allgather %.3g of the link",
                    costs_net_name(n), s->allreduce, s->allgather);
        if (!s->busbw && s->cap_Bps > 0)
            fprintf(out, ", at most %.3g Gbit/s a socket stream x %dx%d NCCL sockets",
                    s->socket_cap_Bps * 8 / 1e9, s->threads, s->socks);
        if (!s->busbw) fprintf(out, "\n");
        /* the network's software is NCCL's, not the framework's: say so unless it is stated */
        print_about(out, json_object_get(nets, costs_net_name(n)), "NCCL (not PyTorch's)");
    }
}

static void print_all(FILE *out, const CostProfile *p, const json_t *root)
{
    fprintf(out, "%s: %s on the %s\n", p->name, p->implementation, p->gpu);
    fprintf(out, "  software   %s\n", p->software[0] ? p->software : "not stated");
    if (p->device[0])
        fprintf(out, "  measured   on %s (%s), %s\n", p->device, p->versions, p->date);
    fprintf(out, "  validated  %s\n",
            p->validation[0] ? p->validation : "against no published row (bellows validate)");
    fprintf(out, "  source     %s\n\nevery rate, its software generation and its source:\n",
            p->source[0] ? p->source : "not stated");
    print_compute(out, p, json_object_get(root, "efficiency"));
    fprintf(out, "  fixed: %.3g us a tensor, %.3g us a kernel, %.3g us a collective call",
            1e6 * p->tensor_s, 1e6 * p->kernel_s, 1e6 * p->collective_s);
    if (p->cycle_s > 0) fprintf(out, ", a cycle of %.3g ms", 1e3 * p->cycle_s);
    fprintf(out, "\n");
    print_about(out, json_object_get(root, "fixed"), p->software);
    print_ops(out, p, json_object_get(root, "ops"));
    if (p->n_hooks) { /* how the framework runs a compressor's hook, and its source */
        costs_print_hooks(out, p);
        print_about(out, json_object_get(root, "hooks"), p->hook_framework);
    }
    print_networks(out, p, json_object_get(root, "networks"));
    costs_print_horovod(out, p, json_object_get(root, "horovod"));
    if (p->interference > 1) {
        fprintf(out, "  interference: compute beside a collective %.4gx as long\n",
                p->interference);
        print_about(out, json_object_get(root, "interference"), p->software);
    }
    for (int i = 0; i < p->n_sched_cost; i++) {
        fprintf(out, "  schedule %s: %.3g us a partition\n", p->sched_cost[i].schedule,
                1e6 * p->sched_cost[i].partition_s);
        print_about(out, json_object_get(root, "schedules"), p->software);
    }
}

int costs_print_profile(FILE *out, const char *spec, BwError *err)
{
    const char *text = NULL;
    size_t len = 0;
    const int file =
        strchr(spec, '/') || (strlen(spec) > 5 && !strcmp(spec + strlen(spec) - 5, ".json"));
    if (!file && !costs_builtin_text(spec, &text, &len)) {
        CostProfile *p = NULL; /* ideal, pytorch (no GPU here) or unknown: costs_load says which */
        int rc = costs_load(spec, "costs", NULL, &p, err);
        if (rc == BW_OK)
            fprintf(out, "%s: %s\n  source     %s\n", p->name, p->implementation, p->source);
        costs_free(p);
        return rc;
    }
    int rc = file ? infile_check("costs", spec, err) : BW_OK;
    CostProfile *p = NULL;
    if (rc == BW_OK) rc = costs_parse(file ? spec : NULL, text, len, "costs", spec, &p, err);
    if (rc != BW_OK) return rc;
    if (!file) costs_validation_text(spec, p->validation, sizeof p->validation);
    json_t *root = file ? json_load_file(spec, 0, NULL) : json_loadb(text, len, 0, NULL);
    print_all(out, p, root); /* root parsed already: costs_parse read the same text */
    json_decref(root);
    costs_free(p);
    return BW_OK;
}
