#!/usr/bin/python3
"""gen_costs.py: writes the built-in PyTorch cost profiles, sim/costs/profiles/pytorch-GPU.json,
from the GPUs' datasheets and the published figures cited beside each constant. These are cited
estimates, not measurements: no GPU measured them (traces/pytorch/calibrate.py measures a
profile on the device it runs on; a profile it wrote on a GPU would replace these). The
GRACE profile (grace-tf.json) is fitted to GRACE's measurements by sim/costs/fit_grace.py.

Not run by the build or CI: the JSON files are committed and embedded into bellows at build time.
To regenerate:

    /usr/bin/python3 sim/costs/gen_costs.py        # from the repository's root

Every rate is in its operation's unit per second (sim/costs/README.md): elementwise in bytes,
matmul in elements of the matrix M, orthogonalise in elements of a column, topk and quantise
and pack in elements, scatter in sparse entries, optimizer in parameters.
"""

import json
import os

from gen_costs_nccl import import_differs, networks_from_logs

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profiles")

# Peak memory bandwidth, bytes/s (NVIDIA datasheets: V100 SXM2 900 GB/s, A100 SXM 40GB
# 1,555 GB/s, H100 SXM 3.35 TB/s), and the NVLink share of each node's all-reduce.
GPUS = {
    "V100": {"mem_Bps": 900e9, "nvlink": 0.77,
             "nvlink_source": "no V100 figure found: the A100's share (231 of 300 GB/s) is used"},
    "A100": {"mem_Bps": 1555e9, "nvlink": 0.77,
             "nvlink_source": "nccl-tests all-reduce bus bandwidth on 8 A100s over NVSwitch, "
                              "about 231 GB/s of NVLink3's 300 GB/s each way (REFERENCES.md)"},
    "H100": {"mem_Bps": 3.35e12, "nvlink": 0.82,
             "nvlink_source": "nccl-tests ring all-reduce on 8 H100s, about 371 GB/s of NVLink4's "
                              "450 GB/s each way (REFERENCES.md)"},
    # H200 SXM datasheet: HBM3e at 4.8 TB/s; its HGX boards have the H100's NVLink 4 and NVSwitch
    "H200": {"mem_Bps": 4.8e12, "nvlink": 0.82,
             "nvlink_source": "the H100's share (no H200 figure found; the same NVLink 4 and "
                              "NVSwitch): nccl-tests ring all-reduce on 8 H100s, about 371 GB/s "
                              "of 450 GB/s each way (REFERENCES.md)"},
}

# The share of the peak that streaming kernels sustain (STREAM-like copies): about 85% on
# recent NVIDIA GPUs, e.g. about 1.3 TB/s of the A100 40GB's 1.555 TB/s (the same constant as
# CLUSTER_MEM_EFFICIENCY in sim/net/cluster.h).
STREAM = 0.85

# ResNet-50 v1.5 training throughput in PyTorch, NVIDIA DeepLearningExamples (PyTorch/
# Classification/ConvNets/resnet50v1.5, pytorch-21.03 container): 1 V100 16GB FP32 367 img/s,
# 1 A100 80GB TF32 938 img/s; at 24.60 GFLOP per image (bellows' resnet50 profile, forward and
# backward) over the peak: V100 FP32 15.7 TFLOP/s, A100 TF32 156 TFLOP/s.
EFFICIENCY = {
    "V100": {"fp32": round(367 * 24.60e9 / 15.7e12, 4),
             # GRACE's one V100 ran its PyTorch ResNet-9 (sands-lab/grace examples/dist/
             # CIFAR10-dawndist/dawn.py, fp32, batch 512, torch.backends.cudnn.benchmark on) at
             # 8,675 img/s (sands-lab/grace-data, cifar10-classification-pytorch, run 499r72l00):
             # 19.8 TFLOP/s of the net's direct-convolution flops, above the 15.7 TFLOP/s peak.
             # cuDNN's Winograd kernels for 3x3 stride-1 convolutions do 2.25 to 4 times fewer
             # multiplies (Lavin and Gray, CVPR 2016), and ResNet-9 is nearly all such layers.
             # Fitted to that one row (bellows validate's grace-r9-none-1).
             "workloads": {"resnet9-cifar": {"fp32": 1.29}}},
    "A100": {"tf32": round(938 * 24.60e9 / 156e12, 4)},
    "H100": {},
    "H200": {},
}

# GPUs measured by traces/pytorch/calibrate.py (the files in measured/, each naming its device,
# versions and date): their profile takes the compute efficiency, the per-tensor and per-kernel
# costs and every operation's rate from the measurement. A collective call's cost and the links'
# shares stay cited: one machine has no network to measure.
MEASURED = {"H100": "h100-sxm-pytorch2.11.json", "H200": "h200-sxm-pytorch2.11.json"}
# what calibrate.py times for each operation (its op_table)
MEASURED_CALLS = {
    "elementwise": "a.add_(b), 12 bytes an element", "matmul": "torch.mm(M, Q), Q of rank 2",
    "orthogonalise": "powerSGD_hook's Gram-Schmidt on P (n x 2), per column",
    "topk": "torch.topk(|x|, 1% of n, sorted=False)", "quantise": "QSGD's encode at 64 levels",
    "pack": "signs packed 8 to a byte", "scatter": "index_add_ of k entries",
    "optimizer": "torch.optim.SGD(momentum 0.9).step() over 8 tensors",
    "random": "torch.randperm(n)"}


