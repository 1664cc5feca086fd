#!/usr/bin/env bash
# check_build_types.sh: builds bellows and its tests as Release, RelWithDebInfo and Debug with
# -Werror (each in its own folder under ${TMPDIR:-/tmp}), so a warning that only NDEBUG or -O0
# shows (a variable only an assert reads) fails here. About 30 s per build type on 2 cores.
#   scripts/check_build_types.sh [BUILD_TYPE ...]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
types=("$@")
[ ${#types[@]} -gt 0 ] || types=(Release RelWithDebInfo Debug)
for t in "${types[@]}"; do
  dir=${TMPDIR:-/tmp}/bellows-build-$t
  cmake -S "$here" -B "$dir" -DCMAKE_BUILD_TYPE="$t" -DBELLOWS_WERROR=ON > /dev/null
  cmake --build "$dir" -j2 > "$dir.log" 2>&1 || { cat "$dir.log"; echo "FAIL: $t"; exit 1; }
  echo "ok: $t builds warning-free with -Werror"
done
