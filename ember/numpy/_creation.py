"""Array creation functions (arange, zeros, eye, linspace, meshgrid, tril, diag, ...),
built from `iota`, `broadcast_in_dim` and `select_n` so they stage small graphs.

Example:
    >>> import ember.numpy as enp
    >>> enp.arange(4).tolist()
    [0, 1, 2, 3]
"""
from __future__ import annotations

import math
import operator

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..array import Array, cpu_device, wrap_buffer
from ..backends.base import Device
from ..fx.core import ConcretizationError, Tracer, get_aval
from ._core import asarray, broadcast_shapes, broadcast_to, ensure_array, promote_args
from ._elementwise import abs as _abs, exp, log, pow as _pow, sign
from ._manipulation import diagonal, moveaxis
from ._util import concrete, concrete_or_none, const, device_put, no_numpy_feature

__all__ = [
    "arange", "empty", "empty_like", "eye", "identity", "from_dlpack", "full", "full_like",
    "linspace", "logspace", "geomspace", "meshgrid", "ones", "ones_like", "zeros", "zeros_like",
    "tri", "tril", "triu", "diag", "diagflat", "copy", "frombuffer", "fromfunction",
    "vander",
]


def _shape_arg(shape, op) -> tuple:
    if isinstance(shape, (int, np.integer, Tracer)) or getattr(shape, "ndim", None) == 0:
        shape = (shape,)   # numpy takes a rank-0 integer array as a length
    try:
        shape = tuple(operator.index(s) for s in shape)
    except ConcretizationError as e:
        raise ConcretizationError(f"{op}: the shape must be known while tracing, but it depends on "
                                  f"a traced value. Pass it as a static argument "
                                  f"(jit(..., static_argnums=...)) or compute it from .shape.\n{e}") from None
    except TypeError:
        raise TypeError(f"{op}: shape must be an int or a tuple of ints, got {shape!r}") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"{op}: negative dimensions are not allowed, got shape {shape}")
    return shape


def _device_put(x, device):
    return device_put(x, device)


def _filled(shape, value, dtype):
    """`value` (a rank-0 numpy scalar or ember scalar of `dtype`) broadcast to `shape`."""
    v = value
    if not isinstance(v, (Array, Tracer)):
        v = const(dtype, v)
    out = lax.broadcast_in_dim(v, shape, ())
    if isinstance(out, np.generic) or isinstance(out, np.ndarray):
        out = asarray(out)
    return out


def _default_dtype_of(value):
    if isinstance(value, (Array, Tracer, np.ndarray, np.generic)):
        return get_aval(value).dtype
    return _dt.dtype_and_weak(value)[0]


def full(shape, fill_value, dtype=None, *, device=None, order="C"):
    """An array of `shape` filled with `fill_value`.

    Example:
        >>> import ember.numpy as enp
        >>> enp.full((2,), 7).tolist()
        [7, 7]
    """
    return _full(shape, fill_value, dtype, device, order, "full")


def _full(shape, fill_value, dtype, device, order, op):
    """`full`, with errors naming `op` (the creation function the user called)."""
    no_numpy_feature(op, order=order)
    shape = _shape_arg(shape, op)
    if dtype is None:
        dtype = _default_dtype_of(fill_value)
    dtype = _dt.canonicalize(dtype)
    if isinstance(fill_value, (Array, Tracer, np.ndarray)):
        v = ensure_array(fill_value)
        if get_aval(v).dtype != dtype:
            v = lax.convert_element_type(v, dtype)
        vs = get_aval(v).shape
        if vs:
            broadcast_shapes(vs, shape, op=op)
            return _device_put(broadcast_to(v, shape), device)
        return _device_put(_filled(shape, v, dtype), device)
    if _dt.kind(dtype) in "iu" and isinstance(fill_value, float):
        fill_value = int(fill_value) if math.isfinite(fill_value) else fill_value
    try:
        v = np.array(fill_value, dtype=dtype)[()]
    except OverflowError:
        raise OverflowError(f"{op}: fill value {fill_value!r} does not fit in dtype {dtype}; "
                            f"pass a wider dtype") from None
    return _device_put(_filled(shape, v, dtype), device)


