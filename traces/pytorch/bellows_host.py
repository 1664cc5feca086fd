"""bellows_host.py: run any bellows policy inside your own (PyTorch) training, with the code that
decides in the simulator: libbellows_policy.so (policies/host/bellows_host.h, built with bellows)
loaded through ctypes. A spec is what `bellows run --policy` takes: a built-in
(`static:level=1`, `accordion:low=1,high=4`), a C plug-in (`./mypolicy.so:k=v`) or a Python
policy file (`./mypolicy.py:k=v`, run by this process's own interpreter).

    from bellows_host import HostPolicy, Observation
    pol = HostPolicy("accordion", layers=[("fc1.weight", 256, 784), ...], workers=8,
                     epochs=4, batch=256, steps_per_epoch=117, lr0=0.1,
                     compressor="powersgd", compressor_level=1)
    d = pol.step(Observation(step=t, epoch=e, epoch_start=..., epoch_end=..., lr=lr,
                             loss=loss, grad_norm_mean=[...], grad_norm_rank0=[...]))
    d.level, d.batch, d.average, d.period        # the decision for step t

    pol.outer                                    # DiLoCo's outer step (Outer), or None

The library is found at $BELLOWS_POLICY_LIB, else in the build folder beside this file's
repository (build/libbellows_policy.so). A spec the library cannot load raises PolicyError
with bellows' own message (exit status 2 for a command-line tool that passes it on). When it
loads the library, this module checks that its ctypes structs are the C header's: the library's
BELLOWS_POLICY_VERSION, and every struct's size and every field's offset
(bellows_host_layout); a library built from other headers raises PolicyError (status 1) that
says which field differs, before any call could read a struct wrongly.
"""
import ctypes
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

HAS_GRAD_NORMS, HAS_RANK0_NORMS, HAS_EPOCH_NORMS = 1, 2, 4
HAS_VARIANCE, HAS_STEP_TIMES, HAS_EVAL = 8, 16, 32
GRADIENT, PERIODIC = 0, 1
# the versions these structs mirror: bellows_policy.h's BELLOWS_POLICY_VERSION and the oldest
# bellows_host.h's BELLOWS_HOST_API with every function used here (2: the layout, the outer step)
POLICY_VERSION = 6
HOST_API = 2

_D = ctypes.c_double
_PD = ctypes.POINTER(ctypes.c_double)


class _Obs(ctypes.Structure):
    """BellowsPolicyObs of policies/bellows_policy.h, field for field."""
    _fields_ = [("step", ctypes.c_long), ("epoch", ctypes.c_int), ("epoch_start", ctypes.c_int),
                ("epoch_end", ctypes.c_int), ("lr_decayed", ctypes.c_int), ("lr", _D),
                ("loss", _D), ("grad_norm_rank0", _PD), ("grad_norm_mean", _PD),
                ("averaged", ctypes.c_int), ("param_variance", _D), ("sim_time_s", _D),
                ("bytes_per_worker", _D), ("epoch_norm_rank0", _PD), ("epoch_norm_mean", _PD),
                ("have", ctypes.c_uint), ("compute_s", _D), ("compress_s", _D),
                ("comm_s", _D), ("wait_s", _D), ("eval_accuracy", _D), ("eval_loss", _D),
                ("eval_step", ctypes.c_long), ("eval_time_s", _D)]


class _Ctx(ctypes.Structure):
    """BellowsHostContext of policies/host/bellows_host.h."""
    _fields_ = [("n_layers", ctypes.c_int), ("names", ctypes.POINTER(ctypes.c_char_p)),
                ("rows", ctypes.POINTER(ctypes.c_int)), ("cols", ctypes.POINTER(ctypes.c_int)),
                ("workers", ctypes.c_int), ("epochs", ctypes.c_int), ("batch", ctypes.c_int),
                ("steps_per_epoch", ctypes.c_long), ("lr0", _D), ("n_decays", ctypes.c_int),
                ("decay_epochs", ctypes.POINTER(ctypes.c_int)), ("compressor", ctypes.c_char_p),
                ("compressor_level", _D), ("compressor_spec", ctypes.c_char_p)]


class _Outer(ctypes.Structure):
    """BellowsPolicyOuter of policies/bellows_policy.h (version 6)."""
    _fields_ = [("lr", _D), ("momentum", _D), ("alpha", _D), ("h", ctypes.c_int),
                ("fragments", ctypes.c_int), ("tau", ctypes.c_int), ("bits", ctypes.c_int),
                ("eager", ctypes.c_int)]


