"""Eager rule of `gather` (`fx/prims/indexing.py`) over an array module `xp`:
the reference's index grid (starts clamped so windows fit, batching dims as
aranges, a validity mask for `mode="fill"`) built with `xp`, then one fancy
index into the operand, so `x[idx]`, `take`, `take_along_axis` and embedding
lookups stay on the GPU.  Scatters run compiled (their duplicate-index order is
the executable's business).

Example:
    >>> import numpy as np, ember, ember.numpy as enp
    >>> from ember.fx.prims.indexing import gather_p
    >>> from .eager import run_rule
    >>> g = ember.make_graph(lambda x, i: x[i])(enp.arange(5.0), enp.array([4, 0]))
    >>> eq = [e for e in g.equations if e.prim is gather_p][0]
    >>> idx = np.array([[4], [0]], np.int32)
    >>> run_rule(np, gather_p, [np.arange(5.0, dtype=np.float32), idx], eq.params).tolist()
    [4.0, 0.0]
"""
from __future__ import annotations

import numpy as np

from ...fx.prims import indexing as I
from .eager import eager_rule


def _as_int64(xp, indices):
    if indices.dtype == np.uint64:   # huge values saturate instead of wrapping negative
        indices = xp.minimum(indices, np.uint64(2 ** 63 - 1))
    return indices.astype(np.int64)


def _index_grid(xp, op_shape, idx, index_map, obd, ibd, wdims, wshape, sizes):
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


@eager_rule(I.gather_p)
def _gather(xp, operand, indices, *, dimension_numbers, slice_sizes, mode, fill_value,
            indices_are_sorted, unique_indices):
    dn = dimension_numbers
    idx = _as_int64(xp, indices)
    wdims = I._window_dims(operand.ndim, dn.collapsed_slice_dims, dn.operand_batching_dims)
    wshape = tuple(slice_sizes[d] for d in wdims)
    arrays, valid, full = _index_grid(xp, operand.shape, idx, dn.start_index_map, dn.operand_batching_dims,
                                      dn.start_indices_batching_dims, wdims, wshape, slice_sizes)
    if 0 in full:
        res = xp.zeros(full, operand.dtype)
    elif operand.ndim == 0:
        res = xp.broadcast_to(operand, full)
    else:
        res = operand[tuple(arrays)]
    if mode == "fill":
        # out-of-bounds windows read the fill value (no data-dependent branch: the
        # mask is applied whether or not any window is out of bounds)
        fv = xp.asarray(np.array(0 if fill_value is None else fill_value).astype(operand.dtype))
        res = xp.where(valid.reshape(valid.shape + (1,) * len(wdims)), res, fv)
    nb = idx.ndim - 1
    bi, wi = iter(range(nb)), iter(range(nb, nb + len(wdims)))
    perm = [next(wi) if p in dn.offset_dims else next(bi) for p in range(nb + len(wdims))]
    return xp.transpose(res, perm).astype(operand.dtype, copy=False)