def zeros(shape, dtype=None, *, device=None, order="C"):
    """An array of zeros (float32 unless `dtype` says otherwise).

    Example:
        >>> import ember.numpy as enp
        >>> enp.zeros((2, 1)).tolist()
        [[0.0], [0.0]]
    """
    return _full(shape, 0, _dt.default_float if dtype is None else dtype, device, order, "zeros")


def ones(shape, dtype=None, *, device=None, order="C"):
    """An array of ones (float32 unless `dtype` says otherwise).

    Example:
        >>> import ember.numpy as enp
        >>> enp.ones(2, dtype="int8").tolist()
        [1, 1]
    """
    return _full(shape, 1, _dt.default_float if dtype is None else dtype, device, order, "ones")


def empty(shape, dtype=None, *, device=None, order="C"):
    """An array of the given shape (ember arrays are immutable, so it holds zeros).

    Example:
        >>> import ember.numpy as enp
        >>> enp.empty((0, 3)).shape
        (0, 3)
    """
    return _full(shape, 0, _dt.default_float if dtype is None else dtype, device, order, "empty")


def _like(x, fill_value, dtype, device, shape, op):
    a = get_aval(ensure_array(x))
    shp = a.shape if shape is None else _shape_arg(shape, op)
    if device is None and isinstance(x, Array) and not x._device.host_buffers:
        device = x._device   # the array API: on x's device (a GPU array's zeros stay there)
    out = _full(shp, fill_value, a.dtype if dtype is None else dtype, device, "C", op)
    if dtype is None and a.weak_type:
        out = lax.convert_element_type(out, a.dtype, weak_type=True)   # as JAX: weak like x
    return out


def full_like(x, /, fill_value, *, dtype=None, device=None, shape=None, order="K"):
    """An array shaped like `x` filled with `fill_value` (dtype of `x` by default).

    Example:
        >>> import ember.numpy as enp
        >>> enp.full_like(enp.asarray([1, 2]), 2.7).tolist()
        [2, 2]
    """
    return _like(x, fill_value, dtype, device, shape, "full_like")


def zeros_like(x, /, *, dtype=None, device=None, shape=None, order="K"):
    """Zeros shaped like `x`.

    Example:
        >>> import ember.numpy as enp
        >>> enp.zeros_like(enp.asarray([1, 2])).tolist()
        [0, 0]
    """
    return _like(x, 0, dtype, device, shape, "zeros_like")


def ones_like(x, /, *, dtype=None, device=None, shape=None, order="K"):
    """Ones shaped like `x`.

    Example:
        >>> import ember.numpy as enp
        >>> enp.ones_like(enp.asarray([1.5])).tolist()
        [1.0]
    """
    return _like(x, 1, dtype, device, shape, "ones_like")


def empty_like(x, /, *, dtype=None, device=None, shape=None, order="K"):
    """An array shaped like `x` (zeros: ember arrays are immutable).

    Example:
        >>> import ember.numpy as enp
        >>> enp.empty_like(enp.asarray([1, 2])).shape
        (2,)
    """
    return _like(x, 0, dtype, device, shape, "empty_like")


def _static_count(v, op, what, signed=False):
    """A Python int from a size-like argument, non-negative unless `signed`, with an
    error naming `op` and the argument."""
    try:
        i = operator.index(v)
    except TypeError:
        raise TypeError(f"{op}: `{what}` must be an integer, got {type(v).__name__} "
                        f"{v!r}") from None
    if not signed and i < 0:
        raise ValueError(f"{op}: `{what}` must be non-negative, got {i}")
    return i


def _static_number(v, op, what):
    if isinstance(v, (Array, Tracer, np.ndarray, np.generic)):
        v = concrete(v, op, f"`{what}` must be a static number (it fixes the output shape)")
        if np.ndim(v) != 0:
            raise TypeError(f"{op}: `{what}` must be a scalar, got shape {np.shape(v)}")
        v = v.item()
    if not isinstance(v, (bool, int, float, complex)):
        raise TypeError(f"{op}: `{what}` must be a number, got {type(v).__name__}")
    return v


