"""test_torch_compress.py: bellows' compressors in PyTorch (traces/pytorch/bellows_compress.py)
on 4 emulated workers: at full level every compressor that can be exact gives the workers' mean;
error feedback keeps exactly what was not sent (memory = M - sent); PowerSGD's query is
warm-started (the same query again gives the same result) and keeps its first columns when the
rank grows; the payload bytes are bellows' compress_plan sizes; bad specs and levels are
refused. Exits 77 (skipped) without torch.
    python3 tests/test_torch_compress.py"""
import os
import sys

try:
    import torch
except ImportError:
    print("python3-torch is not installed: skipped")
    sys.exit(77)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "traces",
                                "pytorch"))
import bellows_compress as bc  # noqa: E402

W, shapes = 4, [(16, 12), (16, 1), (5, 7)]
torch.manual_seed(3)


def grads():
    return [[torch.randn(r, c) for r, c in shapes] for _ in range(W)]


def mean(g):
    return [sum(g[w][l] for w in range(W)) / W for l in range(len(shapes))]


def close(a, b, tol=1e-4):
    return all(float((x - y).abs().max()) <= tol for x, y in zip(a, b))


# exact at full level (top-k and random-k keep everything; PowerSGD at full rank)
for spec, level in (("topk", 1.0), ("randomk", 1.0), ("powersgd", 12), ("none", 1)):
    c = bc.Compressor(spec, shapes, W, 1)
    g = grads()
    out, _ = c.reduce(g, [level, 0, level])
    assert close(out, mean(g)), spec
# error feedback: after a step, memory + sent = M for every worker (here sent = the decode)
c = bc.Compressor("powersgd", shapes, W, 1)
g = grads()
out, nbytes = c.reduce(g, [1, 0, 1])
for w in range(W):
    assert close([c.memory[w][0] + out[0]], [g[w][0]], 1e-5)
assert nbytes == 4 * (1 * (16 + 12) + 16 + 1 * (5 + 7)), nbytes
# warm start: the next step's query is the averaged Q; growing the rank keeps its first column
q1 = c.query[0].clone()
c.reduce(grads(), [2, 0, 1])
assert c.query[0].shape == (2, 12)
reset = bc.Compressor("powersgd:rank_change=reset", shapes, W, 1)
reset.reduce(g, [1, 0, 1])
assert close([reset.query[0]], [q1]), "the same seed and gradients give the same query"
# top-k: the k largest magnitudes; sum over the workers without divide
c = bc.Compressor("topk:divide=0,ef=0,index=int64", shapes, W, 1)
g = grads()
out, nbytes = c.reduce(g, [0.25, 0, 0.25])
assert int((out[0] != 0).sum()) <= W * 48
k0, k2 = 48, 9  # ceil(0.25 * 192), ceil(0.25 * 35)
assert nbytes == (k0 + k2) * 12 + 4 * 16, nbytes
# wire sizes of the others (bellows' compress_plan)
assert bc.Compressor("qsgd", shapes, W, 1).plan_bytes([127, 0, 127]) == \
    (4 + (192 * 8 + 7) // 8) + 64 + (4 + (35 * 8 + 7) // 8)
assert bc.Compressor("signsgd", shapes, W, 1).plan_bytes([1, 0, 1]) == (4 + 24) + 64 + (4 + 5)
assert bc.Compressor("fp16", shapes, W, 1).plan_bytes([1, 0, 1]) == 2 * 192 + 64 + 2 * 35
assert bc.Compressor("randomk", shapes, W, 1).plan_bytes([0.1, 0, 0.1]) == 4 * (20 + 16 + 4)
# signSGD: each worker sends ||p||_1 / d sign(p); qsgd is unbiased on average
c = bc.Compressor("signsgd", shapes, W, 1)
g = grads()
out, _ = c.reduce(g, [1, 0, 1])
sent0 = g[0][0].abs().mean() * torch.sign(g[0][0])
assert close([c.memory[0][0]], [g[0][0] - sent0], 1e-5)
c = bc.Compressor("qsgd:ef=0", shapes, W, 1)
acc = [torch.zeros(16, 12)]
g = grads()
for _ in range(200):
    acc[0] += c.reduce(g, [4, 0, 4])[0][0] / 200
assert close(acc, [mean(g)[0]], 0.2), "qsgd is unbiased"
# bad specs and levels
for bad in ("nosuch", "topk:ef=2", "powersgd:rank_change=x", "fp16:foo=1"):
    try:
        bc.parse_spec(bad)
        raise AssertionError(bad + " accepted")
    except bc.SpecError:
        pass
for spec, level in (("powersgd", 1.5), ("topk", 2), ("fp16", 3)):
    try:
        bc.Compressor(spec, shapes, W, 1).check_level(level)
        raise AssertionError("%s level %g accepted" % (spec, level))
    except bc.SpecError:
        pass
print("bellows_compress: all checks passed")
