#!/usr/bin/python3
"""fit_grace.py: the grace-tf cost profile (TensorFlow 1.15 + Horovod over OpenMPI/TCP, as GRACE
measured it) fitted to a third of GRACE's ResNet-50 rows at 10 Gbps, and bellows' prediction of
all of them (tests/test_published.sh checks the committed profile's predictions).

    /usr/bin/python3 sim/costs/fit_grace.py BELLOWS [--write]   # fit, print; --write: the JSON
    /usr/bin/python3 sim/costs/fit_grace.py BELLOWS --table [--profile FILE] [--bw 10g] [--csv]

The rows (tests/data/grace_resnet50.csv, from sands-lab/grace-data; sim/costs/grace_extract.py):
ResNet-50, one V100 per node, 2, 4 and 8 workers, batch 64 per GPU (fp32), for none, PowerSGD
(rank 1), TopK 1%, RandomK 1%, QSGD, signSGD and EF-signSGD. Where GRACE ran several variants
of a method at a size (with and without error-feedback memory; QSGD with 64, 128 and 256
levels) the row is their mean, and so is bellows' prediction of it, variant by variant.

Each variant is a bellows run of the mlp priced as resnet50-tf (ResNet-50 with TensorFlow's
weight layouts, which GRACE's PowerSGD reshapes as [shape[0], -1]), at GRACE's wire formats
(signSGD's and QSGD's bytes, qsgd:wire=bytes and signsgd:wire=bytes), on a star of 10 Gbps
links with 25 us of latency, analytic collectives, DDP-like buckets (Horovod fuses ready tensors
as DDP fills buckets). What is fitted, and on which rows, is FIT below; everything else in the
profile is cited or derived, and printed beside the fit.
"""

import copy
import csv
import json
import math
import os
import subprocess
import sys
import tempfile

from gen_costs import dumps  # the profiles' JSON layout

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
ROWS = os.path.join(ROOT, "tests", "data", "grace_resnet50.csv")
OUT = os.path.join(HERE, "profiles", "grace-tf.json")

# bellows' flags for each of GRACE's variants
VARIANTS = {
    "none": "--compressor none --policy sync",
    "powersgd_mem": "--compressor powersgd --policy static:level=1",
    "topk_mem_ratio=0.01": "--compressor topk --policy static:level=0.01",
    "topk_ratio=0.01": "--compressor topk:ef=0 --policy static:level=0.01",
    "randomk_mem_ratio=0.01": "--compressor randomk --policy static:level=0.01",
    "randomk_ratio=0.01": "--compressor randomk:ef=0 --policy static:level=0.01",
    "qsgd_q=64": "--compressor qsgd:wire=bytes --policy static:level=64",
    "qsgd_mem_q=64": "--compressor qsgd:ef=1,wire=bytes --policy static:level=64",
    "qsgd_q=128": "--compressor qsgd:wire=bytes --policy static:level=128",
    "qsgd_mem_q=128": "--compressor qsgd:ef=1,wire=bytes --policy static:level=128",
    "qsgd_q=256": "--compressor qsgd:wire=bytes --policy static:level=256",
    "qsgd_mem_q=256": "--compressor qsgd:ef=1,wire=bytes --policy static:level=256",
    "signsgd": "--compressor signsgd:ef=0,wire=bytes --policy static",
    "signsgd_mem": "--compressor signsgd:ef=1,wire=bytes --policy static",
    "efsignsgd_mem": "--compressor signsgd:ef=1,wire=bytes --policy static",
}
METHODS = ["none", "powersgd", "topk", "randomk", "qsgd", "signsgd", "efsignsgd"]
BW = {"1g": "1Gbps", "10g": "10Gbps", "25g": "25Gbps"}
STEPS = 3

