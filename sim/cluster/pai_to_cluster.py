#!/usr/bin/env python3
"""pai_to_cluster.py: a bellows cluster file (sim/cluster/README.md) from the first N GPU jobs of
a trace in the format of Alibaba PAI's GPU cluster trace of 2020 (cluster-trace-gpu-v2020,
https://github.com/alibaba/clusterdata/tree/master/cluster-trace-gpu-v2020; Weng et al., "MLaaS
in the Wild: Workload Analysis and Scheduling in Large-Scale Heterogeneous GPU Clusters", NSDI
2022). Three of its tables, CSV without a header line as the trace ships them (a first line that
is the trace's .header is skipped):

  pai_job_table.csv        job_name,inst_id,user,status,start_time,end_time
  pai_task_table.csv       job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,
                           plan_mem,plan_gpu,gpu_type
  pai_group_tag_table.csv  inst_id,user,gpu_type_spec,group,workload

A job's size is its GPUs: the sum over its tasks of inst_num x plan_gpu / 100 (plan_gpu is a
percentage of a GPU), rounded up; jobs of no GPU (CPU tasks, parameter servers alone) are
skipped. Its start is its submission (pai_job_table's start_time) after the first job's, times
--time-scale. Its model is its instances' workload tag (pai_group_tag_table, joined on inst_id),
mapped to a bellows workload profile (MODELS, or --map TAG=WORKLOAD); the small model (--model)
trains each job's dynamics, --steps steps of --batch images per worker, and the workload prices
them. A tag with no workload, an untagged job without --untagged, a negative or non-numeric size
or time, a size that overflows, a job listed twice, a byte that is not UTF-8: refused with the
file and line named, exit status 2, nothing written (nor a temporary left); so are a
--time-scale or --oversubscription that is not finite, and -o a folder.

With --price P, a job of more than P GPUs trains on P workers and its steps are priced as its
GPUs would pay them ("price_workers", "collectives": "analytic", "allreduce": "ring"): it holds
all its GPUs, and its ring's hops between leaves share the uplinks with the other jobs.

  python3 sim/cluster/pai_to_cluster.py DIR [--jobs 64] [--price P] [-o FILE.json]
  bellows cluster FILE.json --out DIR
"""
import argparse
import csv
import json
import math
import os
import sys
import tempfile

# PAI's workload tags (the NSDI'22 paper's Table 2 and the trace's README name bert, ctr,
# graphlearn, inception, nmt, resnet, vgg, xlnet, ...) to bellows' workload profiles where one is
# the same architecture; the others are refused unless mapped with --map.
MODELS = {
    "bert": "bert-base",
    "resnet": "resnet50",
    "resnet50": "resnet50",
    "resnet18": "resnet18-cifar",
    "vgg": "vgg16",
    "vgg16": "vgg16",
    "gpt": "gpt2-small",
    "gpt2": "gpt2-small",
}
WORKLOADS = {"bert-base", "gpt2-small", "resnet18-cifar", "resnet50-tf", "resnet50",
             "resnet9-cifar", "vgg16"}


class Refused(Exception):
    """A bad line: its file and line, and why."""


# The most GPUs a job's sum of inst_num x plan_gpu / 100 may reach: 2^53, the last whole number
# a float holds exactly; beyond it (or an overflow to inf) a row is broken, refused naming it.
# (A job larger than --cluster-gpus but below this is refused later, if it is picked.)
MAX_JOB_GPUS = 2.0 ** 53


def utf8_lines(path):
    """The file's lines as text; a byte that is not UTF-8 is refused naming its line."""
    with open(path, "rb") as f:
        for i, raw in enumerate(f, start=1):
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise Refused(f"{path}:{i}: byte 0x{raw[e.start]:02x} at column {e.start + 1} is "
                              f"not UTF-8; expected the trace's CSV text") from None


def rows(path, header):
    """(line number, row) of a trace table, its .header line skipped when the file starts with it."""
    reader = csv.reader(utf8_lines(path))
    try:
        for row in reader:
            i = reader.line_num
            if i == 1 and row and row[0] == header:
                continue
            if not row:
                continue
            yield i, row
    except csv.Error as e:
        raise Refused(f"{path}:{reader.line_num}: {e}") from None


def number(path, line, row, col, name, allow_empty=False):
    """Column col of row as a float >= 0, or a refusal naming the line."""
    text = row[col].strip() if col < len(row) else ""
    if allow_empty and text == "":
        return None
    try:
        v = float(text)
    except ValueError:
        raise Refused(f"{path}:{line}: {name} '{text}' is not a number")
    if not math.isfinite(v) or v < 0:
        raise Refused(f"{path}:{line}: {name} {text} is negative or not finite; expected >= 0")
    return v


