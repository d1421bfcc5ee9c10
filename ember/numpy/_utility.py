"""Utility functions: all, any, diff, and numpy helpers built on them (allclose,
array_equal, ediff1d, interp, cross, trapezoid, unwrap, ndim/shape/size, isscalar,
iterable).

Example:
    >>> import ember.numpy as enp
    >>> enp.diff(enp.asarray([1, 4, 9])).tolist()
    [3, 5]
"""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..fx.core import get_aval
from ._core import broadcast_shapes, broadcast_to, ensure_array, promote_args, promote_dtypes
from ._elementwise import (add, clip, divide, equal, isclose, isnan, multiply as mul, multiply,
                           remainder, subtract as sub)
from ._indexing import take
from ._manipulation import broadcast_arrays, concat, moveaxis, ravel, stack
from ._reductions import sum as _sum
from ._searching import searchsorted, where
from ._sorting import argsort
from ._util import canonicalize_axes, canonicalize_axis, const, no_numpy_feature

__all__ = ["all", "any", "diff", "allclose", "array_equal", "array_equiv", "ediff1d", "interp",
           "cross", "trapezoid", "ndim", "shape", "size", "unwrap", "isscalar", "iterable"]


def _bool(x):
    x = ensure_array(x)
    d = get_aval(x).dtype
    if d == _dt.bool_:
        return x
    return lax.ne(x, const(d, 0))


def _logical_reduce(a, axis, keepdims, where, is_all, op):
    x = _bool(a)
    av = get_aval(x)
    axes = canonicalize_axes(axis, av.shape, op)
    if where is not None and where is not True:
        w = broadcast_to(ensure_array(where), av.shape)
        fill = lax.broadcast_in_dim(const(_dt.bool_, is_all), av.shape, ()) if av.shape else \
            ensure_array(const(_dt.bool_, is_all))
        x = lax.select_n(w, fill, x)
    y = (lax.reduce_and if is_all else lax.reduce_or)(x, axes) if axes else x
    if keepdims:
        y = lax.reshape(y, tuple(1 if i in axes else s for i, s in enumerate(av.shape)))
    return ensure_array(y)


