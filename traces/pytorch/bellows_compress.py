"""bellows_compress.py: bellows' gradient compressors (sim/compress/) in PyTorch, with their
options, defaults, semantics, error feedback and wire sizes, for k workers emulated on one
device (train_policy.py) or run under torch.distributed (DdpHook, a PyTorch DDP communication
hook for register_comm_hook).

Spec: `NAME[:key=value,...]` as `bellows --compressor` takes it (`bellows compressors` lists
them): none, powersgd (ef=1, rank_change=warm|reset), topk (ef=1, divide=1,
index=int32|int64, count=ceil|trunc), randomk (ef=1), qsgd (ef=0, wire=bits|bytes),
signsgd (ef=1, wire=bits|bytes), fp16 (ef=0). The level of a layer (a policy's decision) is
PowerSGD's rank, Top-k's and Random-k's kept fraction, QSGD's levels; 0 sends the layer dense
(fp32), and vectors (biases) always go dense, in one fused allreduce.

reduce(grads, levels) takes every worker's gradients (grads[w][l]: layer l as a matrix
[rows, cols], fp32) and returns the decoded mean every worker applies (what the collective
leaves on every rank) and the payload bytes one worker hands to the collectives (bellows'
compress_plan: encoded sizes, bit packing included). Each worker keeps its own error-feedback
memory, as in bellows. What differs from bellows' C (documented in docs/guide/own-traces.md):
the random draws (PowerSGD's new query columns, Random-k's indices, QSGD's rounding) come
from torch's generator, not GSL's, seeded alike from (seed, layer, step) (QSGD's: and the
worker's rank); sums
run in torch's order, not the ring's; fp16's sum is rounded to half after each worker's
addition in rank order.
"""
import math

import torch

# name: (options with defaults, level default, level is an integer)
COMPRESSORS = {
    "none": ({}, 0, False),
    "powersgd": ({"ef": "1", "rank_change": "warm"}, 2, True),
    "topk": ({"ef": "1", "divide": "1", "index": "int32", "count": "ceil"}, 0.1, False),
    "randomk": ({"ef": "1"}, 0.1, False),
    "qsgd": ({"ef": "0", "wire": "bits"}, 127, True),
    "signsgd": ({"ef": "1", "wire": "bits"}, 1, False),
    "fp16": ({"ef": "0"}, 1, False),
}
CHOICES = {"rank_change": ("warm", "reset"), "index": ("int32", "int64"),
           "count": ("ceil", "trunc"), "wire": ("bits", "bytes")}


class SpecError(ValueError):
    pass


def parse_spec(spec):
    """(name, options with every default spelled out, the normalised spec)."""
    name, _, rest = spec.partition(":")
    if name not in COMPRESSORS:
        raise SpecError("--compressor '%s': unknown compressor (known: %s)"
                        % (name, ", ".join(COMPRESSORS)))
    opts = dict(COMPRESSORS[name][0])
    for kv in filter(None, rest.split(",")):
        k, eq, v = kv.partition("=")
        if not eq or k not in opts:
            raise SpecError("--compressor %s: unknown option '%s' (known: %s)"
                            % (name, k, ", ".join(opts) or "none"))
        if k in CHOICES and v not in CHOICES[k]:
            raise SpecError("--compressor %s: %s=%s: expected %s" % (name, k, v,
                                                                   "|".join(CHOICES[k])))
        if k not in CHOICES and v not in ("0", "1"):
            raise SpecError("--compressor %s: %s=%s: expected 0 or 1" % (name, k, v))
        opts[k] = v
    norm = name + (":" + ",".join("%s=%s" % kv for kv in opts.items()) if opts else "")
    return name, opts, norm


def keep_count(fraction, n):
    """bellows' comp_keep_count: k = max(1, ceil(f n)), at most n."""
    k = math.ceil(fraction * n - 1e-9)
    return 1 if k < 1 else min(n, k)


def _seed(seed, tag, a, b):
    """A 63-bit seed for torch's generator from (seed, stream, a, b), mixed by splitmix64's
    finaliser: the streams bellows' comp_seed separates, not its numbers."""
    x = (seed * 0x9E3779B97F4A7C15 + tag * 0xBF58476D1CE4E5B9 + a * 0x94D049BB133111EB + b) \
        & 0xFFFFFFFFFFFFFFFF
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    x ^= x >> 31
    return x & 0x7FFFFFFFFFFFFFFF


