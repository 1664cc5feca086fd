#!/usr/bin/python3
"""calibrate_hooks.py: time PyTorch DDP's communication hooks on this machine's GPU, step by step,
and write what it measured as JSON (sim/costs/measured/), for bellows' hook costs and stragglers.

    python3 traces/pytorch/calibrate_hooks.py --out h200-hooks.json             # on a CUDA machine
    python3 traces/pytorch/calibrate_hooks.py --device cpu --quick --out t.json   # the path, on a CPU

One process, a DDP group of one (NCCL on a GPU, gloo on a CPU): its collectives are local copies,
so what a hook adds to a step over the `noop` hook is the hook's own work on the GPU and in
Python (PowerSGD's P = MQ, Gram-Schmidt, Q = M^T P, its error feedback and its
torch.cuda.synchronize), not a network's. Hooks timed, each on the same model and batch:
  noop      returns the bucket as it is (no collective): the step's compute and DDP's own cost;
  allreduce DDP's default (no hook);
  fp16      torch's fp16_compress_hook;
  powersgd-rR   torch's powerSGD_hook, matrix_approximation_rank R, start_powerSGD_iter 2,
            error feedback and warm start on (the defaults), timed after the warm-up;
  batched-r4    torch's batched_powerSGD_hook, rank 4;
  topk-1pct an allgather hook as GRACE's torch backend runs Top-k (grace_dl/torch/compressor/
            topk.py: torch.topk of |g|, values and indices allgathered, scattered back), 1%.
Every step is timed alone (the device synchronised after it), after warm-up steps; the JSON keeps
each hook's per-step times, median, mean and standard deviation: the allreduce's coefficient of
variation is a lower bound on a step's variance across GPUs (one GPU, data already on it).
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook as psgd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from calibrate import versions  # noqa: E402  (the versions line both measurements record)


def noop_hook(state, bucket):
    fut = torch.futures.Future()
    fut.set_result(bucket.buffer())
    return fut


class TopK:
    """GRACE's Top-k with error feedback (residual memory per bucket), collectives by allgather."""

    def __init__(self, frac):
        self.frac, self.residual = frac, {}

    def __call__(self, state, bucket):
        g = bucket.buffer()
        key = (bucket.index(), g.numel())  # DDP rebuilds its buckets after the first step
        if key in self.residual:
            g = g + self.residual[key]
        k = max(1, int(g.numel() * self.frac))
        _, idx = torch.topk(g.abs(), k, sorted=False)
        vals = g[idx]
        sent = torch.zeros_like(g)
        sent[idx] = vals
        self.residual[key] = g - sent
        n = dist.get_world_size()
        gv = [torch.empty_like(vals) for _ in range(n)]
        gi = [torch.empty_like(idx) for _ in range(n)]
        dist.all_gather(gv, vals)
        dist.all_gather(gi, idx)
        out = torch.zeros_like(g)
        for v, i in zip(gv, gi):
            out.index_add_(0, i, v)
        out.div_(n)
        fut = torch.futures.Future()
        fut.set_result(out)
        return fut


def hooks():
    """name -> (hook, its state factory); None: DDP's default allreduce."""
    def powersgd(rank):
        return lambda: psgd.PowerSGDState(process_group=None, matrix_approximation_rank=rank,
                                          start_powerSGD_iter=2)
    return [("noop", noop_hook, lambda: None), ("allreduce", None, lambda: None),
            ("fp16", default_hooks.fp16_compress_hook, lambda: None),
            ("powersgd-r1", psgd.powerSGD_hook, powersgd(1)),
            ("powersgd-r2", psgd.powerSGD_hook, powersgd(2)),
            ("powersgd-r4", psgd.powerSGD_hook, powersgd(4)),
            ("batched-r4", psgd.batched_powerSGD_hook, powersgd(4)),
            ("topk-1pct", TopK(0.01), lambda: None)]


def resnet50(dev, quick):
    import torchvision
    batch, side = (8, 64) if quick else (128, 224)
    model = torchvision.models.resnet50().to(dev).to(memory_format=torch.channels_last)
    x = torch.randn(batch, 3, side, side, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device=dev)
    loss = torch.nn.CrossEntropyLoss()
    return model, lambda m: loss(m(x), y), {"model": "resnet50", "batch": batch, "image": side,
                                            "precision": "tf32" if dev.type == "cuda" else "fp32"}