def all(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    """True when every entry along `axis` is non-zero (True for empty reductions).

    Example:
        >>> import ember.numpy as enp
        >>> bool(enp.all(enp.asarray([1, 2, 0])))
        False
    """
    no_numpy_feature("all", out=out)
    return _logical_reduce(a, axis, keepdims, where, True, "all")


def any(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    """True when some entry along `axis` is non-zero (False for empty reductions).

    Example:
        >>> import ember.numpy as enp
        >>> bool(enp.any(enp.asarray([0, 0, 3])))
        True
    """
    no_numpy_feature("any", out=out)
    return _logical_reduce(a, axis, keepdims, where, False, "any")


def diff(x, /, n=1, axis=-1, prepend=None, append=None):
    """The n-th discrete difference along `axis` (booleans: not-equal).

    Example:
        >>> import ember.numpy as enp
        >>> enp.diff(enp.asarray([1, 2, 4, 7]), n=2).tolist()
        [1, 1]
    """
    x = ensure_array(x)
    av = get_aval(x)
    if av.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"diff: order must be non-negative, got {n}")
    ax = canonicalize_axis(axis, av.shape, "diff")
    parts = []
    for extra in (prepend, append):
        if extra is None:
            parts.append(None)
            continue
        e = ensure_array(extra) if not isinstance(extra, (bool, int, float, complex)) else extra
        if isinstance(e, (bool, int, float, complex)) or get_aval(e).ndim == 0:
            shp = list(av.shape)
            shp[ax] = 1
            e = broadcast_to(promote_args("diff", e, x)[0] if isinstance(e, (bool, int, float, complex))
                             else e, tuple(shp))
        parts.append(e)
    seq = ([parts[0]] if parts[0] is not None else []) + [x] + ([parts[1]] if parts[1] is not None else [])
    if len(seq) > 1:
        x = concat(seq, axis=ax)
    for _ in range(n):
        m = get_aval(x).shape[ax]
        if m == 0:
            break
        hi = lax.slice_in_dim(x, 1, m, 1, ax)
        lo = lax.slice_in_dim(x, 0, m - 1, 1, ax)
        x = lax.ne(hi, lo) if get_aval(x).dtype == _dt.bool_ else lax.sub(hi, lo)
    return ensure_array(x)


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences between consecutive elements of the flattened array.

    Example:
        >>> import ember.numpy as enp
        >>> enp.ediff1d(enp.asarray([1, 3, 6]), to_begin=0).tolist()
        [0, 2, 3]
    """
    d = diff(ravel(ary))
    parts = []
    if to_begin is not None:
        parts.append(lax.convert_element_type(ravel(ensure_array(to_begin)), get_aval(d).dtype))
    parts.append(d)
    if to_end is not None:
        parts.append(lax.convert_element_type(ravel(ensure_array(to_end)), get_aval(d).dtype))
    return concat(parts) if len(parts) > 1 else d


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when every pair is close (see `isclose`).

    Example:
        >>> import ember.numpy as enp
        >>> bool(enp.allclose(enp.asarray([1.0]), 1.0 + 1e-9))
        True
    """
    return all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def array_equal(a1, a2, equal_nan=False):
    """True when both have the same shape and elements (a Python bool when shapes differ).

    Example:
        >>> import ember.numpy as enp
        >>> bool(enp.array_equal(enp.asarray([1, 2]), enp.asarray([1, 2])))
        True
    """
    a, b = ensure_array(a1), ensure_array(a2)
    if get_aval(a).shape != get_aval(b).shape:
        return ensure_array(np.bool_(False))
    a, b = promote_args("array_equal", a, b)
    eq = lax.eq(a, b)
    if equal_nan and _dt.kind(get_aval(a).dtype) in "fc":
        eq = lax.bitwise_or(eq, lax.bitwise_and(isnan(a), isnan(b)))
    return all(eq)


def array_equiv(a1, a2):
    """True when the inputs broadcast together and are equal everywhere.

    Example:
        >>> import ember.numpy as enp
        >>> bool(enp.array_equiv(enp.asarray([1, 1]), 1))
        True
    """
    a, b = ensure_array(a1), ensure_array(a2)
    try:
        broadcast_shapes(get_aval(a).shape, get_aval(b).shape)
    except TypeError:
        return ensure_array(np.bool_(False))
    return all(equal(a, b))


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of (xp, fp) at `x` (xp increasing).

    Example:
        >>> import ember.numpy as enp
        >>> enp.interp(enp.asarray([0.5, 1.5]), enp.asarray([0.0, 1.0, 2.0]),
        ...            enp.asarray([0.0, 10.0, 20.0])).tolist()
        [5.0, 15.0]
    """
    xp, fp = ensure_array(xp), ensure_array(fp)
    if get_aval(xp).ndim != 1 or get_aval(fp).ndim != 1 or \
            get_aval(xp).shape != get_aval(fp).shape:
        raise ValueError(f"interp: xp and fp must be 1-D of equal length, got "
                         f"{get_aval(xp).shape} and {get_aval(fp).shape}")
    x, xp_ = promote_dtypes("interp", x, xp, to_inexact=True)
    d = get_aval(x).dtype
    xp = ensure_array(xp_)
    fp = ensure_array(fp)
    if get_aval(fp).dtype != d and _dt.kind(get_aval(fp).dtype) != "c":
        fp = lax.convert_element_type(fp, d)
    n = get_aval(xp).shape[0]
    if n == 0:
        raise ValueError("interp: xp must not be empty")
    if period is not None:
        if period == 0:
            raise ValueError("interp: period must be non-zero")
        period = abs(period)
        x = remainder(x, period)
        xp = remainder(xp, period)
        order = argsort(xp)
        xp, fp = take(xp, order), take(fp, order)
        xp = concat([lax.sub(lax.slice(xp, (n - 1,), (n,)), const(d, period)), xp,
                     lax.add(lax.slice(xp, (0,), (1,)), const(d, period))])
        fp = concat([lax.slice(fp, (n - 1,), (n,)), fp, lax.slice(fp, (0,), (1,))])
        n += 2
    i = clip(searchsorted(xp, x, side="right"), 1, builtins_max(n - 1, 1))
    x0, x1 = take(xp, i - 1, mode="clip"), take(xp, i, mode="clip")
    f0, f1 = take(fp, i - 1, mode="clip"), take(fp, i, mode="clip")
    dx = lax.sub(x1, x0)
    safe = where(dx == 0, 1, dx)
    t = lax.div(lax.sub(x, x0), safe)
    out = where(dx == 0, f0, f0 + (f1 - f0) * t) if n > 1 else broadcast_to(f0, get_aval(x).shape)
    if period is None:
        lo = lax.slice(fp, (0,), (1,)) if left is None else left
        hi = lax.slice(fp, (n - 1,), (n,)) if right is None else right
        lo = lax.reshape(ensure_array(lo), ()) if get_aval(ensure_array(lo)).shape else lo
        hi = lax.reshape(ensure_array(hi), ()) if get_aval(ensure_array(hi)).shape else hi
        x0_all = lax.slice(xp, (0,), (1,))
        xn_all = lax.slice(xp, (n - 1,), (n,))
        out = where(x < lax.reshape(x0_all, ()), lo, out)
        out = where(x > lax.reshape(xn_all, ()), hi, out)
    return ensure_array(out)


def builtins_max(a, b):
    return a if a > b else b


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross product of 3-vectors (or the z-component for 2-vectors) along an axis.

    Example:
        >>> import ember.numpy as enp
        >>> enp.cross(enp.asarray([1, 0, 0]), enp.asarray([0, 1, 0])).tolist()
        [0, 0, 1]
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = promote_args("cross", a, b)
    a = moveaxis(ensure_array(a), axisa, -1)
    b = moveaxis(ensure_array(b), axisb, -1)
    na, nb = get_aval(a).shape[-1], get_aval(b).shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"cross: incompatible dimensions for cross product (dimension must be "
                         f"2 or 3), got {na} and {nb}")

    def comp(v, i, n):
        if i >= n:
            return None
        return lax.squeeze(lax.slice_in_dim(v, i, i + 1, 1, get_aval(v).ndim - 1),
                           (get_aval(v).ndim - 1,))
    a0, a1, a2 = comp(a, 0, na), comp(a, 1, na), comp(a, 2, na)
    b0, b1, b2 = comp(b, 0, nb), comp(b, 1, nb), comp(b, 2, nb)
    z = sub(mul(a0, b1), mul(a1, b0))
    if na == 2 and nb == 2:
        return ensure_array(z)
    zero = 0
    a2 = a2 if a2 is not None else zero
    b2 = b2 if b2 is not None else zero
    x = sub(mul(a1, b2), mul(a2, b1))
    y = sub(mul(a2, b0), mul(a0, b2))
    out = stack(list(np_broadcast(x, y, z)), axis=-1)
    return moveaxis(out, -1, axisc)


def np_broadcast(*xs):
    return broadcast_arrays(*xs)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integrate along `axis` with the composite trapezoidal rule.

    Example:
        >>> import ember.numpy as enp
        >>> float(enp.trapezoid(enp.asarray([1.0, 2.0, 3.0])))
        4.0
    """
    y = ensure_array(y)
    ya = get_aval(y)
    ax = canonicalize_axis(axis, ya.shape, "trapezoid")
    n = ya.shape[ax]
    if x is None:
        d = dx
    else:
        d = diff(ensure_array(x), axis=ax if get_aval(ensure_array(x)).ndim > 1 else -1)
        if get_aval(d).ndim == 1 and ya.ndim > 1:
            shp = [1] * ya.ndim
            shp[ax] = get_aval(d).shape[0]
            d = lax.reshape(d, tuple(shp))
    if n < 2:
        return _sum(multiply(lax.slice_in_dim(y, 0, 0, 1, ax), 1.0), axis=ax)
    avg = divide(add(lax.slice_in_dim(y, 1, n, 1, ax), lax.slice_in_dim(y, 0, n - 1, 1, ax)), 2)
    return _sum(multiply(d, avg), axis=ax)


def ndim(a):
    """Number of dimensions.

    Example:
        >>> import ember.numpy as enp
        >>> enp.ndim([[1, 2]])
        2
    """
    return get_aval(ensure_array(a)).ndim


def shape(a):
    """The shape tuple.

    Example:
        >>> import ember.numpy as enp
        >>> enp.shape([[1, 2]])
        (1, 2)
    """
    return get_aval(ensure_array(a)).shape


def size(a, axis=None):
    """Number of elements (along `axis` when given).

    Example:
        >>> import ember.numpy as enp
        >>> enp.size([[1, 2]])
        2
    """
    s = get_aval(ensure_array(a)).shape
    if axis is None:
        n = 1
        for v in s:
            n *= v
        return n
    return s[canonicalize_axis(axis, s, "size")]


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    """`p` with every jump larger than `discont` (default `period / 2`) along `axis` replaced
    by its value modulo `period` (numpy's unwrap of phase angles). Integers stay integers
    only when `period` is an integer; complex input is rejected, as in JAX. Differentiable.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> np.round(np.asarray(enp.unwrap(enp.asarray([0.0, 5.0, 10.0])), float), 4).tolist()
        [0.0, -1.2832, -2.5664]
    """
    from ._elementwise import abs as _abs
    from ._reductions import cumsum
    p = ensure_array(p)
    if _dt.kind(get_aval(p).dtype) == "c":
        raise ValueError(f"unwrap: complex input is not supported (unwrap the angle, "
                         f"enp.angle(z)), got {get_aval(p).str_user()}")
    if get_aval(p).ndim == 0:
        raise ValueError("unwrap: p must be at least 1-D, got a 0-d array")
    p, period = (ensure_array(v) for v in promote_dtypes("unwrap", p, period))
    ax = canonicalize_axis(axis, get_aval(p).shape, "unwrap")
    if get_aval(p).shape[ax] == 0:
        return p
    integral = _dt.kind(get_aval(p).dtype) in "iu"
    interval = period // 2 if integral else period / 2
    if discont is None:
        discont = period / 2
    dd = diff(p, axis=ax)
    ddmod = remainder(dd + interval, period) - interval
    # numpy maps a jump of exactly +period/2 to +period/2, not -period/2
    ddmod = where((ddmod == -interval) & (dd > 0), interval, ddmod)
    correct = where(_abs(dd) < discont, 0, ddmod - dd)
    m = get_aval(p).shape[ax]
    return concat([lax.slice_in_dim(p, 0, 1, 1, ax),
                   lax.slice_in_dim(p, 1, m, 1, ax) + cumsum(correct, axis=ax)], axis=ax)


def isscalar(element):
    """True for what numpy calls a scalar (Python and numpy scalars, strings) and for 0-d
    arrays, ember's or numpy's (JAX's rule; numpy says False for a 0-d array).

    Example:
        >>> import ember.numpy as enp
        >>> enp.isscalar(1.0), enp.isscalar(enp.asarray(2)), enp.isscalar(enp.ones(2))
        (True, True, False)
    """
    from ..array import Array
    from ..fx.core import Tracer
    if np.isscalar(element):
        return True
    if isinstance(element, (np.ndarray, Array, Tracer)):
        return get_aval(element).ndim == 0
    return False


def iterable(y):
    """True when `iter(y)` works (numpy's iterable; a 0-d array is not iterable).

    Example:
        >>> import ember.numpy as enp
        >>> enp.iterable([1, 2]), enp.iterable(enp.ones(3)), enp.iterable(2)
        (True, True, False)
    """
    try:
        iter(y)
    except TypeError:
        return False
    return True
