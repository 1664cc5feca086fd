"""Scheduling policies for bellows, written in Python.

This module is the Python side of policies/bellows_policy.h, and the one place its Python
interface is documented (``pydoc3 bellows_policy``, or ``bellows policies --python``). A policy is
one file that defines one subclass of ``Policy``; bellows runs it with

    bellows run --policy ./mypolicy.py[:key=value,...]      (also compare, sweep and replay)

through the CPython embedded in bellows. The class has the parts of the C interface
(BellowsPolicyOps): ``name``, ``help``, ``source``, ``mode``, ``options`` (with types, defaults
and ranges, which bellows checks before ``init``), ``init(ctx, opts)``, ``observe(obs)``,
``decide(obs, decision)``, ``describe()`` and, for a periodic policy whose averagings are DiLoCo's
outer steps, ``outer()`` (see ``Outer``). Each step bellows builds one ``Observation`` and
calls ``observe`` then ``decide`` once for all workers; ``decide`` writes ``decision.level[l]``
(gradient mode) or ``decision.average`` (periodic mode).

    import bellows_policy as bp

    class Halfway(bp.Policy):
        name = "halfway"
        help = "dense for the first half of the epochs, then the compressor's default level"

        def decide(self, obs, decision):
            late = obs.epoch >= self.ctx.epochs // 2
            for l, layer in enumerate(self.ctx.layers):
                decision.level[l] = self.ctx.compressor_level if late and layer.ndim == 2 else 0

Arrays (``obs.grad_norm_mean``, ``decision.level``, ...) are NumPy float64 arrays that view
bellows' own memory, without a copy: the observation's are read-only and valid during the call
(as the C pointers are; keep ``arr.copy()`` to remember values), ``decision.level`` is
writable. Assign into it (``decision.level[l] = 2``, ``decision.level[:] = 0``), never to it.

Errors: ``init`` raises ``UsageError("message")`` to refuse the options (exit 2, the message
after the flag and file); any other exception is reported on one line with the file, line and
function it came from: exit 2 before the run starts (loading, ``init`` and the first decision,
which bellows checks on an empty observation), exit 1 during it, with nothing written. A policy
stuck in a loop is stopped by Ctrl-C like any run (KeyboardInterrupt: exit 130).

Determinism: bellows fixes the interpreter's hash seed, so the same command gives the same
files; a policy must decide the same way on the same observations (no clocks, no unseeded
random numbers).

The fields below are checked against policies/bellows_policy.h by tests/check_policy_header.py
(every struct member and constant of the header is here, or listed in ``_HEADER`` or
``_C_ONLY`` with the reason), and bellows refuses a module whose fields differ from the ones
its embedded interpreter fills.
"""

import math
import numbers
import sys
import traceback

# ---- the header's constants (BELLOWS_X and BELLOWS_POLICY_X are X here) ----
VERSION = 6  # BELLOWS_POLICY_VERSION: the interface this module is; a class may set `version`
OLDEST_VERSION = 3  # BELLOWS_POLICY_OLDEST_VERSION
MAX_DECAYS = 16  # BELLOWS_POLICY_MAX_DECAYS: at most this many entries in ctx.decay_epochs
MAX_OPTS = 16  # BELLOWS_POLICY_MAX_OPTS: at most this many options

GRADIENT = 0  # mode: gradients reduced every step at the decided levels
PERIODIC = 1  # mode: local steps; parameters averaged when the decision says so

OPT_DOUBLE = 0  # Option type: a number in [lo, hi]; opts[key] is a float
OPT_INT = 1  # a whole number in [lo, hi]; opts[key] is an int
OPT_CHOICE = 2  # one of choices; opts[key] is the word

OVERLAP_NONE = 0  # ctx.overlap: the backward, then every collective
OVERLAP_DDP = 1  # PyTorch DDP's buckets, reduced while the backward goes on
OVERLAP_TENSOR = 2  # the backward, then one tensor's collectives after another
OVERLAP_LAYER = 3  # DDP's hand-over, and the next forward of a layer waits only for its update