# The fitted constants: (name, the 10 Gbps row it is fitted on, (method, workers), start)
FIT_WORKERS = 4
FIT = [
    ("allreduce_share", ("none", FIT_WORKERS), 0.8),
    ("allgather_share", ("signsgd", FIT_WORKERS), 0.8),
    ("kernel_s", ("qsgd", FIT_WORKERS), 10e-6),
    ("random_rate", ("randomk", FIT_WORKERS), 1e8),
    ("topk_rate", ("topk", FIT_WORKERS), 2e8),
    ("orthogonalise_kernels", ("powersgd", FIT_WORKERS), 20),
]

V100_MEM = 900e9  # NVIDIA V100 SXM2 datasheet, bytes/s
STREAM = 0.85 * V100_MEM  # streaming kernels' share of the peak (sim/costs/gen_costs.py)
CYCLE_S = 5e-3  # Horovod 0.18's HOROVOD_CYCLE_TIME default (horovod/common/operations.cc)
COLLECTIVE_S = 200e-6  # estimate: Horovod's negotiation (MPI gather + broadcast) and MPI's start


def profile(x):
    """The grace-tf profile for the fitted constants x (a dict); sources beside each constant."""
    fit = "fitted to GRACE's %s row (sim/costs/fit_grace.py)"
    ops = {
        "elementwise": {"kernels": 1, "rate": [[1, STREAM]],
                        "source": "a streaming pass at 85% of the V100's 900 GB/s"},
        "matmul": {"kernels": 1, "rate": [[1, 0.6 * V100_MEM / 4]],
                   "source": "tf.matmul of a rank-1 factor reads M once, at 60% of the peak "
                             "(as pytorch-v100)"},
        "orthogonalise": {"kernels": round(x["orthogonalise_kernels"], 1),
                          "rate": [[1, STREAM / 16]],
                          "source": "tf.linalg.qr (cuSolver's geqrf and orgqr) of P and of Q for "
                                    "every matrix, and GRACE's decompress run twice (grace_dl/"
                                    "tensorflow/compressor/powersgd.py): the kernels' count "
                                    + fit % "PowerSGD"},
        "topk": {"kernels": 2, "rate": [[1, float("%.4g" % x["topk_rate"])]],
                 "source": "tf.abs and tf.math.top_k, which sorts the whole tensor (cub radix "
                           "sort) for k >= 100; the rate " + fit % "TopK"},
        "quantise": {"kernels": 5, "rate": [[1, STREAM / 40]],
                     "source": "QSGD's 14 TensorFlow ops to encode (norm, abs, floor, uniform, "
                               "compare, sign, casts) and 4 to decode each worker's message, each "
                               "a streaming pass of about 8 bytes an element: 5 kernels and 40 "
                               "bytes an element a stage, on average"},
        "random": {"kernels": 1, "rate": [[1, float("%.4g" % x["random_rate"])]],
                   "source": "a tensor's random indices drawn on the GPU (GRACE's randomk draws "
                             "them with TensorFlow's stateless uniform ops); the rate "
                             + fit % "RandomK" + ", far above what tf.random.shuffle, "
                             "which TensorFlow runs on the CPU only and GRACE's first release "
                             "used, could reach: these rows were not measured with it"},
        "pack": {"kernels": 2, "rate": [[1, STREAM / 5]],
                 "source": "tf.greater_equal to a tf.bool and back to float: 5 bytes an "
                           "element, at the streaming rate"},
        "scatter": {"kernels": 4, "rate": [[1, STREAM / 32]],
                    "source": "gather or scatter_nd with its split, bitcast, expand_dims and "
                              "reshape (GRACE's topk decompress); an entry touches a 32-byte "
                              "sector"},
        "optimizer": {"kernels": 161, "rate": [[1, STREAM / 20]],
                      "source": "TensorFlow's ApplyMomentum, one kernel per variable (161 in "
                                "ResNet-50), 20 bytes a parameter at the streaming rate"},
    }
    return {
        "bellows_costs": 1,
        "name": "grace-tf",
        "implementation": "TensorFlow 1.15 + Horovod over OpenMPI/TCP, GRACE's compressors",
        "gpu": "V100",
        "software": "TensorFlow 1.15 + Horovod (GRACE's runs, 2020)",
        "source": "fitted to 6 of GRACE's 21 ResNet-50 rows at 10 Gbps (Xu et al., ICDCS 2021; "
                  "sands-lab/grace-data), the rest cited or derived: sim/costs/fit_grace.py",
        "efficiency": {"fp32": round(x["efficiency"], 4),
                       "source": "GRACE's one V100 alone, 409.45 img/s at batch 64 (the "
                                 "throughput row of 1 worker): what makes bellows' resnet50-tf "
                                 "step give it"},
        "fixed": {
            "tensor_s": float("%.4g" % (4 * x["kernel_s"])),
            "kernel_s": float("%.4g" % x["kernel_s"]),
            "collective_s": COLLECTIVE_S,
            "cycle_s": CYCLE_S,
            "source": "kernel_s, TensorFlow's cost of an op on the GPU, " + fit % "QSGD"
                      + "; tensor_s, the communicator's own four ops of a tensor (Horovod's "
                        "op, a division, a reshape, an assign); collective_s, an estimate of a "
                        "fused Horovod call's negotiation (an MPI gather of the ready tensors' "
                        "names to rank 0 and a broadcast of the plan, each a few TCP latencies) "
                        "and MPI's start; cycle_s, Horovod 0.18's background cycle, 5 ms "
                        "(HOROVOD_CYCLE_TIME, horovod/common/operations.cc)"},
        "ops": ops,
        "networks": {"tcp": {"allreduce": round(x["allreduce_share"], 4),
                             "allgather": round(x["allgather_share"], 4),
                             "source": "OpenMPI over TCP through host memory (Horovod's MPI "
                                       "backend copies each GPU tensor to the host and back): "
                                       "allreduce " + fit % "none" + ", allgather "
                                       + fit % "signSGD"}},
        "allgather": {"overlaps_backward": False,
                      "source": "GRACE's signSGD pays its whole allgather after the backward: "
                                "its upper-bound rows (no compression work) leave 142 ms of "
                                "the 143 ms a 10 Gbps ring needs for 7 x 25.6 MB exposed at 8 "
                                "workers"},
    }


