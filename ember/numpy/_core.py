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
from ..array import Array, wrap_buffer
from ..fx.core import Tracer, get_aval, shape_error
from ..fx.prims import convert as _cv
from ..fx.prims import shape as _sh

_PY_SCALARS = (bool, int, float, complex)


def _int_overflow(bad, dtype, op: str, hint: str) -> OverflowError:
    info = np.iinfo(dtype)
    if np.dtype(dtype).itemsize == 8:
        hint = "use uint64" if 0 <= bad < 2 ** 64 else \
            "it needs more than 64 bits; use float64 (or split the value)"
    from ..fx.core import user_source
    src = user_source()
    what = "Python int" if isinstance(bad, int) else "value"
    return OverflowError(f"{op}: {what} {bad!r} is out of range for dtype {dtype} "
                         f"[{info.min}, {info.max}]; {hint}" + (f"\n  at {src}" if src else ""))


def _first_out_of_range(obj, dtype, ints_only=False):
    """The first number (Python int with `ints_only`) in nested Python data outside
    `dtype`'s range (iterative walk)."""
    info = np.iinfo(dtype)
    kinds = (int, np.integer) if ints_only else (int, float, np.number)
    stack = [obj]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(reversed(v))
        elif isinstance(v, kinds) and not isinstance(v, bool):
            try:
                iv = int(v)
            except (OverflowError, ValueError):  # inf / nan
                continue
            if not info.min <= iv <= info.max:
                return v
    return None


def _holds_float(obj) -> bool:
    """Whether nested Python data holds a float (then ints in it are promoted, not checked)."""
    stack = [obj]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, (float, np.floating)):
            return True
    return False


def _python_data_as_int(obj, dtype) -> np.ndarray:
    """Python data in an integer dtype.  numpy's constructor refuses values out of range
    (astype would wrap 300 to 44 in int8); the error names the value and the dtype."""
    try:
        return np.array(obj, dtype=dtype)
    except ValueError:
        raise TypeError(f"cannot convert {type(obj).__name__} to an ember array of {dtype}: "
                        f"ragged or non-numeric data") from None
    except OverflowError:
        bad = _first_out_of_range(obj, dtype)
        if bad is None:
            raise
        raise _int_overflow(bad, dtype, "asarray", "pass a wider dtype, e.g. int64") from None


def _host_array(obj, dtype) -> np.ndarray:
    if isinstance(obj, np.ndarray) or isinstance(obj, np.generic):
        a = np.array(obj, copy=True)
        if dtype is not None:
            a = a.astype(dtype)
        return a
    if hasattr(obj, "__dlpack__") and not isinstance(obj, (list, tuple)):
        a = np.array(np.from_dlpack(obj), copy=True)
        return a.astype(dtype) if dtype is not None else a
    if dtype is not None and _dt.kind(dtype) in "iu":
        return _python_data_as_int(obj, dtype)
    try:
        a = np.array(obj)
    except ValueError:  # numpy's message for ragged nesting speaks of "sequence" elements
        raise TypeError(f"cannot convert {type(obj).__name__} to an ember array: ragged nested "
                        f"sequences (every level must have equal lengths)") from None
    if dtype is None and a.dtype.kind in "iuO" and a.size:
        info = np.iinfo(_dt.default_int)
        exact = a.dtype.kind != "O" and info.min <= a.min() and a.max() <= info.max
        bad = None if exact else _first_out_of_range(obj, _dt.default_int)
        if bad is not None:
            raise _int_overflow(bad, _dt.default_int, "asarray",
                                "pass dtype=ember.numpy.int64 (the default integer is int32)")
    if dtype is None and a.dtype.kind == "f" and a.size and np.abs(a).max() >= 2.0 ** 63:
        # numpy makes float64 of ints beyond int64 mixed with negatives ([2**63, -1]);
        # those ints must not become float32 silently (a NaN max compares False, but
        # data holding a NaN holds a float, which the check below accepts anyway)
        bad = None if _holds_float(obj) else _first_out_of_range(obj, _dt.default_int,
                                                                   ints_only=True)
        if bad is not None:
            raise _int_overflow(bad, _dt.default_int, "asarray",
                                "pass dtype=ember.numpy.int64 (the default integer is int32)")
    if a.dtype == object:
        raise TypeError(f"cannot convert {type(obj).__name__} to an ember array: "
                        f"ragged or non-numeric data")
    if dtype is not None:
        return a.astype(dtype)
    # Python data: floats default to float32, ints to int32, complex to complex64.
    k = a.dtype.kind
    if k == "f":
        return a.astype(_dt.default_float)
    if k in "iu":
        return a.astype(_dt.default_int)
    if k == "c":
        return a.astype(_dt.default_complex)
    if k == "U" or k == "S":
        raise TypeError("ember arrays cannot hold strings")
    return a


def _no_copy_error(obj, why):
    return ValueError(f"asarray: copy=False, but {why}, so a copy is needed; pass copy=None "
                      f"(copy only if needed) or copy=True")


def _shared_host_array(obj, dtype):
    """A read-only numpy view of `obj`'s memory for copy=False (the array API: never copy)."""
    if isinstance(obj, np.ndarray):
        a = obj
    elif hasattr(obj, "__dlpack__") and not isinstance(obj, (list, tuple, np.generic)):
        a = np.from_dlpack(obj, copy=False)
    else:
        raise _no_copy_error(obj, f"a {type(obj).__name__} has no array buffer to share")
    if dtype is not None and a.dtype != dtype:
        raise _no_copy_error(obj, f"its dtype {a.dtype} differs from the requested {dtype}")
    v = a.view()
    v.flags.writeable = False
    return v


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
                raise _no_copy_error(obj, f"converting {obj.dtype} to {dtype} makes a new array")
            obj = _cv.convert_element_type(obj, dtype)
        elif copy is True and isinstance(obj, Array):
            obj = wrap_buffer(np.array(obj._host(), copy=True), None, obj.aval)
        if device is not None and isinstance(obj, Array):
            from ..api_device import device_put
            obj = device_put(obj, device)
        return obj
    if isinstance(obj, (list, tuple)) and any(isinstance(e, (Array, Tracer)) for e in _flat(obj)):
        if copy is False:
            raise _no_copy_error(obj, "stacking a sequence of arrays makes a new array")
        from ._creation import stack_nested
        return stack_nested(obj, dtype)
    a = _shared_host_array(obj, dtype) if copy is False else _host_array(obj, dtype)
    _dt.canonicalize(a.dtype)
    out = wrap_buffer(a)
    if device is not None:
        from ..api_device import device_put
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


_KIND_RANK = {d: {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}[_dt.kind(d)] for d in _dt.ALL_DTYPES}
_PY_RANK = {bool: 0, int: 1, float: 2, complex: 3}


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
    dtype, _ = _dt.promote(dts, weak)
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
            out.append(_scalar_as(op, a, dtype))
            continue
        if av.dtype != dtype:
            a = _cv.convert_element_type(a, dtype)
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
