"""Weight averaging, torch.optim.swa_utils's names and semantics: `AveragedModel` (SWA by
default, EMA with `multi_avg_fn=get_ema_multi_avg_fn(decay)`), the `SWALR` scheduler and
`update_bn`.

ember arrays are immutable, so an averaging function returns the new averages rather
than writing into its first argument as PyTorch's do: `avg_fn(avg, current, n) -> avg`
and `multi_avg_fn(avgs, currents, n) -> list of avgs`.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> from ember.optim.swa_utils import AveragedModel
    >>> model = nn.Linear(1, 1)
    >>> swa = AveragedModel(model)
    >>> for w in (1.0, 2.0, 6.0):
    ...     model.load_parameters({"weight": enp.full((1, 1), w)})
    ...     swa.update_parameters(model)
    >>> swa.module.weight.tolist(), int(swa.n_averaged)
    ([[3.0]], 3)
"""
from __future__ import annotations

import copy
import math

import numpy as np

import ember.numpy as _enp

from .. import dtypes as _dt
from ..fx.core import get_aval
from .lr_scheduler import LRScheduler, _per_group

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def _is_float(x):
    return _dt.is_inexact(get_aval(_enp.asarray(x)).dtype)


def _lerp(a, b, w):
    # torch.lerp's two formulas, so the averages match PyTorch's to the last bit
    return a + w * (b - a) if w < 0.5 else b - (b - a) * (1.0 - w)


def get_ema_multi_avg_fn(decay=0.999):
    """An exponential moving average over lists of arrays: `lerp(avg, current, 1 - decay)`
    for floats (PyTorch's foreach lerp), `avg * decay + current * (1 - decay)` otherwise.

    Example:
        >>> import ember.numpy as enp
        >>> f = get_ema_multi_avg_fn(0.9)
        >>> [round(v, 6) for v in f([enp.asarray([1.0])], [enp.asarray([2.0])], 1)[0].tolist()]
        [1.1]
    """
    def ema_update(averaged, current, num_averaged):
        if averaged and _is_float(averaged[0]):
            return [_lerp(a, c, 1.0 - decay) for a, c in zip(averaged, current)]
        return [a * decay + c * (1.0 - decay) for a, c in zip(averaged, current)]
    return ema_update


def get_swa_multi_avg_fn():
    """The running mean over lists of arrays: `avg + (current - avg) / (n + 1)` (a lerp with
    weight 1 / (n + 1) for floats, as PyTorch's foreach path).

    Example:
        >>> import ember.numpy as enp
        >>> get_swa_multi_avg_fn()([enp.asarray(1.0)], [enp.asarray(4.0)], 2)[0].tolist()
        2.0
    """
    def swa_update(averaged, current, num_averaged):
        n = float(num_averaged)
        if averaged and _is_float(averaged[0]):
            return [_lerp(a, c, 1.0 / (n + 1)) for a, c in zip(averaged, current)]
        return [a + (c - a) / (n + 1) for a, c in zip(averaged, current)]
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """An exponential moving average of one array: `decay * avg + (1 - decay) * current`.

    Example:
        >>> import ember.numpy as enp
        >>> round(float(get_ema_avg_fn(0.5)(enp.asarray(0.0), enp.asarray(2.0), 1)), 6)
        1.0
    """
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """The running mean of one array: `avg + (current - avg) / (n + 1)`.

    Example:
        >>> import ember.numpy as enp
        >>> float(get_swa_avg_fn()(enp.asarray(1.0), enp.asarray(4.0), 2))
        2.0
    """
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


def _cast_like(v, like):
    d = get_aval(like).dtype
    v = _enp.asarray(v)
    if get_aval(v).dtype == d:
        return v
    if _dt.is_integer(d) or d == _dt.bool_:
        v = _enp.trunc(v)  # torch's copy_ into an integer tensor truncates
    return v.astype(d)


def _module_base():
    from ..nn.module import Module
    return Module


