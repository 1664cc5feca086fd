/* papers.c: the two source papers' settings, with where each figure comes from; the models
 * bellows trains in their place; and what a dense step of the real model costs on the papers'
 * GPU and network (the report's cost table). The runs charge the real model's costs themselves
 * (`--workload`, sim/driver/cost.c); the figures here come from the same workload profile, so
 * the report and the runs agree. Everything else is a constant table or a pure function of one. */
#include <assert.h>
#include <math.h>

#include "cluster.h"
#include "costs.h"
#include "reproduce_internal.h"
#include "workload.h"

/* Accordion: the repository's CIFAR-10 ResNet-18 runs (main.py: train_batch_size 128 per worker,
 * get_table_2.sh: --num-nodes 4, NCCL). The runs charge the resnet18-cifar profile's costs (the
 * kuangliu/pytorch-cifar ResNet-18 the code trains: `bellows workloads`). The GPU (p3.2xlarge,
 * one V100) is not stated in the text we could read: assumed, at bellows' default efficiency. */
static const PaperSetting ACCORDION_PAPER = {
    "ResNet-18 on CIFAR-10, 4 workers x 128 images",
    "uw-mad-dash/Accordion main.py and get_table_2.sh",
    "resnet18-cifar",
    "V100",
    CLUSTER_DEFAULT_EFFICIENCY,
    "assumed",
    4,
    128,
    25e-6,
    "assumed: TCP between cloud instances, not stated in the sources"};

/* ADPSGD: the paper's model, GPUs and batch could not be read (only the abstract). Its runs
 * charge ResNet-18's costs too, on the same assumed V100s and links: an assumption, since the
 * model is unknown (an earlier version assumed VGG-16 and derived a GPU rate to keep its
 * proportions; the profile's real costs replace that). */
static const PaperSetting ADPSGD_PAPER = {
    "8 workers (assumed); the model, the GPUs and the batch were not found",
    "Jiang & Agrawal, arXiv 2007.06134 (abstract only)",
    "resnet18-cifar",
    "V100",
    CLUSTER_DEFAULT_EFFICIENCY,
    "assumed",
    8,
    0,
    25e-6,
    "assumed: not stated in the sources"};

/* Schedules are the papers' 300 epochs scaled to 60 (the Accordion authors' check interval 10
 * becomes 2, the warm-up 5 becomes 1, the lr decays 152 and 252 become 30 and 50, the batch switch
 * 20 becomes 4: policies/accordion.c's paper=1 scales them the same way). The authors train with
 * 128 images per worker; the mlp does too, on half of Fashion-MNIST (58 steps an epoch: the
 * whole set would not fit the half hour; --quick and --smoke keep the 16,384 samples that the
 * large batch, 4 x 1024, needs). The cnn
 * and resnet cost 15x and 60x the mlp's math per sample: they train on subsets small enough for
 * the full reproduction's half hour, with 32 images per worker so that an epoch still has 50 and
 * 16 steps. The base lr is the rate per worker: --lr-scale workers multiplies it by 4 after the
 * warm-up, as the authors' code does (0.1 x 4 for ResNet-18 on CIFAR-10; 0.025 x 4 for these). */
static const SimModel SIM_MLP = {"mlp", {30000, 16384, 16384}, {10000, 5000, 500}, 1, 4, 128,
                                 0.025, {60, 60, 2},           {0.85, 0.84, 0.5}};
/* the batch setting's: the large batch (8x) takes 8x the lr, and 8 x 0.025 x 4 workers = 0.8
 * makes the mlp diverge (no batch norm to keep it in check): 0.01 gives the large batch a peak
 * of 0.32 (0.854 after 60 epochs on 20,000 samples; 0.04 x 4 reached 0.861) */
static const SimModel SIM_MLP_BATCH = {"mlp", {30000, 16384, 16384}, {10000, 5000, 500}, 1, 4, 128,
                                       0.01,  {60, 60, 2},           {0.85, 0.84, 0.5}};