# NCCL over sockets with one GPU per NIC. The share is the tuned sockets' figure: all-reduce bus
# bandwidth 30.6-31.4 Gbit/s on GCP's 32 GbE with 2 nodes x 1 GPU (NVIDIA/nccl#209), 0.95, what
# every profile gave before GRACE's rows were fitted. The cap is a rate: GRACE's PyTorch runs over
# TCP (sands-lab/grace-data, cifar10-classification-pytorch: 8 V100s one per node) reached the
# same throughput with the link limited to 25 Gbps and with no limit (none: 32,618 and 33,024
# img/s), and RDMA on the same nodes 35% more (44,061): NCCL's socket transport with its defaults
# (NCCL_SOCKET_NTHREADS and NCCL_NSOCKS_PERTHREAD 1 outside the clouds it recognises, one thread
# and one socket per channel) caps the collectives whatever the link. As a share, the cap priced a
# 10 Gbps link 2.5 times too slow; as a rate, min(share x link, cap), it gives the same 7.5
# Gbit/s at 25 Gbps and unlimited, as GRACE measured. Fitted to one row, grace-r9-none-8-tcp
# (bellows validate); the other 20 TCP rows of that table are predicted.
#
# The A100's and H100's profiles take the same cap: it is the transport's, not the GPU's (NCCL's
# socket defaults are the same on an A100's or H100's host), and without it their TCP at 0.95 of a
# link priced faster than their RDMA at 0.85, the reverse of what GRACE measured beside it and
# of every nccl-tests comparison of the two. Tuned sockets (more threads and sockets per
# connection) pass the cap: give such a cluster a profile of its own, or its nccl-tests log
# (bellows costs import-nccl-tests).
TCP_SHARE = 0.95
TCP_CAP_GBPS = 7.5
TCP_SOURCE = ("share: NCCL over tuned sockets with one GPU per NIC, all-reduce bus bandwidth "
              "30.6-31.4 Gbit/s on GCP's 32 GbE with 2 nodes x 1 GPU (NVIDIA/nccl#209, "
              "REFERENCES.md). cap_gbps: fitted to GRACE's PyTorch ResNet-9, none, 8 V100s one "
              "per node over TCP at 25 Gbps (sands-lab/grace-data; bellows validate's "
              "grace-r9-none-8-tcp), whose throughput was the same with no limit on the link "
              "(32,618 and 33,024 img/s): NCCL's socket transport with its defaults (one thread, "
              "one socket per channel) caps it whatever the link, and the GPU's host does not "
              "change that, so every profile takes it. Tuned sockets pass it: give such a "
              "cluster a profile or an nccl-tests log of its own")

# The compute's slowdown while a collective runs beside it (NCCL's kernels take SMs and memory
# bandwidth): Lee et al., "Characterizing Compute-Communication Overlap in GPU-Accelerated
# Distributed Deep Learning: Performance and Power Implications" (arXiv 2507.03114, 2025),
# measured on 4 A100s, 4 H100s, MI250s and MI210s with GPT and LLaMA models: overlapped compute
# was on average 18.9% slower than alone (at most 40.0%). No V100 or H200 was measured there; the
# average is used for it too.
INTERFERENCE = {gpu: {"compute": 1.189,
                      "source": "Lee et al., arXiv 2507.03114 (2025): compute overlapped with "
                                "communication ran on average 18.9% slower than alone (at most "
                                "40.0%) on 4 A100s, H100s, MI250s and MI210s, GPT and LLaMA"
                                + ("" if gpu in ("A100", "H100") else
                                   "; no %s was measured: their average" % gpu)}
                for gpu in ("V100", "A100", "H100", "H200")}

# ByteScheduler's own cost per partition it schedules (its Python core queues each one as a task
# and takes it back in a callback), beyond the collective call: bytedance/byteps#370 ran
# PyTorch + Horovod's ResNet-50 benchmark (pytorch_horovod_benchmark.py: batch 32, 161 parameter
# tensors) on 2 1080 Tis over PCIe at 182.4 img/s a GPU without ByteScheduler and 169.2 with it
# but its partition and credit infinite (one partition a tensor, nothing held back): 13.7 ms a
# step more, 85 us a partition.
BYTESCHEDULER_PARTITION_S = (32 / 169.2 - 32 / 182.4) / 161
SCHEDULES = {"bytescheduler": {"partition_s": float("%.3g" % BYTESCHEDULER_PARTITION_S)},
             "source": "bytescheduler: bytedance/byteps#370, PyTorch + Horovod ResNet-50 (batch "
                       "32, 161 tensors) on 2 1080 Tis: 182.4 img/s a GPU without ByteScheduler, "
                       "169.2 with it and partition and credit infinite, 13.7 ms a step more: "
                       "85 us for each partition its Python core schedules"}

