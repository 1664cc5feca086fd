"""example_resnet18.py: records a bellows trace, with per-layer times, of torchvision's ResNet-18
in its CIFAR form (a 3x3 stride-1 first convolution and no max-pool, as in Accordion's and
PowerSGD's CIFAR-10 code; 62 parameter tensors, 11,173,962 parameters with 10 classes) trained
on random CIFAR-shaped inputs on the CPU. Used by tests/test_pytorch_trace.sh.
    python3 example_resnet18.py OUT.jsonl[.gz] [EPOCHS] [STEPS_PER_EPOCH] [BATCH]"""
import sys

import torch
import torchvision

from record_trace import TraceRecorder

torch.manual_seed(0)
out = sys.argv[1]
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
batch = int(sys.argv[4]) if len(sys.argv) > 4 else 8
model = torchvision.models.resnet18(num_classes=10)
model.conv1 = torch.nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
model.maxpool = torch.nn.Identity()
n = steps * batch
x = torch.randn(n, 3, 32, 32)
y = torch.randint(0, 10, (n,))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
# no flops_per_sample: the trace's compute is the time measured here (the timing's sum)
rec = TraceRecorder(out, model, batch_per_worker=batch, model_name="resnet18-cifar",
                    dataset="random 3x32x32", epochs=epochs, steps_per_epoch=steps,
                    lr_schedule="constant", lr_base=0.05, timing_warmup=1)
for epoch in range(epochs):
    model.train()
    for i in range(steps):
        idx = slice(i * batch, (i + 1) * batch)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
        loss.backward()
        rec.step(loss.item(), lr=opt.param_groups[0]["lr"], epoch=epoch,
                 epoch_end=(i == steps - 1))
        opt.step()
    model.eval()
    with torch.no_grad():
        acc = (model(x[:batch]).argmax(1) == y[:batch]).float().mean().item()
    rec.eval(acc)
rec.close()
print("recorded %d steps of %d tensors" % (rec.steps, len(rec.params)))
