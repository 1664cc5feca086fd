"""train_policy.py: train a model in PyTorch under any bellows policy and compressor, on k
workers emulated on one device (--device cpu, the default, or cuda), and record the policy's own
trace (traces/README.md, version 2): every step's decision (levels or averaging) and the bytes
it sends, the observations the policy saw, and the evaluations of this run. `bellows compare --traces A,B,...` then prices each trace
as its own policy on any simulated cluster (docs/guide/own-traces.md).

    python3 train_policy.py --policy accordion --compressor powersgd --workers 8 \\
        --model mlp --epochs 2 --seed 1 --out accordion-s1.jsonl.gz

The policy runs with bellows' own code (libbellows_policy.so through bellows_host.py), the
compressors are bellows_compress.py's (bellows' options and semantics, with error feedback).
Each step every worker computes its gradient on its own shard (a disjoint part of every epoch's
shuffled order), the observation is filled from them (per-layer norms, mean over workers and
rank 0's; the epoch norms at an epoch's end; lr, loss, the last evaluation; the parameter
variance after an averaging), the policy decides, and:
  gradient mode: each worker's gradient is compressed at the decided levels and combined as the
    collective would; every worker applies the same decoded mean (one model, one optimizer);
  periodic mode: every worker steps on its own copy; the copies are averaged when the policy
    says (the momentum buffers are not, as bellows without --average-momentum).
Exit status 2 with a message naming the flag for a bad flag, a spec the library cannot load, or
a level the compressor refuses; nothing is written then."""
import argparse
import copy
import gzip
import json
import math
import os
import struct
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bellows_compress as bc  # noqa: E402
import bellows_host as bh  # noqa: E402

FORMAT, VERSION = "bellows-trace", 2


def fail(msg):
    sys.stderr.write("train_policy: %s\n" % msg)
    sys.exit(2)


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return torch.frombuffer(bytearray(data[4 + 4 * ndim:]), dtype=torch.uint8).view(*dims)


def load_fashion(folder, train_n, test_n):
    """Fashion-MNIST from its four IDX .gz files (Debian's dataset-fashion-mnist), scaled to
    [0, 1] and standardised with the training pixels' mean and deviation, as bellows does."""
    try:
        xs = [read_idx(os.path.join(folder, f)) for f in
              ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
               "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")]
    except OSError as e:
        fail("--data-dir %s: %s" % (folder, e))
    xtr, ytr, xte, yte = xs
    xtr, ytr = xtr[:train_n or None], ytr[:train_n or None]
    xte, yte = xte[:test_n or None], yte[:test_n or None]
    xtr, xte = xtr.float() / 255, xte.float() / 255
    mean, sd = xtr.mean(), xtr.std(unbiased=False)
    return (xtr - mean) / sd, ytr.long(), (xte - mean) / sd, yte.long()


