"""Indexing primitives with XLA semantics: gather and the scatter family (scatter,
scatter_add, scatter_mul, scatter_min, scatter_max).

Conventions (as in XLA/JAX, with `index_vector_dim` always the last dim of the
indices):
- The batch dims of `indices` are all but the last; each index vector picks a
  window start in the operand dims named by `start_index_map` (gather) or
  `scatter_dims_to_operand_dims` (scatter).
- `operand_batching_dims` pair operand dims with indices dims
  (`start_indices_batching_dims` / `scatter_indices_batching_dims`): example b of
  the indices only reads/writes example b of the operand.  vmap uses these.
- Modes: "clip" clamps every start so the whole window is in bounds;
  "fill" (gather; alias "drop") returns `fill_value` (default 0, not NaN as in
  JAX) for every window that is not entirely in bounds; "drop" (scatter; alias
  "fill") skips every update window that is not entirely in bounds;
  "promise_in_bounds" promises no index is out of bounds (the reference clamps
  gathers and drops scatters, as XLA does).  The default (None) is fill/drop.
- scatter (set) with duplicate indices is deterministic here: the last update in
  row-major order of the (scatter dims, window dims) of `updates` wins.

Example:
    >>> import numpy as np
    >>> dn = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    >>> gather(np.arange(5.0), np.array([[3], [1]]), dn, (1,)).tolist()
    [3.0, 1.0]
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ... import dtypes as _dt
from ..core import AbstractArray, Primitive, Zero, _where, get_aval, is_undefined, shape_error, tangent_aval
from .elementwise import from_order_keys, order_keys
from .rules import add_tangents, aval_of, bdim_to_front, instantiate, moveaxis, zeros
from ..spelling import user_str


class GatherDimensionNumbers(NamedTuple):
    """How a gather maps index vectors and windows between operand and output.

    Example:
        >>> GatherDimensionNumbers((1,), (0,), (0,)).offset_dims
        (1,)
    """
    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
    """How a scatter maps index vectors and update windows into the operand.

    Example:
        >>> ScatterDimensionNumbers((), (0,), (0,)).inserted_window_dims
        (0,)
    """
    update_window_dims: tuple
    inserted_window_dims: tuple
    scatter_dims_to_operand_dims: tuple
    operand_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()


def _ints(t):
    return tuple(int(i) for i in t)


def _gather_dn(dn) -> GatherDimensionNumbers:
    if not isinstance(dn, GatherDimensionNumbers):
        raise TypeError(f"gather: dimension_numbers must be a GatherDimensionNumbers, got {dn!r}")
    return GatherDimensionNumbers(*(_ints(f) for f in dn))


def _scatter_dn(dn) -> ScatterDimensionNumbers:
    if not isinstance(dn, ScatterDimensionNumbers):
        raise TypeError(f"scatter: dimension_numbers must be a ScatterDimensionNumbers, got {dn!r}")
    return ScatterDimensionNumbers(*(_ints(f) for f in dn))


_MODES = {"fill": "fill", "drop": "fill", "fill_or_drop": "fill", "clip": "clip",
          "promise_in_bounds": "promise_in_bounds"}


def _mode(mode, scatter: bool) -> str:
    if mode is None:
        m = "fill"
    else:
        name = getattr(mode, "name", mode)
        m = _MODES.get(str(name).lower())
        if m is None:
            raise ValueError(f"unknown gather/scatter mode {mode!r}; expected one of "
                             f"'clip', 'fill', 'drop', 'promise_in_bounds'")
    return "drop" if scatter and m == "fill" else m


def _index_error(op, msg):
    return IndexError(f"{op}: {msg}{_where()}")


def _window_dims(ndim, *excluded):
    return tuple(d for d in range(ndim) if not any(d in e for e in excluded))


# --- validation shared by gather and scatter ------------------------------------------

def _check_dimset(op, name, dims, ndim, where, sorted_=True):
    """`dims` distinct (and sorted) within [0, ndim); `where` names the shape for errors."""
    if len(set(dims)) != len(dims):
        raise shape_error(op, f"{name} {dims} has repeated dimensions")
    if sorted_ and tuple(sorted(dims)) != tuple(dims):
        raise shape_error(op, f"{name} {dims} must be sorted")
    for d in dims:
        if not 0 <= d < ndim:
            raise _index_error(op, f"{name} {dims}: dimension {d} is out of range for {where}")


def _check_common(op, operand, indices, index_map, obd, ibd, window_excl, map_name, ibd_name):
    """Checks shared by gather and scatter: indices type, index map and batching dims."""
    if not _dt.is_integer(indices.dtype):
        raise TypeError(f"{op}: indices must have an integer dtype, got {indices}")
    if indices.ndim < 1:
        raise shape_error(op, f"indices {indices} need a last dimension holding the index vectors")
    if indices.shape[-1] != len(index_map):
        raise shape_error(op, f"the last dimension of indices {indices} must have size "
                          f"len({map_name}) = {len(index_map)}")
    _check_dimset(op, "operand_batching_dims", obd, operand.ndim, f"operand shape {operand.shape}")
    _check_dimset(op, map_name, index_map, operand.ndim, f"operand shape {operand.shape}", sorted_=False)
    if set(obd) & set(window_excl):
        raise shape_error(op, f"operand_batching_dims {obd} overlap the collapsed/inserted dims "
                          f"{window_excl}")
    if set(obd) & set(index_map):
        raise shape_error(op, f"operand_batching_dims {obd} overlap {map_name} {index_map}")
    nb = indices.ndim - 1
    _check_dimset(op, ibd_name, ibd, nb, f"the batch dims {indices.shape[:-1]} of indices shape "
                  f"{indices.shape}", sorted_=False)
    if len(ibd) != len(obd):
        raise shape_error(op, f"operand_batching_dims {obd} and {ibd_name} {ibd} differ in length")
    for a, b in zip(obd, ibd):
        if operand.shape[a] != indices.shape[b]:
            raise shape_error(op, f"operand batching dim {a} of {user_str(operand)} and indices batching dim "
                              f"{b} of {indices} differ in size")


# --- gather ----------------------------------------------------------------------------

def _gather_abstract(operand, indices, *, dimension_numbers, slice_sizes, mode, fill_value,
                     indices_are_sorted, unique_indices):
    dn = dimension_numbers
    op = "gather"
    if len(slice_sizes) != operand.ndim:
        raise shape_error(op, f"operand {user_str(operand)} needs {operand.ndim} slice_sizes, got {slice_sizes}")
    for n, s in zip(operand.shape, slice_sizes):
        if not 0 <= s <= n:
            raise _index_error(op, f"slice_sizes {slice_sizes} do not fit in shape {operand.shape}")
    _check_dimset(op, "collapsed_slice_dims", dn.collapsed_slice_dims, operand.ndim,
                  f"operand shape {operand.shape}")
    _check_common(op, operand, indices, dn.start_index_map, dn.operand_batching_dims,
                  dn.start_indices_batching_dims, dn.collapsed_slice_dims, "start_index_map",
                  "start_indices_batching_dims")
    for d in dn.collapsed_slice_dims + dn.operand_batching_dims:
        if slice_sizes[d] != 1:
            raise shape_error(op, f"collapsed and batching dims need slice size 1, but dim {d} has "
                              f"slice size {slice_sizes[d]}")
    wdims = _window_dims(operand.ndim, dn.collapsed_slice_dims, dn.operand_batching_dims)
    nb = indices.ndim - 1
    out_rank = nb + len(wdims)
    if len(dn.offset_dims) != len(wdims):
        raise shape_error(op, f"offset_dims {dn.offset_dims} must have one entry per window dim "
                          f"({len(wdims)}) of operand {user_str(operand)}")
    _check_dimset(op, "offset_dims", dn.offset_dims, out_rank, f"an output of rank {out_rank} "
                  f"(operand shape {operand.shape}, indices shape {indices.shape})")
    bs, ws = iter(indices.shape[:-1]), iter(slice_sizes[d] for d in wdims)
    shape = tuple(next(ws) if p in dn.offset_dims else next(bs) for p in range(out_rank))
    return AbstractArray(shape, operand.dtype, operand.weak_type)


def as_int64(indices, xp=np):
    """Indices as int64; huge uint64 values saturate instead of wrapping negative.
    `xp`: the array module of the buffers (numpy here, CuPy for GPU arrays)."""
    idx = xp.asarray(indices)
    if idx.dtype == np.uint64:
        idx = xp.minimum(idx, np.uint64(2 ** 63 - 1))
    return idx.astype(np.int64)


def index_grid(op_shape, idx, index_map, obd, ibd, wdims, wshape, sizes, xp=np):
    """Per operand dim, the int64 index of every (batch, window) element, with starts
    clamped so windows fit, and a mask over the batch of windows that were in bounds
    (`xp`: the buffers' array module)."""
    bshape = idx.shape[:-1]
    nb, nw = len(bshape), len(wdims)
    full = tuple(bshape) + tuple(wshape)
    valid = xp.ones(bshape, dtype=bool)
    starts = {}
    for k, d in enumerate(index_map):
        s = idx[..., k]
        hi = op_shape[d] - sizes[d]
        valid &= (s >= 0) & (s <= hi)
        starts[d] = xp.clip(s, 0, hi)
    arrays = []
    for d in range(len(op_shape)):
        a = xp.zeros((1,) * (nb + nw), np.int64)
        if d in starts:
            a = a + starts[d].reshape(tuple(bshape) + (1,) * nw)
        if d in obd:
            b = ibd[obd.index(d)]
            r = [1] * (nb + nw)
            r[b] = bshape[b]
            a = a + xp.arange(bshape[b]).reshape(r)
        if d in wdims:
            j = wdims.index(d)
            r = [1] * (nb + nw)
            r[nb + j] = wshape[j]
            a = a + xp.arange(wshape[j]).reshape(r)
        arrays.append(xp.broadcast_to(a, full))
    return arrays, valid, full


def gather_windows(xp, operand, indices, dimension_numbers, slice_sizes, mode, fill_value):
    """The gather of `operand` (an array of the module `xp`: numpy for the reference
    impl, CuPy for the GPU's eager ops) in the output's axis order, before the
    result dtype is fixed."""
    dn = dimension_numbers
    idx = as_int64(indices, xp)
    wdims = _window_dims(operand.ndim, dn.collapsed_slice_dims, dn.operand_batching_dims)
    wshape = tuple(slice_sizes[d] for d in wdims)
    arrays, valid, full = index_grid(operand.shape, idx, dn.start_index_map, dn.operand_batching_dims,
                                     dn.start_indices_batching_dims, wdims, wshape, slice_sizes, xp)
    if 0 in full:
        res = xp.zeros(full, operand.dtype)
    elif operand.ndim == 0:
        res = xp.broadcast_to(operand, full)
    else:
        res = operand[tuple(arrays)]
    # (on a GPU the mask is applied without asking whether any window is out of
    # bounds: that question would wait for the device)
    if mode == "fill" and (xp is not np or not valid.all()):
        fv = xp.asarray(np.array(0 if fill_value is None else fill_value).astype(operand.dtype))
        res = xp.where(valid.reshape(valid.shape + (1,) * len(wdims)), res, fv)
    nb = idx.ndim - 1
    bi, wi = iter(range(nb)), iter(range(nb, nb + len(wdims)))
    perm = [next(wi) if p in dn.offset_dims else next(bi) for p in range(nb + len(wdims))]
    return xp.transpose(res, perm)


def _gather_impl(operand, indices, *, dimension_numbers, slice_sizes, mode, fill_value,
                 indices_are_sorted, unique_indices):
    out_aval = _gather_abstract(get_aval(operand), get_aval(indices), dimension_numbers=dimension_numbers,
                                slice_sizes=slice_sizes, mode=mode, fill_value=fill_value,
                                indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
    out = gather_windows(np, np.asarray(operand), indices, dimension_numbers, slice_sizes, mode, fill_value)
    return np.asarray(out, dtype=out_aval.dtype)


def _gather_jvp(primals, tangents, **params):
    operand, indices = primals
    ans = gather_p.bind(operand, indices, **params)
    t = tangents[0]
    if type(t) is Zero:
        return ans, Zero(tangent_aval(get_aval(ans)))
    # The fill value is a constant: its tangent is zero.
    return ans, gather_p.bind(t, indices, **dict(params, fill_value=None))


def _scatter_dn_of(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    return ScatterDimensionNumbers(
        update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        scatter_indices_batching_dims=dn.start_indices_batching_dims)


def _gather_dn_of(dn: ScatterDimensionNumbers) -> GatherDimensionNumbers:
    return GatherDimensionNumbers(
        offset_dims=dn.update_window_dims, collapsed_slice_dims=dn.inserted_window_dims,
        start_index_map=dn.scatter_dims_to_operand_dims,
        operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=dn.scatter_indices_batching_dims)


def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes, mode, fill_value,
                      indices_are_sorted, unique_indices):
    if is_undefined(indices):
        raise TypeError("gather is not linear in its indices")
    z = zeros(operand.aval.update(weak_type=False))
    out = scatter_add_p.bind(z, indices, ct, dimension_numbers=_scatter_dn_of(dimension_numbers),
                             mode="drop" if mode == "fill" else mode,
                             indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
    return [out, None]


def _gather_batch(axis_size, args, dims, *, dimension_numbers, slice_sizes, **params):
    operand, indices = args
    do, di = dims
    dn = dimension_numbers
    if do is None:
        # Only the indices are batched: one more batch dim of indices, at the front.
        indices = moveaxis(indices, di, 0)
        ndn = dn._replace(offset_dims=tuple(o + 1 for o in dn.offset_dims),
                          start_indices_batching_dims=tuple(b + 1 for b in dn.start_indices_batching_dims))
        return gather_p.bind(operand, indices, dimension_numbers=ndn, slice_sizes=slice_sizes,
                             **params), 0
    # The operand is batched: pair its batch dim with one of the indices (broadcast
    # if they are shared), so example b reads only operand example b.
    operand = moveaxis(operand, do, 0)
    indices = bdim_to_front(indices, di, axis_size)
    sh = lambda t: tuple(d + 1 for d in t)
    ndn = GatherDimensionNumbers(
        offset_dims=sh(dn.offset_dims), collapsed_slice_dims=sh(dn.collapsed_slice_dims),
        start_index_map=sh(dn.start_index_map),
        operand_batching_dims=(0,) + sh(dn.operand_batching_dims),
        start_indices_batching_dims=(0,) + sh(dn.start_indices_batching_dims))
    return gather_p.bind(operand, indices, dimension_numbers=ndn,
                         slice_sizes=(1,) + tuple(slice_sizes), **params), 0


gather_p = Primitive("gather")
gather_p.kind = "indexing"
gather_p.abstract_eval = _gather_abstract
gather_p.impl = _gather_impl
gather_p.jvp = _gather_jvp
gather_p.transpose = _gather_transpose
gather_p.batch = _gather_batch


def gather(operand, start_indices, dimension_numbers, slice_sizes, mode=None, fill_value=None, *,
           indices_are_sorted=False, unique_indices=False):
    """XLA gather: one window of `slice_sizes` per index vector (the last dim of
    `start_indices`).  `mode`: None/"fill" (out-of-bounds windows read `fill_value`,
    default 0), "clip", or "promise_in_bounds".

    Example:
        >>> dn = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
        ...                             start_index_map=(0,))
        >>> gather(np.arange(6).reshape(3, 2), np.array([[2], [0]]), dn, (1, 2)).tolist()
        [[4, 5], [0, 1]]
    """
    mode = _mode(mode, scatter=False)
    if mode != "fill" or fill_value is None:
        fill_value = None
    elif isinstance(fill_value, np.generic) or (isinstance(fill_value, np.ndarray) and fill_value.ndim == 0):
        fill_value = fill_value.item()
    return gather_p.bind(operand, start_indices, dimension_numbers=_gather_dn(dimension_numbers),
                         slice_sizes=_ints(slice_sizes), mode=mode, fill_value=fill_value,
                         indices_are_sorted=bool(indices_are_sorted),
                         unique_indices=bool(unique_indices))


# --- scatter family --------------------------------------------------------------------

def _scatter_abstract_for(name, allow_complex=True):
    def abstract_eval(operand, indices, updates, *, dimension_numbers, mode, indices_are_sorted,
                      unique_indices):
        dn = dimension_numbers
        if updates.dtype != operand.dtype:
            raise TypeError(f"{name}: updates {user_str(updates)} must have the dtype of operand {user_str(operand)}")
        if not allow_complex and _dt.kind(operand.dtype) == "c":
            raise TypeError(f"{name} does not accept complex dtype {operand.dtype}")
        _check_dimset(name, "inserted_window_dims", dn.inserted_window_dims, operand.ndim,
                      f"operand shape {operand.shape}")
        _check_common(name, operand, indices, dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
                      dn.scatter_indices_batching_dims, dn.inserted_window_dims,
                      "scatter_dims_to_operand_dims", "scatter_indices_batching_dims")
        _check_dimset(name, "update_window_dims", dn.update_window_dims, updates.ndim,
                      f"updates shape {updates.shape}")
        wdims = _window_dims(operand.ndim, dn.inserted_window_dims, dn.operand_batching_dims)
        if len(dn.update_window_dims) != len(wdims):
            raise shape_error(name, f"update_window_dims {dn.update_window_dims} must have one entry "
                              f"per window dim ({len(wdims)}) of operand {user_str(operand)}")
        scatter_sizes = tuple(s for p, s in enumerate(updates.shape) if p not in dn.update_window_dims)
        if scatter_sizes != indices.shape[:-1]:
            raise shape_error(name, f"the scatter dims of updates {user_str(updates)} must match the batch dims "
                              f"{indices.shape[:-1]} of indices {indices}")
        for p, d in zip(dn.update_window_dims, wdims):
            if updates.shape[p] > operand.shape[d]:
                raise _index_error(name, f"update window {tuple(updates.shape[q] for q in dn.update_window_dims)} "
                                   f"does not fit in shape {operand.shape}")
        return AbstractArray(operand.shape, operand.dtype, operand.weak_type)
    return abstract_eval


_LOWP = (_dt.float16, _dt.bfloat16)


def _scatter_impl_for(name, ufunc, allow_complex=True):
    abstract = _scatter_abstract_for(name, allow_complex)

    def impl(operand, indices, updates, *, dimension_numbers, mode, indices_are_sorted, unique_indices):
        out_aval = abstract(get_aval(operand), get_aval(indices), get_aval(updates),
                            dimension_numbers=dimension_numbers, mode=mode,
                            indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
        dn = dimension_numbers
        out = np.array(operand, dtype=out_aval.dtype, copy=True, order="C")
        idx = as_int64(indices)
        upd = np.asarray(updates)
        nb = idx.ndim - 1
        scatter_pos = [p for p in range(upd.ndim) if p not in dn.update_window_dims]
        u = np.transpose(upd, scatter_pos + list(dn.update_window_dims))
        wdims = _window_dims(out.ndim, dn.inserted_window_dims, dn.operand_batching_dims)
        wshape = u.shape[nb:]
        sizes = [1] * out.ndim
        for j, d in enumerate(wdims):
            sizes[d] = wshape[j]
        arrays, valid, full = index_grid(out.shape, idx, dn.scatter_dims_to_operand_dims,
                                          dn.operand_batching_dims, dn.scatter_indices_batching_dims,
                                          wdims, wshape, sizes)
        if 0 in full:
            return out
        if mode != "clip" and not valid.all():
            keep = np.broadcast_to(valid.reshape(valid.shape + (1,) * len(wdims)), full)
            arrays = [a[keep] for a in arrays]
            u = u[keep]
        if out.ndim == 0:
            flat = np.zeros(u.size, np.int64)
        else:
            flat = np.ravel_multi_index(tuple(a.ravel() for a in arrays), out.shape)
        uf = np.ravel(u)
        target = out.reshape(-1)
        if ufunc is None:
            # Set: the last update (row-major over the updates) for each position wins.
            pos, first = np.unique(flat[::-1], return_index=True)
            target[pos] = uf[len(flat) - 1 - first]
            return out
        if ufunc in (np.maximum, np.minimum) and (out.dtype.kind == "f" or out.dtype in _LOWP):
            # IEEE maximum/minimum (-0.0 < +0.0, NaN propagates) on order keys
            op = "max" if ufunc is np.maximum else "min"
            wd = np.dtype(np.float32) if out.dtype in _LOWP else out.dtype
            keys = order_keys(target.astype(wd), op)
            ufunc.at(keys, flat, order_keys(uf.astype(wd), op))
            return from_order_keys(keys, wd).astype(out.dtype).reshape(out.shape)
        if out.dtype in _LOWP:
            # Half precision accumulates in float32 and rounds once.
            work = target.astype(np.float32)
            ufunc.at(work, flat, uf.astype(np.float32))
            return work.astype(out.dtype).reshape(out.shape)
        ufunc.at(target, flat, uf)
        return out
    return impl


def _make_scatter(name, ufunc, allow_complex=True):
    p = Primitive(name)
    p.abstract_eval = _scatter_abstract_for(name, allow_complex)
    p.impl = _scatter_impl_for(name, ufunc, allow_complex)
    p.batch = _scatter_batch(p)
    p.kind = "scatter"
    return p


def _scatter_batch(prim):
    def batch(axis_size, args, dims, *, dimension_numbers, **params):
        # Everything batched at the front; the batch dim is an operand batching dim
        # paired with indices dim 0 (and scatter dim 0 of updates).
        operand, indices, updates = (bdim_to_front(x, d, axis_size) for x, d in zip(args, dims))
        dn = dimension_numbers
        sh = lambda t: tuple(d + 1 for d in t)
        ndn = ScatterDimensionNumbers(
            update_window_dims=sh(dn.update_window_dims),
            inserted_window_dims=sh(dn.inserted_window_dims),
            scatter_dims_to_operand_dims=sh(dn.scatter_dims_to_operand_dims),
            operand_batching_dims=(0,) + sh(dn.operand_batching_dims),
            scatter_indices_batching_dims=(0,) + sh(dn.scatter_indices_batching_dims))
        return prim.bind(operand, indices, updates, dimension_numbers=ndn, **params), 0
    return batch


scatter_p = _make_scatter("scatter", None)
scatter_add_p = _make_scatter("scatter_add", np.add)
scatter_mul_p = _make_scatter("scatter_mul", np.multiply)
scatter_min_p = _make_scatter("scatter_min", np.minimum, allow_complex=False)
scatter_max_p = _make_scatter("scatter_max", np.maximum, allow_complex=False)


def _inverse_gather_params(operand_ndim, updates_shape, params):
    """The gather parameters that read, for every update element of the scatter
    `params`, the operand position it targets."""
    dn = params["dimension_numbers"]
    wdims = _window_dims(operand_ndim, dn.inserted_window_dims, dn.operand_batching_dims)
    sizes = [1] * operand_ndim
    for p, d in zip(dn.update_window_dims, wdims):
        sizes[d] = updates_shape[p]
    mode = params["mode"]
    return dict(dimension_numbers=_gather_dn_of(dn), slice_sizes=tuple(sizes),
                mode="fill" if mode == "drop" else mode, fill_value=None,
                indices_are_sorted=params["indices_are_sorted"],
                unique_indices=params["unique_indices"])


def _inverse_gather(x, indices, updates_shape, **params):
    """The gather that reads, for every update element, the operand position it targets."""
    return gather_p.bind(x, indices, **_inverse_gather_params(get_aval(x).ndim, updates_shape, params))


def _zero_out(aval):
    return Zero(tangent_aval(aval))


def _scatter_add_jvp(primals, tangents, **params):
    operand, indices, updates = primals
    ans = scatter_add_p.bind(operand, indices, updates, **params)
    to, _, tu = tangents
    if type(to) is Zero and type(tu) is Zero:
        return ans, _zero_out(get_aval(ans))
    return ans, scatter_add_p.bind(instantiate(to), indices, instantiate(tu), **params)


def _scatter_add_transpose(ct, operand, indices, updates, **params):
    if is_undefined(indices):
        raise TypeError("scatter_add is not linear in its indices")
    ct_u = None
    if is_undefined(updates):
        ct_u = _inverse_gather(ct, indices, updates.aval.shape, **params)
    return [ct if is_undefined(operand) else None, None, ct_u]


scatter_add_p.jvp = _scatter_add_jvp
scatter_add_p.transpose = _scatter_add_transpose


def _winners(operand_aval, indices, updates_shape, params):
    """A bool mask over the updates: True where that update is the one a scatter
    (set) keeps (with duplicates only one update per position survives)."""
    from .elementwise import add, eq
    from .shape import broadcast_in_dim, iota, reshape
    n = 1
    for s in updates_shape:
        n *= s
    dt = _dt.int32 if n < 2 ** 31 - 1 else _dt.int64
    ids = add(reshape(iota(dt, (n,), 0), updates_shape), np.array(1, dt)[()])
    base = broadcast_in_dim(np.array(0, dt)[()], operand_aval.shape, ())
    won = scatter_p.bind(base, indices, ids, **params)
    return eq(_inverse_gather(won, indices, updates_shape, **params), ids)


def _scatter_jvp(primals, tangents, **params):
    operand, indices, updates = primals
    ans = scatter_p.bind(operand, indices, updates, **params)
    to, _, tu = tangents
    if type(to) is Zero and type(tu) is Zero:
        return ans, _zero_out(get_aval(ans))
    # The same positions are overwritten, by the same (winning) updates' tangents.
    return ans, scatter_p.bind(instantiate(to), indices, instantiate(tu), **params)


def _scatter_transpose(ct, operand, indices, updates, **params):
    if is_undefined(indices):
        raise TypeError("scatter is not linear in its indices")
    ua = aval_of(updates)
    ct_dtype = get_aval(ct).dtype
    ct_o = ct_u = None
    if is_undefined(operand):
        ct_o = scatter_p.bind(ct, indices, zeros(AbstractArray(ua.shape, ct_dtype)), **params)
    if is_undefined(updates):
        ct_u = _inverse_gather(ct, indices, ua.shape, **params)
        if not params["unique_indices"]:
            from .elementwise import select_n
            mask = _winners(aval_of(operand), indices, ua.shape, params)
            ct_u = select_n(mask, zeros(AbstractArray(ua.shape, ct_dtype)), ct_u)
    return [ct_o, None, ct_u]


scatter_p.jvp = _scatter_jvp
scatter_p.transpose = _scatter_transpose


def _scatter_mul_jvp(primals, tangents, **params):
    from .elementwise import mul
    from .group_products import exclusive_group_products
    operand, indices, updates = primals
    ans = scatter_mul_p.bind(operand, indices, updates, **params)
    to, _, tu = tangents
    out_aval = get_aval(ans)
    t = _zero_out(out_aval)
    if type(to) is not Zero:
        t = scatter_mul_p.bind(to, indices, updates, **params)
    if type(tu) is not Zero and get_aval(updates).size:
        # d out[p] = x[p] * sum_{u -> p} t[u] * prod_{v -> p, v != u} y[v]
        xa = get_aval(operand)
        zx = zeros(xa.strip_weak())
        if params["unique_indices"]:
            others = tu
        else:
            others = mul(tu, exclusive_group_products(xa, indices, updates, params))
        t = add_tangents(t, mul(operand, scatter_add_p.bind(zx, indices, others, **params)))
    return ans, t


def _scatter_mul_transpose(ct, operand, indices, updates, **params):
    if is_undefined(indices) or is_undefined(updates):
        raise TypeError("scatter_mul is linear only in its operand")
    return [scatter_mul_p.bind(ct, indices, updates, **params), None, None]


scatter_mul_p.jvp = _scatter_mul_jvp
scatter_mul_p.transpose = _scatter_mul_transpose


def _extremal_jvp(prim):
    def jvp(primals, tangents, **params):
        # Tangent of whichever value wins; ties (operand and/or several updates equal
        # to the result) average the tangents of all the tied values.
        from .convert import convert_element_type
        from .elementwise import add, div, eq, max, select_n
        operand, indices, updates = primals
        ans = prim.bind(operand, indices, updates, **params)
        to, _, tu = tangents
        out_aval = get_aval(ans)
        if type(to) is Zero and type(tu) is Zero:
            return ans, _zero_out(out_aval)
        to, tu = instantiate(to), instantiate(tu)
        ua = get_aval(updates)
        dt = get_aval(to).dtype
        zx = zeros(AbstractArray(out_aval.shape, dt))
        zu = zeros(AbstractArray(ua.shape, dt))
        win_u = eq(updates, _inverse_gather(ans, indices, ua.shape, **params))
        win_x = eq(operand, ans)
        count = add(convert_element_type(win_x, dt),
                    scatter_add_p.bind(zx, indices, convert_element_type(win_u, dt), **params))
        num = add(select_n(win_x, zx, to),
                  scatter_add_p.bind(zx, indices, select_n(win_u, zu, tu), **params))
        return ans, div(num, max(count, np.array(1, dt)[()]))
    return jvp


scatter_min_p.jvp = _extremal_jvp(scatter_min_p)
scatter_max_p.jvp = _extremal_jvp(scatter_max_p)
scatter_min_p.not_applicable.add("transpose")
scatter_max_p.not_applicable.add("transpose")


def _bind_scatter(prim, operand, scatter_indices, updates, dimension_numbers, mode,
                  indices_are_sorted, unique_indices):
    return prim.bind(operand, scatter_indices, updates,
                     dimension_numbers=_scatter_dn(dimension_numbers), mode=_mode(mode, scatter=True),
                     indices_are_sorted=bool(indices_are_sorted), unique_indices=bool(unique_indices))


def scatter(operand, scatter_indices, updates, dimension_numbers, mode=None, *,
            indices_are_sorted=False, unique_indices=False):
    """XLA scatter that overwrites: each update window replaces its operand window.
    `mode`: None/"drop" (out-of-bounds windows are skipped), "clip", "promise_in_bounds".

    Example:
        >>> dn = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
        ...                              scatter_dims_to_operand_dims=(0,))
        >>> scatter(np.zeros(3), np.array([[2]]), np.array([5.0]), dn).tolist()
        [0.0, 0.0, 5.0]
    """
    return _bind_scatter(scatter_p, operand, scatter_indices, updates, dimension_numbers, mode,
                         indices_are_sorted, unique_indices)


def scatter_add(operand, scatter_indices, updates, dimension_numbers, mode=None, *,
                indices_are_sorted=False, unique_indices=False):
    """XLA scatter that adds; duplicate indices accumulate.

    Example:
        >>> dn = ScatterDimensionNumbers((), (0,), (0,))
        >>> scatter_add(np.zeros(3), np.array([[1], [1]]), np.array([1.0, 2.0]), dn).tolist()
        [0.0, 3.0, 0.0]
    """
    return _bind_scatter(scatter_add_p, operand, scatter_indices, updates, dimension_numbers, mode,
                         indices_are_sorted, unique_indices)


def scatter_mul(operand, scatter_indices, updates, dimension_numbers, mode=None, *,
                indices_are_sorted=False, unique_indices=False):
    """XLA scatter that multiplies; duplicate indices multiply together.

    Example:
        >>> dn = ScatterDimensionNumbers((), (0,), (0,))
        >>> scatter_mul(np.ones(2), np.array([[0], [0]]), np.array([2.0, 3.0]), dn).tolist()
        [6.0, 1.0]
    """
    return _bind_scatter(scatter_mul_p, operand, scatter_indices, updates, dimension_numbers, mode,
                         indices_are_sorted, unique_indices)


def scatter_min(operand, scatter_indices, updates, dimension_numbers, mode=None, *,
                indices_are_sorted=False, unique_indices=False):
    """XLA scatter that keeps the minimum of the operand and all its updates.

    Example:
        >>> dn = ScatterDimensionNumbers((), (0,), (0,))
        >>> scatter_min(np.ones(2), np.array([[1]]), np.array([-1.0]), dn).tolist()
        [1.0, -1.0]
    """
    return _bind_scatter(scatter_min_p, operand, scatter_indices, updates, dimension_numbers, mode,
                         indices_are_sorted, unique_indices)


def scatter_max(operand, scatter_indices, updates, dimension_numbers, mode=None, *,
                indices_are_sorted=False, unique_indices=False):
    """XLA scatter that keeps the maximum of the operand and all its updates.

    Example:
        >>> dn = ScatterDimensionNumbers((), (0,), (0,))
        >>> scatter_max(np.zeros(2), np.array([[0]]), np.array([4.0]), dn).tolist()
        [4.0, 0.0]
    """
    return _bind_scatter(scatter_max_p, operand, scatter_indices, updates, dimension_numbers, mode,
                         indices_are_sorted, unique_indices)


__all__ = [
    "GatherDimensionNumbers",
    "ScatterDimensionNumbers",
    "gather",
    "scatter",
    "scatter_add",
    "scatter_max",
    "scatter_min",
    "scatter_mul",
]
