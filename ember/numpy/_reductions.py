"""Statistical reductions: sum, prod, max, min, mean, var, std, cumulative sums and
products, median, quantiles, averages, and their NaN-ignoring variants.

Example:
    >>> import ember.numpy as enp
    >>> float(enp.mean(enp.asarray([1.0, 2.0, 3.0])))
    2.0
"""
from __future__ import annotations

import builtins
import warnings

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..fx.core import get_aval
from ._core import broadcast_shapes, broadcast_to, ensure_array, inexact_for, promote_args
from ._elementwise import divide, isnan, multiply, subtract
from ._indexing import take_along_axis
from ._sorting import sort
from ._util import canonicalize_axes, canonicalize_axis, concrete_or_none, const, no_numpy_feature

__all__ = [
    "sum", "prod", "max", "min", "amax", "amin", "mean", "var", "std", "cumulative_sum",
    "cumulative_prod", "cumsum", "cumprod", "nancumsum", "nancumprod", "median", "average",
    "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd", "nanmedian", "ptp",
    "quantile", "percentile", "nanquantile", "nanpercentile",
]


def _accum_dtype(d):
    """The array API's dtype for sum/prod/cumulative_sum: small integers widen to the
    default integer (unsigned to the unsigned of the same width), bool to int32."""
    k = _dt.kind(d)
    if k == "b":
        return _dt.default_int
    if k == "i":
        return d if d.itemsize > 4 else _dt.int32
    if k == "u":
        return d if d.itemsize > 4 else _dt.uint32
    return d


def _to(x, d):
    return x if get_aval(x).dtype == d else lax.convert_element_type(x, d)


def _prep(a, axis, op):
    x = ensure_array(a)
    av = get_aval(x)
    axes = canonicalize_axes(axis, av.shape, op)
    return x, av, axes


def _keep(y, av, axes, keepdims):
    # a reduction's result is strongly typed even over a weak input, as in JAX
    y = lax.convert_element_type(y, get_aval(y).dtype)
    if not keepdims:
        return y
    shape = tuple(1 if i in axes else s for i, s in enumerate(av.shape))
    return lax.reshape(y, shape)