WARMUP_STEP = 0  # ctx.warmup_shape: the warm-up's rate grows every step
WARMUP_EPOCH = 1  # once an epoch, one epoch late (the Accordion authors' code)

HAS_GRAD_NORMS = 1 << 0  # obs.have: grad_norm_mean holds the norms
HAS_RANK0_NORMS = 1 << 1  # grad_norm_rank0 is rank 0's own, not the mean
HAS_EPOCH_NORMS = 1 << 2  # epoch_norm_* (on epoch_end)
HAS_VARIANCE = 1 << 3  # param_variance (after an averaging)
HAS_STEP_TIMES = 1 << 4  # compute_s, compress_s, comm_s, wait_s
HAS_EVAL = 1 << 5  # eval_* (after the first evaluation)


class UsageError(Exception):
    """Raised by init (or ctx.check_level) to refuse this run's options: exit 2, the message
    after the flag and the file, as a C policy's init returning BELLOWS_POLICY_EUSAGE."""


def _documented(cls):
    """Makes FIELDS (name -> one line) the class's __slots__ and its docstring's field list."""
    width = max(len(k) for k in cls.FIELDS)
    lines = ["    %-*s  %s" % (width, k, v) for k, v in cls.FIELDS.items()]
    cls.__doc__ = (cls.__doc__ or "") + "\n\nFields:\n" + "\n".join(lines) + "\n"
    return cls


def _fields_repr(obj):
    parts = []
    for k in type(obj).FIELDS:
        v = getattr(obj, k, None)
        parts.append("%s=%r" % (k, v.tolist() if hasattr(v, "tolist") else v))
    return "%s(%s)" % (type(obj).__name__, ", ".join(parts))


@_documented
class Layer:
    """One layer of the model, or of a replayed trace's layer table (BellowsPolicyLayer)."""

    FIELDS = {"name": "the layer's name, as \"fc1.w\"", "rows": "rows", "cols": "columns",
              "ndim": "2: a matrix (compressible); 1: a vector (always reduced dense)"}
    __slots__ = tuple(FIELDS)

    def __init__(self, name, rows, cols, ndim):
        self.name, self.rows, self.cols, self.ndim = name, rows, cols, ndim

    def __repr__(self):
        return "Layer(name=%r, rows=%d, cols=%d, ndim=%d)" % (self.name, self.rows, self.cols,
                                                              self.ndim)


@_documented
class Context:
    """What a policy knows of the run when it starts, fixed for the whole run
    (BellowsPolicyContext). It is passed to init and kept as self.ctx."""

    FIELDS = {
        "n_layers": "the number of layers (>= 1, any number): len(layers)",
        "layers": "tuple of Layer (name, rows, cols, ndim), one per layer",
        "workers": "data-parallel workers (ranks)",
        "epochs": "epochs of the run",
        "batch": "global batch at the start (per worker: batch / workers)",
        "steps_per_epoch": "steps per epoch at that batch",
        "lr0": "base learning rate",
        "n_decays": "len(decay_epochs)",
        "decay_epochs": "tuple of the epochs at which a step schedule divides the lr, ascending",
        "compressor": "the run's compressor: \"none\", \"powersgd\", \"topk\", ...",
        "compressor_level": "that compressor's default level",
        "check_level": "check_level(level, what): raises UsageError (its message starting with "
                       "`what`, the option's name) if the run's compressor cannot take the "
                       "level > 0 (PowerSGD: an integer rank >= 1; TopK: a fraction in (0, 1]); "
                       "call it in init on every level you may decide; 0 (dense) is always valid",
        "bandwidth_Bps": "bottleneck bandwidth on a worker's path, bytes/s, as this rank sees "
                         "it; 0: not known (a --platform file before it is loaded): fall back",
        "latency_s": "latency on that path, s (0: not known)",
        "gpus_per_node": "workers that share a node (and its links)",
        "nodes": "nodes in the cluster",
        "compressor_spec": "the compressor with every option spelled out, defaults included "
                           "(\"topk:ef=1,divide=1,index=int32,count=ceil\")",
        "overlap": "OVERLAP_NONE, OVERLAP_DDP, OVERLAP_TENSOR or OVERLAP_LAYER (--overlap)",
        "lr_known": "1 when the run follows its lr flags; 0 in a replay, whose rate is the "
                    "trace's (the four fields below are then 0)",
        "lr_peak_scale": "the rate after the warm-up is lr0 x this (--lr-scale workers)",
        "warmup_epochs": "--warmup-epochs, 0: none",
        "warmup_shape": "WARMUP_STEP or WARMUP_EPOCH (--warmup-shape)",
        "decay_factor": "the step schedule's multiplier at each of decay_epochs",
    }
    __slots__ = tuple(FIELDS)
    __repr__ = _fields_repr


