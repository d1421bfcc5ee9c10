"""Reduction primitives: reduce_sum/prod/max/min/and/or, argmax/argmin.

Example:
    >>> import numpy as np
    >>> from ember.fx.prims.reduce import reduce_sum
    >>> float(reduce_sum(np.ones((2, 3), np.float32), (0, 1)))
    6.0
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ..core import AbstractArray, Primitive, get_aval, shape_error
from .rules import deflinear


def _check_axes(name, x, axes):
    if len(set(axes)) != len(axes) or any(not 0 <= a < x.ndim for a in axes):
        raise shape_error(name, f"axes {axes} are out of range or repeated for operand {x}")


def _reduce_abstract(name):
    def abstract_eval(x, *, axes):
        _check_axes(name, x, axes)
        shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
        return AbstractArray(shape, x.dtype, x.weak_type)
    return abstract_eval


def _reducer_batch(prim):
    def batch(axis_size, args, dims, *, axes):
        (x,), (d,) = args, dims
        new_axes = tuple(a + (a >= d) for a in axes)
        out_d = d - sum(a < d for a in new_axes)
        return prim.bind(x, axes=tuple(sorted(new_axes))), out_d
    return batch


def _sum_impl(x, *, axes):
    x = np.asarray(x)
    if x.dtype in (_dt.float16, _dt.bfloat16):
        return np.sum(x.astype(np.float32), axis=axes).astype(x.dtype)
    return np.asarray(np.sum(x, axis=axes, dtype=x.dtype))


def _sum_transpose(ct, x, *, axes):
    from .shape import broadcast_in_dim
    shape = x.aval.shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return [broadcast_in_dim(ct, shape, kept)]


reduce_sum_p = Primitive("reduce_sum")
reduce_sum_p.abstract_eval = _reduce_abstract("reduce_sum")
reduce_sum_p.impl = _sum_impl
reduce_sum_p.batch = _reducer_batch(reduce_sum_p)
deflinear(reduce_sum_p, _sum_transpose)


def reduce_sum(x, axes):
    """Sum over `axes` (a tuple of distinct non-negative ints)."""
    axes = tuple(sorted(int(a) for a in axes))
    if not axes:
        return x
    return reduce_sum_p.bind(x, axes=axes)
