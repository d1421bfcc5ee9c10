"""Set functions.  The array API's unique_* functions have value-dependent output
shapes, so they run eagerly on concrete data (a traced input raises
ConcretizationError); `unique(..., size=k)` and `isin` also work under transforms.

Example:
    >>> import ember.numpy as enp
    >>> enp.unique_values(enp.asarray([3, 1, 3])).tolist()
    [1, 3]
"""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..fx.core import ConcretizationError, argument_note, get_aval, user_source
from ._core import asarray, ensure_array, promote_dtypes
from ._elementwise import isnan
from ._indexing import _scatter, take
from ._searching import searchsorted
from ._sorting import sort
from ._util import INDEX_DTYPE, canonicalize_axis, concrete_or_none, const
from ..fx.spelling import user_str

__all__ = ["unique_all", "unique_counts", "unique_inverse", "unique_values", "unique", "isin",
           "intersect1d", "union1d", "setdiff1d", "setxor1d"]


class UniqueAllResult(NamedTuple):
    values: object
    indices: object
    inverse_indices: object
    counts: object


class UniqueCountsResult(NamedTuple):
    values: object
    counts: object


class UniqueInverseResult(NamedTuple):
    values: object
    inverse_indices: object


def _host(x, op):
    """The numpy value of `x` (bfloat16 widened to float32 so numpy orders it by value)."""
    x = ensure_array(x)
    v = concrete_or_none(x)
    if v is None:
        src = user_source()
        raise ConcretizationError(
            f"{op}: the number of unique values depends on the data, so {op} needs concrete "
            f"values and cannot run on the traced array {user_str(get_aval(x))} under jit/vmap/"
            f"make_graph{argument_note(x)}. Call it outside the transform, or use unique(x, size=k, "
            f"fill_value=...) for a fixed-size result." + (f"\n  at {src}" if src else ""))
    d = get_aval(x).dtype
    v = np.asarray(v)
    return (v.astype(np.float32) if d == _dt.bfloat16 else v), d


def _out(v, d):
    return asarray(np.array(np.asarray(v).astype(d), order="C"))


def _idx(v):
    return asarray(np.array(np.asarray(v).astype(INDEX_DTYPE), order="C"))


def _unique_flat(v, equal_nan):
    flat = v.ravel()
    vals, idx, inv, cnt = np.unique(flat, return_index=True, return_inverse=True,
                                    return_counts=True, equal_nan=equal_nan)
    return _first_of_each(flat, vals, idx), idx, inv, cnt


def _first_of_each(flat, vals, idx):
    """Each unique value as its first occurrence has it, as JAX's stable sort gives it
    (np.unique may keep either of -0.0 and +0.0, which compare equal)."""
    return flat[idx] if vals.dtype.kind in "fc" and flat.size else vals


def unique_all(x, /):
    """Unique values with first indices, inverse indices (shaped like x) and counts.

    Example:
        >>> import ember.numpy as enp
        >>> r = enp.unique_all(enp.asarray([2, 1, 2]))
        >>> r.values.tolist(), r.counts.tolist()
        ([1, 2], [1, 2])
    """
    v, d = _host(x, "unique_all")
    vals, idx, inv, cnt = _unique_flat(v, False)
    return UniqueAllResult(_out(vals, d), _idx(idx), _idx(inv.reshape(v.shape)), _idx(cnt))


def unique_counts(x, /):
    """Unique values and how often each occurs.

    Example:
        >>> import ember.numpy as enp
        >>> enp.unique_counts(enp.asarray([2, 1, 2])).counts.tolist()
        [1, 2]
    """
    v, d = _host(x, "unique_counts")
    vals, _, _, cnt = _unique_flat(v, False)
    return UniqueCountsResult(_out(vals, d), _idx(cnt))


def unique_inverse(x, /):
    """Unique values and, for each input element, the index of its value.

    Example:
        >>> import ember.numpy as enp
        >>> enp.unique_inverse(enp.asarray([2, 1, 2])).inverse_indices.tolist()
        [1, 0, 1]
    """
    v, d = _host(x, "unique_inverse")
    vals, _, inv, _ = _unique_flat(v, False)
    return UniqueInverseResult(_out(vals, d), _idx(inv.reshape(v.shape)))


def unique_values(x, /):
    """The sorted unique values (each NaN counts as distinct).

    Example:
        >>> import ember.numpy as enp
        >>> enp.unique_values(enp.asarray([1.0, 1.0, 0.5])).tolist()
        [0.5, 1.0]
    """
    v, d = _host(x, "unique_values")
    vals = _unique_flat(v, False)[0]
    return _out(vals, d)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None, sorted=True):  # noqa: A002
    """numpy's unique.  With `size=k` the result has exactly k values (padded with
    `fill_value`, default the smallest value) and works under transforms.

    Example:
        >>> import ember.numpy as enp
        >>> enp.unique(enp.asarray([3, 1, 3])).tolist()
        [1, 3]
    """
    if size is not None:
        if return_index or return_inverse or return_counts or axis is not None:
            raise TypeError("unique: size= supports only the values (no return_* or axis)")
        return _unique_sized(ensure_array(ar), operator.index(size), fill_value, equal_nan)
    v, d = _host(ar, "unique")
    if axis is not None:
        axis = canonicalize_axis(axis, v.shape, "unique")
        res = np.unique(v, return_index, return_inverse, return_counts, axis=axis,
                        equal_nan=equal_nan)
    else:
        flat = v.ravel()
        res = np.unique(flat, True, return_inverse, return_counts, equal_nan=equal_nan)
        res = (_first_of_each(flat, res[0], res[1]),) + res[1 + (not return_index):]
        if len(res) == 1:
            res = res[0]
    if not isinstance(res, tuple):
        return _out(res, d)
    out = [_out(res[0], d)]
    k = 1
    if return_index:
        out.append(_idx(res[k]))
        k += 1
    if return_inverse:
        inv = res[k]
        if axis is None:
            inv = inv.reshape(v.shape)
        out.append(_idx(inv))
        k += 1
    if return_counts:
        out.append(_idx(res[k]))
    return tuple(out)


