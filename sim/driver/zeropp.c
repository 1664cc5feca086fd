/* zeropp.c: ZeRO++'s three collectives under --sharding zero3 (--zeropp; issue 50 item 4; Wang et
 * al., "ZeRO++: Extremely Efficient Collective Communication for Giant Model Training", 2023,
 * arXiv:2306.10209, its design of qwZ, hpZ and qgZ; DeepSpeed's implementation:
 * deepspeed/runtime/zero/ partition_parameters.py (CUDAQuantizer, the secondary partition),
 * deepspeed/runtime/comm/ coalesced_collectives.py (all_to_all_quant_reduce) and
 * csrc/quantization/):
 *
 *   qwZ  each rank block-quantizes its shard of the parameters (int8 or int4, one fp32 scale a
 *        block of at most 8000 values: blockq.h) before the all-gather, and the gathered
 *        weights are dequantized: the forward and the backward use them;
 *   hpZ  each node keeps a secondary copy of the parameters sharded over its G GPUs, so the
 *        backward's all-gather runs on the node's communicator;
 *   qgZ  the gradients' reduce-scatter becomes a hierarchical all-to-all of int4 blocks: inside
 *        the node, dequantize and sum, quantize again, across the nodes, dequantize and sum
 *        (all_to_all_quant_reduce).
 *
 * The small model's step really goes through qwZ and qgZ (its accuracy changes); the plan's
 * builder rules price the bytes and the quantization's encode and decode (a cost profile's
 * `quantise` rate, as the compressors are priced). The fp32 master shard stays fp32. */
#include "exec_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blockq.h"
#include "costs.h"
#include "xalloc.h"

/* ---- the flag ---- */

static int zpp_item(const char *it, ZeroPP *z, BwError *err)
{
    int *slot = NULL, val = 1;
    if (strcmp(it, "qwz") == 0 || strcmp(it, "qwz:int8") == 0)
        slot = &z->qwz_bits, val = 8;
    else if (strcmp(it, "qwz:int4") == 0)
        slot = &z->qwz_bits, val = 4;
    else if (strcmp(it, "hpz") == 0)
        slot = &z->hpz;
    else if (strcmp(it, "qgz") == 0)
        slot = &z->qgz;
    if (!slot)
        return bw_fail(err, BW_EUSAGE,
                       "--zeropp: '%s' is not one of qwz, qwz:int8, qwz:int4, hpz, qgz "
                       "(a comma-separated list)",
                       it);
    if (*slot) return bw_fail(err, BW_EUSAGE, "--zeropp: '%s' is given twice", it);
    *slot = val;
    return BW_OK;
}

int zeropp_parse(const char *spec, ZeroPP *z, BwError *err)
{
    *z = (ZeroPP){0};
    if (!spec) return BW_OK;
    char buf[64];
    if (!*spec || strlen(spec) >= sizeof buf)
        return bw_fail(err, BW_EUSAGE,
                       "--zeropp: expected a comma-separated list of qwz[:int8|int4], hpz and "
                       "qgz, got '%.80s'",
                       spec);
    strcpy(buf, spec);
    char *save = NULL;
    int rc = BW_OK, items = 0;
    for (char *it = strtok_r(buf, ",", &save); it && rc == BW_OK; it = strtok_r(NULL, ",", &save))
        rc = zpp_item(it, z, err), items++;
    if (rc == BW_OK && (items == 0 || spec[strlen(spec) - 1] == ',' || strstr(spec, ",,")))
        rc = bw_fail(err, BW_EUSAGE, "--zeropp: an empty item in '%s'", spec);
    return rc;
}

int zeropp_on(const ZeroPP *z)
{
    return z->qwz_bits || z->hpz || z->qgz;
}

int zeropp_check(const RunConfig *cfg, BwError *err)
{
    const ZeroPP *z = &cfg->zeropp;
    if (!zeropp_on(z)) return BW_OK;
    if (cfg->sharding != SHARD_ZERO3)
        return bw_fail(err, BW_EUSAGE,
                       "--zeropp: ZeRO++'s collectives replace ZeRO-3's; add --sharding zero3 "
                       "(given: --sharding %s)",
                       driver_sharding_name(cfg->sharding));
    if (!driver_costed(cfg))
        return bw_fail(err, BW_EUSAGE,
                       "--zeropp: its collectives are stages of a costed step's plan; add "
                       "--workload NAME (or --overlap ddp)");
    /* beside the compute the reduce-scatters' own lane (cost_shard.c) would run qgZ's
     * all-to-all inside the node beside hpZ's backward all-gather on the same node's ring, whose
     * messages a communicator matches in one order */
    if (z->hpz && z->qgz && cfg->fsdp.rs_own && cfg->overlap == OVERLAP_DDP)
        return bw_fail(err, BW_EUSAGE,
                       "--rs-comm own: with --zeropp hpz and qgz both would run on the node's "
                       "ring from two lanes; use --rs-comm shared or drop hpz or qgz");
    return BW_OK;
}

const char *zeropp_name(const ZeroPP *z, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s%s%s",
             z->qwz_bits == 8   ? "qwz:int8"
             : z->qwz_bits == 4 ? "qwz:int4"
                                : "",
             z->qwz_bits && (z->hpz || z->qgz) ? "," : "", z->hpz ? "hpz" : "",
             z->hpz && z->qgz ? "," : "", z->qgz ? "qgz" : "");
    return buf;
}

/* ---- the nodes' communicators ---- */

/* Each node's ring of its G GPUs (ranks nG .. nG+G-1, cluster.h), its books its ranks' in
 * run->comm: on the hierarchical topology over the intra-node links (their bandwidth, latency
 * and the profile's share of them), elsewhere over the GPUs' own NICs. */