def run(bellows, prof_path, variant, workers, bw, tmp):
    out = os.path.join(tmp, "r")
    cmd = ([bellows, "run", "--workload", "resnet50-tf", "--gpu", "V100", "--precision", "fp32",
            "--workers", str(workers), "--batch", "64", "--bandwidth", BW[bw], "--latency",
            "25us", "--collectives", "analytic", "--epochs", "1", "--train-samples",
            str(workers * 64 * STEPS), "--test-samples", "100", "--eval-every", "0",
            "--costs", prof_path, "--quiet", "--force", "--out", out]
           + VARIANTS[variant].split())
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    return workers * 64 * s["steps"] / s["sim_time_s"]


def measured():
    """{(method, workers, bw): (mean img/s, [variants])}"""
    by = {}
    with open(ROWS) as f:
        for r in csv.DictReader(f):
            key = (r["method"], int(r["workers"]), r["bw"])
            by.setdefault(key, []).append((r["variant"], float(r["throughput_img_s"])))
    return {k: (sum(v for _, v in rows) / len(rows), [n for n, _ in rows])
            for k, rows in by.items()}


class Model:
    def __init__(self, bellows, tmp):
        self.bellows, self.tmp = bellows, tmp
        self.rows = measured()

    def predict(self, prof, key):
        path = os.path.join(self.tmp, "p.json")
        with open(path, "w") as f:
            json.dump(prof, f)
        method, workers, bw = key
        variants = self.rows[key][1]
        return sum(run(self.bellows, path, v, workers, bw, self.tmp) for v in variants) / len(
            variants)