# Operations whose rate for a GPU comes from a published PyTorch measurement (or, labelled, a
# fit to one published row), replacing the roofline estimate in profile(). Each entry: kernels,
# units a second, its source.
PUBLISHED_OPS = {
    "V100": {
        # pytorch/pytorch#22812 (PyTorch 1.1, Quadro GP100): torch.topk of 2,000,000 fp32
        # elements, k = 1000, sorted=False, 100 calls in 2.5576 s: 25.6 ms a call, 7.8e7
        # elements/s. Until pytorch PR #71081 (1.12) topk of one row ran its radix select in a
        # single thread block, so a V100 (the same 1.5 GHz SMs) selects at about the P100's rate;
        # GRACE's runs (2020) are of that PyTorch.
        "topk": (6, 2e6 / (2.5576 / 100),
                 "pytorch/pytorch#22812: torch.topk of 2M fp32 elements (k = 1000) in 25.6 ms "
                 "on a P100 with PyTorch 1.1, 7.8e7 elements/s; before PR #71081 (PyTorch 1.12) "
                 "one row's radix select ran in one thread block, whose rate a V100's SM "
                 "matches (GRACE's runs, 2020, used that PyTorch)"),
        # GRACE's randomk (grace_dl/dist/compressor/randomk.py) draws torch.randperm(n) per
        # tensor after torch.manual_seed; before PyTorch 1.8.1 randperm sorted on the GPU with
        # thrust, which synchronised the host (pytorch PR #54537). No per-element rate of it is
        # published: fitted to one row, grace-r9-randomk-8-rdma (bellows validate).
        "random": (3, 3.6e8,
                   "fitted to GRACE's PyTorch ResNet-9 Random-k 1% over RDMA at 8 V100s "
                   "(bellows validate's grace-r9-randomk-8-rdma): torch.randperm(n) as "
                   "PyTorch before 1.8.1 drew it (a thrust sort that synchronised the host, "
                   "pytorch PR #54537); no per-element rate is published"),
    },
}


# Operations with no published PyTorch rate for a GPU: derived from the H100's measured ones
# (MEASURED) as that GPU would run them: the measured rate at each size, capped at the H100's
# fastest rate of that operation times the ratio of the two GPUs' memory bandwidths (a large
# tensor's pass is bandwidth-bound; a small one's is launch-bound, the same on either GPU).
DERIVED_OPS = {"V100": ["orthogonalise", "quantise", "scatter"],
               "A100": ["topk", "orthogonalise", "quantise", "scatter", "random"]}


# How PyTorch runs a compressor's DDP communication hook, by the PyTorch each profile models: the
# V100's and A100's cited rates are PyTorch 1.x's (torch.topk before PR #71081), the H100's and
# H200's were measured under PyTorch 2.11 (calibrate.py).
HOOK_SYNC_SOURCE = (
    "powerSGD_hook's last callback calls torch.cuda.synchronize(device) "
    "(torch/distributed/algorithms/ddp_comm_hooks/powerSGD_hook.py, decompress; still there in "
    "2026: pytorch/pytorch PR #196568), and DDP's reducer runs a bucket's hook inline on the "
    "autograd thread (reducer.cpp mark_bucket_ready -> run_comm_hook), whose NCCL futures "
    "complete at enqueue so the callbacks run at once: the backward after a bucket is not "
    "launched until the bucket's dense, P and Q allreduces have finished")
HOOK_ORTH_SOURCE = (
    "; with warm start (the default) the kept Q of every matrix is orthogonalised again before "
    "P = M Q (`if not need_randomize_qs: for q in qs: _orthogonalize(q)`), then every P after "
    "its allreduce: one call per matrix (PowerSGDState's batch_tensors_with_same_shape defaults "
    "to False), Gram-Schmidt column by column up to rank 2, torch.linalg.qr above (its "
    "docstring: QR is usually faster with a rank > 2)")
# PyTorch 1.8-1.13 and 2.x run the same hook here (torch/distributed/algorithms/ddp_comm_hooks/
# powerSGD_hook.py, read in Debian's 1.13 and in 2.x's source). Checked on an H200 under PyTorch
# 2.11 (traces/pytorch/calibrate_hooks.py, sim/costs/measured/h200-hooks-pytorch2.11*.json): the
# step with powerSGD_hook over the step without, ResNet-50 and GPT-2 small, ranks 1, 2 and 4: the
# `hooks-h200` rows of validation/rows.csv.
HOOK_ORTH_MEASURED = (
    "; measured on an H200 (PyTorch 2.11, a DDP group of one): the hook adds 8-12 (rank 1), "
    "16-20 (2) and 24-25 ms (4) to ResNet-50's 47.7 ms step at batch 128, 26-27, 40-42 and "
    "47-49 ms to GPT-2 small's 62-63 ms at 8 x 1024 tokens, of which 29-63 ms are spent inside "
    "the hook on the autograd thread (sim/costs/measured/h200-hooks-pytorch2.11*.json)")
HOOKS = {
    "V100": ("PyTorch 1.10", True), "A100": ("PyTorch 1.10", True),
    "H100": ("PyTorch 2.11", True), "H200": ("PyTorch 2.11", True),
}


def hooks(gpu):
    """The profile's "hooks": PowerSGD's hook as the profile's PyTorch runs it."""
    framework, orth = HOOKS[gpu]
    psgd = {"synchronizes": True}
    if orth:
        psgd["orthogonalises_query"] = True
    if framework.startswith("PyTorch 2"):
        psgd["qr_above_rank"] = QR_ABOVE_RANK
    measured_note = HOOK_ORTH_MEASURED if framework.startswith("PyTorch 2") else ""
    return {"framework": framework, "powersgd": psgd,
            "source": HOOK_SYNC_SOURCE + HOOK_ORTH_SOURCE + measured_note}


def derived_op(gpu, name):
    """The H100's measured operation name, derived for gpu (DERIVED_OPS), with its source."""
    m = measured("H100")
    op = m["ops"][name]
    ratio = GPUS[gpu]["mem_Bps"] / GPUS["H100"]["mem_Bps"]
    cap = max(r for _, r in op["rate"]) * ratio
    pts = [[size, float("%.4g" % min(r, cap))] for size, r in op["rate"]]
    return {"kernels": op["kernels"], "rate": pts,
            "source": "derived, not published: no PyTorch measurement of it on the %s was found; "
                      "%s measured on the H100 (sim/costs/measured/%s), each size's rate capped "
                      "at the H100's fastest times %.3g, the %s's memory bandwidth over the "
                      "H100's (%.3g of %.3g TB/s)" % (
                          gpu, MEASURED_CALLS[name], MEASURED["H100"], ratio, gpu,
                          GPUS[gpu]["mem_Bps"] / 1e12, GPUS["H100"]["mem_Bps"] / 1e12)}


