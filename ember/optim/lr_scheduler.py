"""PyTorch-style learning-rate schedulers (`torch.optim.lr_scheduler` names and values)
that write `lr` into an optimizer's `param_groups`.

They follow PyTorch's own recursive ("chainable") update rules, so chaining and
manual edits of `lr` behave as in PyTorch; where PyTorch has a closed form
(used by `step(epoch)`), it comes from the pure functions in
`ember.optim.schedules`.  They work with any object that has `param_groups` (a
list of dicts with "lr") and `defaults`.

Example:
    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.SGD([enp.asarray(1.0)], lr=1.0)
    >>> sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    >>> lrs = []
    >>> for _ in range(5):
    ...     lrs.append(sched.get_last_lr()[0]); sched.step()
    >>> lrs
    [1.0, 1.0, 0.5, 0.5, 0.25]
"""
from __future__ import annotations

import abc
import math
import warnings
from bisect import bisect_right
from collections import Counter

from . import schedules as _sched

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR",
           "ExponentialLR",
           "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "OneCycleLR", "LinearLR",
           "SequentialLR", "ChainedScheduler", "ReduceLROnPlateau"]

_EPOCH_WARNING = ("The epoch parameter in `scheduler.step()` is deprecated (as in PyTorch); "
                  "call `scheduler.step()` without it.")


def _check_optimizer(optimizer):
    if not hasattr(optimizer, "param_groups"):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer (it has no param_groups)")
    return optimizer


def _per_group(name, optimizer, value):
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"expected {len(optimizer.param_groups)} values for {name}, "
                             f"got {len(value)}")
        return list(value)
    return [value] * len(optimizer.param_groups)


class LRScheduler(abc.ABC):
    """Base class: `step()` advances `last_epoch` and writes `get_lr()` into the groups.

    Subclasses implement `get_lr()` (PyTorch's chainable rule) and, where PyTorch
    has one, `_get_closed_form_lr()`.
    """

    def __init__(self, optimizer, last_epoch: int = -1):
        self.optimizer = _check_optimizer(optimizer)
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   f"when resuming an optimizer")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    # The constructor's step: chainable rules keep the optimizer's current lr instead of
    # applying one more update, so a scheduler built with last_epoch=N on a restored
    # optimizer continues from the restored lr (PyTorch 2's rule).
    _is_initial = False

    def _initial_step(self):
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    @abc.abstractmethod
    def get_lr(self) -> list:
        """The learning rates for `last_epoch` (PyTorch's rule for this scheduler)."""

    def get_last_lr(self) -> list:
        """The learning rates the last `step()` set, one per parameter group."""
        return self._last_lr

    def step(self, epoch=None):
        """Advance one epoch (or jump to `epoch`, deprecated) and update the groups' lr."""
        self._step_count += 1
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            warnings.warn(_EPOCH_WARNING, UserWarning, stacklevel=2)
            self.last_epoch = epoch
            values = (self._get_closed_form_lr() if hasattr(self, "_get_closed_form_lr")
                      else self.get_lr())
        self._set_lrs(values)

    def _jump_to(self, epoch):
        # SequentialLR restarts a scheduler at epoch 0 the way PyTorch's _update_lr(0) does
        # (the closed form; the step count is not advanced).
        self.last_epoch = epoch
        values = self._get_closed_form_lr() if hasattr(self, "_get_closed_form_lr") else self.get_lr()
        self._set_lrs(values)

    def _set_lrs(self, values):
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        """Every attribute except the optimizer (PyTorch's layout)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore attributes saved by `state_dict()`."""
        self.__dict__.update(state_dict)


