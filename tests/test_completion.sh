#!/usr/bin/env bash
# test_completion.sh: the bash completion that scripts/gen_docs.sh generates in the build folder
# offers the built-in names after --costs and --schedule (beside files), and completes the item
# after the last comma of --policies.
#   tests/test_completion.sh COMPLETION_FILE
set -euo pipefail
comp=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fail() { echo "FAIL: $*"; exit 1; }
cd "$(mktemp -d)"
trap 'rm -rf "$PWD"' EXIT
complete_of() {
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _bellows; echo "${COMPREPLY[*]}"' \
    _ "$comp" "$@"
}
touch pyprofile.json
[ "$(complete_of bellows run --costs pytorch-a)" = "pytorch-a100" ] || fail "--costs: $(complete_of bellows run --costs pytorch-a)"
[ "$(complete_of bellows run --costs id)" = "ideal" ] || fail "--costs ideal"
[ "$(complete_of bellows run --costs py)" = "pytorch pytorch-a100 pytorch-h100 pytorch-h200 pytorch-v100 pytorch2-a100 pytorch2-v100 pyprofile.json" ] ||
  fail "--costs names and files: $(complete_of bellows run --costs py)"
[ "$(complete_of bellows compare --schedule by)" = "bytescheduler" ] || fail "--schedule"
[ "$(complete_of bellows compare --policies sync,acc)" = "sync,accordion" ] ||
  fail "--policies after a comma: $(complete_of bellows compare --policies sync,acc)"
[ "$(complete_of bellows compare --policies sync,static:level=1,acc)" = "sync,static:level=1,accordion" ] ||
  fail "--policies after two commas"
[ "$(complete_of bellows compare --policies acc)" = "accordion" ] || fail "--policies, first item"
echo "completion: ok"
