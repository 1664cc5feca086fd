#!/usr/bin/env bash
# run.sh: builds the libFuzzer harnesses with clang (AddressSanitizer and UBSan) and runs them
# from their seed corpora, one after the other, for SECONDS each (default 600).
#   tests/fuzz/run.sh [HARNESS] [SECONDS]     HARNESS: trace (v1 and v2 traces), idx, units, spec,
#                                             workload, platform, costs, nccl (nccl-tests logs for
#                                             costs import-nccl-tests), cluster or all (default)
#   tests/fuzz/run.sh --build [HARNESS]       only build (CI-free check that they compile)
# Each harness grows its own working corpus in build-fuzz/corpus_NAME/ (seeded from
# tests/fuzz/corpus_NAME/, which stays small and hand-picked). Crashing inputs are written to
# build-fuzz/ as crash-*, leak-*, oom-*; once fixed, copy them into tests/fuzz/corpus_NAME/ and
# into a CMocka test as a regression. The last lines of libFuzzer's report (executions, exec/s,
# corpus units) are printed; the whole log is in build-fuzz/NAME.log. fuzz_cluster links the
# project's own libraries from build/ (cmake --build build first): its reader parses each job's
# keys as `bellows run`'s flags, which need most of bellows; only cl_file.c is instrumented.
set -euo pipefail
cd "$(dirname "$0")/../.."

build_only=0
if [ "${1:-}" = "--build" ]; then build_only=1; shift; fi
which=${1:-all}
seconds=${2:-600}
case "$which" in
  [0-9]*) seconds=$which; which=all ;;  # the old form: run.sh SECONDS
esac
all=(trace idx units spec workload platform costs nccl cluster)
if [ "$which" = all ]; then harnesses=("${all[@]}"); else harnesses=("$which"); fi

cflags=(-g -O1 -std=c11 -D_DEFAULT_SOURCE -fsanitize=fuzzer,address,undefined
        -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
cblas_inc=$(dirname "$(find /usr/include -name cblas.h -path '*openblas*' | head -1)")

build() {
  local name=$1 srcs libs
  case "$name" in
    trace) srcs=(traces/trace.c traces/lines.c common/infile.c)
           libs="$(pkg-config --libs jansson) -lz -lm" ;;
    workload)
      # the built-in profiles, embedded as the build does
      mkdir -p build-fuzz/generated
      cmake -DDIR=sim/workload/profiles -DOUT=build-fuzz/generated/workload_profiles.h \
        -P sim/workload/embed_profiles.cmake
      srcs=(sim/workload/workload.c sim/workload/workload_json.c sim/workload/from_trace.c
            traces/trace.c traces/lines.c common/infile.c)
      libs="$(pkg-config --libs jansson) -lz -lm" ;;
    platform)
      srcs=(sim/net/engine.c sim/net/cluster.c common/infile.c)
      libs="$(pkg-config --libs simgrid) -lm" ;;
    costs|nccl)
      # the cost profiles' library (bw_costs) as the build makes it, its embedded files too
      mkdir -p build-fuzz/generated
      cmake -DDIR=sim/costs/profiles -DPREFIX=cost_profile \
        -DOUT=build-fuzz/generated/cost_profiles.h -P sim/workload/embed_profiles.cmake
      cmake -DDIR=sim/costs/validation -DPREFIX=cost_validation \
        -DOUT=build-fuzz/generated/cost_validation.h -P sim/workload/embed_profiles.cmake
      # instrumented: sim/costs/ alone; the collectives' closed forms and common/ from build/
      [ -f build/libbw_net.a ] || { echo "run.sh: fuzz_$name needs build/ (cmake --build build)" >&2; exit 2; }
      srcs=(sim/costs/costs.c sim/costs/costs_json.c sim/costs/costs_busbw.c
            sim/costs/costs_validation.c sim/costs/nccl_import.c)
      libs="-Wl,--start-group build/libbw_net.a build/libbw_common.a -Wl,--end-group
            $(pkg-config --libs jansson simgrid) -lm -lpthread -ldl" ;;
    cluster)
      [ -f build/libbw_cluster.a ] || { echo "run.sh: fuzz_cluster needs build/ (cmake --build build)" >&2; exit 2; }
      srcs=(sim/cluster/cl_file.c)
      local py=""
      pkg-config --exists python3-embed && py="$(pkg-config --libs python3-embed)"
      libs="-Wl,--start-group $(ls build/libbw_*.a | tr '\n' ' ') -Wl,--end-group
            -lopenblas $(pkg-config --libs simgrid gsl jansson) $py -ldeflate -lz -lm -lpthread -ldl" ;;
    idx)   srcs=(models/dataset.c); libs="$(pkg-config --libs gsl) -lz -lm" ;;
    units) srcs=(sim/cli/cli.c common/units.c); libs="-lm" ;;
    spec)  srcs=(common/spec.c policies/*.c policies/python/policy_python_none.c sim/compress/*.c
                 sim/net/coll.c sim/net/coll_sum.c sim/net/coll_mirror.c common/half.c common/pool.c
                 common/xalloc.c common/outfile.c)
           libs="$(pkg-config --libs simgrid gsl) -lopenblas -lm" ;;
    *) echo "run.sh: unknown harness '$name' (expected trace, idx, units, spec, workload, platform, costs, nccl, cluster or all)" >&2
       exit 2 ;;
  esac
  # shellcheck disable=SC2086
  local incs=(-Icommon -Imodels -Itraces -Ipolicies -Ipolicies/python -Ischedules -Isim/cli
              -Isim/net -Isim/compress -Isim/workload -Isim/costs -Isim/driver -Isim/cluster
              -Ibuild-fuzz/generated)
  clang "${cflags[@]}" "${incs[@]}" -I"$cblas_inc" $(pkg-config --cflags jansson simgrid) \
    "tests/fuzz/fuzz_$name.c" "${srcs[@]}" $libs -o "build-fuzz/fuzz_$name"
}

command -v clang >/dev/null || { echo "run.sh: needs clang (apt-get install clang)" >&2; exit 2; }
mkdir -p build-fuzz
for name in "${harnesses[@]}"; do
  echo "== fuzz_$name: building =="
  build "$name"
  [ "$build_only" = 1 ] && continue
  mkdir -p "build-fuzz/corpus_$name"
  cp tests/fuzz/"corpus_$name"/* "build-fuzz/corpus_$name/"
  echo "== fuzz_$name: running for ${seconds}s =="
  dict=()
  [ -f "tests/fuzz/$name.dict" ] && dict=(-dict="../tests/fuzz/$name.dict")
  (cd build-fuzz && "./fuzz_$name" -max_total_time="$seconds" -max_len=4096 -rss_limit_mb=2048 \
     -print_final_stats=1 "${dict[@]}" "corpus_$name" >"$name.log" 2>&1) || status=$?
  tail -25 "build-fuzz/$name.log"
  if [ "${status:-0}" != 0 ]; then
    echo "run.sh: fuzz_$name found a failure (exit ${status}); see build-fuzz/$name.log" >&2
    exit 1
  fi
done
