"""Sorting primitives (sort, top_k) and the private take-along-axis gather their derivatives use.

Example:
    >>> import numpy as np
    >>> from ember.fx.prims.sort import sort
    >>> sort(np.array([3., 1., 2.], np.float32)).tolist()
    [1.0, 2.0, 3.0]
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ..core import (AbstractArray, Primitive, Zero, get_aval, is_undefined, shape_error,
                    tangent_aval)
from .reduce import _LOWP, _asnp
from .rules import bdim_to_front, moveaxis
from ..spelling import user_str


def _sortable(d):
    return d in _dt.ALL_DTYPES


def _key_for_numpy(x: np.ndarray) -> np.ndarray:
    # numpy sorts bfloat16 by its bits, not its value: compare in float32 (exact).
    return x.astype(np.float32) if x.dtype in _LOWP else x


def _total_order_key(x: np.ndarray) -> np.ndarray:
    """Integers ordered as IEEE totalOrder orders the floats `x` (-NaN < -inf < ... <
    -0 < +0 < ... < inf < NaN), the order XLA's TopK ranks by; other dtypes as they are."""
    x = _key_for_numpy(x)
    if x.dtype.kind != "f":
        return x
    bits = x.view(np.int32 if x.dtype.itemsize == 4 else np.int64)
    return np.where(bits < 0, bits ^ np.iinfo(bits.dtype).max, bits)


# --- take_along_axis / scatter_add_along_axis (private) ----------------------------

def _along_axis_check(name, x_shape, idx, axis, ndim):
    if not _dt.is_integer(idx.dtype):
        raise TypeError(f"{name}: indices must have an integer dtype, got {idx.dtype}")
    if not 0 <= axis < ndim:
        raise shape_error(name, f"axis {axis} is out of range for rank {ndim}")
    if idx.ndim != ndim or any(idx.shape[d] != x_shape[d] for d in range(ndim) if d != axis):
        raise shape_error(name, f"indices {idx} must match the shape {x_shape} on every axis "
                          f"but {axis}")


def _taa_abstract(x, idx, *, axis):
    _along_axis_check("take_along_axis", x.shape, idx, axis, x.ndim)
    if x.shape[axis] == 0 and idx.shape[axis] != 0:
        raise shape_error("take_along_axis", f"cannot take from the empty axis {axis} of {user_str(x)}")
    return AbstractArray(idx.shape, x.dtype, x.weak_type)


def _clipped(idx, n):
    return np.clip(np.asarray(idx), 0, n - 1).astype(np.intp)


def _validated(abstract_eval, *args, **params):
    # The eager path skips abstract_eval; these ops are costly enough to always check.
    abstract_eval(*[get_aval(a) for a in args], **params)


def _taa_impl(x, idx, *, axis):
    _validated(_taa_abstract, x, idx, axis=axis)
    x = _asnp(x)
    idx = np.asarray(idx)
    if idx.size == 0:
        return np.zeros(idx.shape, x.dtype)
    return np.take_along_axis(x, _clipped(idx, x.shape[axis]), axis)


def _taa_jvp(primals, tangents, *, axis):
    (x, idx), (g, _) = primals, tangents
    ans = take_along_axis_p.bind(x, idx, axis=axis)
    if type(g) is Zero:
        return ans, Zero(tangent_aval(get_aval(ans)))
    return ans, take_along_axis_p.bind(g, idx, axis=axis)


def _taa_transpose(ct, x, idx, *, axis):
    if is_undefined(idx):
        raise TypeError("take_along_axis is not linear in its indices")
    return [_scatter_add_along_axis(ct, idx, axis, x.aval.shape[axis]), None]


def _along_axis_batch(prim):
    def batch(axis_size, args, dims, *, axis, **params):
        (x, idx), (dx, di) = args, dims
        x = bdim_to_front(x, dx, axis_size)
        idx = bdim_to_front(idx, di, axis_size)
        return prim.bind(x, idx, axis=axis + 1, **params), 0
    return batch


