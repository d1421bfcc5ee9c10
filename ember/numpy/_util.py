"""Small helpers shared by the `ember.numpy` families: axis normalisation, dtype
checks, scalar constants, concrete-value access and numpy-feature guards.

Example:
    >>> from ember.numpy._util import canonicalize_axis
    >>> canonicalize_axis(-1, 3, "sum")
    2
"""
from __future__ import annotations

import operator

import numpy as np
from numpy.exceptions import AxisError

from .. import dtypes as _dt
from ..array import Array
from ..fx.core import ConcretizationError, Tracer, argument_note, get_aval, user_source

INDEX_DTYPE = _dt.int32  # the array API "default array index data type"


def _where() -> str:
    src = user_source()
    return f"\n  at {src}" if src else ""


def canonicalize_axis(axis, ndim: int, op: str) -> int:
    """A non-negative axis in [0, ndim), or numpy's AxisError naming the op."""
    try:
        a = operator.index(axis)
    except TypeError:
        raise TypeError(f"{op}: axis must be an integer, got {type(axis).__name__}") from None
    if not -ndim <= a < ndim:
        raise AxisError(f"{op}: axis {a} is out of bounds for an array of dimension {ndim}")
    return a + ndim if a < 0 else a


def canonicalize_axes(axis, ndim: int, op: str) -> tuple:
    """`None` -> all axes; an int or a sequence -> sorted distinct non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        out = tuple(canonicalize_axis(a, ndim, op) for a in axis)
        if len(set(out)) != len(out):
            raise ValueError(f"{op}: repeated axis in {tuple(axis)}")
        return tuple(sorted(out))
    return (canonicalize_axis(axis, ndim, op),)


def const(dtype, value):
    """A rank-0 numpy value of `dtype` (a literal that broadcasts in the IR)."""
    return np.array(value, dtype=dtype)[()]


def dtype_of(x) -> np.dtype:
    return get_aval(x).dtype


def shape_of(x) -> tuple:
    return get_aval(x).shape


def is_array(x) -> bool:
    return isinstance(x, (Array, Tracer, np.ndarray, np.generic))


def concrete_or_none(x):
    """The numpy value of `x` when it is known now (eager data), else None."""
    if isinstance(x, Array):
        return np.asarray(x)
    if isinstance(x, Tracer):
        v = x.concrete_value()
        return None if v is None else np.asarray(v)
    if isinstance(x, (np.ndarray, np.generic)):
        return np.asarray(x)
    if isinstance(x, (bool, int, float, complex)):
        return np.asarray(x)
    if isinstance(x, (list, tuple)):
        try:
            return np.asarray(x)
        except (TypeError, ValueError):
            return None
    return None


def concrete(x, op: str, why: str = "the output shape depends on the values"):
    """The numpy value of `x`, or a ConcretizationError explaining why `op` needs it."""
    v = concrete_or_none(x)
    if v is None:
        raise ConcretizationError(
            f"{op}: {why}, so it needs concrete (eager) values, but got the abstract value "
            f"{get_aval(x)} under a trace (jit / vmap / make_graph){argument_note(x)}. Call it outside the "
            f"transformed function, or use a fixed-size alternative (a `size=` argument or "
            f"ember.numpy.where).{_where()}")
    return v


def static_int(x, op: str, what: str) -> int:
    """A Python int from a static argument (a Python/numpy int or a concrete 0-d array)."""
    if isinstance(x, (Array, Tracer)):
        v = concrete(x, op, f"`{what}` must be a static integer")
        if v.ndim != 0:
            raise TypeError(f"{op}: `{what}` must be a scalar, got shape {v.shape}")
        x = v.item()
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"{op}: `{what}` must be an integer, got {x!r}") from None


def check_dtype(op: str, x, allowed: str):
    """Raise TypeError naming the dtype and the allowed kinds unless `x` qualifies.

    `allowed` is an array API kind ("numeric", "real floating", "integral",
    "bool", ...) or several joined with '|'.
    """
    d = get_aval(x).dtype
    kinds = tuple(k.strip() for k in allowed.split("|"))
    if not _dt.isdtype(d, kinds):
        names = [str(t) for t in _dt.ALL_DTYPES if _dt.isdtype(t, kinds)]
        raise TypeError(f"{op} does not support dtype {d}; allowed dtypes: {', '.join(names)}")
    return d


def is_complex(d) -> bool:
    return _dt.kind(d) == "c"


def no_numpy_feature(op: str, **kw):
    """Reject numpy arguments ember cannot honour (out=, order='F', ...) with the alternative."""
    for name, val in kw.items():
        if name == "out" and val is not None:
            raise TypeError(f"{op}: out= is not supported because ember arrays are immutable; "
                            f"use the return value instead (y = {op}(...)).")
        if name == "order" and val not in (None, "C", "K", "A"):
            raise TypeError(f"{op}: order={val!r} is not supported; ember arrays are row-major "
                            f"(order='C'). Transpose explicitly if you need another layout.")
        if name == "where" and val is not None and val is not True:
            raise TypeError(f"{op}: where= is not supported here; combine with "
                            f"ember.numpy.where(mask, x, identity) before the call instead.")
        if name == "casting" and val not in (None, "same_kind"):
            raise TypeError(f"{op}: casting={val!r} is not supported; convert with .astype() first.")


def index_dtype_for(*sizes) -> np.dtype:
    """int32 unless some extent needs int64."""
    return _dt.int64 if any(s >= 2 ** 31 - 1 for s in sizes) else INDEX_DTYPE


def device_put(x, device):
    """Move `x` to `device` (None: leave it where it is)."""
    if device is None:
        return x
    try:
        from ..api_device import device_put as _dp
    except ImportError:
        from ..array import cpu_device
        if device == cpu_device() or device == "cpu":
            return x
        raise ValueError(f"unknown device {device!r}; available: {cpu_device()}") from None
    return _dp(x, device)
