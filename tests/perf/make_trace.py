"""make_trace.py: a synthetic bellows trace for benchmarks: STEPS steps of the default mlp's
layer table (784-128-10), 64 workers, smooth made-up losses and norms.
    python3 make_trace.py OUT.jsonl STEPS [WORKERS]"""
import json
import math
import sys

out, steps = sys.argv[1], int(sys.argv[2])
workers = int(sys.argv[3]) if len(sys.argv) > 3 else 64
layers = [("fc1.weight", 128, 784), ("fc1.bias", 128, 1), ("out.weight", 10, 128),
          ("out.bias", 10, 1)]
spe = 100
with open(out, "w") as f:
    f.write(json.dumps({"format": "bellows-trace", "version": 1, "source": "make_trace.py",
                        "model": "mlp", "dataset": "synthetic", "workers": workers, "batch": 8,
                        "flops_per_sample": 409088.0, "epochs": steps // spe,
                        "steps_per_epoch": spe, "lr": {"schedule": "constant", "base": 0.02},
                        "layers": [{"name": n, "rows": r, "cols": c} for n, r, c in layers]})
            + "\n")
    for s in range(steps):
        e = s // spe
        end = s % spe == spe - 1
        norms = [1.0 / math.sqrt(1 + s / 50) * (1 + 0.1 * k) for k in range(len(layers))]
        rec = {"type": "step", "step": s, "epoch": e, "epoch_end": end, "lr": 0.02,
               "loss": 2.3 / (1 + s / 200), "grad_norms": norms}
        if end:
            rec["epoch_norms"] = [x / 3 for x in norms]
        f.write(json.dumps(rec) + "\n")
        if end:
            f.write(json.dumps({"type": "eval", "step": s + 1,
                                "test_accuracy": 0.9 * (1 - math.exp(-s / 2000))}) + "\n")