def _masked(x, where, fill, op):
    """Replace entries where `where` is False by `fill` (numpy's where= for reductions)."""
    if where is None or where is True:
        return x
    w = ensure_array(where)
    if get_aval(w).dtype != _dt.bool_:
        raise TypeError(f"{op}: where= must be a boolean array, got {get_aval(w).dtype}")
    shape = get_aval(x).shape
    broadcast_shapes(get_aval(w).shape, shape, op=op)
    w = broadcast_to(w, shape)
    fillv = lax.broadcast_in_dim(const(get_aval(x).dtype, fill), shape, ()) if shape else \
        ensure_array(const(get_aval(x).dtype, fill))
    return lax.select_n(w, fillv, x)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    """Sum over `axis` (all axes by default).  Small integer dtypes accumulate in the
    default integer dtype, as the array API specifies; float16/bfloat16 accumulate in
    float32 and round once at the end (JAX's choice: numpy adds float16 in float16).

    Example:
        >>> import ember.numpy as enp
        >>> enp.sum(enp.asarray([[1, 2], [3, 4]]), axis=0).tolist()
        [4, 6]
    """
    no_numpy_feature("sum", out=out)
    x, av, axes = _prep(a, axis, "sum")
    d = _dt.canonicalize(dtype) if dtype is not None else _accum_dtype(av.dtype)
    acc = _dt.accumulation_dtype(d)
    x = _masked(_to(x, acc), where, 0, "sum")
    y = lax.reduce_sum(x, axes)
    if initial is not None:
        y = lax.add(y, const(acc, initial))
    return ensure_array(_keep(_to(y, d), av, axes, keepdims))


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Product over `axis` (all axes by default), with `sum`'s accumulation dtypes.

    Example:
        >>> import ember.numpy as enp
        >>> int(enp.prod(enp.asarray([1, 2, 3])))
        6
    """
    no_numpy_feature("prod", out=out)
    x, av, axes = _prep(a, axis, "prod")
    d = _dt.canonicalize(dtype) if dtype is not None else _accum_dtype(av.dtype)
    acc = _dt.accumulation_dtype(d)
    x = _masked(_to(x, acc), where, 1, "prod")
    y = lax.reduce_prod(x, axes)
    if initial is not None:
        y = lax.mul(y, const(acc, initial))
    return ensure_array(_keep(_to(y, d), av, axes, keepdims))


def _extreme(a, axis, keepdims, initial, where, op, is_max):
    x, av, axes = _prep(a, axis, op)
    if _dt.kind(av.dtype) == "c":
        raise TypeError(f"{op} does not support complex dtype {av.dtype} (complex numbers are "
                        f"not ordered); reduce abs(x) or real(x) instead")
    if initial is None:
        if any(av.shape[i] == 0 for i in axes):
            raise ValueError(f"{op}: zero-size array (shape {av.shape}) to reduction operation "
                             f"with no identity; pass initial= to define the result")
        if where is not None and where is not True:
            raise ValueError(f"{op}: reducing with where= needs initial= (the value of "
                             f"all-False slices)")
    if where is not None and where is not True:
        if av.dtype == _dt.bool_:
            fill = not is_max
        elif _dt.kind(av.dtype) in "iu":
            info = _dt.iinfo(av.dtype)
            fill = int(info.min) if is_max else int(info.max)
        else:
            fill = -np.inf if is_max else np.inf
        x = _masked(x, where, fill, op)
    if av.dtype == _dt.bool_:
        y = lax.reduce_or(x, axes) if is_max else lax.reduce_and(x, axes)
    else:
        y = lax.reduce_max(x, axes) if is_max else lax.reduce_min(x, axes)
    if initial is not None:
        c = const(av.dtype, initial)
        y = (lax.max if is_max else lax.min)(y, c)
    return ensure_array(_keep(y, av, axes, keepdims))


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    """Largest value over `axis` (NaN propagates).  Empty reductions need `initial`.

    Example:
        >>> import ember.numpy as enp
        >>> int(enp.max(enp.asarray([3, 7, 1])))
        7
    """
    no_numpy_feature("max", out=out)
    return _extreme(a, axis, keepdims, initial, where, "max", True)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    """Smallest value over `axis` (NaN propagates).  Empty reductions need `initial`.

    Example:
        >>> import ember.numpy as enp
        >>> int(enp.min(enp.asarray([3, 7, 1])))
        1
    """
    no_numpy_feature("min", out=out)
    return _extreme(a, axis, keepdims, initial, where, "min", False)


def amax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """numpy's name for `max`.

    Example:
        >>> import ember.numpy as enp
        >>> int(enp.amax(enp.asarray([3, 7, 1])))
        7
    """
    no_numpy_feature("amax", out=out)
    return _extreme(a, axis, keepdims, initial, where, "amax", True)


def amin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """numpy's name for `min`.

    Example:
        >>> import ember.numpy as enp
        >>> int(enp.amin(enp.asarray([3, 7, 1])))
        1
    """
    no_numpy_feature("amin", out=out)
    return _extreme(a, axis, keepdims, initial, where, "amin", False)


def _count(av, axes):
    n = 1
    for i in axes:
        n *= av.shape[i]
    return n


def _float_of(x, dtype, op):
    av = get_aval(x)
    if dtype is not None:
        d = _dt.canonicalize(dtype)
    elif _dt.kind(av.dtype) in "fc":
        d = av.dtype
    else:
        d = inexact_for([av.dtype])
    if av.dtype != d:
        x = lax.convert_element_type(x, d)
    return x, d


def _float_acc(x, dtype, op):
    """`x` in the dtype a mean/var over it accumulates in, and the result dtype."""
    x, d = _float_of(x, dtype, op)
    return _to(x, _dt.accumulation_dtype(d)), d


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Arithmetic mean over `axis` (integers give a floating result; empty -> NaN).
    Half-precision inputs are summed and divided in float32, so neither the element
    count nor the sum overflows float16; the result keeps the input's dtype.

    Example:
        >>> import ember.numpy as enp
        >>> enp.mean(enp.asarray([[1, 2], [3, 4]]), axis=1).tolist()
        [1.5, 3.5]
    """
    no_numpy_feature("mean", out=out)
    x, av, axes = _prep(a, axis, "mean")
    src = x
    x, out_d = _float_acc(x, dtype, "mean")
    if ((where is None or where is True) and _dt.kind(av.dtype) in "biu"
            and av.dtype.itemsize <= 4 and _dt.kind(out_d) == "f"):
        # narrow integers sum exactly in int64 (|sum| < 2**63 for any array that fits in
        # memory) and divide in float64, rounding once: a float32 running sum lost the low
        # digits of large values (mean of int32 extremes off by ~1) and eager and jit,
        # summing in different orders, lost different ones
        s = lax.reduce_sum(lax.convert_element_type(src, _dt.int64), axes)
        y = lax.div(lax.convert_element_type(s, _dt.float64), const(_dt.float64, _count(av, axes)))
        return ensure_array(_keep(_to(y, out_d), av, axes, keepdims))
    d = get_aval(x).dtype
    rd = _dt.real_dtype(d)
    if where is not None and where is not True:
        x = _masked(x, where, 0, "mean")
        w = broadcast_to(ensure_array(where), av.shape)
        n = lax.reduce_sum(lax.convert_element_type(w, rd), axes)
        s = lax.reduce_sum(x, axes)
        y = lax.div(s, lax.convert_element_type(n, d) if rd != d else n)
    else:
        s = lax.reduce_sum(x, axes)
        y = lax.div(s, const(d, _count(av, axes)))
    return ensure_array(_keep(_to(y, out_d), av, axes, keepdims))


