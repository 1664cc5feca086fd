"""example_mlp.py: a tiny PyTorch training run on synthetic data that records a bellows trace,
used by the tests (tests/test_pytorch_trace.sh) and as an example of record_trace.py.
    python3 example_mlp.py OUT.jsonl[.gz] [EPOCHS]"""
import sys

import torch

from record_trace import TraceRecorder

torch.manual_seed(0)
out = sys.argv[1]
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
n, dim, classes, batch = 1024, 64, 4, 32
centres = torch.randn(classes, dim) * 2
y = torch.randint(0, classes, (n,))
x = centres[y] + torch.randn(n, dim)
model = torch.nn.Sequential(torch.nn.Linear(dim, 32), torch.nn.ReLU(),
                            torch.nn.Linear(32, classes))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
steps = n // batch
flops = 2 * 3 * (dim * 32 + 32 * classes)  # forward + backward multiply-adds, 2 flops each
rec = TraceRecorder(out, model, batch_per_worker=batch, model_name="torch-mlp",
                    dataset="synthetic", flops_per_sample=flops, epochs=epochs,
                    steps_per_epoch=steps, lr_schedule="constant", lr_base=0.05)


def evaluate():
    with torch.no_grad():
        logits = model(x)
        return (logits.argmax(1) == y).float().mean().item(), \
            torch.nn.functional.cross_entropy(logits, y).item()


acc, loss = evaluate()
rec.eval(acc, loss)
for epoch in range(epochs):
    perm = torch.randperm(n)
    for i in range(steps):
        idx = perm[i * batch:(i + 1) * batch]
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
        loss.backward()
        rec.step(loss.item(), lr=opt.param_groups[0]["lr"], epoch=epoch,
                 epoch_end=(i == steps - 1))
        opt.step()
    acc, loss = evaluate()
    rec.eval(acc, loss)
rec.close()
print("recorded %d steps, final accuracy %.4f" % (rec.steps, acc))
