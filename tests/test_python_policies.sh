#!/usr/bin/env bash
# test_python_policies.sh: policies written in Python (--policy ./x.py), run by the CPython
# embedded in bellows. The Python examples of policies/examples/ against their C twins (the
# built-in accordion, netaware.c, plateau.c, halfway.c; a periodic policy against cpsgd): steps.csv,
# evals.csv and summary.json byte for byte, in run/compare, replay and sweep; the observation's
# arrays are zero-copy read-only views and every documented field is filled; the same command
# twice gives the same files (the hash seed is fixed); every failure is one line naming the
# file and line, exit 2 before the run starts and 1 during it, nothing written; Ctrl-C stops a
# policy that never returns (exit 130).
#   tests/test_python_policies.sh BELLOWS_BINARY with|without
# "without": bellows was built without Python; a .py policy must say how to get it.
set -euo pipefail
bellows=$1
# the kernels bellows pins (models/blas_cpu.h), set here where the CPU runs them, so that each
# bellows below does not exec itself again to set them (test_cli_results checks that re-exec)
if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
  export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}
fi
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
BASE="--train-samples 2048 --test-samples 500 --workers 4 --batch 32 --hidden 64,32"
S="$BASE --epochs 4"
fail() { echo "FAIL: $*"; exit 1; }

# SPEC EXIT WORDS [COMMAND]: exit status EXIT, one line "bellows: --policy FILE: ...WORDS", no out
expect_fail() {
  local cmd=${4:-run} flag=--policy
  [ "$cmd" = compare ] && flag=--policies
  set +e
  "$bellows" $cmd $S --quiet --compressor powersgd $flag "$1" --out out > stdout.txt 2> err.txt
  local rc=$?
  set -e
  # (AddressSanitizer's three-line note on SimGrid's stack switches is not bellows' output)
  grep -v '^==[0-9]*==WARNING: ASan is ignoring requested __asan_handle_no_return\|^False positive error reports may follow$\|^For details see https://github.com/google/sanitizers/issues/189$' \
    err.txt > err1.txt || true
  mv err1.txt err.txt
  [ $rc -eq "$2" ] || { cat err.txt; fail "$1: exit $rc, expected $2"; }
  [ "$(wc -l < err.txt)" -eq 1 ] || { cat err.txt; fail "$1: not one line"; }
  grep -q "^bellows: .*${1%%:*}: .*$3" err.txt || { cat err.txt; fail "$1: message"; }
  [ ! -e out ] || fail "$1: wrote out"
}

if [ "${2:-with}" = without ]; then
  printf 'import bellows_policy\n' > p.py
  expect_fail ./p.py 2 "built without Python policies; install libpython3-dev and python3-numpy"
  echo "ok (without Python)"
  exit 0
fi

# every run reads the packaged Fashion-MNIST's first 2048 training and 500 test samples from a
# copy of them (tests/smalldata.py): the same runs, without reading the 60,000 images in each
python3 "$here/tests/smalldata.py" "$tmp/fmnist" 2048 500
BASE="$BASE --data-dir $tmp/fmnist"
S="$S --data-dir $tmp/fmnist"

# the manual's Python policy (docs/guide/write-a-policy.md) is policies/examples/halfway.py,
# word for word
sed -n '/^<!-- halfway.py -->/,/^```$/p' "$here/docs/guide/write-a-policy.md" | sed '1,2d;$d' > readme.py
[ -s readme.py ] || fail "docs/guide/write-a-policy.md has no <!-- halfway.py --> example"
diff readme.py "$here/policies/examples/halfway.py" \
  || fail "docs/guide/write-a-policy.md's example differs from halfway.py"

cp "$here"/policies/examples/*.py .
for p in netaware plateau halfway; do
  cc -shared -fPIC -I "$here/policies" -o "$p.so" "$here/policies/examples/$p.c"
done

# the twins: the first two runs of folder $1 give the same files, bit for bit
same() {
  local a=("$1"/seed-1/1-*) b=("$1"/seed-1/2-*)
  for f in steps.csv evals.csv; do
    cmp "${a[0]}/$f" "${b[0]}/$f" || fail "$1: $f differs between C and Python"
  done
  diff <(grep -v '"wall\|"policy"' "${a[0]}/summary.json") \
       <(grep -v '"wall\|"policy"' "${b[0]}/summary.json") || fail "$1: summary.json differs"
  [ "$(grep -c ',completed,' "$1/compare.csv")" -eq 2 ] || fail "$1: a run did not complete"
}
# NAME, C SPEC, PYTHON SPEC, more flags: a compare of the two
twin() {
  local name=$1 c=$2 py=$3
  shift 3
  "$bellows" compare $S --seeds 1 --no-plots --quiet --policies "$c,$py" --out "$name" "$@" \
    > /dev/null
  same "$name"
}
twin acc accordion:interval=1 ./accordion.py:interval=1 --compressor powersgd --eval-every 8
# the regimes must change during the run, or the test would show little
[ "$(cut -d, -f16 acc/seed-1/2-*/steps.csv | sort -u | wc -l)" -ge 3 ] || fail "accordion: one regime"
twin acc-topk accordion:decider=rank0,interval=1 ./accordion.py:decider=rank0,interval=1 \
  --compressor topk
