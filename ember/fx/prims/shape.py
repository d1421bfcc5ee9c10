"""Shape and movement primitives: broadcast_in_dim, reshape, transpose, squeeze,
expand_dims, rev, pad, concatenate, slice, dynamic_slice, dynamic_update_slice, iota,
and the one-dimension slicing helpers built on them.

Example:
    >>> import numpy as np
    >>> from ember.fx.prims.shape import broadcast_in_dim
    >>> broadcast_in_dim(np.ones(3, np.float32), (2, 3), (1,)).shape
    (2, 3)
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ..core import (AbstractArray, Primitive, Zero, _where, const, get_aval, is_undefined, shape_error,
                    tangent_aval)
from .rules import aval_of, bdim_to_front, deflinear, instantiate, moveaxis, zeros
from ..spelling import user_str

# --- broadcast_in_dim -----------------------------------------------------------------

def _bid_abstract(x, *, shape, broadcast_dimensions):
    bd = broadcast_dimensions
    if len(bd) != x.ndim:
        raise shape_error("broadcast_in_dim", f"operand {user_str(x)} needs {x.ndim} broadcast_dimensions, got {bd}")
    for i, d in enumerate(bd):
        if not 0 <= d < len(shape):
            raise shape_error("broadcast_in_dim", f"broadcast dimension {d} out of range for shape {shape}")
        if x.shape[i] not in (1, shape[d]):
            raise shape_error("broadcast_in_dim", f"cannot broadcast {user_str(x)} to {shape} with dims {bd}")
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
broadcast_in_dim_p.kind = "movement"
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
        raise shape_error("reshape", f"cannot reshape {user_str(x)} (size {x.size}) to {new_sizes}")
    return AbstractArray(new_sizes, x.dtype, x.weak_type)


def _reshape_batch(axis_size, args, dims, *, new_sizes):
    (x,), (d,) = args, dims
    return reshape(moveaxis(x, d, 0), (axis_size,) + tuple(new_sizes)), 0


reshape_p = Primitive("reshape")
reshape_p.kind = "movement"
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
        raise shape_error("transpose", f"permutation {permutation} is not a permutation of the axes of {user_str(x)}")
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
transpose_p.kind = "movement"
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


# --- shared helpers for the movement family --------------------------------------------

_pyslice = slice  # the builtin; this module defines its own `slice` below


def _checked(abstract, fn):
    """An impl that validates its inputs with `abstract` first (the eager path calls
    impls directly, and numpy would silently clip bad slices) and returns exactly
    the abstract dtype."""
    def impl(*args, **params):
        out_aval = abstract(*[get_aval(a) for a in args], **params)
        out = np.asarray(fn(*args, **params))
        if out.dtype != out_aval.dtype:
            out = out.astype(out_aval.dtype)
        return out
    return impl


def _index_error(op, msg):
    return IndexError(f"{op}: {msg}{_where()}")


def _check_dims(op, x, dims, ndim=None):
    """Static dimensions must be distinct and within [0, ndim)."""
    ndim = x.ndim if ndim is None else ndim
    for d in dims:
        if not 0 <= d < ndim:
            raise _index_error(op, f"dimension {d} is out of range for shape {x.shape}"
                               + (f" (result rank {ndim})" if ndim != x.ndim else ""))
    if len(set(dims)) != len(dims):
        raise shape_error(op, f"repeated dimensions {dims} for operand {user_str(x)}")


def _norm_dims(dims, ndim):
    out = []
    for d in dims:
        d = int(d)
        out.append(d + ndim if d < 0 else d)
    return tuple(out)


def _zero_like_ct(ct):
    return const(get_aval(ct).dtype, 0)


# --- squeeze ---------------------------------------------------------------------------

def _squeeze_abstract(x, *, dimensions):
    _check_dims("squeeze", x, dimensions)
    for d in dimensions:
        if x.shape[d] != 1:
            raise shape_error("squeeze", f"dimension {d} of operand {user_str(x)} has size {x.shape[d]}, not 1")
    shape = tuple(s for i, s in enumerate(x.shape) if i not in dimensions)
    return AbstractArray(shape, x.dtype, x.weak_type)


def _squeeze_batch(axis_size, args, dims, *, dimensions):
    (x,), (d,) = args, dims
    # Keep the batch dim where it is: shift the squeezed dims around it.
    new = tuple(a + (a >= d) for a in dimensions)
    return squeeze(x, new), d - sum(a < d for a in new)


squeeze_p = Primitive("squeeze")
squeeze_p.kind = "movement"
squeeze_p.abstract_eval = _squeeze_abstract
squeeze_p.impl = _checked(_squeeze_abstract, lambda x, *, dimensions: np.squeeze(np.asarray(x), dimensions))
squeeze_p.batch = _squeeze_batch
deflinear(squeeze_p, lambda ct, x, *, dimensions: [expand_dims(ct, dimensions)])


def squeeze(x, dimensions):
    """Remove the size-1 `dimensions` of `x`.

    Example:
        >>> squeeze(np.zeros((1, 3, 1)), (0, 2)).shape
        (3,)
    """
    dimensions = tuple(sorted(_norm_dims(dimensions, get_aval(x).ndim)))
    if not dimensions:
        return x
    return squeeze_p.bind(x, dimensions=dimensions)


# --- expand_dims -----------------------------------------------------------------------

def _expand_abstract(x, *, dimensions):
    nd = x.ndim + len(dimensions)
    _check_dims("expand_dims", x, dimensions, nd)
    it = iter(x.shape)
    shape = tuple(1 if i in dimensions else next(it) for i in range(nd))
    return AbstractArray(shape, x.dtype, x.weak_type)


def _expand_impl(x, *, dimensions):
    x = np.asarray(x)
    return x.reshape(_expand_abstract(get_aval(x), dimensions=dimensions).shape)


def _expand_batch(axis_size, args, dims, *, dimensions):
    (x,), (d,) = args, dims
    # Output position of the batch dim: after the inserted dims that precede it.
    out_d = d
    for a in sorted(dimensions):
        if a <= out_d:
            out_d += 1
    new = tuple(a + (a > out_d) for a in dimensions)
    return expand_dims(x, new), out_d


expand_dims_p = Primitive("expand_dims")
expand_dims_p.kind = "movement"
expand_dims_p.abstract_eval = _expand_abstract
expand_dims_p.impl = _checked(_expand_abstract, _expand_impl)
expand_dims_p.batch = _expand_batch
deflinear(expand_dims_p, lambda ct, x, *, dimensions: [squeeze(ct, dimensions)])


def expand_dims(x, dimensions):
    """Insert size-1 dimensions at positions `dimensions` of the result.

    Example:
        >>> expand_dims(np.zeros(3), (0, -1)).shape
        (1, 3, 1)
    """
    nd = get_aval(x).ndim + len(tuple(dimensions))
    dimensions = tuple(sorted(_norm_dims(dimensions, nd)))
    if not dimensions:
        return x
    return expand_dims_p.bind(x, dimensions=dimensions)


# --- rev -------------------------------------------------------------------------------

def _rev_abstract(x, *, dimensions):
    _check_dims("rev", x, dimensions)
    return AbstractArray(x.shape, x.dtype, x.weak_type)


def _rev_batch(axis_size, args, dims, *, dimensions):
    (x,), (d,) = args, dims
    return rev(x, tuple(a + (a >= d) for a in dimensions)), d


rev_p = Primitive("rev")
rev_p.kind = "movement"
rev_p.abstract_eval = _rev_abstract
rev_p.impl = _checked(_rev_abstract, lambda x, *, dimensions: np.flip(np.asarray(x), dimensions))
rev_p.batch = _rev_batch
deflinear(rev_p, lambda ct, x, *, dimensions: [rev(ct, dimensions)])


def rev(x, dimensions):
    """Reverse `x` along `dimensions`.

    Example:
        >>> rev(np.arange(3), (0,)).tolist()
        [2, 1, 0]
    """
    dimensions = tuple(sorted(_norm_dims(dimensions, get_aval(x).ndim)))
    if not dimensions:
        return x
    return rev_p.bind(x, dimensions=dimensions)


# --- pad -------------------------------------------------------------------------------

def _padded_size(n, lo, hi, interior):
    return lo + hi + n + max(n - 1, 0) * interior


def _pad_abstract(x, padding_value, *, padding_config):
    if padding_value.ndim != 0:
        raise shape_error("pad", f"padding_value must be rank 0, got {user_str(padding_value)}")
    if padding_value.dtype != x.dtype:
        raise TypeError(f"pad: operand {user_str(x)} and padding_value {user_str(padding_value)} must have the same dtype")
    if len(padding_config) != x.ndim:
        raise shape_error("pad", f"padding_config {padding_config} needs one (low, high, interior) "
                          f"per dimension of operand {user_str(x)}")
    shape = []
    for n, (lo, hi, interior) in zip(x.shape, padding_config):
        if interior < 0:
            raise shape_error("pad", f"interior padding must be >= 0, got {padding_config}")
        s = _padded_size(n, lo, hi, interior)
        if s < 0:
            raise shape_error("pad", f"padding_config {padding_config} crops operand {user_str(x)} "
                              f"to a negative size")
        shape.append(s)
    return AbstractArray(shape, x.dtype, x.weak_type)


def _pad_impl(x, padding_value, *, padding_config):
    x = np.asarray(x)
    # Pad with the non-negative parts, then crop the negative ones.
    full, place, crop = [], [], []
    for n, (lo, hi, interior) in zip(x.shape, padding_config):
        plo, phi = max(lo, 0), max(hi, 0)
        size = _padded_size(n, plo, phi, interior)
        full.append(size)
        place.append(_pyslice(plo, plo + max(n - 1, 0) * (interior + 1) + (n > 0), interior + 1))
        crop.append(_pyslice(max(-lo, 0), size - max(-hi, 0)))
    out = np.full(full, padding_value, dtype=x.dtype)
    out[tuple(place)] = x
    return out[tuple(crop)]


def _pad_transpose(ct, x, padding_value, *, padding_config):
    ca = get_aval(ct)
    zero = const(ca.dtype, 0)
    ct_x = None
    if is_undefined(x) or is_undefined(padding_value):
        # Undo the low/high padding (negative parts come back as zeros), then take
        # every (interior+1)-th element.
        t = pad(ct, zero, tuple((-lo, -hi, 0) for lo, hi, _ in padding_config))
        ta = get_aval(t)
        ct_x = slice(t, (0,) * ta.ndim, ta.shape, tuple(i + 1 for _, _, i in padding_config))
    ct_pv = None
    if is_undefined(padding_value):
        from .elementwise import sub
        from .reduce import reduce_sum
        all_axes = tuple(range(ca.ndim))
        ct_pv = sub(reduce_sum(ct, all_axes), reduce_sum(ct_x, all_axes)) if all_axes else sub(ct, ct_x)
    return [ct_x if is_undefined(x) else None, ct_pv]


def _pad_batch(axis_size, args, dims, *, padding_config):
    x, pv = args
    dx, dpv = dims
    cfg = ((0, 0, 0),) + tuple(padding_config)
    if dpv is None:
        return pad(moveaxis(x, dx, 0), pv, cfg), 0
    # A per-example padding value: pad with zero, then select it in where a mask of
    # the operand's positions is False.
    from .elementwise import select_n
    x = bdim_to_front(x, dx, axis_size)
    xa = get_aval(x)
    padded = pad(x, const(xa.dtype, 0), cfg)
    mask = pad(broadcast_in_dim(np.True_, xa.shape[1:], ()), np.False_, tuple(padding_config))
    shape = get_aval(padded).shape
    mask = broadcast_in_dim(mask, shape, tuple(range(1, len(shape))))
    pvb = broadcast_in_dim(moveaxis(pv, dpv, 0), shape, (0,))
    return select_n(mask, pvb, padded), 0


pad_p = Primitive("pad")
pad_p.kind = "movement"
pad_p.abstract_eval = _pad_abstract
pad_p.impl = _checked(_pad_abstract, _pad_impl)
pad_p.batch = _pad_batch
deflinear(pad_p, _pad_transpose)


def pad(x, padding_value, padding_config):
    """Pad `x` with `padding_value`; `padding_config` holds one (low, high, interior)
    per dimension.  Negative low/high crop; interior inserts that many values between
    neighbouring elements.

    Example:
        >>> pad(np.array([1, 2]), 0, ((1, 0, 1),)).tolist()
        [0, 1, 0, 2]
    """
    xa = get_aval(x)
    padding_config = tuple((int(lo), int(hi), int(i)) for lo, hi, i in padding_config)
    if type(padding_value) in (bool, int, float, complex):
        padding_value = const(xa.dtype, padding_value)
    if all(c == (0, 0, 0) for c in padding_config) and len(padding_config) == xa.ndim:
        return x
    return pad_p.bind(x, padding_value, padding_config=padding_config)


# --- concatenate -----------------------------------------------------------------------

def _concat_abstract(*xs, dimension):
    if not xs:
        raise TypeError("concatenate needs at least one operand")
    x0 = xs[0]
    if not 0 <= dimension < max(x0.ndim, 1) or x0.ndim == 0:
        raise _index_error("concatenate", f"dimension {dimension} is out of range for shape {x0.shape}")
    for x in xs:
        if x.dtype != x0.dtype:
            raise TypeError("concatenate: operands must have the same dtype, got "
                            + ", ".join(user_str(y) for y in xs))
        if x.ndim != x0.ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, x0.shape))
                                    if i != dimension):
            raise shape_error("concatenate", f"operands must have equal shapes except in dimension "
                              f"{dimension}, got " + ", ".join(user_str(y) for y in xs))
    shape = list(x0.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return AbstractArray(shape, x0.dtype, all(x.weak_type for x in xs))


def _concat_transpose(ct, *xs, dimension):
    out, start = [], 0
    ca = get_aval(ct)
    for x in xs:
        n = aval_of(x).shape[dimension]
        if is_undefined(x):
            lo = [0] * ca.ndim
            hi = list(ca.shape)
            lo[dimension], hi[dimension] = start, start + n
            out.append(slice(ct, lo, hi))
        else:
            out.append(None)
        start += n
    return out


def _concat_batch(axis_size, args, dims, *, dimension):
    xs = [bdim_to_front(x, d, axis_size) for x, d in zip(args, dims)]
    return concatenate(xs, dimension + 1), 0


concatenate_p = Primitive("concatenate")
concatenate_p.kind = "movement"
concatenate_p.abstract_eval = _concat_abstract
concatenate_p.impl = _checked(_concat_abstract, lambda *xs, dimension: np.concatenate(
    [np.asarray(x) for x in xs], axis=dimension))
concatenate_p.batch = _concat_batch
deflinear(concatenate_p, _concat_transpose)


def concatenate(operands, dimension):
    """Join `operands` (equal shapes except in `dimension`) along `dimension`.

    Example:
        >>> concatenate([np.zeros(2), np.ones(1)], 0).tolist()
        [0.0, 0.0, 1.0]
    """
    operands = tuple(operands)
    if not operands:
        raise TypeError("concatenate needs at least one operand")
    dimension = int(dimension)
    if dimension < 0:
        dimension += get_aval(operands[0]).ndim
    if len(operands) == 1:
        _concat_abstract(get_aval(operands[0]), dimension=dimension)
        return operands[0]
    return concatenate_p.bind(*operands, dimension=dimension)


# --- slice -----------------------------------------------------------------------------

def _slice_abstract(x, *, start_indices, limit_indices, strides):
    if not len(start_indices) == len(limit_indices) == len(strides) == x.ndim:
        raise shape_error("slice", f"start_indices {start_indices}, limit_indices {limit_indices} "
                          f"and strides {strides} need one entry per dimension of operand {user_str(x)}")
    shape = []
    for n, s, l, st in zip(x.shape, start_indices, limit_indices, strides):
        if not 0 <= s <= l <= n:
            raise _index_error("slice", f"start_indices {start_indices} and limit_indices "
                               f"{limit_indices} are out of range for shape {x.shape}")
        if st < 1:
            raise shape_error("slice", f"strides must be >= 1, got {strides}")
        shape.append((l - s + st - 1) // st)
    return AbstractArray(shape, x.dtype, x.weak_type)


def _slice_impl(x, *, start_indices, limit_indices, strides):
    return np.asarray(x)[tuple(_pyslice(s, l, st) for s, l, st in zip(start_indices, limit_indices, strides))]


def _slice_transpose(ct, x, *, start_indices, limit_indices, strides):
    cfg = []
    for n, s, m, st in zip(x.aval.shape, start_indices, get_aval(ct).shape, strides):
        extent = (m - 1) * st + 1 if m else 0
        cfg.append((s, n - s - extent, st - 1))
    return [pad(ct, _zero_like_ct(ct), tuple(cfg))]


def _slice_batch(axis_size, args, dims, *, start_indices, limit_indices, strides):
    (x,), (d,) = args, dims
    return slice(moveaxis(x, d, 0), (0,) + start_indices, (axis_size,) + limit_indices,
                 (1,) + strides), 0


slice_p = Primitive("slice")
slice_p.kind = "movement"
slice_p.abstract_eval = _slice_abstract
slice_p.impl = _checked(_slice_abstract, _slice_impl)
slice_p.batch = _slice_batch
deflinear(slice_p, _slice_transpose)


def slice(x, start_indices, limit_indices, strides=None):
    """The static slice x[start:limit:stride] in every dimension (non-negative indices).

    Example:
        >>> slice(np.arange(6), (1,), (6,), (2,)).tolist()
        [1, 3, 5]
    """
    start_indices = tuple(int(i) for i in start_indices)
    limit_indices = tuple(int(i) for i in limit_indices)
    strides = (1,) * len(start_indices) if strides is None else tuple(int(s) for s in strides)
    xa = get_aval(x)
    if (start_indices == (0,) * xa.ndim and limit_indices == xa.shape and strides == (1,) * xa.ndim):
        return x
    return slice_p.bind(x, start_indices=start_indices, limit_indices=limit_indices, strides=strides)


# --- dynamic_slice ---------------------------------------------------------------------

def _check_start_indices(op, x, idx):
    if len(idx) != x.ndim:
        raise shape_error(op, f"operand {user_str(x)} needs {x.ndim} start indices, got {len(idx)}")
    for i in idx:
        if i.ndim != 0 or not _dt.is_integer(i.dtype):
            raise TypeError(f"{op}: start indices must be rank-0 integers, got "
                            + ", ".join(str(j) for j in idx))


def _ds_abstract(x, *idx, slice_sizes):
    _check_start_indices("dynamic_slice", x, idx)
    if len(slice_sizes) != x.ndim:
        raise shape_error("dynamic_slice", f"operand {user_str(x)} needs {x.ndim} slice_sizes, got {slice_sizes}")
    for n, s in zip(x.shape, slice_sizes):
        if not 0 <= s <= n:
            raise _index_error("dynamic_slice", f"slice_sizes {slice_sizes} do not fit in shape {x.shape}")
    return AbstractArray(slice_sizes, x.dtype, x.weak_type)


def _clamped_starts(shape, idx, sizes):
    """XLA semantics: each start is clamped so that the window lies inside the operand."""
    return [min(max(int(i), 0), n - s) for n, i, s in zip(shape, idx, sizes)]


def _ds_impl(x, *idx, slice_sizes):
    x = np.asarray(x)
    starts = _clamped_starts(x.shape, idx, slice_sizes)
    return x[tuple(_pyslice(s, s + n) for s, n in zip(starts, slice_sizes))]


def _ds_jvp(primals, tangents, *, slice_sizes):
    x, *idx = primals
    ans = dynamic_slice_p.bind(x, *idx, slice_sizes=slice_sizes)
    if type(tangents[0]) is Zero:
        return ans, Zero(tangent_aval(get_aval(ans)))
    return ans, dynamic_slice_p.bind(tangents[0], *idx, slice_sizes=slice_sizes)


def _ds_transpose(ct, x, *idx, slice_sizes):
    if any(is_undefined(i) for i in idx):
        raise TypeError("dynamic_slice is not linear in its start indices")
    z = zeros(x.aval.update(weak_type=False))
    return [dynamic_update_slice_p.bind(z, ct, *idx)] + [None] * len(idx)


def _index_vector(axis_size, idx, dims):
    """Stack rank-0 start indices (batched ones have shape (axis_size,)) into one
    (axis_size, n) integer array."""
    from .convert import convert_element_type
    wide = any(np.dtype(get_aval(i).dtype).itemsize > 4 or get_aval(i).dtype == _dt.uint32 for i in idx)
    dt = _dt.int64 if wide else _dt.int32
    cols = []
    for i, d in zip(idx, dims):
        i = convert_element_type(i, dt)
        cols.append(broadcast_in_dim(i, (axis_size, 1), (0,) if d is not None else ()))
    return concatenate(cols, 1)


def _ds_batch(axis_size, args, dims, *, slice_sizes):
    x, *idx = args
    dx, *didx = dims
    if all(d is None for d in didx):
        zero = const(get_aval(idx[0]).dtype if idx else _dt.int32, 0)
        return dynamic_slice_p.bind(moveaxis(x, dx, 0), zero, *idx,
                                    slice_sizes=(axis_size,) + tuple(slice_sizes)), 0
    # Batched starts: a dynamic slice is a clip-mode gather of one window.
    from . import indexing
    nd = len(slice_sizes)
    dn = indexing.GatherDimensionNumbers(offset_dims=tuple(range(nd)), collapsed_slice_dims=(),
                                         start_index_map=tuple(range(nd)))
    ivec = _index_vector(axis_size, idx, didx)
    return indexing.gather_p.batch(axis_size, [x, ivec], [dx, 0], dimension_numbers=dn,
                                   slice_sizes=tuple(slice_sizes), mode="clip", fill_value=None,
                                   indices_are_sorted=True, unique_indices=True)


dynamic_slice_p = Primitive("dynamic_slice")
dynamic_slice_p.kind = "indexing"
dynamic_slice_p.abstract_eval = _ds_abstract
dynamic_slice_p.impl = _checked(_ds_abstract, _ds_impl)
dynamic_slice_p.jvp = _ds_jvp
dynamic_slice_p.transpose = _ds_transpose
dynamic_slice_p.batch = _ds_batch


def _start_index(i, n):
    """Normalise one start index: Python ints become int32 scalars and negative
    indices count from the end (as in JAX); out-of-range starts are clamped by the
    primitive."""
    if isinstance(i, (bool, np.bool_)):
        raise TypeError(f"start indices must be integers, got {i!r}")
    if isinstance(i, (int, np.integer)):
        i = int(i)
        if i < 0:
            i += n
        return const(_dt.int32 if -2 ** 31 <= i < 2 ** 31 else _dt.int64, i)
    a = get_aval(i)
    if a.ndim != 0 or not _dt.is_integer(a.dtype):
        raise TypeError(f"start indices must be rank-0 integers, got {user_str(a)}")
    if _dt.kind(a.dtype) == "u":
        return i
    from .elementwise import add, lt, select_n
    return select_n(lt(i, const(a.dtype, 0)), i, add(i, const(a.dtype, n)))


def _start_indices(x, start_indices):
    xa = get_aval(x)
    if not isinstance(start_indices, (list, tuple)):
        # A 1-d integer array of starts.
        sa = get_aval(start_indices)
        if sa.ndim != 1:
            raise TypeError(f"start_indices must be a sequence of scalars or a 1-d array, got {user_str(sa)}")
        start_indices = [squeeze(slice(start_indices, (k,), (k + 1,)), (0,)) for k in range(sa.shape[0])]
    if len(start_indices) != xa.ndim:
        raise shape_error("dynamic_slice", f"operand {user_str(xa)} needs {xa.ndim} start indices, "
                          f"got {len(start_indices)}")
    return [_start_index(i, n) for i, n in zip(start_indices, xa.shape)]


def dynamic_slice(x, start_indices, slice_sizes):
    """The slice of `x` of size `slice_sizes` starting at traced `start_indices`.
    Negative starts count from the end; starts are then clamped so the slice fits.

    Example:
        >>> dynamic_slice(np.arange(5), (4,), (2,)).tolist()
        [3, 4]
    """
    idx = _start_indices(x, start_indices)
    return dynamic_slice_p.bind(x, *idx, slice_sizes=tuple(int(s) for s in slice_sizes))


# --- dynamic_update_slice --------------------------------------------------------------

def _dus_abstract(x, update, *idx):
    _check_start_indices("dynamic_update_slice", x, idx)
    if update.dtype != x.dtype:
        raise TypeError(f"dynamic_update_slice: update {user_str(update)} must have the dtype of operand {user_str(x)}")
    if update.ndim != x.ndim:
        raise shape_error("dynamic_update_slice", f"update {user_str(update)} must have the rank of operand {user_str(x)}")
    for n, s in zip(x.shape, update.shape):
        if s > n:
            raise _index_error("dynamic_update_slice", f"update shape {update.shape} does not fit "
                               f"in shape {x.shape}")
    return AbstractArray(x.shape, x.dtype, x.weak_type)


def _dus_impl(x, update, *idx):
    out = np.array(x, copy=True)
    update = np.asarray(update)
    starts = _clamped_starts(out.shape, idx, update.shape)
    out[tuple(_pyslice(s, s + n) for s, n in zip(starts, update.shape))] = update
    return out


def _dus_jvp(primals, tangents):
    x, update, *idx = primals
    tx, tu = tangents[:2]
    ans = dynamic_update_slice_p.bind(x, update, *idx)
    if type(tx) is Zero and type(tu) is Zero:
        return ans, Zero(tangent_aval(get_aval(ans)))
    return ans, dynamic_update_slice_p.bind(instantiate(tx), instantiate(tu), *idx)


def _dus_transpose(ct, x, update, *idx):
    if any(is_undefined(i) for i in idx):
        raise TypeError("dynamic_update_slice is not linear in its start indices")
    ua = aval_of(update)
    ct_x = ct_u = None
    if is_undefined(x):
        ct_x = dynamic_update_slice_p.bind(ct, zeros(ua.update(weak_type=False)), *idx)
    if is_undefined(update):
        ct_u = dynamic_slice_p.bind(ct, *idx, slice_sizes=ua.shape)
    return [ct_x, ct_u] + [None] * len(idx)


def _dus_batch(axis_size, args, dims):
    x, update, *idx = args
    dx, du, *didx = dims
    x = bdim_to_front(x, dx, axis_size)
    update = bdim_to_front(update, du, axis_size)
    if all(d is None for d in didx):
        zero = const(get_aval(idx[0]).dtype if idx else _dt.int32, 0)
        return dynamic_update_slice_p.bind(x, update, zero, *idx), 0
    # Batched starts: a clip-mode scatter of one window per example.
    from . import indexing
    nd = get_aval(x).ndim - 1
    dn = indexing.ScatterDimensionNumbers(update_window_dims=tuple(range(nd)), inserted_window_dims=(),
                                          scatter_dims_to_operand_dims=tuple(range(nd)))
    ivec = _index_vector(axis_size, idx, didx)
    return indexing.scatter_p.batch(axis_size, [x, ivec, update], [0, 0, 0], dimension_numbers=dn,
                                    mode="clip", indices_are_sorted=True, unique_indices=True)


dynamic_update_slice_p = Primitive("dynamic_update_slice")
dynamic_update_slice_p.kind = "indexing"
dynamic_update_slice_p.abstract_eval = _dus_abstract
dynamic_update_slice_p.impl = _checked(_dus_abstract, _dus_impl)
dynamic_update_slice_p.jvp = _dus_jvp
dynamic_update_slice_p.transpose = _dus_transpose
dynamic_update_slice_p.batch = _dus_batch


def dynamic_update_slice(x, update, start_indices):
    """`x` with the block `update` written at traced `start_indices` (negative
    starts count from the end; starts are clamped so the block fits).

    Example:
        >>> dynamic_update_slice(np.zeros(4), np.ones(2), (3,)).tolist()
        [0.0, 0.0, 1.0, 1.0]
    """
    idx = _start_indices(x, start_indices)
    return dynamic_update_slice_p.bind(x, update, *idx)


# --- iota ------------------------------------------------------------------------------

def _iota_abstract(*, dtype, shape, dimension):
    if not (_dt.is_integer(dtype) or _dt.is_inexact(dtype)):
        raise TypeError(f"iota: dtype must be an integer or floating dtype, got {dtype}")
    if any(s < 0 for s in shape):
        raise shape_error("iota", f"shape {shape} has a negative size")
    if not 0 <= dimension < len(shape):
        raise _index_error("iota", f"dimension {dimension} is out of range for shape {shape}")
    return AbstractArray(shape, dtype)


def _iota_impl(*, dtype, shape, dimension):
    _iota_abstract(dtype=dtype, shape=shape, dimension=dimension)
    r = np.arange(shape[dimension], dtype=np.int64).astype(dtype)
    expanded = [1] * len(shape)
    expanded[dimension] = shape[dimension]
    return np.broadcast_to(r.reshape(expanded), shape)


def _iota_jvp(primals, tangents, **params):
    ans = iota_p.bind(**params)
    return ans, Zero(tangent_aval(get_aval(ans)))


iota_p = Primitive("iota")
iota_p.kind = "movement"
iota_p.abstract_eval = _iota_abstract
iota_p.impl = _iota_impl
iota_p.jvp = _iota_jvp
# No operands, so nothing is ever batched: the result is shared by every example.
iota_p.batch = lambda axis_size, args, dims, **params: (iota_p.bind(**params), None)
iota_p.not_applicable.add("transpose")


def iota(dtype, shape, dimension=0):
    """An array of `shape` whose values count 0, 1, ... along `dimension`: with an int
    shape, JAX's `lax.iota(dtype, size)`; with a tuple, its `lax.broadcasted_iota`.

    Example:
        >>> iota(np.int32, (2, 3), 1).tolist()
        [[0, 1, 2], [0, 1, 2]]
        >>> iota(np.int32, 3).tolist()
        [0, 1, 2]
    """
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    dimension = int(dimension)
    if dimension < 0:
        dimension += len(shape)
    return iota_p.bind(dtype=_dt.canonicalize(dtype), shape=shape, dimension=dimension)


# --- helpers over one dimension (JAX-lax names) -----------------------------------------

def _axis(x, axis):
    nd = get_aval(x).ndim
    axis = int(axis)
    a = axis + nd if axis < 0 else axis
    if not 0 <= a < nd:
        raise _index_error("index", f"axis {axis} is out of range for shape {get_aval(x).shape}")
    return a


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    """`operand[start:limit:stride]` along `axis` (None and negative indices allowed).

    Example:
        >>> slice_in_dim(np.arange(6), 1, None, 2).tolist()
        [1, 3, 5]
    """
    a = _axis(operand, axis)
    shape = get_aval(operand).shape
    n = shape[a]
    start = 0 if start_index is None else int(start_index)
    limit = n if limit_index is None else int(limit_index)
    start = start + n if start < 0 else start
    limit = limit + n if limit < 0 else limit
    lo, hi, st = [0] * len(shape), list(shape), [1] * len(shape)
    lo[a], hi[a], st[a] = start, limit, int(stride)
    return slice(operand, lo, hi, st)


def index_in_dim(operand, index, axis=0, keepdims=True):
    """`operand[index]` along `axis` for a static (possibly negative) index.

    Example:
        >>> index_in_dim(np.arange(6).reshape(2, 3), -1, 0, keepdims=False).tolist()
        [3, 4, 5]
    """
    a = _axis(operand, axis)
    n = get_aval(operand).shape[a]
    index = int(index)
    i = index + n if index < 0 else index
    if not 0 <= i < n:
        raise _index_error("index_in_dim", f"index {index} is out of range for axis {a} of "
                           f"shape {get_aval(operand).shape}")
    out = slice_in_dim(operand, i, i + 1, 1, a)
    return out if keepdims else squeeze(out, (a,))


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    """A dynamic slice of `slice_size` elements along `axis` only.

    Example:
        >>> dynamic_slice_in_dim(np.arange(5), 1, 2).tolist()
        [1, 2]
    """
    a = _axis(operand, axis)
    shape = get_aval(operand).shape
    starts = [0] * len(shape)
    sizes = list(shape)
    starts[a], sizes[a] = start_index, int(slice_size)
    return dynamic_slice(operand, starts, sizes)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    """`operand[index]` along `axis` for a traced index (negative counts from the end).

    Example:
        >>> dynamic_index_in_dim(np.arange(5), 2, keepdims=False).tolist()
        2
    """
    a = _axis(operand, axis)
    out = dynamic_slice_in_dim(operand, index, 1, a)
    return out if keepdims else squeeze(out, (a,))


def dynamic_update_slice_in_dim(operand, update, start_index, axis):
    """Write `update` into `operand` at a traced start along `axis` only.

    Example:
        >>> dynamic_update_slice_in_dim(np.zeros(4), np.ones(2), 1, 0).tolist()
        [0.0, 1.0, 1.0, 0.0]
    """
    a = _axis(operand, axis)
    starts = [0] * get_aval(operand).ndim
    starts[a] = start_index
    return dynamic_update_slice(operand, update, starts)


def dynamic_update_index_in_dim(operand, update, index, axis):
    """Write `update` (with or without the size-1 `axis`) at `index` along `axis`.

    Example:
        >>> dynamic_update_index_in_dim(np.zeros((2, 2)), np.ones(2), 1, 0).tolist()
        [[0.0, 0.0], [1.0, 1.0]]
    """
    a = _axis(operand, axis)
    if get_aval(update).ndim == get_aval(operand).ndim - 1:
        update = expand_dims(update, (a,))
    return dynamic_update_slice_in_dim(operand, update, index, a)


__all__ = [
    "broadcast_in_dim",
    "concatenate",
    "dynamic_index_in_dim",
    "dynamic_slice",
    "dynamic_slice_in_dim",
    "dynamic_update_index_in_dim",
    "dynamic_update_slice",
    "dynamic_update_slice_in_dim",
    "expand_dims",
    "index_in_dim",
    "iota",
    "pad",
    "reshape",
    "rev",
    "slice",
    "slice_in_dim",
    "squeeze",
    "transpose",
]