# the observation's per-step norms: zeros unless the policy declares needs_grad_norms
_NORM_FIELDS = ("grad_norm_rank0", "grad_norm_mean")
_norms_warned = []  # the field whose read was warned about (once a process)


@_documented
class Observation:
    """What a policy observes at step t, once for all workers (BellowsPolicyObs). Step t's own
    loss and local gradient norms are in, so a decision for step t may use them. A part whose
    HAS_* bit is clear in `have` is absent: its arrays are None or zeros, its numbers NaN
    (eval_step -1). Arrays are read-only float64 views of bellows' memory, valid during the
    call."""

    FIELDS = {
        "step": "0-based, over the whole run",
        "epoch": "0-based",
        "epoch_start": "True on the first step of an epoch",
        "epoch_end": "True on the last step of an epoch",
        "lr_decayed": "True on the first step of an epoch at which the step schedule lowered "
                      "the lr",
        "lr": "this step's learning rate (after warm-up and schedule)",
        "loss": "this step's training loss, mean over workers",
        "grad_norm_rank0": "array [n_layers]: L2 norm of rank 0's local uncompressed gradient "
                           "(needs_grad_norms = True; else zeros)",
        "grad_norm_mean": "array [n_layers]: the mean over workers of those norms",
        "averaged": "periodic: True if parameters were averaged after the previous step",
        "param_variance": "mean_i ||x_i - xbar||^2 measured at that averaging, else 0",
        "sim_time_s": "simulated seconds since the start",
        "bytes_per_worker": "bytes rank 0 has put on the wire so far",
        "epoch_norm_rank0": "on epoch_end (else None), array [n_layers]: the norm of the "
                            "epoch's mean local uncompressed gradient, ||(1/T) sum_t g_t||, "
                            "rank 0's (Accordion's signal)",
        "epoch_norm_mean": "on epoch_end (else None): the same, the mean over workers",
        "have": "HAS_* bits: which optional parts this observation holds",
        "compute_s": "the previous step's simulated compute seconds on rank 0 (NaN before the "
                     "first step: HAS_STEP_TIMES clear)",
        "compress_s": "its compression seconds (encode and decode)",
        "comm_s": "its communication seconds",
        "wait_s": "its seconds waiting for slower workers",
        "eval_accuracy": "the last evaluation's test accuracy in [0, 1] (NaN before the first: "
                         "HAS_EVAL clear; in a replay, the trace's)",
        "eval_loss": "its test loss",
        "eval_step": "the step it was taken at (-1 before the first)",
        "eval_time_s": "the simulated time it was taken at",
    }
    # the norms are properties (below) over slots of their own
    __slots__ = tuple("_" + k if k in _NORM_FIELDS else k for k in FIELDS)
    __repr__ = _fields_repr


def _norms_property(name):
    """obs.NAME, with a warning on stderr, once, the first time a policy reads it while bellows
    computes no norms for it (HAS_GRAD_NORMS clear: its class lacks needs_grad_norms = True)."""
    slot = "_" + name

    def get(self):
        if not (self.have & HAS_GRAD_NORMS) and not _norms_warned:
            _norms_warned.append(name)
            sys.stderr.write(
                "bellows: warning: the Python policy reads obs.%s, which bellows computes only "
                "for a policy whose class sets needs_grad_norms = True (in a training run it "
                "holds zeros)\n" % name)
        return getattr(self, slot)

    def put(self, value):
        setattr(self, slot, value)

    return property(get, put, doc=Observation.FIELDS[name])