def _unique_sized(x, size, fill_value, equal_nan):
    xa = get_aval(x)
    n = xa.size
    flat = lax.reshape(x, (n,))
    d = xa.dtype
    if n == 0:
        fv = const(d, 0 if fill_value is None else fill_value)
        return ensure_array(lax.broadcast_in_dim(fv, (size,), ()))
    s = sort(flat)
    prev = lax.slice(s, (0,), (n - 1,))
    nxt = lax.slice(s, (1,), (n,))
    diff = lax.ne(nxt, prev)
    if equal_nan and _dt.kind(d) in "fc":
        diff = lax.bitwise_and(diff, lax.bitwise_not(lax.bitwise_and(isnan(nxt), isnan(prev))))
    is_new = lax.concatenate([ensure_array(np.ones(1, bool)), diff], 0)
    pos = lax.sub(lax.cumsum(lax.convert_element_type(is_new, INDEX_DTYPE), 0),
                  const(INDEX_DTYPE, 1))
    target = lax.select_n(is_new, lax.broadcast_in_dim(const(INDEX_DTYPE, size), (n,), ()), pos)
    if fill_value is None:
        base = lax.broadcast_in_dim(lax.slice(s, (0,), (1,)), (size,), (0,)) if size else \
            ensure_array(np.zeros(0, d))
        base = lax.reshape(base, (size,))
    else:
        base = lax.broadcast_in_dim(const(d, fill_value), (size,), ())
    if size == 0:
        return ensure_array(base)
    return _scatter(base, target, s, "set", "drop")


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """True where an entry of `element` occurs in `test_elements` (works under transforms).

    Example:
        >>> import ember.numpy as enp
        >>> enp.isin(enp.asarray([1, 2, 3]), enp.asarray([3, 1])).tolist()
        [True, False, True]
    """
    e, t = promote_dtypes("isin", element, test_elements)
    ea = get_aval(e)
    tf = lax.reshape(t, (get_aval(t).size,))
    m = get_aval(tf).shape[0]
    if m == 0:
        found = lax.broadcast_in_dim(const(_dt.bool_, False), ea.shape, ()) if ea.shape else \
            ensure_array(const(_dt.bool_, False))
    elif _dt.kind(ea.dtype) == "c":
        found = lax.reduce_or(lax.eq(lax.broadcast_in_dim(e, ea.shape + (m,), tuple(range(ea.ndim))),
                                     lax.broadcast_in_dim(tf, ea.shape + (m,), (ea.ndim,))),
                              (ea.ndim,))
    else:
        s = sort(tf)
        i = searchsorted(s, e)
        i = lax.min(i, const(get_aval(i).dtype, m - 1))
        found = lax.eq(take(s, i, axis=0, mode="clip"), e)
    if invert:
        found = lax.bitwise_not(found)
    return ensure_array(found)


def _eager_pair(a, b, op):
    va, da = _host(a, op)
    vb, db = _host(b, op)
    d = _dt.result_type(da, db)
    return va.ravel(), vb.ravel(), d


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    """Sorted unique values present in both inputs (eager).

    Example:
        >>> import ember.numpy as enp
        >>> enp.intersect1d(enp.asarray([1, 2, 3]), enp.asarray([3, 1, 5])).tolist()
        [1, 3]
    """
    va, vb, d = _eager_pair(ar1, ar2, "intersect1d")
    res = np.intersect1d(va, vb, assume_unique=assume_unique, return_indices=return_indices)
    if return_indices:
        return _out(res[0], d), _idx(res[1]), _idx(res[2])
    return _out(res, d)


def union1d(ar1, ar2):
    """Sorted unique values present in either input (eager).

    Example:
        >>> import ember.numpy as enp
        >>> enp.union1d(enp.asarray([1, 2]), enp.asarray([2, 5])).tolist()
        [1, 2, 5]
    """
    va, vb, d = _eager_pair(ar1, ar2, "union1d")
    return _out(np.union1d(va, vb), d)


def setdiff1d(ar1, ar2, assume_unique=False):
    """Sorted unique values of `ar1` that are not in `ar2` (eager).

    Example:
        >>> import ember.numpy as enp
        >>> enp.setdiff1d(enp.asarray([1, 2, 3]), enp.asarray([2])).tolist()
        [1, 3]
    """
    va, vb, d = _eager_pair(ar1, ar2, "setdiff1d")
    return _out(np.setdiff1d(va, vb, assume_unique=assume_unique), d)


def setxor1d(ar1, ar2, assume_unique=False):
    """Sorted unique values in exactly one of the inputs (eager).

    Example:
        >>> import ember.numpy as enp
        >>> enp.setxor1d(enp.asarray([1, 2]), enp.asarray([2, 3])).tolist()
        [1, 3]
    """
    va, vb, d = _eager_pair(ar1, ar2, "setxor1d")
    return _out(np.setxor1d(va, vb, assume_unique=assume_unique), d)