class Compressor:
    """One compressor for `world` workers of a model whose layers are `shapes` [(rows, cols)]."""

    def __init__(self, spec, shapes, world, seed, device="cpu"):
        self.name, self.opts, self.spec = parse_spec(spec)
        # where the gradients are (cpu or cuda); the random draws are made on the CPU, from
        # the same generators on either device, and moved there
        self.device = torch.device(device)
        self.level_default = COMPRESSORS[self.name][1]
        self.shapes, self.world, self.seed = list(shapes), world, seed
        self.ef = self.opts.get("ef") == "1"
        self.memory = None  # [world][layer] error feedback, allocated on first use
        self.query = {}     # PowerSGD: layer -> Qt [r x m], the warm start
        self.step = 0
        self.ranks = list(range(world))  # the rank of each emulated worker (DdpHook: its own)

    def check_level(self, level):
        """bellows' compress_check_level: raises SpecError for a level this compressor refuses."""
        if level == 0:
            return
        name = self.name
        if name in ("powersgd", "qsgd") and (level != int(level) or level < 1):
            raise SpecError("level %g: %s takes a whole number >= 1" % (level, name))
        if name in ("topk", "randomk") and not 0 < level <= 1:
            raise SpecError("level %g: %s takes a fraction in (0, 1]" % (level, name))
        if name in ("signsgd", "fp16", "none") and level != 1:
            raise SpecError("level %g: %s takes 0 or 1" % (level, name))

    def layer_bytes(self, l, level):
        """The payload bytes of layer l at a nonzero level (compress_plan's sizes)."""
        n, m = self.shapes[l]
        size, o = n * m, self.opts
        if self.name == "none":
            return 4 * size
        if self.name == "powersgd":
            r = min(int(level), n, m)
            return 4 * r * (n + m)
        if self.name == "topk":
            k = keep_count(level, size) if o["count"] == "ceil" else \
                max(0, min(size, math.floor(level * size)))
            return k * ((8 if o["index"] == "int64" else 4) + 4)
        if self.name == "randomk":
            return 4 * keep_count(level, size)
        if self.name == "qsgd":
            w = 1 + max(0, math.ceil(math.log2(int(level) + 1)))
            bits = (w + 7) // 8 * 8 if o["wire"] == "bytes" else w
            return 4 + (size * bits + 7) // 8
        if self.name == "signsgd":
            return 4 + (size if o["wire"] == "bytes" else (size + 7) // 8)
        return 2 * size  # fp16

    def plan_bytes(self, levels):
        """The payload bytes one worker sends at these levels (dense layers fp32)."""
        total = 0
        for l, (n, m) in enumerate(self.shapes):
            lv = levels[l] if m > 1 else 0
            total += 4 * n * m if lv == 0 or self.name == "none" else self.layer_bytes(l, lv)
        return total

    def reduce(self, grads, levels):
        """grads[w][l]: [rows, cols] fp32 of worker w; returns (the decoded mean per layer,
        the payload bytes one worker sent)."""
        W = self.world
        if self.memory is None and self.ef:
            self.memory = [[torch.zeros_like(g) for g in gw] for gw in grads]
        out = [None] * len(self.shapes)
        for l, (n, m) in enumerate(self.shapes):
            lv = levels[l] if m > 1 else 0
            if lv == 0 or self.name == "none":
                out[l] = sum(grads[w][l] for w in range(W)) / W
                continue
            M = [grads[w][l] + self.memory[w][l] if self.ef else grads[w][l] for w in range(W)]
            dec, sent = getattr(self, "_" + self.name)(l, M, lv)
            out[l] = dec
            if self.ef:
                for w in range(W):
                    self.memory[w][l] = M[w] - sent[w]
        bytes_ = self.plan_bytes(levels)
        self.step += 1
        return out, bytes_

    # ---- the compressors: (the decoded mean, what each worker's message stands for) ----

    def _gen(self, tag, l):
        return torch.Generator().manual_seed(_seed(self.seed, tag, l, self.step))

    def _warm_query(self, l, r, m):
        """PowerSGD's Q for layer l at rank r ([r x m]): the previous step's columns kept (warm
        start; none after a rank change under rank_change=reset), the others, and any kept one
        that is all zeros, drawn from the layer's generator."""
        q = self.query.get(l)
        reset = self.opts["rank_change"] == "reset"
        keep = 0 if q is None or (reset and q.shape[0] != r) else min(q.shape[0], r)
        qt = torch.zeros(r, m, device=self.device)
        if keep:
            qt[:keep] = q[:keep]
        g = None
        for j in range(r):
            if j < keep and bool((qt[j] != 0).any()):
                continue
            if g is None:
                g = self._gen(1, l)
            qt[j] = torch.randn(m, generator=g).to(self.device)
        return qt

    def _powersgd(self, l, M, level):
        n, m = self.shapes[l]
        r = min(int(level), n, m)
        qt = self._warm_query(l, r, m)
        # P = sum_w M_w Q (allreduce-sum), orthogonalised
        P = sum(Mw @ qt.t() for Mw in M)  # [n x r]
        P = _orthogonalise(P)
        Q = sum(Mw.t() @ P for Mw in M) / self.world  # [m x r]
        dec = P @ Q.t()
        self.query[l] = Q.t().contiguous()
        return dec, [dec] * self.world

    def _topk(self, l, M, level):
        n, m = self.shapes[l]
        size = n * m
        k = keep_count(level, size) if self.opts["count"] == "ceil" else \
            max(0, min(size, math.floor(level * size)))
        total = torch.zeros(size, device=self.device)
        sent = []
        for Mw in M:
            flat = Mw.reshape(-1)
            # the k largest magnitudes, ties to the lower index (a stable sort)
            idx = torch.sort(flat.abs(), descending=True, stable=True)[1][:k]
            s = torch.zeros(size, device=self.device)
            s[idx] = flat[idx]
            total += s
            sent.append(s.view(n, m))
        dec = total / self.world if self.opts["divide"] == "1" else total
        return dec.view(n, m), sent

    def _randomk(self, l, M, level):
        n, m = self.shapes[l]
        size = n * m
        k = keep_count(level, size)
        idx = torch.randperm(size, generator=self._gen(2, l))[:k].to(self.device)
        vals = sum(Mw.reshape(-1)[idx] for Mw in M) / self.world
        dec = torch.zeros(size, device=self.device)
        dec[idx] = vals
        sent = []
        for Mw in M:
            s = torch.zeros(size, device=self.device)
            s[idx] = Mw.reshape(-1)[idx]
            sent.append(s.view(n, m))
        return dec.view(n, m), sent

    def qsgd_levels(self, w, l, Mw, s):
        """QSGD's message of worker w for layer l at s levels: (||Mw||, the signed levels as
        floats, sign(x) xi with xi in 0..s); it decodes to norm * q / s. The rounding draws
        come from a generator of (seed, the worker's rank, layer, step), so that they do not
        depend on the order the layers are compressed in (DDP's buckets)."""
        norm = Mw.norm()
        if float(norm) == 0:
            return norm, torch.zeros_like(Mw)
        a = Mw.abs() * s / norm
        low = a.floor()
        g = torch.Generator().manual_seed(_seed(_seed(self.seed, 3, self.ranks[w], 0), 4, l,
                                                self.step))
        u = torch.rand(Mw.shape, generator=g).to(Mw.device)
        return norm, torch.sign(Mw) * (low + (u < a - low).float())

    def _qsgd(self, l, M, level):
        s = int(level)
        sent = []
        for w, Mw in enumerate(M):
            norm, q = self.qsgd_levels(w, l, Mw, s)
            sent.append(norm * q / s)
        return sum(sent) / self.world, sent

    def _signsgd(self, l, M, level):
        sent = []
        for Mw in M:
            scale = Mw.abs().sum() / Mw.numel()
            sign = torch.where(Mw >= 0, torch.ones_like(Mw), -torch.ones_like(Mw))
            sent.append(scale * sign)
        return sum(sent) / self.world, sent

    def _fp16(self, l, M, level):
        halves = [Mw.half() for Mw in M]
        acc = halves[0]
        for h in halves[1:]:
            acc = (acc + h).half()  # rounded to half at every addition
        return acc.float() / self.world, [h.float() for h in halves]


def _orthogonalise(P):
    """bellows' orthogonalise: modified Gram-Schmidt over P's columns in double, a second pass
    for a column that lost more than half its norm, a zero column left zero."""
    P = P.double().clone()
    for i in range(P.shape[1]):
        v = P[:, i]
        before = float(v @ v)
        after = before
        for _ in range(2 if i > 0 else 0):
            for j in range(i):
                u = P[:, j]
                v -= float(u @ v) * u
            prev, after = after, float(v @ v)
            if after >= 0.25 * prev:
                break
        if after != 0:
            P[:, i] = v / math.sqrt(after)
    return P.float()


class DdpHook:
    """bellows' compressors as a DDP communication hook under torch.distributed (any backend;
    gloo on the CPU): model.register_comm_hook(hook, hook.hook) after
        hook = DdpHook(spec, model, seed)
    and before each step's backward, hook.levels[:] = the policy's levels (layer l: the model's
    l-th parameter). Each bucket's tensors are compressed at their levels with this rank's own
    error-feedback memory and combined by real collectives: dense and Random-k values
    all-reduced, PowerSGD's P then Q all-reduced, Top-k's indices and values all-gathered,
    QSGD's norms and signed levels (int8 up to 127 levels) all-gathered; signSGD's and fp16's
    messages are all-gathered as the values they decode to (the same sums as bellows'
    bit-packed messages, more bytes on this wire). The decoded mean is what
    the emulation (Compressor.reduce) computes for the same gradients (tested to float
    tolerance: tests/test_torch_ddp.py); call hook.end_step() after each optimizer step."""

    def __init__(self, spec, model, seed):
        import torch.distributed as dist
        self.dist = dist
        params = [p for p in model.parameters() if p.requires_grad]
        shapes = [(p.numel(), 1) if p.dim() <= 1 else (p.shape[0], p.numel() // p.shape[0])
                  for p in params]
        self.world, self.rank = dist.get_world_size(), dist.get_rank()
        # one worker's compressor: its memory, its queries, its QSGD stream
        self.comp = Compressor(spec, shapes, 1, seed, device=params[0].device)
        self.comp.world = self.world
        self.comp.ranks = [self.rank]
        self.index = {id(p): l for l, p in enumerate(params)}
        self.levels = [0.0] * len(params)
        self.bytes = 0

    def end_step(self):
        self.comp.step += 1

    def _sum(self, t):
        self.dist.all_reduce(t)
        return t

    def _gather(self, t):
        out = [torch.zeros_like(t) for _ in range(self.world)]
        self.dist.all_gather(out, t)
        return out

    def _layer(self, l, g):
        c, W = self.comp, self.world
        n, m = c.shapes[l]
        lv = self.levels[l] if m > 1 else 0
        if lv == 0 or c.name == "none":
            return self._sum(g.clone()) / W
        if c.ef and c.memory is None:
            c.memory = [[torch.zeros(r, k, device=c.device) for r, k in c.shapes]]
        M = g + c.memory[0][l] if c.ef else g
        if c.name == "powersgd":
            dec = self._powersgd(l, M, lv)
            sent = dec
        elif c.name == "qsgd":
            dec, sent = self._qsgd(l, M, lv)
        elif c.name == "randomk":
            k = keep_count(lv, n * m)
            idx = torch.randperm(n * m, generator=c._gen(2, l))[:k].to(c.device)
            vals = self._sum(M.reshape(-1)[idx].clone()) / W
            dec, sent = torch.zeros(n * m, device=c.device), torch.zeros(n * m, device=c.device)
            dec[idx], sent[idx] = vals, M.reshape(-1)[idx]
            dec, sent = dec.view(n, m), sent.view(n, m)
        else:  # one worker's message through the emulation's code, then gathered
            mean, sents = getattr(c, "_" + c.name)(l, [M], lv)
            sent = sents[0]
            parts = self._gather(sent.contiguous())
            if c.name == "fp16":
                acc = parts[0].half()
                for h in parts[1:]:
                    acc = (acc + h.half()).half()
                dec = acc.float() / W
            else:
                dec = sum(parts)
                dec = dec / W if c.name != "topk" or c.opts["divide"] == "1" else dec
        if c.ef:
            c.memory[0][l] = M - sent
        return dec

    def _powersgd(self, l, M, level):
        c = self.comp
        n, m = c.shapes[l]
        r = min(int(level), n, m)
        qt = c._warm_query(l, r, m)
        P = _orthogonalise(self._sum(M @ qt.t()))
        Q = self._sum(M.t() @ P) / self.world
        c.query[l] = Q.t().contiguous()
        return P @ Q.t()

    def _qsgd(self, l, M, level):
        """QSGD: every rank's norm and signed levels all-gathered (int8 up to 127 levels,
        int32 above), each decoded as the emulation decodes it, summed in rank order."""
        c, s = self.comp, int(level)
        norm, q = c.qsgd_levels(0, l, M, s)
        norms = self._gather(norm.reshape(1))
        qs = self._gather(q.to(torch.int8 if s <= 127 else torch.int32))
        dec = sum(nw * qw.float() / s for nw, qw in zip(norms, qs)) / self.world
        return dec, norm * q / s

    def hook(self, state, bucket):
        """The communication hook: returns a future of the bucket's decoded mean."""
        out = []
        for p, g in zip(bucket.parameters(), bucket.gradients()):
            l = self.index[id(p)]
            out.append(self._layer(l, g.detach().reshape(self.comp.shapes[l])).reshape(-1))
        fut = torch.futures.Future()
        fut.set_result(torch.cat(out))
        return fut
