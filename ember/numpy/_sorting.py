"""Sorting: sort and argsort (stable, ascending or descending), lexsort, partition
and argpartition, all on the `sort` primitive.

NaN sorts after every number (as in numpy); a descending sort reverses that order,
so NaN comes first.

Example:
    >>> import ember.numpy as enp
    >>> enp.sort(enp.asarray([3, 1, 2]), descending=True).tolist()
    [3, 2, 1]
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..fx.core import const_like, get_aval
from ._core import ensure_array
from ._util import INDEX_DTYPE, canonicalize_axis

__all__ = ["sort", "argsort", "lexsort", "partition", "argpartition", "sort_complex"]


def _prep(x, axis, op):
    x = ensure_array(x)
    av = get_aval(x)
    if axis is None:
        x = lax.reshape(x, (av.size,))
        av = get_aval(x)
        axis = 0
    if av.ndim == 0:
        raise ValueError(f"{op}: zero-dimensional arrays cannot be sorted; use atleast_1d first")
    return x, av, canonicalize_axis(axis, av.shape, op)


def _check_kind(kind, order, op):
    if order is not None:
        raise TypeError(f"{op}: order= (structured arrays) is not supported")
    if kind not in (None, "stable", "mergesort", "quicksort", "heapsort"):
        raise ValueError(f"{op}: unknown kind {kind!r}")


def sort(x, /, *, axis=-1, descending=False, stable=True, kind=None, order=None):
    """Sorted copy of `x` along `axis` (None: the flattened array).

    Example:
        >>> import ember.numpy as enp
        >>> enp.sort(enp.asarray([[3, 1], [0, 2]]), axis=0).tolist()
        [[0, 1], [3, 2]]
    """
    _check_kind(kind, order, "sort")
    x, av, ax = _prep(x, axis, "sort")
    if av.shape[ax] <= 1:
        return x
    if _dt.kind(av.dtype) == "c":
        return _sort_complex(x, ax, descending)
    y = lax.sort(x, ax, True, 1)
    return lax.rev(y, (ax,)) if descending else y


def _sort_complex(x, ax, descending):
    # lexicographic: by real part, then imaginary part
    re, im = lax.real(x), lax.imag(x)
    _, _, y = lax.sort((re, im, x), ax, True, 2)
    return lax.rev(y, (ax,)) if descending else y


def argsort(x, /, *, axis=-1, descending=False, stable=True, kind=None, order=None):
    """Indices that sort `x` along `axis` (stable; descending keeps equal elements in
    their original order).

    Example:
        >>> import ember.numpy as enp
        >>> enp.argsort(enp.asarray([3, 1, 2])).tolist()
        [1, 2, 0]
    """
    _check_kind(kind, order, "argsort")
    x, av, ax = _prep(x, axis, "argsort")
    n = av.shape[ax]
    idt = INDEX_DTYPE if n < 2 ** 31 else _dt.int64
    if n == 0:
        return lax.convert_element_type(x, idt) if av.size == 0 else x
    iota = lax.iota(idt, av.shape, ax)
    if descending:
        # a stable descending order = the reverse of a stable ascending sort of the reversed input
        xr = lax.rev(x, (ax,))
        keys = (lax.real(xr), lax.imag(xr)) if _dt.kind(av.dtype) == "c" else (xr,)
        outs = lax.sort(keys + (iota,), ax, True, len(keys))
        perm = lax.rev(outs[-1], (ax,))
        return lax.sub(const_like(perm, n - 1), perm)
    keys = (lax.real(x), lax.imag(x)) if _dt.kind(av.dtype) == "c" else (x,)
    outs = lax.sort(keys + (iota,), ax, True, len(keys))
    return outs[-1]


def sort_complex(a):
    """Sort a complex (or real) array lexicographically by real then imaginary part.

    Example:
        >>> import ember.numpy as enp
        >>> enp.sort_complex(enp.asarray([2 + 0j, 1 + 1j])).tolist()
        [(1+1j), (2+0j)]
    """
    x = ensure_array(a)
    if _dt.kind(get_aval(x).dtype) != "c":
        x = lax.convert_element_type(x, _dt.complex_dtype(_dt.to_inexact(get_aval(x).dtype)))
    return sort(x, axis=-1)


def lexsort(keys, axis=-1):
    """Indices that sort by several keys; the last key is the primary one (numpy order).

    Example:
        >>> import ember.numpy as enp
        >>> enp.lexsort((enp.asarray([1, 0]), enp.asarray([0, 0]))).tolist()
        [1, 0]
    """
    if hasattr(keys, "aval") or isinstance(keys, np.ndarray):
        keys = list(keys)
    ks = [ensure_array(k) for k in keys]
    if not ks:
        raise TypeError("lexsort needs at least one key")
    shape = get_aval(ks[0]).shape
    for k in ks:
        if get_aval(k).shape != shape:
            raise ValueError(f"lexsort: all keys need the same shape, got "
                             f"{[get_aval(k).shape for k in ks]}")
    if not shape:
        raise ValueError("lexsort: keys must be at least 1-D")
    ax = canonicalize_axis(axis, shape, "lexsort")
    n = shape[ax]
    idt = INDEX_DTYPE if n < 2 ** 31 else _dt.int64
    if n == 0:
        return lax.convert_element_type(ks[0], idt)
    iota = lax.iota(idt, shape, ax)
    outs = lax.sort(tuple(ks[::-1]) + (iota,), ax, True, len(ks))
    return outs[-1]


def _kth(kth, n, op):
    ks = np.atleast_1d(np.asarray(kth))
    if ks.dtype.kind not in "iu":
        raise TypeError(f"{op}: kth must be integers")
    for k in ks:
        if not -n <= int(k) < n:
            raise ValueError(f"{op}: kth(={int(k)}) out of bounds ({n})")


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """An array where the k-th element is in sorted position, smaller ones before it and
    larger ones after (here: a full sort, which satisfies that contract).

    Example:
        >>> import ember.numpy as enp
        >>> int(enp.partition(enp.asarray([3, 1, 2]), 1)[1])
        2
    """
    x, av, ax = _prep(a, axis, "partition")
    _kth(kth, av.shape[ax], "partition")
    return sort(x, axis=ax)


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """Indices that partition `a` around the k-th element (here: a full stable argsort).

    Example:
        >>> import ember.numpy as enp
        >>> int(enp.argpartition(enp.asarray([3, 1, 2]), 0)[0])
        1
    """
    x, av, ax = _prep(a, axis, "argpartition")
    _kth(kth, av.shape[ax], "argpartition")
    return argsort(x, axis=ax)

