#!/usr/bin/env bash
# test_own_traces.sh: each policy on its own trace. PyTorch trains the MLP on a small part of
# Fashion-MNIST on 8 emulated workers under static:level=1 and accordion (PowerSGD), two seeds
# each (traces/pytorch/train_policy.py, bellows' policies through libbellows_policy.so);
# `bellows compare --traces` prices every trace on its recorded decisions: the table ranks the
# policies by their own accuracies (each row's is its own traces' last evaluation, and they
# differ), with speedups paired by seed; the bytes each trace recorded are bellows' own payload
# for those levels. Bad input (traces of different workers, a trace without decisions, a seed
# one policy lacks, a policy the library cannot load, --device cuda where torch sees no CUDA)
# exits 2 naming the file, flag or field, with nothing written. Then torchvision's ResNet-18 on the CPU, small, under sync and PowerSGD rank 2.
# Needs Debian's python3-torch and the packaged Fashion-MNIST (77: skipped).
#   tests/test_own_traces.sh BELLOWS LIBBELLOWS_POLICY
set -euo pipefail
bellows=$1
export BELLOWS_POLICY_LIB=$2
. "$(dirname "$0")/pyhost.sh"
need_torch
train() { # POLICY SEED OUT [flags]
  local p=$1 s=$2 o=$3; shift 3
  py "$here/traces/pytorch/train_policy.py" --policy "$p" --compressor powersgd --workers 8 \
    --model mlp --epochs 3 --train-samples 6144 --test-samples 2000 --eval-every 4 --seed "$s" \
    --out "$o" "$@"
}
start=$(date +%s)
for s in 1 2; do
  train static:level=1 $s "$tmp/static-$s.jsonl.gz"
  train accordion $s "$tmp/accordion-$s.jsonl.gz"
done
echo "four traces recorded in $(($(date +%s) - start)) s"
traces=$tmp/static-1.jsonl.gz,$tmp/accordion-1.jsonl.gz,$tmp/static-2.jsonl.gz,$tmp/accordion-2.jsonl.gz
"$bellows" compare --traces "$traces" --target-accuracy 0.6 --no-plots --out "$tmp/cmp" > "$tmp/out.txt"
cat "$tmp/out.txt"
grep -q "own traces: each policy's accuracy is that of its own recorded run" "$tmp/out.txt"
py - "$tmp" <<'PY'
import csv, gzip, json, sys
tmp = sys.argv[1]
rows = {r["policy"]: r for r in csv.DictReader(open(tmp + "/cmp/compare.csv"))}
assert set(rows) == {"static:level=1", "accordion"}, rows.keys()
def last_acc(path):
    evals = [json.loads(x) for x in gzip.open(path, "rt") if '"eval"' in x]
    return evals[-1]["test_accuracy"]
own = {}
for name, stem in (("static:level=1", "static"), ("accordion", "accordion")):
    accs = [last_acc("%s/%s-%d.jsonl.gz" % (tmp, stem, s)) for s in (1, 2)]
    own[name] = sum(accs) / 2
    got = float(rows[name]["final_test_accuracy"])
    assert abs(got - own[name]) < 1e-4, (name, got, own[name])
assert abs(own["accordion"] - own["static:level=1"]) > 1e-4, "one shared accuracy"
# the recorded bytes are bellows' payload for the recorded levels: rank 1 on the MLP is
# P (128 + 10) + Q (784 + 128) floats, the biases (138) dense: 4752 bytes a step
for line in gzip.open(tmp + "/static-1.jsonl.gz", "rt"):
    r = json.loads(line)
    if r.get("type") == "step":
        assert r["levels"] == [1, 0, 1, 0] and r["bytes"] == 4752, r
