#!/usr/bin/env bash
# check_reference.sh: two bellows binaries write the same files on a set of small reference
# scenarios (issue 38: a refactor of how a step is priced must change no output byte). The
# scenarios cover each step executor (DDP's streams with and without overlap, periodic
# averaging, the scheduled engine under fifo on parameter servers, p3, bytescheduler, tictac and
# layer-wise, the closed form of the fast replay), uncosted steps, parameter servers, islands
# (a gradient policy; DiLoCo on a workload's DDP steps), DiLoCo and Streaming DiLoCo on a star,
# two clusters of jobs (a fat-tree; islands whose WAN a DiLoCo job shares), and replays (fast
# and with actors) of a trace the OLD binary recorded.
#
#   scripts/check_reference.sh OLD_BINARY NEW_BINARY [WORK_DIR]
#
# Every file each scenario writes (steps.csv, evals.csv, summary.json, timelines, traces,
# cluster.json, links.csv, ...) is compared with cmp; a JSON file that differs is compared again
# without its wall-clock keys ("wall_s", "wall_model_s", ...: wall time, not simulated), which
# must then be equal. Exit 0 when all match, 1 (each difference named) when not, 2 on bad usage.
# WORK_DIR (default: a temporary folder, removed) keeps both binaries' files for a look.
set -uo pipefail
if [ $# -lt 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
  echo "usage: scripts/check_reference.sh OLD_BINARY NEW_BINARY [WORK_DIR] (both executable)" >&2
  exit 2
fi
old=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
new=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
if [ $# -ge 3 ]; then
  work=$3
  mkdir -p "$work" || exit 2
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
work=$(cd "$work" && pwd)
rm -rf "$work/old" "$work/new" "$work/input"
mkdir -p "$work/old" "$work/new" "$work/input"

small=(--epochs 2 --train-samples 1024 --test-samples 100 --workers 4 --quiet)
ideal=(--costs ideal)
wl=(--workload resnet18-cifar)
# NAME|ARGUMENTS of bellows run: each writes its --out folder, a timeline and a trace
runs=(
  "plain|${ideal[*]} --compressor powersgd --policy static:level=1"
  "plain_pytorch|--compressor powersgd --policy static:level=1"
  "plain_ring|${ideal[*]} --collectives transfer --allreduce ring --compressor topk --policy static:level=0.01"
  "ddp|${wl[*]} --overlap ddp --compressor topk --policy static:level=0.01"
  "ddp_powersgd|${wl[*]} --overlap ddp --compressor powersgd --policy accordion --bucket-mb 5"
  "ddp_profile|${wl[*]} --overlap ddp --compressor powersgd --policy static:level=2 --costs grace-tf --gpu V100"
  "ddp_jitter|${wl[*]} --overlap ddp --policy sync --compute-jitter 0.1 --slowdown 1,1,1.5,1"
  "none|${wl[*]} --overlap none --compressor powersgd --policy static:level=1"
  "tensor|${wl[*]} --overlap tensor --compressor topk --policy static:level=0.01"
  "periodic|${wl[*]} ${ideal[*]} --overlap none --collectives analytic --policy cpsgd:period=2"
  "periodic_ddp|${wl[*]} --overlap ddp --policy adpsgd --average-momentum"
  "p3|${wl[*]} --overlap ddp --schedule p3 --policy sync"
  "bytescheduler|${wl[*]} --overlap ddp --schedule bytescheduler:credit=2 --compressor powersgd --policy static:level=1"
  "tictac|${wl[*]} --overlap ddp --schedule tictac --policy sync"
  "layerwise|${wl[*]} --overlap layer --compressor topk --policy static:level=0.01"
  "layerwise_p3|${wl[*]} --overlap layer --schedule p3 --policy sync"
  "ps_fifo|${wl[*]} --overlap ddp --allreduce ps --collectives transfer --policy sync"
  "ps_p3|${wl[*]} --overlap ddp --allreduce ps --collectives transfer --schedule p3 --policy sync"
  "ps_analytic|${wl[*]} --overlap ddp --allreduce ps --collectives analytic --policy sync"
  "islands|--topology islands --islands 2 --compressor topk --policy static:level=0.01"
  "islands_diloco|${wl[*]} --topology islands --islands 2 --overlap ddp --policy diloco:H=4"
  "diloco|--policy diloco:H=4 --compressor none"
  "streaming_diloco|${wl[*]} --overlap none --policy streaming-diloco:h=4,fragments=2,tau=1"
)
# NAME|ARGUMENTS of bellows replay, of the trace the OLD binary recorded in scenario "plain"
replays=(
  "replay_fast|--replay-engine fast --collectives analytic --policies sync,static:level=2"
  "replay_fast_ddp|--replay-engine fast --collectives analytic ${wl[*]} --overlap ddp --free-compression --policies sync,accordion"
  "replay_fast_none|--replay-engine fast --collectives analytic ${wl[*]} --overlap none --policies static:level=1,cpsgd:period=2"
  "replay_actors|--replay-engine actors ${wl[*]} --overlap ddp --policies sync,static:level=1"
  "replay_sched|--replay-engine auto ${wl[*]} --overlap ddp --schedule p3 --policies sync"
)
cat > "$work/input/cluster.json" << 'EOF'
{"version": 1, "topology": "fat-tree", "leaf_size": 2, "oversubscription": 2, "workers": 8,
 "bandwidth": "10Gbps", "placement": "spread",
 "jobs": [{"name": "a", "workers": 4, "epochs": 2, "train_samples": 1024, "test_samples": 100,
           "policy": "sync", "workload": "resnet18-cifar", "overlap": "ddp", "seed": 1},
          {"name": "b", "workers": 4, "epochs": 2, "train_samples": 1024, "test_samples": 100,
           "policy": "static:level=1", "compressor": "powersgd", "start_s": 0.01,
           "workload": "resnet18-cifar", "overlap": "ddp", "schedule": "p3", "seed": 2}]}
EOF
# a cluster of islands: a DiLoCo job's exchanges and a synchronous job's share the WAN
cat > "$work/input/cluster_islands.json" << 'EOF'
{"version": 1, "topology": "islands", "islands": 2, "workers": 4, "bandwidth": "10Gbps",
 "jobs": [{"name": "a", "workers": 2, "epochs": 1, "train_samples": 512, "test_samples": 100,
           "policy": "diloco:H=2", "seed": 1},
          {"name": "b", "workers": 2, "epochs": 1, "train_samples": 512, "test_samples": 100,
           "policy": "sync", "start_s": 0.01, "seed": 2}]}
EOF

fail=0
say() { echo "check_reference: $*"; }

# run WHICH NAME COMMAND...: the binary WHICH (old or new) runs into $work/WHICH/NAME
run() {
  local which=$1 name=$2
  shift 2
  local bin=$old dir=$work/$which/$name
  [ "$which" = new ] && bin=$new
  mkdir -p "$dir"
  if ! (cd "$dir" && "$bin" "$@" > stdout.txt 2> stderr.txt) &&
    ! grep -q "the plots of 1 point(s) failed" "$dir/stderr.txt"; then
    say "$which: $name failed: $bin $*"
    sed 's/^/    /' "$dir/stderr.txt" | head -5
    fail=1
  fi
}

for which in old new; do
  for r in "${runs[@]}"; do
    name=${r%%|*}
    # shellcheck disable=SC2086
    run "$which" "$name" run "${small[@]}" ${r#*|} --out out --timeline timeline.json \
      --record-trace trace.jsonl
  done
done
trace=$work/old/plain/trace.jsonl
for which in old new; do
  for r in "${replays[@]}"; do
    name=${r%%|*}
    # shellcheck disable=SC2086
    run "$which" "$name" replay --trace "$trace" --workers 4 --quiet --no-plots ${r#*|} --out out
  done
  # a cluster has no --no-plots: an empty plots folder, and the failure it reports is allowed
  BELLOWS_PLOTS_DIR=$work/input run "$which" cluster cluster "$work/input/cluster.json" \
    --out out --jobs 1 --timeline
  BELLOWS_PLOTS_DIR=$work/input run "$which" cluster_islands cluster \
    "$work/input/cluster_islands.json" --out out --jobs 1 --timeline
done

# The JSON file without its wall-clock keys, one key a line as bellows writes them.
strip_wall() { grep -v -E '"wall[a-z_]*": ' "$1"; }
# Keys issue 48 added, on purpose, to the summary.json of every run priced by a cost profile
# other than ideal (the scenarios plain_pytorch, ddp*, none, tensor, periodic_ddp, p3,
# bytescheduler, tictac, layerwise*, ps_*, the replays priced by a workload and the cluster's
# jobs): costs_software (the profile's software generation), nccl_sockets (the TCP cap's NCCL
# threads x sockets; not under grace-tf, which has no per-socket cap) and validation_near (the
# published rows near the run). Both binaries' files are compared without them (an OLD binary
# built after issue 48 writes them too); every other byte must be the old one's, so a changed
# number still fails. Replays under --cost-band (32 draws by default) add the run's band,
# cost_band_* (sim/driver/results_band.c), to the same files.
strip_new() { grep -v -E '"(costs_software|nccl_sockets|validation_near|cost_band_[a-z_]*)": '; }

n=0
while IFS= read -r f; do
  a=$work/old/$f b=$work/new/$f
  n=$((n + 1))
  if [ ! -f "$b" ]; then
    say "only the old binary wrote $f"
    fail=1
  elif ! cmp -s "$a" "$b"; then
    case $f in
      */stderr.txt | */stdout.txt) continue ;; # --quiet: nothing, or a wall time
    esac
    if [[ $f == *.json ]] && cmp -s <(strip_wall "$a" | strip_new) <(strip_wall "$b" | strip_new); then
      continue
    fi
    say "$f differs: $(cmp "$a" "$b" 2>&1 | head -1)"
    fail=1
  fi
done < <(cd "$work/old" && find . -type f | sed 's|^\./||' | sort)
while IFS= read -r f; do
  [ -f "$work/old/$f" ] || { say "only the new binary wrote $f" && fail=1; }
done < <(cd "$work/new" && find . -type f | sed 's|^\./||' | sort)

if [ $fail -ne 0 ]; then
  say "FAIL: the binaries' files differ ($work)"
  exit 1
fi
say "ok: $n files, ${#runs[@]} runs, ${#replays[@]} replays and two clusters, the same bytes"
