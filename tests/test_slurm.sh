#!/usr/bin/env bash
# test_slurm.sh: the manual's "Many machines" recipe (docs/guide/sweep-a-grid.md), run for real. Starts a single-node Slurm
# (munged, slurmctld, slurmd) in a temporary folder, runs a tiny sweep as a 4-task job array of
# shards, merges and plots them; then the same through GNU parallel. Each merged sweep.csv must
# equal the unsharded sweep's, the `folder` column aside. The recipe's lines are taken from the
# manual's page (and must be there verbatim), so the page shows what is tested. Needs Debian's munge,
# slurmd, slurmctld, slurm-client and parallel (scripts/setup.sh --tests); exits 77 (skipped)
# without them. Every daemon is stopped by its PID on exit, whatever happens.
#   tests/test_slurm.sh BELLOWS_BINARY
set -euo pipefail
bellows=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$PATH:/usr/sbin:/sbin"   # munged, slurmctld and slurmd live in sbin

# tests/test_sweep.c's scenario: 4 points x 2 policies = 8 runs of about 0.1 s each
# shellcheck disable=SC2054  # the commas are inside flag values
FLAGS=(--bandwidth 1Gbps,10Gbps --latency 1us,20us --policies sync,static:level=1
       --train-samples 2048 --test-samples 500 --epochs 2 --workers 4 --batch 32
       --target-accuracy 0.6 --seeds 1 --no-plots --quiet)
RUNS=8

for cmd in mungekey munged munge unmunge slurmctld slurmd sinfo sbatch squeue scancel parallel; do
  command -v "$cmd" >/dev/null || { echo "$cmd is not installed: skipped"; exit 77; }
done

# ---- the temporary folder and the clock ----

tmp=$(mktemp -d)
# munged refuses a socket whose folders are not searchable by all (mktemp makes 0700)
chmod 755 "$tmp"
mkdir -p "$tmp"/{munge,log,state,spool,bin,slurm,gnu-parallel,parallel-home}
conf=$tmp/slurm.conf
export SLURM_CONF=$conf   # every Slurm client and daemon below reads this configuration
# the recipe calls plain `bellows`, as a user would: put the binary under test on PATH
ln -s "$bellows" "$tmp/bin/bellows"
export PATH="$tmp/bin:$PATH"
export PARALLEL_HOME=$tmp/parallel-home   # GNU parallel's state, not in ~/.parallel

now_us() { echo "${EPOCHREALTIME/./}"; }
# seconds since a now_us, with one decimal
since() { local d=$(( $(now_us) - $1 )); printf '%d.%d' $((d / 1000000)) $((d / 100000 % 10)); }

# ---- stopping everything, whatever happens ----

munged_pid="" slurmctld_pid="" slurmd_pid=""

# a PID that still runs (the daemons are our children: once dead they stay zombies until waited)
running() { local s; s=$(ps -o stat= -p "$1" 2>/dev/null) && [ "${s:0:1}" != Z ]; }

# SIGTERM, up to 10 s to exit, then SIGKILL; reaps it
stop_pid() {
  local pid=$1
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do running "$pid" || break; sleep 0.1; done
  running "$pid" && { echo "PID $pid ignored SIGTERM: killed"; kill -KILL "$pid"; }
  wait "$pid" 2>/dev/null || true
}

