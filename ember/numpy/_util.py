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
from numpy.exceptions import AxisError as _NumpyAxisError

from .. import dtypes as _dt
from ..array import Array
from ..fx.core import (ConcretizationError, EmberError, Tracer, argument_note, const,  # noqa: F401
                       get_aval, user_source)
from ..fx.spelling import user_str

INDEX_DTYPE = _dt.int32  # the array API "default array index data type"


def _where() -> str:
    src = user_source()
    return f"\n  at {src}" if src else ""


class AxisError(EmberError, _NumpyAxisError):
    """An axis out of range for the array it applies to: names the function, the axis
    and the array's shape.  It is numpy's AxisError too (so a ValueError and an
    IndexError), so code catching numpy's exception keeps working.

    Example:
        >>> import ember.numpy as enp
        >>> try:
        ...     enp.sum(enp.ones(3), axis=5)
        ... except AxisError as e:
        ...     print(str(e).splitlines()[0])
        sum: axis 5 is out of bounds for an array of shape (3,) (valid axes: -1 to 0)
    """

    def __init__(self, msg, axis=None, ndim=None):
        super().__init__(msg)
        self._full_msg = msg
        self.axis, self.ndim = axis, ndim

    def __str__(self):
        return self._full_msg


def canonicalize_axis(axis, shape, op: str) -> int:
    """A non-negative axis in [0, ndim) for an array of `shape` (a tuple, or just its
    number of dimensions), or an `AxisError` naming `op`, the axis and the shape.

    Example:
        >>> canonicalize_axis(-1, (2, 3, 4), "sum")
        2
    """
    ndim = shape if isinstance(shape, int) else len(shape)
    try:
        a = operator.index(axis)
    except TypeError:
        raise TypeError(f"{op}: axis must be an integer, got {type(axis).__name__} "
                        f"{axis!r}{_where()}") from None
    if not -ndim <= a < ndim:
        what = f"shape {tuple(shape)}" if not isinstance(shape, int) else f"dimension {ndim}"
        valid = f"valid axes: {-ndim} to {ndim - 1}" if ndim else "a 0-d array has no axes"
        raise AxisError(f"{op}: axis {a} is out of bounds for an array of {what} ({valid})"
                        f"{_where()}", a, ndim)
    return a + ndim if a < 0 else a


def canonicalize_axes(axis, shape, op: str) -> tuple:
    """`None` -> all axes; an int or a sequence -> sorted distinct non-negative axes
    (`shape` as for `canonicalize_axis`)."""
    if axis is None:
        return tuple(range(shape if isinstance(shape, int) else len(shape)))
    if isinstance(axis, (tuple, list)):
        out = tuple(canonicalize_axis(a, shape, op) for a in axis)
        if len(set(out)) != len(out):
            raise ValueError(f"{op}: repeated axis in {tuple(axis)}{_where()}")
        return tuple(sorted(out))
    return (canonicalize_axis(axis, shape, op),)


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
            f"{user_str(get_aval(x))} under a trace (jit / vmap / make_graph){argument_note(x)}. Call it outside the "
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
