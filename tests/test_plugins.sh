#!/usr/bin/env bash
# test_plugins.sh: a researcher's policy in one C file, loaded at run time. Builds the examples
# of policies/examples/ with the documented line, runs each through run, compare, sweep and
# replay; checks that built-in policies built as plugins give byte-identical results; that
# every bad plugin is one usage error naming the file, with nothing written; and that a plugin
# crashing in a sweep fails only its own runs.
#   tests/test_plugins.sh BELLOWS_BINARY
set -euo pipefail
bellows=$1
# the kernels bellows pins (models/blas_cpu.h), set here where the CPU runs them, so that each
# bellows below does not exec itself again to set them (test_cli_results checks that re-exec)
if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
  export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}
fi
here=$(cd "$(dirname "$0")/.." && pwd)
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the runs read a copy of the packaged Fashion-MNIST's first 2048 training and 500 test samples
# (tests/smalldata.py): the same runs, without reading the 60,000 images in each
python3 "$here/tests/smalldata.py" "$tmp/fmnist" 2048 500
S="--train-samples 2048 --test-samples 500 --epochs 2 --workers 4 --batch 32 --seed 1"
S="$S --data-dir $tmp/fmnist"
fail() { echo "FAIL: $*"; exit 1; }

# the manual's minimal policy (docs/guide/write-a-policy.md) is policies/examples/halfway.c,
# word for word
sed -n '/^<!-- halfway.c -->/,/^```$/p' "$here/docs/guide/write-a-policy.md" | sed '1,2d;$d' > "$tmp/readme.c"
[ -s "$tmp/readme.c" ] || fail "docs/guide/write-a-policy.md has no <!-- halfway.c --> example"
diff "$tmp/readme.c" "$here/policies/examples/halfway.c" \
  || fail "docs/guide/write-a-policy.md's example differs from halfway.c"

# the examples, built with exactly the documented line (from the checkout's root)
cd "$here"
for p in netaware plateau halfway; do
  cp "policies/examples/$p.c" "$tmp/$p.c"
  $cc -shared -fPIC -I policies -o "$tmp/$p.so" "$tmp/$p.c"
done
cd "$tmp"

# each through run, compare, sweep and replay
"$bellows" run $S --compressor powersgd --policy ./netaware.so:fraction=0.5 --out run --quiet > /dev/null
grep -q '"status": "completed"' run/summary.json || fail "run"
grep -q '"policy": "./netaware.so:fraction=0.5"' run/summary.json || fail "run's policy"
grep -q 'rank=[0-9]* fallback' run/steps.csv || fail "netaware's fallback state"
# the driver shows the cluster and the last step's times: netaware decides at step 1 (the first
# step with a compute time); the evaluations reach plateau, which then watches the accuracy
sed -n 3p run/steps.csv | grep -q '"rank=[0-9]*"$' || fail "netaware did not decide at step 1"
"$bellows" run $S --compressor powersgd --policy ./plateau.so --eval-every 10 --out pl --quiet \
  > /dev/null
grep -q 'by=accuracy' pl/steps.csv || fail "plateau saw no evaluation"
"$bellows" compare $S --compressor powersgd --policies sync,./netaware.so,./plateau.so:patience=1,./halfway.so \
  --out cmp --no-plots --quiet > /dev/null
[ "$(grep -c ',completed,' cmp/compare.csv)" -eq 4 ] || { cat cmp/compare.csv; fail "compare"; }
[ -f "cmp/seed-1/2-._netaware.so/steps.csv" ] && [ -f "cmp/seed-1/3-._plateau.so-patience-1/steps.csv" ] || fail "folders"
"$bellows" sweep $S --compressor powersgd --bandwidth 1Gbps,10Gbps --policies sync,./netaware.so,./plateau.so,./halfway.so \
  --out sw --quiet > sw.txt
[ "$(grep -c ',completed,' sw/sweep.csv)" -eq 8 ] || { cat sw/sweep.csv; fail "sweep"; }
# plateau says price_blind: trained once, priced at the other bandwidth, as sync; netaware reads
# the bandwidth and halfway does not say: both trained at each
grep -q '^# 6 trainings, 2 scenarios priced' sw.txt || { cat sw.txt; fail "sweep's trainings"; }
grep -q '^# ./netaware.so may see the price' sw.txt || { cat sw.txt; fail "netaware priced"; }
grep -q '^# ./halfway.so may see the price' sw.txt || { cat sw.txt; fail "halfway priced"; }
# replay: the sample trace's first 2 epochs of 10 (the whole trace took 12.7 s of the test's 30)
zcat "$here/traces/samples/mlp-sync-8w.jsonl.gz" | sed -n '1,/"epoch":1,"epoch_end":true/p' \
  | sed '1s/"epochs":10,/"epochs":2,/' | gzip > short.jsonl.gz
