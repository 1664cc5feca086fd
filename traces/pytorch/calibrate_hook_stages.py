#!/usr/bin/python3
"""calibrate_hook_stages.py: time each stage of PyTorch's powerSGD_hook on this machine's GPU, at
the shapes of a real model's gradients, rank by rank, and write them as JSON (sim/costs/measured/).

    python3 traces/pytorch/calibrate_hook_stages.py --out h200-hook-stages.json       # a CUDA machine
    python3 traces/pytorch/calibrate_hook_stages.py --device cpu --quick --out t.json   # the path

calibrate_hooks.py times whole DDP steps under the hook; this one takes the hook apart, to say
which of its stages grows with the rank (bellows' hooks-h200 rows miss GPT-2 small at rank 2: the
measured step grows by 17 ms from rank 1 to 2 and by 8 ms from 2 to 4, where one _orthogonalize
call alone grows by 0.08 and 0.06 ms). For every parameter the hook compresses (viewed as
tensor.view(shape[0], -1), kept when _should_compress says so at min_compression_rate 2, the
hook's default), P and Q live in one flat buffer each, as the hook's p_memory_dict and
q_memory_dict, and each stage runs over all the model's matrices, timed as a whole (the device
synchronised before and after, the median of several repetitions):
  orth_q    _orthogonalize(q) for every Q (the warm start's re-orthogonalisation, every step);
  p_mq      torch.bmm(M, Q, out=P);
  orth_p    _orthogonalize(p) for every P (after the P allreduce);
  q_mtp     torch.bmm(M^T, P, out=Q);
  decode    torch.bmm(P, Q^T, out=M);
  feedback  the hook's error feedback over the whole flat gradient, rank-independent: add_ the
            error, clone, and the new error as the clone minus the decoded gradient;
  top_*     the three products of the largest matrix alone (its shape in top_shape): GPT-2's
            embedding, whose Q = M^T P reduces over 50,257 rows (sum_s leaves these out).
Python's own work per tensor is inside each stage's time (a loop over the matrices, as the hook
runs it); DDP's buckets and the hook's futures are not (calibrate_hooks.py has the whole step).
"""

import argparse
import datetime
import os
import platform
import statistics
import sys
import time

import torch
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from calibrate import versions  # noqa: E402
from calibrate_hooks import gpt2, resnet50, sync, write_json  # noqa: E402

RANKS = (1, 2, 4)


def orthogonalize(m):
    """The hook's _orthogonalize (PyTorch 1.10+ takes a batch of matrices; 1.8-1.9 one matrix)."""
    if m.dim() == 3 and "matrices" not in psgd._orthogonalize.__code__.co_varnames:
        psgd._orthogonalize(m[0])
    else:
        psgd._orthogonalize(m)


def matrices(model, dev, rank):
    """The gradients the hook compresses at this rank: [1, n, m] each, with P [1, n, r] and
    Q [1, m, r] views of one flat buffer each; the flat gradient for the error feedback."""
    shapes = [p.shape for p in model.parameters()]
    total = sum(int(torch.Size(s).numel()) for s in shapes)
    flat = torch.randn(total, device=dev)
    ms, off = [], 0
    for s in shapes:
        size = int(torch.Size(s).numel())
        n = s[0] if len(s) else 1
        m = size // n
        r = min(n, m, rank)
        if psgd._should_compress(n, m, r, 2)[0]:
            ms.append((flat[off:off + size].view(1, n, m), r))
        off += size
    p_buf = torch.randn(sum(mm.shape[1] * r for mm, r in ms), device=dev)
    q_buf = torch.randn(sum(mm.shape[2] * r for mm, r in ms), device=dev)
    out, po, qo = [], 0, 0
    for mm, r in ms:
        n, m = mm.shape[1], mm.shape[2]
        out.append((mm, p_buf[po:po + n * r].view(1, n, r), q_buf[qo:qo + m * r].view(1, m, r)))
        po, qo = po + n * r, qo + m * r
    return flat, out


def products(mats):
    """The hook's three products over mats: P = M Q, Q = M^T P, and the decode P Q^T into M."""
    return {
        "p_mq": lambda: [torch.bmm(m, q, out=p) for m, p, q in mats],
        "q_mtp": lambda: [torch.bmm(m.transpose(1, 2), p, out=q) for m, p, q in mats],
        "decode": lambda: [torch.bmm(p, q.transpose(1, 2), out=m) for m, p, q in mats],
    }


def stages(flat, mats, err):
    prod = products(mats)
    out = {
        "orth_q": lambda: [orthogonalize(q) for _, _, q in mats],
        "p_mq": prod["p_mq"],
        "orth_p": lambda: [orthogonalize(p) for _, p, _ in mats],
        "q_mtp": prod["q_mtp"],
        "decode": prod["decode"],
        "feedback": lambda: err.copy_(flat.add_(err).clone() - flat),
    }
    # the three products of the largest matrix alone (GPT-2's embedding, 50,257 x 768: its
    # Q = M^T P reduces over 50,257 rows), to tell a shape's cost from the count of calls
    top = [max(mats, key=lambda t: t[0].numel())]
    out.update({"top_" + k: f for k, f in products(top).items()})
    return out


def time_stage(fn, dev, reps):
    fn()  # warm-up: kernels chosen, caches filled
    times = []
    for _ in range(reps):
        sync(dev)
        t = time.perf_counter()
        fn()
        sync(dev)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def measure(build, dev, quick):
    torch.manual_seed(0)
    model, _, setting = build(dev, quick)
    entry = dict(setting, ranks={})
    reps = 3 if quick else 20
    for rank in RANKS:
        flat, mats = matrices(model, dev, rank)
        err = torch.zeros_like(flat)
        row = {name: float("%.4g" % time_stage(fn, dev, reps))
               for name, fn in stages(flat, mats, err).items()}
        row["sum_s"] = float("%.4g" % sum(v for k, v in row.items() if not k.startswith("top")))
        row["matrices"] = len(mats)
        row["top_shape"] = list(max((m for m, _, _ in mats), key=torch.numel).shape[1:])
        entry["ranks"][str(rank)] = row
        print("%-10s rank %d: %s" % (setting["model"], rank, "  ".join(
            "%s %.3f ms" % (k, 1e3 * v) for k, v in row.items() if isinstance(v, float))),
            flush=True)
        del flat, mats, err
    del model
    return entry


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda if available)")
    ap.add_argument("--out", required=True, help="the JSON to write")
    ap.add_argument("--quick", action="store_true", help="tiny inputs, few repetitions (the path)")
    ap.add_argument("--models", default="resnet50,gpt2", help="resnet50, gpt2 (comma-separated)")
    a = ap.parse_args(argv)
    dev = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if dev.type == "cuda":  # as calibrate_hooks.py runs the whole steps
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    builders = {"resnet50": resnet50, "gpt2": gpt2}
    out = {"bellows_hook_stages": 1,
           "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU " + platform.machine(),
           "versions": versions(dev),
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
           "method": "traces/pytorch/calibrate_hook_stages.py: each stage of powerSGD_hook over "
                     "all the matrices it compresses, the device synchronised around it, the "
                     "median of %d repetitions after one warm-up" % (3 if a.quick else 20),
           "models": []}
    for name in a.models.split(","):
        if name not in builders:
            ap.error("--models: %r is not one of %s" % (name, ", ".join(builders)))
        try:
            out["models"].append(measure(builders[name], dev, a.quick))
        except ImportError as e:
            print("%s: skipped (%s)" % (name, e), file=sys.stderr)
    write_json(a.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
