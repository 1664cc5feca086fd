#!/usr/bin/env bash
# test_calibrate.sh: traces/pytorch/calibrate.py measures a cost profile on this machine's CPU
# with PyTorch's own implementations (a CPU's rates, labelled V100 for the test), and bellows
# prices runs of every compressor with it: the profile round-trips, names where it was
# measured, and holds every operation. Needs Debian's python3-torch (scripts/test.sh installs
# it); exits 77 (skipped) without it.
#   tests/test_calibrate.sh BELLOWS_BINARY
set -euo pipefail
bellows=$1
here=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
if ! $py -c "import torch" 2>/dev/null; then
  echo "python3-torch is not installed: skipped"; exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$py "$here/traces/pytorch/calibrate.py" --gpu V100 --device cpu --quick --out "$tmp/cpu.json"
$py - "$tmp/cpu.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
assert p["gpu"] == "V100" and p["measured"]["device"].startswith("CPU"), p["measured"]
assert p["measured"]["versions"].startswith("torch ") and len(p["measured"]["date"]) == 10
ops = {"elementwise", "matmul", "orthogonalise", "topk", "quantise", "pack", "scatter",
       "optimizer", "random"}
# the hook as this PyTorch's code runs it (Debian's 1.13: synchronises, orthogonalises Q again,
# torch.linalg.qr above rank 2, pytorch/pytorch PR #72043), and QR's rate beside it
import torch
ps = p["hooks"]["powersgd"]
assert p["hooks"]["framework"] == "PyTorch " + torch.__version__.split("+")[0], p["hooks"]
assert ps["synchronizes"] and ps["orthogonalises_query"], ps
import re
if tuple(int(x) for x in re.findall(r"\d+", torch.__version__)[:2]) >= (1, 13):
    assert ps["qr_above_rank"] == 2, ps
if "qr_above_rank" in ps:
    ops.add("qr")
    assert p["ops"]["qr"]["kernels"] > 0, p["ops"]["qr"]
assert set(p["ops"]) == ops, set(p["ops"])
for name, op in p["ops"].items():
    sizes = [s for s, _ in op["rate"]]
    assert sizes == sorted(set(sizes)) and all(r > 0 for _, r in op["rate"]), (name, op)
assert all(p["fixed"][k] > 0 for k in ("tensor_s", "kernel_s", "collective_s")), p["fixed"]
PY
"$bellows" costs > /dev/null
for c in none fp16 powersgd powersgd4 topk randomk qsgd signsgd; do
  policy=static; [ $c = powersgd4 ] && policy=static:level=4 # QR above rank 2
  "$bellows" run --gpu V100 --costs "$tmp/cpu.json" --compressor ${c%4} --policy $policy \
    --workload resnet50 --workers 4 --epochs 1 --train-samples 512 --test-samples 100 --collectives analytic \
    --quiet --out "$tmp/$c" > /dev/null
  grep -q '"costs": "measured-v100"' "$tmp/$c/summary.json"
  grep -q '"costs_measured_on": "CPU' "$tmp/$c/summary.json"
done
# the measured rates are what compression costs: TopK's encode and decode after the backward
# (no overlap) take longer at a CPU's rates than at the V100's roofline
for c in "$tmp/cpu.json" ideal; do
  "$bellows" run --gpu V100 --costs "$c" --compressor topk --policy static:level=0.01 \
    --workload resnet50 --workers 4 --overlap none --epochs 1 --train-samples 512 --test-samples 100 --collectives analytic \
    --quiet --out "$tmp/none-$(basename "$c" .json)" > /dev/null
done
$py - "$tmp/none-cpu/summary.json" "$tmp/none-ideal/summary.json" <<'PY'
import json, sys
m, i = (json.load(open(p)) for p in sys.argv[1:3])
assert m["compression_s"] > 10 * i["compression_s"] > 0, (m["compression_s"], i["compression_s"])
PY
echo "ok"
