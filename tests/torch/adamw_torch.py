#!/usr/bin/env python3
"""adamw_torch.py: bellows' AdamW (--optimizer adamw) against torch.optim.AdamW on the same
model (an MLP 784-32-10), data and initial weights, over 100 steps: the final parameters agree
to 1e-5. tests/torch/adamw_dump.c trains bellows' side and writes the file this reads.

    adamw_torch.py ADAMW_DUMP      exit 0 when they agree, 1 when not (the largest difference)
Needs torch (Debian's python3-torch) and NumPy; exits 77 (skipped, as the other torch tests)
without them. Run by ctest (adamw_torch)."""

import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"{e.name or 'torch'} is not installed for {sys.executable}: skipped")
    sys.exit(77)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "adamw.bin")
        subprocess.run([sys.argv[1], path], check=True)
        raw = open(path, "rb").read()
    n, steps, batch, dim = np.frombuffer(raw, np.int32, 4, 0)
    off = 16
    init = np.frombuffer(raw, np.float32, n, off)
    off += 4 * n
    data = []
    for _ in range(steps):
        x = np.frombuffer(raw, np.float32, batch * dim, off).reshape(batch, dim)
        off += 4 * batch * dim
        y = np.frombuffer(raw, np.uint8, batch, off).astype(np.int64)
        off += batch
        data.append((torch.from_numpy(x.copy()), torch.from_numpy(y)))
    final = np.frombuffer(raw, np.float32, n, off)
    off += 4 * n
    lr, wd = np.frombuffer(raw, np.float64, 2, off)

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(dim, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    with torch.no_grad():  # bellows' layout: fc1.weight [32, dim], fc1.bias, out.weight, out.bias
        at = 0
        for p in model.parameters():
            p.copy_(torch.from_numpy(init[at : at + p.numel()].copy()).view_as(p))
            at += p.numel()
        assert at == n, (at, n)
    opt = torch.optim.AdamW(model.parameters(), lr=float(lr), weight_decay=float(wd),
                            betas=(0.9, 0.999), eps=1e-8, foreach=False)
    for x, y in data:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    ours = torch.cat([p.detach().flatten() for p in model.parameters()]).numpy()
    diff = float(np.max(np.abs(ours - final)))
    moved = float(np.max(np.abs(final - init)))
    print(f"adamw_torch: {steps} steps, {n} parameters, largest difference {diff:.3g} "
          f"(largest move {moved:.3g}), torch {torch.__version__}")
    if not diff <= 1e-5 or not moved > 1e-2:
        print("adamw_torch: bellows' AdamW differs from torch.optim.AdamW", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
