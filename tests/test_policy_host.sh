#!/usr/bin/env bash
# test_policy_host.sh: one policy, two hosts. A recorded trace's observation sequence is fed to
# a policy by the core itself (host_feed: policy_create and policy_step, as the simulator calls
# them) and through libbellows_policy.so from Python (traces/pytorch/bellows_host.py, ctypes):
# every step's decision (levels, batch, averaging, period, described state) must be the same,
# for built-ins of both modes, a C plug-in and a Python policy file. A spec the library cannot
# load is refused with bellows' message and status 2.
#   tests/test_policy_host.sh HOST_FEED LIBBELLOWS_POLICY
set -euo pipefail
feed=$1
export BELLOWS_POLICY_LIB=$2
. "$(dirname "$0")/pyhost.sh"
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
