#!/usr/bin/env bash
# test_python_norms.sh: a Python policy that reads obs.grad_norm_mean without declaring
# needs_grad_norms = True (whose norms bellows does not compute: zeros) is warned, once, on
# stderr; one that declares it is not, and the warning changes no result file.
#   tests/test_python_norms.sh BELLOWS_BINARY
set -euo pipefail
bellows=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail() { echo "FAIL: $*"; exit 1; }
policy() { # NAME NEEDS: a policy that reads the norms every step
  cat > "$1.py" <<PY
import bellows_policy as bp

class Reader(bp.Policy):
    name = "$1"
    help = "reads the gradient norms"
    needs_grad_norms = $2

    def decide(self, obs, decision):
        self.seen = float(obs.grad_norm_mean.sum())
PY
}
policy blind False
policy sighted True
S="--train-samples 512 --test-samples 64 --workers 2 --batch 16 --epochs 1 --quiet"
"$bellows" run $S --policy ./blind.py --out blind > /dev/null 2> err.txt
[ "$(grep -c 'reads obs.grad_norm_mean, which bellows computes only for a policy whose class sets needs_grad_norms = True' err.txt)" = 1 ] ||
  { cat err.txt; fail "no warning, or more than one"; }
"$bellows" run $S --policy ./sighted.py --out sighted > /dev/null 2> err.txt
# (AddressSanitizer's note on SimGrid's stack switches is not bellows' output)
! grep -v '^==[0-9]*==WARNING: ASan is ignoring\|^False positive error reports\|^For details see https://github.com/google/sanitizers' err.txt ||
  fail "a policy that needs the norms was warned"
echo "python norms: ok"