class Mlp(torch.nn.Module):
    """bellows' mlp: 784 -> 128 (ReLU) -> 10, its tensors named as bellows names them."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(784, 128)
        self.out = torch.nn.Linear(128, 10)

    def forward(self, x):
        return self.out(torch.relu(self.fc1(x.reshape(x.shape[0], -1))))


def make_model(name):
    if name == "mlp":
        return Mlp(), 1
    import torchvision
    m = torchvision.models.resnet18(num_classes=10)
    m.conv1 = torch.nn.Conv2d(1, 64, kernel_size=3, stride=1, padding=1, bias=False)
    m.maxpool = torch.nn.Identity()
    return m, 0


def flops_per_sample(model, x):
    """Forward + backward flops of one sample: 3 x the multiply-adds (2 flops each) of the
    linear and convolution layers in one forward pass of x (one sample), counted with hooks."""
    total = [0]

    def count(mod, inp, out):
        if isinstance(mod, torch.nn.Linear):
            total[0] += 2 * mod.in_features * mod.out_features
        elif isinstance(mod, torch.nn.Conv2d):
            k = mod.in_channels // mod.groups * mod.kernel_size[0] * mod.kernel_size[1]
            total[0] += 2 * k * out.numel()
    hooks = [m.register_forward_hook(count) for m in model.modules()
             if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d))]
    was = model.training
    model.eval()
    with torch.no_grad():
        model(x)
    model.train(was)
    for h in hooks:
        h.remove()
    return 3.0 * total[0]


def shape2(p):
    return (p.numel(), 1) if p.dim() <= 1 else (p.shape[0], p.numel() // p.shape[0])


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--policy", default="sync")
    ap.add_argument("--compressor", default="powersgd")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--model", choices=("mlp", "resnet18"), default="mlp")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64, help="per worker")
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--train-samples", type=int, default=0)
    ap.add_argument("--test-samples", type=int, default=0)
    ap.add_argument("--eval-every", type=int, default=0, help="steps (0: every epoch's end)")
    ap.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--lib", default=None, help="libbellows_policy.so")
    ap.add_argument("--device", default="cpu",
                    help="cpu or cuda: where the model trains and the compressors run (the "
                         "random draws are the CPU's on either)")
    ap.add_argument("--out", required=True, help="the trace (gzip if it ends in .gz)")
    a = ap.parse_args(argv)
    for k in ("workers", "epochs", "batch"):
        if getattr(a, k) < 1:
            fail("--%s %d: expected a whole number >= 1" % (k, getattr(a, k)))
    if not a.lr > 0:
        fail("--lr %g: expected a rate above 0" % a.lr)
    if a.train_samples < 0 or a.test_samples < 0 or a.eval_every < 0:
        fail("--train-samples, --test-samples and --eval-every must be >= 0")
    if a.device not in ("cpu", "cuda"):
        fail("--device %s: expected cpu or cuda" % a.device)
    if a.device == "cuda" and not torch.cuda.is_available():
        fail("--device cuda: this torch (%s) sees no CUDA device (built %s CUDA); use --device "
             "cpu" % (torch.__version__, "with" if torch.version.cuda else "without"))
    return a


class Run:
    """The emulated workers, their data, the policy and the compressor."""

    def __init__(self, a):
        torch.manual_seed(a.seed)
        self.a = a
        dev = self.dev = torch.device(a.device)
        self.xtr, self.ytr, self.xte, self.yte = [t.to(dev) for t in load_fashion(
            a.data_dir, a.train_samples, a.test_samples)]
        self.model, self.flat = make_model(a.model)  # initialised on the CPU on either device
        self.model.to(dev)
        self.params = [(n, p) for n, p in self.model.named_parameters()]
        one = self.xtr[:1] if self.flat else self.xtr[:1].unsqueeze(1)
        self.flops = flops_per_sample(self.model, one)
        self.shapes = [shape2(p) for _, p in self.params]
        W = a.workers
        self.shard = len(self.ytr) // W
        self.spe = self.shard // a.batch
        if self.spe < 1:
            fail("--train-samples: %d samples make shards of %d for %d workers, fewer than "
                 "--batch %d" % (len(self.ytr), self.shard, W, a.batch))
        try:
            self.comp = bc.Compressor(a.compressor, self.shapes, W, a.seed, device=dev)
        except bc.SpecError as e:
            fail(str(e))
        level = self.comp.level_default
        layers = [(n, r, c) for (n, _), (r, c) in zip(self.params, self.shapes)]
        try:
            self.pol = bh.HostPolicy(a.policy, layers, W, a.epochs, W * a.batch, self.spe,
                                     a.lr, self.comp.name, level, self.comp.spec, lib=a.lib)
        except bh.PolicyError as e:
            fail(str(e))
        self.periodic = self.pol.mode == bh.PERIODIC
        self.copies = [self.model] + ([copy.deepcopy(self.model) for _ in range(W - 1)]
                                      if self.periodic else [])
        self.opts = [torch.optim.SGD(m.parameters(), lr=a.lr, momentum=a.momentum)
                     for m in self.copies]
        self.sums = [[torch.zeros(s, device=dev) for s in self.shapes] for _ in range(W)]
        self.epoch_steps = 0
        self.evals = []
        self.records = []
        self.averaged_prev, self.variance_prev = False, None

    def worker_grads(self, epoch, i):
        """Every worker's loss and gradient (as [rows, cols] matrices) on its own batch."""
        a, W = self.a, self.a.workers
        if i == 0:  # the epoch's order, from (seed, epoch) as bellows' dataset_epoch_order
            g = torch.Generator().manual_seed(a.seed * 1000003 + epoch + 1)
            self.perm = torch.randperm(len(self.ytr), generator=g).to(self.dev)
        perm = self.perm
        losses, grads = [], []
        for w in range(W):
            m = self.copies[w] if self.periodic else self.model
            idx = perm[w::W][i * a.batch:(i + 1) * a.batch]
            x = self.xtr[idx].unsqueeze(1) if not self.flat else self.xtr[idx]
            m.zero_grad()
            loss = torch.nn.functional.cross_entropy(m(x), self.ytr[idx])
            loss.backward()
            losses.append(float(loss.detach()))  # torch 2 warns on a scalar of a graph tensor
            ps = m.parameters() if self.periodic else (p for _, p in self.params)
            grads.append([p.grad.detach().reshape(s).clone() for p, s in zip(ps, self.shapes)])
        return losses, grads

    def observe(self, step, epoch, i, losses, grads):
        W, L = self.a.workers, len(self.shapes)
        norms = [[float(grads[w][l].norm()) for l in range(L)] for w in range(W)]
        mean = [sum(norms[w][l] for w in range(W)) / W for l in range(L)]
        for w in range(W):
            for l in range(L):
                self.sums[w][l] += grads[w][l]
        self.epoch_steps += 1
        end = i == self.spe - 1
        en = enr = None
        if end:
            e = [[float((self.sums[w][l] / self.epoch_steps).norm()) for l in range(L)]
                 for w in range(W)]
            en, enr = [sum(e[w][l] for w in range(W)) / W for l in range(L)], e[0]
            for s in self.sums:
                for t in s:
                    t.zero_()
            self.epoch_steps = 0
        ev = self.evals[-1] if self.evals else None
        obs = bh.Observation(step=step, epoch=epoch, lr=self.a.lr, loss=sum(losses) / W,
                             grad_norm_mean=mean, grad_norm_rank0=norms[0],
                             epoch_start=i == 0, epoch_end=end, epoch_norm_mean=en,
                             epoch_norm_rank0=enr, averaged=self.averaged_prev,
                             param_variance=self.variance_prev,
                             eval_accuracy=ev["test_accuracy"] if ev else None,
                             eval_loss=ev["test_loss"] if ev else None,
                             eval_step=ev["step"] if ev else -1)
        return obs

    def apply(self, d, grads):
        """Gradient mode: the compressed collective, then the step. Periodic: each worker's own
        step, then the averaging. Returns (record fields of the decision)."""
        if not self.periodic:
            for l, lv in enumerate(d.level):
                try:
                    self.comp.check_level(lv)
                except bc.SpecError as e:
                    fail("--policy %s: %s (layer %d)" % (self.pol.spec, e, l))
            mean, nbytes = self.comp.reduce(grads, d.level)
            for (_, p), g in zip(self.params, mean):
                p.grad = g.reshape(p.shape).clone()
            self.opts[0].step()
            return {"levels": list(d.level), "bytes": nbytes}, None
        for o in self.opts:
            o.step()
        if not d.average:
            return {"average": False, "period": d.period, "bytes": 0}, None
        flat = [torch.cat([p.detach().reshape(-1) for p in m.parameters()]) for m in self.copies]
        xbar = sum(flat) / len(flat)
        var = float(sum(((x - xbar) ** 2).sum() for x in flat) / len(flat))
        for m in self.copies:
            torch.nn.utils.vector_to_parameters(xbar.clone(), m.parameters())
        return {"average": True, "period": d.period, "bytes": 4 * xbar.numel()}, var

    def evaluate(self, step):
        m = self.copies[0]
        m.eval()
        with torch.no_grad():
            x = self.xte.unsqueeze(1) if not self.flat else self.xte
            logits = torch.cat([m(x[k:k + 1000]) for k in range(0, len(x), 1000)])
            acc = float((logits.argmax(1) == self.yte).float().mean())
            loss = float(torch.nn.functional.cross_entropy(logits, self.yte))
        m.train()
        self.evals.append({"type": "eval", "step": step, "test_accuracy": acc, "test_loss": loss})
        self.records.append(self.evals[-1])

    def train(self):
        a = self.a
        self.evaluate(0)
        step = 0
        for epoch in range(a.epochs):
            for i in range(self.spe):
                losses, grads = self.worker_grads(epoch, i)
                obs = self.observe(step, epoch, i, losses, grads)
                try:
                    d = self.pol.step(obs)
                except bh.PolicyError as e:
                    fail(str(e))
                dec, var = self.apply(d, grads)
                rec = {"type": "step", "step": step, "epoch": epoch,
                       "epoch_end": obs.epoch_end, "lr": a.lr, "loss": obs.loss,
                       "grad_norms": obs.grad_norm_mean, "grad_norms_rank0": obs.grad_norm_rank0}
                if obs.epoch_end:
                    rec["epoch_norms"] = obs.epoch_norm_mean
                    rec["epoch_norms_rank0"] = obs.epoch_norm_rank0
                if var is not None:
                    rec["param_variance"] = var
                rec.update(dec)
                rec["state"] = self.pol.describe()[:47]
                self.records.append(rec)
                self.averaged_prev, self.variance_prev = var is not None, var
                step += 1
                if (a.eval_every and step % a.eval_every == 0) or \
                        (not a.eval_every and obs.epoch_end):
                    self.evaluate(step)
                if not all(math.isfinite(x) for x in [obs.loss]):
                    fail("the loss is not finite at step %d" % step)
        return step

    def header(self):
        a = self.a
        return {"format": FORMAT, "version": VERSION,
                "source": "pytorch %s train_policy.py (%d emulated workers%s)"
                          % (torch.__version__, a.workers,
                             ", on cuda" if a.device == "cuda" else ""),
                "model": a.model if a.model != "mlp" else "mlp",
                "dataset": "fashion-mnist", "workers": a.workers, "batch": a.batch,
                "flops_per_sample": self.flops, "epochs": a.epochs,
                "steps_per_epoch": self.spe, "lr": {"schedule": "constant", "base": a.lr},
                "layers": [{"name": n, "rows": r, "cols": c}
                           for (n, _), (r, c) in zip(self.params, self.shapes)],
                "policy": {"spec": self.pol.spec,
                           "mode": "periodic" if self.periodic else "gradient",
                           "compressor": self.comp.spec, "seed": a.seed,
                           "train_samples": len(self.ytr), "test_samples": len(self.yte)}}


def write_trace(path, header, records):
    """The trace under its name, complete, or nothing (a temporary file renamed)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=folder)
    try:
        with os.fdopen(fd, "wb") as raw:
            out = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if path.endswith(".gz") else raw
            for obj in [header] + records:
                out.write((json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n")
                          .encode("utf-8"))
            if out is not raw:
                out.close()
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv):
    a = parse_args(argv)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    t0 = time.time()
    run = Run(a)
    steps = run.train()
    write_trace(a.out, run.header(), run.records)
    ev = run.evals[-1]
    print("%s: %d steps on %d emulated workers, accuracy %.4f, %.1f wall s"
          % (run.pol.spec, steps, a.workers, ev["test_accuracy"], time.time() - t0))


if __name__ == "__main__":
    main(sys.argv[1:])
