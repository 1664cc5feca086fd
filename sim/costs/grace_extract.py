#!/usr/bin/python3
"""grace_extract.py: writes tests/data/grace_resnet50.csv, the rows of GRACE's measurements that
bellows is validated against, from GRACE's public data (Xu et al., "GRACE: A Compressed
Communication Framework for Distributed Machine Learning", ICDCS 2021; repository
sands-lab/grace-data, commit 41915bb, GRACE_data_release.pickle, a dict of pandas DataFrames).

Kept: key "imagenet-classification", mode "throughput", model resnet50, backend mpi (OpenMPI
over TCP, one V100 per node, bandwidth limited to 1, 10 or 25 Gbps), the seven methods of the
validation (none, powersgd, topk and randomk at ratio 0.01, qsgd, signsgd, efsignsgd), every
variant GRACE ran of them (with and without error-feedback memory, QSGD's quantum 64, 128 and
256). Column throughput_img_s is GRACE's own "throughput": the mean of the last 99 per-step
img/s values of one worker's log times the workers (pull_from_wandb.py), which is what GRACE's
figures plot; total_images_per_sec is the run's logged summary, kept for reference.

Not run by the build or CI (the CSV is committed). To regenerate, with python3-pandas and a
copy of the pickle:

    /usr/bin/python3 sim/costs/grace_extract.py PATH/GRACE_data_release.pickle
"""

import csv
import os
import sys

import pandas as pd

METHODS = ["none", "powersgd", "topk", "randomk", "qsgd", "signsgd", "efsignsgd"]
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data",
                   "grace_resnet50.csv")


def main(path):
    d = pd.read_pickle(path)["imagenet-classification"]
    t = d[(d["mode"] == "throughput") & (d.model == "resnet50") & (d.backend == "mpi")]
    t = t[t.method.isin(METHODS) & t.ratio.isin(["n/a", "0.01"])]
    t = t.sort_values(["bw", "method", "name", "workers"])
    with open(OUT, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["method", "variant", "memory", "workers", "bw", "communicator",
                    "throughput_img_s", "total_images_per_sec", "grace_id"])
        for _, r in t.iterrows():
            w.writerow([r.method, r["name"], r.memory, int(r.workers), r.bw, r.comm_method,
                        "%.4f" % r.throughput, "%.4f" % r.total_images_per_sec, r["id"]])
    print(os.path.normpath(OUT), len(t), "rows")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
