"""Shape and movement primitives: broadcast_in_dim, reshape, transpose, squeeze,
expand_dims, rev, pad, concatenate, slice, dynamic_slice, dynamic_update_slice, iota.

Example:
    >>> import numpy as np
    >>> from ember.fx.prims.shape import broadcast_in_dim
    >>> broadcast_in_dim(np.ones(3, np.float32), (2, 3), (1,)).shape
    (2, 3)
"""
from __future__ import annotations

import numpy as np

from ..core import AbstractArray, Primitive, get_aval, shape_error
from .rules import deflinear, moveaxis


# --- broadcast_in_dim -----------------------------------------------------------------

def _bid_abstract(x, *, shape, broadcast_dimensions):
    bd = broadcast_dimensions
    if len(bd) != x.ndim:
        raise shape_error("broadcast_in_dim", f"operand {x} needs {x.ndim} broadcast_dimensions, got {bd}")
    for i, d in enumerate(bd):
        if not 0 <= d < len(shape):
            raise shape_error("broadcast_in_dim", f"broadcast dimension {d} out of range for shape {shape}")
        if x.shape[i] not in (1, shape[d]):
            raise shape_error("broadcast_in_dim", f"cannot broadcast {x} to {shape} with dims {bd}")
        if i and bd[i - 1] >= d:
            raise shape_error("broadcast_in_dim", f"broadcast_dimensions must be strictly increasing, got {bd}")
    return AbstractArray(shape, x.dtype, x.weak_type)


def _bid_impl(x, *, shape, broadcast_dimensions):
    x = np.asarray(x)
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return np.broadcast_to(x.reshape(expanded), shape)


def _bid_transpose(ct, x, *, shape, broadcast_dimensions):
    from .reduce import reduce_sum
    xa = x.aval
    bd = broadcast_dimensions
    sum_dims = [d for d in range(len(shape)) if d not in bd]
    sum_dims += [d for i, d in enumerate(bd) if xa.shape[i] == 1 and shape[d] != 1]
    out = reduce_sum(ct, tuple(sorted(sum_dims))) if sum_dims else ct
    if get_aval(out).shape != xa.shape:
        out = reshape(out, xa.shape)
    return [out]


def _bid_batch(axis_size, args, dims, *, shape, broadcast_dimensions):
    (x,), (d,) = args, dims
    x = moveaxis(x, d, 0)
    return broadcast_in_dim(x, (axis_size,) + tuple(shape),
                            (0,) + tuple(b + 1 for b in broadcast_dimensions)), 0


broadcast_in_dim_p = Primitive("broadcast_in_dim")
broadcast_in_dim_p.abstract_eval = _bid_abstract
broadcast_in_dim_p.impl = _bid_impl
broadcast_in_dim_p.batch = _bid_batch
deflinear(broadcast_in_dim_p, _bid_transpose)


def broadcast_in_dim(x, shape, broadcast_dimensions):
    """Broadcast `x` to `shape`, operand dim i going to output dim broadcast_dimensions[i]."""
    shape = tuple(int(s) for s in shape)
    bd = tuple(int(b) for b in broadcast_dimensions)
    if get_aval(x).shape == shape and bd == tuple(range(len(shape))):
        return x
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=bd)


# --- reshape ---------------------------------------------------------------------------

def _reshape_abstract(x, *, new_sizes):
    n = 1
    for s in new_sizes:
        n *= s
    if n != x.size or any(s < 0 for s in new_sizes):
        raise shape_error("reshape", f"cannot reshape {x} (size {x.size}) to {new_sizes}")
    return AbstractArray(new_sizes, x.dtype, x.weak_type)


def _reshape_batch(axis_size, args, dims, *, new_sizes):
    (x,), (d,) = args, dims
    return reshape(moveaxis(x, d, 0), (axis_size,) + tuple(new_sizes)), 0


reshape_p = Primitive("reshape")
reshape_p.abstract_eval = _reshape_abstract
reshape_p.impl = lambda x, *, new_sizes: np.reshape(x, new_sizes)
reshape_p.batch = _reshape_batch
deflinear(reshape_p, lambda ct, x, *, new_sizes: [reshape(ct, x.aval.shape)])


def reshape(x, new_sizes):
    """Row-major reshape to `new_sizes` (no -1: resolve it above)."""
    new_sizes = tuple(int(s) for s in new_sizes)
    if get_aval(x).shape == new_sizes:
        return x
    return reshape_p.bind(x, new_sizes=new_sizes)


# --- transpose -------------------------------------------------------------------------

def _transpose_abstract(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise shape_error("transpose", f"permutation {permutation} is not a permutation of the axes of {x}")
    return AbstractArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


def _transpose_batch(axis_size, args, dims, *, permutation):
    (x,), (d,) = args, dims
    x = moveaxis(x, d, 0)
    return transpose(x, (0,) + tuple(p + 1 for p in permutation)), 0


def _transpose_transpose(ct, x, *, permutation):
    inv = [0] * len(permutation)
    for i, p in enumerate(permutation):
        inv[p] = i
    return [transpose(ct, tuple(inv))]


transpose_p = Primitive("transpose")
transpose_p.abstract_eval = _transpose_abstract
transpose_p.impl = lambda x, *, permutation: np.transpose(x, permutation)
transpose_p.batch = _transpose_batch
deflinear(transpose_p, _transpose_transpose)


def transpose(x, permutation):
    """Permute the axes of `x`: output axis i is input axis permutation[i]."""
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))):
        return x
    return transpose_p.bind(x, permutation=permutation)
