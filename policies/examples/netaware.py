"""netaware.py: netaware.c in Python, a bellows policy file. It picks one PowerSGD rank for the
whole run from the cluster's bandwidth and latency: the largest rank r <= max whose step
communication stays within `fraction` of the step's compute time,
    t_comm(r) = 2 rounds (P, then Q) x ring allreduce of the rank-r factors plus the dense
                vectors: 2 (W-1)/W x bytes(r) / bandwidth + 2 (W-1) x latency
    bytes(r)  = 4 x (sum over matrices of r x (rows + cols)) + 4 x (sum over vectors of rows)
(W workers, fp32). If no rank fits, rank 1; if r = max fits, max. The compute time per step
is the option compute_s, or else the first observed step's compute (obs.compute_s). While the
bandwidth or the compute time is not known, it runs at `fallback` (default: the compressor's
default rank) and its state says "fallback"; it decides once, as soon as it can. Its decisions
are netaware.c's, bit for bit (tests/test_python_policies.sh).
    bellows run --compressor powersgd --policy ./netaware.py:fraction=0.5
"""
import bellows_policy as bp


class NetAware(bp.Policy):
    name = "netaware"
    help = ("one PowerSGD rank for the run: the largest whose communication fits in a fraction "
            "of the compute time, from the cluster's bandwidth and latency")
    source = "bellows example (policies/examples/netaware.py)"
    mode = bp.GRADIENT
    options = [
        bp.Option("fraction", bp.OPT_DOUBLE, "0.5", 1e-6, 1e6,
                  help="communication may take at most this fraction of the compute time"),
        bp.Option("max", bp.OPT_INT, "8", 1, 1024, help="highest rank to consider"),
        bp.Option("compute_s", bp.OPT_DOUBLE, "0", 0, 1e6,
                  help="compute seconds per step; 0: the first step's, as observed"),
        bp.Option("fallback", bp.OPT_INT, None, 1, 1024,
                  help="rank while bandwidth or compute time are unknown; default: the "
                       "compressor's default"),
    ]

    def init(self, ctx, opts):
        if ctx.compressor != "powersgd":
            raise bp.UsageError("needs --compressor powersgd (the run's is '%s')"
                                % ctx.compressor)
        self.fraction = opts["fraction"]
        self.max = opts["max"]
        self.compute_s = opts["compute_s"]
        self.fallback = (float(opts["fallback"]) if opts["fallback"] is not None
                         else ctx.compressor_level)
        self.rank = 0  # 0 until decided
        ctx.check_level(self.fallback, "fallback")
        ctx.check_level(self.max, "max")

    def comm_time(self, r):
        c = self.ctx
        nbytes, w = 0.0, float(c.workers)
        for layer in c.layers:
            nbytes += 4.0 * (r * (layer.rows + layer.cols) if layer.ndim == 2 else layer.rows)
        return 2 * (2 * (w - 1) / w * nbytes / c.bandwidth_Bps + 2 * (w - 1) * c.latency_s)

    def decide(self, obs, decision):
        c = self.ctx
        compute = (self.compute_s if self.compute_s > 0
                   else obs.compute_s if obs.have & bp.HAS_STEP_TIMES else 0)
        if not self.rank and c.bandwidth_Bps > 0 and compute > 0:
            self.rank = 1
            for r in range(2, self.max + 1):
                if self.comm_time(r) <= self.fraction * compute:
                    self.rank = r
        for l, layer in enumerate(c.layers):
            decision.level[l] = (self.rank or self.fallback) if layer.ndim == 2 else 0

    def describe(self):
        return "rank=%d" % self.rank if self.rank else "rank=%g fallback" % self.fallback