def solve(f, target, x0, hi=math.inf):
    """x in (0, hi] with f(x) = target, f monotone: a bracket by factors of 2 from x0, then
    bisection in log x; hi itself when f(hi) does not reach target."""
    fx0 = f(x0)
    probe = x0 * 1.01 if x0 * 1.01 <= hi else x0 / 1.01
    up = (fx0 < target) == ((f(probe) > fx0) == (probe > x0))  # which way x must go
    a = x0
    for _ in range(40):
        b = min(a * 2, hi) if up else a / 2
        fb = f(b)
        if (fb - target) * (fx0 - target) <= 0:
            break
        if b == hi:
            return hi
        a = b
    lo, hi2 = (a, b) if a < b else (b, a)
    flo = f(lo)
    for _ in range(30):
        mid = math.sqrt(lo * hi2)
        fm = f(mid)
        if abs(fm / target - 1) < 2e-4:
            return mid
        if (fm - target) * (flo - target) > 0:
            lo, flo = mid, fm
        else:
            hi2 = mid
    return math.sqrt(lo * hi2)


def fit(m):
    x = {name: start for name, _, start in FIT}
    x["efficiency"] = 0.6
    x["efficiency"] = solve(lambda e: m.predict(profile(dict(x, efficiency=e)), ("none", 1, "10g")),
                            m.rows[("none", 1, "10g")][0], 0.6, 1.0)
    for sweep in range(6):
        before = dict(x)
        for name, (method, w), _ in FIT:
            key = (method, w, "10g")
            hi = 1.0 if name.endswith("share") else math.inf

            def f(v, name=name, key=key):
                return m.predict(profile(dict(x, **{name: v})), key)

            x[name] = solve(f, m.rows[key][0], x[name], hi)
        change = max(abs(x[k] / before[k] - 1) for k in x)
        print("fit sweep %d: largest change %.2g  %s" % (sweep + 1, change, " ".join(
            "%s=%.4g" % kv for kv in x.items())), file=sys.stderr)
        if change < 1e-3:
            break
    return x


def table(m, prof, bw, out=sys.stdout, as_csv=False):
    """Every method at every size GRACE has at bw: measured, predicted, error; returns them."""
    fitted = {(meth, w) for _, (meth, w), _ in FIT} if bw == "10g" else set()
    res = []
    for method in METHODS:
        for w in (2, 4, 8):
            key = (method, w, bw)
            if key not in m.rows:
                continue
            meas = m.rows[key][0]
            pred = m.predict(prof, key)
            res.append((method, w, meas, pred, (method, w) in fitted))
    if as_csv:
        out.write("method,workers,measured,bellows,fitted\n")
        for method, w, meas, pred, fitted_row in res:
            out.write("%s,%d,%.4f,%.4f,%d\n" % (method, w, meas, pred, fitted_row))
        return res
    out.write("%-10s %7s %9s %9s %7s\n" % ("method", "workers", "measured", "bellows", "error"))
    for method, w, meas, pred, fitted_row in res:
        out.write("%-10s %7d %9.0f %9.0f %+6.1f%%%s\n" % (method, w, meas, pred,
                                                        100 * (pred / meas - 1),
                                                        "  (fitted)" if fitted_row else ""))
    return res


def main(argv):
    bellows = os.path.abspath(argv[1])
    args = argv[2:]
    with tempfile.TemporaryDirectory() as tmp:
        m = Model(bellows, tmp)
        if "--table" in args:
            path = args[args.index("--profile") + 1] if "--profile" in args else OUT
            bw = args[args.index("--bw") + 1] if "--bw" in args else "10g"
            with open(path) as f:
                prof = json.load(f)
            table(m, prof, bw, as_csv="--csv" in args)
            return 0
        x = fit(m)
        for k, v in x.items():
            print("%-22s %.6g" % (k, v))
        prof = profile(x)
        if "--write" in args:
            with open(OUT, "w") as f:
                f.write(dumps(prof) + "\n")
            print(OUT)
        table(m, prof, "10g")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