def _correction(ddof, correction, op):
    if correction is not None:
        if ddof not in (0, None) and ddof != correction:
            raise ValueError(f"{op}: pass either ddof or correction, not both")
        return correction
    return 0 if ddof is None else ddof


def _abs2(c):
    if _dt.kind(get_aval(c).dtype) == "c":
        return lax.add(lax.mul(lax.real(c), lax.real(c)), lax.mul(lax.imag(c), lax.imag(c)))
    return lax.mul(c, c)


def _variance(a, axis, dtype, ddof, keepdims, where, correction, mean, name):
    """(variance in the accumulation dtype, the result's real dtype, aval, axes): var
    rounds it to the result dtype, std takes the root first (a float16 variance may
    overflow where its root does not)."""
    corr = _correction(ddof, correction, name)
    x, av, axes = _prep(a, axis, name)
    x, out_d = _float_acc(x, dtype, name)
    d = get_aval(x).dtype
    rd = _dt.real_dtype(d)
    out_rd = _dt.real_dtype(out_d)
    full_axes_shape = tuple(1 if i in axes else s for i, s in enumerate(av.shape))
    if where is not None and where is not True:
        w = broadcast_to(ensure_array(where), av.shape)
        n = lax.reduce_sum(lax.convert_element_type(w, rd), axes)
        xm = _masked(x, where, 0, name)
        mu = lax.div(lax.reduce_sum(xm, axes), lax.convert_element_type(n, d))
        c = lax.sub(x, broadcast_to(lax.reshape(mu, full_axes_shape), av.shape))
        sq = _masked(_abs2(c), where, 0, name)
        denom = lax.max(lax.sub(n, const(rd, corr)), const(rd, 0))
        y = lax.div(lax.reduce_sum(sq, axes), denom)
        return y, out_rd, av, axes
    n = _count(av, axes)
    if mean is not None:
        mu_b = broadcast_to(_to(ensure_array(mean), d), full_axes_shape)
    else:
        mu_b = lax.reshape(lax.div(lax.reduce_sum(x, axes), const(d, n)), full_axes_shape)
    c = lax.sub(x, broadcast_to(mu_b, av.shape)) if av.shape else lax.sub(x, mu_b)
    sq = _abs2(c)
    denom = builtins.max(n - corr, 0)
    y = lax.div(lax.reduce_sum(sq, axes), const(rd, denom))
    return y, out_rd, av, axes