class _LambdaScheduler(LRScheduler):
    """A scheduler driven by `lr_lambda`: one function for every group, or a list
    with one per group (PyTorch's rule); callable objects' state is saved."""

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(f"Expected {n} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        for f in self.lr_lambdas:
            if not callable(f):
                raise TypeError(f"lr_lambda must be callable, got {type(f).__name__}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self):
        """Attributes, with lr_lambdas saved only when they are callable objects (their
        `__dict__`); plain functions and lambdas are not saved, as in PyTorch."""
        out = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        out["lr_lambdas"] = [None if not hasattr(f, "__dict__") or _is_function(f) else dict(f.__dict__)
                             for f in self.lr_lambdas]
        return out

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        lambdas = state_dict.pop("lr_lambdas", [])
        self.__dict__.update(state_dict)
        for f, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                f.__dict__.update(saved)


class LambdaLR(_LambdaScheduler):
    """`lr = initial_lr * lr_lambda(epoch)` (one function, or one per group).

    Example:
        >>> import ember.numpy as enp
        >>> from ember.optim import SGD
        >>> s = LambdaLR(SGD([enp.asarray(1.0)], lr=2.0), lambda e: 0.5 ** e)
        >>> s.step(); s.get_last_lr()
        [1.0]
    """

    def get_lr(self):
        return [base_lr * lmbda(self.last_epoch) for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaScheduler):
    """Multiply lr by `lr_lambda(epoch)` every epoch (one function, or one per group),
    from epoch 1 on.

    Example:
        >>> import ember.numpy as enp
        >>> from ember.optim import SGD
        >>> s = MultiplicativeLR(SGD([enp.asarray(1.0)], lr=1.0), lambda e: 0.5)
        >>> s.step(); s.step(); s.get_last_lr()
        [0.25]
    """

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self._is_initial:
            return [group["lr"] for group in groups]
        return [group["lr"] * f(self.last_epoch) for f, group in zip(self.lr_lambdas, groups)]


def _is_function(f):
    import types
    return isinstance(f, (types.FunctionType, types.BuiltinFunctionType, types.MethodType))


class StepLR(LRScheduler):
    """Multiply lr by `gamma` every `step_size` epochs.

    Example:
        >>> import ember.numpy as enp
        >>> from ember.optim import SGD
        >>> s = StepLR(SGD([enp.asarray(1.0)], lr=1.0), step_size=1, gamma=0.1)
        >>> s.step(); s.get_last_lr()
        [0.1]
    """

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        if isinstance(step_size, bool) or not isinstance(step_size, int) or step_size <= 0:
            raise ValueError(f"step_size must be a positive int, got {step_size!r}")
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [_sched.exponential_decay(base_lr, self.step_size, self.gamma, staircase=True)(self.last_epoch)
                for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply lr by `gamma` at each milestone epoch (repeated milestones multiply again).

    Example:
        >>> import ember.numpy as enp
        >>> from ember.optim import SGD
        >>> s = MultiStepLR(SGD([enp.asarray(1.0)], lr=1.0), milestones=[1], gamma=0.5)
        >>> s.step(); s.get_last_lr()
        [0.5]
    """

    def __init__(self, optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch not in self.milestones:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch]
                for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        scales = {m: self.gamma ** c for m, c in self.milestones.items()}
        return [_sched.piecewise_constant(base_lr, scales)(self.last_epoch) for base_lr in self.base_lrs]


class ConstantLR(LRScheduler):
    """Scale lr by a constant `factor` for the first `total_iters` epochs, then restore it.

    Example:
        >>> import ember.numpy as enp
        >>> from ember.optim import SGD
        >>> s = ConstantLR(SGD([enp.asarray(1.0)], lr=1.0), factor=0.5, total_iters=2)
        >>> lrs = [s.get_last_lr()[0]]
        >>> for _ in range(3):
        ...     s.step(); lrs.append(s.get_last_lr()[0])
        >>> lrs
        [0.5, 0.5, 1.0, 1.0]
    """

    def __init__(self, optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1):
        if factor > 1.0 or factor < 0:
            raise ValueError(f"ConstantLR: factor must be between 0 and 1, got {factor!r}")
        if isinstance(total_iters, bool) or not isinstance(total_iters, int) or total_iters < 0:
            raise ValueError(f"ConstantLR: total_iters must be a non-negative int, got {total_iters!r}")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in groups]
        if self.last_epoch != self.total_iters:
            return [group["lr"] for group in groups]
        return [group["lr"] * (1.0 / self.factor) for group in groups]

    def _get_closed_form_lr(self):
        scale = 1.0 if self.last_epoch >= self.total_iters else self.factor
        return [base_lr * scale for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply lr by `gamma` every epoch.

    Example:
        >>> import ember.numpy as enp
        >>> from ember.optim import SGD
        >>> s = ExponentialLR(SGD([enp.asarray(1.0)], lr=1.0), gamma=0.5)
        >>> s.step(); s.step(); s.get_last_lr()
        [0.25]
    """

    def __init__(self, optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [_sched.exponential_decay(base_lr, 1, self.gamma)(self.last_epoch) for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale lr linearly from `start_factor` to `end_factor` over `total_iters` epochs.

    Example:
        >>> import ember.numpy as enp
        >>> from ember.optim import SGD
        >>> s = LinearLR(SGD([enp.asarray(1.0)], lr=1.0), start_factor=0.5, total_iters=2)
        >>> s.get_last_lr(); s.step(); s.get_last_lr()
        [0.5]
        [0.75]
    """

    def __init__(self, optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and "
                             "less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        if isinstance(total_iters, bool) or not isinstance(total_iters, int) or total_iters <= 0:
            raise ValueError(f"total_iters must be a positive int, got {total_iters!r}")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in self.optimizer.param_groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return [group["lr"] for group in self.optimizer.param_groups]
        ratio = 1.0 + (self.end_factor - self.start_factor) / (
            self.total_iters * self.start_factor + (self.last_epoch - 1) * (self.end_factor - self.start_factor))
        return [group["lr"] * ratio for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [_sched.linear(base_lr * self.start_factor, base_lr * self.end_factor,
                              self.total_iters)(self.last_epoch) for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial lr to `eta_min` over `T_max` epochs, with
    PyTorch's recursive rule (its values continue periodically past `T_max`).

    Example:
        >>> import ember.numpy as enp
        >>> from ember.optim import SGD
        >>> s = CosineAnnealingLR(SGD([enp.asarray(1.0)], lr=1.0), T_max=2)
        >>> s.step(); round(s.get_last_lr()[0], 6)
        0.5
    """

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        if not T_max > 0:
            raise ValueError(f"T_max must be positive, got {T_max!r}")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self._is_initial:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and self.last_epoch > 0:
            return [self.eta_min + (base_lr - self.eta_min)
                    * (1 + math.cos(self.last_epoch * math.pi / self.T_max)) / 2
                    for base_lr in self.base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [group["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base_lr, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
                * (group["lr"] - self.eta_min) + self.eta_min for group in groups]

    def _get_closed_form_lr(self):
        return [self.eta_min + (base_lr - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing restarted every `T_i` epochs, `T_i` growing by `T_mult`
    (SGDR); `step(epoch)` accepts fractional epochs.

    Example:
        >>> import ember.numpy as enp
        >>> from ember.optim import SGD
        >>> s = CosineAnnealingWarmRestarts(SGD([enp.asarray(1.0)], lr=1.0), T_0=2)
        >>> s.step(); round(s.get_last_lr()[0], 6)
        0.5
        >>> s.step(); s.get_last_lr()
        [1.0]
    """

    def __init__(self, optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1):
        if isinstance(T_0, bool) or not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if isinstance(T_mult, bool) or not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base_lr in self.base_lrs]

    def step(self, epoch=None):
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                # modulo, not one subtraction: a scheduler resumed with last_epoch past the
                # first period starts with T_cur = last_epoch (PyTorch's rule)
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._step_count = getattr(self, "_step_count", 0) + 1
        self._set_lrs(self.get_lr())

    def _jump_to(self, epoch):
        self.step(epoch)


class OneCycleLR(LRScheduler):
    """The 1cycle policy (PyTorch's `OneCycleLR`, per batch): lr from
    `max_lr / div_factor` up to `max_lr` and down to `initial_lr / final_div_factor`,
    and momentum (or Adam's beta1) cycled inversely between `max_momentum` and
    `base_momentum` when `cycle_momentum`.

    Example:
        >>> import ember.numpy as enp
        >>> from ember.optim import SGD
        >>> s = OneCycleLR(SGD([enp.asarray(1.0)], lr=0.1, momentum=0.9), max_lr=1.0, total_steps=10)
        >>> [round(v, 6) for v in s.get_last_lr()]
        [0.04]
    """

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start: float = 0.3, anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum=0.85, max_momentum=0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False, last_epoch: int = -1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if total_steps is not None:
            if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if not isinstance(pct_start, float) or pct_start < 0 or pct_start > 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self.pct_start = pct_start
        self.anneal_strategy = anneal_strategy
        self.three_phase = three_phase
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for m, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = m / div_factor
                group["max_lr"] = m
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            defaults = getattr(optimizer, "defaults", {})
            if "momentum" not in defaults and "betas" not in defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` "
                                 "option enabled")
            self.use_beta1 = "betas" in defaults
            max_ms = _per_group("max_momentum", optimizer, max_momentum)
            base_ms = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for m_m, b_m, group in zip(max_ms, base_ms, optimizer.param_groups):
                    if self.use_beta1:
                        group["betas"] = (m_m, *group["betas"][1:])
                    else:
                        group["momentum"] = m_m
                    group["max_momentum"] = m_m
                    group["base_momentum"] = b_m
        super().__init__(optimizer, last_epoch)

    def _lr_phases(self, group):
        return _sched.one_cycle_phases(self.total_steps, self.pct_start, self.three_phase,
                                       group["initial_lr"], group["max_lr"], group["min_lr"])

    def _momentum_phases(self, group):
        return _sched.one_cycle_phases(self.total_steps, self.pct_start, self.three_phase,
                                       group["max_momentum"], group["base_momentum"],
                                       group["max_momentum"])

    def _value(self, phases, step):
        v = _sched.anneal_phases(phases, self.anneal_strategy)(step)
        if step > phases[-1][0]:
            # PyTorch's documented loop (optimizer.step(); scheduler.step() per batch)
            # ends on step == total_steps, one past the cycle, where PyTorch
            # extrapolates the last phase: for 'linear' a negative lr (and a beta1
            # past max_momentum) that no optimizer step uses but that ember's group
            # checks refuse, crashing the loop's last line.  Keep that step inside
            # the last phase's endpoints; a 'cos' extrapolation already is, so its
            # value stays PyTorch's.
            _, a, b = phases[-1]
            v = min(max(v, min(a, b)), max(a, b))
        return v

    def get_lr(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is "
                             f"{self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            lrs.append(self._value(self._lr_phases(group), step))
            if self.cycle_momentum:
                m = self._value(self._momentum_phases(group), step)
                if self.use_beta1:
                    group["betas"] = (m, *group["betas"][1:])
                else:
                    group["momentum"] = m
        return lrs


class SequentialLR(LRScheduler):
    """Run `schedulers` one after another, switching at the `milestones` epochs (each
    new scheduler restarts from epoch 0).

    Example:
        >>> import ember.numpy as enp
        >>> from ember.optim import SGD
        >>> opt = SGD([enp.asarray(1.0)], lr=1.0)
        >>> s = SequentialLR(opt, [LinearLR(opt, 0.5, total_iters=1), ExponentialLR(opt, 0.5)], [1])
        >>> s.get_last_lr()
        [0.5]
        >>> s.step(); s.get_last_lr()
        [1.0]
        >>> s.step(); s.get_last_lr()
        [0.5]
    """

    def __init__(self, optimizer, schedulers, milestones, last_epoch: int = -1):
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler, but got no "
                             f"scheduler.")
        for i, s in enumerate(schedulers):
            if not hasattr(s, "optimizer"):
                raise TypeError(f"{type(self).__name__} at index {i} should have `optimizer` as "
                                f"its attribute.")
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError(f"{type(self).__name__} does not support `ReduceLROnPlateau` "
                                 f"scheduler as it requires additional kwargs to be specified "
                                 f"when calling `step`, but got one at index {i} in the given "
                                 f"schedulers sequence.")
            if s.optimizer is not optimizer:
                raise ValueError(f"{type(self).__name__} expects all schedulers to belong to the "
                                 f"same optimizer, but got scheduler at index {i} to be different "
                                 f"than the optimizer passed in.")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"Sequential Schedulers expects number of schedulers provided to be "
                             f"one more than the number of milestone points, but got number of "
                             f"schedulers {len(schedulers)} and the number of milestones to be "
                             f"equal to {len(milestones)}")
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        for s in self._schedulers:
            s.last_epoch -= 1
        self._schedulers[0]._initial_step()
        self._last_lr = self._schedulers[0].get_last_lr()

    def get_lr(self):
        return [group["lr"] for group in self.optimizer.param_groups]

    def step(self):
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._jump_to(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self):
        out = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        out["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return out

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        saved = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for s, sd in zip(self._schedulers, saved):
            s.load_state_dict(sd)


class ChainedScheduler(LRScheduler):
    """Step several schedulers together each epoch; their (chainable) effects compose.

    Example:
        >>> import ember.numpy as enp
        >>> from ember.optim import SGD
        >>> opt = SGD([enp.asarray(1.0)], lr=1.0)
        >>> s = ChainedScheduler([ExponentialLR(opt, 0.5), StepLR(opt, 1, 0.5)])
        >>> s.step(); s.get_last_lr()
        [0.25]
    """

    def __init__(self, schedulers, optimizer=None):
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler to be "
                             f"chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        for i, s in enumerate(schedulers):
            if not hasattr(s, "optimizer"):
                raise TypeError(f"{type(self).__name__} at index {i} should have `optimizer` as "
                                f"its attribute.")
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError(f"{type(self).__name__} does not support `ReduceLROnPlateau` "
                                 f"scheduler as it requires additional kwargs to be specified "
                                 f"when calling `step`, but got one at index {i} in the given "
                                 f"schedulers sequence.")
            if s.optimizer is not optimizer:
                raise ValueError(f"{type(self).__name__} expects all schedulers to belong to the "
                                 f"same optimizer, but got scheduler {type(s).__name__} at index "
                                 f"{i} to be different than the optimizer passed in.")
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = [group["lr"] for group in self._schedulers[-1].optimizer.param_groups]

    def get_lr(self):
        return [group["lr"] for group in self.optimizer.param_groups]

    def step(self):
        for s in self._schedulers:
            s.step()
        self._last_lr = [group["lr"] for group in self._schedulers[-1].optimizer.param_groups]

    state_dict = SequentialLR.state_dict
    load_state_dict = SequentialLR.load_state_dict


class ReduceLROnPlateau:
    """Multiply lr by `factor` when a metric has stopped improving for `patience` epochs.

    Example:
        >>> import ember.numpy as enp
        >>> from ember.optim import SGD
        >>> s = ReduceLROnPlateau(SGD([enp.asarray(1.0)], lr=1.0), patience=0, factor=0.5)
        >>> s.step(1.0); s.step(1.0); s.get_last_lr()
        [0.5]
    """

    def __init__(self, optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr=0.0, eps: float = 1e-8):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        self.optimizer = _check_optimizer(optimizer)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        self.patience = patience
        self.cooldown = cooldown
        self.cooldown_counter = 0
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode
        self.eps = eps
        self.last_epoch = 0
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self._last_lr = [group["lr"] for group in optimizer.param_groups]
        self._reset()

    def _reset(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def is_better(self, a, best) -> bool:
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def step(self, metrics, epoch=None):
        """Record `metrics` (a number or a scalar array) for one epoch; reduce lr after
        more than `patience` epochs without improvement, then wait `cooldown` epochs."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(_EPOCH_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _reduce_lr(self):
        for i, group in enumerate(self.optimizer.param_groups):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, self.min_lrs[i])
            if old_lr - new_lr > self.eps:
                group["lr"] = new_lr

    def get_last_lr(self) -> list:
        """The learning rates after the last `step`, one per parameter group."""
        return self._last_lr

    def state_dict(self) -> dict:
        """Every attribute except the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore attributes saved by `state_dict()`."""
        self.__dict__.update(state_dict)


from .lr_scheduler_cyclic import CyclicLR, PolynomialLR  # noqa: E402  (their own file)

__all__ += ["CyclicLR", "PolynomialLR"]

_LRScheduler = LRScheduler  # PyTorch's old (deprecated, still exported) name