# each ctypes struct and the C type it mirrors
_MIRRORS = (("BellowsPolicyObs", "_Obs"), ("BellowsHostContext", "_Ctx"),
            ("BellowsPolicyOuter", "_Outer"))


class PolicyError(Exception):
    """A spec the library refuses, or a policy that failed (bellows' message)."""

    def __init__(self, msg, status):
        super().__init__(msg)
        self.status = status


_lib = None
_NONE = ctypes.c_size_t(-1).value


def check_struct(lib, ctype, struct):
    """Raises PolicyError (status 1) unless ctypes struct has C type ctype's size and each of its
    fields the C field's offset, as the library reports them (bellows_host_layout)."""
    size = lib.bellows_host_layout(ctype.encode(), None)
    if size == _NONE:
        raise PolicyError("libbellows_policy.so does not know the struct %s" % ctype, 1)
    for name, _ in struct._fields_:
        at = lib.bellows_host_layout(ctype.encode(), name.encode())
        mine = getattr(struct, name).offset
        if at != mine:
            raise PolicyError("bellows_host.py's %s.%s is at byte %d, the library's at %s: "
                              "bellows_host.py and libbellows_policy.so were built from "
                              "different headers" % (ctype, name, mine,
                                                     "none" if at == _NONE else at), 1)
    if size != ctypes.sizeof(struct):
        raise PolicyError("bellows_host.py's %s is %d bytes, the library's %d: bellows_host.py "
                          "and libbellows_policy.so were built from different headers"
                          % (ctype, ctypes.sizeof(struct), size), 1)


def _check_library(lib, path):
    """The library's versions and the layout of every struct mirrored here."""
    try:
        api = lib.bellows_host_api()
        lib.bellows_host_layout.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        lib.bellows_host_layout.restype = ctypes.c_size_t
        version = lib.bellows_host_policy_version()
    except AttributeError:
        raise PolicyError("%s is older than bellows_host.py (no bellows_host_layout); rebuild "
                          "bellows" % path, 1)
    if api < HOST_API or version != POLICY_VERSION:
        raise PolicyError("%s: host API %d, policy header version %d; bellows_host.py mirrors "
                          "API %d and version %d: use the bellows_host.py of the same build"
                          % (path, api, version, HOST_API, POLICY_VERSION), 1)
    for ctype, mirror in _MIRRORS:
        check_struct(lib, ctype, globals()[mirror])


def library(path=None):
    """Loads libbellows_policy.so once (path, $BELLOWS_POLICY_LIB, or REPO/build/)."""
    global _lib
    if _lib is not None:
        return _lib
    path = path or os.environ.get("BELLOWS_POLICY_LIB") or \
        os.path.join(REPO, "build", "libbellows_policy.so")
    if not os.path.exists(path):
        raise PolicyError("libbellows_policy.so not found at %s (build bellows, or set "
                          "BELLOWS_POLICY_LIB)" % path, 2)
    # a Python policy file imports bellows_policy from this process's own path
    pydir = os.path.join(REPO, "policies", "python")
    import sys
    if pydir not in sys.path:
        sys.path.insert(0, pydir)
    lib = ctypes.CDLL(path)  # CDLL releases the GIL during calls: a Python policy takes it
    _check_library(lib, path)
    lib.bellows_host_create.argtypes = [ctypes.c_char_p, ctypes.POINTER(_Ctx),
                                        ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p,
                                        ctypes.c_size_t]
    lib.bellows_host_step.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Obs), _PD,
                                      ctypes.POINTER(ctypes.c_int),
                                      ctypes.POINTER(ctypes.c_int),
                                      ctypes.POINTER(ctypes.c_int), ctypes.c_char_p,
                                      ctypes.c_size_t]
    lib.bellows_host_mode.argtypes = [ctypes.c_void_p]
    lib.bellows_host_needs.argtypes = [ctypes.c_void_p]
    lib.bellows_host_needs.restype = ctypes.c_uint
    lib.bellows_host_spec.argtypes = [ctypes.c_void_p]
    lib.bellows_host_spec.restype = ctypes.c_char_p
    lib.bellows_host_describe.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.bellows_host_free.argtypes = [ctypes.c_void_p]
    lib.bellows_host_outer.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Outer)]
    _lib = lib
    return lib


