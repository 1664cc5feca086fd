#!/usr/bin/env bash
# test_map_check.sh: scripts/check_map.py and scripts/callgraph.py fail on what they must find.
# In a copy of the tree each breach is planted alone: an include of a folder the map does not
# allow, another folder's internal header, a function of 81 lines (80 pass), a test file of 801
# lines (800 pass), a call that closes a cycle in sim/driver/, a raw malloc without a
# `raw alloc:` reason (scripts/check_alloc.py); each must fail the check and be named, and the
# copy as it is must pass.
#   tests/test_map_check.sh PYTHON3
set -uo pipefail
py=${1:-python3}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fresh() { # a pristine copy in $tmp/t
  rm -rf "$tmp/t" && mkdir -p "$tmp/t"
  (cd "$src" && cp -r common models traces policies schedules plots sim tests docs scripts \
    "$tmp/t/")
}
# expect RC WHAT PATTERN: runs the map check on the copy
expect() {
  local rc=$1 what=$2 pattern=$3 out got
  out=$("$py" "$tmp/t/scripts/check_map.py" "$tmp/t" 2>&1)
  got=$?
  if [ "$got" != "$rc" ] || ! grep -qE "$pattern" <<<"$out"; then
    echo "FAIL: $what: exit $got (expected $rc), output:"
    echo "$out" | tail -5
    fails=$((fails + 1))
  else
    echo "ok: $what"
  fi
}
# a function of n lines (header to closing brace) appended to a file
function_of() {
  { echo "int planted_function(void);"; echo "int planted_function(void)"; echo "{"
    echo "    int x = 0;"
    for ((i = 5; i < $2; i++)); do echo "    x += $i;"; done
    echo "    return x;"; echo "}"; } >>"$1"
}

fresh
expect 0 "the tree as it is passes" "0 breaches"

sed -i '0,/#include "sweep_impl.h"/s//#include "sweep_impl.h"\n#include "driver_impl.h"/' \
  "$tmp/t/sim/sweep/axes.c"
expect 1 "driver_impl.h included from sim/sweep/axes.c fails" \
  "sim/sweep/axes.c:[0-9]+: includes driver_impl.h"

fresh
sed -i '0,/#include "coll_impl.h"/s//#include "coll_impl.h"\n#include "policy.h"/' \
  "$tmp/t/sim/net/coll.c"
expect 1 "policies/ included from sim/net/ (not on the map) fails" \
  "sim/net/coll.c:[0-9]+: includes policy.h of policies/, which sim/net/ may not use"

fresh
function_of "$tmp/t/sim/driver/run_info.c" 80
expect 0 "a function of 80 lines passes" "0 breaches"
fresh
function_of "$tmp/t/sim/driver/run_info.c" 81
expect 1 "a function of 81 lines fails" "run_info.c:[0-9]+: planted_function is 81 lines, over 80"

fresh
for ((i = 0; i < 800; i++)); do echo "/* line */"; done >"$tmp/t/tests/test_planted.c"
expect 0 "a test file of 800 lines passes" "0 breaches"
echo "/* one more */" >>"$tmp/t/tests/test_planted.c"
expect 1 "a test file of 801 lines fails" "tests/test_planted.c: 801 lines, over 800"

fresh
if ! "$py" "$tmp/t/scripts/callgraph.py" "$tmp/t/sim/driver" >/dev/null; then
  echo "FAIL: sim/driver/ has a cycle as it is"
  fails=$((fails + 1))
fi
printf '%s\n' 'void planted_cycle(DriverRun *run);' 'void planted_cycle(DriverRun *run)' '{' \
  '    cost_free(run);' '}' >>"$tmp/t/sim/driver/run_info.c"
out=$("$py" "$tmp/t/scripts/callgraph.py" "$tmp/t/sim/driver")
if [ $? = 1 ] && grep -q "run_info.c -> exec.c: cost_free" <<<"$out"; then
  echo "ok: a call from run_info.c back to exec.c is a cycle"
else
  echo "FAIL: callgraph.py missed the planted cycle: $out"
  fails=$((fails + 1))
fi

fresh
alloc() { "$py" "$tmp/t/scripts/check_alloc.py" "$tmp/t"; }
if ! alloc >/dev/null; then
  echo "FAIL: check_alloc.py fails on the tree as it is"
  fails=$((fails + 1))
fi
printf '%s\n' 'void *planted_alloc(void);' 'void *planted_alloc(void)' '{' \
  '    return malloc(8);' '}' >>"$tmp/t/sim/driver/run_info.c"
out=$(alloc)
if [ $? = 1 ] && grep -q "sim/driver/run_info.c: 1 raw allocations, 0 allowed" <<<"$out"; then
  echo "ok: a raw malloc without a reason fails check_alloc.py"
else
  echo "FAIL: check_alloc.py missed the planted malloc: $out"
  fails=$((fails + 1))
fi
sed -i 's|    return malloc(8);|    return malloc(8); /* raw alloc: planted, with its reason */|' \
  "$tmp/t/sim/driver/run_info.c"
alloc >/dev/null && echo "ok: a raw malloc that says why passes" ||
  { echo "FAIL: check_alloc.py refused a raw malloc that says why"; fails=$((fails + 1)); }
exit $((fails > 0))