def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None, mean=None):
    """Variance over `axis`, dividing by N - correction (`ddof` is numpy's name).

    Example:
        >>> import ember.numpy as enp
        >>> float(enp.var(enp.asarray([1.0, 2.0, 3.0, 4.0])))
        1.25
    """
    no_numpy_feature("var", out=out)
    y, out_rd, av, axes = _variance(a, axis, dtype, ddof, keepdims, where, correction, mean, "var")
    return ensure_array(_keep(_to(y, out_rd), av, axes, keepdims))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None, mean=None):
    """Standard deviation: sqrt(var), the root taken in the accumulation dtype.

    Example:
        >>> import ember.numpy as enp
        >>> float(enp.std(enp.asarray([1.0, 3.0])))
        1.0
    """
    no_numpy_feature("std", out=out)
    y, out_rd, av, axes = _variance(a, axis, dtype, ddof, keepdims, where, correction, mean, "std")
    return ensure_array(_keep(_to(lax.sqrt(y), out_rd), av, axes, keepdims))


def _cumulative(a, axis, dtype, include_initial, prim, identity, op, flatten_none, out=None):
    no_numpy_feature(op, out=out)
    x = ensure_array(a)
    av = get_aval(x)
    if av.ndim == 0:
        x = lax.reshape(x, (1,))
        av = get_aval(x)
    if axis is None:
        if av.ndim == 1:
            axis = 0
        elif flatten_none:
            x = lax.reshape(x, (av.size,))
            av = get_aval(x)
            axis = 0
        else:
            raise ValueError(f"{op}: axis must be given for arrays with more than one "
                             f"dimension (got shape {av.shape})")
    ax = canonicalize_axis(axis, av.shape, op)
    d = _dt.canonicalize(dtype) if dtype is not None else _accum_dtype(av.dtype)
    if av.dtype != d:
        x = lax.convert_element_type(x, d)
    y = prim(x, ax) if av.shape[ax] else x
    if include_initial:
        cfg = [(0, 0, 0)] * av.ndim
        cfg[ax] = (1, 0, 0)
        y = lax.pad(y, const(d, identity), tuple(cfg))
    return ensure_array(lax.convert_element_type(y, d))   # strong, as every reduction


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """Running sums along `axis` (optionally starting with 0).

    Example:
        >>> import ember.numpy as enp
        >>> enp.cumulative_sum(enp.asarray([1, 2, 3]), include_initial=True).tolist()
        [0, 1, 3, 6]
    """
    return _cumulative(x, axis, dtype, include_initial, lax.cumsum, 0, "cumulative_sum", False)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """Running products along `axis` (optionally starting with 1).

    Example:
        >>> import ember.numpy as enp
        >>> enp.cumulative_prod(enp.asarray([1, 2, 3])).tolist()
        [1, 2, 6]
    """
    return _cumulative(x, axis, dtype, include_initial, lax.cumprod, 1, "cumulative_prod", False)


def cumsum(a, axis=None, dtype=None, out=None):
    """numpy's cumsum: running sums along `axis` (of the flattened array when None).

    Example:
        >>> import ember.numpy as enp
        >>> enp.cumsum(enp.asarray([[1, 2], [3, 4]])).tolist()
        [1, 3, 6, 10]
    """
    no_numpy_feature("cumsum", out=out)
    return _cumulative(a, axis, dtype, False, lax.cumsum, 0, "cumsum", True)


def cumprod(a, axis=None, dtype=None, out=None):
    """numpy's cumprod: running products along `axis` (of the flattened array when None).

    Example:
        >>> import ember.numpy as enp
        >>> enp.cumprod(enp.asarray([1, 2, 3])).tolist()
        [1, 2, 6]
    """
    no_numpy_feature("cumprod", out=out)
    return _cumulative(a, axis, dtype, False, lax.cumprod, 1, "cumprod", True)


def _nan_filled(a, fill):
    x = ensure_array(a)
    if _dt.kind(get_aval(x).dtype) not in "fc":
        return x
    shape = get_aval(x).shape
    f = const(get_aval(x).dtype, fill)
    fb = lax.broadcast_in_dim(f, shape, ()) if shape else ensure_array(f)
    return lax.select_n(isnan(x), x, fb)


def nancumsum(a, axis=None, dtype=None, out=None):
    """cumsum treating NaN as 0.

    Example:
        >>> import ember.numpy as enp
        >>> enp.nancumsum(enp.asarray([1.0, float("nan"), 2.0])).tolist()
        [1.0, 1.0, 3.0]
    """
    return _cumulative(_nan_filled(a, 0), axis, dtype, False, lax.cumsum, 0, "nancumsum", True,
                       out)