def read_trace(folder):
    """The jobs of the trace's three tables, in submission order."""
    jobs, order = {}, []
    p = os.path.join(folder, "pai_job_table.csv")
    for line, r in rows(p, "job_name"):
        if len(r) < 6:
            raise Refused(f"{p}:{line}: {len(r)} fields, expected 6 (pai_job_table)")
        start = number(p, line, r, 4, "start_time")
        if r[0] in jobs:
            raise Refused(f"{p}:{line}: job {r[0]} again (line {jobs[r[0]]['line']}); a job has "
                          f"one row")
        jobs[r[0]] = {"job": r[0], "inst": r[1], "start": start, "gpus": 0.0, "line": line,
                      "tag": None}
        order.append(r[0])
    p = os.path.join(folder, "pai_task_table.csv")
    for line, r in rows(p, "job_name"):
        if len(r) < 10:
            raise Refused(f"{p}:{line}: {len(r)} fields, expected 10 (pai_task_table)")
        n = number(p, line, r, 2, "inst_num", allow_empty=True)
        g = number(p, line, r, 8, "plan_gpu", allow_empty=True)
        if r[0] in jobs and n is not None and g is not None:
            jobs[r[0]]["gpus"] += n * g / 100.0
            if not jobs[r[0]]["gpus"] <= MAX_JOB_GPUS:
                raise Refused(f"{p}:{line}: inst_num {r[2].strip()} x plan_gpu {r[8].strip()} / "
                              f"100 makes job {r[0]} more than 2^53 GPUs (or overflows)")
    p = os.path.join(folder, "pai_group_tag_table.csv")
    tags = {}
    if os.path.exists(p):
        for line, r in rows(p, "inst_id"):
            if len(r) < 5:
                raise Refused(f"{p}:{line}: {len(r)} fields, expected 5 (pai_group_tag_table)")
            if r[4].strip():
                tags.setdefault(r[0], (r[4].strip(), line))
    for j in jobs.values():
        j["tag"] = tags.get(j["inst"])
    order.sort(key=lambda name: (jobs[name]["start"], jobs[name]["line"]))
    return [jobs[name] for name in order]


# the trace's tables this script reads (read_trace)
TABLES = ("pai_job_table.csv", "pai_task_table.csv", "pai_group_tag_table.csv")


def job_entry(a, j, k, t0, model):
    """A job of the cluster file; with --price P, a job of more than P GPUs trains on P workers
    and is priced at its size (price_workers: its closed forms, its ring's flows on the shared
    links, sim/cluster/README.md)."""
    size = max(1, math.ceil(j["gpus"] - 1e-9))
    workers = min(size, a.price) if a.price else size
    e = {
        "name": f"j{k:03d}-{j['job'][:8]}",
        "workers": workers,
        "workload": model,
        "start_s": round((j["start"] - t0) * a.time_scale, 9),
        "model": a.model,
        "batch": a.batch,
        "epochs": 1,
        "train_samples": workers * a.batch * a.steps,
        "test_samples": a.test_samples,
        "policy": a.policy,
        "compressor": a.compressor,
        "seed": k + 1,
    }
    if workers < size:
        e.update({"price_workers": size, "collectives": "analytic", "allreduce": "ring"})
    return e