for _name in _NORM_FIELDS:
    setattr(Observation, _name, _norms_property(_name))


@_documented
class Decision:
    """What a policy decides at each step (BellowsPolicyDecision). bellows pre-fills it (every
    level 0, batch = ctx.batch, average False, period 1 in periodic mode) and checks it after
    decide. Gradient mode: level[] and batch; average and period must stay 0. Periodic mode:
    average and period; level[] must stay 0, batch may change."""

    FIELDS = {
        "level": "writable array [n_layers] of compression levels, meaningful to the compressor "
                 "(PowerSGD rank, TopK fraction); 0 is dense fp32; finite, >= 0, and 0 for "
                 "vectors (ndim 1); assign into it, not to it",
        "batch": "int: the global batch from the next step on, a multiple of workers; the "
                 "driver scales the lr linearly with it (a replay refuses any change)",
        "average": "periodic: True (or 1) to average the parameters after this step",
        "period": "periodic: int, the current averaging period in steps, >= 1 (reported)",
    }
    __slots__ = ("_level", "batch", "average", "period")
    level = property(lambda self: self._level, doc=FIELDS["level"])
    __repr__ = _fields_repr


@_documented
class Outer:
    """A periodic policy's outer step (BellowsPolicyOuter), the driver's rule: ``outer(self)``
    returns None (the averagings are plain) or a dict with these keys, asked once after init.
    DiLoCo (Douillard et al., arXiv 2311.08105): at each averaging the replicas' mean outer
    gradient, theta_global - theta_i, takes one Nesterov step on theta_global, from which every
    replica restarts. Streaming DiLoCo (arXiv 2501.18512) when fragments > 1, bits < 32 or
    tau > 0; eager 1: Kale et al.'s eager updates (arXiv 2502.12996). lr and h are required; a
    key left out takes DEFAULTS' value. bellows checks the values against the ranges below (the
    C plugins' check) and refuses a bad one before the run (exit 2, naming the file and key)."""

    FIELDS = {
        "lr": "the outer learning rate, > 0 (DiLoCo's paper: 0.7)",
        "momentum": "Nesterov momentum, 0 to < 1 (DiLoCo's paper: 0.9)",
        "alpha": "0 to 1: a late fragment's outer step lands as alpha local + (1 - alpha) global",
        "h": "int >= 1: the steps between outer steps; the policy averages at exactly those",
        "fragments": "int, 1 to h and at most the model's layers: contiguous fragments, fragment "
                     "p exchanged at the steps c (from 1) with c >= h and c % h == p h / fragments",
        "tau": "int, 0 to h - 1: the steps between an exchange's start and its outer step",
        "bits": "int, 1 to 16, or 32 (none): the outer gradient's quantisation",
        "eager": "0 or 1: eager updates (with fragments 1, bits 32, tau 0)",
    }
    DEFAULTS = {"momentum": 0.0, "alpha": 0.0, "fragments": 1, "tau": 0, "bits": 32, "eager": 0}
    __slots__ = ()


class Option:
    """One option of a policy, key=value in its spec (BellowsPolicyOpt): key ([a-z0-9_-]+,
    shorter than 32), type (OPT_DOUBLE, OPT_INT or OPT_CHOICE), default (its text or number;
    None: no default, say so in help, and opts[key] is None unless given), lo and hi (DOUBLE and
    INT: the inclusive range), choices (CHOICE: the words, as a sequence or "a|b") and help (one
    line for `bellows policies`). bellows parses and checks the values before init."""

    FIELDS = {"key": "the option's name", "type": "OPT_DOUBLE, OPT_INT or OPT_CHOICE",
              "default": "its default as text or a number; None: none",
              "lo": "DOUBLE and INT: lowest value", "hi": "DOUBLE and INT: highest value",
              "choices": "CHOICE: the words", "help": "one line"}
    __slots__ = tuple(FIELDS)

    def __init__(self, key, type, default=None, lo=0.0, hi=0.0, choices=None, help=""):
        self.key, self.type, self.default = key, type, default
        self.lo, self.hi, self.choices, self.help = lo, hi, choices, help

    def __repr__(self):
        return "Option(%r, %r, %r, %r, %r, %r, %r)" % tuple(getattr(self, k) for k in self.FIELDS)