class Observation:
    """What the policy sees at one step (bellows_policy.h's BellowsPolicyObs): give what the
    training has; the rest is absent (its `have` bit clear)."""

    def __init__(self, step, epoch, lr, loss, grad_norm_mean, grad_norm_rank0=None,
                 epoch_start=False, epoch_end=False, lr_decayed=False, epoch_norm_mean=None,
                 epoch_norm_rank0=None, averaged=False, param_variance=None,
                 bytes_per_worker=0.0, eval_accuracy=None, eval_loss=None, eval_step=-1):
        self.__dict__.update(locals())
        del self.__dict__["self"]


class Outer:
    """A periodic policy's outer step (bellows_policy.h's BellowsPolicyOuter): DiLoCo's outer
    optimizer (Nesterov lr and momentum) every h inner steps; Streaming DiLoCo's fragments, tau,
    bits and alpha; eager 1 for eager updates."""

    def __init__(self, o):
        for name, _ in _Outer._fields_:
            setattr(self, name, getattr(o, name))


class Decision:
    def __init__(self, level, batch, average, period):
        self.level, self.batch, self.average, self.period = level, batch, average, period


def _arr(values):
    return (ctypes.c_double * len(values))(*[float(v) for v in values])


def _layer_arr(name, values, n):
    """values as n doubles for C, which reads one per layer: a list of another length is the
    caller's error (PolicyError, status 2), not a read past its end."""
    if len(values) != n:
        raise PolicyError("Observation.%s: %d values, expected %d (one per layer)"
                          % (name, len(values), n), 2)
    return _arr(values)


class HostPolicy:
    """One bellows policy, created from its spec for this training's layers."""

    def __init__(self, spec, layers, workers, epochs, batch, steps_per_epoch, lr0,
                 compressor="none", compressor_level=0.0, compressor_spec=None,
                 decay_epochs=(), lib=None):
        self.lib = library(lib)
        self.n = len(layers)
        names = (ctypes.c_char_p * self.n)(*[str(nm).encode() for nm, _, _ in layers])
        rows = (ctypes.c_int * self.n)(*[int(r) for _, r, _ in layers])
        cols = (ctypes.c_int * self.n)(*[int(c) for _, _, c in layers])
        decays = (ctypes.c_int * max(1, len(decay_epochs)))(*decay_epochs)
        self._keep = (names, rows, cols, decays)
        ctx = _Ctx(self.n, names, rows, cols, int(workers), int(epochs), int(batch),
                   int(steps_per_epoch), float(lr0), len(decay_epochs), decays,
                   compressor.encode(), float(compressor_level),
                   (compressor_spec or compressor).encode())
        err = ctypes.create_string_buffer(512)
        handle = ctypes.c_void_p()
        rc = self.lib.bellows_host_create(spec.encode(), ctypes.byref(ctx),
                                          ctypes.byref(handle), err, len(err))
        if rc:
            raise PolicyError(err.value.decode(errors="replace"), rc)
        self.h = handle
        self.mode = self.lib.bellows_host_mode(self.h)
        self.needs = self.lib.bellows_host_needs(self.h)
        self.spec = self.lib.bellows_host_spec(self.h).decode()
        outer = _Outer()
        self.outer = Outer(outer) if self.lib.bellows_host_outer(self.h, ctypes.byref(outer)) \
            else None
        self.level = (ctypes.c_double * self.n)()

    def step(self, o):
        """Observe, then decide (the simulator's policy_step); returns the Decision."""
        obs = _Obs(step=o.step, epoch=o.epoch, epoch_start=int(o.epoch_start),
                   epoch_end=int(o.epoch_end), lr_decayed=int(o.lr_decayed), lr=o.lr,
                   loss=o.loss, averaged=int(o.averaged), sim_time_s=0.0,
                   bytes_per_worker=float(o.bytes_per_worker))
        keep = []
        mean = _layer_arr("grad_norm_mean", o.grad_norm_mean, self.n)
        rank0 = _layer_arr("grad_norm_rank0", o.grad_norm_rank0, self.n) \
            if o.grad_norm_rank0 is not None else mean
        keep += [mean, rank0]
        obs.grad_norm_mean, obs.grad_norm_rank0 = mean, rank0
        have = HAS_GRAD_NORMS | (HAS_RANK0_NORMS if o.grad_norm_rank0 is not None else 0)
        if o.epoch_end and o.epoch_norm_mean is not None:
            em = _layer_arr("epoch_norm_mean", o.epoch_norm_mean, self.n)
            er = _layer_arr("epoch_norm_rank0", o.epoch_norm_rank0, self.n) \
                if o.epoch_norm_rank0 is not None else em
            keep += [em, er]
            obs.epoch_norm_mean, obs.epoch_norm_rank0 = em, er
            have |= HAS_EPOCH_NORMS
        obs.param_variance = 0.0
        if o.averaged and o.param_variance is not None:
            obs.param_variance = float(o.param_variance)
            have |= HAS_VARIANCE
        if o.eval_accuracy is not None:
            obs.eval_accuracy = float(o.eval_accuracy)
            obs.eval_loss = float(o.eval_loss) if o.eval_loss is not None else math.nan
            obs.eval_step, obs.eval_time_s = int(o.eval_step), 0.0
            have |= HAS_EVAL
        obs.have = have
        b, a, p = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        err = ctypes.create_string_buffer(512)
        rc = self.lib.bellows_host_step(self.h, ctypes.byref(obs), self.level, ctypes.byref(b),
                                        ctypes.byref(a), ctypes.byref(p), err, len(err))
        if rc:
            raise PolicyError(err.value.decode(errors="replace"), rc)
        return Decision(list(self.level), b.value, a.value, p.value)

    def describe(self):
        buf = ctypes.create_string_buffer(256)
        self.lib.bellows_host_describe(self.h, buf, len(buf))
        return buf.value.decode(errors="replace")

    def close(self):
        if getattr(self, "h", None):
            self.lib.bellows_host_free(self.h)
            self.h = None

    def __del__(self):
        self.close()


