#!/usr/bin/env bash
# test_torch_agreement.sh: a policy in PyTorch against the same policy in bellows' live run. The
# MLP on 6,144 Fashion-MNIST samples, 8 workers, PowerSGD, 3 epochs, under static:level=1 and
# accordion, seeds 1 to 3, once in bellows (bellows compare, training live) and once in PyTorch
# (traces/pytorch/train_policy.py, 8 emulated workers):
#   - where the observations are equal the decisions are: bellows' live accordion run's
#     observations (its --record-trace) fed to the policy through libbellows_policy.so give the
#     live run's state and levels at every step; and the decisions PyTorch recorded are those
#     bellows' own core (host_feed) takes on the observations PyTorch recorded;
#   - bytes: static:level=1 sends 4752 payload bytes a step in both; bellows' replay of each
#     PyTorch accordion trace's recorded levels sends exactly the bytes PyTorch recorded;
#   - accuracy: each policy's final accuracy, mean over the seeds, within twice the larger of
#     the two hosts' standard deviations over seeds, plus 0.02 (the hosts differ in
#     initialisation, data order and float summation order: docs/guide/own-traces.md).
# Needs Debian's python3-torch and the packaged Fashion-MNIST (77: skipped).
#   tests/test_torch_agreement.sh BELLOWS HOST_FEED LIBBELLOWS_POLICY
set -euo pipefail
bellows=$1
feed=$2
export BELLOWS_POLICY_LIB=$3
. "$(dirname "$0")/pyhost.sh"
need_torch
common=(--workers 8 --epochs 3 --train-samples 6144 --test-samples 2000 --eval-every 4)
start=$(date +%s)
"$bellows" compare --policies static:level=1,accordion --compressor powersgd --model mlp \
  "${common[@]}" --seeds 1,2,3 --no-plots --quiet --out "$tmp/live" > /dev/null
"$bellows" run --policy accordion --compressor powersgd --model mlp "${common[@]}" --seed 1 \
  --quiet --out "$tmp/run" --record-trace "$tmp/live-accordion.jsonl.gz" > /dev/null
for p in static:level=1 accordion; do
  for s in 1 2 3; do
    py "$here/traces/pytorch/train_policy.py" --policy $p --compressor powersgd --model mlp \
      "${common[@]}" --seed $s --out "$tmp/torch-${p%%:*}-$s.jsonl.gz" > /dev/null
  done
done
# PyTorch's recorded accordion decisions, priced by bellows on their own levels
for s in 1 2 3; do
  "$bellows" compare --traces "$tmp/torch-accordion-$s.jsonl.gz" --no-plots --quiet \
    --out "$tmp/own-$s" > /dev/null
done
# the live run's observations through the library
py "$here/traces/pytorch/bellows_host.py" feed "$tmp/live-accordion.jsonl.gz" accordion powersgd 2 \
  > "$tmp/fed-live.txt"
# PyTorch's observations through bellows' core
for s in 1 2 3; do
  "$feed" "$tmp/torch-accordion-$s.jsonl.gz" accordion powersgd 2 > "$tmp/fed-torch-$s.txt"
done
py - "$tmp" <<'PY'
import csv, glob, gzip, json, math, statistics, sys
tmp = sys.argv[1]
def steps(path):
    return [json.loads(x) for x in gzip.open(path, "rt") if '"type":"step"' in x]
# 1. equal observations, equal decisions: the live run's states and level means
live = list(csv.DictReader(open(tmp + "/run/steps.csv")))
fed = [l.split() for l in open(tmp + "/fed-live.txt")]
assert len(live) == len(fed) == 36, (len(live), len(fed))
for row, f in zip(live, fed):
    levels = [float(x) for x in f[1:5]]
    mean = (levels[0] + levels[2]) / 2  # the two matrices
    assert f[-1] == row["policy_state"], (row["step"], f[-1], row["policy_state"])
    assert abs(mean - float(row["level_mean"])) < 1e-9, (row["step"], mean, row["level_mean"])
# 2. PyTorch's recorded decisions are bellows' core's on PyTorch's observations
for s in (1, 2, 3):
    rec = steps("%s/torch-accordion-%d.jsonl.gz" % (tmp, s))
    core = [l.split() for l in open("%s/fed-torch-%d.txt" % (tmp, s))]
    for r, c in zip(rec, core):
        assert [float(x) for x in c[1:5]] == r["levels"] and c[-1] == r["state"], (s, r["step"])
# 3. bytes: 4752 a step for rank 1 in both hosts; the replay of PyTorch's levels sends its bytes
summ = json.load(open(glob.glob(tmp + "/live/seed-1/1-*/summary.json")[0]))
live_bytes = summ["payload_bytes_per_worker"] / summ["steps"]
assert live_bytes == 4752, live_bytes
for r in steps(tmp + "/torch-static-1.jsonl.gz"):
    assert r["bytes"] == 4752 and r["levels"] == [1, 0, 1, 0], r
for s in (1, 2, 3):
    rec = sum(r["bytes"] for r in steps("%s/torch-accordion-%d.jsonl.gz" % (tmp, s)))
    own = json.load(open(glob.glob("%s/own-%d/seed-%d/1-*/summary.json" % (tmp, s, s))[0]))
    assert own["payload_bytes_per_worker"] == rec, (s, own["payload_bytes_per_worker"], rec)
# 4. accuracy within the seeds' spread
def last_acc(path):
    return [json.loads(x) for x in gzip.open(path, "rt") if '"eval"' in x][-1]["test_accuracy"]
for k, name in ((1, "static"), (2, "accordion")):
    b = [json.load(open(glob.glob("%s/live/seed-%d/%d-*/summary.json" % (tmp, s, k))[0]))
         ["final_test_accuracy"] for s in (1, 2, 3)]
    t = [last_acc("%s/torch-%s-%d.jsonl.gz" % (tmp, name, s)) for s in (1, 2, 3)]
    mb, mt = statistics.mean(b), statistics.mean(t)
    tol = 2 * max(statistics.stdev(b), statistics.stdev(t)) + 0.02
    print("%-10s bellows %.4f +- %.4f, pytorch %.4f +- %.4f, |diff| %.4f <= %.4f"
          % (name, mb, statistics.stdev(b), mt, statistics.stdev(t), abs(mb - mt), tol))
    assert abs(mb - mt) <= tol, name
PY
echo "ok: $(($(date +%s) - start)) s"