def _ramp(n, dtype, start, step):
    """start + step * [0, 1, ..., n-1] in `dtype`, computed without drift."""
    dtype = _dt.canonicalize(dtype)
    if n == 0:
        return full((0,), 0, dtype)
    k = _dt.kind(dtype)
    if k in "iu":
        it = _dt.int64 if (n >= 2 ** 31 or _dt.iinfo(dtype).bits > 32) else _dt.int32
        r = lax.iota(it, (n,), 0)
        if step != 1:
            r = lax.mul(r, const(it, step))
        if start != 0:
            r = lax.add(r, const(it, start))
        return lax.convert_element_type(r, dtype)
    if k == "b":
        r = lax.iota(_dt.int32, (n,), 0)
        return lax.ne(lax.add(lax.mul(r, const(_dt.int32, int(step))), const(_dt.int32, int(start))),
                      const(_dt.int32, 0))
    # Floats: compute in (at least) float32 and round once into `dtype`.
    wd = _dt.float64 if dtype in (_dt.float64, _dt.complex128) else (
        _dt.complex64 if k == "c" else _dt.float32)
    r = lax.iota(wd, (n,), 0)
    r = lax.add(lax.mul(r, const(wd, step)), const(wd, start))
    return lax.convert_element_type(r, dtype)