def convert(a):
    mapping = dict(MODELS)
    for m in a.map:
        tag, _, wl = m.partition("=")
        if not tag or wl not in WORKLOADS:
            raise Refused(f"--map {m}: expected TAG=WORKLOAD, WORKLOAD one of "
                          f"{', '.join(sorted(WORKLOADS))}")
        mapping[tag] = wl
    picked, total = [], 0
    tag_file = os.path.join(a.trace, "pai_group_tag_table.csv")
    for j in read_trace(a.trace):
        if j["gpus"] <= 0:
            continue  # a CPU job: nothing to simulate
        if j["tag"] is None:
            if not a.untagged:
                raise Refused(f"{a.trace}/pai_job_table.csv:{j['line']}: job {j['job']} has no "
                              f"workload tag in pai_group_tag_table; give --untagged WORKLOAD")
            model = a.untagged
        else:
            tag, line = j["tag"]
            if tag not in mapping:
                raise Refused(f"{tag_file}:{line}: unknown model '{tag}' (job {j['job']}); "
                              f"known: {', '.join(sorted(mapping))}; or --map {tag}=WORKLOAD")
            model = mapping[tag]
        picked.append((j, model))
        total += max(1, math.ceil(j["gpus"] - 1e-9))
        if len(picked) == a.jobs:
            break
    if not picked:
        raise Refused(f"{a.trace}: no job with GPUs")
    if total > a.cluster_gpus:
        raise Refused(f"{a.trace}: the first {len(picked)} GPU jobs take {total} GPUs, more than "
                      f"--cluster-gpus {a.cluster_gpus}")
    t0 = picked[0][0]["start"]
    return {
        "version": 1,
        "topology": "fat-tree",
        "leaf_size": a.leaf_size,
        "oversubscription": a.oversubscription,
        "bandwidth": a.bandwidth,
        "workers": a.cluster_gpus,
        "placement": "packed",
        "jobs": [job_entry(a, j, k, t0, m) for k, (j, m) in enumerate(picked)],
    }


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", help="folder of pai_job_table.csv, pai_task_table.csv and "
                                 "pai_group_tag_table.csv")
    p.add_argument("--jobs", type=int, default=64, help="the first N GPU jobs (default 64)")
    p.add_argument("--cluster-gpus", type=int, default=4096, help="the fat-tree's GPUs")
    p.add_argument("--leaf-size", type=int, default=16)
    p.add_argument("--oversubscription", type=float, default=2)
    p.add_argument("--bandwidth", default="100Gbps")
    p.add_argument("--time-scale", type=float, default=1.0,
                   help="simulated seconds per trace second of the submissions (default 1)")
    p.add_argument("--model", default="mlp", help="the small model that trains each job")
    p.add_argument("--steps", type=int, default=4, help="steps of each job (one epoch)")
    p.add_argument("--batch", type=int, default=16, help="images per worker and step")
    p.add_argument("--test-samples", type=int, default=200)
    p.add_argument("--policy", default="sync")
    p.add_argument("--compressor", default="none")
    p.add_argument("--untagged", help="the workload of jobs without a workload tag")
    p.add_argument("--map", action="append", default=[], metavar="TAG=WORKLOAD")
    p.add_argument("--price", type=int, default=0, metavar="P",
                   help="a job of more than P GPUs trains on P workers, its steps priced at its "
                        "GPUs (price_workers; P >= 2; default: every job on all its GPUs)")
    p.add_argument("-o", "--output", help="the cluster file (default: stdout)")
    a = p.parse_args(argv)
    if a.jobs < 1 or a.steps < 1 or a.batch < 1 or a.cluster_gpus < 1 or \
            not 0 <= a.time_scale < math.inf:
        print("pai_to_cluster.py: --jobs, --steps, --batch, --cluster-gpus must be >= 1 and "
              "--time-scale a finite number >= 0", file=sys.stderr)
        return 2
    if not 1 <= a.oversubscription < math.inf:
        print(f"pai_to_cluster.py: --oversubscription {a.oversubscription}: expected a finite "
              f"number >= 1 (the leaves' downlinks over their uplinks)", file=sys.stderr)
        return 2
    if a.output and os.path.isdir(a.output):
        print(f"pai_to_cluster.py: -o {a.output}: a folder; expected the cluster file to write",
              file=sys.stderr)
        return 2
    if a.price and a.price < 2:
        print(f"pai_to_cluster.py: --price {a.price}: expected at least 2 workers (a priced "
              f"ring needs two)", file=sys.stderr)
        return 2
    if a.untagged and a.untagged not in WORKLOADS:
        print(f"pai_to_cluster.py: --untagged {a.untagged}: not a workload "
              f"({', '.join(sorted(WORKLOADS))})", file=sys.stderr)
        return 2
    if a.output:
        # inputs are never outputs (as bellows' io_check.h): -o is none of the tables read
        out = os.path.realpath(a.output)
        for table in TABLES:
            if out == os.path.realpath(os.path.join(a.trace, table)):
                print(f"pai_to_cluster.py: -o {a.output}: is the input table "
                      f"{os.path.join(a.trace, table)}; choose another name", file=sys.stderr)
                return 2
    try:
        spec = convert(a)
    except (Refused, OSError) as e:
        print(f"pai_to_cluster.py: {e}", file=sys.stderr)
        return 2
    text = json.dumps(spec, indent=1, allow_nan=False) + "\n"
    if not a.output:
        sys.stdout.write(text)
        return 0
    # the whole file or nothing: a temporary beside it, renamed over it, removed on any failure
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".pai_to_cluster.", suffix=".tmp",
                                   dir=os.path.dirname(os.path.abspath(a.output)))
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, a.output)
        tmp = None
    except OSError as e:
        print(f"pai_to_cluster.py: -o {a.output}: {e.strerror or e}", file=sys.stderr)
        return 2
    finally:
        if tmp:
            os.unlink(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