def measured(gpu):
    """The calibrate.py profile measured on gpu, or None."""
    import json
    if gpu not in MEASURED:
        return None
    with open(os.path.join(os.path.dirname(OUT_DIR), "measured", MEASURED[gpu])) as f:
        return json.load(f)


def apply_measured(p, m):
    """Profile p with m's compute, fixed costs and operations, each source naming m."""
    where = "measured on %s (%s, %s) by traces/pytorch/calibrate.py, sim/costs/measured/%s" % (
        m["measured"]["device"], m["measured"]["versions"], m["measured"]["date"],
        MEASURED[p["gpu"]])
    p["source"] = ("compute, kernels and operations %s; the links' shares and a collective "
                   "call's cost cited (sim/costs/gen_costs.py)" % where)
    p["measured"] = m["measured"]
    p["efficiency"] = dict(m["efficiency"])
    p["efficiency"]["source"] = m["efficiency"]["source"] + "; " + where
    p["efficiency"]["software"] = H100_SOFTWARE + " (measured)"
    p["fixed"]["tensor_s"] = m["fixed"]["tensor_s"]
    p["fixed"]["kernel_s"] = m["fixed"]["kernel_s"]
    p["fixed"]["source"] = ("a tensor's hook work and a kernel's launch %s; a collective call "
                            "(NCCL's launch, its proxy thread and the first bytes over a socket) "
                            "50 us, an estimate" % where)
    for name, op in m["ops"].items():
        p["ops"][name] = {"kernels": op["kernels"], "rate": op["rate"],
                          "source": "%s, %s" % (MEASURED_CALLS[name], where)}
    return p


# PyTorch 2.x on the GPUs no one measured it on (issue 48): the 1.x profile with every operation
# the H100's calibrate.py run measured carried to the GPU by memory bandwidth (derived_op), and
# the per-tensor and per-kernel costs the H100 measured as they are (host-side: Python and the
# CUDA launch, not the GPU). The compute (cuDNN's), the links and a collective call stay the 1.x
# profile's; nothing here was measured on a V100 or an A100, and every rate says so. A streaming
# pass (elementwise) keeps the 1.x profile's 85% of the GPU's memory bandwidth: the H100's
# measured pass (3.6e12 bytes/s, counted at 12 bytes an element) carried by bandwidth would
# exceed the V100's 900 GB/s, and no PyTorch streams faster than its GPU's memory.
PYTORCH2_GPUS = ("V100", "A100")


def profile2(gpu):
    p = profile(gpu)
    m = measured("H100")
    p["name"] = "pytorch2-" + gpu.lower()
    p["implementation"] = "PyTorch 2.x DDP + NCCL, compression in DDP communication hooks"
    p["software"] = ("PyTorch 2.x, derived: %s's rates measured on the H100 carried to the %s "
                     "by memory bandwidth" % (H100_SOFTWARE, gpu))
    p["source"] = ("derived, not measured (sim/costs/gen_costs.py profile2): every operation's "
                   "rate and the per-tensor and per-kernel costs from %s on the H100 "
                   "(sim/costs/measured/%s), the rates carried to the %s by memory bandwidth; "
                   "the compute, the links and a collective call's cost as pytorch-%s's" % (
                       H100_SOFTWARE, MEASURED["H100"], gpu, gpu.lower()))
    p["fixed"]["tensor_s"] = m["fixed"]["tensor_s"]
    p["fixed"]["kernel_s"] = m["fixed"]["kernel_s"]
    p["fixed"]["software"] = H100_SOFTWARE + ", derived from the H100's measurement"
    p["fixed"]["source"] = ("derived, not published: a tensor's hook work and a kernel's launch "
                            "measured on the H100 (sim/costs/measured/%s), host-side costs "
                            "carried as they are; a collective call 50 us, an estimate" %
                            MEASURED["H100"])
    for name in m["ops"]:
        if name != "elementwise":
            p["ops"][name] = derived_op(gpu, name)
    p["hooks"] = hooks("H100")  # PyTorch 2.x's hooks, as the H100's measured profile runs them
    return label_software(p)


# Horovod (horovod/horovod) as the framework that runs the allreduces: its defaults per release,
# as InitializeHorovodOnce sets them (horovod/common/operations.cc) and global_state.h declares
# them. v0.21.0 changed the cycle from 5 to 1 ms and the fusion threshold from 64 to 128 MB
# (CHANGELOG, horovod PR #2468) and added the batched fusion copies (PR #2435,
# HOROVOD_BATCH_D2D_MEMCOPIES on by default). The response cache is on at 1024 tensors in both
# (SetCacheEnabled(true); cache_capacity = 1024). HOROVOD_GPU_OPERATIONS=NCCL (docs/install.rst)
# with the MPI controller: the GPU clusters' usual build.
HOROVOD = {
    "0.18": {"version": "0.18.0", "fusion_threshold_bytes": 64 * 1024 * 1024, "cycle_ms": 5,
             "batched_memcpy": False,
             "source": "horovod v0.18.0: horovod/common/operations.cc (SetTensorFusionThresholdBytes"
                       "(64 * 1024 * 1024), SetCycleTimeMs(5), SetCacheEnabled(true)), "
                       "global_state.h (cache_capacity = 1024); docs/tensor-fusion.rst (the "
                       "fusion: ready tensors of one type fused up to HOROVOD_FUSION_THRESHOLD, "
                       "copied into the fusion buffer and out); a cudaMemcpyAsync a tensor "
                       "(ops/cuda_operations.cc)"},
    "0.21": {"version": "0.21.0", "fusion_threshold_bytes": 128 * 1024 * 1024, "cycle_ms": 1,
             "batched_memcpy": True,
             "source": "horovod v0.21.0: horovod/common/operations.cc (SetTensorFusionThresholdBytes"
                       "(128 * 1024 * 1024), SetCycleTimeMs(1), SetCacheEnabled(true)), "
                       "global_state.h (cache_capacity = 1024, batch_d2d_memcopies = true); "
                       "CHANGELOG 0.21.0: default cycle time from 5 to 1 ms and fusion threshold "
                       "from 64 to 128 MB (horovod PR #2468), batched D2D memcopy kernel (PR #2435)"},
}


