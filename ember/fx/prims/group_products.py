"""Exclusive products within groups: for every update of a scatter_mul, the product
of the *other* updates that land on the same operand position (the factor its
derivative needs).

Built from products, shifts and permutations only, so the result is exact when
updates are 0 (no division) and stays exact under every further derivative.  The
grouping (a stable sort of the updates by target) depends on the indices alone:
when they are concrete it is computed once in numpy and the scan runs only as
many doubling steps as the largest group needs; traced indices sort at run time.

Example:
    >>> import numpy as np
    >>> from ember.fx.prims.indexing import ScatterDimensionNumbers as SDN
    >>> dn = SDN((), (0,), (0,))
    >>> params = dict(dimension_numbers=dn, mode="drop", indices_are_sorted=False,
    ...               unique_indices=False)
    >>> from ember.fx.core import AbstractArray
    >>> y = np.array([2., 0., 3., 5.])
    >>> others = exclusive_group_products(AbstractArray((2,), np.float64),
    ...                                   np.array([[0], [0], [0], [1]]), y, params)
    >>> np.asarray(others).tolist()
    [0.0, 6.0, 0.0, 1.0]
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ..core import Tracer, get_aval


def _concrete(x):
    """x as a numpy array when its value is known while tracing, else None."""
    if isinstance(x, Tracer):
        v = x.concrete_value()
        return None if v is None else np.asarray(v)
    return np.asarray(x)


def _shift(x, offset, reverse, fill):
    """y[i] = x[i - offset] (x[i + offset] when `reverse`), `fill` off the end."""
    from .shape import pad
    lo, hi = (-offset, offset) if reverse else (offset, -offset)
    return pad(x, fill, ((lo, hi, 0),))


def _layout_numpy(tid):
    """(perm, starts, ends, steps) of the groups of equal target ids, in numpy."""
    n = tid.shape[0]
    tid = np.where(tid == 0, -1 - np.arange(n, dtype=tid.dtype), tid)
    perm = np.argsort(tid, kind="stable").astype(np.int32 if n < 2 ** 31 else np.int64)
    stid = tid[perm]
    change = stid[1:] != stid[:-1]
    starts = np.concatenate([[True], change])
    ends = np.concatenate([change, [True]])
    bounds = np.flatnonzero(np.concatenate([starts, [True]]))
    longest = int(np.diff(bounds).max())
    return perm, starts, ends, max(longest - 1, 0).bit_length()


def _layout_traced(tid, dt):
    """The same layout with the sort at run time (steps cover one group of all n)."""
    from .elementwise import bitwise_or, eq, ne, neg, select_n, sub
    from .rules import broadcast_to_shape
    from .shape import iota
    from .sort import sort
    n = get_aval(tid).shape[0]
    ids = iota(dt, (n,), 0)
    one = broadcast_to_shape(np.array(1, dt)[()], (n,))
    dropped = eq(tid, broadcast_to_shape(np.array(0, dt)[()], (n,)))
    tid = select_n(dropped, tid, sub(neg(ids), one))
    stid, perm = sort((tid, ids), 0)
    # the first and last elements compare against the fill: flag them outright
    first, last = np.arange(n) == 0, np.arange(n) == n - 1
    starts = bitwise_or(ne(stid, _shift(stid, 1, False, np.array(0, dt)[()])), first)
    ends = bitwise_or(ne(stid, _shift(stid, 1, True, np.array(0, dt)[()])), last)
    return perm, starts, ends, max(n - 1, 0).bit_length()


def _exclusive_scan(y, starts, steps, reverse):
    """Within each group (flagged where it starts in the scan's direction), the
    product of the values before each element; 1 at a group's first element."""
    from .elementwise import bitwise_or, mul, select_n
    from .rules import broadcast_to_shape
    ua = get_aval(y)
    one = np.array(1, ua.dtype)[()]
    ones = broadcast_to_shape(one, ua.shape)
    v, f = y, starts
    for k in range(steps):
        off = 1 << k
        # a group starting within this element's span drops the earlier product.
        # It is replaced by 1 before the multiply (rather than selected away after
        # it) so that a zero cotangent never meets an inf update; the first `off`
        # elements always hold a start flag (element 0 is one), so the fill is unused
        va = _shift(v, off, reverse, one)
        v = mul(select_n(f, va, ones), v)
        if isinstance(f, np.ndarray):  # grouping known while tracing
            fa = np.roll(f, -off if reverse else off)
            fa[slice(-off, None) if reverse else slice(0, off)] = True
            f = fa | f
        else:
            f = bitwise_or(_shift(f, off, reverse, np.True_), f)
    return select_n(starts, _shift(v, 1, reverse, one), ones)


def exclusive_group_products(operand_aval, indices, updates, params):
    """For every element of `updates` of the scatter `params` into an operand of
    `operand_aval`'s shape: the product of the other updates landing on its
    position (1 where it lands alone, or is dropped)."""
    from .elementwise import add, mul
    from .indexing import _gather_impl, _inverse_gather, _inverse_gather_params
    from .rules import broadcast_to_shape
    from .shape import iota, reshape
    from .sort import _scatter_add_along_axis, _take_along_axis
    ua = get_aval(updates)
    n, m = ua.size, operand_aval.size
    dt = _dt.int32 if max(n, m) < 2 ** 31 - 2 else _dt.int64
    # 1-based target ids; an update a "drop" scatter skips reads the fill 0 and
    # becomes a group of its own
    pos = np.arange(1, m + 1, dtype=dt).reshape(operand_aval.shape)
    known = _concrete(indices)
    if known is not None:
        gp = _inverse_gather_params(pos.ndim, ua.shape, params)
        tid = _gather_impl(pos, known, **gp).reshape(n)
        perm, starts, ends, steps = _layout_numpy(tid)
    else:
        pos = reshape(add(iota(dt, (m,), 0), broadcast_to_shape(np.array(1, dt)[()], (m,))),
                      operand_aval.shape)
        tid = reshape(_inverse_gather(pos, indices, ua.shape, **params), (n,))
        perm, starts, ends, steps = _layout_traced(tid, dt)
    y = _take_along_axis(reshape(updates, (n,)), perm, 0)
    others = mul(_exclusive_scan(y, starts, steps, False), _exclusive_scan(y, ends, steps, True))
    return reshape(_scatter_add_along_axis(others, perm, 0, n), ua.shape)
