#!/usr/bin/env bash
# run.sh: builds the libFuzzer harness of the trace reader with clang (AddressSanitizer and
# UBSan) and runs it from the seed corpus for SECONDS (default 600).
#   tests/fuzz/run.sh [SECONDS]
# Crashing inputs are written to build-fuzz/ as crash-*; add them to corpus_trace/ once fixed.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-600}
mkdir -p build-fuzz
clang -g -O1 -std=c11 -D_DEFAULT_SOURCE -fsanitize=fuzzer,address,undefined \
  -fno-sanitize-recover=undefined tests/fuzz/fuzz_trace.c traces/trace.c \
  $(pkg-config --cflags --libs jansson) -lz -lm -o build-fuzz/fuzz_trace
mkdir -p build-fuzz/corpus
cp tests/fuzz/corpus_trace/* build-fuzz/corpus/
cd build-fuzz
./fuzz_trace -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 corpus 2>&1 | tail -25
