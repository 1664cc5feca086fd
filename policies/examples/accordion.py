"""accordion.py: the built-in `accordion` policy (policies/accordion.c) in Python, line for line:
its decisions, bytes and steps.csv equal the built-in's bit for bit (tests/test_python_policies.sh
runs both). Accordion (Agarwal et al., MLSys 2021; github.com/uw-mad-dash/Accordion,
auto_scale.py and main.py) detects critical learning regimes from how much each layer's
gradient norm changed over `interval` epochs, and compresses those layers less (or, with
mode=batch, uses the small batch). policies/accordion.c cites the paper and the authors' code
for every rule and constant; the comments here say only where Python must take care to compute
the same doubles (sums in the C order, no NumPy reductions, whose order differs).
    bellows run --compressor powersgd --policy ./accordion.py:interval=2
"""
import math

import bellows_policy as bp

COMPRESSION, BATCH = 0, 1
ALL, RANK0 = 0, 1

# The authors' run, for 300 epochs (policies/accordion.c)
PAPER_EPOCHS = 300.0
PAPER_INTERVAL = 10
PAPER_ETA = 0.5
PAPER_SWITCH = 20
PAPER_WARMUP = 5
PAPER_DECAY_1 = 152
PAPER_DECAY_2 = 252
PAPER_DECAY = 0.1
PAPER_TOPK = "topk:ef=0,divide=0,index=int64,count=trunc"
PAPER_POWERSGD = "powersgd:ef=1,rank_change=reset"
PAPER_BATCH_COMP = "none"


def paper_epochs(e300, epochs, lo):
    """round(e300 x epochs / 300), at least lo: one of the authors' epoch counts."""
    e = int(math.floor(e300 * epochs / PAPER_EPOCHS + 0.5))
    return lo if e < lo else e


