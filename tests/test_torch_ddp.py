"""test_torch_ddp.py: bellows' compressors as a DDP communication hook (bellows_compress.DdpHook)
under torch.distributed (gloo, 2 processes on the CPU) give, two steps running, the decoded mean
that the emulation of 2 workers (bellows_compress.Compressor.reduce) computes from the same
local gradients: PowerSGD (warm start, a rank change), Top-k, Random-k, signSGD, fp16 and QSGD
(its levels as int8, and as int32 above 127 levels), each with its error feedback. Exits 77 (skipped) without torch or torch.distributed's gloo.
    python3 tests/test_torch_ddp.py"""
import os
import socket
import sys
import tempfile
import time

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
except ImportError:
    print("python3-torch is not installed: skipped")
    sys.exit(77)
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "traces", "pytorch")
sys.path.insert(0, HERE)
import bellows_compress as bc  # noqa: E402

CASES = [("powersgd", [[1, 0, 2, 0], [2, 0, 1, 0]]), ("topk", [[0.25, 0, 0.5, 0]] * 2),
         ("randomk", [[0.25, 0, 0.5, 0]] * 2), ("signsgd", [[1, 0, 1, 0]] * 2),
         ("fp16", [[1, 0, 0, 0], [1, 0, 1, 0]]), ("qsgd:ef=1", [[127, 0, 4, 0], [200, 0, 3, 0]])]


def model():
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.Tanh(), torch.nn.Linear(16, 5))


def batch(rank, step):
    g = torch.Generator().manual_seed(100 * rank + step)
    return torch.randn(8, 12, generator=g), torch.randint(0, 5, (8,), generator=g)


def worker(rank, port, out):
    sys.path.insert(0, HERE)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.set_num_threads(1)
    res = {}
    for spec, steps in CASES:
        m = model()
        ddp = torch.nn.parallel.DistributedDataParallel(m, bucket_cap_mb=0.0001)
        hook = bc.DdpHook(spec, m, seed=5)
        ddp.register_comm_hook(None, hook.hook)
        for s, levels in enumerate(steps):
            hook.levels[:] = levels
            x, y = batch(rank, s)
            ddp.zero_grad()
            torch.nn.functional.cross_entropy(ddp(x), y).backward()
            res[(spec, s)] = [p.grad.clone() for p in m.parameters()]
            hook.end_step()
    torch.save(res, "%s/rank%d.pt" % (out, rank))
    # out at once: a forked child's exit through gloo's teardown hung one time in two
    sys.stdout.flush()
    os._exit(0)


def local_grads(rank, step):
    m = model()
    x, y = batch(rank, step)
    torch.nn.functional.cross_entropy(m(x), y).backward()
    return [p.grad.clone().reshape(p.numel(), 1) if p.dim() == 1 else p.grad.clone()
            for p in m.parameters()]


def main():
    if not dist.is_available() or not dist.is_gloo_available():
        print("torch.distributed with gloo is not available: skipped")
        sys.exit(77)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tempfile.mkdtemp()
    # fork: the children share this module as it is (spawn re-imports it, and hung here)
    ctx = mp.start_processes(worker, args=(port, out), nprocs=2, join=False, start_method="fork")
    deadline = time.time() + 90
    while not ctx.join(timeout=5):
        if time.time() > deadline:
            for p in ctx.processes:
                p.terminate()
            sys.exit("the 2 gloo processes did not finish in 90 s")
    got = [torch.load("%s/rank%d.pt" % (out, r)) for r in (0, 1)]
    for spec, steps in CASES:
        shapes = [(16, 12), (16, 1), (5, 16), (5, 1)]
        emu = bc.Compressor(spec, shapes, 2, 5)
        for s, levels in enumerate(steps):
            want, _ = emu.reduce([local_grads(0, s), local_grads(1, s)], levels)
            for r in (0, 1):
                for l, w in enumerate(want):
                    g = got[r][(spec, s)][l].reshape(w.shape)
                    err = float((g - w).abs().max())
                    assert err < 1e-5, (spec, s, r, l, err)
    print("DdpHook: %d compressors agree with the emulation on 2 gloo processes" % len(CASES))


if __name__ == "__main__":
    main()
