"""Array creation from Python data and the promotion/broadcasting every
`ember.numpy` function uses before it binds primitives.

Example:
    >>> from ember.numpy._core import asarray
    >>> asarray([1, 2]).dtype
    dtype('int32')
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from .._host import from_host, no_copy_error
from ..api_device import device_put
from ..array import Array, wrap_buffer
from ..fx.core import Tracer, get_aval, shape_error, weak_const
from ..fx.prims import convert as _cv
from ..fx.prims import shape as _sh

_PY_SCALARS = (bool, int, float, complex)


def asarray(obj, dtype=None, *, device=None, copy=None):
    """Convert to an ember Array (numpy arrays keep their dtype; Python data gets
    float32 / int32 defaults).  `copy` follows the array API: True always copies, False
    never does (a numpy array's memory is then shared read-only: do not write the
    source afterwards; a ValueError where a copy is needed), None copies host data (ember
    arrays are immutable, the source might not be) and reuses ember arrays.

    Example:
        >>> asarray([1.5, 2.0]).dtype
        dtype('float32')
    """
    if copy not in (None, True, False):
        raise TypeError(f"asarray: copy must be None, True or False, got {copy!r}")
    if dtype is not None:
        dtype = _dt.canonicalize(dtype)
    if isinstance(obj, (Array, Tracer)):
        if dtype is not None and obj.dtype != dtype:
            if copy is False:
                raise no_copy_error(obj, f"converting {obj.dtype} to {dtype} makes a new array")
            obj = _cv.convert_element_type(obj, dtype)
        elif copy is True and isinstance(obj, Array):
            d = obj._device
            obj = wrap_buffer(d.backend.put(obj._host(), d), d, obj.aval)
        if device is not None and isinstance(obj, Array):
            obj = device_put(obj, device)
        return obj
    if isinstance(obj, (list, tuple)) and any(isinstance(e, (Array, Tracer)) for e in _flat(obj)):
        if copy is False:
            raise no_copy_error(obj, "stacking a sequence of arrays makes a new array")
        from ._creation import stack_nested
        return stack_nested(obj, dtype)
    out = from_host(obj, dtype, copy=copy)
    if device is not None:
        out = device_put(out, device)
    return out


def _flat(obj):
    for e in obj:
        if isinstance(e, (list, tuple)):
            yield from _flat(e)
        else:
            yield e


def array(obj, dtype=None, *, copy=True, device=None):
    """Like `asarray`, copying by default (numpy's `array`).

    Example:
        >>> array(3).dtype
        dtype('int32')
    """
    return asarray(obj, dtype=dtype, device=device, copy=copy)


def broadcast_shapes(*shapes, op="broadcast"):
    """The broadcast shape of several shapes, or a clear error naming all of them.

    Example:
        >>> broadcast_shapes((2, 1), (3,))
        (2, 3)
    """
    nd = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(nd):
        d = 1
        for s in shapes:
            j = len(s) - nd + i
            if j < 0:
                continue
            if s[j] != 1:
                if d != 1 and s[j] != d:
                    raise shape_error(op, "shapes " + ", ".join(str(tuple(s)) for s in shapes)
                                      + " cannot be broadcast together")
                d = s[j]
        out.append(d)
    return tuple(out)


def broadcast_to(x, shape):
    """Broadcast `x` to `shape` following numpy's rules.

    Example:
        >>> broadcast_to(asarray([1, 2]), (3, 2)).shape
        (3, 2)
    """
    shape = tuple(int(s) for s in shape)
    a = get_aval(x)
    if a.shape == shape:
        return x
    if broadcast_shapes(a.shape, shape, op="broadcast_to") != shape:
        raise shape_error("broadcast_to", f"cannot broadcast shape {a.shape} to {shape}")
    nd = len(shape)
    dims = tuple(range(nd - a.ndim, nd))
    return _sh.broadcast_in_dim(x, shape, dims)


_KIND_RANK = {d: _dt.KIND_RANK[_dt.kind(d)] for d in _dt.ALL_DTYPES}
_PY_RANK = _dt.PY_KIND_RANK


_SCALAR_CACHE: dict = {}


def _scalar_as(op, v, dtype):
    """A Python scalar as a rank-0 numpy value of `dtype` (weak typing: it adopts the dtype).

    Conversions are memoised (numpy scalars are immutable): `x + 1` in a loop is hot.
    Zero floats and NaN are not cached, so -0.0 never aliases 0.0.
    """
    key = (type(v), v, dtype)
    hit = _SCALAR_CACHE.get(key)
    if hit is not None:
        return hit
    try:
        out = np.array(v, dtype=dtype)[()]
    except OverflowError:
        raise OverflowError(f"{op}: Python scalar {v!r} is out of range for dtype {dtype}; "
                            f"convert the array to a wider dtype first") from None
    if len(_SCALAR_CACHE) < 4096 and (type(v) is not float or (v == v and v != 0.0)) \
            and not (type(v) is complex and (v != v or v.real == 0.0 or v.imag == 0.0)):
        _SCALAR_CACHE[key] = out
    return out


def promote_args(op: str, *args, to_inexact: bool = False):
    """Promote dtypes and broadcast shapes of the operands of an elementwise op.

    Python scalars stay rank-0 numpy scalars (the IR broadcasts rank-0 operands),
    so `x + 1` binds `add x 1` without materialising a broadcast.
    """
    if len(args) == 2:
        # Fast paths for the common `array op scalar` and `array op same-typed array`.
        x, y = args
        ry = _PY_RANK.get(type(y))
        if ry is not None:
            ax = getattr(x, "aval", None)
            if ax is not None and not ax.weak_type:
                rx = _KIND_RANK.get(ax.dtype, -1)
                if rx >= ry and (rx >= 2 or not to_inexact):
                    return [x, _scalar_as(op, y, ax.dtype)]
        else:
            rx = _PY_RANK.get(type(x))
            ay = getattr(y, "aval", None)
            if rx is not None:
                if ay is not None and not ay.weak_type:
                    ry = _KIND_RANK.get(ay.dtype, -1)
                    if ry >= rx and (ry >= 2 or not to_inexact):
                        return [_scalar_as(op, x, ay.dtype), y]
            elif ay is not None:
                ax = getattr(x, "aval", None)
                if (ax is not None and ax.dtype == ay.dtype and ax.shape == ay.shape
                        and ax.weak_type == ay.weak_type
                        and (not to_inexact or _KIND_RANK.get(ax.dtype, 0) >= 2)):
                    return [x, y]
    return _promote_general(op, args, to_inexact)


def _promote_general(op, args, to_inexact):
    dts, weak, avals = [], [], []
    for a in args:
        av = get_aval(a)
        avals.append(av)
        dts.append(av.dtype)
        weak.append(av.weak_type)
    dtype, res_weak = _dt.promote(dts, weak)
    if to_inexact and not _dt.is_inexact(dtype):
        dtype = inexact_for(dts, weak)
    shapes = [av.shape for av in avals]
    nonscalar = [s for s in shapes if s]
    if nonscalar and any(s != nonscalar[0] for s in nonscalar):
        shape = broadcast_shapes(*shapes, op=op)
    else:
        shape = None
    out = []
    for a, av in zip(args, avals):
        t = type(a)
        if t in _PY_SCALARS:
            # every operand weak: the scalar stays weak, so the result does (as in JAX)
            c = _scalar_as(op, a, dtype)
            out.append(weak_const(c) if res_weak else c)
            continue
        if av.dtype != dtype or av.weak_type != res_weak:
            # a weak operand of a strong result is made strong first (as JAX does), or a
            # composite built on it (integer power, floor_divide) would return it weak
            a = _cv.convert_element_type(a, dtype, weak_type=res_weak)
        if shape is not None and av.shape and av.shape != shape:
            a = broadcast_to(a, shape)
        elif shape is not None and not av.shape and isinstance(a, np.ndarray):
            a = a[()]
        out.append(a)
    return out


def promote_dtypes(op: str, *args, to_inexact: bool = False):
    """Convert operands to their common dtype (array-API promotion) without broadcasting.

    Python scalars become rank-0 ember arrays of that dtype.
    """
    avals = [get_aval(a) for a in args]
    dtype, _ = _dt.promote([a.dtype for a in avals], [a.weak_type for a in avals])
    if to_inexact and not _dt.is_inexact(dtype):
        dtype = inexact_for([a.dtype for a in avals], [a.weak_type for a in avals])
    out = []
    for a, av in zip(args, avals):
        if type(a) in _PY_SCALARS:
            a = asarray(_scalar_as(op, a, dtype))
        elif av.dtype != dtype:
            a = _cv.convert_element_type(a, dtype)
        out.append(ensure_array(a))
    return out


def inexact_for(dts, weak=None) -> np.dtype:
    """The floating dtype that integer/bool operands go to in float-only functions:
    float64 when a strong 64-bit (or uint32) integer is involved, else float32."""
    if weak is None:
        weak = [False] * len(dts)
    for d, w in zip(dts, weak):
        if not w and d in (_dt.int64, _dt.uint64, _dt.uint32):
            return _dt.float64
    return _dt.default_float


def ensure_array(x):
    """Turn numpy/Python inputs into ember values, leaving Arrays and tracers alone."""
    if isinstance(x, (Array, Tracer)):
        return x
    return asarray(x)