[ "$(zcat short.jsonl.gz | grep -c '"type":"step"')" -eq 234 ] || fail "the trace's 2 epochs"
"$bellows" replay --trace short.jsonl.gz --workers 8 --compressor powersgd \
  --policies sync,./netaware.so,./plateau.so,./halfway.so --out rep --no-plots --quiet > /dev/null
[ "$(grep -c ',completed,' rep/compare.csv)" -eq 4 ] || { cat rep/compare.csv; fail "replay"; }

# a schedule of one's own (README: Write your own schedule), built with the documented line and
# run, listed, and given a bad option
cd "$here"
cp schedules/examples/smallfirst.c "$tmp/smallfirst.c"
$cc -shared -fPIC -I schedules -o "$tmp/smallfirst.so" "$tmp/smallfirst.c"
cd "$tmp"
"$bellows" schedules --plugin ./smallfirst.so | grep '^smallfirst ' > /dev/null || fail "schedules --plugin"
"$bellows" run $S --workload vgg16 --schedule ./smallfirst.so --out sf --quiet > /dev/null
grep -q '"schedule": "./smallfirst.so"' sf/summary.json || fail "smallfirst's run"
grep -q '"overlap": "layer"' sf/summary.json || fail "smallfirst's run: not layer-wise"
if "$bellows" run $S --workload vgg16 --schedule ./smallfirst.so:x=1 --out sf2 2> sf.err; then
  fail "smallfirst took an option it has not"
fi
grep -q "^bellows: --schedule ./smallfirst.so: unknown option 'x'" sf.err || { cat sf.err; fail "option"; }
[ ! -e sf2 ] || fail "a refused run left sf2"

# a plugin written for interface version 3 (before the context grew the run's settings) runs
sed 's/\.iVersion = BELLOWS_POLICY_VERSION/.iVersion = 3/' "$here/policies/examples/halfway.c" > v3.c
grep -q '\.iVersion = 3' v3.c || fail "v3.c: no iVersion to set"
$cc -shared -fPIC -I "$here/policies" -o v3.so v3.c
"$bellows" run $S --compressor powersgd --policy ./v3.so --out v3 --quiet > /dev/null
grep -q '"status": "completed"' v3/summary.json || fail "a version-3 plugin"
# and one of version 4 (before price_blind): bellows reads its ops only as far as version 4 has
sed 's/\.iVersion = BELLOWS_POLICY_VERSION/.iVersion = 4/' "$here/policies/examples/plateau.c" > v4.c
grep -q '\.iVersion = 4' v4.c || fail "v4.c: no iVersion to set"
sed -i '/price_blind/d' v4.c
$cc -shared -fPIC -I "$here/policies" -o v4.so v4.c
"$bellows" policies --plugin ./v4.so | grep "price: may see it" > /dev/null || fail "a version-4 plugin's price"

