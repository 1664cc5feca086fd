#!/usr/bin/env bash
# test_pai_trace.sh: sim/cluster/pai_to_cluster.py makes a cluster file of the first GPU jobs of a
# trace in Alibaba PAI's 2020 format (the synthetic sample in sim/cluster/examples/pai-sample/):
# their sizes (inst_num x plan_gpu / 100, rounded up; CPU jobs skipped), starts and models; an
# unknown model tag, a negative or overflowing size, a job listed twice or a byte that is not
# UTF-8 is refused with its file and line (exit 2, nothing written), as are a --time-scale or an
# --oversubscription that is not finite and -o a folder (no temporary left either); and bellows cluster runs the first three jobs of the sample, at their sizes and priced
# (--price 4: 4 workers each, price_workers their GPUs).
#   tests/test_pai_trace.sh BELLOWS_BINARY SOURCE_DIR
set -euo pipefail
bellows=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
conv="/usr/bin/python3 $src/sim/cluster/pai_to_cluster.py"
sample=$src/sim/cluster/examples/pai-sample
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail() { echo "FAIL: $*"; exit 1; }

# the sample: 72 jobs, 8 of them CPU jobs; the 64 GPU jobs take 2,656 GPUs
$conv "$sample" -o all.json
/usr/bin/python3 - all.json <<'PY' || fail "the sample's jobs"
import json, sys
d = json.load(open(sys.argv[1]))
jobs = d["jobs"]
assert len(jobs) == 64 and d["workers"] == 4096 and d["topology"] == "fat-tree", (len(jobs), d)
assert sum(j["workers"] for j in jobs) == 2656, sum(j["workers"] for j in jobs)
# the first job: 2 instances of 800% GPU (16 GPUs), resnet; the third: 8 of 100% (8 GPUs)
assert jobs[0]["workers"] == 16 and jobs[0]["workload"] == "resnet50" and jobs[0]["start_s"] == 0
assert jobs[2]["workers"] == 8 and jobs[2]["start_s"] == 90, jobs[2]
assert jobs[3]["workload"] == "bert-base", jobs[3]
starts = [j["start_s"] for j in jobs]
assert starts == sorted(starts)
assert all(j["train_samples"] == j["workers"] * 16 * 4 for j in jobs)
PY

# bad input: its file and line named, exit 2, no output file
bad() { # NAME SED-EXPR TABLE EXPECTED
  rm -rf "$1" && cp -r "$sample" "$1"
  sed -i "$2" "$1/$3"
  set +e
  $conv "$1" -o "$1.json" 2> "$1.err"
  rc=$?
  set -e
  [ "$rc" = 2 ] || fail "$1: exit $rc, expected 2"
  grep -q -- "$4" "$1.err" || { cat "$1.err"; fail "$1: expected '$4'"; }
  [ ! -e "$1.json" ] || fail "$1: wrote $1.json"
}
bad unknown '3s/,resnet$/,xlnet/' pai_group_tag_table.csv "pai_group_tag_table.csv:3: unknown model 'xlnet'"
bad negative '4s/,800.0,V100$/,-800.0,V100/' pai_task_table.csv "pai_task_table.csv:4: plan_gpu -800.0 is negative"
bad inst '2s/,worker,2.0,/,worker,-2.0,/' pai_task_table.csv "pai_task_table.csv:2: inst_num -2.0 is negative"
bad when '7s/,Terminated,[0-9.]*,/,Terminated,soon,/' pai_job_table.csv "pai_job_table.csv:7: start_time 'soon' is not a number"
# issue 49 item 32: a byte that is not UTF-8, a size that overflows, a job listed twice
bad utf8 '5s/$/\xff/' pai_job_table.csv "pai_job_table.csv:5: byte 0xff at column"
bad overflow '1s/,2.0,Terminated,\(.*\),800.0,V100$/,1e300,Terminated,\1,1e300,V100/' \
  pai_task_table.csv "pai_task_table.csv:1: inst_num 1e300 x plan_gpu 1e300"
bad twice '3p' pai_job_table.csv "pai_job_table.csv:4: job .* again (line 3)"
# flags out of range, and -o a folder: exit 2, nothing written, no temporary left
mkdir folder
for flags in "--time-scale inf" "--oversubscription nan" "-o folder"; do
  set +e
  out=(-o flag.json); [ "${flags:0:2}" != "-o" ] || out=()
  $conv "$sample" --jobs 1 $flags "${out[@]}" 2> flag.err > /dev/null
  rc=$?
  set -e
  [ "$rc" = 2 ] && grep -q -- "${flags%% *} " flag.err || { cat flag.err; fail "$flags: exit $rc"; }
  [ -z "$(ls -A folder)" ] && [ ! -e flag.json ] && ! ls -a | grep -q tmp || fail "$flags: wrote"
done
# -o naming an input table is refused (exit 2), the table left as it was
for table in pai_job_table.csv pai_task_table.csv pai_group_tag_table.csv; do
  rm -rf own && cp -r "$sample" own && cp own/$table own.before
  set +e
  $conv own -o "own/./$table" 2> own.err
  rc=$?
  set -e
  [ "$rc" = 2 ] && grep -q -- "-o own/./$table: is the input table" own.err || { cat own.err; fail "-o $table: exit $rc"; }
  cmp -s own/$table own.before || fail "-o $table: the input table was written over"
done
# a mapped tag is taken
cp -r "$sample" mapped && sed -i '3s/,resnet$/,xlnet/' mapped/pai_group_tag_table.csv
$conv mapped --map xlnet=bert-base --jobs 3 -o mapped.json
grep -q '"workload": "bert-base"' mapped.json || fail "--map"

# the first three jobs (16, 16 and 8 GPUs) on the 4,096-GPU fat-tree, with their contention
$conv "$sample" --jobs 3 --time-scale 0.001 --steps 2 --test-samples 50 -o three.json
"$bellows" cluster three.json --alone none --out three > three.out 2>&1 || { tail three.out; fail "bellows cluster"; }
/usr/bin/python3 - three/cluster.json <<'PY' || fail "cluster.json"
import json, sys
d = json.load(open(sys.argv[1]))
jobs = d["jobs"]
assert len(jobs) == 3 and [len(j["gpus"]) for j in jobs] == [16, 16, 8], [j.keys() for j in jobs]
PY

# priced (--price 4): the same jobs train on 4 workers each, priced at and holding their GPUs
$conv "$sample" --jobs 3 --time-scale 0.001 --steps 2 --test-samples 50 --price 4 -o priced.json
"$bellows" cluster priced.json --alone none --out priced > priced.out 2>&1 || { tail priced.out; fail "priced"; }
grep -q "3 priced jobs" priced.out || fail "the header's priced jobs"
/usr/bin/python3 - priced/cluster.json <<'PY' || fail "priced cluster.json"
import json, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
assert [(j["workers"], j["price_workers"], len(j["gpus"])) for j in jobs] == \
    [(4, 16, 16), (4, 16, 16), (4, 8, 8)], jobs
PY
set +e
$conv "$sample" --price 1 -o p1.json 2> p1.err
rc=$?
set -e
[ "$rc" = 2 ] && grep -q -- "--price 1" p1.err && [ ! -e p1.json ] || fail "--price 1: exit $rc"
echo "ok"