static const SimModel SIM_CNN = {"cnn", {6400, 6400, 2048}, {2500, 2500, 500}, 1, 4, 32,
                                 0.025, {60, 60, 4},        {0.85, 0.85, 0.5}};
static const SimModel SIM_RESNET = {"resnet", {2048, 2048, 512}, {1000, 1000, 500}, 1, 4, 32,
                                    0.025,    {60, 60, 4},       {0.75, 0.75, 0.3}};
/* ADPSGD's: 8 workers x 32 images, a constant lr with the same two decays (its schedule is not
 * known) */
static const SimModel SIM_MLP8 = {"mlp", {30000, 16384, 4096}, {10000, 5000, 500}, 1, 8, 32,
                                  0.02,  {60, 60, 2},          {0.88, 0.86, 0.5}};

/* Accordion: roles low (critical level everywhere), high (normal level), accordion. */
static const Setting ACC[] = {
    {"mlp-powersgd",
     "mlp, PowerSGD rank 2 (low) / rank 1 (high)",
     &SIM_MLP,
     {"low compression", "high compression", "accordion"},
     3,
     {94.49, 94.25, 94.72}},
    {"mlp-topk",
     "mlp, TopK 99% (low) / 10% (high)",
     &SIM_MLP,
     {"low compression", "high compression", "accordion"},
     3,
     {94.09, 93.08, 93.78}},
    {"mlp-batch",
     "mlp, batch 512 (small) / 4096 (large), no compression",
     &SIM_MLP_BATCH,
     {"small batch", "large batch", "accordion"},
     3,
     {94.49, 93.21, 94.34}},
    {"cnn-powersgd",
     "cnn, PowerSGD rank 2 (low) / rank 1 (high)",
     &SIM_CNN,
     {"low compression", "high compression", "accordion"},
     3,
     {94.49, 94.25, 94.72}},
    {"cnn-topk",
     "cnn, TopK 99% (low) / 10% (high)",
     &SIM_CNN,
     {"low compression", "high compression", "accordion"},
     3,
     {94.09, 93.08, 93.78}},
    {"resnet-powersgd",
     "resnet, PowerSGD rank 2 (low) / rank 1 (high)",
     &SIM_RESNET,
     {"low compression", "high compression", "accordion"},
     3,
     {94.49, 94.25, 94.72}},
};
#define N_ACC ((int)(sizeof ACC / sizeof *ACC))

static const Setting ADP[] = {
    {"mlp-periodic",
     "mlp, 8 workers, periodic averaging",
     &SIM_MLP8,
     {"sync", "cpsgd period 4", "cpsgd period 16", "adpsgd period 4", "adpsgd period 16",
      "postlocal", "adacomm", "qsgd 8 bits"},
     8,
     {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN}},
};
#define N_ADP ((int)(sizeof ADP / sizeof *ADP))

_Static_assert(N_ACC <= MAX_SETTINGS && N_ADP <= MAX_SETTINGS, "MAX_SETTINGS is too small");
_Static_assert(ADP_N_ROLES <= MAX_ROLES, "MAX_ROLES is too small");

const char *const PAPERS_EXP_NAME[N_EXPS] = {"accordion", "adpsgd"};
const char *const PAPERS_BW[N_EXPS][MAX_BWS] = {{"1Gbps", "10Gbps"}, {"10Gbps", "100Gbps"}};
const double PAPERS_BW_BPS[N_EXPS][MAX_BWS] = {{1e9, 10e9}, {10e9, 100e9}}; /* the same, in bit/s */

const PaperSetting *papers_paper(int exp)
{
    assert(exp == 0 || exp == 1);
    return exp == 0 ? &ACCORDION_PAPER : &ADPSGD_PAPER;
}

const Setting *papers_setting(int exp, int s)
{
    assert(s >= 0 && s < papers_n_settings(exp));
    return exp == 0 ? &ACC[s] : &ADP[s];
}

