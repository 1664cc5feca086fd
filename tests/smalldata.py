#!/usr/bin/env python3
"""smalldata.py DIR N_TRAIN N_TEST: writes DIR, a --data-dir holding the packaged Fashion-MNIST's
first N_TRAIN training and N_TEST test samples, the IDX headers' counts rewritten: the script
tests' twin of tests/smalldata.h (which says why: bellows reads every byte of the packaged set,
0.2 CPU s a run; on its first samples a run is the same run, byte for byte)."""
import gzip
import os
import struct
import sys

PACKAGED = "/usr/share/datasets/fashion-mnist"  # models/dataset.h's DATASET_DEFAULT_DIR


def copy(out, name, n):
    with gzip.open(os.path.join(PACKAGED, name), "rb") as f:
        head = bytearray(f.read(8))
        magic, had = struct.unpack(">II", head)
        each = 1
        if magic == 0x803:  # images: rows and cols follow
            dims = f.read(8)
            head += dims
            rows, cols = struct.unpack(">II", dims)
            each = rows * cols
        assert 0 < n <= had, (name, n, had)
        head[4:8] = struct.pack(">I", n)
        body = f.read(n * each)
    with gzip.open(os.path.join(out, name), "wb", compresslevel=1) as g:
        g.write(bytes(head) + body)


def main():
    out, n_train, n_test = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.mkdir(out)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        copy(out, prefix + "-images-idx3-ubyte.gz", n)
        copy(out, prefix + "-labels-idx1-ubyte.gz", n)


if __name__ == "__main__":
    main()