# PIDs of the processes that carry our SLURM_CONF: the daemons, slurmstepd, the jobs and all
# they started (a name pattern would miss a job's children). grep runs without it, so as not to
# find itself; this script and this subshell have it and are left out.
ours() {
  local f p
  for f in $(env -u SLURM_CONF grep -lzxF "SLURM_CONF=$conf" /proc/[0-9]*/environ 2>/dev/null); do
    p=${f#/proc/}; p=${p%/environ}
    if [ "$p" != $$ ] && [ "$p" != "$BASHPID" ]; then echo "$p"; fi
  done
}

# jobs still queued or running (a failure midway) would leave slurmstepd and bellows behind
cancel_jobs() {
  local jobs
  [ -n "$slurmctld_pid" ] && running "$slurmctld_pid" || return 0
  mapfile -t jobs < <(timeout 5 squeue -h -o %i 2>/dev/null)
  [ ${#jobs[@]} -gt 0 ] || return 0
  echo "cancelling jobs ${jobs[*]}"
  timeout 5 scancel "${jobs[@]}" || true
  for _ in $(seq 50); do [ -z "$(timeout 5 squeue -h -o %i)" ] && break; sleep 0.2; done
}

tail_of() { [ -s "$2" ] || return 0; echo "---- $2 (last $1 lines)"; tail -n "$1" "$2"; }

# on failure: the daemons' logs, their stderr (errors before a log opens), the jobs' output
show_logs() {
  local f
  for f in "$tmp"/log/*.log; do tail_of 15 "$f"; done
  for f in "$tmp"/log/*.stderr "$tmp"/log/recipe.out "$tmp"/slurm/slurm-*.out; do tail_of 4 "$f"; done
}

cleanup() {
  local rc=$? left=()
  set +e
  trap - EXIT INT TERM HUP
  trap '' PIPE   # a closed stdout (ctest ... | head) must not stop the cleanup halfway
  [ $rc -eq 0 ] || show_logs
  cancel_jobs
  stop_pid "$slurmd_pid"      # slurmd first: it reports to slurmctld, which authenticates via munged
  stop_pid "$slurmctld_pid"
  stop_pid "$munged_pid"
  # a job's slurmstepd may take a moment to exit after its job: give it up to 5 s
  for _ in $(seq 50); do mapfile -t left < <(ours); [ ${#left[@]} -eq 0 ] && break; sleep 0.1; done
  if [ ${#left[@]} -gt 0 ]; then
    echo "left running after the daemons stopped:"; ps -o pid,args -p "$(IFS=,; echo "${left[*]}")"
    kill -KILL "${left[@]}"
    rc=1
  fi
  cd / && rm -rf "$tmp"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT    # so that the EXIT trap runs on Ctrl-C and kill too
trap 'exit 143' TERM
trap 'exit 129' HUP
trap 'exit 141' PIPE

# to stderr: fail may run inside $(...), whose stdout is captured
fail() { echo "FAIL: $*" >&2; exit 1; }

# ---- a single-node Slurm ----

start_munge() {
  mungekey --create --keyfile="$tmp/munge/munge.key"
  # in the foreground munged logs to stderr (--log-file is for its daemon mode)
  munged --foreground --socket="$tmp/munge/socket" --key-file="$tmp/munge/munge.key" \
    --pid-file="$tmp/munge/munged.pid" --seed-file="$tmp/munge/seed" > "$tmp/log/munged.log" 2>&1 &
  munged_pid=$!
  for _ in $(seq 50); do
    munge -n -S "$tmp/munge/socket" 2>/dev/null | unmunge -S "$tmp/munge/socket" >/dev/null 2>&1 \
      && return 0
    running "$munged_pid" || fail "munged exited"
    sleep 0.1
  done
  fail "munged did not answer within 5 s"
}

# two consecutive TCP ports nobody listens on: not Slurm's 6817/6818, which a real Slurm may use
free_ports() {
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 20000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null &&
       ! (exec 3<>"/dev/tcp/127.0.0.1/$((p + 1))") 2>/dev/null; then
      echo "$p"; return 0
    fi
  done
  fail "no free port pair"
}

write_slurm_conf() {
  local port user
  port=$(free_ports)
  user=$(id -un)
  # Addresses are 127.0.0.1 so that nothing depends on how this host's name resolves.
  # proctrack/linuxproc and task/none: no cgroups (containers, no systemd). No accounting: no
  # slurmdbd. AuthInfo=socket: auth/munge and cred/munge (daemons and clients) use our munged.
  cat > "$conf" <<EOF
ClusterName=bellows-test
SlurmctldHost=$node(127.0.0.1)
SlurmUser=$user
SlurmdUser=$user
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MailProg=/bin/true
ReturnToService=2
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
}

# slurmctld and slurmd in the foreground (-D), as our children: we hold their PIDs from the start
start_slurm() {
  local state
  write_slurm_conf
  slurmctld -D > "$tmp/log/slurmctld.stderr" 2>&1 &
  slurmctld_pid=$!
  slurmd -D > "$tmp/log/slurmd.stderr" 2>&1 &
  slurmd_pid=$!
  for _ in $(seq 100); do
    state=$(timeout 5 sinfo -h -n "$node" -o %T 2>/dev/null || true)
    [ "$state" = idle ] && return 0
    running "$slurmctld_pid" || fail "slurmctld exited"
    running "$slurmd_pid" || fail "slurmd exited"
    sleep 0.2
  done
  fail "the node is not idle after 20 s (sinfo: '$state')"
}

# ---- the manual's recipe ----

# LINE must be in the manual's page as is (the page shows what this test runs); prints it with
# [flags] replaced by this test's flags
page=docs/guide/sweep-a-grid.md
readme_line() {
  grep -qxF -- "$1" "$here/$page" || fail "$page no longer has the line: $1"
  echo "${1//\[flags\]/${FLAGS[*]}}"
}

# runs a line of the page in the current folder; its output (each shard's table) goes to a log
run_readme_line() {
  local line
  line=$(readme_line "$1")
  echo "+ $line"
  eval "$line" >> "$tmp/log/recipe.out" || fail "exit $? from: $line"
}

# sweep.csv without its `folder` column (paths differ between the shards and the unsharded run)
without_folder() {
  local col
  # cut splits on every comma: a quoted field would shift the columns
  if grep -q '"' "$1"; then fail "$1 has quoted fields"; fi
  col=$(head -n 1 "$1" | tr , '\n' | grep -nx folder | cut -d: -f1)
  [ -n "$col" ] || fail "$1 has no folder column"
  cut -d, --complement -f "$col" "$1"
}

# the merged sweep.csv must hold the unsharded sweep's rows, values and order
same_as_unsharded() {
  without_folder "$1" > "$tmp/merged.csv"
  without_folder "$tmp/full/sweep.csv" > "$tmp/full.csv"
  [ $(($(wc -l < "$tmp/merged.csv") - 1)) -eq $RUNS ] || fail "$1 does not have $RUNS rows"
  diff -u "$tmp/full.csv" "$tmp/merged.csv" || fail "$1 differs from the unsharded sweep"
}

node=$(hostname -s)
# the reference: the same sweep in one go
bellows sweep "${FLAGS[@]}" -j 1 --out "$tmp/full" > /dev/null

t0=$(now_us)
start_munge
start_slurm
slurm_up=$(since "$t0")

# the job array: the batch script is the page's, its sweep line with this test's flags
cd "$tmp/slurm"
{
  readme_line '#!/bin/bash'
  readme_line '#SBATCH --array=1-4'
  # shellcheck disable=SC2016  # $SLURM_... are for the batch script, not for this shell
  readme_line 'bellows sweep [flags] -j 1 --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT --out runs/s$SLURM_ARRAY_TASK_ID'
} > shards.sbatch
t0=$(now_us)
run_readme_line 'sbatch --wait shards.sbatch'   # exits with the highest exit code of the tasks
array_time=$(since "$t0")
run_readme_line 'bellows merge --out runs/all runs/s*'
same_as_unsharded runs/all/sweep.csv

# the same shards through GNU parallel
cd "$tmp/gnu-parallel"
t0=$(now_us)
run_readme_line 'parallel bellows sweep [flags] -j 1 --shard {}/4 --out runs/s{} ::: 1 2 3 4'
parallel_time=$(since "$t0")
run_readme_line 'bellows merge --out runs/all runs/s*'
same_as_unsharded runs/all/sweep.csv

echo "slurm: up in $slurm_up s; 4-task array in $array_time s; GNU parallel: 4 shards in" \
     "$parallel_time s"

# a merged sweep plots as a whole one does (merge writes its sweep.json and heatmap grid)
bellows plot "$tmp/slurm/runs/all"
bellows plot "$tmp/gnu-parallel/runs/all"
echo "ok"
