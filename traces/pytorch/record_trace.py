"""record_trace.py: write a bellows gradient trace from your own PyTorch training.

Add three calls to a training script (single process or DistributedDataParallel):

    from record_trace import TraceRecorder
    rec = TraceRecorder("run.jsonl.gz", model, batch_per_worker=64, model_name="resnet18",
                        flops_per_sample=3.6e9)          # or compute_s_per_step=0.12, or neither
    ...
    loss.backward()
    rec.step(loss.item(), lr=optimizer.param_groups[0]["lr"], epoch=epoch,
             epoch_end=(i == len(loader) - 1))           # after backward, before optimizer.step()
    ...
    rec.eval(test_accuracy, test_loss)                    # after each evaluation
    rec.close()

Then `bellows replay --trace run.jsonl.gz --policies sync,accordion,... --out DIR` replays it
under any policy on any simulated cluster. The format is documented in traces/README.md. The
recorder writes to temporary files and puts the trace under its name on close(), so a crashed
run leaves no half-written trace. Under torch.distributed the per-layer norms and the loss are
averaged over the ranks (one small all_reduce per step) and only rank 0 writes. At each epoch's
end it writes "epoch_norms" (Accordion's signal; bellows refuses to replay accordion without
them), for which it keeps one fp32 sum of the gradients. A model may have any number of
parameter tensors.

Per-layer times (layer_times=True, the default): the header's "timing" holds, for every
parameter tensor, the wall-clock seconds (time.perf_counter) of one step's forward and backward
at batch_per_worker, averaged over the recorded steps after the first timing_warmup (all of them
when the run has no more), and the device they were measured on. Only the forward and backward
of training are timed (passes under torch.no_grad(), such as evaluations, are not). The time of
a module that owns parameters goes to its first parameter tensor (in named_parameters order) and
0 to its other tensors:
  forward: the time from the module's forward pre-hook to the next parameter-owning module's (the
    last one's: to the end of the model's forward; the first one's: from its start), so the
    parameter-free modules in between (ReLU, pooling, the residual add) count with the module
    before them and the times add up to the whole forward;
  backward: the time from the previous module's (in the order their gradients complete) last
    parameter gradient to this module's last parameter gradient (the first one's: from the start
    of backward, when the model output's gradient arrives), from hooks on the parameters, so the
    times add up to the whole backward. (Module full backward hooks cannot be used: PyTorch
    refuses them on a module whose output a later in-place ReLU modifies, as in ResNet.)
On CUDA every hook synchronises the device first, which slows training a little. Under DDP each
rank's backward also waits for gradient buckets, so time a single process for a clean profile.
Without flops_per_sample and compute_s_per_step, compute_s_per_step is the measured forward plus
backward. bellows reads the timing as a workload profile: `--workload run.jsonl.gz`.
"""
import gzip
import json
import math
import os
import shutil
import tempfile
import time

import torch

FORMAT = "bellows-trace"
VERSION = 1


def _shape(p):
    """A parameter as bellows sees it: a matrix [rows, cols] (conv kernels [out, in*kh*kw]) or a
    vector [n, 1]."""
    if p.dim() <= 1:
        return p.numel(), 1
    return p.shape[0], p.numel() // p.shape[0]


def _first_tensor(x):
    """The first tensor in a model's output (a tensor, or a tuple, list or dict of them)."""
    if torch.is_tensor(x):
        return x
    values = x.values() if isinstance(x, dict) else x if isinstance(x, (list, tuple)) else ()
    for v in values:
        t = _first_tensor(v)
        if t is not None:
            return t
    return None


class _LayerTimer:
    """Per-step forward and backward seconds of every parameter-owning module, from hooks (see
    the module's docstring for what is attributed where)."""

    def __init__(self, model, params, warmup):
        index = {id(p): i for i, (_, p) in enumerate(params)}
        # the modules that own trace tensors, each with the index of its first one
        self.first = []
        self.handles = []
        for module in model.modules():
            own = [index[id(p)] for p in module.parameters(recurse=False) if id(p) in index]
            if not own:
                continue
            m = len(self.first)
            self.first.append(min(own))
            self.handles.append(module.register_forward_pre_hook(
                lambda mod, inp, m=m: self._fwd_event(m)))
            for i in own:
                self.handles.append(params[i][1].register_hook(
                    lambda grad, m=m: self._bwd_event(m)))
        self.handles.append(model.register_forward_pre_hook(lambda mod, inp: self._fwd_start()))
        self.handles.append(model.register_forward_hook(
            lambda mod, inp, out: self._fwd_end(out)))
        self.cuda = any(p.is_cuda for _, p in params)
        dev = params[0][1].device
        self.device = ("%s %s" % (dev, torch.cuda.get_device_name(dev))) if dev.type == "cuda" \
            else str(dev)
        self.warmup = warmup
        n = len(self.first)
        self.fwd, self.bwd = [0.0] * n, [0.0] * n                    # this step's
        self.sum_fwd, self.sum_bwd = [0.0] * n, [0.0] * n            # after the warm-up
        self.all_fwd, self.all_bwd = [0.0] * n, [0.0] * n            # every step
        self.steps = 0
        self.fwd_events, self.fwd_t0 = None, None
        self.segments = []  # backward passes of this step: [start time or None, {module: done}]

    def _now(self):
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter()

    def _fwd_start(self):
        if torch.is_grad_enabled():
            self.fwd_t0, self.fwd_events = self._now(), []

    def _fwd_event(self, m):
        if self.fwd_events is not None and torch.is_grad_enabled():
            self.fwd_events.append((self._now(), m))

    def _fwd_end(self, out):
        if self.fwd_events is None or not torch.is_grad_enabled():
            return
        end, ev = self._now(), self.fwd_events
        for k, (t, m) in enumerate(ev):
            start = self.fwd_t0 if k == 0 else t
            self.fwd[m] += (ev[k + 1][0] if k + 1 < len(ev) else end) - start
        self.fwd_events = None
        y = _first_tensor(out)
        if y is not None and y.requires_grad:
            y.register_hook(lambda grad: self.segments.append([self._now(), {}]))

    def _bwd_event(self, m):
        if not self.segments:
            self.segments.append([None, {}])
        self.segments[-1][1][m] = self._now()

    def end_step(self):
        """Closes this step's measurement (after its backward)."""
        for start, done in self.segments:
            prev = start
            for t, m in sorted((t, m) for m, t in done.items()):
                self.bwd[m] += t - prev if prev is not None else 0.0
                prev = t
        self.segments = []
        for m in range(len(self.first)):
            self.all_fwd[m] += self.fwd[m]
            self.all_bwd[m] += self.bwd[m]
            if self.steps >= self.warmup:
                self.sum_fwd[m] += self.fwd[m]
                self.sum_bwd[m] += self.bwd[m]
        self.fwd, self.bwd = [0.0] * len(self.first), [0.0] * len(self.first)
        self.steps += 1

    def timing(self, n_tensors):
        """The header's "timing": per tensor, seconds per step; None before any step."""
        if self.steps == 0:
            return None
        measured = self.steps - self.warmup
        fwd, bwd, k = (self.sum_fwd, self.sum_bwd, measured) if measured > 0 else \
            (self.all_fwd, self.all_bwd, self.steps)
        f, b = [0.0] * n_tensors, [0.0] * n_tensors
        for m, i in enumerate(self.first):
            f[i], b[i] = fwd[m] / k, bwd[m] / k
        return {"device": self.device, "steps": k, "fwd_s": f, "bwd_s": b}

    def remove(self):
        for h in self.handles:
            h.remove()