class Policy:
    """The base class of a policy (BellowsPolicyOps). Subclass it once per file; set the class
    attributes and define decide (init, observe and describe are optional). bellows makes one
    instance per run, sets self.ctx (a Context), then calls init(ctx, opts) once, and each step
    observe(obs) then decide(obs, decision). The instance is the policy's state."""

    FIELDS = {
        "version": "the VERSION the policy was written against (default: this module's); a "
                   "bellows older than it refuses the policy",
        "name": "[a-z0-9_-]+, shorter than 32 bytes: listings and messages",
        "help": "one line",
        "source": "the paper or repository the rule comes from; may be None",
        "mode": "GRADIENT or PERIODIC",
        "options": "a sequence of Option, at most MAX_OPTS",
        "reconstruction": "True: the rule was not published; this one is a reconstruction",
        "needs_grad_norms": "True: reads grad_norm_* or epoch_norm_*, which bellows computes "
                            "only for such policies (a pass over every gradient each step)",
        "needs": "HAS_* bits of the observation the policy cannot decide without: a replay of "
                 "a trace that never holds one is refused before anything runs",
        "price_blind": "True: the decisions never depend on the price (simulated time, step "
                       "times, bandwidth, latency), so a sweep trains the policy once and "
                       "prices every network from that training; False (the default): it may, "
                       "and is trained at every point",
        "init": "init(self, ctx, opts): reads the options (opts: key -> float, int, the chosen "
                "word, or None when unset without a default) and checks them against ctx; "
                "raise UsageError to refuse them",
        "observe": "observe(self, obs): sees every step's observation before decide",
        "decide": "decide(self, obs, decision): required; fills the decision for this step; "
                  "must be deterministic",
        "describe": "describe(self) -> str: a short state for steps.csv and plots "
                    "(\"level=2\"); default: the name",
        "outer": "outer(self) -> dict or None: periodic policies (version 6): the outer step "
                 "its averagings take (see Outer); asked once after init; None (the default): "
                 "plain averaging",
    }
    version = VERSION
    name = None
    help = None
    source = None
    mode = GRADIENT
    options = ()
    reconstruction = False
    needs_grad_norms = False
    needs = 0
    price_blind = False

    def init(self, ctx, opts):
        pass

    def observe(self, obs):
        pass

    def decide(self, obs, decision):
        raise NotImplementedError("a policy defines decide(self, obs, decision)")

    def describe(self):
        return self.name

    def outer(self):
        return None


Policy.__doc__ += "\n\nParts:\n" + "\n".join("    %-16s  %s" % kv for kv in Policy.FIELDS.items())

# The header's names, for tests/check_policy_header.py: each C struct's Python class, the
# members named differently in Python, and those only C has, with the reason.
_HEADER = {
    "BellowsPolicyContext": (Context, {}, {
        "core": "the core's handle; Python policies have no use for it"}),
    "BellowsPolicyObs": (Observation, {}, {}),
    "BellowsPolicyDecision": (Decision, {}, {}),
    "BellowsPolicyLayer": (Layer, {}, {}),
    "BellowsPolicyOpt": (Option, {"def": "default"}, {}),
    "BellowsPolicyValue": (None, {}, {
        "set": "opts[key] is None when not set", "num": "opts[key] is a float or an int",
        "choice": "opts[key] is the chosen word"}),
    "BellowsPolicy": (None, {}, {
        "state": "the instance is the state", "ctx": "self.ctx", "ops": "the class"}),
    "BellowsPolicyOps": (Policy, {"iVersion": "version", "opts": "options"}, {
        "n_opts": "len(options)", "state_size": "the instance is the state",
        "free_impl": "Python frees the instance"}),
    "BellowsPolicyOuter": (Outer, {}, {}),
}
_C_ONLY = {
    "BELLOWS_POLICY_PUBLIC_H": "the include guard",
    "BELLOWS_N": "len() in Python",
    "BELLOWS_POLICY_ENTRY": "a Python file defines a Policy subclass instead",
    "BELLOWS_POLICY_OK": "init returns normally", "BELLOWS_POLICY_EUSAGE": "raise UsageError",
    "BELLOWS_POLICY_ERUNTIME": "raise any other exception",
}


