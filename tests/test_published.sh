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
# Each predicted figure must be within 15% of the measured one; the table is printed.
#   tests/test_published.sh BELLOWS_BINARY
set -euo pipefail
bellows=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(run --workload resnet50 --policy sync --compressor none --epochs 1 --test-samples 500
        --collectives analytic --quiet)
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