int papers_n_settings(int exp)
{
    assert(exp == 0 || exp == 1);
    return exp == 0 ? N_ACC : N_ADP;
}

/* round(e300 x epochs / 300), at least lo: one of the Accordion authors' epoch counts (of their
 * 300) in a run of `epochs`, as policies/accordion.c's paper=1 scales them. */
int papers_scaled_epochs(double e300, int epochs, int lo)
{
    int e = (int)floor(e300 * epochs / 300.0 + 0.5);
    return e < lo ? lo : e;
}

/* --lr-decay-epochs of an E-epoch run: the Accordion authors' decays take effect at epochs 152
 * and 252 of 300 (main.py; policies/accordion.c cites the lines). */
void papers_decay_epochs(int epochs, int *a, int *b)
{
    *a = papers_scaled_epochs(152, epochs, 1);
    *b = papers_scaled_epochs(252, epochs, 1);
    if (*b <= *a) *b = *a + 1;
}

/* The real model's figures from its workload profile, the GPU rate the runs' --gpu,
 * --precision fp32 and --gpu-efficiency give (cluster_resolve's rule: peak x efficiency), and
 * what the runs' cost profile (costs: --costs) charges a dense allreduce over TCP beside the
 * formula: the link's share it reaches and a fixed cost per call. */
int papers_profile_cost(const PaperSetting *ps, const char *costs, ProfileCost *pc, BwError *err)
{
    CostProfile *prof;
    int rc = costs_load(costs, "--costs", ps->gpu, &prof, err);
    if (rc) return rc;
    pc->share = costs_share(prof, COST_NET_TCP, 0);
    pc->cap_Bps = prof->ideal ? 0.0 : prof->net[COST_NET_TCP].cap_Bps;
    pc->call_s = prof->ideal ? 0.0 : prof->collective_s;
    snprintf(pc->costs_name, sizeof pc->costs_name, "%s", prof->name);
    costs_free(prof);
    Workload *w;
    if ((rc = workload_load(ps->workload, "reproduce", &w, err))) return rc;
    pc->params = (double)w->n_params;
    pc->tensors = w->n_tensors;
    pc->flops_sample = workload_flops_per_sample(w);
    workload_free(w);
    const GpuProfile *g = cluster_gpu_find(ps->gpu);
    assert(g && pc->flops_sample > 0); /* a built-in flops profile and a known GPU: fixed */
    pc->gpu_peak = g->fp32_flops;
    pc->gpu_flops = g->fp32_flops * ps->efficiency;
    return BW_OK;
}

int papers_dense_calls(int exp, const ProfileCost *pc)
{
    return exp == 0 ? pc->tensors : 1;
}

/* The forward and backward of one step of `batch` samples per worker on the GPU [s] (the runs
 * also charge the optimiser's update, a pass over the parameters in memory). */
double papers_compute_s(const ProfileCost *pc, int batch)
{
    return batch * pc->flops_sample / pc->gpu_flops;
}

/* The dense ring allreduce of the fp32 gradient among p workers, 2 (p-1)/p n beta + 2 (p-1)
 * alpha (REFERENCES.md, Patarasuk and Yuan 2009), at the profile's share of bw_bps bits/s; alpha
 * is a route's latency, which in the star topology crosses two NIC links of link_latency each.
 * In `calls` allreduces (one per tensor, as Accordion's code: --overlap tensor), the latency
 * term and the profile's fixed cost of a call are paid each time. */
double papers_dense_comm_s(const ProfileCost *pc, int p, double bw_bps, double link_latency,
                           int calls)
{
    double bytes = 4.0 * pc->params;
    const double share = costs_capped_share(pc->share, pc->cap_Bps, bw_bps / 8);
    return 2.0 * (p - 1) / p * bytes * 8.0 / (bw_bps * share) +
           calls * (2.0 * (p - 1) * 2.0 * link_latency + pc->call_s);
}
