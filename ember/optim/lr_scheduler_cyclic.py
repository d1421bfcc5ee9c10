"""CyclicLR and PolynomialLR, PyTorch's schedulers of those names (their update rules and
defaults, momentum cycling included); exported from `ember.optim.lr_scheduler`.

Example:
    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.SGD([enp.asarray(1.0)], lr=1.0, momentum=0.9)
    >>> s = optim.lr_scheduler.CyclicLR(opt, base_lr=0.1, max_lr=1.0, step_size_up=2)
    >>> [round(s.get_last_lr()[0], 6) for _ in range(4) if s.step() or True]
    [0.55, 1.0, 0.55, 0.1]
"""
from __future__ import annotations

import functools
import math

from .lr_scheduler import LRScheduler, _check_optimizer, _is_function, _per_group

__all__ = ["CyclicLR", "PolynomialLR"]

_MODES = ("triangular", "triangular2", "exp_range")


def _triangular(x):
    return 1.0


def _triangular2(x):
    return 1 / (2.0 ** (x - 1))


def _exp_range(gamma, x):
    return gamma ** x


class CyclicLR(LRScheduler):
    """Cyclical learning rates (Smith 2017; PyTorch's `CyclicLR`, stepped per batch): lr
    rises from `base_lr` to `max_lr` over `step_size_up` steps and falls back over
    `step_size_down`, the amplitude scaled per `mode` ("triangular": constant,
    "triangular2": halved each cycle, "exp_range": `gamma**iteration`) or by `scale_fn`.
    With `cycle_momentum` (the default, as in PyTorch) momentum, or Adam's beta1, cycles
    inversely between `max_momentum` and `base_momentum`.

    Example:
        >>> import ember.numpy as enp
        >>> from ember.optim import Adam
        >>> opt = Adam([enp.asarray(1.0)], lr=1.0)
        >>> s = CyclicLR(opt, 0.01, 0.1, step_size_up=4, mode="triangular2")
        >>> opt.param_groups[0]["betas"][0]
        0.9
    """

    def __init__(self, optimizer, base_lr, max_lr, step_size_up: int = 2000,
                 step_size_down=None, mode: str = "triangular", gamma: float = 1.0,
                 scale_fn=None, scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum=0.8, max_momentum=0.9, last_epoch: int = -1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        if up <= 0 or down < 0:
            raise ValueError(f"CyclicLR: step_size_up must be positive and step_size_down "
                             f"non-negative, got {step_size_up} and {step_size_down}")
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in _MODES and scale_fn is None:
            raise ValueError(f"CyclicLR: mode must be one of {', '.join(map(repr, _MODES))} "
                             f"(or pass scale_fn), got {mode!r}")
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"CyclicLR: scale_mode must be 'cycle' or 'iterations', got "
                             f"{scale_mode!r}")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            defaults = getattr(optimizer, "defaults", {})
            if "momentum" not in defaults and "betas" not in defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` "
                                 "option enabled")
            self.use_beta1 = "betas" in defaults
            self.base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for m_m, b_m, group in zip(self.max_momentums, self.base_momentums,
                                           optimizer.param_groups):
                    if self.use_beta1:
                        group["betas"] = (m_m, *group["betas"][1:])
                    else:
                        group["momentum"] = m_m
                    group["max_momentum"] = m_m
                    group["base_momentum"] = b_m
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self):
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref, self.scale_mode = _triangular, "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref, self.scale_mode = _triangular2, "cycle"
        else:
            self._scale_fn_ref = functools.partial(_exp_range, self.gamma)
            self.scale_mode = "iterations"

    def scale_fn(self, x):
        """The amplitude scale at cycle (or iteration) `x`."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    def get_lr(self):
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            factor = x / self.step_ratio
        else:
            factor = (x - 1) / (self.step_ratio - 1)
        at = cycle if self.scale_mode == "cycle" else self.last_epoch
        scale = self.scale_fn(at)
        # the products in PyTorch's order, so the floats match it exactly
        lrs = [b + ((m - b) * factor) * scale for b, m in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, b, m in zip(self.optimizer.param_groups, self.base_momentums,
                                   self.max_momentums):
                mom = m - ((m - b) * factor) * scale
                if self.use_beta1:
                    group["betas"] = (mom, *group["betas"][1:])
                else:
                    group["momentum"] = mom
        return lrs

    def state_dict(self):
        """Attributes except the optimizer; a custom scale_fn is saved only when it is a
        callable object (its `__dict__`), as in PyTorch."""
        out = {k: v for k, v in self.__dict__.items()
               if k not in ("optimizer", "_scale_fn_ref", "_scale_fn_custom")}
        fn = self._scale_fn_custom
        out["_scale_fn_custom"] = (dict(fn.__dict__) if fn is not None and not _is_function(fn)
                                   and hasattr(fn, "__dict__") else None)
        return out

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        saved = state_dict.pop("_scale_fn_custom", None)
        self.__dict__.update(state_dict)
        if saved is not None and self._scale_fn_custom is not None:
            self._scale_fn_custom.__dict__.update(saved)
        self._init_scale_fn()


class PolynomialLR(LRScheduler):
    """Decay lr as `base_lr * (1 - epoch / total_iters) ** power` until `total_iters`,
    then keep it (PyTorch's `PolynomialLR`, its chainable rule).

    Example:
        >>> import ember.numpy as enp
        >>> from ember.optim import SGD
        >>> s = PolynomialLR(SGD([enp.asarray(1.0)], lr=1.0), total_iters=4, power=2.0)
        >>> [s.get_last_lr()[0] for _ in range(6) if s.step() or True]
        [0.5625, 0.25, 0.0625, 0.0, 0.0, 0.0]
    """

    def __init__(self, optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1):
        if isinstance(total_iters, bool) or not isinstance(total_iters, int) or total_iters <= 0:
            raise ValueError(f"PolynomialLR: total_iters must be a positive int, got "
                             f"{total_iters!r}")
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial or self.last_epoch > self.total_iters:
            return [group["lr"] for group in self.optimizer.param_groups]
        decay = ((1.0 - self.last_epoch / self.total_iters)
                 / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [group["lr"] * decay for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters)
                ** self.power for base_lr in self.base_lrs]