twin acc-batch accordion:mode=batch,interval=1 ./accordion.py:mode=batch,interval=1 \
  --compressor powersgd
[ "$(cut -d, -f3 acc-batch/seed-1/2-*/steps.csv | sort -u | wc -l)" -ge 3 ] || fail "batch: one batch"
twin net ./netaware.so:fraction=0.5 ./netaware.py:fraction=0.5 --compressor powersgd
twin plat ./plateau.so:patience=1 ./plateau.py:patience=1 --compressor powersgd --eval-every 10
twin half ./halfway.so ./halfway.py --compressor powersgd
grep -q '"hard stale=' plat/seed-1/2-*/steps.csv || fail "plateau never went hard"
# a replay of a recorded trace (its epoch norms), every step of it
"$bellows" replay --trace "$here/traces/samples/mlp-sync-8w.jsonl.gz" --workers 8 \
  --collectives analytic --compressor powersgd --policies accordion,./accordion.py --out rep \
  --no-plots --quiet > /dev/null
same rep
# Accordion's options checked as the built-in checks them, with the same message
for bad in critical=1.5 paper=1 switch=3 mode=batch,critical=3; do
  "$bellows" run $S --compressor powersgd --policy "accordion:$bad" > /dev/null 2> c.txt || true
  "$bellows" run $S --compressor powersgd --policy "./accordion.py:$bad" > /dev/null 2> p.txt || true
  [ -s c.txt ] && diff <(sed 's/--policy accordion/X/' c.txt) <(sed 's/--policy .\/accordion.py/X/' p.txt) \
    || fail "accordion:$bad: the messages differ"
done

# a periodic policy (average and period) against cpsgd
cat > every4.py <<'EOF'
import bellows_policy as bp

class Every4(bp.Policy):
    name = "every4"
    help = "local SGD, averaging every 4 steps"
    mode = bp.PERIODIC

    def init(self, ctx, opts):
        self.since = 0

    def decide(self, obs, decision):
        self.since += 1
        decision.period = 4
        decision.average = self.since == 4
        if decision.average:
            self.since = 0

    def describe(self):
        return "period=4"
EOF
twin periodic cpsgd:period=4 ./every4.py --compressor powersgd

# sweep: a .py policy in every run, each run in its own process
"$bellows" sweep $S --bandwidth 1Gbps,10Gbps --compressor powersgd --seeds 1 --policies sync,./netaware.py \
  --out sw --quiet > /dev/null
[ "$(grep -c ',completed,' sw/sweep.csv)" -eq 4 ] || { cat sw/sweep.csv; fail "sweep"; }
# a train-once sweep's fingerprint covers the outer step: a policy declared price-blind whose
# outer() reads the bandwidth is refused at the other price, not priced on the training's
# accuracy (issue 49 item 19)
cat > blind_outer.py <<'EOF'
import bellows_policy as bp


class BlindOuter(bp.Policy):
    name = "blind-outer"
    help = "averages every 4 steps; DiLoCo's outer lr from the bandwidth"
    version = 6
    mode = bp.PERIODIC
    price_blind = True

    def init(self, ctx, opts):
        self.fast, self.step = ctx.bandwidth_Bps > 5e8, 0

    def decide(self, obs, decision):
        self.step += 1
        decision.period = 4
        decision.average = self.step % 4 == 0

    def outer(self):
        return {"lr": 0.7 if self.fast else 0.1, "momentum": 0.9, "h": 4}
EOF
set +e
"$bellows" sweep --train-samples 512 --test-samples 100 --batch 8 --workers 2 --epochs 1 \
  --data-dir "$tmp/fmnist" --bandwidth 1Gbps,10Gbps --seeds 1 --policies ./blind_outer.py \
  --no-plots --quiet --out bo \
  > /dev/null 2> err.txt
rc=$?
set -e
[ $rc -eq 1 ] && grep -q "bandwidth=10Gbps.*declared price-blind (price_blind = 1), but at step 0" \
  err.txt || { cat err.txt; fail "a price-blind outer() that reads the price: exit $rc"; }

# what a policy sees: every documented field, the arrays zero-copy views of bellows' memory
cat > fields.py <<'EOF'
import math
import numpy as np
import bellows_policy as bp

