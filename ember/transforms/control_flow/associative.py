"""`associative_scan`: a parallel prefix scan composed from slices and pads.

It is a composite (no primitive of its own), so every transform applies.  The
algorithm is the classic up-sweep/down-sweep: combine neighbours pairwise,
recurse on the half-size problem, then fill in the odd positions — O(log n)
depth with O(n) work.

Example:
    >>> import ember, ember.numpy as enp
    >>> ember.lax.associative_scan(lambda a, b: a + b, enp.arange(1.0, 6.0)).tolist()
    [1.0, 3.0, 6.0, 10.0, 15.0]
"""
from __future__ import annotations

from ...fx.core import const_like, get_aval
from ...fx.prims import shape as _sh
from ...fx.prims.elementwise import add
from ...tree import tree_flatten, tree_unflatten
from ..util import as_ember


def _slice_axis(x, start, stop, step, axis):
    a = get_aval(x)
    starts = [0] * a.ndim
    limits = list(a.shape)
    strides = [1] * a.ndim
    starts[axis], limits[axis], strides[axis] = start, stop, step
    return _sh.slice(x, tuple(starts), tuple(limits), tuple(strides))


def _interleave(evens, odds, axis):
    """Merge two arrays along `axis`: evens at 0, 2, 4..., odds at 1, 3, 5..."""
    ea, oa = get_aval(evens), get_aval(odds)
    zero = const_like(evens, 0)
    cfg_e = [(0, 0, 0)] * ea.ndim
    cfg_o = [(0, 0, 0)] * oa.ndim
    n_e, n_o = ea.shape[axis], oa.shape[axis]
    # evens spread to stride 2 with a trailing slot when they outnumber the odds
    cfg_e[axis] = (0, 1 if n_e == n_o else 0, 1)
    cfg_o[axis] = (1, 1 if n_e > n_o else 0, 1) if n_o else (1, 0, 0)
    pe = _sh.pad(evens, zero, tuple(cfg_e))
    po = _sh.pad(odds, zero, tuple(cfg_o))
    return add(pe, po)


def associative_scan(fn, elems, reverse: bool = False, axis: int = 0):
    """Inclusive scan of `elems` (a pytree of arrays) along `axis` with an
    associative `fn(a, b)` that works elementwise on pytrees of equal shapes.

    Example:
        >>> import ember.numpy as enp
        >>> associative_scan(lambda a, b: a * b, enp.asarray([1.0, 2.0, 3.0])).tolist()
        [1.0, 2.0, 6.0]
    """
    leaves, tree = tree_flatten(elems)
    leaves = [as_ember(x) for x in leaves]
    if not leaves:
        return elems
    nd = get_aval(leaves[0]).ndim
    if not -nd <= axis < nd:
        raise ValueError(f"associative_scan: axis {axis} out of range for rank {nd}")
    axis %= nd
    n = get_aval(leaves[0]).shape[axis]
    for x in leaves:
        if get_aval(x).shape[axis] != n:
            raise ValueError("associative_scan: all leaves need the same length along the scan axis")
    if reverse:
        leaves = [_sh.rev(x, (axis,)) for x in leaves]

    def combine(a, b):
        out = fn(tree_unflatten(tree, a), tree_unflatten(tree, b))
        return [as_ember(v) for v in tree_flatten(out)[0]]

    def scan(xs):
        m = get_aval(xs[0]).shape[axis]
        if m < 2:
            return xs
        # pairwise combine of (0,1), (2,3), ...
        reduced = combine([_slice_axis(x, 0, m - 1, 2, axis) for x in xs],
                          [_slice_axis(x, 1, m, 2, axis) for x in xs])
        odd = scan(reduced)  # prefix results at positions 1, 3, 5, ...
        # even positions 2, 4, ...: previous odd prefix combined with the element
        if m % 2 == 0:
            prev = [_slice_axis(o, 0, get_aval(o).shape[axis] - 1, 1, axis) for o in odd]
        else:
            prev = odd
        evens_rest = combine(prev, [_slice_axis(x, 2, m, 2, axis) for x in xs])
        first = [_slice_axis(x, 0, 1, 1, axis) for x in xs]
        evens = [_sh.concatenate([f, e], axis) for f, e in zip(first, evens_rest)]
        return [_interleave(e, o, axis) for e, o in zip(evens, odd)]

    out = scan(leaves)
    if reverse:
        out = [_sh.rev(x, (axis,)) for x in out]
    return tree_unflatten(tree, out)
