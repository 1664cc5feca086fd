#!/usr/bin/env bash
# test_map_build.sh: the build enforces the map (docs/ARCHITECTURE.md): a file compiled with
# sim/sweep/'s include path builds when it includes the public headers of what sim/sweep/ uses
# (tests/map/allowed.c) and fails when it includes the driver's internal header
# (tests/map/forbidden.c: "driver_impl.h: No such file"). Both are targets left out of the
# default build (map_allowed, map_forbidden).
#   tests/test_map_build.sh BUILD_DIR
set -uo pipefail
build=$1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! cmake --build "$build" --target map_allowed >"$log" 2>&1; then
  cat "$log"
  echo "FAIL: tests/map/allowed.c (public headers) does not build"
  exit 1
fi
if cmake --build "$build" --target map_forbidden >"$log" 2>&1; then
  echo "FAIL: tests/map/forbidden.c includes driver_impl.h from sim/sweep/ and builds"
  exit 1
fi
if ! grep -q 'driver_impl.h: No such file' "$log"; then
  cat "$log"
  echo "FAIL: map_forbidden failed, but not for want of driver_impl.h"
  exit 1
fi
echo "ok: driver_impl.h is out of sim/sweep/'s reach; its public headers are in it"
