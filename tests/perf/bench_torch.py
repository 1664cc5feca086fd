#!/usr/bin/python3
# bench_torch.py - PyTorch CPU reference timing for bellows' models (mlp, cnn).
# Times one training step (forward + cross-entropy backward + SGD momentum update)
# and prints one machine-readable line so a driver can compare C vs PyTorch.
import argparse
import statistics
import sys
import time


def build_model(nn, name):
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(),
                             nn.Linear(128, 10))
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10))


def main():
    ap = argparse.ArgumentParser(description="PyTorch training-step benchmark")
    ap.add_argument("--model", required=True, choices=["mlp", "cnn"])
    ap.add_argument("--batch", required=True, type=int)
    ap.add_argument("--threads", required=True, type=int)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--warmup", type=int, default=20)
    args = ap.parse_args()
    if args.batch < 1 or args.threads < 1 or args.seconds < 0 or args.warmup < 0:
        ap.error("--batch and --threads must be >= 1; --seconds, --warmup >= 0")

    try:
        import torch
        from torch import nn
    except ImportError:
        print("bench_torch.py: python3-torch is not installed "
              "(apt-get install python3-torch)", file=sys.stderr)
        return 1

    torch.set_num_threads(args.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    torch.manual_seed(0)

    model = build_model(nn, args.model)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    data = [(torch.randn(args.batch, 1, 28, 28),
             torch.randint(0, 10, (args.batch,))) for _ in range(8)]

    def step(i):
        x, y = data[i % len(data)]
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    for i in range(args.warmup):
        step(i)

    block, per_step, steps = 10, [], 0
    start = time.perf_counter()
    while not per_step or time.perf_counter() - start < args.seconds:
        t0 = time.perf_counter()
        for _ in range(block):
            step(steps)
            steps += 1
        per_step.append((time.perf_counter() - t0) / block)

    step_us = statistics.median(per_step) * 1e6
    print(f"torch model={args.model} batch={args.batch} threads={args.threads} "
          f"step_us={step_us:.1f} steps={steps}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
