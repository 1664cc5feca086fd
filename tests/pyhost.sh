# pyhost.sh: sourced by the tests that run Debian's Python against libbellows_policy.so
# ($BELLOWS_POLICY_LIB, set before sourcing). Sets here (the checkout), py (/usr/bin/python3,
# with the sanitizers' runtimes preloaded when the library is a sanitized one, from build-asan/),
# tmp (a folder removed on exit) and need_torch (skips with 77 without python3-torch or the
# packaged Fashion-MNIST, else sets data and one OpenMP thread).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pyenv=()
# grep reads all of ldd's lines (not -q): under pipefail an early exit can kill ldd with SIGPIPE
# and make the test fail as if the library were not sanitized (it did once, under ASan in CI)
if ldd "$BELLOWS_POLICY_LIB" | grep libasan >/dev/null; then
  pyenv=(env "LD_PRELOAD=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
         ASAN_OPTIONS=detect_leaks=0)
fi
py() { "${pyenv[@]}" /usr/bin/python3 "$@"; }
need_torch() {
  data=/usr/share/datasets/fashion-mnist
  py -c "import torch" 2>/dev/null || { echo "python3-torch is not installed: skipped"; exit 77; }
  [ -f "$data/train-images-idx3-ubyte.gz" ] || { echo "no Fashion-MNIST in $data: skipped"; exit 77; }
  export OMP_NUM_THREADS=1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
