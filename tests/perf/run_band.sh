#!/usr/bin/env bash
# run_band.sh: what compare's cost band costs (issue 48): the README's main job (bellows compare
# --workload resnet18-cifar --collectives analytic) with --cost-band 32 and with --cost-band off,
# alternated ROUNDS times in one run, each the whole command's wall time (/usr/bin/time); the
# medians, their ratio (issue 48: at most 1.3), and the load average before and after.
#   tests/perf/run_band.sh [ROUNDS] [EXTRA FLAGS...]   (default 3; e.g. 1 --epochs 2 --seeds 1,2)
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
shift || true
cmake --build build --target bellows >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$rounds"); do
  for band in off 32; do
    rm -rf "$tmp/out"
    /usr/bin/time -f "%e" -o "$tmp/t" build/bellows compare --workload resnet18-cifar \
      --collectives analytic --no-plots --quiet --cost-band "$band" --out "$tmp/out" "$@" \
      >/dev/null
    cat "$tmp/t" >>"$tmp/$band"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
off=$(median <"$tmp/off")
on=$(median <"$tmp/32")
awk -v off="$off" -v on="$on" -v r="$rounds" 'BEGIN {
  printf "compare --cost-band off %8.2f s\ncompare --cost-band 32  %8.2f s\nratio %.3f (medians of %d rounds, alternated)\n", off, on, on / off, r }'