class Fields(bp.Policy):
    name = "fields"
    help = "checks what it is shown"
    needs_grad_norms = True
    options = [bp.Option("x", bp.OPT_INT, "3", 1, 9, help="an int"),
               bp.Option("c", bp.OPT_CHOICE, "b", choices=("a", "b"), help="a choice"),
               bp.Option("u", bp.OPT_DOUBLE, None, 0, 1, help="unset")]

    def init(self, ctx, opts):
        assert opts == {"x": 3, "c": "b", "u": None}, opts
        for f in bp.Context.FIELDS:
            getattr(ctx, f)
        assert self.ctx is ctx and ctx.n_layers == len(ctx.layers) == 6
        assert [l.ndim for l in ctx.layers] == [2, 1, 2, 1, 2, 1]
        assert ctx.layers[0].rows == 64 and ctx.layers[0].cols == 784
        assert ctx.compressor == "powersgd" and ctx.compressor_spec.startswith("powersgd:")
        assert ctx.workers == 4 and ctx.batch == 128 and ctx.bandwidth_Bps > 0
        ctx.check_level(2, "rank")
        try:
            ctx.check_level(1.5, "rank")
            raise AssertionError("check_level took 1.5")
        except bp.UsageError as e:
            assert str(e).startswith("rank: "), str(e)
        self.kept = None

    def decide(self, obs, decision):
        for f in bp.Observation.FIELDS:
            getattr(obs, f)
        n = self.ctx.n_layers
        for a in (obs.grad_norm_rank0, obs.grad_norm_mean, decision.level):
            assert isinstance(a, np.ndarray) and a.dtype == np.float64 and a.shape == (n,)
            assert not a.flags.owndata  # a view of bellows' memory
        assert not obs.grad_norm_mean.flags.writeable and decision.level.flags.writeable
        assert (obs.epoch_norm_mean is None) != obs.epoch_end
        assert isinstance(obs.step, int) and isinstance(obs.epoch_end, bool)
        assert decision.batch == self.ctx.batch and decision.average is False
        if obs.step > 0:
            assert obs.have & bp.HAS_STEP_TIMES and obs.compute_s > 0
        if self.kept is not None:  # the same view, its values changed in place
            assert self.kept[0] is obs.grad_norm_mean
            assert not np.array_equal(self.kept[0], self.kept[1])
        self.kept = (obs.grad_norm_mean, obs.grad_norm_mean.copy())
        decision.level[:] = [2 if l.ndim == 2 else 0 for l in self.ctx.layers]
EOF
"$bellows" run $S --compressor powersgd --policy ./fields.py --out fields --quiet > /dev/null
grep -q '"status": "completed"' fields/summary.json || fail "fields"

# the same command twice: the same files, even for a policy that iterates over a set of strings
cat > hashed.py <<'EOF'
import bellows_policy as bp

class Hashed(bp.Policy):
    name = "hashed"
    help = "describes itself by a set's order"

    def decide(self, obs, decision):
        pass

    def describe(self):
        return "".join(sorted({l.name for l in self.ctx.layers}, key=hash))[:60]
EOF
for i in 1 2; do "$bellows" run $BASE --epochs 1 --policy ./hashed.py --out h$i --quiet > /dev/null; done
cmp h1/steps.csv h2/steps.csv || fail "two runs of one command differ"

# failures: one line, the file and line, exit 2 before the run and 1 during it, nothing written
w() { printf 'import bellows_policy as bp\n%s\n' "$2" > "$1"; }
w syntax.py 'class P(bp.Policy)
    pass'
expect_fail ./syntax.py 2 "line 2: SyntaxError"
w module.py 'x = 1 / 0'
expect_fail ./module.py 2 "line 2: ZeroDivisionError: division by zero"
w none.py 'x = 1'
expect_fail ./none.py 2 "defines no subclass of bellows_policy.Policy"
w two.py 'class A(bp.Policy):
    name, help = "a", "a"
    def decide(self, obs, d): pass
class B(A): pass'
expect_fail ./two.py 2 "defines 2 subclass of bellows_policy.Policy (A, B)"
w nodecide.py 'class P(bp.Policy):
    name, help = "p", "p"'
expect_fail ./nodecide.py 2 "P defines no decide"
w badname.py 'class P(bp.Policy):
    name, help = "Bad Name", "p"
    def decide(self, obs, d): pass'
expect_fail ./badname.py 2 "name is not a word"
w badopt.py 'class P(bp.Policy):
    name, help = "p", "p"
    options = [bp.Option("k", bp.OPT_INT, "99", 1, 10, help="k")]
    def decide(self, obs, d): pass'
