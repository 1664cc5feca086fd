#!/usr/bin/env bash
# run_python_policy.sh: what a Python policy costs per step against the built-in it twins, in
# wall time, side by side in one process (bench_policy: policy_step and policy_describe as the
# driver calls them, on synthetic observations) for 4, 62 and 161 layers (the mlp, ResNet-18,
# ResNet-50); then in a whole run: the sample trace's 1,170 steps replayed by the fast engine
# (where little else costs anything) under accordion and ./accordion.py, alternated REPS times,
# wall seconds of each replay as its summary.json reports them; and what a process pays once,
# to start the interpreter and import NumPy: `bellows policies --plugin` of netaware.so and of
# netaware.py, alternated REPS times (wall seconds and peak memory, /usr/bin/time).
#   tests/perf/run_python_policy.sh [STEPS] [ROUNDS] [REPS]   (defaults 2000 5 3)
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake --build build --target bench_policy bellows >/dev/null
for n in 4 62 161; do
  build/bench_policy policies/examples "$n" "${1:-2000}" "${2:-5}"
  echo
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp policies/examples/accordion.py "$tmp/"
cd "$tmp"
echo "# whole replays: traces/samples/mlp-sync-8w.jsonl.gz (1170 steps, 4 layers), analytic, fast engine"
printf '%-14s %10s %10s\n' rep accordion accordion.py
for r in $(seq "${3:-3}"); do
  for p in accordion ./accordion.py; do
    rm -rf "rep-$r-$p"
    "$OLDPWD/build/bellows" replay --trace "$OLDPWD/traces/samples/mlp-sync-8w.jsonl.gz" --workers 8 \
      --collectives analytic --policies "$p" --out "rep-$r-${p#./}" --no-plots --quiet > /dev/null
  done
  wall() { sed -n 's/.*"wall_s": \([0-9.e+-]*\).*/\1/p' "$1"/seed-1/1-*/summary.json | head -1; }
  printf '%-14s %10s %10s\n' "$r" "$(wall "rep-$r-accordion")" "$(wall "rep-$r-accordion.py")"
done
echo
echo "# once per process: bellows policies --plugin (load and list one policy)"
cc -shared -fPIC -I "$OLDPWD/policies" -o netaware.so "$OLDPWD/policies/examples/netaware.c"
cp "$OLDPWD/policies/examples/netaware.py" .
for r in $(seq "${3:-3}"); do
  for p in ./netaware.so ./netaware.py; do
    /usr/bin/time -f "$p %e s, %M KB peak" "$OLDPWD/build/bellows" policies --plugin "$p" > /dev/null
  done
done