class Accordion(bp.Policy):
    name = "accordion"
    help = ("compress less (or use a smaller batch) in critical regimes, detected per layer from "
            "epoch gradient norms")
    source = ("Agarwal et al., Accordion, MLSys 2021; github.com/uw-mad-dash/Accordion "
              "(auto_scale.py, main.py); in Python: policies/examples/accordion.py")
    mode = bp.GRADIENT
    needs_grad_norms = True
    price_blind = True  # gradient norms and lr decays only, as the built-in
    needs = bp.HAS_EPOCH_NORMS
    options = [
        bp.Option("critical", bp.OPT_DOUBLE, None, 0, 1e9,
                  help="level in critical regimes (low compression); default powersgd 2, topk "
                       "0.99 (the authors' ResNet-18 runs); mode=batch: global batch, default "
                       "--batch"),
        bp.Option("normal", bp.OPT_DOUBLE, None, 0, 1e9,
                  help="level otherwise (high compression); default powersgd 1, topk 0.1; "
                       "mode=batch: global batch, default 8 x --batch"),
        bp.Option("eta", bp.OPT_DOUBLE, "0.5", 0, 1e6,
                  help="a relative change of the epoch norm >= eta means critical (the authors' "
                       "code: 0.5)"),
        bp.Option("interval", bp.OPT_INT, None, 1, 1e6,
                  help="epochs between checks; default 2 (suits short runs); the authors' code: "
                       "10 for CNNs, 5 for LSTMs (paper=1: 10 of 300 epochs)"),
        bp.Option("mode", bp.OPT_CHOICE, "compression", choices=("compression", "batch"),
                  help="adapt the compression level per layer, or the global batch size"),
        bp.Option("decider", bp.OPT_CHOICE, None, choices=("all", "rank0"),
                  help="whose local norms decide: all (default: the mean over workers), or rank "
                       "0's only (the authors' code, paper=1)"),
        bp.Option("switch", bp.OPT_INT, None, 1, 1e6,
                  help="mode=batch: a fixed schedule instead of the online rule, the large batch "
                       "from epoch E on; default: the online rule; the authors' batch runs: 20 "
                       "of 300 epochs (paper=1)"),
        bp.Option("paper", bp.OPT_INT, "0", 0, 1,
                  help="1: the authors' code (uw-mad-dash/Accordion): decider=rank0, "
                       "interval=10, eta=0.5, switch=20 (mode=batch), epochs as of 300 scaled to "
                       "--epochs; and the run must have theirs: --overlap tensor --lr-scale "
                       "workers --warmup-epochs 5 --warmup-shape epoch --lr-schedule step "
                       "--lr-decay-epochs 152,252 --lr-decay-factor 0.1 (scaled), --compressor "
                       + PAPER_TOPK + " or " + PAPER_POWERSGD + " (mode=batch: none)"),
    ]

    def paper_options(self, ctx, opts):
        """paper=1: the options it sets, checked against any given with another value."""
        interval = paper_epochs(PAPER_INTERVAL, ctx.epochs, 1)
        sw = paper_epochs(PAPER_SWITCH, ctx.epochs, 1)
        fixed = [
            (opts["decider"] is not None and opts["decider"] != "rank0", "decider", None),
            (opts["interval"] is not None and opts["interval"] != interval, "interval", interval),
            (opts["eta"] != PAPER_ETA, "eta", PAPER_ETA),
            (opts["switch"] is not None and opts["switch"] != sw, "switch", sw),
        ]
        for differs, key, want in fixed:
            if differs:
                raise bp.UsageError(
                    "paper=1 sets %s=%s (the authors' code, for %d epochs); drop %s= or paper=1"
                    % (key, "rank0" if want is None else "%g" % want, ctx.epochs, key))
        self.decider = RANK0
        self.interval = interval
        self.batch_switch = sw if self.adapt == BATCH else -1

    def paper_run(self, ctx):
        """paper=1: the run's own settings must be the authors'."""
        E = ctx.epochs
        warm = paper_epochs(PAPER_WARMUP, E, 1)
        d1, d2 = paper_epochs(PAPER_DECAY_1, E, 1), paper_epochs(PAPER_DECAY_2, E, 1)
        if d2 <= d1:
            raise bp.UsageError(
                "paper=1: the authors' two lr decays (epochs %d and %d of %g) do not fit into %d "
                "epochs; give --epochs 2 or more" % (PAPER_DECAY_1, PAPER_DECAY_2, PAPER_EPOCHS, E))
        comp = (PAPER_BATCH_COMP if self.adapt == BATCH
                else {"topk": PAPER_TOPK, "powersgd": PAPER_POWERSGD}.get(ctx.compressor))
        if comp is None:
            raise bp.UsageError(
                "paper=1: the authors' code compresses with PowerSGD or TopK, not '%s'; give "
                "--compressor %s or %s" % (ctx.compressor, PAPER_POWERSGD, PAPER_TOPK))
        add = []
        if ctx.compressor_spec != comp:
            add.append("--compressor " + comp)
        if ctx.overlap != bp.OVERLAP_TENSOR:
            add.append("--overlap tensor")
        if ctx.lr_known:  # a replay's rate is the trace's
            if ctx.lr_peak_scale != ctx.workers:
                add.append("--lr-scale workers")
            if ctx.warmup_epochs != warm or ctx.warmup_shape != bp.WARMUP_EPOCH:
                add.append("--warmup-epochs %d --warmup-shape epoch" % warm)
            if (ctx.n_decays != 2 or ctx.decay_epochs[0] != d1 or ctx.decay_epochs[1] != d2
                    or abs(ctx.decay_factor - PAPER_DECAY) > 1e-12):
                add.append("--lr-schedule step --lr-decay-epochs %d,%d --lr-decay-factor %g"
                           % (d1, d2, PAPER_DECAY))
        if add:
            raise bp.UsageError("paper=1 needs the authors' run settings (uw-mad-dash/Accordion, "
                                "scaled to %d epochs); add: %s" % (E, " ".join(add)))

    def batch_value(self, ctx, key, v):
        if v < 1 or v != math.floor(v) or v > 1e9 or math.fmod(v, ctx.workers) != 0:
            raise bp.UsageError("%s=%g: mode=batch takes a global batch size, a positive "
                                "multiple of the %d workers" % (key, v, ctx.workers))

    def init(self, ctx, opts):
        self.adapt = BATCH if opts["mode"] == "batch" else COMPRESSION
        self.decider = RANK0 if opts["decider"] == "rank0" else ALL
        self.eta = opts["eta"]
        self.interval = opts["interval"] if opts["interval"] is not None else 2
        self.batch_switch = opts["switch"] if opts["switch"] is not None else -1
        crit, norm = opts["critical"], opts["normal"]
        none = ctx.compressor == "none"
        if self.adapt != BATCH and opts["switch"] is not None:
            raise bp.UsageError("switch=%d: a fixed schedule of the batch size, for mode=batch "
                                "only" % self.batch_switch)
        if opts["paper"] != 0:
            self.paper_options(ctx, opts)
            self.paper_run(ctx)
        if self.adapt == COMPRESSION:
            if none:
                raise bp.UsageError("mode=compression needs a compressor and the run's is 'none' "
                                    "(choose one with --compressor, or use mode=batch)")
            defaults = {"powersgd": (2.0, 1.0), "topk": (0.99, 0.1)}.get(ctx.compressor)
            if defaults is None and (crit is None or norm is None):
                raise bp.UsageError("compressor '%s' has no default levels: give both critical= "
                                    "(the level in critical regimes) and normal= (the level "
                                    "otherwise)" % ctx.compressor)
            dc, dn = defaults or (0.0, 0.0)
            self.critical_value = crit if crit is not None else dc
            self.normal_value = norm if norm is not None else dn
            ctx.check_level(self.critical_value, "critical")
            ctx.check_level(self.normal_value, "normal")
        else:
            self.critical_value = crit if crit is not None else float(ctx.batch)
            self.normal_value = norm if norm is not None else 8.0 * ctx.batch
            self.batch_value(ctx, "critical", self.critical_value)
            self.batch_value(ctx, "normal", self.normal_value)
            self.batch_mode_level = 0 if none else ctx.compressor_level
        # one slot per layer, then slot n_layers for the whole model (mode=batch)
        slots = ctx.n_layers + 1
        self.critical = [True] * slots  # epoch 0 runs critical
        self.sum = [0.0] * slots  # norms summed over this epoch's steps so far
        self.steps = 0
        self.ref = [0.0] * slots  # per-step mean norm at the last check
        self.ref_epoch = -1

    def observe(self, obs):
        n = self.ctx.n_layers
        if obs.epoch_start:
            self.sum = [0.0] * (n + 1)
            self.steps = 0
            if obs.lr_decayed:  # the lr-decay rule: critical until the next check
                self.critical = [True] * (n + 1)
        norm = (obs.grad_norm_rank0 if self.decider == RANK0 else obs.grad_norm_mean).tolist()
        whole_sq = 0.0
        for l in range(n):  # one addition after another, as the C loop
            self.sum[l] += norm[l]
            whole_sq += norm[l] * norm[l]
        self.sum[n] += math.sqrt(whole_sq)
        self.steps += 1

    def check(self, epoch, epoch_norm):
        """At the last step of a check epoch: the regimes of the next epochs."""
        n = self.ctx.n_layers
        first = self.ref_epoch < 0 or epoch - self.ref_epoch != self.interval
        whole_sq = 0.0
        if epoch_norm is not None:
            epoch_norm = epoch_norm.tolist()
            for x in epoch_norm:
                whole_sq += x * x
        for k in range(n + 1):
            now = (self.sum[k] / self.steps if epoch_norm is None
                   else epoch_norm[k] if k < n else math.sqrt(whole_sq))
            if first:
                self.critical[k] = True
            else:
                ratio = abs(self.ref[k] - now) / self.ref[k] if self.ref[k] > 0 else math.inf
                self.critical[k] = not (ratio < self.eta)  # NaN counts as critical
            self.ref[k] = now
        self.ref_epoch = epoch

    def decide(self, obs, decision):
        ctx, n = self.ctx, self.ctx.n_layers
        if self.adapt == COMPRESSION:
            for l, layer in enumerate(ctx.layers):
                decision.level[l] = (0 if layer.ndim == 1 else self.critical_value
                                     if self.critical[l] else self.normal_value)
        else:
            for l, layer in enumerate(ctx.layers):
                decision.level[l] = self.batch_mode_level if layer.ndim == 2 else 0
        # decided at the end of this step's epoch, in effect from the next step
        if obs.epoch_end and self.steps > 0 and obs.epoch % self.interval == 0:
            self.check(obs.epoch, obs.epoch_norm_rank0 if self.decider == RANK0
                       else obs.epoch_norm_mean)
        # the fixed schedule: the next step's epoch decides
        if self.batch_switch >= 0:
            self.critical[n] = obs.epoch + (1 if obs.epoch_end else 0) < self.batch_switch
        # the batch is the next step's (this step's batch was drawn already)
        if self.adapt == BATCH:
            decision.batch = int(self.critical_value if self.critical[n] else self.normal_value)

    def describe(self):
        n = self.ctx.n_layers
        if self.adapt == BATCH:
            c = self.critical[n]
            return "%s batch=%d" % ("C" if c else "N",
                                    int(self.critical_value if c else self.normal_value))
        return "".join("." if layer.ndim == 1 else "C" if self.critical[l] else "N"
                       for l, layer in enumerate(self.ctx.layers))