def profile_horovod(release):
    """pytorch-v100's rates with Horovod release's background thread running the allreduces
    (PyTorch 1.x + horovod.torch over NCCL): no DDP buckets and no DDP communication hooks."""
    h = HOROVOD[release]
    p = profile("V100")
    p["name"] = "horovod-%s-v100" % release
    p["implementation"] = ("PyTorch 1.x + Horovod %s over NCCL (MPI controller), its tensor "
                           "fusion and cycle" % h["version"])
    p["software"] = "PyTorch 1.x + Horovod %s (rates as pytorch-v100's)" % h["version"]
    # bellows validate's horovod group (Horovod's README VGG-16 tables, DeepLearningExamples'
    # TensorFlow ResNet-50: 64 MB and 5 ms, as every release before 0.21.0) runs under 0.18's profile
    checked = {"0.18": "bellows validate's horovod group checks its scaling against Horovod's "
                       "TensorFlow figures (the compute set from each one-GPU row; its TCP rows "
                       "are known misses)",
               "0.21": "bellows validate's horovod-0.21 group checks it against NVIDIA "
                       "DeepLearningExamples' MXNet ResNet-50 inside one DGX-1 and DGX-2 (the "
                       "compute set from each one-GPU row; the runner overrides the fusion and "
                       "the cycle, and no published figure found separates 0.21 from 0.18)"}[release]
    p["source"] = ("pytorch-v100's rates, links and fixed costs (sim/costs/gen_costs.py "
                   "profile_horovod), with Horovod %s's fusion threshold, cycle and response "
                   "cache as its code sets them (\"horovod\"); %s" % (h["version"], checked))
    p.pop("hooks", None)  # DDP's communication hooks: Horovod has none
    p["horovod"] = {"version": h["version"],
                    "fusion_threshold_bytes": h["fusion_threshold_bytes"],
                    "cycle_ms": h["cycle_ms"], "response_cache": True, "cache_capacity": 1024,
                    "batched_memcpy": h["batched_memcpy"], "controller": "mpi",
                    "operations": "nccl", "software": "Horovod " + h["version"],
                    "source": h["source"]}
    return p


def dumps(obj, indent=0):
    """JSON with two-space indents, a list of numbers (or of number pairs) on one line."""
    import json
    pad = "  " * indent
    if isinstance(obj, dict):
        items = ["%s  %s: %s" % (pad, json.dumps(k), dumps(v, indent + 1)) for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list):
        return json.dumps(obj)
    return json.dumps(obj)


def rate(units_per_s):
    """One rate at every size: the fixed cost of the kernels is priced apart (kernel_s)."""
    return [[1, float("%.4g" % units_per_s)]]


# Each group's relative uncertainty (issue 48; "uncertainty" in sim/costs/README.md), stated beside
# it: pytorch-v100's worst residual in bellows validate (17.1% over its 40 published rows, median
# 3.75%: sim/costs/validation/summary.json) for the groups those rows test together (the rows
# test the profile whole, so each group takes the whole's); the other GPUs have no validated rows
# and take the V100's, labelled so; the fixed costs from their source's own spread.
VALIDATED_WORST = 0.171


def uncertainty(gpu):
    whole = ("bellows validate: pytorch-v100's worst residual, 17.1%% over its 40 published rows "
             "(median 3.75%%, sim/costs/validation/summary.json), the rows testing the profile "
             "whole%s" % ("" if gpu == "V100" else
                          "; no row validates the %s: the V100's, not this GPU's own" % gpu))
    return {"version": 1,
            "compute": VALIDATED_WORST, "compute_source": whole,
            "fixed": 0.17,
            "fixed_source": "per eager op about 5-7 us (pytorch/pytorch#41383): 6 us +- 1 us",
            "ops": VALIDATED_WORST, "ops_source": whole,
            "networks": VALIDATED_WORST, "networks_source": whole}


