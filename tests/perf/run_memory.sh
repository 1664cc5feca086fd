#!/usr/bin/env bash
# run_memory.sh: peak resident memory of a simulated run and its share per worker (issue 19):
# the mlp (101,770 parameters, 407 KB) at batch 4 with the analytic collectives, one epoch of
# 60,000 samples (a handful of steps at these worker counts), for a gradient-mode policy (sync,
# whose workers share one replica) and a periodic one (cpsgd, whose workers keep their own), with
# PowerSGD (error feedback: a second buffer of the model's size per worker) and without
# compression. Per worker: (peak at W workers - peak at the smallest count) / the workers added.
#   tests/perf/run_memory.sh [WORKERS...]        (default: 256 1024 4096)
#   OLD=path/to/an/older/bellows tests/perf/run_memory.sh ...   adds that binary's figures beside
set -euo pipefail
cd "$(dirname "$0")/../.."
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(256 1024 4096)
cmake --build build --target bellows >/dev/null
[ -x /usr/bin/time ] || { echo "run_memory.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }

# peak resident KiB of one run
peak() {
  local bin=$1 w=$2 policy=$3 comp=$4
  /usr/bin/time -f "%M" "$bin" run --workers "$w" --batch 4 --collectives analytic --epochs 1 \
    --policy "$policy" --compressor "$comp" --quiet 2>&1 >/dev/null | tail -1
}

bins=("build/bellows")
names=("this")
if [ -n "${OLD:-}" ]; then bins+=("$OLD"); names+=("old"); fi
printf "%-6s %-12s %-9s %8s %12s %16s\n" binary policy compressor workers peak_MiB per_worker_KiB
for k in "${!bins[@]}"; do
  for policy in sync cpsgd:period=4; do
    for comp in powersgd none; do
      base_w="" base_kb=""
      for w in "${counts[@]}"; do
        kb=$(peak "${bins[$k]}" "$w" "$policy" "$comp")
        if [ -z "$base_w" ]; then
          per=$(awk -v kb="$kb" -v w="$w" 'BEGIN{printf "%.0f (all/w)", kb / w}')
          base_w=$w base_kb=$kb
        else
          per=$(awk -v kb="$kb" -v b="$base_kb" -v w="$w" -v bw="$base_w" \
            'BEGIN{printf "%.0f", (kb - b) / (w - bw)}')
        fi
        printf "%-6s %-12s %-9s %8s %12.0f %16s\n" "${names[$k]}" "$policy" "$comp" "$w" \
          "$(awk -v kb="$kb" 'BEGIN{print kb / 1024}')" "$per"
      done
    done
  done
done
