#!/usr/bin/env bash
# test_pytorch_trace.sh: a PyTorch user's path end to end. A tiny PyTorch training run on the
# CPU records a trace with traces/pytorch/record_trace.py; bellows reads and replays it under
# three policies; a corrupted copy is refused with its line number. Needs Debian's python3-torch
# (scripts/test.sh installs it); exits 77 (skipped) without it.
#   tests/test_pytorch_trace.sh BELLOWS_BINARY
set -euo pipefail
bellows=$1
here=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
if ! $py -c "import torch" 2>/dev/null; then
  echo "python3-torch is not installed: skipped"; exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$here/traces/pytorch" && $py example_mlp.py "$tmp/torch.jsonl.gz" 2)
"$bellows" replay --trace "$tmp/torch.jsonl.gz" --workers 2 --policies sync,static:level=1,accordion \
  --target-accuracy 0.9 --seed 1 --quiet --no-plots --out "$tmp/replay" > "$tmp/out.txt"
cat "$tmp/out.txt"
rows=$(($(wc -l < "$tmp/replay/compare.csv") - 1))
[ "$rows" -eq 3 ] || { echo "expected 3 rows in compare.csv, got $rows"; exit 1; }
grep -q '"accuracy_source": "trace"' "$tmp/replay/seed-1/1-sync/summary.json"
grep -q '"steps": 64' "$tmp/replay/seed-1/1-sync/summary.json"    # 2 epochs of 32 steps
# a broken line in the middle is refused, naming the file and line
zcat "$tmp/torch.jsonl.gz" | sed '10s/"loss":/"loss":"x",/' > "$tmp/broken.jsonl"
if "$bellows" replay --trace "$tmp/broken.jsonl" --workers 2 --policies sync --out "$tmp/r2" \
     2> "$tmp/err.txt"; then
  echo "a broken trace was accepted"; exit 1
fi
grep -q "broken.jsonl:10" "$tmp/err.txt" || { cat "$tmp/err.txt"; exit 1; }
echo "ok"
