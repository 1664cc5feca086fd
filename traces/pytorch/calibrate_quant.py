#!/usr/bin/python3
"""calibrate_quant.py: time block quantisation of the kind ZeRO++ runs (qwZ's int8 weights, qgZ's
int4 gradients: one scale a block, symmetric) on this machine's GPU, as one fused kernel and as
eager PyTorch ops, and write the rates as JSON (sim/costs/measured/).

    python3 traces/pytorch/calibrate_quant.py --out h200-quant.json            # on a CUDA machine
    python3 traces/pytorch/calibrate_quant.py --device cpu --quick --out t.json  # the path

DeepSpeed quantises with CUDA kernels of its own (csrc/quantization: one pass that reads a block,
finds its absolute maximum, scales, rounds and packs). This stand-in writes the same arithmetic as
one torch.compile'd function (Triton fuses it into a kernel or two) beside the eager ops it
replaces, so the JSON says what a fused implementation's rate is against an eager one's, in fp16
values a second, each the median of 3 runs of timed calls after a warm-up.
"""

import argparse
import datetime
import json
import os
import platform
import sys
import time

import torch

BLOCK = 2048  # values a scale (DeepSpeed's qwZ groups hold up to 8000 values of a rank's shard)


def quantise(x, bits):
    """x: (blocks, BLOCK) fp16 -> int8 codes and one fp32 scale a block (symmetric, round)."""
    top = 2 ** (bits - 1) - 1
    scale = x.abs().amax(dim=1, keepdim=True).float().clamp_min(1e-12) / top
    q = torch.clamp(torch.round(x.float() / scale), -top, top).to(torch.int8)
    return q, scale


def dequantise(q, scale):
    return (q.float() * scale).half()


def timed(fn, sync, reps):
    fn()
    sync()
    runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        runs.append((time.perf_counter() - t0) / reps)
    return sorted(runs)[1]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda if available)")
    ap.add_argument("--out", required=True, help="the JSON to write")
    ap.add_argument("--quick", action="store_true", help="small sizes (tests the path)")
    a = ap.parse_args(argv)
    dev = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    sizes = [2 ** 20, 2 ** 22] if a.quick else [2 ** 20, 2 ** 23, 2 ** 26, 2 ** 29]
    compiled = hasattr(torch, "compile") and dev.type == "cuda"
    cq = torch.compile(quantise) if compiled else quantise
    cdq = torch.compile(dequantise) if compiled else dequantise
    rows = []
    for n in sizes:
        x = torch.randn(n // BLOCK, BLOCK, device=dev, dtype=torch.float16)
        reps = 3 if a.quick else max(3, int(2e9 // n))
        for bits in (8, 4):
            q, s = quantise(x, bits)
            row = {"values": n, "bits": bits}
            for name, fq, fdq in (("fused", cq, cdq), ("eager", quantise, dequantise)):
                tq = timed(lambda: fq(x, bits), sync, reps)
                tdq = timed(lambda: fdq(q, s), sync, reps)
                row[name] = {"quantise_values_per_s": float("%.4g" % (n / tq)),
                             "dequantise_values_per_s": float("%.4g" % (n / tdq))}
            rows.append(row)
            print("%10d values int%d: fused %.3g / %.3g, eager %.3g / %.3g values/s (q / dq)"
                  % (n, bits, row["fused"]["quantise_values_per_s"],
                     row["fused"]["dequantise_values_per_s"], row["eager"]["quantise_values_per_s"],
                     row["eager"]["dequantise_values_per_s"]), flush=True)
        del x
    out = {"bellows_quant": 1,
           "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU " + platform.machine(),
           "versions": "torch %s, Python %s" % (torch.__version__, platform.python_version()),
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
           "block": BLOCK, "fused_by": "torch.compile" if compiled else "none (eager twice)",
           "method": "traces/pytorch/calibrate_quant.py: fp16 values in blocks of %d, one fp32 scale "
                     "a block, int8 codes; the median of 3 runs after a warm-up" % BLOCK,
           "rows": rows}
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    os.replace(tmp, a.out)
    print("%s: %d rows on %s" % (a.out, len(rows), out["device"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