# ---- used by bellows itself (policies/python/), not by policies ----

_loaded = [0]
_code = {}  # absolute path -> ((mtime_ns, size), code): each file compiled once per process


def _load(path):
    """Runs the policy file as a fresh module and returns (module name, its Policy class). bellows
    creates a policy several times per run (its checks, then the run), so the file's code is
    compiled once and run anew each time: every instance starts from a fresh module."""
    import os
    import types
    _loaded[0] += 1
    modname = "_bellows_policy_file_%d" % _loaded[0]
    where = os.path.abspath(path)
    st = os.stat(where)
    key = (st.st_mtime_ns, st.st_size)
    if _code.get(where, (None,))[0] != key:
        with open(where, "rb") as f:
            _code[where] = (key, compile(f.read(), path, "exec", dont_inherit=True))
    module = types.ModuleType(modname)
    module.__file__ = path
    sys.modules[modname] = module
    try:
        exec(_code[where][1], module.__dict__)
    except BaseException:
        del sys.modules[modname]
        raise
    found = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, Policy)
             and v is not Policy and v.__module__ == modname]
    if len(found) != 1:
        del sys.modules[modname]
        raise UsageError("defines %s subclass of bellows_policy.Policy%s; a policy file defines "
                         "exactly one" % (len(found) or "no", found and " (%s)" % ", ".join(
                             c.__name__ for c in found) or ""))
    return modname, found[0]


def _unload(modname):
    sys.modules.pop(modname, None)


def _text(cls, attr, value, none_ok=False):
    if value is None and none_ok:
        return None
    if not isinstance(value, str):
        raise UsageError("%s.%s: expected a str, got %s" % (cls.__name__, attr,
                                                            type(value).__name__))
    return value


def _option_tuple(cls, i, o):
    where = "%s.options[%d]" % (cls.__name__, i)
    if not isinstance(o, Option):
        raise UsageError("%s: expected a bellows_policy.Option, got %s" % (where,
                                                                           type(o).__name__))
    if o.type not in (OPT_DOUBLE, OPT_INT, OPT_CHOICE):
        raise UsageError("%s: type must be OPT_DOUBLE, OPT_INT or OPT_CHOICE" % where)
    choices = o.choices
    if o.type == OPT_CHOICE and not isinstance(choices, str):
        choices = "|".join(choices or ())
    default = o.default
    if isinstance(default, bool) or not isinstance(default, (str, int, float, type(None))):
        raise UsageError("%s: default must be a str, a number or None" % where)
    if isinstance(default, float):
        default = repr(default)
    elif isinstance(default, int):
        default = str(default)
    try:
        lo, hi = float(o.lo), float(o.hi)
    except (TypeError, ValueError):
        raise UsageError("%s: lo and hi must be numbers" % where) from None
    return (_text(cls, "options[%d].key" % i, o.key), int(o.type), default, lo, hi,
            choices if o.type == OPT_CHOICE else None, _text(cls, "options[%d].help" % i, o.help))