int zpp_init(DriverRun *run, BwError *err)
{
    const ZeroPP *z = &run->cfg->zeropp;
    run->zpp.mean_step = -1;
    const Cluster *cl = &run->cluster;
    run->zpp.G = cl->gpus_per_node > 0 ? cl->gpus_per_node : 1;
    run->zpp.nodes = run->P / run->zpp.G;
    if (!run->cost || run->fast || !(z->hpz || z->qgz) || run->zpp.G < 2) return BW_OK;
    Cluster sub = *cl;
    sub.workers = run->zpp.G;
    sub.topology = TOPO_STAR;
    sub.gpus_per_node = 1;
    sub.islands = 0;
    sub.platform_file = NULL;
    sub.hosts = NULL;
    if (cl->topology == TOPO_HIERARCHICAL && cl->intra_bandwidth_Bps > 0) {
        sub.bandwidth_Bps = cl->intra_bandwidth_Bps;
        sub.latency_s = cl->intra_latency_s;
        sub.link_share = cl->intra_link_share;
    }
    run->zpp.node = bw_xcalloc((size_t)run->zpp.nodes, sizeof *run->zpp.node, "zeropp.c: nodes");
    for (int k = 0; k < run->zpp.nodes; k++)
        if (!(run->zpp.node[k] = coll_comm_create_group(&sub, run->comm, k * run->zpp.G)))
            return bw_fail(err, BW_ERUNTIME, "out of memory for node %d's ring", k);
    return BW_OK;
}

void zpp_free(DriverRun *run)
{
    if (!run->zpp.node) return;
    for (int k = 0; k < run->zpp.nodes; k++) coll_comm_free(run->zpp.node[k]);
    free(run->zpp.node);
    run->zpp.node = NULL;
}

Comm *zpp_node_comm(const Worker *me, int *rank)
{
    const DriverRun *run = me->run;
    *rank = me->rank % run->zpp.G;
    return run->zpp.node[me->rank / run->zpp.G];
}

/* ---- the small model's step ---- */

void zpp_qwz_weights(const DriverRun *run, const Model *m, const float *params, float *out)
{
    const size_t P = (size_t)run->P;
    const int bits = run->cfg->zeropp.qwz_bits;
    memcpy(out, params, m->n_params * sizeof(float));
    for (int l = 0; l < m->n_layers; l++) {
        const LayerView *v = &m->layers[l];
        const size_t n = layer_size(v), s = (n + P - 1) / P, block = blockq_qwz_block(s);
        /* ZeRO-3 partitions each parameter over the ranks (ceil(n / P) each, DeepSpeed's
         * ds_tensor); each rank quantizes its own partition before the all-gather */
        for (size_t lo = 0; lo < n; lo += s)
            blockq_roundtrip(params + v->offset + lo, out + v->offset + lo, n - lo < s ? n - lo : s,
                             block, bits);
    }
}

/* qgZ's rule (coalesced_collectives.py): a tensor of more than one dimension whose size divides
 * by 2 P goes through the quantized all-to-all, in max(rows, cols, P) groups; the others are
 * reduce-scattered as before. Returns its block size, or 0 for a plain reduce-scatter. */
static size_t qgz_block(int ndim, int rows, int cols, size_t numel, size_t P)
{
    if (ndim < 2 || numel % (2 * P) != 0) return 0;
    size_t groups = (size_t)(rows > cols ? rows : cols);
    if (groups < P) groups = P;
    return (numel + groups - 1) / groups;
}

/* One layer of the qgZ mean: each node's sum of its GPUs' int4-decoded gradients, quantized
 * again in each GPU's slice of n / G values and decoded, summed over the nodes, over P. */
static void qgz_layer(const DriverRun *run, const LayerView *v, size_t block, float *tmp,
                      float *part, float *out)
{
    const int P = run->P, G = run->zpp.G;
    const size_t n = layer_size(v), slice = n / (size_t)G;
    for (size_t i = 0; i < n; i++) out[i] = 0.0f;
    for (int k = 0; k < P / G; k++) {
        for (size_t i = 0; i < n; i++) part[i] = 0.0f;
        for (int g = 0; g < G; g++) {
            blockq_roundtrip(run->w[k * G + g].model->grads + v->offset, tmp, n, block, 4);
            for (size_t i = 0; i < n; i++) part[i] += tmp[i];
        }
        for (int j = 0; j < G; j++)
            blockq_roundtrip(part + (size_t)j * slice, part + (size_t)j * slice, slice, block, 4);
        for (size_t i = 0; i < n; i++) out[i] += part[i];
    }
    for (size_t i = 0; i < n; i++) out[i] /= (float)P;
}

int zpp_qgz_mean(DriverRun *run, long step, float *out)
{
    if (run->zpp.mean_step == step) return 0;
    run->zpp.mean_step = step;
    const Model *m = run->w[0].model;
    const int P = run->P;
    float *tmp = bw_xcalloc(2 * m->n_params, sizeof(float), "zeropp.c: the qgZ buffers");
    float *part = tmp + m->n_params;
    for (int l = 0; l < m->n_layers; l++) {
        const LayerView *v = &m->layers[l];
        const size_t n = layer_size(v);
        const size_t block = qgz_block(v->ndim, v->rows, v->cols, n, (size_t)P);
        if (block) {
            qgz_layer(run, v, block, tmp, part, out + v->offset);
            continue;
        }
        for (size_t i = 0; i < n; i++) { /* a plain reduce-scatter: the mean, in rank order */
            float sum = 0.0f;
            for (int w = 0; w < P; w++) sum += run->w[w].model->grads[v->offset + i];
            out[v->offset + i] = sum / (float)P;
        }
    }
    free(tmp);
    return 1;
}
