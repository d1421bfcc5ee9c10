"""Small helpers shared by the `ember.nn.functional` families."""
from __future__ import annotations

import math

import numpy as np

from ... import dtypes as _dt
from ...fx.core import get_aval


def enp():
    import ember.numpy as m
    return m


def arr(x):
    """x as an ember array (Python scalars become weakly typed float32/int32)."""
    return enp().asarray(x)


def float_arr(x):
    """x as a floating-point array (integers promote to float32)."""
    x = arr(x)
    if not _dt.is_inexact(get_aval(x).dtype):
        x = enp().astype(x, _dt.float32)
    return x


def dtype_of(x):
    return get_aval(x).dtype


def tuple_n(v, n: int, name: str) -> tuple:
    """An int or a sequence of n ints as an n-tuple of ints."""
    if isinstance(v, (int, np.integer)):
        return (int(v),) * n
    t = tuple(int(a) for a in v)
    if len(t) == 1 and n > 1:
        t = t * n
    if len(t) != n:
        raise ValueError(f"{name} must be an int or a sequence of {n} ints, got {v!r}")
    return t


def reduce_loss(loss, reduction: str, op: str):
    """Apply a PyTorch `reduction` ('none' | 'mean' | 'sum') to elementwise losses."""
    if reduction == "none":
        return loss
    if reduction == "mean":
        return enp().mean(loss)
    if reduction == "sum":
        return enp().sum(loss)
    raise ValueError(f"{op}: {reduction!r} is not a valid value for reduction "
                     f"(use 'none', 'mean' or 'sum')")


def mean_of_sums(num, den, axis=None, keepdims=False, floor=None):
    """sum(num) / sum(den) over `axis` (`den` may be a Python count instead), summed and
    divided in `ember.dtypes.accumulation_dtype` so half-precision counts and sums do
    not overflow; the result has `num`'s dtype.  `floor` clamps the denominator below.

    Example:
        >>> import ember.numpy as enp
        >>> mean_of_sums(enp.ones(70000, dtype="float16"), 70000).item()
        1.0
    """
    e = enp()
    d = dtype_of(num)
    acc = _dt.accumulation_dtype(d)
    s = e.sum(e.astype(num, acc), axis=axis, keepdims=keepdims)
    if isinstance(den, (int, float, np.integer, np.floating)):
        n = float(den)
    else:
        n = e.sum(e.astype(den, acc), axis=axis, keepdims=keepdims)
    if floor is not None:
        n = e.maximum(n, floor)
    return e.astype(s / n, d)


def sqrt(v: float) -> float:
    return math.sqrt(v)