def _describe_class(cls):
    """The class's BellowsPolicyOps fields: (version, name, help, source, mode, options,
    reconstruction, needs_grad_norms, needs, has_init, has_observe, has_describe,
    price_blind, has_outer); outer is read from version 6 on, as a C plugin's."""
    def whole(attr):
        v = getattr(cls, attr)
        if isinstance(v, float) or not isinstance(v, int):
            raise UsageError("%s.%s: expected an int, got %s" % (cls.__name__, attr,
                                                                type(v).__name__))
        return int(v)
    options = cls.options
    if isinstance(options, (str, bytes)) or not hasattr(options, "__len__"):
        raise UsageError("%s.options: expected a list of bellows_policy.Option" % cls.__name__)
    if len(options) > MAX_OPTS:
        raise UsageError("%s.options: %d options, at most %d" % (cls.__name__, len(options),
                                                                 MAX_OPTS))
    if cls.decide is Policy.decide:
        raise UsageError("%s defines no decide(self, obs, decision)" % cls.__name__)
    if cls.outer is not Policy.outer and whole("version") < 6:  # it would be ignored: say so
        raise UsageError("%s.outer: the outer step needs version 6 or later, but the class sets "
                         "version %d" % (cls.__name__, whole("version")))
    return (whole("version"), _text(cls, "name", cls.name), _text(cls, "help", cls.help),
            _text(cls, "source", cls.source, none_ok=True), whole("mode"),
            tuple(_option_tuple(cls, i, o) for i, o in enumerate(options)),
            int(bool(cls.reconstruction)), int(bool(cls.needs_grad_norms)), whole("needs"),
            cls.init is not Policy.init, cls.observe is not Policy.observe,
            cls.describe is not Policy.describe, int(bool(cls.price_blind)),
            cls.outer is not Policy.outer and whole("version") >= 6)


def _outer_tuple(cls, value):
    """What outer() returned, as (lr, momentum, alpha, h, fragments, tau, bits, eager), or None;
    UsageError naming the key if it is not a dict of Outer's keys and numbers. The ranges are
    bellows' to check (policies/policy.c, the same check as a C plugin's)."""
    if value is None:
        return None
    where = "%s.outer()" % cls.__name__
    if not isinstance(value, dict):
        raise UsageError("%s: expected a dict of Outer's keys or None, got %s"
                         % (where, type(value).__name__))
    for k in value:
        if k not in Outer.FIELDS:
            raise UsageError("%s: %r: not a key of bellows_policy.Outer (%s)"
                             % (where, k, ", ".join(Outer.FIELDS)))
    out = []
    for k in Outer.FIELDS:
        if k not in value and k not in Outer.DEFAULTS:
            raise UsageError("%s: %s: missing (required)" % (where, k))
        v = value.get(k, Outer.DEFAULTS.get(k))
        whole = k not in ("lr", "momentum", "alpha")
        # NumPy's integers and floats are numbers.Integral and numbers.Real (not int or float
        # subclasses, except float64): an outer() computing h with NumPy returns them
        if isinstance(v, bool) or not isinstance(v, numbers.Integral if whole else numbers.Real):
            raise UsageError("%s: %s: expected %s, got %r" % (where, k, "an int" if whole
                                                                else "a number", v))
        if whole and not -2**31 <= v < 2**31:
            raise UsageError("%s: %s: %d is out of range" % (where, k, v))
        out.append(int(v) if whole else float(v))
    return tuple(out)


def _doc():
    """This module's documentation as `pydoc3 bellows_policy` shows it (bellows policies --python)."""
    import pydoc
    return pydoc.render_doc(sys.modules[__name__], "%s", renderer=pydoc.plaintext)


def _error_text(exc, path):
    """One line for an exception raised by the policy at path: where and what. The place is the
    innermost frame in the policy's file (else the innermost at all): "line 12, in decide" or
    "helper.py line 3, in f"; a syntax error's is its own."""
    import os
    if isinstance(exc, UsageError):
        return str(exc)
    what = traceback.format_exception_only(type(exc), exc)[-1].strip()
    if isinstance(exc, SyntaxError) and exc.lineno:
        what = "%s: %s" % (type(exc).__name__, exc.msg)
        frames = [(exc.filename or path, exc.lineno, None)]
    else:
        frames = [(f.filename, f.lineno, f.name) for f in traceback.extract_tb(exc.__traceback__)]
    mine = [f for f in frames if os.path.abspath(f[0]) == os.path.abspath(path)]
    if not frames:
        return what
    file, line, func = (mine or frames)[-1]
    place = "line %d" % line if mine else "%s line %d" % (os.path.basename(file), line)
    return "%s%s: %s" % (place, ", in %s" % func if func and func != "<module>" else "", what)
