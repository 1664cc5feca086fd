"""halfway.py: halfway.c in Python. Dense for the first half of the epochs, then every matrix
layer at the compressor's default level.
    bellows run --compressor powersgd --policy ./halfway.py"""
import bellows_policy as bp


class Halfway(bp.Policy):
    name = "halfway"
    help = "dense for the first half of the epochs, then the compressor's default level"
    mode = bp.GRADIENT

    def decide(self, obs, decision):
        late = obs.epoch >= self.ctx.epochs // 2
        for l, layer in enumerate(self.ctx.layers):
            decision.level[l] = self.ctx.compressor_level if late and layer.ndim == 2 else 0
