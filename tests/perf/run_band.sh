#!/usr/bin/env bash
# run_band.sh: what compare's cost band costs (issue 48): the README's main job (bellows compare
# --workload resnet18-cifar --collectives analytic) with --cost-band 32 and with --cost-band off,
# alternated ROUNDS times in one run, each the whole command's wall time and its CPU time (user +
# system, its children's included: less noisy on a loaded machine) by /usr/bin/time; the medians
# of each, their ratios (issue 48: at most 1.3), and the load average before and after.
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
    /usr/bin/time -f "%e %U %S" -o "$tmp/t" build/bellows compare --workload resnet18-cifar \
      --collectives analytic --no-plots --quiet --cost-band "$band" --out "$tmp/out" "$@" \
      >/dev/null
    read -r wall user sys <"$tmp/t"
    echo "$wall" >>"$tmp/$band"
    awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}' >>"$tmp/$band.cpu"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
off=$(median <"$tmp/off")
on=$(median <"$tmp/32")
coff=$(median <"$tmp/off.cpu")
con=$(median <"$tmp/32.cpu")
awk -v off="$off" -v on="$on" -v coff="$coff" -v con="$con" -v r="$rounds" 'BEGIN {
  printf "                        wall s     CPU s\n"
  printf "compare --cost-band off %8.2f  %8.2f\ncompare --cost-band 32  %8.2f  %8.2f\n", off, coff, on, con
  printf "ratio (32 / off)        %8.3f  %8.3f  (medians of %d rounds, alternated)\n", on / off, con / coff, r }'