def nancumprod(a, axis=None, dtype=None, out=None):
    """cumprod treating NaN as 1.

    Example:
        >>> import ember.numpy as enp
        >>> enp.nancumprod(enp.asarray([2.0, float("nan"), 2.0])).tolist()
        [2.0, 2.0, 4.0]
    """
    return _cumulative(_nan_filled(a, 1), axis, dtype, False, lax.cumprod, 1, "nancumprod", True,
                       out)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Sum treating NaN as 0.

    Example:
        >>> import ember.numpy as enp
        >>> float(enp.nansum(enp.asarray([1.0, float("nan")])))
        1.0
    """
    _prep(a, axis, "nansum")
    return sum(_nan_filled(a, 0), axis, dtype, out, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Product treating NaN as 1.

    Example:
        >>> import ember.numpy as enp
        >>> float(enp.nanprod(enp.asarray([2.0, float("nan")])))
        2.0
    """
    _prep(a, axis, "nanprod")
    return prod(_nan_filled(a, 1), axis, dtype, out, keepdims, initial, where)


def _nan_extreme(a, axis, keepdims, initial, where, is_max, op):
    x, av, _ = _prep(a, axis, op)
    if _dt.kind(av.dtype) != "f":
        return (max if is_max else min)(x, axis, None, keepdims, initial, where)
    y = (max if is_max else min)(_nan_filled(x, -np.inf if is_max else np.inf), axis, None,
                                 keepdims, initial, where)
    # all-NaN slices stay NaN
    axes = canonicalize_axes(axis, av.shape, op)
    alln = lax.reduce_and(isnan(x), axes) if axes else isnan(x)
    alln = _keep(alln, av, axes, keepdims)
    nanv = const(av.dtype, np.nan)
    shape = get_aval(y).shape
    return ensure_array(lax.select_n(alln, y, lax.broadcast_in_dim(nanv, shape, ()) if shape
                                     else ensure_array(nanv)))


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Maximum ignoring NaN (NaN for all-NaN slices).

    Example:
        >>> import ember.numpy as enp
        >>> float(enp.nanmax(enp.asarray([1.0, float("nan")])))
        1.0
    """
    no_numpy_feature("nanmax", out=out)
    return _nan_extreme(a, axis, keepdims, initial, where, True, "nanmax")


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Minimum ignoring NaN (NaN for all-NaN slices).

    Example:
        >>> import ember.numpy as enp
        >>> float(enp.nanmin(enp.asarray([1.0, float("nan")])))
        1.0
    """
    no_numpy_feature("nanmin", out=out)
    return _nan_extreme(a, axis, keepdims, initial, where, False, "nanmin")


