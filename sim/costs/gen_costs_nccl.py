"""gen_costs_nccl.py: the network part of the built-in PyTorch profiles from published
nccl-tests logs (tests/data/nccl-tests/), for sim/costs/gen_costs.py: each log read as `bellows
costs import-nccl-tests` reads it, and the check that the two readings agree."""

import json
import os

# The network part from published nccl-tests logs (tests/data/nccl-tests/, whose README gives
# each one's URL and setting): a transport with a usable log gets the "busbw" tables
# `bellows costs import-nccl-tests` writes (each log's out-of-place busbw at each size, rows
# printed as 0.00 left out, its 32 largest sizes), one table per GPUs per NIC; a transport with
# none keeps its cited share. Logs of one transport measured on links of different rates are
# put on the first one's (`link_Gbps`) at their own share of their link: busbw x link / theirs.
# Each entry: the file, its transport, the rate of the link (one NIC, or a node's NICs taken as
# one) its busbw compares with, its GPUs per NIC, and why it is usable or not as a default.
NCCL_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "tests", "data", "nccl-tests")
NCCL_LOGS = [
    {"file": "p3dn-2x8-efa-allreduce.txt", "transport": "rdma", "link_gbps": 100,
     "gpus_per_nic": 8,
     "source": "aws/aws-ofi-nccl#33: 2 x p3dn.24xlarge, 8 V100s behind one 100 Gb/s EFA NIC a "
               "node, 1-4 MiB"},
    {"file": "h100-2x1-roce-4nic-tree-allreduce.txt", "transport": "rdma", "link_gbps": 1600,
     "gpus_per_nic": 1,
     "source": "NVIDIA/nccl-tests#232: 2 x 1 H100, 4 RoCE NICs a node taken as one link of "
               "1,600 Gb/s (the reporter's 200 GB/s), NCCL_ALGO=Tree, 2-32 MiB"},
]
# Transports whose logs are not the defaults' network, with why (measured: the profile built
# from them moves bellows validate's rows of that transport out of their tolerance). Their
# profiles keep the cited share; `gen_costs.py --all-logs DIR` writes the profiles built from
# every log, for rerunning that check (sim/costs/README.md).
LOGS_NOT_USED = {
    "rdma": "built from them, 9 of bellows validate's 21 RDMA rows (GRACE's PyTorch ResNet-9, 2 "
            "to 8 V100s one per node at 25 Gbps) fall outside their 20%, worst -45.5% (none at 8 "
            "workers: 24,253 img/s against the measured 44,061, below TCP's 32,618, the reverse "
            "of GRACE's finding); the one-GPU-per-NIC log is a Tree run of one H100 over 4 NICs "
            "(41 of their 200 GB/s: the GPU's limit, not the transport's share) and the "
            "8-per-NIC log stops at 4 MiB, below DDP's buckets. Checked with gen_costs.py "
            "--all-logs (sim/costs/README.md)",
}


def read_nccl_log(path):
    """[(bytes, busbw GB/s)] of an all_reduce_perf log's out-of-place busbw, as
    `bellows costs import-nccl-tests` reads it (sim/costs/nccl_import.c): the columns from the
    table's header, rows whose busbw prints as 0.00 left out, the 32 largest sizes kept."""
    cols, rows = 0, []
    with open(path) as f:
        for line in f:
            tok = line.split()
            if not tok:
                continue
            if tok[0].startswith("#"):
                i = 1 if tok[0] == "#" else 0
                if i + 1 < len(tok) and tok[i] == "size" and tok[i + 1] == "count":
                    cols = 3 + ("redop" in tok) + ("root" in tok) + 8
            elif cols and tok[0][0].isdigit():
                if len(tok) != cols:
                    raise SystemExit("%s: a row of %d columns, its header says %d" % (
                        path, len(tok), cols))
                busbw = float(tok[cols - 6])
                if busbw > 0:
                    rows.append((int(tok[0]), busbw))
    if not rows:
        raise SystemExit("%s: no table row with a busbw above 0" % path)
    return rows[-32:]


def log_network(transport):
    """The "busbw" network of transport from its logs in NCCL_LOGS, or None when it has none."""
    logs = sorted((g for g in NCCL_LOGS if g["transport"] == transport),
                  key=lambda g: g["gpus_per_nic"])
    if not logs:
        return None
    link = logs[0]["link_gbps"]
    tables = []
    for g in logs:
        scale = link / g["link_gbps"]
        pts = [[b, float("%.4g" % (v * scale))] for b, v in read_nccl_log(
            os.path.join(NCCL_DATA, g["file"]))]
        src = "tests/data/nccl-tests/%s: out-of-place busbw, %s" % (g["file"], g["source"])
        if scale != 1:
            src += "; at its share of its %g Gb/s on %g Gb/s" % (g["link_gbps"], link)
        tables.append({"gpus_per_nic": g["gpus_per_nic"], "points": pts, "source": src})
    return {"busbw": {"link_Gbps": link, "allreduce": tables,
                      "source": "nccl-tests logs, as bellows costs import-nccl-tests reads them "
                                "(sim/costs/gen_costs_nccl.py NCCL_LOGS)"}}


def networks_from_logs(nets, all_logs=False):
    """nets with each transport that has logs (and, unless all_logs, is not in LOGS_NOT_USED)
    built from them; the others keep their cited share, their source saying why."""
    for t in list(nets):
        built = log_network(t)
        if built is None:
            nets[t]["source"] += "; no published nccl-tests log of this transport was found " \
                                 "in full (tests/data/nccl-tests/README.md): the cited share"
        elif t in LOGS_NOT_USED and not all_logs:
            nets[t]["source"] += "; its nccl-tests logs (%s) are not used: %s" % (
                ", ".join(g["file"] for g in NCCL_LOGS if g["transport"] == t), LOGS_NOT_USED[t])
        else:
            nets[t] = built
    return nets


def import_differs(bellows):
    """The logs of NCCL_LOGS whose points differ from what `bellows costs import-nccl-tests`
    writes of them (this script reads them as that command does)."""
    import subprocess
    import tempfile
    bad = []
    for g in NCCL_LOGS:
        path = os.path.join(NCCL_DATA, g["file"])
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "net.json")
            subprocess.run([bellows, "costs", "import-nccl-tests", path, "--link-gbps",
                            str(g["link_gbps"]), "--transport", g["transport"],
                            "--gpus-per-node", str(g["gpus_per_nic"]), "--nics-per-node", "1",
                            "--out", out], check=True, stdout=subprocess.DEVNULL)
            with open(out) as f:
                net = json.load(f)["networks"][g["transport"]]["busbw"]
        want = [[b, v] for b, v in read_nccl_log(path)]
        if net["allreduce"][0]["points"] != want:
            bad.append("%s: gen_costs.py reads %s, import-nccl-tests %s" % (
                path, want, net["allreduce"][0]["points"]))
    return bad