# a built-in policy and the same file built as a plugin give byte-identical results
for twin in "static:level=1 static" "accordion accordion" "cpsgd:period=4 cpsgd" "adpsgd adpsgd"; do
  set -- $twin
  spec=$1 name=$2 opts=${1#$2}
  $cc -shared -fPIC -I "$here/policies" -DTWIN="policy_${name}_ops" -o "$tmp/${name}_twin.so" \
    "$here/tests/plugins/twin.c" "$here/policies/$name.c" "$here/policies/policy_impl.c" -lm
  "$bellows" compare $S --compressor powersgd --policies "$spec,./${name}_twin.so$opts" \
    --out "twin-$name" --no-plots --quiet > /dev/null
  a=(twin-$name/seed-1/1-*) b=(twin-$name/seed-1/2-*)
  for f in steps.csv evals.csv; do cmp "${a[0]}/$f" "${b[0]}/$f" || fail "$name: $f differs built in and as a plugin"; done
  diff <(grep -v '"wall\|"policy"' "${a[0]}/summary.json") <(grep -v '"wall\|"policy"' "${b[0]}/summary.json") \
    || fail "$name: summary.json differs"
done

# bad plugins: exit 2, one line "bellows: --policy FILE: ...", nothing written
for c in 1 2 3 4 5 6 7 8 9 10; do
  $cc -shared -fPIC -I "$here/policies" -DCASE=$c -o "bad$c.so" "$here/tests/plugins/bad.c"
done
echo "not an ELF file" > text.so
expect_bad() { # SPEC FILE-IN-MESSAGE WORDS [COMMAND]
  local cmd=${4:-run} flag=--policy
  [ "$cmd" = compare ] && flag=--policies
  set +e
  "$bellows" $cmd $S --compressor powersgd $flag "$1" --out badout > out.txt 2> err.txt
  local rc=$?
  set -e
  [ $rc -eq 2 ] || { cat err.txt; fail "$1: exit $rc, expected 2"; }
  [ "$(wc -l < err.txt)" -eq 1 ] || { cat err.txt; fail "$1: not one line"; }
  grep -q "^bellows: --policy $2: .*$3" err.txt || { cat err.txt; fail "$1: message"; }
  [ ! -e badout ] || fail "$1: wrote badout"
}
expect_bad ./missing.so ./missing.so "no such file"
expect_bad ./text.so ./text.so "cannot load it as a shared object"
expect_bad ./bad1.so ./bad1.so "returned NULL"
expect_bad ./bad2.so ./bad2.so "interface version 7, but this bellows knows versions 3 to 6 (update bellows)"
expect_bad ./bad3.so ./bad3.so "decide is NULL"
expect_bad ./bad4.so ./bad4.so "mode 7"
expect_bad ./bad5.so ./bad5.so "option 'k': its default '99' is not valid"
expect_bad ./bad6.so ./bad6.so "no entry point bellows_policy_entry"
expect_bad ./bad7.so:k=3 ./bad7.so "k=3: this plugin refuses every value"
expect_bad ./bad8.so ./bad8.so "interface version 0"
expect_bad ./bad9.so ./bad9.so "interface version 2, but .* rebuild the plugin against this bellows"
expect_bad ./bad10.so ./bad10.so "price_blind must be 0 or 1"
expect_bad ./netaware.so:fraction=abc ./netaware.so "fraction=abc: expected a number"
expect_bad ./netaware.so:nosuch=1 ./netaware.so "unknown option 'nosuch'"
expect_bad ./bad2.so ./bad2.so "interface version 7" compare
expect_bad "./a'b.so" "'./a'b.so'" "a plugin's path is made of"
set +e
"$bellows" policies --plugin ./bad3.so > out.txt 2> err.txt
rc=$?
set -e
[ $rc -eq 2 ] && [ ! -s out.txt ] && grep -q "^bellows: --plugin ./bad3.so: decide is NULL" err.txt \
  || { cat err.txt; fail "policies --plugin bad3.so"; }
"$bellows" policies --plugin ./plateau.so | grep "^    plugin: ./plateau.so" > /dev/null || fail "listing"
diff <("$bellows" policies) <("$bellows" policies --plugin ./plateau.so | head -n "$("$bellows" policies | wc -l)") \
  || fail "the built-ins' listing changed with --plugin"

# a plugin that crashes in a sweep fails its own runs; the others finish
$cc -shared -fPIC -I "$here/policies" -o crash.so "$here/tests/plugins/crash.c"
set +e
"$bellows" sweep $S --bandwidth 1Gbps,10Gbps --policies sync,./crash.so:at=5 --out swc --quiet > out.txt 2>&1
rc=$?
set -e
# sweep.csv holds the finished runs; the failed ones are reported, and --resume would rerun them
[ $rc -ne 0 ] || fail "crash sweep: exit 0"
[ "$(grep -c ',sync,.*,completed,' swc/sweep.csv)" -eq 2 ] || { cat out.txt swc/sweep.csv; fail "crash sweep: sync"; }
! grep -q crash.so swc/sweep.csv || { cat swc/sweep.csv; fail "crash sweep: a crashed run has a row"; }
# (a signal; under AddressSanitizer, which catches the SIGSEGV, exit 1)
[ "$(grep -c 'crash.so:at=5: the run process \(died of signal\|exited with\)' out.txt)" -eq 2 ] || { cat out.txt; fail "crash sweep: report"; }
echo "ok"
