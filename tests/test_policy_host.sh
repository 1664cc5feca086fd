#!/usr/bin/env bash
# test_policy_host.sh: one policy, two hosts. A recorded trace's observation sequence is fed to
# a policy by the core itself (host_feed: policy_create and policy_step, as the simulator calls
# them) and through libbellows_policy.so from Python (traces/pytorch/bellows_host.py, ctypes):
# every step's decision (levels, batch, averaging, period, described state) must be the same,
# for built-ins of both modes, a C plug-in and a Python policy file. A spec the library cannot
# load is refused with bellows' message and status 2. Before them (without NumPy too), the
# library's struct layout and versions against bellows_host.py's ctypes mirrors, and the outer
# step a policy asks for, through the library.
#   tests/test_policy_host.sh HOST_FEED LIBBELLOWS_POLICY
set -euo pipefail
feed=$1
export BELLOWS_POLICY_LIB=$2
. "$(dirname "$0")/pyhost.sh"
# the layout check at load (no NumPy needed): the library's structs as bellows_host.py mirrors
# them pass; a mirror that drifted (a field dropped, a field retyped) and a library without the
# layout function are refused with a message that says what differs; the outer step travels
cc -shared -fPIC -o "$tmp/old.so" -x c - <<'C'
int bellows_host_api(void) { return 1; }
C
PYTHONPATH=$here/traces/pytorch py - <<'PY'
import ctypes, sys
import bellows_host as b
lib = b.library()  # checks the versions, sizes and offsets: raises if they differ
class Short(ctypes.Structure):
    _fields_ = b._Obs._fields_[:-1]
class Retyped(ctypes.Structure):
    _fields_ = [("step", ctypes.c_int)] + b._Obs._fields_[1:]
for bad, says in ((Short, "BellowsPolicyObs is 168 bytes, the library's 176"),
                  (Retyped, "BellowsPolicyObs.epoch is at byte 4, the library's at 8")):
    try:
        b.check_struct(lib, "BellowsPolicyObs", bad)
        sys.exit("a drifted struct passed the check")
    except b.PolicyError as e:
        assert says in str(e) and e.status == 1, str(e)
layers = [("fc1.weight", 16, 8), ("fc1.bias", 16, 1)]
def make(spec):
    return b.HostPolicy(spec, layers, 8, 2, 64, 10, 0.1)
o = make("diloco:H=4").outer  # the outer step: DiLoCo's H, its Nesterov lr 0.7, momentum 0.9
assert (o.h, o.lr, o.momentum, o.fragments, o.tau, o.bits, o.eager) == (4, 0.7, 0.9, 1, 0, 32, 0), vars(o)
assert make("diloco:H=8,eager=1").outer.eager == 1
assert make("cpsgd").outer is None and make("sync").outer is None
print("layout and outer step: ok")
PY
BELLOWS_POLICY_LIB=$tmp/old.so PYTHONPATH=$here/traces/pytorch py - <<'PY'
import sys
import bellows_host as b
try:
    b.library()  # the load itself checks
    sys.exit("a library without bellows_host_layout loaded")
except b.PolicyError as e:
    assert "older than bellows_host.py" in str(e) and e.status == 1, str(e)
PY
py -c "import numpy" 2>/dev/null || { echo "python3-numpy is not installed: skipped"; exit 77; }
trace=$here/traces/samples/mlp-sync-8w.jsonl.gz
cc -shared -fPIC -I "$here/policies" -o "$tmp/netaware.so" "$here/policies/examples/netaware.c"
n=0
for spec in accordion static:level=1 sync cpsgd adacomm adpsgd postlocal "$tmp/netaware.so" \
            "$here/policies/examples/plateau.py" "$here/policies/examples/accordion.py"; do
  "$feed" "$trace" "$spec" powersgd 2 > "$tmp/c.txt"
  py "$here/traces/pytorch/bellows_host.py" feed "$trace" "$spec" powersgd 2 > "$tmp/p.txt"
  [ "$(wc -l < "$tmp/c.txt")" -eq 1170 ] || { echo "$spec: $(wc -l < "$tmp/c.txt") steps"; exit 1; }
  if ! cmp -s "$tmp/c.txt" "$tmp/p.txt"; then
    echo "$spec decides differently through the library:"; diff "$tmp/c.txt" "$tmp/p.txt" | head
    exit 1
  fi
  n=$((n + 1))
done
# the decisions change along the run, so that the comparison compares something
[ "$(cut -d' ' -f2- "$tmp/c.txt" | sort -u | wc -l)" -gt 1 ] || { echo "one decision only"; exit 1; }
# a spec the library cannot load: bellows' message, status 2
set +e
py "$here/traces/pytorch/bellows_host.py" feed "$trace" nosuch:level=1 powersgd 2 2> "$tmp/err.txt"
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "unknown policy: exit $rc"; exit 1; }
grep -q "'nosuch': unknown policy" "$tmp/err.txt" || { cat "$tmp/err.txt"; exit 1; }
# norms of another length than the layers: refused before C reads them (issue 49 item 20)
PYTHONPATH="$here/traces/pytorch" py - <<'PY' || exit 1
import bellows_host as bh
p = bh.HostPolicy("accordion", [("w", 4, 3), ("b", 4, 1), ("v", 2, 3)], 2, 1, 8, 10, 0.1,
                  compressor="powersgd", compressor_level=2)
for field in ("grad_norm_mean", "grad_norm_rank0", "epoch_norm_mean"):
    obs = dict(step=0, epoch=0, lr=0.1, loss=1.0, grad_norm_mean=[1.0, 2.0, 3.0],
               epoch_end=True)
    obs[field] = [1.0]
    try:
        p.step(bh.Observation(**obs))
        raise SystemExit("%s of 1 value for 3 layers was passed to C" % field)
    except bh.PolicyError as e:
        assert e.status == 2 and "%s: 1 values, expected 3" % field in str(e), str(e)
p.step(bh.Observation(step=0, epoch=0, lr=0.1, loss=1.0, grad_norm_mean=[1.0, 2.0, 3.0]))
PY
echo "$n policies decide the same in the core and through libbellows_policy.so"
