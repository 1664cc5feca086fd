#!/usr/bin/env bash
# test_ps_inflight.sh: parameter servers keep every ready tensor in flight (issue 36, item 5).
# VGG-16 on 8 V100s, one a node, a 10 Gbps / 5 us star, the default costs, batch 32: the steady
# step (the mean of steps 0-1 and 1-2 of a 4-step run; the last one drains) of
#   - the ring (DDP, analytic),
#   - fifo on 8 colocated parameter servers (transfer level): BytePS's pushes of every ready
#     tensor's 4 MB partitions at once; each host moves the bytes the ring moves, so the step
#     must be within 20% of the ring's (it was 6.64 s against 0.93 s when fifo sent one DDP
#     bucket, whole, to one server at a time),
#   - fifo on those servers at the analytic level: each DDP bucket's 4 MB partitions in flight at
#     once, priced by coll_ps.c's closed form; within 20% of the ring's step and within 10% of
#     the transfer level's (it was 8.38 s, a sum of one call at a time, each 2 (a + 7 n b)),
#   - p3 on those servers (slices in flight while the network takes them), which must beat
#     fifo there at both levels, as P3's paper claims (it was 6.77 s with one slice in flight).
# And a single call still costs the closed form 2 (a + r n b), partitions in flight theirs:
# tests/test_coll_ps.c.
#   tests/test_ps_inflight.sh BELLOWS_BINARY
set -euo pipefail
bellows=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--workload vgg16 --workers 8 --bandwidth 10Gbps --latency 5us --gpu V100 --batch 32
  --epochs 1 --train-samples 1024 --test-samples 64 --quiet --force)
"$bellows" run "${common[@]}" --collectives analytic --out "$tmp/ring" > /dev/null
"$bellows" run "${common[@]}" --allreduce ps --servers 8 --collectives transfer \
  --out "$tmp/fifo" > /dev/null
"$bellows" run "${common[@]}" --allreduce ps --servers 8 --collectives analytic \
  --out "$tmp/fifo_analytic" > /dev/null
"$bellows" run "${common[@]}" --allreduce ps --servers 8 --collectives transfer --schedule p3 \
  --out "$tmp/p3" > /dev/null
python3 - "$tmp" <<'PY'
import csv, sys
def step(run):
    e = [float(r["end_s"]) for r in csv.DictReader(open(f"{sys.argv[1]}/{run}/steps.csv"))]
    assert len(e) == 4, (run, e)
    return (e[2] - e[0]) / 2
ring, fifo, p3 = step("ring"), step("fifo"), step("p3")
fifo_a = step("fifo_analytic")
print(f"steady step: ring {ring:.4f} s, fifo on 8 colocated servers {fifo:.4f} s "
      f"(analytic {fifo_a:.4f} s), p3 {p3:.4f} s")
bad = []
for level, f in (("transfer", fifo), ("analytic", fifo_a)):
    if not abs(f - ring) <= 0.2 * ring:
        bad.append(f"fifo on parameter servers ({level}) {f:.4f} s is not within 20% of the "
                   f"ring's {ring:.4f} s")
    if not p3 < f:
        bad.append(f"p3 on parameter servers {p3:.4f} s does not beat fifo's ({level}) {f:.4f} s")
if not abs(fifo_a - fifo) <= 0.1 * fifo:
    bad.append(f"fifo on parameter servers: analytic {fifo_a:.4f} s is not within 10% of the "
               f"transfer level's {fifo:.4f} s")
if bad:
    sys.exit("FAIL: " + "; ".join(bad))
PY