def _notnan_mask(x):
    return lax.bitwise_not(isnan(x))


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Mean ignoring NaN (NaN for all-NaN slices).

    Example:
        >>> import ember.numpy as enp
        >>> float(enp.nanmean(enp.asarray([1.0, float("nan"), 3.0])))
        2.0
    """
    no_numpy_feature("nanmean", out=out)
    x, _, _ = _prep(a, axis, "nanmean")
    if _dt.kind(get_aval(x).dtype) not in "fc":
        return mean(x, axis, dtype, None, keepdims, where=where)
    m = _notnan_mask(x)
    if where is not None and where is not True:
        m = lax.bitwise_and(m, broadcast_to(ensure_array(where), get_aval(x).shape))
    return mean(x, axis, dtype, None, keepdims, where=m)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           correction=None):
    """Variance ignoring NaN.

    Example:
        >>> import ember.numpy as enp
        >>> float(enp.nanvar(enp.asarray([1.0, float("nan"), 3.0])))
        1.0
    """
    no_numpy_feature("nanvar", out=out)
    x, _, _ = _prep(a, axis, "nanvar")
    if _dt.kind(get_aval(x).dtype) not in "fc":
        return var(x, axis, dtype, None, ddof, keepdims, where=where, correction=correction)
    m = _notnan_mask(x)
    if where is not None and where is not True:
        m = lax.bitwise_and(m, broadcast_to(ensure_array(where), get_aval(x).shape))
    return var(_nan_filled(x, 0), axis, dtype, None, ddof, keepdims, where=m,
               correction=correction)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           correction=None):
    """Standard deviation ignoring NaN.

    Example:
        >>> import ember.numpy as enp
        >>> float(enp.nanstd(enp.asarray([1.0, float("nan"), 3.0])))
        1.0
    """
    _prep(a, axis, "nanstd")
    return ensure_array(lax.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where=where,
                                        correction=correction)))


def ptp(a, axis=None, out=None, keepdims=False):
    """Range of values (max - min) along `axis`.

    Example:
        >>> import ember.numpy as enp
        >>> int(enp.ptp(enp.asarray([4, 9, 2])))
        7
    """
    no_numpy_feature("ptp", out=out)
    _prep(a, axis, "ptp")
    return subtract(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """Weighted average along `axis` (plain mean without weights).

    Example:
        >>> import ember.numpy as enp
        >>> float(enp.average(enp.asarray([1.0, 3.0]), weights=enp.asarray([3.0, 1.0])))
        1.5
    """
    x, av, _ = _prep(a, axis, "average")
    if weights is None:
        avg = mean(x, axis, keepdims=keepdims)
        if returned:
            axes = canonicalize_axes(axis, av.shape, "average")
            n = full_count = _count(av, axes)
            del full_count
            from ._creation import full_like
            return avg, full_like(avg, n)
        return avg
    w = ensure_array(weights)
    wv = get_aval(w)
    if wv.shape != av.shape:
        if axis is None:
            raise TypeError(f"average: weights of shape {wv.shape} differ from a's shape "
                            f"{av.shape}; pass axis= for 1-D weights")
        if wv.ndim != 1 or isinstance(axis, (tuple, list)):
            raise TypeError(f"average: 1-D weights are needed when shapes differ, got {wv.shape}")
        ax = canonicalize_axis(axis, av.shape, "average")
        if wv.shape[0] != av.shape[ax]:
            raise ValueError(f"average: length of weights {wv.shape[0]} differs from axis {ax} "
                             f"of shape {av.shape}")
        w = lax.broadcast_in_dim(w, av.shape, (ax,))
    x, w = promote_args("average", x, w, to_inexact=True)
    d = get_aval(x).dtype
    acc = _dt.accumulation_dtype(d)
    x, w = _to(x, acc), _to(w, acc)
    scl = sum(w, axis, keepdims=keepdims)
    avg = _to(divide(sum(multiply(x, w), axis, keepdims=keepdims), scl), d)
    if returned:
        return avg, broadcast_to(_to(scl, d), get_aval(avg).shape)
    return ensure_array(avg)


# --- order statistics ----------------------------------------------------------------

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf",
            "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf", "hazen",
            "weibull", "median_unbiased", "normal_unbiased")


def _quantile(a, q, axis, method, keepdims, ignore_nan, op):
    if method not in _METHODS[:5]:
        raise ValueError(f"{op}: method {method!r} is not supported; use one of {_METHODS[:5]}")
    x = ensure_array(a)
    av = get_aval(x)
    if _dt.kind(av.dtype) == "c":
        raise TypeError(f"{op} does not support complex inputs")
    x, d = _float_of(x, None, op)
    axes = canonicalize_axes(axis, av.shape, op)
    rest = tuple(i for i in range(av.ndim) if i not in axes)
    # reduced axes go last, flattened to one
    xt = lax.transpose(x, rest + axes)
    bshape = tuple(av.shape[i] for i in rest)
    n = _count(av, axes)
    xt = lax.reshape(xt, bshape + (n,))
    wd = _dt.float64  # positions in double precision, like numpy (tiny q must not round to 0)
    qv = concrete_or_none(q)
    if qv is not None:
        qv = np.asarray(qv, dtype=np.float64)
        if np.any(qv < 0) or np.any(qv > 1):
            raise ValueError(f"{op}: quantiles must be in the range [0, 1]")
        qarr = ensure_array(qv.astype(wd))
    else:
        qarr = lax.convert_element_type(q, wd)
    qshape = get_aval(qarr).shape
    if n == 0:
        return _empty_quantile(d, qshape, bshape, av.shape, axes, keepdims, op)
    srt = sort(xt, axis=-1)
    nan_any = lax.reduce_or(isnan(xt), (len(bshape),))
    if ignore_nan:
        cnt = lax.reduce_sum(lax.convert_element_type(lax.bitwise_not(isnan(xt)), _dt.int32),
                             (len(bshape),))
        nvalid = lax.convert_element_type(cnt, wd)
    else:
        nvalid = const(wd, n)
    # broadcast to qshape + bshape
    full = qshape + bshape
    qb = lax.broadcast_in_dim(qarr, full, tuple(range(len(qshape))))
    nb = lax.broadcast_in_dim(nvalid, full, tuple(range(len(qshape), len(full)))) \
        if ignore_nan else nvalid
    pos = lax.mul(qb, lax.sub(nb, const(wd, 1)))
    lo = lax.floor(pos)
    if method == "lower":
        pos = lo
    elif method == "higher":
        pos = lax.ceil(pos)
    elif method == "nearest":
        pos = lax.round(pos)
    hi = lax.min(lax.add(lo, const(wd, 1)), lax.max(lax.sub(nb, const(wd, 1)), const(wd, 0)))
    top = lax.max(lax.sub(nb, const(wd, 1)), const(wd, 0))
    lo = lax.max(lax.min(lo, top), const(wd, 0))
    pos_c = lax.max(lax.min(pos, top), const(wd, 0))
    # move q dims behind the batch dims for take_along_axis on the last axis
    nq = len(qshape)
    perm = tuple(range(nq, len(full))) + tuple(range(nq))
    srt_b = lax.reshape(srt, bshape + (n,))

    def gather_at(p):
        idx = lax.convert_element_type(p, _dt.int32)
        idx = lax.transpose(idx, perm) if nq else idx
        idx = lax.reshape(idx, bshape + (int(np.prod(qshape, dtype=np.int64)),))
        g = take_along_axis(srt_b, idx, axis=-1, mode="clip")
        g = lax.reshape(g, bshape + qshape)
        inv = tuple(range(len(bshape), len(full))) + tuple(range(len(bshape)))
        return lax.transpose(g, inv) if nq else g

    if method in ("lower", "higher", "nearest"):
        res = gather_at(pos_c)
    else:
        a_lo = gather_at(lo)
        a_hi = gather_at(hi)
        if method == "midpoint":
            # numpy: the mean of the neighbours, or the value itself at an exact index
            exact = lax.eq(pos_c, lo)
            half = lax.broadcast_in_dim(const(d, 0.5), get_aval(exact).shape, ()) \
                if get_aval(exact).shape else const(d, 0.5)
            zero = lax.broadcast_in_dim(const(d, 0), get_aval(exact).shape, ()) \
                if get_aval(exact).shape else const(d, 0)
            t = lax.select_n(exact, half, zero)
            res = lax.add(a_lo, lax.mul(lax.sub(a_hi, a_lo), t))
        else:
            t = lax.convert_element_type(lax.sub(pos_c, lo), d)
            diff = lax.sub(a_hi, a_lo)
            # numpy's lerp: compute from the nearer end for accuracy
            low = lax.add(a_lo, lax.mul(diff, t))
            high = lax.sub(a_hi, lax.mul(diff, lax.sub(const(d, 1), t)))
            res = lax.select_n(lax.ge(t, const(d, 0.5)), low, high)
        res = _infinite_neighbours(res, a_lo, a_hi, t, d)
    nanv = const(d, np.nan)
    if _dt.kind(d) == "f":
        if ignore_nan:
            bad = lax.eq(nb, const(wd, 0)) if get_aval(nb).shape else None
            if bad is not None:
                res = lax.select_n(bad, res, lax.broadcast_in_dim(nanv, full, ()))
        else:
            nb_any = lax.broadcast_in_dim(nan_any, full, tuple(range(nq, len(full)))) if full \
                else nan_any
            res = lax.select_n(nb_any, res, lax.broadcast_in_dim(nanv, full, ()) if full
                               else ensure_array(nanv))
    if keepdims:
        kshape = qshape + tuple(1 if i in axes else s for i, s in enumerate(av.shape))
        res = lax.reshape(res, kshape)
    return ensure_array(res)


def _infinite_neighbours(res, a_lo, a_hi, t, d):
    # With an infinite neighbour the lerp's difference is inf or NaN: the weighted sum
    # a_lo (1 - t) + a_hi t is the answer there (median([1, inf]) is inf, numpy's mean of
    # the middle pair), and a position on an element is that element (median([-inf, 1,
    # inf]) is 1, not inf * 0)
    inf = const(d, np.inf)
    infinite = lax.bitwise_or(lax.eq(lax.abs(a_lo), inf), lax.eq(lax.abs(a_hi), inf))
    one = const(d, 1)
    weighted = lax.add(lax.mul(a_lo, lax.sub(one, t)), lax.mul(a_hi, t))
    res = lax.select_n(infinite, res, weighted)
    return lax.select_n(lax.eq(t, const(d, 0)), res, a_lo)


def _empty_quantile(d, qshape, bshape, shape, axes, keepdims, op):
    # numpy's median and nan* functions: NaN for every empty slice, with a RuntimeWarning
    # (its quantile/percentile raise an IndexError from inside instead; JAX gives NaN)
    full = qshape + bshape
    if 0 not in full:
        warnings.warn(f"{op}: empty slice (axis of size 0 in shape {tuple(shape)}); the "
                      f"result is NaN", RuntimeWarning, stacklevel=4)
    res = const(d, np.nan)
    res = lax.broadcast_in_dim(res, full, ()) if full else ensure_array(res)
    if keepdims:
        res = lax.reshape(res, qshape + tuple(1 if i in axes else s for i, s in enumerate(shape)))
    return ensure_array(res)


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False,
             *, weights=None, interpolation=None):
    """The q-th quantiles (q in [0, 1]) along `axis`; q's dimensions come first.

    Example:
        >>> import ember.numpy as enp
        >>> float(enp.quantile(enp.asarray([1.0, 2.0, 3.0, 4.0]), 0.5))
        2.5
    """
    no_numpy_feature("quantile", out=out)
    if weights is not None:
        raise TypeError("quantile: weights= is not supported")
    return _quantile(a, q, axis, interpolation or method, keepdims, False, "quantile")


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    """The q-th percentiles (q in [0, 100]) along `axis`.

    Example:
        >>> import ember.numpy as enp
        >>> float(enp.percentile(enp.asarray([1.0, 2.0, 3.0]), 50))
        2.0
    """
    no_numpy_feature("percentile", out=out)
    qq = _scaled_q(q, "percentile")
    return _quantile(a, qq, axis, interpolation or method, keepdims, False, "percentile")


def _scaled_q(q, op):
    qv = concrete_or_none(q)
    if qv is not None:
        qv = np.asarray(qv, dtype=np.float64)
        if np.any(qv < 0) or np.any(qv > 100):
            raise ValueError(f"{op}: percentiles must be in the range [0, 100], got {qv.tolist()}")
        return qv / 100
    return divide(q, 100)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None, interpolation=None):
    """quantile ignoring NaN.

    Example:
        >>> import ember.numpy as enp
        >>> float(enp.nanquantile(enp.asarray([1.0, float("nan"), 3.0]), 0.5))
        2.0
    """
    no_numpy_feature("nanquantile", out=out)
    return _quantile(a, q, axis, interpolation or method, keepdims, True, "nanquantile")


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None, interpolation=None):
    """percentile ignoring NaN.

    Example:
        >>> import ember.numpy as enp
        >>> float(enp.nanpercentile(enp.asarray([1.0, float("nan"), 3.0]), 50))
        2.0
    """
    no_numpy_feature("nanpercentile", out=out)
    qq = _scaled_q(q, "nanpercentile")
    return _quantile(a, qq, axis, interpolation or method, keepdims, True, "nanpercentile")


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median along `axis` (NaN when the slice holds a NaN).

    Example:
        >>> import ember.numpy as enp
        >>> float(enp.median(enp.asarray([3.0, 1.0, 2.0])))
        2.0
    """
    no_numpy_feature("median", out=out)
    return _quantile(a, 0.5, axis, "linear", keepdims, False, "median")


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median ignoring NaN.

    Example:
        >>> import ember.numpy as enp
        >>> float(enp.nanmedian(enp.asarray([3.0, float("nan"), 1.0])))
        2.0
    """
    no_numpy_feature("nanmedian", out=out)
    return _quantile(a, 0.5, axis, "linear", keepdims, True, "nanmedian")