def read_trace(path):
    """A trace's header, step records and evaluations (JSON Lines, gzip or not)."""
    import gzip
    import json
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        lines = [json.loads(x) for x in f if x.strip()]
    steps = [r for r in lines[1:] if r.get("type") == "step"]
    evals = [r for r in lines[1:] if r.get("type") == "eval"]
    return lines[0], steps, evals


def trace_observations(steps, evals):
    """The observations a recorded trace shows a policy, one per step, by the rules of
    tests/host_feed.c (a replay's: epochs end where the trace's do, an lr at least halved since
    the previous epoch's start counts as a decay, the last evaluation so far)."""
    first_lr, k = 0.0, 0
    for s, ts in enumerate(steps):
        start = s == 0 or steps[s - 1]["epoch"] != ts["epoch"]
        end = bool(ts.get("epoch_end")) or s + 1 == len(steps) or \
            steps[s + 1]["epoch"] != ts["epoch"]
        decayed = start and ts["epoch"] > 0 and ts["lr"] <= 0.5 * first_lr
        if start:
            first_lr = ts["lr"]
        while k < len(evals) and evals[k]["step"] <= s:
            k += 1
        ev = evals[k - 1] if k else None
        yield Observation(step=s, epoch=ts["epoch"], lr=ts["lr"], loss=ts["loss"],
                          grad_norm_mean=ts["grad_norms"],
                          grad_norm_rank0=ts.get("grad_norms_rank0"), epoch_start=start,
                          epoch_end=end, lr_decayed=decayed,
                          epoch_norm_mean=ts.get("epoch_norms"),
                          epoch_norm_rank0=ts.get("epoch_norms_rank0"),
                          eval_accuracy=ev["test_accuracy"] if ev else None,
                          eval_loss=ev.get("test_loss") if ev else None,
                          eval_step=ev["step"] if ev else -1)


def _feed(argv):
    """python3 bellows_host.py feed TRACE SPEC COMPRESSOR LEVEL: the lines of tests/host_feed.c,
    through the library."""
    import sys
    path, spec, comp, level = argv
    h, steps, evals = read_trace(path)
    spe = sum(1 for s in steps if s["epoch"] == 0)
    lr0 = h.get("lr", {}).get("base") or steps[0]["lr"]
    layers = [(x["name"], x["rows"], x["cols"]) for x in h["layers"]]
    try:
        pol = HostPolicy(spec, layers, h["workers"], steps[-1]["epoch"] + 1,
                         h["workers"] * h["batch"], spe, lr0, comp, float(level))
        out = []
        for o in trace_observations(steps, evals):
            d = pol.step(o)
            out.append("%d %s %d %d %d %s" % (o.step, " ".join("%.17g" % x for x in d.level),
                                              d.batch, d.average, d.period, pol.describe()))
    except PolicyError as e:
        sys.stderr.write("bellows_host: %s\n" % e)
        return e.status
    sys.stdout.write("".join(x + "\n" for x in out))
    return 0


if __name__ == "__main__":
    import sys
    if len(sys.argv) == 6 and sys.argv[1] == "feed":
        sys.exit(_feed(sys.argv[2:]))
    sys.stderr.write("usage: bellows_host.py feed TRACE SPEC COMPRESSOR LEVEL\n")
    sys.exit(2)
