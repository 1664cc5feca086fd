#!/usr/bin/env bash
# test_published.sh: bellows against published, measured figures (issue 15). ResNet-50 v1.5
# training throughput from NVIDIA DeepLearningExamples (PyTorch/Classification/ConvNets/
# resnet50v1.5/README.md, "Training performance results", pytorch-21.03 NGC container; per-GPU
# batch 256, or 112 for V100 FP32, from ConvNets/configs.yml):
#   DGX-1 16GB (8x V100), FP32:        1 GPU  367 img/s, 8 GPUs  2855 img/s
#   DGX A100 (8x A100 80GB), TF32:     1 GPU  938 img/s, 8 GPUs  7248 img/s
# bellows prices the resnet50 profile (per-layer flops from torchvision's definition, DDP
# buckets, ring allreduce over the GPUs' links: the node's NVLink as a star of its per-GPU
# bandwidth, V100 NVLink2 150 GB/s each way (datasheet: 300 GB/s bidirectional), A100 the
# all-reduce bus bandwidth nccl-tests report on 8 A100s over NVSwitch, about 231 GB/s).
#   - V100: uncalibrated, the default 50% of the FP32 peak (15.7 TFLOP/s) for every layer;
#   - A100: TF32 at the efficiency that makes one GPU's 938 img/s (a calibration, not a
#     prediction: 938 x 24.60 GFLOP per image / 156 TFLOP/s = 0.1479), then 8 GPUs predicted.
# Each predicted figure must be within 15% of the measured one; the table is printed. These runs
# are priced at the roofline (--costs ideal): they check the compute and the network model.
#
# Then GRACE (Xu et al., ICDCS 2021; sands-lab/grace-data, tests/data/grace_resnet50.csv):
# ResNet-50 on 2, 4 and 8 V100s, one per node, at 10 Gbps, TensorFlow 1.15 + Horovod over
# OpenMPI/TCP, for none, PowerSGD, TopK 1%, RandomK 1%, QSGD, signSGD and EF-signSGD. The
# grace-tf cost profile was fitted to six of the 21 rows (sim/costs/fit_grace.py, FIT); bellows
# must give every row within 20% and the seven methods in GRACE's order at 8 workers. GRACE's
# 1 and 25 Gbps rows are printed as they come out, with the ring's bandwidth ceiling at 1 Gbps.
#   tests/test_published.sh BELLOWS_BINARY
set -euo pipefail
bellows=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(run --workload resnet50 --policy sync --compressor none --epochs 1 --test-samples 500
        --collectives analytic --costs ideal --quiet)
# images per simulated second of one run: workers x batch x steps / simulated time
throughput() {
  local dir=$1 workers=$2 batch=$3
  python3 - "$dir/summary.json" "$workers" "$batch" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(int(sys.argv[2]) * int(sys.argv[3]) * s["steps"] / s["sim_time_s"])
PY
}
run() { # NAME WORKERS BATCH FLAGS...
  local name=$1 workers=$2 batch=$3
  shift 3
  "$bellows" "${common[@]}" --workers "$workers" --batch "$batch" \
    --train-samples $((4 * workers * batch)) --out "$tmp/$name" "$@" > /dev/null
  throughput "$tmp/$name" "$workers" "$batch"
}
v100=(--gpu V100 --precision fp32)
a100=(--gpu A100 --precision tf32 --gpu-efficiency 0.1479)
v1=$(run v1 1 112 "${v100[@]}")
v8=$(run v8 8 112 "${v100[@]}" --bandwidth 150GBps)
a1=$(run a1 1 256 "${a100[@]}")
a8=$(run a8 8 256 "${a100[@]}" --bandwidth 231GBps)
python3 - "$v1" "$v8" "$a1" "$a8" <<'PY'
import sys
v1, v8, a1, a8 = map(float, sys.argv[1:])
rows = [("V100 FP32, 1 GPU (uncalibrated)", 367, v1, True),
        ("V100 FP32, 8 GPUs (uncalibrated)", 2855, v8, True),
        ("V100 FP32, scaling 8 vs 1 GPU", 2855 / 367, v8 / v1, True),
        ("A100 TF32, 1 GPU (calibration)", 938, a1, False),
        ("A100 TF32, 8 GPUs (predicted)", 7248, a8, True),
        ("A100 TF32, scaling 8 vs 1 GPU", 7248 / 938, a8 / a1, True)]
bad = 0
print("%-34s %10s %10s %8s" % ("ResNet-50 training throughput", "measured", "bellows", "error"))
for name, measured, sim, checked in rows:
    err = sim / measured - 1
    print("%-34s %10.2f %10.2f %+7.1f%%%s" % (name, measured, sim, 100 * err, "" if checked else "  (input)"))
    bad += checked and abs(err) > 0.15
sys.exit(1 if bad else 0)
PY
here=$(cd "$(dirname "$0")" && pwd)
fit=("$here/../sim/costs/fit_grace.py" "$bellows" --table --profile "$here/../sim/costs/profiles/grace-tf.json")
echo
echo "GRACE, ResNet-50 at 10 Gbps, img/s (--costs grace-tf; fitted rows marked):"
python3 "${fit[@]}" --bw 10g --csv > "$tmp/grace10.csv"
python3 - "$tmp/grace10.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 21, len(rows)
print("%-10s %7s %9s %9s %7s" % ("method", "workers", "measured", "bellows", "error"))
for r in rows:
    m, b = float(r["measured"]), float(r["bellows"])
    print("%-10s %7s %9.0f %9.0f %+6.1f%%%s" % (r["method"], r["workers"], m, b, 100 * (b / m - 1),
                                              "  (fitted)" if r["fitted"] == "1" else ""))
bad = [r for r in rows if abs(float(r["bellows"]) / float(r["measured"]) - 1) > 0.20]
for r in bad:
    print("beyond 20%%: %s at %s workers" % (r["method"], r["workers"]))
eight = [r for r in rows if r["workers"] == "8"]
measured = [r["method"] for r in sorted(eight, key=lambda r: -float(r["measured"]))]
predicted = [r["method"] for r in sorted(eight, key=lambda r: -float(r["bellows"]))]
print("order at 8 workers, measured: %s" % " > ".join(measured))
print("order at 8 workers, bellows:  %s" % " > ".join(predicted))
sys.exit(1 if bad or measured != predicted else 0)
PY
for bw in 1g 25g; do
  echo
  echo "GRACE at ${bw}bps, 8 workers (reported, not checked):"
  python3 "${fit[@]}" --bw $bw
done
# a 1 Gbps ring cannot move fp32 ResNet-50's gradients faster than this
python3 -c 'p, n = 8, 25557032 * 4; t = 2 * (p - 1) / p * n / 125e6; print("the 1 Gbps ring ceiling: %.0f img/s at 8 x 64 (the dense allreduce alone, %.3f s a step)" % (512 / t, t))'
