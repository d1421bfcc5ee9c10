"""Loss scaling for float16 training: the loss is multiplied by a scale before
differentiation so small gradients do not flush to zero, the gradients are
divided by it afterwards, and a step whose gradients overflowed is skipped.

`DynamicLossScale` is a pytree of arrays (jmp's API), so it passes through a
compiled step as state: a changing scale never recompiles. `GradScaler` is the
PyTorch-named eager wrapper around it.

Example:
    >>> import ember.numpy as enp
    >>> ls = DynamicLossScale(enp.asarray(2.0 ** 4), period=2)
    >>> float(ls.scale(enp.asarray(1.0)))
    16.0
    >>> float(ls.adjust(enp.asarray(False)).loss_scale)    # overflow: halve
    8.0
"""
from __future__ import annotations

import numpy as np

from .. import tree as _tree


def all_finite(tree):
    """A bool scalar: every element of every floating leaf is finite.

    Example:
        >>> import ember.numpy as enp
        >>> bool(all_finite({"a": enp.ones(2), "b": enp.asarray([1.0, float("inf")])}))
        False
    """
    import ember.numpy as enp
    leaves = [x for x in _tree.leaves(tree) if enp.issubdtype(x.dtype, enp.floating)]
    if not leaves:
        return enp.asarray(True)
    return enp.stack([enp.all(enp.isfinite(x)) for x in leaves]).all()


class DynamicLossScale:
    """A loss scale that halves (`factor`) when gradients overflow and doubles after
    `period` finite steps in a row, never below `min_loss_scale` (jmp semantics).

    Example:
        >>> import ember.numpy as enp
        >>> ls = DynamicLossScale(enp.asarray(8.0), period=1)
        >>> float(ls.adjust(enp.asarray(True)).loss_scale)
        16.0
    """

    def __init__(self, loss_scale, counter=None, period: int = 2000, factor: float = 2.0,
                 min_loss_scale: float = 1.0):
        import ember.numpy as enp
        self.loss_scale = enp.asarray(loss_scale, dtype="float32")
        self.counter = enp.zeros((), dtype="int32") if counter is None else enp.asarray(counter, dtype="int32")
        self.period, self.factor, self.min_loss_scale = int(period), float(factor), float(min_loss_scale)

    def scale(self, tree):
        """`tree` multiplied by the scale (each leaf in its own dtype)."""
        return _tree.map(lambda x: x * self.loss_scale.astype(x.dtype), tree)

    def unscale(self, tree):
        """`tree` divided by the scale, computed in float32 (the master-gradient dtype)."""
        return _tree.map(lambda x: (x.astype("float32") / self.loss_scale), tree)

    def adjust(self, grads_finite) -> "DynamicLossScale":
        """The scale for the next step given whether this step's gradients were finite."""
        import ember.numpy as enp
        grow = (self.counter + 1) >= self.period
        up = enp.where(grow, self.loss_scale * self.factor, self.loss_scale)
        down = enp.maximum(self.loss_scale / self.factor, self.min_loss_scale)
        new_scale = enp.where(grads_finite, up, down)
        new_counter = enp.where(grads_finite & ~grow, self.counter + 1, 0)
        return DynamicLossScale(new_scale, new_counter, self.period, self.factor, self.min_loss_scale)

    def __repr__(self):
        return f"DynamicLossScale(loss_scale={float(np.asarray(self.loss_scale)):g}, period={self.period})"


_tree.register_pytree_node(
    DynamicLossScale,
    lambda s: ((s.loss_scale, s.counter), (s.period, s.factor, s.min_loss_scale)),
    lambda aux, ch: DynamicLossScale(ch[0], ch[1], *aux))


def select_tree(pred, on_true, on_false):
    """Leafwise `where(pred, a, b)` over two trees of the same structure (skip a step)."""
    import ember.numpy as enp
    return _tree.map(lambda a, b: enp.where(pred, a, b), on_true, on_false)


class GradScaler:
    """PyTorch's `torch.amp.GradScaler` for ember's functional optimisers:

        scaled = scaler.scale(loss)                  # inside the function you differentiate
        grads = scaler.unscale(grads)                # divide by the scale (float32)
        params = scaler.step(optimizer, grads)       # skipped when grads are not finite
        scaler.update()                              # halve on overflow, grow after N good steps

    `nn.TrainStep(..., scaler=GradScaler())` does all four inside the compiled step.

    Example:
        >>> import ember, ember.numpy as enp
        >>> s = GradScaler(init_scale=4.0, growth_interval=1)
        >>> float(s.scale(enp.asarray(2.0))), s.get_scale()
        (8.0, 4.0)
    """

    def __init__(self, device: str = "cpu", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True):
        if abs(growth_factor * backoff_factor - 1.0) > 1e-12:
            raise ValueError(f"GradScaler: ember's dynamic scale grows and backs off by the same "
                             f"factor (growth_factor * backoff_factor must be 1, got "
                             f"{growth_factor} * {backoff_factor})")
        self.enabled = bool(enabled)
        self.state = DynamicLossScale(init_scale, period=growth_interval, factor=growth_factor)
        self._found_inf = None

    def get_scale(self) -> float:
        return float(np.asarray(self.state.loss_scale)) if self.enabled else 1.0

    def scale(self, loss):
        """The loss times the current scale."""
        return self.state.scale(loss) if self.enabled else loss

    def unscale(self, grads):
        """Gradients divided by the scale; remembers whether they were finite."""
        if not self.enabled:
            return grads
        grads = self.state.unscale(grads)
        self._found_inf = ~all_finite(grads)
        return grads

    def step(self, optimizer, grads):
        """`optimizer.step(grads)` unless the (unscaled) gradients overflowed; returns the
        parameters (unchanged when skipped)."""
        if self._found_inf is None:
            grads = self.unscale(grads)
        if self.enabled and bool(self._found_inf):
            return optimizer.params if hasattr(optimizer, "params") else None
        return optimizer.step(grads)

    def update(self) -> None:
        """Adjust the scale from the last unscaled gradients."""
        if not self.enabled or self._found_inf is None:
            return
        self.state = self.state.adjust(~self._found_inf)
        self._found_inf = None

    def state_dict(self) -> dict:
        return {"scale": self.get_scale(), "growth_factor": self.state.factor,
                "backoff_factor": 1.0 / self.state.factor, "growth_interval": self.state.period,
                "_growth_tracker": int(np.asarray(self.state.counter))}

    def load_state_dict(self, sd: dict) -> None:
        self.state = DynamicLossScale(sd["scale"], sd["_growth_tracker"], sd["growth_interval"],
                                      sd["growth_factor"])