def profile(gpu, all_logs=False):
    bw = STREAM * GPUS[gpu]["mem_Bps"]
    src_bw = "%.0f%% of the %s's %.3g TB/s (STREAM-like)" % (100 * STREAM, gpu,
                                                               GPUS[gpu]["mem_Bps"] / 1e12)
    ops = {
        "elementwise": {"kernels": 1, "rate": rate(bw),
                        "source": "a streaming pass at " + src_bw},
        "matmul": {"kernels": 1, "rate": rate(0.6 * GPUS[gpu]["mem_Bps"] / 4),
                   "source": "estimate: a rank <= 8 product (torch.bmm) reads M once, 4 bytes an "
                             "element, at 60% of the peak (skinny GEMMs reach less than a "
                             "streaming copy)"},
        "orthogonalise": {"kernels": 4, "rate": rate(bw / 16),
                          "source": "torch powerSGD_hook._orthogonalize_gram_schmidt (rank <= 2): "
                                    "per column a norm and a division, then a product, a sum, a "
                                    "product and a subtraction against the later columns: about "
                                    "4 kernels and 16 bytes an element"},
        "topk": {"kernels": 6, "rate": rate(bw / 20),
                 "source": "estimate: torch.topk by multi-block radix select (pytorch/pytorch PRs "
                           "#71081, #74267): about five passes over the fp32 data, 20 bytes an "
                           "element; pytorch/pytorch#167462 measured 9.5e10 elements/s on an L20 "
                           "for many rows at once"},
        "quantise": {"kernels": 12, "rate": rate(bw / 96),
                     "source": "estimate: QSGD in PyTorch as GRACE writes it (grace_dl/torch/"
                               "compressor/qsgd.py): about 12 elementwise kernels (norm, abs, "
                               "scale, floor, rand, compare, add, sign, casts), 8 bytes an element "
                               "each"},
        "pack": {"kernels": 3, "rate": rate(bw / 6),
                 "source": "estimate: signs packed 32 to an int32 (uw-mad-dash/"
                           "GradCompressionUtility bit2byte): a comparison, a cast and the "
                           "packing, about 6 bytes an element"},
        "scatter": {"kernels": 1, "rate": rate(bw / 32),
                    "source": "estimate: index_add_/gather of scattered entries, each touching a "
                              "32-byte memory sector"},
        "random": {"kernels": 3, "rate": rate(bw / 24),
                   "source": "estimate: torch.randperm(n) on the GPU (random keys, a radix sort "
                             "of n pairs, as GRACE's torch randomk draws its indices): about 24 "
                             "bytes an element"},
        "optimizer": {"kernels": 6, "rate": rate(bw / 20),
                      "source": "torch.optim.SGD with momentum, foreach (multi-tensor apply): "
                                "reads the parameter, gradient and momentum and writes two, 20 "
                                "bytes a parameter; about 6 launches for a model's tensors"},
    }
    nets = {
        "tcp": {"allreduce": TCP_SHARE, "allgather": TCP_SHARE, "cap_gbps": TCP_CAP_GBPS,
                "source": TCP_SOURCE},
        "rdma": {"allreduce": 0.85, "allgather": 0.85,
                 "source": "nccl-tests on 4x HDR InfiniBand per node of A100s: 84.8 of 100 GB/s "
                           "(NVIDIA/nccl-tests#119)"},
        "nvlink": {"allreduce": GPUS[gpu]["nvlink"], "allgather": GPUS[gpu]["nvlink"],
                   "source": GPUS[gpu]["nvlink_source"]},
    }
    p = {
        "bellows_costs": 1,
        "name": "pytorch-" + gpu.lower(),
        "implementation": "PyTorch DDP + NCCL, compression in DDP communication hooks",
        "gpu": gpu,
        "source": "cited estimates, not measurements (sim/costs/gen_costs.py): the %s's "
                  "datasheet, PyTorch's and NCCL's published figures; measure your own with "
                  "traces/pytorch/calibrate.py" % gpu + (
                      "; ResNet-9's efficiency, the TCP cap and randperm's rate fitted to one "
                      "of GRACE's PyTorch rows each (bellows validate)" if gpu == "V100" else ""),
        "efficiency": EFFICIENCY[gpu],
        "fixed": {
            "tensor_s": 20e-6,
            "kernel_s": 6e-6,
            "collective_s": 50e-6,
            "source": "per eager op about 5-7 us with Python (pytorch/pytorch#41383): a kernel "
                      "6 us, a tensor in a hook's Python loops about three such calls beyond its "
                      "kernels, 20 us; a collective call (NCCL's launch, its proxy thread and "
                      "the first bytes over a socket) 50 us, an estimate"},
        "ops": ops,
        "networks": networks_from_logs(nets, all_logs),
        "allgather": {"overlaps_backward": True,
                      "source": "a DDP communication hook runs per bucket as the bucket fills, "
                                "whatever collective it calls (torch/nn/parallel/distributed.py "
                                "register_comm_hook)"},
        "interference": INTERFERENCE[gpu],
        "schedules": SCHEDULES,
        "hooks": hooks(gpu),
        "uncertainty": uncertainty(gpu),
    }
    for name, (kernels, units_per_s, source) in PUBLISHED_OPS.get(gpu, {}).items():
        ops[name] = {"kernels": kernels, "rate": rate(units_per_s), "source": source}
    for name in DERIVED_OPS.get(gpu, []):
        ops[name] = derived_op(gpu, name)
    p = {**{k: p[k] for k in ("bellows_costs", "name", "implementation", "gpu")},
         "software": SOFTWARE[gpu], **p}
    p["fixed"]["software"] = SOFTWARE_FIXED
    m = measured(gpu)
    if m:
        p["fixed"]["software"] = H100_SOFTWARE + " (measured)"
        return label_software(apply_measured(p, m))
    label_software(p)
    if EFFICIENCY[gpu]:
        p["efficiency"]["source"] = ("ResNet-50 v1.5 in PyTorch, NVIDIA DeepLearningExamples: "
                                     "V100 FP32 367 img/s, A100 TF32 938 img/s, at 24.60 GFLOP "
                                     "an image over the peak")
        p["efficiency"]["software"] = SOFTWARE_COMPUTE
        if "workloads" in EFFICIENCY[gpu]:
            p["efficiency"]["workloads"]["software"] = "PyTorch 1.x (GRACE's runs, 2020)"
            p["efficiency"]["workloads"]["source"] = (
                "resnet9-cifar: fitted to GRACE's one V100 (8,675 img/s, sands-lab/grace-data "
                "cifar10-classification-pytorch 499r72l00; bellows validate's grace-r9-none-1): "
                "in the net's direct-convolution flops, above 1 because cuDNN's Winograd 3x3 "
                "convolutions do 2.25-4x fewer multiplies (Lavin and Gray, CVPR 2016)")
    else:
        del p["efficiency"]
    return p