take_along_axis_p = Primitive("take_along_axis")
take_along_axis_p.kind = "indexing"
take_along_axis_p.abstract_eval = _taa_abstract
take_along_axis_p.impl = _taa_impl
take_along_axis_p.jvp = _taa_jvp
take_along_axis_p.transpose = _taa_transpose
take_along_axis_p.batch = _along_axis_batch(take_along_axis_p)


def _sa_abstract(upd, idx, *, axis, size):
    _along_axis_check("scatter_add_along_axis", upd.shape, idx, axis, upd.ndim)
    if upd.shape != idx.shape:
        raise shape_error("scatter_add_along_axis", f"updates {upd} and indices {idx} must "
                          f"have equal shapes")
    if size < 0 or (size == 0 and idx.shape[axis] != 0):
        raise shape_error("scatter_add_along_axis", f"cannot scatter {idx.shape[axis]} values "
                          f"into an axis of size {size}")
    shape = upd.shape[:axis] + (size,) + upd.shape[axis + 1:]
    return AbstractArray(shape, upd.dtype, upd.weak_type)


def _sa_impl(upd, idx, *, axis, size):
    _validated(_sa_abstract, upd, idx, axis=axis, size=size)
    upd = _asnp(upd)
    d = upd.dtype
    acc = np.float32 if d in _LOWP else d
    out = np.zeros(upd.shape[:axis] + (size,) + upd.shape[axis + 1:], acc)
    if upd.size:
        where = list(np.indices(upd.shape, sparse=True))
        where[axis] = _clipped(idx, size)
        np.add.at(out, tuple(where), upd.astype(acc, copy=False))
    return out.astype(d, copy=False)


def _sa_jvp(primals, tangents, *, axis, size):
    (upd, idx), (g, _) = primals, tangents
    ans = scatter_add_along_axis_p.bind(upd, idx, axis=axis, size=size)
    if type(g) is Zero:
        return ans, Zero(tangent_aval(get_aval(ans)))
    return ans, scatter_add_along_axis_p.bind(g, idx, axis=axis, size=size)


def _sa_transpose(ct, upd, idx, *, axis, size):
    if is_undefined(idx):
        raise TypeError("scatter_add_along_axis is not linear in its indices")
    return [_take_along_axis(ct, idx, axis), None]


scatter_add_along_axis_p = Primitive("scatter_add_along_axis")
scatter_add_along_axis_p.kind = "scatter"
scatter_add_along_axis_p.abstract_eval = _sa_abstract
scatter_add_along_axis_p.impl = _sa_impl
scatter_add_along_axis_p.jvp = _sa_jvp
scatter_add_along_axis_p.transpose = _sa_transpose
scatter_add_along_axis_p.batch = _along_axis_batch(scatter_add_along_axis_p)


def _take_along_axis(x, idx, axis: int):
    """x gathered along `axis` at `idx` (same rank, equal sizes off `axis`; indices clamp).

    Example:
        >>> import numpy as np
        >>> _take_along_axis(np.array([5., 6., 7.], np.float32), np.array([2, 0]), 0).tolist()
        [7.0, 5.0]
    """
    return take_along_axis_p.bind(x, idx, axis=int(axis))


def _scatter_add_along_axis(upd, idx, axis: int, size: int):
    """The transpose of `_take_along_axis`: add `upd` into zeros at `idx` along `axis`.

    Example:
        >>> import numpy as np
        >>> _scatter_add_along_axis(np.ones(2, np.float32), np.array([1, 1]), 0, 3).tolist()
        [0.0, 2.0, 0.0]
    """
    return scatter_add_along_axis_p.bind(upd, idx, axis=int(axis), size=int(size))


# --- sort -------------------------------------------------------------------------

