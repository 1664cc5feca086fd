/* flag_cases.h: bellows run's flags, each with a value other than its default and the context it
 * applies in, and those left out (tests/test_flag_effect.c says why); test_flag_effect_cmds.c
 * tries the same rows on the other commands that take run's flags. Static tables: each test
 * that includes it has its own copy. */
#ifndef BELLOWS_FLAG_CASES_H
#define BELLOWS_FLAG_CASES_H

#include <string.h>

/* flag, value, the context it applies in ("" none) */
static const char *const CASES[][3] = {
    {"model", "softmax", ""},
    {"hidden", "32", ""},
    {"epochs", "2", ""},
    {"batch", "2", ""},
    {"lr", "0.05", ""},
    {"momentum", "0.5", ""},
    {"optimizer", "adamw", ""},
    {"nesterov", "", ""},
    {"weight-decay", "0.01", ""},
    {"lr-schedule", "cosine", ""},
    {"lr-decay-epochs", "1", "--epochs 2 --lr-schedule step"},
    {"lr-decay-factor", "0.5", "--epochs 2 --lr-schedule step --lr-decay-epochs 1"},
    {"warmup-epochs", "1", ""},
    {"warmup-shape", "epoch", "--epochs 2 --warmup-epochs 2 --lr-scale workers"},
    {"lr-scale", "workers", ""},
    {"seed", "2", ""},
    {"train-samples", "32", ""},
    {"test-samples", "16", ""},
    {"workers", "4", ""},
    {"gpus-per-node", "2", "--topology hierarchical"},
    {"topology", "islands", "--workers 4"},
    {"islands", "1", "--topology islands"},
    {"wan-bandwidth", "100Mbps", "--topology islands"},
    {"wan-latency", "10ms", "--topology islands"},
    {"gpu", "V100", ""},
    {"precision", "tf32", "--gpu A100"},
    {"gpu-efficiency", "0.2", ""},
    {"gpu-flops", "1e12", ""},
    {"bandwidth", "1Gbps", ""},
    {"latency", "1ms", ""},
    {"intra-bandwidth", "1Gbps", "--topology hierarchical --gpus-per-node 2 --workers 4"},
    {"intra-latency", "1ms", "--topology hierarchical --gpus-per-node 2"},
    {"nic-per-gpu", "", "--topology hierarchical --gpus-per-node 2 --workers 4"},
    {"nics-per-node", "2", "--topology hierarchical --gpus-per-node 2 --workers 4"},
    {"leaf-size", "1", "--topology fat-tree"},
    {"oversubscription", "4", "--topology fat-tree --leaf-size 1"},
    {"compressor", "topk", "--policy static:level=1"},
    {"allreduce", "tree", ""},
    /* --overlap none: the fused call spread over every server (issue 47; it went to one) */
    {"servers", "1", "--allreduce ps --workload resnet18-cifar --overlap none"},
    {"ps-hosts", "own", "--allreduce ps"},
    {"collectives", "transfer",
     "--topology fat-tree --leaf-size 1 --oversubscription 4 --workers 4"},
    {"network-model", "tcp", "--collectives transfer"},
    {"target-accuracy", "0.2", "--stop-at-target --epochs 3 --eval-every 1 "},
    {"stop-at-target", "", "--epochs 3 --eval-every 1 --target-accuracy 0.2 "},
    {"eval-every", "1", ""},
    {"compute-jitter", "0.1", ""},
    {"slowdown", "2", ""},
    {"workload", "resnet18-cifar", ""},
    {"overlap", "none", "--workload resnet18-cifar"},
    {"sharding", "zero3", "--workload resnet18-cifar"},
    {"zeropp", "qwz", "--workload resnet18-cifar --sharding zero3"},
    {"fsdp-unit", "4", "--sharding zero3 --overlap ddp"},
    {"backward-prefetch", "none", "--sharding zero3 --overlap ddp"},
    {"forward-prefetch", "on", "--sharding zero3 --overlap ddp"},
    {"limit-all-gathers", "1", "--sharding zero3 --overlap ddp"},
    {"reshard-after-forward", "off", "--sharding zero3 --overlap ddp"},
    {"rs-comm", "own", "--sharding zero3 --overlap ddp"},
    {"schedule", "p3", "--workload resnet18-cifar"},
    {"price-batch", "64", "--workload resnet18-cifar"},
    {"price-workers", "8", ""},
    {"bucket-mb", "1", "--workload resnet18-cifar"},
    {"free-compression", "", "--policy static:level=1 --compressor topk"},
    {"costs", "ideal", ""},
    {"horovod", "0.21", "--workload resnet18-cifar"},
    {"horovod-fusion", "0", "--workload resnet18-cifar --horovod 0.21"},
    {"horovod-cycle", "5", "--workload resnet18-cifar --horovod 0.21"},
    {"transport", "rdma", ""},
    {"nccl-sockets", "2x8", ""},
    {"cloud", "onprem-tcp", ""},
    {"straggler-cv", "0.2", ""},
    {"average-momentum", "", "--policy cpsgd:period=2"},
    {"policy", "static:level=1", ""},
};
#define N_CASES ((int)(sizeof CASES / sizeof *CASES))

/* Left out, each for its reason above. */
static const char *const SKIPPED[] = {
    "channels", "kernel",   "widths", "blocks",         "platform",
    "hosts",    "data-dir", "trace",  "timeline-steps", /* noted when given alone: flag_effect.c;
                                                           its effect needs --timeline */
    "threads", /* OpenBLAS's threads: the same sums on a model this small */
};

#endif
