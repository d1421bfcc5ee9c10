"""Searching: argmax/argmin, where, nonzero (eager, or fixed-size with `size=`),
count_nonzero, searchsorted (a branch-free binary search), argwhere, extract,
select, digitize and bincount.

Example:
    >>> import ember.numpy as enp
    >>> enp.where(enp.asarray([True, False]), 1.0, 2.0).tolist()
    [1.0, 2.0]
"""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..fx.core import ConcretizationError, argument_note, get_aval
from ._core import broadcast_shapes, broadcast_to, ensure_array, promote_args, promote_dtypes
from ._elementwise import floor_divide, isnan, remainder, subtract
from ._indexing import _scatter, take
from ._util import (INDEX_DTYPE, canonicalize_axes, canonicalize_axis, concrete, concrete_or_none,
                    const, no_numpy_feature, user_source)
from ..fx.spelling import user_str

__all__ = ["argmax", "argmin", "nanargmax", "nanargmin", "count_nonzero", "nonzero",
           "flatnonzero", "argwhere", "where", "searchsorted", "extract", "select", "digitize",
           "bincount"]


def _arg(a, axis, keepdims, is_max, op):
    x = ensure_array(a)
    av = get_aval(x)
    if _dt.kind(av.dtype) == "c":
        raise TypeError(f"{op} does not support complex dtype {av.dtype}")
    if axis is None:
        if av.size == 0:
            raise ValueError(f"{op}: attempt to get {op} of an empty sequence")
        flat = lax.reshape(x, (av.size,))
        y = (lax.argmax if is_max else lax.argmin)(flat, 0, INDEX_DTYPE)
        if keepdims:
            y = lax.reshape(y, (1,) * av.ndim)
        return ensure_array(y)
    ax = canonicalize_axis(axis, av.shape, op)
    if av.shape[ax] == 0:
        raise ValueError(f"{op}: attempt to get {op} of an empty sequence (axis {ax} of shape "
                         f"{av.shape})")
    y = (lax.argmax if is_max else lax.argmin)(x, ax, INDEX_DTYPE)
    if keepdims:
        y = lax.expand_dims(y, (ax,))
    return ensure_array(y)


def argmax(a, axis=None, out=None, *, keepdims=False):
    """Index of the first maximum along `axis` (of the flattened array when None).

    Example:
        >>> import ember.numpy as enp
        >>> int(enp.argmax(enp.asarray([1, 5, 5])))
        1
    """
    no_numpy_feature("argmax", out=out)
    return _arg(a, axis, keepdims, True, "argmax")


def argmin(a, axis=None, out=None, *, keepdims=False):
    """Index of the first minimum along `axis` (of the flattened array when None).

    Example:
        >>> import ember.numpy as enp
        >>> int(enp.argmin(enp.asarray([3, 1, 1])))
        1
    """
    no_numpy_feature("argmin", out=out)
    return _arg(a, axis, keepdims, False, "argmin")


def _nan_replaced(a, value):
    x = ensure_array(a)
    if _dt.kind(get_aval(x).dtype) != "f":
        return x
    shape = get_aval(x).shape
    v = const(get_aval(x).dtype, value)
    return lax.select_n(isnan(x), x, lax.broadcast_in_dim(v, shape, ()) if shape else ensure_array(v))


def nanargmax(a, axis=None, out=None, *, keepdims=False):
    """argmax ignoring NaN; an all-NaN slice gives -1 (JAX; numpy raises).

    Example:
        >>> import ember.numpy as enp
        >>> int(enp.nanargmax(enp.asarray([1.0, float("nan"), 3.0])))
        2
    """
    no_numpy_feature("nanargmax", out=out)
    return _nan_arg(a, axis, keepdims, True, "nanargmax")


def nanargmin(a, axis=None, out=None, *, keepdims=False):
    """argmin ignoring NaN; an all-NaN slice gives -1 (JAX; numpy raises).

    Example:
        >>> import ember.numpy as enp
        >>> int(enp.nanargmin(enp.asarray([1.0, float("nan"), -3.0])))
        2
    """
    no_numpy_feature("nanargmin", out=out)
    return _nan_arg(a, axis, keepdims, False, "nanargmin")


def _nan_arg(a, axis, keepdims, is_max, op):
    # An all-NaN slice has no answer; index 0 of the NaN-replaced slice would be a
    # plausible wrong one, so it is -1 as in JAX (numpy raises, which jit cannot).
    x = ensure_array(a)
    y = _arg(_nan_replaced(x, -np.inf if is_max else np.inf), axis, keepdims, is_max, op)
    if _dt.kind(get_aval(x).dtype) != "f":
        return y
    from ._utility import all as _all
    none = _all(isnan(x), axis=axis, keepdims=keepdims)
    return where(none, const(INDEX_DTYPE, -1), y)


