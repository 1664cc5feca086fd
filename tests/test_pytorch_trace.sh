#!/usr/bin/env bash
# test_pytorch_trace.sh: a PyTorch user's path end to end. A tiny PyTorch training run on the
# CPU records a trace with traces/pytorch/record_trace.py; bellows reads and replays it under
# three policies; a corrupted copy is refused with its line number. Then torchvision's ResNet-18
# (CIFAR form, 62 tensors) records a trace with per-layer times on the CPU, and bellows replays
# it: every parameter is sent every step under sync, and the compute charged is the measured one.
# Needs Debian's python3-torch and python3-torchvision (scripts/test.sh installs them); exits 77
# (skipped) without them.
#   tests/test_pytorch_trace.sh BELLOWS_BINARY
set -euo pipefail
bellows=$1
here=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
for m in torch torchvision; do
  if ! $py -c "import $m" 2>/dev/null; then
    echo "python3-$m is not installed: skipped"; exit 77
  fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$here/traces/pytorch" && $py example_mlp.py "$tmp/torch.jsonl.gz" 2)
"$bellows" replay --trace "$tmp/torch.jsonl.gz" --workers 2 --policies sync,static:level=1,accordion \
  --target-accuracy 0.9 --seed 1 --quiet --no-plots --out "$tmp/replay" > "$tmp/out.txt"
cat "$tmp/out.txt"
rows=$(($(wc -l < "$tmp/replay/compare.csv") - 1))
[ "$rows" -eq 3 ] || { echo "expected 3 rows in compare.csv, got $rows"; exit 1; }
grep -q '"accuracy_source": "trace"' "$tmp/replay/seed-1/1-sync/summary.json"
grep -q '"steps": 64' "$tmp/replay/seed-1/1-sync/summary.json"    # 2 epochs of 32 steps
# a broken line in the middle is refused, naming the file and line
zcat "$tmp/torch.jsonl.gz" | sed '10s/"loss":/"loss":"x",/' > "$tmp/broken.jsonl"
if "$bellows" replay --trace "$tmp/broken.jsonl" --workers 2 --policies sync --out "$tmp/r2" \
     2> "$tmp/err.txt"; then
  echo "a broken trace was accepted"; exit 1
fi
grep -q "broken.jsonl:10" "$tmp/err.txt" || { cat "$tmp/err.txt"; exit 1; }

# ResNet-18: 2 epochs of 3 steps at batch 8, timed after a warm-up step (one thread: the
# machine's cores are shared)
(cd "$here/traces/pytorch" && OMP_NUM_THREADS=1 $py example_resnet18.py "$tmp/r18.jsonl.gz" 2 3 8)
$py - "$tmp/r18.jsonl.gz" <<'PY'
import gzip, json, sys
h = json.loads(gzip.open(sys.argv[1], "rt").readline())
L, t = h["layers"], h["timing"]
assert len(L) == 62, len(L)
assert sum(l["rows"] * l["cols"] for l in L) == 11173962
assert t["device"] == "cpu" and t["steps"] == 5 and len(t["fwd_s"]) == len(t["bwd_s"]) == 62
# every module's time is on its first tensor: each conv and bn weight and the fc weight > 0,
# every bias (bn's, fc's) 0
for l, f, b in zip(L, t["fwd_s"], t["bwd_s"]):
    first = l["name"].endswith(".weight")
    assert (f > 0 and b > 0) if first else (f == 0 and b == 0), (l["name"], f, b)
total = sum(t["fwd_s"]) + sum(t["bwd_s"])
assert abs(h["compute_s_per_step"] - total) <= 1e-12 * total and 0.01 < total < 30, total
PY
"$bellows" replay --trace "$tmp/r18.jsonl.gz" --workers 2 --compressor powersgd \
  --collectives analytic --policies sync,accordion --seed 1 --quiet --no-plots --out "$tmp/r18" \
  > /dev/null
[ "$(grep -c ',completed,' "$tmp/r18/compare.csv")" -eq 2 ] || { cat "$tmp/r18/compare.csv"; exit 1; }
$py - "$tmp/r18.jsonl.gz" "$tmp"/r18/seed-1/1-sync/summary.json \
  "$tmp"/r18/seed-1/2-accordion/summary.json <<'PY'
import gzip, json, sys
h = json.loads(gzip.open(sys.argv[1], "rt").readline())
sync, acc = (json.load(open(p)) for p in sys.argv[2:4])
assert sync["steps"] == 6 and sync["scenario"]["n_params"] == 11173962, sync
# sync: every parameter, 4 bytes, every step; accordion's PowerSGD far less
assert sync["payload_bytes_per_worker"] == 11173962 * 4 * 6, sync["payload_bytes_per_worker"]
assert 0 < acc["payload_bytes_per_worker"] < sync["payload_bytes_per_worker"] / 10
# the compute charged is the measured step at each worker's share of the batch (8 / 2 workers),
# plus the optimiser's step, which the default cost profile prices
want = 6 * h["compute_s_per_step"] * 4 / 8
for s in (sync, acc):
    assert want <= s["compute_s"] <= want * 1.01, (s["compute_s"], want)
    assert s["sim_time_s"] >= s["compute_s"] and s["communication_s"] > 0
PY
# the same trace as a workload profile: the mlp's dynamics at the recorded ResNet-18's costs
# (its 62 tensors' bytes, its measured per-layer times at 4 samples per worker of the 8 timed)
"$bellows" run --workload "$tmp/r18.jsonl.gz" --workers 2 --batch 4 --train-samples 64 \
  --test-samples 64 --epochs 1 --compressor none --collectives analytic --overlap none --quiet \
  --out "$tmp/as-profile" > /dev/null
$py - "$tmp/r18.jsonl.gz" "$tmp/as-profile/summary.json" <<'PY'
import gzip, json, sys
h = json.loads(gzip.open(sys.argv[1], "rt").readline())
s = json.load(open(sys.argv[2]))
assert s["scenario"]["workload_params"] == 11173962 and s["steps"] == 8, s
assert s["payload_bytes_per_worker"] == 11173962 * 4 * 8, s["payload_bytes_per_worker"]
# compute: the measured forward and backward at half the timed batch, plus the optimiser
measured = 8 * h["compute_s_per_step"] * 4 / 8
assert measured <= s["compute_s"] <= measured * 1.01, (s["compute_s"], measured)
PY
echo "ok"