# What a rate's source must say it is: a citation of a published measurement, a measurement of
# our own, a labelled derivation or fit, or (for the operations the issue does not name) an
# estimate.
LABELS = ("pytorch/pytorch#", "measured on", "derived, not published", "fitted to", "estimate",
          "streaming pass", "torch.optim", "torch powerSGD_hook")


# The software generation each rate was measured under (issue 48: a verdict on top-k that rests
# on PyTorch 1.1's torch.topk must say so): from what its source says it is.
H100_SOFTWARE = "PyTorch 2.11"


def op_software(source):
    """The software generation of an operation's rate, from its source's label."""
    if "derived, not published" in source:
        return H100_SOFTWARE + ", derived from the H100's measurement (not measured on this GPU)"
    if "measured on" in source:
        return H100_SOFTWARE + " (measured)"
    if "pytorch/pytorch#22812" in source:
        return "PyTorch 1.1 (pytorch#22812; PyTorch before 1.12 selects in one thread block)"
    if "fitted to GRACE" in source:
        return "PyTorch before 1.8.1 (GRACE's runs, 2020)"
    return "any PyTorch: an estimate from the hardware, no version measured"


# Each profile's generation, named in every run's header (costs.h "software").
SOFTWARE = {
    "V100": "PyTorch 1.x (GRACE's runs, 2020; pytorch#22812's top-k), some rates derived from "
            "PyTorch 2.11",
    "A100": "PyTorch 1.x estimates; top-k, Gram-Schmidt, QSGD, scatter and randperm derived "
            "from PyTorch 2.11 on the H100",
    "H100": H100_SOFTWARE + " (measured)",
    "H200": H100_SOFTWARE + " (measured)",
}
SOFTWARE_COMPUTE = "NGC pytorch-21.03 (PyTorch 1.x): cuDNN's convolutions"
SOFTWARE_FIXED = "PyTorch 1.x (pytorch#41383, 2020)"


def label_software(p):
    """p with a "software" beside every rate whose source does not carry one."""
    for op in p["ops"].values():
        op.setdefault("software", op_software(op["source"]))
    return p


def unlabelled(p):
    """The operations of profile p whose source names none of LABELS."""
    return [name for name, op in p["ops"].items()
            if not any(label in op.get("source", "") for label in LABELS)]


# PowerSGD's orthogonalisation above rank 2 (ops.qr, hooks.powersgd.qr_above_rank): PyTorch's
# _orthogonalize runs torch.linalg.qr on a batch of fp32 matrices of rank > 2 and Gram-Schmidt at
# ranks 1 and 2 (or at 16 bits) since pytorch/pytorch PR #72043 (January 2022: not in the 1.10
# the V100 and A100 profiles' hooks model; in Debian's 1.13 and in 2.x). One call's time was
# measured on the H200 at rank 4 by traces/pytorch/calibrate_hooks.py (orth_ops: 50 calls back to
# back on a [1, n, 4] batch, as the hook loops over its matrices): flat at 0.17 ms to 10^4 rows,
# then growing. That floor is the call's launches and cuSOLVER's dispatch, host-side: every
# profile keeps it in seconds (as "kernels" launches of its own kernel_s); the growth above it is
# carried to the other GPUs as derived_op carries a rate, capped at the H200's fastest times the
# ratio of memory bandwidths. Every rank above 2 is priced as rank 4 (comp_powersgd.c price_orth
# charges one call whatever r): pytorch/pytorch PR #76673's torch.qr timings are within 10% of
# each other from rank 4 to rank 8 up to 4,096 rows; above rank 8 nothing is measured.
QR_ABOVE_RANK = 2
QR_MEASURED = "h200-hooks-pytorch2.11-breakdown.json"


def qr_op(p):
    """Profile p's ops.qr, from the H200's measured torch.linalg.qr calls, with its source."""
    import json
    import statistics
    with open(os.path.join(os.path.dirname(OUT_DIR), "measured", QR_MEASURED)) as f:
        m = json.load(f)
    calls = sorted((c["n"], c["s"]) for c in m["orthogonalise_calls"] if c["rank"] == 4)
    floor = statistics.median(s for n, s in calls if n <= 10000)
    gpu = p["gpu"]
    ratio = GPUS[gpu]["mem_Bps"] / GPUS["H200"]["mem_Bps"]
    grown = [(n, n / (s - floor)) for n, s in calls if s - floor >= 0.2 * s]  # calibrate.py's rule
    cap = max(r for _, r in grown) * ratio
    pts = [[float(n), float("%.4g" % min(r, cap))] for n, r in grown]
    where = ("measured on %s (%s, %s) by traces/pytorch/calibrate_hooks.py, sim/costs/measured/%s"
             % (m["device"], m["versions"], m["date"], QR_MEASURED))
    what = ("torch.linalg.qr of one [n x 4] fp32 matrix as powerSGD_hook's _orthogonalize runs it "
            "above rank 2 (size: rows; every rank above 2 priced as 4: within 10%% to rank 8 by "
            "pytorch/pytorch PR #76673, unmeasured above), "
            "%.3g ms a call to 10^4 rows (\"kernels\": that floor in this profile's kernel "
            "launches)" % (floor * 1e3))
    source = ("%s, %s" % (what, where) if gpu == "H200" else
              "derived, not published: %s, %s, the floor as it is (host-side) and each size's "
              "rate above it capped at the H200's fastest times %.3g, the %s's memory bandwidth "
              "over the H200's" % (what, where, ratio, gpu))
    software = (H100_SOFTWARE + " (measured)" if gpu == "H200" else
                H100_SOFTWARE + ", derived from the H200's measurement (not measured on this GPU)")
    return {"kernels": float("%.3g" % (floor / p["fixed"]["kernel_s"])), "rate": pts,
            "source": source, "software": software}


