"""plateau.py: plateau.c in Python, a bellows policy file: compress harder once the test
accuracy plateaus. The run starts at level `soft` (default 0: dense); each new evaluation
(obs.eval_step changes) whose accuracy does not beat the best so far by min_gain counts as
stale, and after `patience` stale ones in a row every matrix layer goes to level `hard`
(default: the compressor's default level) for the rest of the run. When the observations hold
no evaluation (obs.have lacks HAS_EVAL), the signal is the epoch's mean training loss instead,
taken at each epoch's last step (an improvement is a fall of at least min_gain); the state says
which. Its decisions are plateau.c's, bit for bit (tests/test_python_policies.sh).
    bellows run --compressor powersgd --policy ./plateau.py:patience=2
"""
import bellows_policy as bp


class Plateau(bp.Policy):
    name = "plateau"
    help = "dense (or soft) until the test accuracy plateaus, then compress harder"
    source = "bellows example (policies/examples/plateau.py)"
    price_blind = True  # accuracy and loss only: the same decisions on any network
    options = [
        bp.Option("soft", bp.OPT_DOUBLE, "0", 0, 1e9, help="level until the plateau (0: dense)"),
        bp.Option("hard", bp.OPT_DOUBLE, None, 0, 1e9,
                  help="level after it; default: the compressor's default level"),
        bp.Option("patience", bp.OPT_INT, "2", 1, 1000,
                  help="stale evaluations (or epochs) in a row"),
        bp.Option("min_gain", bp.OPT_DOUBLE, "0.002", 0, 1,
                  help="an accuracy gain (or loss fall) below this is stale"),
    ]

    def init(self, ctx, opts):
        self.soft = opts["soft"]
        self.hard = opts["hard"] if opts["hard"] is not None else ctx.compressor_level
        self.patience = opts["patience"]
        self.min_gain = opts["min_gain"]
        self.best = -1e300
        self.stale = 0
        self.hard_now = False
        self.by_eval = False
        self.loss_sum, self.loss_steps = 0.0, 0
        self.last_eval_step = -1
        ctx.check_level(self.soft, "soft")
        ctx.check_level(self.hard, "hard")

    def signal(self, x):
        """One new value of the signal (higher is better)."""
        if x >= self.best + self.min_gain:
            self.best = x
            self.stale = 0
        else:
            self.stale += 1
            if self.stale >= self.patience:
                self.hard_now = True

    def observe(self, obs):
        if obs.have & bp.HAS_EVAL:
            self.by_eval = True
            if obs.eval_step != self.last_eval_step:
                self.signal(obs.eval_accuracy)
            self.last_eval_step = obs.eval_step
            return
        self.loss_sum += obs.loss
        self.loss_steps += 1
        if obs.epoch_end:
            self.signal(-self.loss_sum / self.loss_steps)
            self.loss_sum, self.loss_steps = 0.0, 0

    def decide(self, obs, decision):
        level = self.hard if self.hard_now else self.soft
        for l, layer in enumerate(self.ctx.layers):
            decision.level[l] = level if layer.ndim == 2 else 0

    def describe(self):
        return "%s stale=%d by=%s" % ("hard" if self.hard_now else "soft", self.stale,
                                      "accuracy" if self.by_eval else "loss")