def gpt2(dev, quick):
    from transformers import GPT2Config, GPT2LMHeadModel
    batch, seq = (1, 64) if quick else (8, 1024)
    model = GPT2LMHeadModel(GPT2Config()).to(dev)
    ids = torch.randint(0, 50257, (batch, seq), device=dev)

    def step(m):
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
            return m(input_ids=ids, labels=ids).loss
    return model, step, {"model": "gpt2-small", "batch": batch, "sequence": seq,
                         "precision": "bf16 autocast" if dev.type == "cuda" else "fp32"}


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def time_hook(build, dev, quick, hook, state, warm, steps):
    torch.manual_seed(0)
    model, loss_of, setting = build(dev, quick)
    ddp = DDP(model, device_ids=[dev.index or 0] if dev.type == "cuda" else None)
    calls, inside = [0], [0.0]
    if hook is not None:
        def counted(state, bucket, h=hook):  # the hook's wall time as DDP runs it, inline
            calls[0] += 1
            t = time.perf_counter()
            fut = h(state, bucket)
            inside[0] += time.perf_counter() - t
            return fut
        ddp.register_comm_hook(state, counted)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3, momentum=0.9)
    times, hook_s = [], []
    for i in range(warm + steps):
        inside[0] = 0.0
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss_of(ddp).backward()
        opt.step()
        sync(dev)
        if i >= warm:
            times.append(time.perf_counter() - t0)
            hook_s.append(inside[0])
    del ddp, model, opt
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    mean = statistics.fmean(times)
    sd = statistics.pstdev(times)
    return setting, {"median_s": float("%.5g" % statistics.median(times)), "mean_s": float("%.5g" % mean),
            "std_s": float("%.4g" % sd), "cv": float("%.4g" % (sd / mean)), "steps": steps,
            "hook_calls_per_step": calls[0] / (warm + steps),
            "hook_wall_s_per_step": float("%.4g" % statistics.median(hook_s)),
            "per_step_s": [float("%.5g" % t) for t in times]}


def orth_ops(dev, quick):
    """Seconds per call of what powerSGD_hook's _orthogonalize runs on one matrix's P or Q
    (a batch of one, fp32): Gram-Schmidt at ranks 1 and 2, torch.linalg.qr at rank 4."""
    sizes = [1000, 10000] if quick else [100, 1000, 10000, 100000, 1000000]
    out = []
    for n in sizes:
        for r in (1, 2, 4):
            m = torch.randn(1, n, r, device=dev)
            f = (lambda: psgd._orthogonalize(m)) if hasattr(psgd, "_orthogonalize") else None
            if f is None:
                continue
            f()
            sync(dev)
            reps = 5 if quick else 50
            t0 = time.perf_counter()
            for _ in range(reps):
                f()
            sync(dev)
            out.append({"n": n, "rank": r, "s": float("%.4g" % ((time.perf_counter() - t0) / reps))})
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda if available)")
    ap.add_argument("--out", required=True, help="the JSON to write")
    ap.add_argument("--quick", action="store_true", help="tiny inputs, few steps (tests the path)")
    ap.add_argument("--models", default="resnet50,gpt2", help="resnet50, gpt2 (comma-separated)")
    ap.add_argument("--steps", type=int, default=None, help="timed steps a hook (default 40)")
    a = ap.parse_args(argv)
    dev = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        torch.backends.cudnn.benchmark = True
    steps = a.steps or (3 if a.quick else 40)
    warm = 3 if a.quick else 8
    builders = {"resnet50": resnet50, "gpt2": gpt2}
    out = {"bellows_hooks": 1,
           "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU " + platform.machine(),
           "versions": versions(dev),
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
           "method": "traces/pytorch/calibrate_hooks.py: one process, a DDP group of one "
                     "(collectives are local), each step timed alone after %d warm-up steps" % warm,
           "models": []}
    with tempfile.TemporaryDirectory() as d:
        dist.init_process_group("nccl" if dev.type == "cuda" else "gloo",
                                init_method="file://" + os.path.join(d, "pg"), rank=0, world_size=1)
        try:
            for name in a.models.split(","):
                if name not in builders:
                    ap.error("--models: %r is not one of %s" % (name, ", ".join(builders)))
                entry = {"hooks": {}}
                for hname, hook, state in hooks():
                    try:
                        setting, r = time_hook(builders[name], dev, a.quick, hook, state(), warm,
                                               steps)
                    except ImportError as e:
                        print("%s: skipped (%s)" % (name, e), file=sys.stderr)
                        break
                    except (RuntimeError, AssertionError) as e:  # a hook this PyTorch can't run
                        msg = type(e).__name__ + (": " + str(e).strip().splitlines()[0][:200]
                                                  if str(e).strip() else "")
                        entry["hooks"][hname] = {"error": msg}
                        print("%-10s %-12s failed: %s" % (name, hname, msg), file=sys.stderr)
                        continue
                    entry.update(setting)
                    entry["hooks"][hname] = r
                    print("%-10s %-12s median %8.3f ms  cv %.4f  hook calls/step %.1f, in hooks "
                          "%.3f ms" % (name, hname, 1e3 * r["median_s"], r["cv"],
                                       r["hook_calls_per_step"], 1e3 * r["hook_wall_s_per_step"]),
                          flush=True)
                if not entry["hooks"]:
                    continue
                out["models"].append(entry)
        finally:
            dist.destroy_process_group()
    out["orthogonalise_calls"] = orth_ops(dev, a.quick)
    write_json(a.out, out)
    return 0


def write_json(path, out):
    """The measurement as JSON, whole or not at all (a temporary file renamed over it)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    print("%s: %d models on %s" % (path, len(out["models"]), out["device"]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
