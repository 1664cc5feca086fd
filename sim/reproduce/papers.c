/* papers.c: the two source papers' settings, with where each figure comes from; the models
 * bellows trains in their place; and what a dense step of the real model costs on the papers'
 * GPU and network (the report's cost table). The runs charge the real model's costs themselves
 * (`--workload`, sim/driver/cost.c); the figures here come from the same workload profile, so
 * the report and the runs agree. Everything else is a constant table or a pure function of one. */
#include <assert.h>
#include <math.h>

#include "cluster.h"
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

/* Accordion's checks every 2 epochs need about 8 epochs before a run can leave the critical
 * regime between the lr decays (at 1/2 and 5/6 of the run): --quick keeps 8. */
static const SimModel SIM_MLP = {"mlp", {60000, 30000, 2048}, {10000, 10000, 500}, 4, 4, 32,
                                 0.02,  {12, 8, 2},           {0.88, 0.86, 0.7}};
/* the cnn costs ~15 times the mlp's math per sample: a 12,800-image training set keeps the full
 * reproduction within its hour (100 steps per epoch, as the paper's 98); not in --quick */
static const SimModel SIM_CNN = {"cnn", {12800, 12800, 2048}, {2500, 2500, 500}, 2, 4, 32,
                                 0.02,  {12, 8, 2},           {0.88, 0.86, 0.7}};
static const SimModel SIM_MLP8 = {"mlp", {60000, 30000, 2048}, {10000, 10000, 500}, 4, 8, 32,
                                  0.02,  {12, 8, 2},           {0.88, 0.86, 0.7}};

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
     "mlp, batch 128 (small) / 1024 (large), no compression",
     &SIM_MLP,
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
    {"cnn-batch",
     "cnn, batch 128 (small) / 1024 (large), no compression",
     &SIM_CNN,
     {"small batch", "large batch", "accordion"},
     3,
     {94.49, 93.21, 94.34}},
};
#define N_ACC ((int)(sizeof ACC / sizeof *ACC))

static const Setting ADP[] = {
    {"mlp-periodic",
     "mlp, 8 workers, periodic averaging",
     &SIM_MLP8,
     {"sync", "cpsgd period 4", "cpsgd period 16", "adpsgd period 4", "postlocal", "adacomm"},
     6,
     {NAN, NAN, NAN, NAN, NAN, NAN}},
};
#define N_ADP ((int)(sizeof ADP / sizeof *ADP))

_Static_assert(N_ACC <= MAX_SETTINGS && N_ADP <= MAX_SETTINGS, "MAX_SETTINGS is too small");

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

/* --lr-decay-epochs of an E-epoch run: the Accordion repository's CIFAR runs decay at epochs 150
 * and 250 of 300, i.e. at 1/2 and 5/6 of the run. */
void papers_decay_epochs(int epochs, int *a, int *b)
{
    *a = (int)lround(epochs * 0.5);
    *b = (int)lround(epochs * 5.0 / 6.0);
    if (*b <= *a) *b = *a + 1;
}

/* The real model's figures from its workload profile, and the GPU rate the runs' --gpu,
 * --precision fp32 and --gpu-efficiency give (cluster_resolve's rule: peak x efficiency). */
int papers_profile_cost(const PaperSetting *ps, ProfileCost *pc, BwError *err)
{
    Workload *w;
    int rc = workload_load(ps->workload, "reproduce", &w, err);
    if (rc) return rc;
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
 * alpha (REFERENCES.md, Patarasuk and Yuan 2009), at bw_bps bits/s; alpha is a route's latency,
 * which in the star topology crosses two NIC links of link_latency each. In `calls` allreduces
 * (one per tensor, as Accordion's code: --overlap tensor), the latency term is paid each time. */
double papers_dense_comm_s(const ProfileCost *pc, int p, double bw_bps, double link_latency,
                           int calls)
{
    double bytes = 4.0 * pc->params;
    return 2.0 * (p - 1) / p * bytes * 8.0 / bw_bps + calls * 2.0 * (p - 1) * 2.0 * link_latency;
}
