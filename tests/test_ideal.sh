#!/usr/bin/env bash
# test_ideal.sh: --costs ideal gives the files bellows wrote before cost profiles existed, bit
# for bit. tests/data/ideal/NAME/ holds what the binary of the commit before them (d3ce6eb)
# wrote for three runs: the small model's own costs over a transfer-level ring (uncosted
# steps), ResNet-50's under DDP's overlap with TopK, and a periodic policy under ResNet-18's
# without overlap. Their steps.csv and evals.csv must be the same bytes; their summary.json
# the same values, but for the wall clock, the keys added since (named below) and a periodic
# run's compressor (none: it sent no compressor's output).
#   tests/test_ideal.sh BELLOWS_BINARY
set -euo pipefail
bellows=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--epochs 1 --train-samples 1024 --test-samples 200 --workers 4 --costs ideal --quiet)
"$bellows" run "${common[@]}" --compressor powersgd --policy static:level=1 --out "$tmp/plain" \
  > /dev/null
"$bellows" run "${common[@]}" --workload resnet50 --compressor topk --policy static:level=0.01 \
  --out "$tmp/ddp" > /dev/null
"$bellows" run "${common[@]}" --workload resnet18-cifar --policy cpsgd:period=2 \
  --collectives analytic --overlap none --out "$tmp/periodic" > /dev/null
for run in plain ddp periodic; do
  for f in steps.csv evals.csv; do
    cmp "$here/data/ideal/$run/$f" "$tmp/$run/$f"
  done
  python3 - "$here/data/ideal/$run/summary.json" "$tmp/$run/summary.json" <<'PY'
import json, sys
old, new = (json.load(open(p)) for p in sys.argv[1:3])
added = {"costs", "costs_spec", "transport", "link_share", "allgather_link_share", "price_batch",
         "simgrid_cfg", "time_to_accuracy_resolution_s", "schedule", "gpu_efficiency",
         "gpu_efficiency_source"}
def same(a, b, where):
    for k in a:
        if k == "wall_s":
            continue
        if where == "" and k == "compressor" and b.get("policy_mode") == "periodic":
            # summary.json names what ran: a periodic policy sends no compressor's output
            if b[k] != "none":
                sys.exit("%s: compressor is %r, expected none (periodic)" % (sys.argv[2], b[k]))
            continue
        if k not in b:
            sys.exit("%s: %s%s is gone" % (sys.argv[2], where, k))
        if isinstance(a[k], dict):
            same(a[k], b[k], where + k + ".")
        elif a[k] != b[k]:
            sys.exit("%s: %s%s is %r, was %r" % (sys.argv[2], where, k, b[k], a[k]))
    for k in b:
        if k not in a and k not in added:
            sys.exit("%s: %s%s is new" % (sys.argv[2], where, k))
same(old, new, "")
assert new["scenario"]["costs"] == "ideal"
PY
done
echo "ok: --costs ideal gives the earlier files"
