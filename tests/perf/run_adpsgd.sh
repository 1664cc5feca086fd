#!/usr/bin/env bash
# run_adpsgd.sh: ADPSGD's periods and budget on the real mlp (Fashion-MNIST, 8 workers), beside
# cpsgd with the same period, with local and with averaged momentum buffers:
#   constant  10 epochs, constant lr 0.02, period 8 (the full training set: its variance is
#             flat, so the period should stay near 8)
#   decays    the same with the lr divided by 10 at epochs 5 and 8 (the period should lengthen
#             about 100^(1/2.5) = 6.3x at each decay)
#   memorise  2048 training samples, 100 epochs of 4 steps, constant lr 0.1, period 4 (the mlp
#             learns them by heart: the variance falls ~250x, so the period should lengthen)
# For each: averagings of adpsgd and cpsgd (the budget: equal within 10%), adpsgd's mean period
# over the first tenth of the steps and the last third and their ratio, and the final accuracy
# of both. About 2 minutes on 2 cores.
#   tests/perf/run_adpsgd.sh [OUT]   (default: a temporary folder, removed)
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake --build build --target bellows >/dev/null
out=${1:-$(mktemp -d)}
[ -n "${1:-}" ] || trap 'rm -rf "$out"' EXIT
mkdir -p "$out"
common="--quiet --workers 8 --compressor none --bandwidth 10Gbps"
declare -A args=(
  [constant]="--epochs 10 --lr 0.02"
  [decays]="--epochs 10 --lr 0.02 --lr-schedule step --lr-decay-epochs 5,8"
  [memorise]="--epochs 100 --lr 0.1 --train-samples 2048 --test-samples 1000"
)
declare -A period=([constant]=8 [decays]=8 [memorise]=4)
run() { # scenario momentum policy
  local dir="$out/$1-$2-${3%%:*}" mom=""
  [ "$2" = averaged ] && mom=--average-momentum
  # shellcheck disable=SC2086
  build/bellows run $common ${args[$1]} $mom --policy "$3:period=${period[$1]}" --out "$dir" \
    --force >/dev/null
}
for s in constant decays memorise; do
  for m in local averaged; do
    run "$s" "$m" adpsgd &
    run "$s" "$m" cpsgd &
    wait
  done
done
python3 - "$out" <<'EOF'
import csv, json, statistics, sys
out = sys.argv[1]
print(f"{'scenario':9} {'momentum':9} {'avg adpsgd':>10} {'cpsgd':>6} {'budget':>7} "
      f"{'first 10%':>9} {'last 1/3':>9} {'ratio':>6} {'acc adpsgd':>10} {'cpsgd':>6}")
for s in ("constant", "decays", "memorise"):
    for m in ("local", "averaged"):
        rows = {}
        for p in ("adpsgd", "cpsgd"):
            d = f"{out}/{s}-{m}-{p}"
            steps = list(csv.DictReader(open(d + "/steps.csv")))
            summ = json.load(open(d + "/summary.json"))
            rows[p] = (steps, summ)
        steps = rows["adpsgd"][0]
        T = len(steps)
        per = [int(r["period"]) for r in steps]
        n = {p: sum(int(r["averaged"]) for r in rows[p][0]) for p in rows}
        first = statistics.mean(per[: T // 10])
        last = statistics.mean(per[T - T // 3:])
        acc = {p: rows[p][1]["outcome"]["final_test_accuracy"] if "outcome" in rows[p][1]
               else rows[p][1].get("final_test_accuracy", float("nan")) for p in rows}
        print(f"{s:9} {m:9} {n['adpsgd']:10d} {n['cpsgd']:6d} {n['adpsgd'] / n['cpsgd']:7.3f} "
              f"{first:9.2f} {last:9.2f} {last / first:6.2f} {acc['adpsgd']:10.4f} "
              f"{acc['cpsgd']:6.4f}")
EOF
