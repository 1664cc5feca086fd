#!/usr/bin/python3
"""grace_extract_resnet9.py: writes tests/data/grace_resnet9_cifar.csv, GRACE's PyTorch ResNet-9
CIFAR-10 throughputs (Xu et al., "GRACE: A Compressed Communication Framework for Distributed
Machine Learning", ICDCS 2021), from GRACE's public data: repository sands-lab/grace-data,
commit 41915bb, GRACE_data_release.pickle, key "cifar10-classification-pytorch" (a pandas
DataFrame of 118 runs).

The setting, from the DataFrame's columns: model Resnet9, one V100 per node (gpu_type v100, env
mcnodes), 1, 2, 4 or 8 workers, bandwidth limited to 25 Gbps (bw 25g, 35 epochs) or not limited
(bw n/a, 24 epochs), over TCP or RDMA (column RDMA), each run once (run_no 0). The training code
is sands-lab/grace's examples/dist/CIFAR10-dawndist/dawn.py (David Page's ResNet-9, batch 512 on
each worker, SGD with Nesterov momentum, fp32). Kept: every run, every method GRACE ran; column
throughput_img_s is GRACE's "throughput" (img/s of the whole job), top1 its accuracy.

Not run by the build or CI (the CSV is committed). To regenerate, with python3-pandas and a
copy of the pickle:

    /usr/bin/python3 sim/costs/grace_extract_resnet9.py PATH/GRACE_data_release.pickle
"""

import csv
import os
import sys

import pandas as pd

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data",
                   "grace_resnet9_cifar.csv")


def main(path):
    t = pd.read_pickle(path)["cifar10-classification-pytorch"]
    t = t.assign(w=t.workers.astype(int)).sort_values(["RDMA", "bw", "method", "name", "w"])
    with open(OUT, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["method", "variant", "memory", "workers", "bw", "rdma", "communicator",
                    "epochs", "throughput_img_s", "top1", "runtime_s", "grace_id"])
        for _, r in t.iterrows():
            w.writerow([r.method, r["name"], r.memory, r.w, r.bw, r.RDMA, r.comm_method,
                        r.epoch, "%.4f" % r.throughput, "%.4f" % r.top_1_accuracy,
                        "%.3f" % r.runtime, r["id"]])
    print(os.path.normpath(OUT), len(t), "rows")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