def _nonzero_mask(x):
    x = ensure_array(x)
    d = get_aval(x).dtype
    if d == _dt.bool_:
        return x
    return lax.ne(x, const(d, 0))


def count_nonzero(a, axis=None, *, keepdims=False):
    """Number of non-zero entries along `axis` (complex: either component non-zero).

    Example:
        >>> import ember.numpy as enp
        >>> int(enp.count_nonzero(enp.asarray([0, 3, 0, 1])))
        2
    """
    x = ensure_array(a)
    av = get_aval(x)
    axes = canonicalize_axes(axis, av.shape, "count_nonzero")
    m = lax.convert_element_type(_nonzero_mask(x), INDEX_DTYPE)
    y = lax.reduce_sum(m, axes)
    if keepdims:
        y = lax.reshape(y, tuple(1 if i in axes else s for i, s in enumerate(av.shape)))
    return ensure_array(y)


def _eager_values(x, op):
    v = concrete_or_none(x)
    if v is None:
        src = user_source()
        raise ConcretizationError(
            f"{op}: the output shape depends on the values of the traced array {user_str(get_aval(x))}"
            f"{argument_note(x)}, so it cannot run under jit/vmap/make_graph. Pass size=N (and fill_value=) for a "
            f"fixed-size result, or use ember.numpy.where(condition, x, y)."
            + (f"\n  at {src}" if src else ""))
    return np.asarray(v)


def nonzero(x, /, *, size=None, fill_value=None):
    """Indices of the non-zero entries, one index array per dimension.

    Eager only, unless `size` fixes the number of results (padded with `fill_value`,
    default 0, or truncated), which works under every transform.

    Example:
        >>> import ember.numpy as enp
        >>> [a.tolist() for a in enp.nonzero(enp.asarray([[0, 1], [2, 0]]))]
        [[0, 1], [1, 0]]
    """
    x = ensure_array(x)
    av = get_aval(x)
    if av.ndim == 0:
        raise ValueError("nonzero: zero-dimensional arrays are not supported; use "
                         "atleast_1d(x).nonzero() if you need it")
    if size is None:
        v = _eager_values(x, "nonzero")
        return tuple(ensure_array(np.ascontiguousarray(i.astype(INDEX_DTYPE)))
                     for i in np.nonzero(v))
    return _nonzero_sized(x, operator.index(size), fill_value)


def _nonzero_sized(x, size, fill_value):
    av = get_aval(x)
    n = av.size
    flat = lax.reshape(_nonzero_mask(x), (n,))
    fills = fill_value if isinstance(fill_value, (tuple, list)) else (fill_value,) * av.ndim
    if len(fills) != av.ndim:
        raise ValueError(f"nonzero: fill_value needs one entry per dimension ({av.ndim})")
    if n == 0 or size == 0:
        out = []
        for f in fills:
            v = const(INDEX_DTYPE, 0 if f is None else f)
            out.append(ensure_array(lax.broadcast_in_dim(v, (size,), ())))
        return tuple(out)
    m = lax.convert_element_type(flat, INDEX_DTYPE)
    target = lax.sub(lax.cumsum(m, 0), const(INDEX_DTYPE, 1))
    big = lax.broadcast_in_dim(const(INDEX_DTYPE, size), (n,), ())
    target = lax.select_n(flat, big, target)  # non-matches go out of range and are dropped
    pos = lax.iota(INDEX_DTYPE, (n,), 0)
    sentinel = lax.broadcast_in_dim(const(INDEX_DTYPE, -1), (size,), ())
    got = _scatter(sentinel, target, pos, "set", "drop")
    missing = lax.lt(got, const(INDEX_DTYPE, 0))
    out = []
    rem = got
    coords = []
    for s in reversed(av.shape):
        coords.append(remainder(rem, s))
        rem = floor_divide(rem, s)
    coords = coords[::-1]
    for c, f in zip(coords, fills):
        fv = lax.broadcast_in_dim(const(INDEX_DTYPE, 0 if f is None else f), (size,), ())
        out.append(ensure_array(lax.select_n(missing, c, fv)))
    return tuple(out)


