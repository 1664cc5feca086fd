#!/bin/sh
# test_reference.sh: the committed reference pages (docs/reference/) are what bellows' flag
# tables print now (issue 41). Regenerates them with scripts/gen_reference.sh into a scratch
# folder and compares: a page that differs, is missing or names a command that is gone fails,
# with the diff and the command that brings the pages up to date.
#   tests/test_reference.sh BELLOWS_BINARY SOURCE_DIR
set -eu
bellows=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$src/scripts/gen_reference.sh" "$bellows" "$tmp/reference"
if ! diff -ru "$src/docs/reference" "$tmp/reference" > "$tmp/diff"; then
  cat "$tmp/diff"
  echo "FAIL: docs/reference/ is stale (a flag, default or help text changed); bring it up to date:"
  echo "  scripts/gen_reference.sh build/bellows docs/reference"
  exit 1
fi
echo "docs/reference/: $(ls "$tmp/reference" | wc -l) pages, as bellows prints them"