def _sort_abstract(*ops, dimension, is_stable, num_keys):
    if not ops:
        raise TypeError("sort needs at least one operand")
    shape = ops[0].shape
    for o in ops:
        if o.shape != shape:
            raise shape_error("sort", "operands must have equal shapes, got "
                              + ", ".join(user_str(a) for a in ops))
        if not _sortable(o.dtype):
            raise TypeError(f"sort does not accept dtype {o.dtype}")
    if not 0 <= dimension < len(shape):
        raise shape_error("sort", f"dimension {dimension} is out of range for operand {ops[0]}")
    if not 1 <= num_keys <= len(ops):
        raise TypeError(f"sort: num_keys must be between 1 and the number of operands "
                        f"({len(ops)}), got {num_keys}")
    return [AbstractArray(o.shape, o.dtype, o.weak_type) for o in ops]


def _sort_permutation(keys, axis):
    keys = [_key_for_numpy(k) for k in keys]
    if len(keys) == 1:
        return np.argsort(keys[0], axis=axis, kind="stable")
    # lexsort's primary key is its last one.
    return np.lexsort(keys[::-1], axis=axis)


def _sort_impl(*ops, dimension, is_stable, num_keys):
    _validated(_sort_abstract, *ops, dimension=dimension, is_stable=is_stable, num_keys=num_keys)
    ops = [_asnp(o) for o in ops]
    if ops[0].size == 0:
        return [o.copy() for o in ops]
    perm = _sort_permutation(ops[:num_keys], dimension)
    return [np.take_along_axis(o, perm, dimension) for o in ops]


def _iota_like(shape, axis):
    from .shape import broadcast_in_dim
    return broadcast_in_dim(np.arange(shape[axis], dtype=np.int32), shape, (axis,))


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    shape = get_aval(primals[0]).shape
    # Sorting an iota along with the operands yields the permutation, which
    # then moves the tangents the same way.
    outs = sort_p.bind(*primals, _iota_like(shape, dimension), dimension=dimension,
                       is_stable=is_stable, num_keys=num_keys)
    perm, outs = outs[-1], list(outs[:-1])
    touts = [Zero(tangent_aval(get_aval(o))) if type(t) is Zero
             else _take_along_axis(t, perm, dimension) for o, t in zip(outs, tangents)]
    return outs, touts


def _sort_batch(axis_size, args, dims, *, dimension, is_stable, num_keys):
    args = [bdim_to_front(x, d, axis_size) for x, d in zip(args, dims)]
    outs = sort_p.bind(*args, dimension=dimension + 1, is_stable=is_stable, num_keys=num_keys)
    return outs, [0] * len(outs)


