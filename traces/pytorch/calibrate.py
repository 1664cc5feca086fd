#!/usr/bin/python3
"""calibrate.py: measure a bellows cost profile (sim/costs/README.md) on this machine's device
with PyTorch's own implementations, and write it as JSON for `bellows run --costs FILE`.

    python3 traces/pytorch/calibrate.py --gpu A100 --out a100.json      # on a CUDA machine
    python3 traces/pytorch/calibrate.py --gpu V100 --device cpu --quick --out cpu.json

What it times, each after a warm-up and with the device synchronised around the timed loop:
  fixed: kernel_s, one tiny eager op (x.add_(1) on one element: launch and dispatch, Python
    included); tensor_s, the Python work a DDP hook does per tensor beyond its kernels (a view
    into the bucket, a reshape, a list append); collective_s, one all_reduce of one element in a
    one-process group (gloo on the CPU, NCCL on a GPU): the call's own cost, not a network's.
  ops, each at several sizes (its rate = size / (time - kernels x kernel_s), at the sizes where
    that difference is a fifth of the time or more: below, the fixed costs hide the rate):
    elementwise  a.add_(b), 12 bytes an element;     matmul  torch.mm(M, Q) with Q of rank 2;
    orthogonalise  powerSGD_hook's Gram-Schmidt on P (n x 2), per column;
    topk   torch.topk(|x|, 1% of n);                 quantise  QSGD's encode at 64 levels;
    pack   signs packed 8 to a byte;                 scatter   index_add_ of k entries;
    optimizer  torch.optim.SGD(momentum 0.9).step() over 8 tensors;  random  torch.randperm(n);
    qr  (where this PyTorch's _orthogonalize runs torch.linalg.qr above a rank) one call on a
    [1, n, 4] batch, n rows, its floor at 100 rows counted as kernel launches.
  hooks: how this PyTorch's powerSGD_hook runs, read from its source (synchronises the device in
    its last callback; orthogonalises the warm-started Q again; QR above rank N).
  efficiency (a GPU only): torchvision's ResNet-50, forward and backward, channels-last, at
    batches 64, 128 and 256, in tf32 (fp32 on a V100) and under bf16 autocast where the GPU has
    bf16, against the GPU's datasheet peak at that precision (bellows' workload profile counts
    24.60 GFLOP an image); the profile keeps batch 128's, the others are in its source: small
    batches are bound by eager PyTorch's launches, not by the GPU.
What it cannot measure here, and copies from the built-in profile of the same GPU with its
citations: the collective library's share of a link (one machine has no network to measure),
and whether allgathers overlap the backward (DDP's hooks: yes).

The profile records the device, the versions and the date. Measured on a CPU, the rates are a
CPU's, only labelled as the --gpu they price: for testing the path, not for results.
"""

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
COSTS = os.path.join(HERE, "..", "..", "sim", "costs")
BUILTINS = os.path.join(COSTS, "profiles")
sys.path.insert(0, COSTS)
from gen_costs import dumps  # noqa: E402  (the profiles' JSON layout)
# the datasheet peaks bellows uses (sim/net/cluster.c), flop/s
PEAK = {"V100": {"fp32": 15.7e12}, "A100": {"fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12},
        "H100": {"fp32": 67e12, "tf32": 494.7e12, "bf16": 989.4e12},
        # H200 SXM datasheet: the H100 SXM's tensor cores (dense TF32 494.7, BF16 989.4 TFLOPS)
        # with HBM3e at 4.8 TB/s; its NVLink 4 and NICs are the H100 HGX's, so the links'
        # cited shares are copied from pytorch-h100 (CITED_FROM)
        "H200": {"fp32": 67e12, "tf32": 494.7e12, "bf16": 989.4e12}}
CITED_FROM = {"H200": "H100"}  # a GPU without a built-in profile: whose cited network part it takes
EFF_BATCHES = (64, 128, 256)  # per-GPU batches the efficiency is measured at; the profile keeps 128's
RESNET50_FLOPS = 24.60e9  # forward and backward an image, sim/workload/profiles/resnet50.json


class Timer:
    def __init__(self, device, quick):
        self.device, self.quick = device, quick

    def sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def each(self, fn, reps=None):
        """Seconds a call of fn, the median of 3 runs of reps calls after a warm-up."""
        reps = reps or (5 if self.quick else 20)
        fn()
        self.sync()
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            self.sync()
            runs.append((time.perf_counter() - t0) / reps)
        return sorted(runs)[1]


def fixed_costs(tm, dev):
    x = torch.zeros(1, device=dev)
    kernel_s = tm.each(lambda: x.add_(1), reps=200)
    bucket = torch.zeros(64 * 256, device=dev)
    shapes = [(16, 16)] * 64

    def hook_loop():  # what powerSGD_hook does per tensor outside its kernels
        out, at = [], 0
        for s in shapes:
            t = bucket[at:at + s[0] * s[1]].view(s)
            out.append(t.view(s[0], -1))
            at += s[0] * s[1]
        return out

    tensor_s = tm.each(hook_loop, reps=20) / len(shapes)
    return kernel_s, tensor_s


def collective_cost(tm, dev):
    import torch.distributed as dist
    backend = "nccl" if dev.type == "cuda" else "gloo"
    with tempfile.TemporaryDirectory() as d:
        dist.init_process_group(backend, init_method="file://" + os.path.join(d, "pg"), rank=0,
                                world_size=1)
        try:
            x = torch.ones(1, device=dev)
            return tm.each(lambda: dist.all_reduce(x), reps=50)
        finally:
            dist.destroy_process_group()


def qsgd_encode(x, s=64):  # GRACE's torch QSGD (grace_dl/torch/compressor/qsgd.py), one tensor
    norm = x.norm()
    level = x.abs() / norm * s
    floor = level.floor()
    up = torch.rand_like(level) < (level - floor)
    return ((floor + up) * x.sign()).to(torch.int8), norm


def pack_signs(x):
    bits = (x >= 0).view(-1, 8).to(torch.uint8)
    return (bits * torch.tensor([1, 2, 4, 8, 16, 32, 64, 128], dtype=torch.uint8,
                                device=x.device)).sum(1, dtype=torch.uint8)


def orthogonalize(p):
    from torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook import (
        _orthogonalize_gram_schmidt)
    _orthogonalize_gram_schmidt(p.unsqueeze(0))


def rate_point(units, t, fixed, last):
    """[units, rate] of a call of t seconds whose fixed part is `fixed`: the rate from what is left,
    where that is a fifth of the time or more (below, the fixed costs hide the rate), or at the
    largest size (then at least a fifth of the time); None otherwise."""
    rest = t - fixed
    if rest >= 0.2 * t or last:
        return [float(units), float("%.4g" % (units / max(rest, 0.2 * t)))]
    return None


# operation -> (kernels a stage, sizes' unit per call, the call for n elements)
def op_table(dev):
    def elementwise(n):
        a, b = torch.ones(n, device=dev), torch.ones(n, device=dev)
        return 12 * n, lambda: a.add_(b)

    def matmul(n):
        side = max(2, int(n ** 0.5))
        m, q = torch.randn(side, side, device=dev), torch.randn(side, 2, device=dev)
        return side * side, lambda: torch.mm(m, q)

    def orth(n):
        p = torch.randn(n, 2, device=dev)
        return 2 * n, lambda: orthogonalize(p)  # two columns, size per column

    def topk(n):
        x = torch.randn(n, device=dev)
        return n, lambda: torch.topk(x.abs(), max(1, n // 100), sorted=False)

    def quantise(n):
        x = torch.randn(n, device=dev)
        return n, lambda: qsgd_encode(x)

    def pack(n):
        x = torch.randn(n - n % 8 or 8, device=dev)
        return x.numel(), lambda: pack_signs(x)

    def scatter(n):
        k = max(1, n // 100)
        out = torch.zeros(n, device=dev)
        idx = torch.randint(0, n, (k,), device=dev)
        v = torch.randn(k, device=dev)
        return k, lambda: out.index_add_(0, idx, v)

    def optimizer(n):
        params = [torch.nn.Parameter(torch.randn(max(1, n // 8), device=dev)) for _ in range(8)]
        for p in params:
            p.grad = torch.randn_like(p)
        opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)
        return sum(p.numel() for p in params), opt.step

    def random(n):
        return n, lambda: torch.randperm(n, device=dev)

    return {"elementwise": (1, elementwise), "matmul": (1, matmul),
            "orthogonalise": (4, orth), "topk": (2, topk), "quantise": (8, quantise),
            "pack": (4, pack), "scatter": (1, scatter), "optimizer": (6, optimizer),
            "random": (1, random)}


def measure_ops(tm, dev, kernel_s, sizes):
    ops = {}
    for name, (kernels, make) in op_table(dev).items():
        points = []
        for n in sizes:
            units, fn = make(int(n))
            t = tm.each(fn)
            per_stage = t / 2 if name == "orthogonalise" else t  # a stage is one column
            units = units / 2 if name == "orthogonalise" else units
            point = rate_point(units, per_stage, kernels * kernel_s, n == sizes[-1])
            if point:
                points.append(point)
        points.sort()
        dedup = [p for i, p in enumerate(points) if i == 0 or p[0] > points[i - 1][0]]
        ops[name] = {"kernels": kernels, "rate": dedup,
                     "source": "measured by calibrate.py: %s" % name}
    return ops


def hook_model():
    """The "hooks" of the profile: PowerSGD's DDP hook as this PyTorch's code runs it, read from
    its source (torch/distributed/algorithms/ddp_comm_hooks/powerSGD_hook.py): whether its last
    callback synchronises the device (the backward waits for the bucket), whether it
    orthogonalises the warm-started Q again every step, and the rank above which _orthogonalize
    runs torch.linalg.qr instead of Gram-Schmidt (pytorch/pytorch PR #72043: `rank <= 2`). None
    where the source cannot be read."""
    import inspect
    import re
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd
    try:
        hook, orth = inspect.getsource(psgd.powerSGD_hook), inspect.getsource(psgd._orthogonalize)
    except (OSError, TypeError, AttributeError) as e:
        print("calibrate.py: warning: no \"hooks\" written, this PyTorch's powerSGD_hook source "
              "cannot be read (%s): bellows will price PowerSGD's hook as overlapping the backward "
              "and orthogonalising by Gram-Schmidt; add the built-in profile's \"hooks\" by hand"
              % e, file=sys.stderr)
        return None
    ps = {"synchronizes": "torch.cuda.synchronize" in hook,
          "orthogonalises_query": "_orthogonalize(q" in hook}
    if "linalg.qr" in orth:
        m = re.search(r"rank\s*<=\s*(\d+)", orth)
        ps["qr_above_rank"] = int(m.group(1)) if m else 2
    return {"framework": "PyTorch " + torch.__version__.split("+")[0], "powersgd": ps,
            "source": "read from this PyTorch's powerSGD_hook.py by traces/pytorch/calibrate.py "
                      "(its last callback's torch.cuda.synchronize, `for q in qs: "
                      "_orthogonalize(q)`, _orthogonalize's `rank <= N` before torch.linalg.qr)"}


def measure_qr(tm, dev, kernel_s, sizes):
    """ops.qr: one _orthogonalize call on a [1, n, 4] fp32 batch (torch.linalg.qr above rank 2),
    size in rows; its floor, the call at 100 rows, kept as "kernels" launches of kernel_s (its
    launches and the solver's dispatch), the rate from what the larger calls take beyond it."""
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd

    def call(n):
        m = torch.randn(1, int(n), 4, device=dev)
        return tm.each(lambda: psgd._orthogonalize(m))

    floor = call(100)
    points = []
    for n in [100] + [s for s in sizes if s > 100]:
        point = rate_point(n, call(n) if n > 100 else floor, floor, n == sizes[-1])
        if point:
            points.append(point)
    return {"kernels": float("%.3g" % (floor / kernel_s)), "rate": points,
            "source": "measured by calibrate.py: qr, _orthogonalize on [1, n, 4] (torch.linalg.qr),"
                      " its floor at 100 rows as kernel launches"}


def resnet50_rate(tm, dev, batch, bf16):
    """Images a second of torchvision's ResNet-50, forward and backward (no optimizer step),
    channels-last as PyTorch's AMP recipes run it; under bf16 autocast when bf16."""
    import torchvision
    model = torchvision.models.resnet50().to(dev).to(memory_format=torch.channels_last)
    x = torch.randn(batch, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device=dev)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        model.zero_grad(set_to_none=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(model(x), y)
        loss.backward()

    t = tm.each(step, reps=5 if tm.quick else 20)
    del model, x, y
    return batch / t


def efficiency(tm, dev, gpu):
    """The sustained fraction of the datasheet peak, per precision the GPU has, from ResNet-50's
    rate at EFF_BATCHES[1] images; the other batches' rates go in the source."""
    tf32 = gpu in ("A100", "H100", "H200") and torch.backends.cudnn.allow_tf32
    precisions = [("tf32" if tf32 else "fp32", False)]
    if "bf16" in PEAK[gpu]:
        precisions.append(("bf16", True))
    eff, notes = {}, []
    for precision, bf16 in precisions:
        rates = {b: resnet50_rate(tm, dev, b, bf16) for b in EFF_BATCHES}
        eff[precision] = round(min(1.0, rates[EFF_BATCHES[1]] * RESNET50_FLOPS
                                   / PEAK[gpu][precision]), 4)
        notes.append("%s %s img/s" % (precision, ", ".join(
            "%.0f at %d" % (rates[b], b) for b in EFF_BATCHES)))
    eff["source"] = ("torchvision resnet50, forward and backward, channels-last, one GPU: "
                     + "; ".join(notes) + " (the efficiency is batch %d's, at %.2f GFLOP an "
                     "image)" % (EFF_BATCHES[1], RESNET50_FLOPS / 1e9))
    return eff


def builtin(gpu):
    with open(os.path.join(BUILTINS, "pytorch-%s.json" % CITED_FROM.get(gpu, gpu).lower())) as f:
        return json.load(f)


def device_name(dev):
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    return "CPU %s (%s, %d threads)" % (platform.processor() or platform.machine(),
                                        platform.node(), torch.get_num_threads())


def versions(dev):
    v = "torch %s, Python %s" % (torch.__version__, platform.python_version())
    if dev.type == "cuda":
        v += ", CUDA %s, cuDNN %s" % (torch.version.cuda, torch.backends.cudnn.version())
    return v


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", required=True, choices=sorted(PEAK),
                    help="the bellows GPU the profile prices (--gpu of the runs)")
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda if available)")
    ap.add_argument("--out", required=True, help="the profile to write (.json)")
    ap.add_argument("--name", default=None, help="the profile's name (default: measured-GPU)")
    ap.add_argument("--quick", action="store_true", help="fewer sizes and repetitions")
    a = ap.parse_args(argv)
    if not a.out.endswith(".json"):
        ap.error("--out: a profile file ends in .json")
    dev = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    tm = Timer(dev, a.quick)
    big = 1e6 if dev.type == "cpu" else 1e8
    sizes = [1e3, 1e5, big] if a.quick else [1e3, 1e4, 1e5, 1e6, 1e7] + ([big] if big > 1e7 else [])
    kernel_s, tensor_s = fixed_costs(tm, dev)
    prof = {
        "bellows_costs": 1,
        "name": a.name or "measured-" + a.gpu.lower(),
        "implementation": "PyTorch %s DDP + %s, compression in DDP communication hooks"
                          % (torch.__version__.split("+")[0], "NCCL" if dev.type == "cuda" else "gloo"),
        "gpu": a.gpu,
        "source": "measured by traces/pytorch/calibrate.py on %s; the links' shares and the "
                  "allgathers' overlap copied from pytorch-%s (cited, not measured here)"
                  % (device_name(dev), CITED_FROM.get(a.gpu, a.gpu).lower()),
        "measured": {"device": device_name(dev)[:127], "versions": versions(dev)[:127],
                     "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")},
    }
    if dev.type == "cuda":
        prof["efficiency"] = efficiency(tm, dev, a.gpu)
    prof["fixed"] = {"tensor_s": float("%.4g" % tensor_s), "kernel_s": float("%.4g" % kernel_s),
                     "collective_s": float("%.4g" % collective_cost(tm, dev)),
                     "source": "measured by calibrate.py (one process: a collective call's own "
                               "cost, no network)"}
    prof["ops"] = measure_ops(tm, dev, kernel_s, sizes)
    hooks = hook_model()
    if hooks and hooks["powersgd"].get("qr_above_rank"):
        prof["ops"]["qr"] = measure_qr(tm, dev, kernel_s, sizes)
    cited = builtin(a.gpu)
    prof["networks"] = cited["networks"]
    prof["allgather"] = cited["allgather"]
    if hooks:
        prof["hooks"] = hooks
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        f.write(dumps(prof) + "\n")
    os.replace(tmp, a.out)
    print("%s: %s on %s (kernel %.3g us, tensor %.3g us, collective %.3g us)"
          % (a.out, prof["name"], prof["measured"]["device"], 1e6 * kernel_s, 1e6 * tensor_s,
             1e6 * prof["fixed"]["collective_s"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
