"""The array operations the optimisers and schedules use, from `ember.numpy`, plus small
helpers (scalar casts, concreteness checks, the global norm).

All optimiser math goes through these, so it binds ember primitives and therefore
traces under `jit` and differentiates.

Example:
    >>> from ember.optim import _ops
    >>> float(_ops.sqrt(_ops.asarray(4.0)))
    2.0
"""
from __future__ import annotations

import numbers

import numpy as np

import ember.numpy as _enp

from .. import dtypes as _dt
from ..array import Array
from ..fx.core import Tracer, get_aval

float64 = _dt.float64
int32 = _dt.int32
bool_ = _dt.bool_

asarray = _enp.asarray
where = _enp.where
sqrt = _enp.sqrt
cos = _enp.cos
floor = _enp.floor
abs = _enp.abs
sign = _enp.sign
maximum = _enp.maximum
minimum = _enp.minimum
greater = _enp.greater
greater_equal = _enp.greater_equal
less = _enp.less
equal = _enp.equal
not_equal = _enp.not_equal
logical_and = _enp.logical_and
logical_or = _enp.logical_or
logical_not = _enp.logical_not
pow = _enp.pow
sum = _enp.sum
astype = _enp.astype
zeros_like = _enp.zeros_like
full_like = _enp.full_like


# --- helpers on top ------------------------------------------------------------

def is_array(x) -> bool:
    """True for ember Arrays and tracers."""
    return isinstance(x, (Array, Tracer))


def is_number(x) -> bool:
    """True for Python/numpy real numbers (not bool)."""
    return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))


def concrete(x):
    """A Python float for a concrete scalar (number, numpy scalar, Array, concrete tracer),
    or None when `x` is traced and its value is not known yet."""
    if isinstance(x, Tracer):
        v = x.concrete_value()
        if v is None:
            return None
        return float(np.asarray(v).reshape(()))
    if isinstance(x, Array):
        return float(x) if x.size == 1 else None
    if isinstance(x, (np.ndarray, np.generic)):
        return float(np.asarray(x).reshape(())) if np.size(x) == 1 else None
    if is_number(x):
        return float(x)
    return None


def f64(x):
    """A float64 ember scalar from a number or an array (traced or not)."""
    if is_array(x):
        return astype(x, float64)
    return asarray(np.float64(x))


def cast(x, dtype):
    """`x` (a number or a scalar array) in `dtype`, the dtype of the leaf it scales."""
    if is_array(x):
        return astype(x, dtype)
    return asarray(np.asarray(x, dtype=dtype))


def global_norm(leaves):
    """sqrt of the sum of squares of all leaves, in the promoted dtype of the leaves."""
    leaves = list(leaves)
    if not leaves:
        return asarray(np.float32(0.0))
    dt = _dt.promote([get_aval(g).dtype for g in leaves], [False] * len(leaves))[0]
    total = None
    for g in leaves:
        s = astype(sum(g * g), dt)
        total = s if total is None else total + s
    return sqrt(total)
