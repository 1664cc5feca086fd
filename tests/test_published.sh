#!/usr/bin/env bash
# test_published.sh: bellows against published, measured figures (issues 15 and 36): a call of
# `bellows validate`, which runs every row of sim/costs/validation/rows.csv (NVIDIA
# DeepLearningExamples' ResNet-50 throughputs on DGX-1 and DGX A100 at --costs ideal; GRACE's
# TensorFlow ResNet-50 table under grace-tf, fitted on 7 of its rows by sim/costs/fit_grace.py;
# GRACE's PyTorch ResNet-9 CIFAR-10 table under the default profile, reported) and exits 1 when a
# row is outside its tolerance. Then:
#   - at 8 workers and 10 Gbps bellows ranks GRACE's seven methods as GRACE measured them;
#   - the validation summary runs print (sim/costs/validation/summary.json, embedded) is what
#     these rows give now: after a change to the rows or the profiles, rewrite it with
#     bellows validate --write-summary sim/costs/validation/summary.json
#   tests/test_published.sh BELLOWS_BINARY
set -euo pipefail
bellows=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bellows" validate --csv "$tmp/validate.csv" --write-summary "$tmp/summary.json"
python3 - "$tmp/validate.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]))
        if r["id"].startswith("grace-r50-") and r["id"].endswith("-8-10g")]
assert len(rows) == 7, len(rows)
method = lambda r: r["id"].split("-")[2]
measured = [method(r) for r in sorted(rows, key=lambda r: -float(r["measured"]))]
predicted = [method(r) for r in sorted(rows, key=lambda r: -float(r["bellows"]))]
print("GRACE at 8 workers, 10 Gbps, measured: %s" % " > ".join(measured))
print("GRACE at 8 workers, 10 Gbps, bellows:  %s" % " > ".join(predicted))
sys.exit(1 if measured != predicted else 0)
PY
if ! cmp -s "$tmp/summary.json" "$here/../sim/costs/validation/summary.json"; then
  echo "sim/costs/validation/summary.json is stale; what the rows give now:" >&2
  diff "$here/../sim/costs/validation/summary.json" "$tmp/summary.json" >&2 || true
  exit 1
fi
# a 1 Gbps ring cannot move fp32 ResNet-50's gradients faster than this (GRACE's 1 Gbps rows
# are above it, and reported only)
python3 -c 'p, n = 8, 25557032 * 4; t = 2 * (p - 1) / p * n / 125e6; print("the 1 Gbps ring ceiling: %.0f img/s at 8 x 64 (the dense allreduce alone, %.3f s a step)" % (512 / t, t))'
