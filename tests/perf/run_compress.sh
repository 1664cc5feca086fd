#!/usr/bin/env bash
# run_compress.sh: wall time of every compressor's encode + decode on a 1000 x 1000 layer
# (1M floats), beside a dense memcpy and a dense sum of the same layer (the memory-bandwidth
# limit), interleaved in one process; prints medians and the ratios.
#   tests/perf/run_compress.sh [ROWS COLS] [ROUNDS] [SECONDS_PER_ROUND] [THREADS]
#   (defaults 1000 1000 3 0.3 1)
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake --build build --target bench_compress >/dev/null
build/bench_compress "${1:-1000}" "${2:-1000}" "${3:-3}" "${4:-0.3}" "${5:-1}"
