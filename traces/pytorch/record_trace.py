"""record_trace.py: write a bellows gradient trace from your own PyTorch training.

Add three calls to a training script (single process or DistributedDataParallel):

    from record_trace import TraceRecorder
    rec = TraceRecorder("run.jsonl.gz", model, batch_per_worker=64, model_name="resnet18",
                        flops_per_sample=3.6e9)          # or compute_s_per_step=0.12
    ...
    loss.backward()
    rec.step(loss.item(), lr=optimizer.param_groups[0]["lr"], epoch=epoch,
             epoch_end=(i == len(loader) - 1))           # after backward, before optimizer.step()
    ...
    rec.eval(test_accuracy, test_loss)                    # after each evaluation
    rec.close()

Then `bellows replay --trace run.jsonl.gz --policies sync,accordion,... --out DIR` replays it
under any policy on any simulated cluster. The format is documented in traces/README.md. The
recorder writes to a temporary file and renames it on close(), so a crashed run leaves no
half-written trace. Under torch.distributed the per-layer norms and the loss are averaged over
the ranks (one small all_reduce per step) and only rank 0 writes. At each epoch's end it writes
"epoch_norms" (Accordion's signal; bellows refuses to replay accordion without them), for which
it keeps one fp32 sum of the gradients.
"""
import gzip
import json
import math
import os
import tempfile

import torch

FORMAT = "bellows-trace"
VERSION = 1


def _shape(p):
    """A parameter as bellows sees it: a matrix [rows, cols] (conv kernels [out, in*kh*kw]) or a
    vector [n, 1]."""
    if p.dim() <= 1:
        return p.numel(), 1
    return p.shape[0], p.numel() // p.shape[0]


class TraceRecorder:
    def __init__(self, path, model, batch_per_worker, model_name="model", dataset="",
                 flops_per_sample=None, compute_s_per_step=None, epochs=0, steps_per_epoch=0,
                 lr_schedule="", lr_base=0.0, source="pytorch"):
        if not flops_per_sample and not compute_s_per_step:
            raise ValueError("give flops_per_sample or compute_s_per_step")
        self.params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        if not 1 <= len(self.params) <= 32:
            raise ValueError("bellows traces hold 1 to 32 parameter tensors, this model has %d"
                             % len(self.params))
        dist = torch.distributed
        self.distributed = dist.is_available() and dist.is_initialized()
        self.workers = dist.get_world_size() if self.distributed else 1
        self.writer = (not self.distributed) or dist.get_rank() == 0
        self.steps = 0
        self.epoch = 0
        # the epoch's summed local gradients, for "epoch_norms" (Accordion's signal)
        self.sums = None
        self.epoch_steps = 0
        self.pending_eval = None
        self.path = path
        if not self.writer:
            return
        folder = os.path.dirname(os.path.abspath(path))
        fd, self.tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=folder)
        raw = os.fdopen(fd, "wb")
        self.out = gzip.GzipFile(fileobj=raw, mode="wb") if path.endswith(".gz") else raw
        self.raw = raw
        header = {"format": FORMAT, "version": VERSION, "source": source, "model": model_name,
                  "dataset": dataset, "workers": self.workers, "batch": int(batch_per_worker),
                  "epochs": int(epochs), "steps_per_epoch": int(steps_per_epoch),
                  "lr": {"schedule": lr_schedule, "base": float(lr_base)},
                  "layers": [{"name": n, "rows": int(_shape(p)[0]), "cols": int(_shape(p)[1])}
                             for n, p in self.params]}
        if flops_per_sample:
            header["flops_per_sample"] = float(flops_per_sample)
        if compute_s_per_step:
            header["compute_s_per_step"] = float(compute_s_per_step)
        self._line(header)

    def _line(self, obj):
        self.out.write((json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n")
                       .encode("utf-8"))

    def step(self, loss, lr, epoch, epoch_end=False, global_batch=None):
        """Records this step: call after loss.backward(), before optimizer.step()."""
        norms = torch.stack([p.grad.detach().float().norm() if p.grad is not None
                             else torch.zeros((), device=p.device) for _, p in self.params])
        local = torch.cat([norms, torch.tensor([float(loss)], device=norms.device)])
        rank0 = local.clone()
        if self.distributed:
            torch.distributed.all_reduce(local)
            local /= self.workers
        epoch_norms = self._epoch_norms(epoch_end)
        values = [float(x) for x in local.cpu()]
        if not all(math.isfinite(v) for v in values):
            raise ValueError("non-finite gradient norm or loss at step %d" % self.steps)
        if self.writer:
            rec = {"type": "step", "step": self.steps, "epoch": int(epoch),
                   "epoch_end": bool(epoch_end), "lr": float(lr), "loss": values[-1],
                   "grad_norms": values[:-1]}
            if self.distributed:
                rec["grad_norms_rank0"] = [float(x) for x in rank0[:-1].cpu()]
            if epoch_norms is not None:
                rec["epoch_norms"] = epoch_norms
            if global_batch:
                rec["batch"] = int(global_batch)
            self._line(rec)
        self.steps += 1

    def _epoch_norms(self, epoch_end):
        """Adds this step's gradients to the epoch's sums; at the epoch's end returns per layer
        the norm of the epoch's mean local gradient, mean over workers, and starts again."""
        if self.sums is None:
            self.sums = [torch.zeros_like(p, dtype=torch.float32) for _, p in self.params]
        for s, (_, p) in zip(self.sums, self.params):
            if p.grad is not None:
                s.add_(p.grad.detach().float())
        self.epoch_steps += 1
        if not epoch_end:
            return None
        norms = torch.stack([(s / self.epoch_steps).norm() for s in self.sums])
        if self.distributed:
            torch.distributed.all_reduce(norms)
            norms /= self.workers
        for s in self.sums:
            s.zero_()
        self.epoch_steps = 0
        return [float(x) for x in norms.cpu()]

    def eval(self, test_accuracy, test_loss=None):
        """Records an evaluation of the model after the steps done so far."""
        if not self.writer:
            return
        rec = {"type": "eval", "step": self.steps, "test_accuracy": float(test_accuracy)}
        if test_loss is not None and math.isfinite(test_loss):
            rec["test_loss"] = float(test_loss)
        self._line(rec)

    def close(self):
        """Completes the trace under its name."""
        if not self.writer:
            return
        if self.out is not self.raw:
            self.out.close()
        self.raw.flush()
        os.fsync(self.raw.fileno())
        self.raw.close()
        os.replace(self.tmp, self.path)