class AveragedModel(_module_base()):
    """A copy of `model` whose parameters (and, with `use_buffers`, buffers) are the
    average of the values `update_parameters(model)` has seen: the running mean (SWA) by
    default, or what `avg_fn` / `multi_avg_fn` compute (e.g. EMA with
    `multi_avg_fn=get_ema_multi_avg_fn(0.999)`). Calling it runs the averaged copy.
    Without `use_buffers` the buffers are copied from `model` at each update, as in
    PyTorch (use `update_bn` to recompute BatchNorm statistics for the averaged weights).

    Example:
        >>> import ember.numpy as enp
        >>> from ember import nn
        >>> model = nn.Linear(2, 1)
        >>> ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
        >>> ema.update_parameters(model); ema(enp.ones((3, 2))).shape
        (3, 1)
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if not isinstance(model, _module_base()):
            raise TypeError(f"AveragedModel needs an ember.nn.Module, got {type(model).__name__}")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device=device)
        self.register_buffer("n_averaged", _enp.asarray(np.int64(0)))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = bool(use_buffers)

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _states(self, m):
        out = [("param", n, v) for n, v in m.named_parameters()]
        if self.use_buffers:
            out += [("buffer", n, v) for n, v in m.named_buffers()]
        return out

    def update_parameters(self, model):
        """Fold `model`'s current values into the averages (the first call copies them).

        Example:
            >>> import ember.numpy as enp
            >>> from ember import nn
            >>> m = nn.Linear(1, 1); swa = AveragedModel(m); swa.update_parameters(m)
            >>> int(swa.n_averaged)
            1
        """
        mine, theirs = self._states(self.module), self._states(model)
        if [n for _, n, _ in mine] != [n for _, n, _ in theirs]:
            raise ValueError("AveragedModel.update_parameters: the model's parameters "
                             f"{[n for _, n, _ in theirs][:4]}... do not match the averaged copy's "
                             f"{[n for _, n, _ in mine][:4]}...")
        n_avg = int(self.n_averaged)
        if n_avg == 0:
            new = [_cast_like(v, a) for (_, _, a), (_, _, v) in zip(mine, theirs)]
        elif self.multi_avg_fn is not None or self.avg_fn is None:
            fn = self.multi_avg_fn or get_swa_multi_avg_fn()
            if self.multi_avg_fn is None:
                # PyTorch's CPU path: the elementwise running mean, one tensor at a time
                one = get_swa_avg_fn()
                new = [_cast_like(one(a, v, self.n_averaged), a)
                       for (_, _, a), (_, _, v) in zip(mine, theirs)]
            else:
                new = [None] * len(mine)
                groups = {}
                for i, (_, _, a) in enumerate(mine):
                    groups.setdefault(str(get_aval(a).dtype), []).append(i)
                for idx in groups.values():
                    got = fn([mine[i][2] for i in idx], [theirs[i][2] for i in idx],
                             self.n_averaged)
                    if got is None:
                        raise TypeError("AveragedModel: multi_avg_fn returned None; ember arrays "
                                        "are immutable, so it must return the list of new "
                                        "averages instead of updating its first argument")
                    for i, v in zip(idx, got):
                        new[i] = _cast_like(v, mine[i][2])
        else:
            new = []
            for (_, _, a), (_, _, v) in zip(mine, theirs):
                got = self.avg_fn(a, v, self.n_averaged)
                if got is None:
                    raise TypeError("AveragedModel: avg_fn returned None; ember arrays are "
                                    "immutable, so it must return the new average")
                new.append(_cast_like(got, a))
        params = {n: v for (k, n, _), v in zip(mine, new) if k == "param"}
        bufs = {n: v for (k, n, _), v in zip(mine, new) if k == "buffer"}
        self.module.load_parameters(params, include_frozen=True)
        if bufs:
            self.module.load_buffers(bufs)
        if not self.use_buffers:
            synced = dict(model.named_buffers())
            if synced:
                self.module.load_buffers({n: v for n, v in synced.items() if v is not None})
        self.n_averaged = self.n_averaged + 1


def update_bn(loader, model, device=None):
    """Recompute every BatchNorm's running statistics with one pass over `loader` (batches,
    or tuples whose first entry is the input), as a cumulative average: PyTorch's
    `update_bn`, used after averaging weights.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> from ember import nn
        >>> m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
        >>> update_bn([enp.asarray(np.ones((4, 2), np.float32))], m)
        >>> int(m[1].num_batches_tracked)
        1
    """
    from ..nn.layers.normalization import _BatchNorm
    momenta = {}
    for m in model.modules():
        if isinstance(m, _BatchNorm) and m.track_running_stats:
            m.reset_running_stats()
            momenta[m] = m.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for m in momenta:
        m.momentum = None
    try:
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = _enp.asarray(batch, device=device)
            model(batch)
    finally:
        for m, mom in momenta.items():
            m.momentum = mom
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr to its `swa_lr` over `anneal_epochs` epochs ("cos" or
    "linear") and hold it there (PyTorch's `SWALR`, its recursive rule).

    Example:
        >>> import ember.numpy as enp
        >>> from ember.optim import SGD
        >>> s = SWALR(SGD([enp.asarray(1.0)], lr=1.0), swa_lr=0.1, anneal_epochs=2,
        ...           anneal_strategy="linear")
        >>> [round(s.get_last_lr()[0], 6) for _ in range(3) if s.step() or True]
        [0.55, 0.1, 0.1]
    """

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):
        for lr, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self.anneal_strategy = anneal_strategy
        if isinstance(anneal_epochs, bool) or not isinstance(anneal_epochs, int) \
                or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def anneal_func(self, t):
        """The fraction of the way to swa_lr at progress t in [0, 1]."""
        return (1 - math.cos(math.pi * t)) / 2 if self.anneal_strategy == "cos" else t

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        groups = self.optimizer.param_groups
        prev = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev)]