class TraceRecorder:
    def __init__(self, path, model, batch_per_worker, model_name="model", dataset="",
                 flops_per_sample=None, compute_s_per_step=None, epochs=0, steps_per_epoch=0,
                 lr_schedule="", lr_base=0.0, source="pytorch", layer_times=True,
                 timing_warmup=2):
        if not flops_per_sample and not compute_s_per_step and not layer_times:
            raise ValueError("give flops_per_sample or compute_s_per_step (or layer_times=True "
                             "to take the measured time)")
        self.params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        if not self.params:
            raise ValueError("the model has no parameter tensor that requires a gradient")
        dist = torch.distributed
        self.distributed = dist.is_available() and dist.is_initialized()
        self.workers = dist.get_world_size() if self.distributed else 1
        self.writer = (not self.distributed) or dist.get_rank() == 0
        self.steps = 0
        self.epoch = 0
        # the epoch's summed local gradients, for "epoch_norms" (Accordion's signal)
        self.sums = None
        self.epoch_steps = 0
        self.path = path
        self.timer = _LayerTimer(model, self.params, timing_warmup) if layer_times else None
        if not self.writer:
            return
        self.header = {"format": FORMAT, "version": VERSION, "source": source,
                       "model": model_name, "dataset": dataset, "workers": self.workers,
                       "batch": int(batch_per_worker), "epochs": int(epochs),
                       "steps_per_epoch": int(steps_per_epoch),
                       "lr": {"schedule": lr_schedule, "base": float(lr_base)},
                       "layers": [{"name": n, "rows": int(_shape(p)[0]),
                                   "cols": int(_shape(p)[1])} for n, p in self.params]}
        if flops_per_sample:
            self.header["flops_per_sample"] = float(flops_per_sample)
        if compute_s_per_step:
            self.header["compute_s_per_step"] = float(compute_s_per_step)
        # the records wait in a body file until close(), when the header (with the times
        # measured by then) goes first
        folder = os.path.dirname(os.path.abspath(path))
        fd, self.tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=folder)
        os.close(fd)
        self.body = tempfile.TemporaryFile(mode="w+b", prefix=".bellows-trace-body.", dir=folder)

    def _line(self, obj, out=None):
        (out or self.body).write((json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n")
                                 .encode("utf-8"))

    def step(self, loss, lr, epoch, epoch_end=False, global_batch=None):
        """Records this step: call after loss.backward(), before optimizer.step()."""
        if self.timer:
            self.timer.end_step()
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
        """Completes the trace under its name: the header, with the per-layer times, then the
        records."""
        if self.timer:
            self.timer.remove()
        if not self.writer:
            return
        header = dict(self.header)
        timing = self.timer.timing(len(self.params)) if self.timer else None
        if timing:
            header["timing"] = timing
            if "flops_per_sample" not in header and "compute_s_per_step" not in header:
                header["compute_s_per_step"] = sum(timing["fwd_s"]) + sum(timing["bwd_s"])
        elif "flops_per_sample" not in header and "compute_s_per_step" not in header:
            raise ValueError("no step was recorded, so there is no measured time to stand in "
                             "for flops_per_sample or compute_s_per_step")
        with open(self.tmp, "wb") as raw:
            out = gzip.GzipFile(fileobj=raw, mode="wb") if self.path.endswith(".gz") else raw
            self._line(header, out)
            self.body.seek(0)
            shutil.copyfileobj(self.body, out)
            if out is not raw:
                out.close()
            raw.flush()
            os.fsync(raw.fileno())
        self.body.close()
        os.replace(self.tmp, self.path)
