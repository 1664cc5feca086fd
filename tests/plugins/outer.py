"""outer.py: tests/plugins/outer.c in Python, through bellows_policy's outer step (Policy.outer,
version 6): it averages every `h` steps and asks for DiLoCo's outer step (lr 0.7, momentum 0.9),
so tests/test_islands.c can check it trains bit for bit as the built-in `diloco:H=h`; `bad=1`
asks for tau = h, which bellows refuses (the C plugins' check); bad=2 gives lr as a str, bad=3 a
key Outer lacks, both refused by bellows_policy._outer_tuple. h and tau come back as NumPy
integers, which an outer() computing them with NumPy returns (issue 49 item 31: accepted).
frags=4 asks for 4 fragments while averaging only at the period's first step: fragments 2-4 are
never exchanged, which the run must say (issue 49 item 16)."""
import numpy as np

import bellows_policy as bp


class Outer(bp.Policy):
    name = "outer-py"
    help = "DiLoCo through the Python interface's outer step"
    source = "Douillard et al., DiLoCo, arXiv 2311.08105"
    mode = bp.PERIODIC
    price_blind = True
    options = [bp.Option("h", bp.OPT_INT, 4, 1, 1e6, help="the steps between outer steps"),
               bp.Option("bad", bp.OPT_INT, 0, 0, 3, help="1-3: a bad outer step (refused)"),
               bp.Option("frags", bp.OPT_INT, 1, 1, 8,
                         help="fragments asked for, though it averages at the period's start")]

    def init(self, ctx, opts):
        self.h, self.bad, self.frags, self.step = opts["h"], opts["bad"], opts["frags"], 0

    def decide(self, obs, decision):
        self.step += 1
        decision.period = self.h
        decision.average = self.step % self.h == 0

    def outer(self):
        o = {"lr": 0.7, "momentum": 0.9, "h": np.int64(self.h),
             "tau": np.int32(self.h if self.bad == 1 else 0), "fragments": self.frags}
        if self.bad == 2:
            o["lr"] = "0.7"
        if self.bad == 3:
            o["beta"] = 0.5
        return o