print("own accuracies:", own)
PY
# the replay followed each trace's decisions: its steps.csv states are the recorded ones
grep -q '"level=1"' "$tmp"/cmp/seed-1/1-*/steps.csv
# a periodic policy: the workers' copies averaged where ADPSGD says; the replay averages at the
# recorded steps
train adpsgd 1 "$tmp/adpsgd-1.jsonl.gz"
"$bellows" compare --traces "$tmp/adpsgd-1.jsonl.gz" --no-plots --quiet --out "$tmp/ad" > /dev/null
py - "$tmp" <<'PY'
import csv, glob, gzip, json, sys
tmp = sys.argv[1]
rec = [json.loads(x) for x in gzip.open(tmp + "/adpsgd-1.jsonl.gz", "rt") if '"type":"step"' in x]
rows = list(csv.DictReader(open(glob.glob(tmp + "/ad/seed-1/1-*/steps.csv")[0])))
want = [int(r["average"]) for r in rec]
assert 0 < sum(want) < len(want), want
assert [int(r["averaged"]) for r in rows] == want, "the replay averaged elsewhere"
assert all(("param_variance" in r) == bool(r["average"]) for r in rec)
print("adpsgd: %d averagings of %d steps, followed" % (sum(want), len(want)))
PY
# bad input: exit 2, the file and field named, nothing written
fail() { # NEEDLE CMD...
  local needle=$1; shift
  set +e; "$@" > /dev/null 2> "$tmp/err.txt"; local rc=$?; set -e
  [ "$rc" -eq 2 ] || { echo "exit $rc for: $*"; cat "$tmp/err.txt"; exit 1; }
  grep -qF -- "$needle" "$tmp/err.txt" || { echo "expected '$needle':"; cat "$tmp/err.txt"; exit 1; }
}
zcat "$tmp/accordion-2.jsonl.gz" | sed '1s/"workers":8/"workers":4/' | gzip > "$tmp/w4.jsonl.gz"
fail "--traces $tmp/w4.jsonl.gz: \"workers\" is 4, but $tmp/static-1.jsonl.gz's is 8" \
  "$bellows" compare --traces "$tmp/static-1.jsonl.gz,$tmp/w4.jsonl.gz" --out "$tmp/bad1"
fail "--traces $here/traces/samples/mlp-sync-8w.jsonl.gz: \"policy\": the header names no policy" \
  "$bellows" compare --traces "$tmp/static-1.jsonl.gz,$here/traces/samples/mlp-sync-8w.jsonl.gz" \
  --out "$tmp/bad2"
fail "\"policy.seed\": accordion has no trace of seed 2" \
  "$bellows" compare --traces "$tmp/static-1.jsonl.gz,$tmp/static-2.jsonl.gz,$tmp/accordion-1.jsonl.gz" \
  --out "$tmp/bad3"
fail "--policies: compare --traces takes the policies and seeds from the traces" \
  "$bellows" compare --traces "$tmp/static-1.jsonl.gz" --policies sync --out "$tmp/bad4"
fail "--policy 'nosuch': unknown policy" train nosuch 1 "$tmp/bad5.jsonl.gz"
# --device cuda where torch sees no CUDA device (Debian's torch, CI): exit 2 naming the flag
set +e
py "$here/traces/pytorch/train_policy.py" --device cuda --workers 2 --epochs 1 --batch 8 \
  --train-samples 16 --test-samples 16 --out "$tmp/bad6.jsonl.gz" > /dev/null 2> "$tmp/err.txt"
rc=$?
set -e
if [ "$rc" -eq 0 ]; then echo "--device cuda: this torch has a GPU; it trained there"
else
  [ "$rc" -eq 2 ] && grep -qF -- "--device cuda: this torch" "$tmp/err.txt" ||
    { echo "--device cuda: exit $rc"; cat "$tmp/err.txt"; exit 1; }
  [ ! -e "$tmp/bad6.jsonl.gz" ] || { echo "bad6.jsonl.gz was written"; exit 1; }
fi
for b in bad1 bad2 bad3 bad4 bad5.jsonl.gz; do
  [ ! -e "$tmp/$b" ] || { echo "$b was written"; exit 1; }
done
# ResNet-18 (torchvision's, CIFAR form, 1 channel: 62 tensors) on the CPU: 2 workers, 2 epochs
# of 2 steps (--device cpu, as by default); PowerSGD at rank 2 sends far fewer bytes than sync,
# as recorded and as priced
for p in sync static:level=2; do
  py "$here/traces/pytorch/train_policy.py" --device cpu --model resnet18 --policy $p --compressor powersgd \
    --workers 2 --epochs 2 --batch 8 --train-samples 32 --test-samples 32 --seed 1 \
    --out "$tmp/r18-${p%%:*}.jsonl.gz"
done
"$bellows" compare --traces "$tmp/r18-sync.jsonl.gz,$tmp/r18-static.jsonl.gz" --collectives analytic \
  --no-plots --quiet --out "$tmp/r18" > /dev/null
py - "$tmp" <<'PY'
import csv, gzip, json, sys
tmp = sys.argv[1]
rows = {r["policy"]: r for r in csv.DictReader(open(tmp + "/r18/compare.csv"))}
sync, psgd = float(rows["sync"]["bytes_per_worker"]), float(rows["static:level=2"]["bytes_per_worker"])
rec = [json.loads(x) for x in gzip.open(tmp + "/r18-static.jsonl.gz", "rt")]
assert len(rec[0]["layers"]) == 62 and rec[0]["model"] == "resnet18", rec[0]["model"]
assert psgd < 0.05 * sync, (psgd, sync)
print("resnet18: sync %.0f bytes a worker, static:level=2 %.0f" % (sync, psgd))
PY
echo "ok: $(($(date +%s) - start)) s in all"