def arange(start, /, stop=None, step=None, *, dtype=None, device=None):
    """Evenly spaced values in [start, stop) (the arguments are static numbers).

    Python ints give int32, floats float32 (the array API defaults).

    Example:
        >>> import ember.numpy as enp
        >>> enp.arange(1, 7, 2).tolist()
        [1, 3, 5]
    """
    start = _static_number(start, "arange", "start")
    if stop is None:
        start, stop = 0, start
    else:
        stop = _static_number(stop, "arange", "stop")
    step = 1 if step is None else _static_number(step, "arange", "step")
    if step == 0:
        raise ValueError("arange: step must not be zero")
    for what, v in (("start", start), ("stop", stop), ("step", step)):
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"arange: `{what}` must be finite, got {v} (the length would be "
                             f"undefined)")
    if dtype is None:
        if any(isinstance(v, complex) for v in (start, stop, step)):
            raise TypeError("arange does not accept complex arguments")
        if any(isinstance(v, float) for v in (start, stop, step)):
            dtype = _dt.default_float
        else:
            dtype = _dt.default_int
            if any(not -2 ** 31 <= v < 2 ** 31 for v in (start, stop)):
                dtype = _dt.int64
    dtype = _dt.canonicalize(dtype)
    if all(isinstance(v, (int, bool)) for v in (start, stop, step)):
        n = max(0, -((start - stop) // step))
    else:
        n = max(0, math.ceil((stop - start) / step))
    if n and _dt.kind(dtype) in "iu":
        # numpy's arange wraps (arange(300, dtype=int8) ends at 43); a ramp whose ends
        # do not fit is refused like any other Python int out of range
        info = _dt.iinfo(dtype)
        for v in (start, start + (n - 1) * step):
            if not info.min <= int(v) <= info.max:
                raise OverflowError(f"arange: value {v!r} of the ramp is out of range for dtype "
                                    f"{dtype} [{info.min}, {info.max}]; pass a wider dtype")
    return _device_put(_ramp(n, dtype, start, step), device)


def linspace(start, stop, /, num=50, *, dtype=None, device=None, endpoint=True, retstep=False,
             axis=0):
    """`num` evenly spaced samples over [start, stop] (or [start, stop) without endpoint).

    `start`/`stop` may be arrays (the samples then run along `axis`).

    Example:
        >>> import ember.numpy as enp
        >>> enp.linspace(0, 1, 5).tolist()
        [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, got {num}")
    scalars = all(isinstance(v, (bool, int, float, complex)) for v in (start, stop))
    if scalars:
        is_c = isinstance(start, complex) or isinstance(stop, complex)
        out_dtype = _dt.canonicalize(dtype) if dtype is not None else (
            _dt.default_complex if is_c else _dt.default_float)
        # numpy computes in double precision and rounds into the output dtype.
        wd = _dt.complex128 if (is_c or _dt.kind(out_dtype) == "c") else _dt.float64
        s, e = const(wd, start), const(wd, stop)
        bshape = ()
    else:
        s, e = promote_args("linspace", start, stop, to_inexact=True)
        wd = get_aval(s).dtype
        out_dtype = _dt.canonicalize(dtype) if dtype is not None else wd
        if _dt.kind(out_dtype) == "c" and _dt.kind(wd) != "c":
            wd = _dt.complex_dtype(wd)
            s, e = lax.convert_element_type(s, wd), lax.convert_element_type(e, wd)
        bshape = get_aval(s).shape
    div = (num - 1) if endpoint else num
    shape = (num,) + bshape
    bdims = tuple(range(1, 1 + len(bshape)))
    if num == 0:
        out = full(shape, 0, out_dtype)
        step = const(wd, np.nan)
    else:
        idx = lax.iota(wd if _dt.kind(wd) != "c" else _dt.real_dtype(wd), shape, 0)
        if _dt.kind(wd) == "c":
            idx = lax.convert_element_type(idx, wd)
        delta = lax.sub(e, s)
        sb = lax.broadcast_in_dim(s, shape, bdims) if bshape else s
        db = lax.broadcast_in_dim(delta, shape, bdims) if bshape else delta
        if div > 0:
            step = lax.div(delta, const(wd, div))
            stb = lax.broadcast_in_dim(step, shape, bdims) if bshape else step
            y = lax.add(lax.mul(idx, stb), sb)
        else:
            step = const(wd, np.nan)
            y = lax.add(lax.mul(idx, db), sb)
        if endpoint and num > 1:
            eb = lax.broadcast_in_dim(e, shape, bdims) if bshape else lax.broadcast_in_dim(e, shape, ())
            last = lax.eq(lax.iota(_dt.int32, shape, 0), const(_dt.int32, num - 1))
            y = lax.select_n(last, y, eb)
        if _dt.kind(out_dtype) in "iu":
            y = lax.floor(y) if _dt.kind(wd) != "c" else y
        out = lax.convert_element_type(y, out_dtype)
        if not isinstance(out, (Array, Tracer)):
            out = asarray(out)
    if axis != 0:
        out = moveaxis(out, 0, axis)
    out = _device_put(out, device)
    if retstep:
        return out, (step if isinstance(step, (Array, Tracer)) else asarray(step))
    return out


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """`base ** linspace(start, stop, num)`.

    Example:
        >>> import ember.numpy as enp
        >>> enp.logspace(0, 2, 3).tolist()
        [1.0, 10.0, 100.0]
    """
    y = linspace(start, stop, num, endpoint=endpoint, axis=axis,
                 dtype=None if dtype is None or _dt.kind(_dt.canonicalize(dtype)) in "iu" else dtype)
    out = _pow(asarray(base, dtype=get_aval(y).dtype) if not isinstance(base, (Array, Tracer)) else base, y)
    if dtype is not None:
        out = lax.convert_element_type(out, _dt.canonicalize(dtype))
    return out


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Samples evenly spaced on a log scale from `start` to `stop` (same sign, non-zero).

    Example:
        >>> import ember.numpy as enp
        >>> [round(v, 3) for v in enp.geomspace(1, 1000, 4).tolist()]
        [1.0, 10.0, 100.0, 1000.0]
    """
    s, e = promote_args("geomspace", start, stop, to_inexact=True)
    if _dt.kind(get_aval(s).dtype) == "c":
        raise TypeError("geomspace: complex endpoints are not supported")
    for what, v in (("start", start), ("stop", stop)):
        cv = concrete_or_none(v)
        if cv is not None and np.any(cv == 0):
            raise ValueError(f"geomspace: `{what}` must be non-zero (a geometric sequence "
                             f"cannot include zero), got {cv.tolist()}")
    sg = sign(s)
    y = exp(linspace(log(_abs(s)), log(_abs(e)), num, endpoint=endpoint))
    bshape = get_aval(y).shape
    sgb = lax.broadcast_in_dim(sg, bshape, tuple(range(1, len(bshape)))) if bshape else sg
    y = lax.mul(y, sgb)
    # exact endpoints, as numpy
    if num > 0:
        first = lax.eq(lax.iota(_dt.int32, bshape, 0), const(_dt.int32, 0))
        y = lax.select_n(first, y, lax.broadcast_in_dim(s, bshape, tuple(range(1, len(bshape)))))
        if endpoint and num > 1:
            last = lax.eq(lax.iota(_dt.int32, bshape, 0), const(_dt.int32, num - 1))
            y = lax.select_n(last, y, lax.broadcast_in_dim(e, bshape, tuple(range(1, len(bshape)))))
    if dtype is not None:
        y = lax.convert_element_type(y, _dt.canonicalize(dtype))
    if axis != 0:
        y = moveaxis(y, 0, axis)
    return y


def _tri_mask(n, m, k):
    """Boolean (n, m) mask of j - i <= k."""
    if n == 0 or m == 0:
        return full((n, m), False, _dt.bool_)
    k = -n if k < -n else m if k > m else k  # j - i spans [1 - n, m - 1]; k may exceed int32
    i = lax.iota(_dt.int32, (n, m), 0)
    j = lax.iota(_dt.int32, (n, m), 1)
    return lax.le(lax.sub(j, i), const(_dt.int32, k))


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None, M=None, N=None):
    """A 2-D array with ones on the k-th diagonal and zeros elsewhere.

    Example:
        >>> import ember.numpy as enp
        >>> enp.eye(2, 3, k=1).tolist()
        [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    if n_cols is None:
        n_cols = M
    n = _static_count(n_rows, "eye", "n_rows")
    m = n if n_cols is None else _static_count(n_cols, "eye", "n_cols")
    k = _static_count(k, "eye", "k", signed=True)
    dtype = _dt.default_float if dtype is None else _dt.canonicalize(dtype)
    if n == 0 or m == 0 or not -n < k < m:  # no diagonal element (k may exceed int32)
        return _device_put(full((n, m), 0, dtype), device)
    i = lax.iota(_dt.int32, (n, m), 0)
    j = lax.iota(_dt.int32, (n, m), 1)
    mask = lax.eq(lax.sub(j, i), const(_dt.int32, k))
    return _device_put(lax.convert_element_type(mask, dtype), device)


def identity(n, dtype=None, *, device=None):
    """The n x n identity matrix.

    Example:
        >>> import ember.numpy as enp
        >>> enp.identity(2, dtype="int32").tolist()
        [[1, 0], [0, 1]]
    """
    return eye(n, dtype=dtype, device=device)


def tri(N, M=None, k=0, dtype=None, *, device=None):
    """Ones at and below the k-th diagonal of an N x M array.

    Example:
        >>> import ember.numpy as enp
        >>> enp.tri(2, dtype="int32").tolist()
        [[1, 0], [1, 1]]
    """
    n = _static_count(N, "tri", "N")
    m = n if M is None else _static_count(M, "tri", "M")
    k = _static_count(k, "tri", "k", signed=True)
    dtype = _dt.default_float if dtype is None else _dt.canonicalize(dtype)
    return _device_put(lax.convert_element_type(_tri_mask(n, m, k), dtype), device)


def _masked_tri(x, k, lower, op):
    x = ensure_array(x)
    a = get_aval(x)
    if a.ndim < 2:
        raise ValueError(f"{op}: x must have at least 2 dimensions, got shape {a.shape}")
    n, m = a.shape[-2:]
    k = operator.index(k)
    mask = _tri_mask(n, m, k if lower else k - 1)
    if not lower:
        mask = lax.bitwise_not(mask) if n and m else mask
    mask = lax.broadcast_in_dim(mask, a.shape, (a.ndim - 2, a.ndim - 1))
    zero = lax.broadcast_in_dim(const(a.dtype, 0), a.shape, ())
    return lax.select_n(mask, zero, x)


def tril(x, /, k=0):
    """The lower triangle of (a stack of) matrices: zero above the k-th diagonal.

    Example:
        >>> import ember.numpy as enp
        >>> enp.tril(enp.ones((2, 2))).tolist(), enp.tril(enp.ones((2, 2)), -1).tolist()
        ([[1.0, 0.0], [1.0, 1.0]], [[0.0, 0.0], [1.0, 0.0]])
    """
    return _masked_tri(x, k, True, "tril")


def triu(x, /, k=0):
    """The upper triangle of (a stack of) matrices: zero below the k-th diagonal.

    Example:
        >>> import ember.numpy as enp
        >>> enp.triu(enp.ones((2, 2))).tolist()
        [[1.0, 1.0], [0.0, 1.0]]
    """
    return _masked_tri(x, k, False, "triu")


def diag(v, k=0):
    """The k-th diagonal of a 2-D array, or a 2-D array with 1-D `v` on its k-th diagonal.

    Example:
        >>> import ember.numpy as enp
        >>> enp.diag(enp.asarray([1, 2])).tolist()
        [[1, 0], [0, 2]]
    """
    v = ensure_array(v)
    a = get_aval(v)
    k = operator.index(k)
    if a.ndim == 2:
        return diagonal(v, offset=k)
    if a.ndim != 1:
        raise ValueError(f"diag: input must be 1-D or 2-D, got shape {a.shape}")
    m = a.shape[0]
    n = m + abs(k)
    if n == 0:
        return full((0, 0), 0, a.dtype)
    # Put v[r] at (r, r + k) for k >= 0 (indexed by row) or (r - k, r) for k < 0 (by column).
    vp = lax.pad(v, const(a.dtype, 0), ((0, n - m, 0),))
    if k >= 0:
        vb = lax.broadcast_in_dim(vp, (n, n), (0,))
    else:
        vb = lax.broadcast_in_dim(vp, (n, n), (1,))
    i = lax.iota(_dt.int32, (n, n), 0)
    j = lax.iota(_dt.int32, (n, n), 1)
    mask = lax.eq(lax.sub(j, i), const(_dt.int32, k))
    return lax.select_n(mask, lax.broadcast_in_dim(const(a.dtype, 0), (n, n), ()), vb)


def diagflat(v, k=0):
    """A 2-D array with the flattened input on its k-th diagonal.

    Example:
        >>> import ember.numpy as enp
        >>> enp.diagflat(enp.asarray([[1, 2]])).shape
        (2, 2)
    """
    v = ensure_array(v)
    return diag(lax.reshape(v, (get_aval(v).size,)), k)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-D `x`: columns are powers of `x`.

    Example:
        >>> import ember.numpy as enp
        >>> enp.vander(enp.asarray([2, 3]), 3).tolist()
        [[4, 2, 1], [9, 3, 1]]
    """
    x = ensure_array(x)
    a = get_aval(x)
    if a.ndim != 1:
        raise ValueError(f"vander: x must be 1-D, got shape {a.shape}")
    n = a.shape[0] if N is None else operator.index(N)
    powers = lax.iota(_dt.int32, (n,), 0) if n else full((0,), 0, _dt.int32)
    if not increasing and n:
        powers = lax.rev(powers, (0,))
    xb = lax.broadcast_in_dim(x, (a.shape[0], n), (0,))
    pb = lax.broadcast_in_dim(powers, (a.shape[0], n), (1,))
    if _dt.kind(a.dtype) in "iub":
        pb = lax.convert_element_type(pb, a.dtype if a.dtype != _dt.bool_ else _dt.int32)
    return _pow(xb, pb)


def meshgrid(*arrays, indexing="xy", sparse=False, copy=True):
    """Coordinate matrices from 1-D coordinate vectors ('xy': Cartesian, 'ij': matrix).

    Example:
        >>> import ember.numpy as enp
        >>> X, Y = enp.meshgrid(enp.arange(3), enp.arange(2))
        >>> X.shape
        (2, 3)
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    arrays = [ensure_array(a) for a in arrays]
    for a in arrays:
        if get_aval(a).ndim != 1:
            arrays = [lax.reshape(b, (get_aval(b).size,)) for b in arrays]
            break
    n = len(arrays)
    sizes = [get_aval(a).shape[0] for a in arrays]
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, a in enumerate(arrays):
        d = i
        if indexing == "xy" and n >= 2 and i < 2:
            d = 1 - i
        if sparse:
            shp = [1] * n
            shp[d] = get_aval(a).shape[0]
            out.append(lax.reshape(a, tuple(shp)))
        else:
            out.append(lax.broadcast_in_dim(a, tuple(sizes), (d,)))
    return out


def from_dlpack(x, /, *, device=None, copy=None):
    """An ember array from any object with `__dlpack__`.  By default (and with
    copy=True) the data is copied, since ember arrays are immutable and the producer
    could still write its buffer; copy=False shares the producer's memory read-only
    (as JAX does: the producer must then leave it unchanged).

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.from_dlpack(np.arange(3)).tolist()
        [0, 1, 2]
    """
    if copy not in (None, True, False):
        raise TypeError(f"from_dlpack: copy must be None, True or False, got {copy!r}")
    if isinstance(x, Array):
        return _device_put(x, device)
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack needs an object with __dlpack__, got {type(x).__name__}")
    from .._host import _on_gpu, from_gpu_dlpack
    if device is not None and not isinstance(device, Device):
        from ..backends.base import DeviceNotFoundError, lookup_device
        try:
            device = lookup_device(str(device), what="from_dlpack: device")
        except DeviceNotFoundError as e:   # the array API's error for an unusable device
            raise BufferError(f"from_dlpack: {e}") from None
    if _on_gpu(x):   # CUDA memory (CuPy, torch): stays on its GPU, shared with copy=False
        return from_gpu_dlpack(x, copy=copy, device=device)
    a = np.from_dlpack(x, copy=copy) if copy is False else np.array(np.from_dlpack(x), copy=True)
    _dt.canonicalize(a.dtype)
    out = wrap_buffer(a, cpu_device())
    return out if device is None else _device_put(out, device)


def copy(a, order="K"):
    """A copy of `a` (arrays are immutable, so this is `a` itself as an ember array).

    Example:
        >>> import ember.numpy as enp
        >>> enp.copy([1, 2]).tolist()
        [1, 2]
    """
    no_numpy_feature("copy", order=order)
    return ensure_array(a)


def frombuffer(buffer, dtype=float, count=-1, offset=0):
    """An array from the bytes of a buffer.

    Example:
        >>> import ember.numpy as enp
        >>> enp.frombuffer(b"\\x01\\x02", dtype="uint8").tolist()
        [1, 2]
    """
    d = _dt.canonicalize(dtype) if dtype is not float else _dt.float64
    return asarray(np.frombuffer(buffer, dtype=d, count=count, offset=offset).copy())


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """Call `function` on coordinate arrays of the given shape.

    Example:
        >>> import ember.numpy as enp
        >>> enp.fromfunction(lambda i, j: i + j, (2, 2), dtype=int).tolist()
        [[0, 1], [1, 2]]
    """
    shape = _shape_arg(shape, "fromfunction")
    d = _dt.canonicalize(dtype)
    coords = [lax.iota(d, shape, i) if all(shape) else full(shape, 0, d) for i in range(len(shape))]
    return function(*coords, **kwargs)


def stack_nested(obj, dtype=None):
    """`asarray` of nested lists/tuples that contain ember arrays or tracers: stack them."""
    def conv(o):
        if isinstance(o, (list, tuple)):
            parts = [conv(e) for e in o]
            if not parts:
                return asarray(np.zeros((0,), _dt.default_float))
            parts = promote_args("asarray", *parts)
            shapes = {get_aval(p).shape for p in parts}
            if len(shapes) != 1:
                raise ValueError(f"asarray: ragged nested sequence with element shapes "
                                 f"{sorted(shapes)}")
            parts = [ensure_array(p) for p in parts]
            return lax.concatenate([lax.expand_dims(p, (0,)) for p in parts], 0)
        return ensure_array(o) if not isinstance(o, (bool, int, float, complex)) else o
    out = conv(obj)
    out = ensure_array(out)
    if dtype is not None:
        out = lax.convert_element_type(out, _dt.canonicalize(dtype))
    return out