sort_p = Primitive("sort", multiple_results=True)
sort_p.kind = "library"
sort_p.abstract_eval = _sort_abstract
sort_p.impl = _sort_impl
sort_p.jvp = _sort_jvp
sort_p.batch = _sort_batch
sort_p.not_applicable.add("transpose")


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort along `dimension`.  Given a sequence of operands, sort them all by the
    first `num_keys` (lexicographically) and return a tuple; given one array,
    return the sorted array.

    The sort is always stable (`is_stable=False` is honoured trivially).  Keys
    order as in numpy: NaNs last, -0.0 equal to +0.0 (they keep their input
    order), complex numbers by real then imaginary part.

    Example:
        >>> import numpy as np
        >>> k, v = sort((np.array([2, 1, 2], np.int32), np.array([0., 1., 2.], np.float32)))
        >>> k.tolist(), v.tolist()
        ([1, 2, 2], [1.0, 0.0, 2.0])
    """
    single = not isinstance(operand, (tuple, list))
    ops = (operand,) if single else tuple(operand)
    if not ops:
        raise TypeError("sort needs at least one operand")
    dimension = int(dimension)
    if dimension < 0:
        dimension += get_aval(ops[0]).ndim
    outs = sort_p.bind(*ops, dimension=dimension, is_stable=bool(is_stable),
                       num_keys=int(num_keys))
    return outs[0] if single else tuple(outs)


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """Sort `keys` along `dimension` and permute `values` the same way.

    Example:
        >>> import numpy as np
        >>> sort_key_val(np.array([2., 1.], np.float32), np.array([7, 8], np.int32))[1].tolist()
        [8, 7]
    """
    return sort((keys, values), dimension, is_stable, 1)


# --- top_k --------------------------------------------------------------------------

def _top_k_abstract(x, *, k):
    if not (x.dtype == _dt.bool_ or _dt.is_integer(x.dtype) or _dt.is_float(x.dtype)):
        raise TypeError(f"top_k does not accept dtype {x.dtype}")
    if x.ndim == 0:
        raise shape_error("top_k", f"the operand must have rank >= 1, got {user_str(x)}")
    if not 0 <= k <= x.shape[-1]:
        raise shape_error("top_k", f"k={k} must be between 0 and the last dimension of {user_str(x)}")
    shape = x.shape[:-1] + (k,)
    return [AbstractArray(shape, x.dtype, x.weak_type), AbstractArray(shape, _dt.int32)]


def _top_k_impl(x, *, k):
    _validated(_top_k_abstract, x, k=k)
    x = _asnp(x)
    n = x.shape[-1]
    # A stable ascending sort of the reversed axis, read backwards, is a stable
    # descending sort: ties come out lower index first. Floats rank by IEEE total
    # order, as JAX's top_k does (unlike its sort): +0 above -0, NaN above inf, and
    # a NaN with its sign bit set below -inf.
    rev = np.flip(_total_order_key(x), -1)
    order = np.flip(np.argsort(rev, axis=-1, kind="stable"), -1)
    idx = (n - 1 - order)[..., :k]
    return [np.take_along_axis(x, idx, -1), idx.astype(np.int32)]


def _top_k_jvp(primals, tangents, *, k):
    (x,), (g,) = primals, tangents
    vals, idx = top_k_p.bind(x, k=k)
    out_t = Zero(tangent_aval(get_aval(vals))) if type(g) is Zero else \
        _take_along_axis(g, idx, get_aval(x).ndim - 1)
    return [vals, idx], [out_t, Zero(tangent_aval(get_aval(idx)))]


def _top_k_batch(axis_size, args, dims, *, k):
    (x,), (d,) = args, dims
    if d == get_aval(x).ndim - 1:
        x, d = moveaxis(x, d, 0), 0
    outs = top_k_p.bind(x, k=k)
    return outs, [d, d]


top_k_p = Primitive("top_k", multiple_results=True)
top_k_p.kind = "library"
top_k_p.abstract_eval = _top_k_abstract
top_k_p.impl = _top_k_impl
top_k_p.jvp = _top_k_jvp
top_k_p.batch = _top_k_batch
top_k_p.not_applicable.add("transpose")


def top_k(operand, k: int, *, axis: int = -1):
    """The `k` largest entries along `axis` (default the last), descending, and their
    int32 indices.

    Ties come lower index first. Floats rank by IEEE total order, as in JAX: NaN
    above inf, +0.0 above -0.0, and a NaN whose sign bit is set below -inf.

    Example:
        >>> import numpy as np
        >>> v, i = top_k(np.array([1., 4., 2., 4.], np.float32), 2)
        >>> v.tolist(), i.tolist()
        ([4.0, 4.0], [1, 3])
        >>> top_k(np.array([[1., 5.], [3., 2.]], np.float32), 1, axis=0)[1].tolist()
        [[1, 0]]
    """
    nd = get_aval(operand).ndim
    if not -max(nd, 1) <= axis < max(nd, 1):
        raise ValueError(f"top_k: axis {axis} is out of range for an operand of shape "
                         f"{get_aval(operand).shape}")
    axis %= max(nd, 1)
    if nd and axis != nd - 1:  # the primitive works on the last axis: move `axis` there and back
        vals, idx = top_k_p.bind(moveaxis(operand, axis, nd - 1), k=int(k))
        return moveaxis(vals, nd - 1, axis), moveaxis(idx, nd - 1, axis)
    vals, idx = top_k_p.bind(operand, k=int(k))
    return vals, idx