def flatnonzero(a, *, size=None, fill_value=None):
    """Indices of the non-zero entries of the flattened array.

    Example:
        >>> import ember.numpy as enp
        >>> enp.flatnonzero(enp.asarray([0, 2, 3])).tolist()
        [1, 2]
    """
    x = ensure_array(a)
    return nonzero(lax.reshape(x, (get_aval(x).size,)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """Indices of the non-zero entries as an (N, ndim) array (eager unless `size`).

    Example:
        >>> import ember.numpy as enp
        >>> enp.argwhere(enp.asarray([[0, 1], [1, 0]])).tolist()
        [[0, 1], [1, 0]]
    """
    x = ensure_array(a)
    av = get_aval(x)
    if av.ndim == 0:
        k = size if size is not None else int(bool(_eager_values(x, "argwhere")))
        return ensure_array(np.zeros((k, 0), INDEX_DTYPE))
    idx = nonzero(x, size=size, fill_value=fill_value)
    k = get_aval(idx[0]).shape[0]
    return ensure_array(lax.concatenate([lax.reshape(i, (k, 1)) for i in idx], 1))


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """`x` where `condition` is True, else `y`, broadcasting all three (1-argument form:
    `nonzero(condition, size=size, fill_value=fill_value)`, as in JAX).

    Example:
        >>> import ember.numpy as enp
        >>> enp.where(enp.asarray([1, 0]) > 0, enp.asarray([1, 2]), 0).tolist()
        [1, 0]
    """
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("where: either both or neither of x and y must be given")
    if size is not None or fill_value is not None:
        raise ValueError("where: size and fill_value apply only to the 1-argument form")
    c = ensure_array(condition)
    if get_aval(c).dtype != _dt.bool_:
        c = _nonzero_mask(c)
    a, b = promote_args("where", x, y)
    shape = broadcast_shapes(get_aval(c).shape, get_aval(a).shape, get_aval(b).shape, op="where")
    if get_aval(c).shape and get_aval(c).shape != shape:
        c = broadcast_to(c, shape)
    a = _full(a, shape)
    b = _full(b, shape)
    return ensure_array(lax.select_n(c, b, a))


def _full(v, shape):
    s = get_aval(v).shape
    if s == shape:
        return v
    if not s:
        return lax.broadcast_in_dim(v, shape, ())
    return broadcast_to(v, shape)


def _lt_total(a, b):
    """a < b in the order that sort uses (NaN after everything)."""
    if _dt.kind(get_aval(a).dtype) not in "fc":
        return lax.lt(a, b)
    a_nan = lax.ne(a, a)
    b_nan = lax.ne(b, b)
    return lax.bitwise_or(lax.lt(a, b), lax.bitwise_and(b_nan, lax.bitwise_not(a_nan)))


def _le_total(a, b):
    return lax.bitwise_not(_lt_total(b, a))


_SEARCH_METHODS = ("scan", "scan_unrolled", "sort", "compare_all")


def searchsorted(x1, x2, /, *, side="left", sorter=None, method="scan"):
    """Insertion points of `x2` into the sorted 1-D `x1` (a binary search that stages to a
    fixed number of gathers, so it works under every transform).  JAX's `method`
    ('scan', 'scan_unrolled', 'sort', 'compare_all') picks an implementation, not a
    result: every method runs the same search here.

    Example:
        >>> import ember.numpy as enp
        >>> enp.searchsorted(enp.asarray([1, 3, 5]), enp.asarray([0, 3, 6])).tolist()
        [0, 1, 3]
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if method not in _SEARCH_METHODS:
        raise ValueError(f"searchsorted: method must be one of {', '.join(map(repr, _SEARCH_METHODS))}"
                         f", got {method!r}")
    a = ensure_array(x1)
    if get_aval(a).ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D, got shape {get_aval(a).shape}")
    if sorter is not None:
        a = take(a, sorter, axis=0)
    a, v = promote_dtypes("searchsorted", a, x2)
    if _dt.kind(get_aval(a).dtype) == "c":
        raise TypeError("searchsorted does not support complex dtypes")
    n = get_aval(a).shape[0]
    vshape = get_aval(v).shape
    if n == 0:
        return ensure_array(lax.broadcast_in_dim(const(INDEX_DTYPE, 0), vshape, ()) if vshape
                            else const(INDEX_DTYPE, 0))
    idt = INDEX_DTYPE if n < 2 ** 31 - 2 else _dt.int64
    lo = lax.broadcast_in_dim(const(idt, 0), vshape, ()) if vshape else ensure_array(const(idt, 0))
    hi = lax.broadcast_in_dim(const(idt, n), vshape, ()) if vshape else ensure_array(const(idt, n))
    go_right = _lt_total if side == "left" else _le_total
    steps = max(1, int(n).bit_length())
    for _ in range(steps):
        mid = lax.shift_right_logical(lax.add(lo, hi), const(idt, 1))
        safe = lax.min(mid, const(idt, n - 1))
        val = take(a, safe, axis=0, mode="clip")
        active = lax.lt(lo, hi)
        right = lax.bitwise_and(active, go_right(val, v))
        left = lax.bitwise_and(active, lax.bitwise_not(go_right(val, v)))
        lo = lax.select_n(right, lo, lax.add(mid, const(idt, 1)))
        hi = lax.select_n(left, hi, mid)
    return ensure_array(lax.convert_element_type(lo, INDEX_DTYPE))


def digitize(x, bins, right=False):
    """Indices of the bins (monotonic, increasing or decreasing) each value falls into.

    Example:
        >>> import ember.numpy as enp
        >>> enp.digitize(enp.asarray([0.5, 1.5, 2.5]), enp.asarray([1.0, 2.0])).tolist()
        [0, 1, 2]
    """
    b = ensure_array(bins)
    if get_aval(b).ndim != 1:
        raise ValueError("digitize: bins must be 1-D")
    bv = concrete_or_none(b)
    decreasing = bv is not None and bv.size > 1 and bv[0] > bv[-1]
    side = "left" if right else "right"
    if decreasing:
        n = get_aval(b).shape[0]
        return subtract(n, searchsorted(lax.rev(b, (0,)), x, side=side))
    return searchsorted(b, x, side=side)


def extract(condition, arr):
    """Entries of the flattened `arr` where the flattened `condition` is non-zero
    (eager only: the output size depends on the values).

    Example:
        >>> import ember.numpy as enp
        >>> enp.extract(enp.asarray([True, False, True]), enp.arange(3)).tolist()
        [0, 2]
    """
    c = np.asarray(concrete(ensure_array(condition), "extract")).astype(bool).ravel()
    x = ensure_array(arr)
    flat = lax.reshape(x, (get_aval(x).size,))
    return take(flat, np.nonzero(c[:get_aval(x).size])[0].astype(INDEX_DTYPE), axis=0)


def select(condlist, choicelist, default=0):
    """The first choice whose condition holds, elementwise (`default` where none does).

    Example:
        >>> import ember.numpy as enp
        >>> x = enp.arange(4)
        >>> enp.select([x < 1, x > 2], [x, x * 10], default=-1).tolist()
        [0, -1, -1, 30]
    """
    if len(condlist) != len(choicelist):
        raise ValueError("select: condlist and choicelist must have the same length")
    out = default
    for c, v in reversed(list(zip(condlist, choicelist))):
        out = where(c, v, out)
    return ensure_array(out)


def bincount(x, weights=None, minlength=0, *, length=None):
    """Counts (or summed weights) of each non-negative integer value in `x`.

    The output length is max(x) + 1 (eager), or `length` (works under every transform);
    with `length`, as in JAX, negative values count in bin 0 and values >= length are
    dropped.

    Example:
        >>> import ember.numpy as enp
        >>> enp.bincount(enp.asarray([0, 1, 1, 3])).tolist()
        [1, 2, 0, 1]
    """
    x = ensure_array(x)
    xa = get_aval(x)
    if xa.ndim != 1 or _dt.kind(xa.dtype) not in "iu":
        raise TypeError(f"bincount needs a 1-D integer array, got {user_str(xa)}")
    if length is None:
        v = _eager_values(x, "bincount")
        if v.size and v.min() < 0:
            raise ValueError("bincount: x must be non-negative")
        length = max(int(v.max()) + 1 if v.size else 0, operator.index(minlength))
    length = operator.index(length)
    if weights is None:
        w = lax.broadcast_in_dim(const(INDEX_DTYPE, 1), xa.shape, ()) if xa.shape[0] else \
            ensure_array(np.zeros(0, INDEX_DTYPE))
        d = INDEX_DTYPE
    else:
        w = ensure_array(weights)
        d = get_aval(w).dtype
        if _dt.kind(d) in "biu":
            d = _dt.default_int if _dt.kind(d) != "u" else d
            w = lax.convert_element_type(w, d)
    zeros = lax.broadcast_in_dim(const(d, 0), (length,), ())
    if xa.shape[0] == 0:
        return ensure_array(zeros)
    if _dt.kind(xa.dtype) == "i":
        # as JAX: a negative value counts in bin 0 (a negative index would wrap to the end)
        x = lax.max(x, lax.broadcast_in_dim(const(xa.dtype, 0), xa.shape, ()))
    return _scatter(zeros, x, w, "add", "drop")
