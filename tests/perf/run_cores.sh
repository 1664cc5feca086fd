#!/usr/bin/env bash
# run_cores.sh: one run on one core and on two, side by side: the 16-worker mlp (5 epochs, the
# default PowerSGD and sync) with --compute-threads 1 pinned to core 0 (taskset -c 0) and with
# --compute-threads 2 on cores 0 and 1, for both collective backends; alternated REPS times and
# the median wall time kept. Prints the speed-up of two cores over one and the share of the
# one-core run that ran in parallel (Amdahl: s = 2 (1 - 1/x)), from which the speed-up on N cores
# follows as 1 / (1 - s + s / N). The results files of the two are compared (the same bits
# whatever the threads). OLD=path/to/bellows: an older binary too, its four runs alternated
# with this one's in every round, so both are measured under the same load. RUN_ARGS: more flags
# for every run (e.g. RUN_ARGS="--compressor qsgd --policy static:level=4").
#   tests/perf/run_cores.sh [WORKERS] [REPS]   (16, 3)
set -euo pipefail
cd "$(dirname "$0")/../.."
workers=${1:-16}
reps=${2:-3}
cmake --build build --target bellows >/dev/null
bins=(build/bellows)
[ -n "${OLD:-}" ] && bins=("$OLD" build/bellows)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
one() { # bin cores threads backend out
  local t0 t1
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086 # RUN_ARGS is a list of flags
  taskset -c "$2" "$1" run --workers "$workers" --collectives "$4" \
    --compute-threads "$3" --threads 1 --quiet --out "$5" --force ${RUN_ARGS:-} >/dev/null
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc
}
median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
printf "%-9s %-6s %10s %10s %9s %9s %10s %10s\n" backend binary 1core_s 2cores_s speedup \
       parallel 4cores_x 8cores_x
for b in transfer analytic; do
  for i in "${!bins[@]}"; do : >"$tmp/a$i"; : >"$tmp/b$i"; done
  for _ in $(seq "$reps"); do
    for i in "${!bins[@]}"; do
      one "${bins[$i]}" 0 1 "$b" "$tmp/one" >>"$tmp/a$i"
      one "${bins[$i]}" 0,1 2 "$b" "$tmp/two" >>"$tmp/b$i"
      cmp -s "$tmp/one/steps.csv" "$tmp/two/steps.csv" ||
        echo "(${bins[$i]}, $b: steps.csv differs between 1 and 2 threads!)"
    done
  done
  for i in "${!bins[@]}"; do
    name=now
    [ ${#bins[@]} -eq 2 ] && [ "$i" -eq 0 ] && name=old
    a=$(median <"$tmp/a$i")
    c=$(median <"$tmp/b$i")
    awk -v b="$b" -v n="$name" -v a="$a" -v c="$c" 'BEGIN {
      x = a / c; s = 2 * (1 - 1 / x); if (s > 1) s = 1
      printf "%-9s %-6s %10.3f %10.3f %8.2fx %8.0f%% %9.2fx %9.2fx\n", b, n, a, c, x, 100 * s,
             1 / (1 - s + s / 4), 1 / (1 - s + s / 8) }'
  done
done
echo "(target: 2 cores at least 1.6x one; N cores by Amdahl's law from the parallel share)"