def with_qr(p):
    """p with ops.qr where its PowerSGD hook orthogonalises by QR above a rank."""
    if p.get("hooks", {}).get("powersgd", {}).get("qr_above_rank"):
        p["ops"]["qr"] = qr_op(p)
    return p


# A fused block quantiser's rate (ops.blockq: ZeRO++'s qwZ and qgZ as DeepSpeed's CUDA kernels run
# them), measured on the H200 by traces/pytorch/calibrate_quant.py (torch.compile's fused kernels;
# int8 codes, one fp32 scale a block of 2048 fp16 values) and carried to the other GPUs by memory
# bandwidth, as derived_op carries the H100's; a quantise call's rate prices its dequantise too
# (measured 2.6x faster from 6.7e7 values: the conservative one of the two).
QUANT_MEASURED = "h200-quant-pytorch2.11.json"
BLOCKQ_KERNELS = 2  # the block's maximum, then the scaled and rounded codes


def blockq_op(p):
    """Profile p's ops.blockq, from the H200's measurement, with its source."""
    import json
    with open(os.path.join(os.path.dirname(OUT_DIR), "measured", QUANT_MEASURED)) as f:
        m = json.load(f)
    gpu = p["gpu"]
    ratio = GPUS[gpu]["mem_Bps"] / GPUS["H200"]["mem_Bps"]
    h200_kernel_s = measured("H200")["fixed"]["kernel_s"]
    pts = []
    for row in m["rows"]:
        if row["bits"] != 8:
            continue
        n = float(row["values"])
        t = n / row["fused"]["quantise_values_per_s"] - BLOCKQ_KERNELS * h200_kernel_s
        if t < n / row["fused"]["quantise_values_per_s"] / 5:
            continue  # the launches hide the rate at this size (calibrate.py's rule)
        pts.append([n, float("%.4g" % (n / t * ratio))])
    where = ("measured on %s (%s, %s) by traces/pytorch/calibrate_quant.py, sim/costs/measured/%s"
             % (m["device"], m["versions"], m["date"], QUANT_MEASURED))
    source = ("block quantisation to int8 as one fused kernel (torch.compile), " + where
              if gpu == "H200" else
              "derived, not published: block quantisation to int8 as one fused kernel, " + where +
              ", each size's rate times %.3g, the %s's memory bandwidth over the H200's"
              % (ratio, gpu))
    software = (H100_SOFTWARE + " (measured)" if gpu == "H200" else
                H100_SOFTWARE + ", derived from the H200's measurement (not measured on this GPU)")
    return {"kernels": BLOCKQ_KERNELS, "rate": pts, "source": source, "software": software}


def with_blockq(p):
    """p with ops.blockq (every PyTorch profile: ZeRO++'s quantisation is DeepSpeed's kernels)."""
    p["ops"]["blockq"] = blockq_op(p)
    return label_software(p)


def main(argv):
    """Writes the PyTorch profiles; with --check, writes nothing and exits 1 if a committed
    profile differs from what this script makes of its constants and measurements; with
    --all-logs DIR, writes into DIR the profiles with every transport's logs used (for
    checking LOGS_NOT_USED with bellows validate)."""
    if argv[1:2] == ["--all-logs"] and len(argv) == 3:
        for gpu in GPUS:
            path = os.path.join(argv[2], "pytorch-%s.json" % gpu.lower())
            with open(path, "w") as f:
                f.write(dumps(profile(gpu, all_logs=True)) + "\n")
            print(path)
        return 0
    stale = []
    if argv[1:2] == ["--check"] and argv[2:3] == ["--bellows"] and len(argv) == 4:
        stale += import_differs(argv[3])
        argv = argv[:2]
    jobs = [("pytorch-%s.json" % g.lower(), profile, g) for g in GPUS] + [
        ("pytorch2-%s.json" % g.lower(), profile2, g) for g in PYTORCH2_GPUS] + [
        ("horovod-%s-v100.json" % r, profile_horovod, r) for r in HOROVOD]
    for name, make, gpu in jobs:
        path = os.path.join(OUT_DIR, name)
        prof = with_qr(with_blockq(make(gpu)))
        text = dumps(prof) + "\n"
        for op in unlabelled(prof):
            stale.append("%s: ops.%s has no source naming where its rate comes from" % (path, op))
        if argv[1:] == ["--check"]:
            with open(path) as f:
                if f.read() != text:
                    stale.append(path)
            continue
        with open(path, "w") as f:
            f.write(text)
        print(path)
    for path in stale:
        print(path if ": " in path else "%s is stale: run sim/costs/gen_costs.py" % path)
    return 1 if stale else 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv))
