"""Adafactor (Shazeer & Stern 2018) with torch.optim.Adafactor's formulas: the functional
`adafactor` transformation and the PyTorch-style `Adafactor` optimizer.

Matrices (and stacks of them) keep a factored second moment, one row and one column
vector over the last two axes; vectors and scalars keep a full one. The step size is
relative (`max(eps2, RMS(p)) * min(lr, 1/sqrt(t))`) and the update is clipped to RMS `d`.

Example:
    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.Adafactor({"w": enp.ones((2, 3))}, lr=0.1)
    >>> new = opt.step({"w": enp.full((2, 3), 0.5)})
    >>> round(float(new["w"][0, 0]), 6)
    0.9
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import ember.numpy as _enp

from .. import dtypes as _dt
from .. import tree
from ..fx.core import get_aval
from . import _ops
from .core import GradientTransformation, InjectState, _as_hp, inject_hyperparams, leafwise
from .core import require_params
from .shim import Optimizer, _perf_flags

__all__ = ["adafactor", "Adafactor", "AdafactorState"]


class AdafactorState(NamedTuple):
    """Adafactor state: the step count, and per parameter PyTorch's `row_var`/`col_var`
    (factored, for ndim >= 2) or `variance` (ndim < 2); the unused ones are empty arrays."""
    step: Any
    row_var: Any
    col_var: Any
    variance: Any


def _factored(p):
    return get_aval(p).ndim > 1


def _empty(p):
    return _ops.asarray(np.zeros((0,), get_aval(p).dtype))


def _init_leaf(p):
    a = get_aval(p)
    if _factored(p):
        zeros = _enp.zeros
        return (zeros(a.shape[:-1] + (1,), a.dtype), zeros(a.shape[:-2] + (1, a.shape[-1]), a.dtype),
                _empty(p))
    return _empty(p), _empty(p), _ops.zeros_like(p)


def _torch_lerp(a, b, w):
    # torch.lerp's two formulas (exact at w = 1, which Adafactor's first step uses)
    return _ops.where(_ops.less(w, 0.5), a + w * (b - a), b - (b - a) * (1.0 - w))


def _norm(x):
    return _ops.sqrt(_ops.sum(x * x))


def _adafactor(lr=1e-2, beta2_decay=-0.8, eps1=-1.0, eps2=1e-3, d=1.0, weight_decay=0.0,
               maximize=False):
    """The transformation behind `adafactor` (a negative `eps1` stands for None: the
    parameter dtype's machine epsilon)."""

    def init(params):
        row, col, var = leafwise(lambda p: _init_leaf(p), [params], 3)
        return AdafactorState(_ops.asarray(np.int32(0)), row, col, var)

    def update(grads, state, params=None):
        enp = _enp
        require_params(params, "adafactor")
        step = state.step + 1
        t = _ops.f64(step)
        w = _ops.pow(t, beta2_decay)
        rho = _ops.minimum(lr, 1.0 / _ops.sqrt(t))

        def leaf(g, p, row, col, var):
            c = lambda x: _ops.cast(x, get_aval(p).dtype)  # noqa: E731
            a = get_aval(p)
            n = max(a.size, 1)
            g = -g if maximize else g
            e1 = _ops.where(_ops.less(eps1, 0.0), float(_dt.finfo(a.dtype).eps), eps1)
            alpha = _ops.maximum(eps2, _ops.f64(_norm(p)) / np.sqrt(n)) * rho
            wc = c(w)
            if _factored(p):
                row_mean = enp.square(enp.sqrt(enp.sum(g * g, axis=-1, keepdims=True))) \
                    / a.shape[-1]
                row = _torch_lerp(row, row_mean, wc)
                col_mean = enp.square(enp.sqrt(enp.sum(g * g, axis=-2, keepdims=True))) \
                    / a.shape[-2]
                col = _torch_lerp(col, col_mean, wc)
                est = (row * col) / enp.maximum(enp.mean(row, axis=-2, keepdims=True), c(e1))
            else:
                var = _torch_lerp(var, g * g, wc)
                est = var
            upd = enp.reciprocal(enp.sqrt(enp.maximum(est, c(e1 * e1)))) * g
            denom = _ops.maximum(1.0, _ops.f64(_norm(upd)) / (np.sqrt(n) * d))
            u = c(-alpha / denom) * upd - c(lr * weight_decay) * p
            return u, row, col, var

        updates, row, col, var = leafwise(
            leaf, [grads, params, state.row_var, state.col_var, state.variance], 4)
        return updates, AdafactorState(step, row, col, var)

    return GradientTransformation(init, update, "adafactor")


_injected = inject_hyperparams(_adafactor, name="adafactor")


def _check(lr, beta2_decay, eps, d, weight_decay):
    if not isinstance(eps, (tuple, list)) or len(eps) != 2:
        raise ValueError(f"Adafactor: eps must be a pair (eps1 or None, eps2), got {eps!r}")
    for name, v, ok, rule in (("lr", lr, lambda x: x >= 0, ">= 0"),
                              ("beta2_decay", beta2_decay, lambda x: x <= 0, "<= 0"),
                              ("eps2", eps[1], lambda x: x >= 0, ">= 0"),
                              ("d", d, lambda x: x >= 1, ">= 1"),
                              ("weight_decay", weight_decay, lambda x: x >= 0, ">= 0")):
        cv = _ops.concrete(v)
        if cv is not None and not ok(cv):
            raise ValueError(f"Adafactor: {name} should be {rule} but is {v}")
    if eps[0] is not None and _ops.concrete(eps[0]) is not None and _ops.concrete(eps[0]) < 0:
        raise ValueError(f"Adafactor: eps1 should be >= 0 (or None) but is {eps[0]}")


def adafactor(lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0,
              maximize=False):
    """Adafactor as a gradient transformation, torch.optim.Adafactor's update:

        rho_t = min(lr, 1/sqrt(t));  alpha = max(eps2, RMS(p)) * rho_t;  b = t^beta2_decay
        ndim >= 2: row = lerp(row, mean(g^2, -1), b); col = lerp(col, mean(g^2, -2), b)
                   v = row col / max(mean(row, -2), eps1)
        else:      v = lerp(v, g^2, b)
        u = g / sqrt(max(v, eps1^2));  p = p (1 - lr wd) - alpha / max(1, RMS(u) / d) * u

    `eps1=None` is the parameter dtype's machine epsilon.

    Example:
        >>> import ember.numpy as enp
        >>> tx = adafactor(lr=0.1)
        >>> p = [enp.asarray([3.0, 4.0])]
        >>> u, _ = tx.update([enp.asarray([1.0, -1.0])], tx.init(p), p)
        >>> [round(v, 4) for v in u[0].tolist()]
        [-0.3536, 0.3536]
    """
    _check(lr, beta2_decay, eps, d, weight_decay)
    e1 = -1.0 if eps[0] is None else eps[0]
    return _injected(lr=lr, beta2_decay=beta2_decay, eps1=e1, eps2=eps[1], d=d,
                     weight_decay=weight_decay, maximize=maximize)


class Adafactor(Optimizer):
    """Adafactor, `torch.optim.Adafactor`'s arguments (`eps=(None, 1e-3)`, `d`,
    `beta2_decay`, decoupled `weight_decay`) and formulas; its `state_dict` has PyTorch's
    per-parameter `step`, `row_var`/`col_var` (matrices) or `variance` (vectors).

    Example:
        >>> import ember.numpy as enp
        >>> Adafactor([enp.ones((2, 2))]).defaults["eps"]
        (None, 0.001)
    """
    _factory = staticmethod(adafactor)

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, maximize=False, jit=True, **torch_flags):
        _perf_flags("Adafactor", torch_flags)
        _check(lr, beta2_decay, eps, d, weight_decay)
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=tuple(eps), d=d,
                                      weight_decay=weight_decay, maximize=maximize), jit=jit)

    def _validate_value(self, key, value):
        if key == "eps":
            _check(0.0, 0.0, value, 1.0, 0.0)
            return
        super()._validate_value(key, value)

    def _hyper(self, group, state: InjectState):
        hp = {}
        for k in state.hyperparams:
            if k == "eps1":
                v = -1.0 if group["eps"][0] is None else group["eps"][0]
            elif k == "eps2":
                v = group["eps"][1]
            else:
                v = group[k]
            hp[k] = _as_hp(k, v)
        return InjectState(state.count, hp, state.inner_state)

    def _exported_fields(self, group, inner):
        return [("step", inner.step), ("row_var", inner.row_var), ("col_var", inner.col_var),
                ("variance", inner.variance)]

    def state_dict(self):
        """PyTorch's layout (`Optimizer.state_dict`), without the empty placeholders of the
        second-moment kinds a parameter does not use.

        Example:
            >>> import ember.numpy as enp
            >>> opt = Adafactor([enp.ones((2, 2)), enp.ones(2)])
            >>> _ = opt.step([enp.ones((2, 2)), enp.ones(2)])
            >>> [sorted(s) for s in opt.state_dict()["state"].values()]
            [['col_var', 'row_var', 'step'], ['step', 'variance']]
        """
        sd = super().state_dict()
        for entry in sd["state"].values():
            for name in ("row_var", "col_var", "variance"):
                if name in entry and get_aval(entry[name]).size == 0 and \
                        get_aval(entry[name]).shape == (0,):
                    del entry[name]
        return sd

    def _import_group(self, slot, ptree, entries):
        fresh = slot["tx"].init(ptree)
        if not any(entries):
            return fresh
        steps = {float(np.asarray(e["step"])) for e in entries if "step" in e}
        if len(steps) > 1:
            raise ValueError(f"Adafactor.load_state_dict: the parameters of a group have different "
                             f"step counts {sorted(steps)}; ember keeps one count per group")
        count = int(steps.pop()) if steps else 0
        inner = fresh.inner_state
        leaves, td = tree.flatten(ptree)
        out = {}
        for name in ("row_var", "col_var", "variance"):
            cur = td.flatten_up_to(getattr(inner, name))
            new = []
            for e, p, c in zip(entries, leaves, cur):
                if get_aval(c).size == 0 and get_aval(c).shape == (0,):
                    new.append(c)
                    continue
                if name not in e:
                    raise ValueError(f"Adafactor.load_state_dict: {name!r} is missing for a "
                                     f"parameter of shape {get_aval(p).shape}")
                a = _ops.asarray(np.asarray(e[name]))
                if get_aval(a).shape != get_aval(c).shape:
                    raise ValueError(f"Adafactor.load_state_dict: {name!r} has shape "
                                     f"{get_aval(a).shape}, expected {get_aval(c).shape}")
                new.append(_ops.astype(a, get_aval(p).dtype))
            out[name] = tree.unflatten(td, new)
        inner = inner._replace(step=_ops.asarray(np.int32(count)), **out)
        return InjectState(_ops.asarray(np.int32(count)), fresh.hyperparams, inner)
