"""Device library steps of the sorting primitives (`sort` by any number of keys,
`top_k`) over an array module `xp` (CuPy on the GPU, numpy in the host emulation):
the reference impls' orderings (`fx/prims/sort.py`) from stable argsorts only.

Several keys sort as a radix sort does: stable argsorts by the least significant
key first, each applied to the permutation so far (numpy's `lexsort` order).
Half precision keys compare in float32 (exact); CuPy's sort is stable, and
numpy's is asked to be.

Example:
    >>> import numpy as np
    >>> k, v = sort(np, np.array([1, 0, 1, 0]), np.array([3., 2., 1., 0.]),
    ...             dimension=0, is_stable=True, num_keys=2)
    >>> k.tolist(), v.tolist()
    ([0, 0, 1, 1], [0.0, 2.0, 1.0, 3.0])
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt

_HALF = (np.dtype(np.float16), np.dtype(_dt.bfloat16))


def _key(x):
    return x.astype(np.float32) if np.dtype(x.dtype) in _HALF else x


def _total_order_key(xp, x):
    # IEEE total order as integers (-NaN < -inf < ... < -0 < +0 < ... < NaN), the
    # order top_k ranks floats by (the reference impl's `_total_order_key`).
    x = _key(x)
    if np.dtype(x.dtype).kind != "f":
        return x
    bits = x.view(np.int32 if np.dtype(x.dtype).itemsize == 4 else np.int64)
    return xp.where(bits < 0, bits ^ np.iinfo(bits.dtype).max, bits)


def stable_argsort(xp, key, axis):
    """The stable ascending order of `key` along `axis` (NaN last, -0 == +0)."""
    try:
        return xp.argsort(key, axis=axis, kind="stable")
    except TypeError:   # a namespace whose sort is always stable (CuPy's)
        return xp.argsort(key, axis=axis)


def sort(xp, *ops, dimension, is_stable, num_keys):
    """Every operand permuted by the lexicographic order of the first `num_keys`."""
    if ops[0].size == 0:
        return [o.copy() for o in ops]
    keys = [_key(k) for k in ops[:num_keys]]
    perm = stable_argsort(xp, keys[-1], dimension)
    for k in reversed(keys[:-1]):
        perm = xp.take_along_axis(perm, stable_argsort(xp, xp.take_along_axis(k, perm, dimension), dimension),
                                  dimension)
    return [xp.take_along_axis(o, perm, dimension) for o in ops]


def top_k(xp, x, *, k):
    """The `k` largest along the last axis and their int32 indices: ties lower index
    first, floats by IEEE total order (a stable ascending sort of the reversed axis,
    read back)."""
    n = x.shape[-1]
    order = xp.flip(stable_argsort(xp, xp.flip(_total_order_key(xp, x), -1), -1), -1)
    idx = xp.ascontiguousarray((n - 1 - order)[..., :k])
    return [xp.take_along_axis(x, idx, -1), idx.astype(np.int32)]
