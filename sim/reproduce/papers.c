/* papers.c: the two source papers' settings, with where each figure comes from; the models
 * bellows trains in their place; and the fidelity rule that derives the simulated GPU rate and
 * link latency so that a simulated step splits into compute and communication in the paper's
 * proportions. Everything here is a constant table or a pure function of one. */
#include <assert.h>
#include <math.h>

#include "model.h"
#include "reproduce_internal.h"

#define REF_BW_BPS 10e9 /* the reference bandwidth of both papers' ratios: 10 Gbps */

/* Accordion: the repository's CIFAR-10 ResNet-18 runs (main.py: train_batch_size 128 per worker,
 * get_table_2.sh: --num-nodes 4, NCCL). ResNet-18 (CIFAR variant): 11,173,962 parameters,
 * 0.56 GMAC = 1.11 GFLOP per forward pass, backward about twice that. The GPU (p3.2xlarge, one
 * V100) is not stated in the text we could read: assumed, at bellows' default efficiency. */
static const PaperSetting ACCORDION_PAPER = {
    "ResNet-18 on CIFAR-10, 4 workers x 128 images",
    "uw-mad-dash/Accordion main.py and get_table_2.sh; parameters and flops of the CIFAR "
    "ResNet-18 (kuangliu/pytorch-cifar)",
    11173962.0,
    3 * 1.11e9,
    0.5 * 15.7e12,
    "V100 (15.7 TFLOP/s fp32 peak) at 50% (assumed)",
    4,
    128,
    25e-6,
    "assumed (TCP between cloud instances; not stated in the sources)"};

/* ADPSGD: the paper's models, GPUs and batch could not be read (only the abstract). VGG-16 on
 * CIFAR-10 (14.72 M parameters, 0.31 GMAC forward) on V100s, 128 images per GPU, is an assumption
 * chosen because it is consistent with the claimed speedups: local SGD cannot beat sync by more
 * than (compute + communication) / compute, which for ResNet-18 at 100 Gbps would be 1.10x,
 * below the claimed 1.14-1.27x. */
static const PaperSetting ADPSGD_PAPER = {
    "VGG-16 on CIFAR-10, 8 workers x 128 images (assumed: the paper's setting was not found)",
    "Jiang & Agrawal, arXiv 2007.06134 (abstract only); VGG-16 figures from da2so/DA2Lite",
    14.72e6,
    3 * 0.62e9,
    0.5 * 15.7e12,
    "V100 (15.7 TFLOP/s fp32 peak) at 50% (assumed)",
    8,
    128,
    25e-6,
    "assumed (not stated in the sources)"};

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
     {"sync", "cpsgd period 4", "cpsgd period 16", "adpsgd", "postlocal", "adacomm"},
     6,
     {NAN, NAN, NAN, NAN, NAN, NAN}},
};
#define N_ADP ((int)(sizeof ADP / sizeof *ADP))

_Static_assert(N_ACC <= MAX_SETTINGS && N_ADP <= MAX_SETTINGS, "MAX_SETTINGS is too small");

const char *const PAPERS_EXP_NAME[N_EXPS] = {"accordion", "adpsgd"};
const char *const PAPERS_BW[N_EXPS][MAX_BWS] = {{"1Gbps", "10Gbps"}, {"10Gbps", "100Gbps"}};

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

static double ring_bandwidth_term(double params, int p, double bw_bps)
{
    /* ring allreduce: 2 (p-1)/p n beta (REFERENCES.md, Patarasuk and Yuan 2009) */
    return 2.0 * (p - 1) / p * 4.0 * params * 8.0 / bw_bps;
}

int papers_fidelity(const PaperSetting *ps, const SimModel *sm, Fidelity *fd, BwError *err)
{
    Model *m;
    ModelConfig mc = model_config_default();
    int rc = model_create(model_find(sm->model), &mc, 1, &m, err);
    if (rc) return rc;
    fd->s_params = (double)m->n_params;
    fd->s_flops = model_flops_per_sample(m);
    model_free(m);
    fd->p_compute = ps->batch * ps->flops_sample / ps->gpu_flops;
    fd->p_comm = ring_bandwidth_term(ps->params, ps->workers, REF_BW_BPS);
    fd->p_alpha = 2.0 * (ps->workers - 1) * ps->latency;
    fd->s_comm = ring_bandwidth_term(fd->s_params, sm->workers, REF_BW_BPS);
    fd->s_compute = fd->s_comm * fd->p_compute / fd->p_comm;
    fd->gpu_flops = sm->batch * fd->s_flops / fd->s_compute;
    fd->latency = fd->s_comm * fd->p_alpha / fd->p_comm / (2.0 * (sm->workers - 1));
    return BW_OK;
}
