#!/usr/bin/env bash
# run_all.sh: the model benchmarks, side by side in one run. For each configuration it times
# bellows' training step and PyTorch's (same architecture, same thread count, same OpenBLAS
# kernels) alternately for several rounds, and reports the medians, their ratio, and the
# achieved GFLOP/s against OpenBLAS sgemm's own rate measured in the same run.
#   tests/perf/run_all.sh [THREADS] [ROUNDS]      (defaults: nproc, 3)
set -euo pipefail
cd "$(dirname "$0")/../.."
threads=${1:-$(nproc)}
rounds=${2:-3}
secs=1.5

cmake --build build --target bench_models >/dev/null
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "run_all.sh: installing python3-torch (PyTorch reference)" >&2
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-torch >/dev/null
fi

# PyTorch's linear layers call the same OpenBLAS: give it the kernels bellows chose.
core=$(build/bench_models sgemm 64 1 0.05 | sed 's/.*core=\([^ ]*\).*/\1/')
export OPENBLAS_CORETYPE=$core

field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p"; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

configs=("mlp 64" "mlp 128" "cnn 64" "cnn 128")
declare -A c_us t_us c_gf
for ((r = 1; r <= rounds; r++)); do
  for cfg in "${configs[@]}"; do
    set -- $cfg
    line=$(build/bench_models step "$1" "$2" "$threads" "$secs")
    c_us[$cfg]+="$(echo "$line" | field step_us) "
    c_gf[$cfg]+="$(echo "$line" | field gflops) "
    line=$(/usr/bin/python3 tests/perf/bench_torch.py --model "$1" --batch "$2" \
           --threads "$threads" --seconds "$secs")
    t_us[$cfg]+="$(echo "$line" | field step_us) "
  done
  peak_runs+="$(build/bench_models sgemm 2048 "$threads" "$secs" | field gflops) "
done
peak=$(echo $peak_runs | tr ' ' '\n' | median)

echo "bellows vs PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') on the CPU:" \
     "training step (forward+backward+SGD), $threads threads, OpenBLAS $core, median of $rounds rounds"
printf "%-6s %5s %12s %12s %16s %10s %10s\n" model batch bellows_us torch_us bellows/torch \
       GFLOP/s of_peak
for cfg in "${configs[@]}"; do
  set -- $cfg
  cu=$(echo ${c_us[$cfg]} | tr ' ' '\n' | median)
  tu=$(echo ${t_us[$cfg]} | tr ' ' '\n' | median)
  gf=$(echo ${c_gf[$cfg]} | tr ' ' '\n' | median)
  awk -v m="$1" -v b="$2" -v cu="$cu" -v tu="$tu" -v gf="$gf" -v pk="$peak" 'BEGIN {
    printf "%-6s %5d %12.1f %12.1f %16.2f %10.1f %9.0f%%\n", m, b, cu, tu, cu / tu, gf, 100 * gf / pk }'
done
echo "OpenBLAS sgemm 2048x2048x2048 peak: $peak GFLOP/s ($threads threads)"