expect_fail ./badopt.py 2 "option .k.: its default .99. is not valid"
w newer.py 'class P(bp.Policy):
    name, help, version = "p", "p", 7
    def decide(self, obs, d): pass'
expect_fail ./newer.py 2 "interface version 7, but this bellows knows versions 3 to 6"
w refuse.py 'class P(bp.Policy):
    name, help = "p", "p"
    def init(self, ctx, opts):
        raise bp.UsageError("no, thanks")
    def decide(self, obs, d): pass'
expect_fail ./refuse.py 2 "no, thanks$"
w initerr.py 'class P(bp.Policy):
    name, help = "p", "p"
    def init(self, ctx, opts):
        self.x = opts["missing"]
    def decide(self, obs, d): pass'
expect_fail ./initerr.py 2 "line 5, in init: KeyError: .missing."
w first.py 'class P(bp.Policy):
    name, help = "p", "p"
    def decide(self, obs, d):
        d.level[0] = 1 / obs.step'
expect_fail ./first.py 2 "line 5, in decide: ZeroDivisionError: division by zero (step 0)"
w later.py 'class P(bp.Policy):
    name, help = "p", "p"
    def decide(self, obs, d):
        if obs.step == 9:
            raise RuntimeError("at nine")'
expect_fail ./later.py 1 "line 6, in decide: RuntimeError: at nine (step 9)"
w observe.py 'class P(bp.Policy):
    name, help, needs_grad_norms = "p", "p", True
    def observe(self, obs):
        obs.grad_norm_mean[0] = 1
    def decide(self, obs, d): pass'
expect_fail ./observe.py 2 "line 5, in observe: ValueError: assignment destination is read-only"
w batch.py 'class P(bp.Policy):
    name, help = "p", "p"
    def decide(self, obs, d):
        d.batch = 128.0'
expect_fail ./batch.py 2 "decision.batch is a float; expected an int"
w nan.py 'class P(bp.Policy):
    name, help = "p", "p"
    def decide(self, obs, d):
        d.level[0] = float("nan") if obs.step == 3 else 0'
expect_fail ./nan.py 1 "invalid decision at step 3: a level not finite and >= 0 (layer 0)"
w describe.py 'class P(bp.Policy):
    name, help = "p", "p"
    def decide(self, obs, d): pass
    def describe(self):
        return 7'
expect_fail ./describe.py 2 "describe() returned int; expected a str"
w rebind.py 'class P(bp.Policy):
    name, help = "p", "p"
    def decide(self, obs, d):
        d.level = [0] * 6'
expect_fail ./rebind.py 2 "line 5, in decide: AttributeError"
expect_fail ./missing.py 2 "no such file"
# a compare runs each policy in a child: a failing one fails its own runs, the others finish
set +e
"$bellows" compare $BASE --epochs 1 --policies sync,./later.py --out cmp --no-plots --quiet > /dev/null 2> err.txt
rc=$?
set -e
[ $rc -eq 1 ] && grep -q "later.py seed 1: --policy ./later.py: line 6, in decide: RuntimeError" err.txt \
  || { cat err.txt; fail "compare with a failing policy"; }
[ -f cmp/seed-1/1-sync/steps.csv ] && [ ! -e cmp/seed-1/2-._later.py/steps.csv ] || fail "compare's files"

# Ctrl-C stops a policy that never returns, as it stops any run
w loop.py 'class P(bp.Policy):
    name, help = "p", "p"
    def decide(self, obs, d):
        while obs.step == 5:
            pass'
setsid "$bellows" run $S --policy ./loop.py --out loop > out.txt 2> err.txt &
pid=$!
for i in $(seq 100); do grep -q '# policy' out.txt && break; sleep 0.1; done
sleep 1
kill -INT -- -$pid
set +e
wait $pid
rc=$?
set -e
[ $rc -eq 130 ] || { cat err.txt; fail "Ctrl-C: exit $rc"; }
grep -q "^bellows: interrupted at step 5 of 64; nothing written" err.txt || { cat err.txt; fail "Ctrl-C: message"; }
[ ! -e loop ] || fail "Ctrl-C: wrote loop/"

# listings
"$bellows" policies --plugin ./accordion.py > list.txt
grep -q "^    python: ./accordion.py" list.txt || fail "listing"
diff <("$bellows" policies --plugin ./netaware.so | sed -n '/^netaware/,$p' | grep -v 'source\|plugin:') \
     <("$bellows" policies --plugin ./netaware.py | sed -n '/^netaware/,$p' | grep -v 'source\|python:') \
  || fail "netaware.so and netaware.py list differently"
"$bellows" policies --python > doc.txt
grep -q "class Observation" doc.txt || fail "policies --python"
echo "ok"
