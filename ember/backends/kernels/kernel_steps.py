"""The steps of equations that are kernels of their own: reductions (split into
chunk partials where the target wants it), convolutions (patch matrix + gemm)
and scatters (a copy, then the updates combined in).

Example:
    >>> import numpy as np
    >>> from ember.backends.kernels.loop_ir import E
    >>> from ember.backends.llvm.kernel_target import cpu_target
    >>> names = iter(['part', 'final'])
    >>> bufs = []
    >>> steps = _reduce_steps(lambda what: next(names), lambda *b: bufs.append(b) or len(bufs), 0, (1 << 20,),
    ...                      (0,), 'sum', np.float32, E('load', 9, E('v', 0), np.dtype(np.float32)),
    ...                      'reduce_sum', cpu_target())
    >>> [s.name for s in steps], bufs[0][0]
    (['part', 'final'], (32,))
"""
from __future__ import annotations

import math

import numpy as np

from ...fx.prims import indexing as _indexing
from ...fx.prims.reduce import reduction_identity
from .expressions import _nonneg
from .loop_ir import (E, ConvKernel, const, MapKernel, ReduceKernel, ScatterKernel, bounds, expr_inputs, iadd, iclamp,
                      iconst, idiv, imod, imul, linearize, substitute)
from .policy import _layout_of, _split_chunks

# how each fusible scatter combines an update with the element it hits
SCATTERS = {_indexing.scatter_p: "set", _indexing.scatter_add_p: "add", _indexing.scatter_mul_p: "mul",
            _indexing.scatter_min_p: "min", _indexing.scatter_max_p: "max"}


def _conv_steps(eq, kname, new_buf, add_buf, builder_for, materialized, buf_of):
    """im2col + gemm per image (ConvKernel), with the weights copied to (G, Og, K)
    and the result transposed afterwards when their layouts need it."""
    lhs, rhs = eq.inputs
    v = eq.outputs[0]
    p = eq.params
    ls, rs, os_ = (tuple(t) for t in p["dimension_numbers"])
    nsp = len(ls) - 2
    dtype = np.dtype(v.aval.dtype)
    n, o = lhs.aval.shape[ls[0]], rhs.aval.shape[rs[0]]
    i = rhs.aval.shape[rs[1]]
    ks = tuple(rhs.aval.shape[d] for d in rs[2:])
    xs = tuple(lhs.aval.shape[d] for d in ls[2:])
    sp = tuple(v.aval.shape[d] for d in os_[2:])
    g = p["feature_group_count"]
    og, kk, pp = o // g, i * math.prod(ks), math.prod(sp)
    steps = []
    # patch matrices: space (N, G, I, kernel..., out spatial...) = buffer (N, G, K, P)
    space = (n, g, i) + ks + sp
    var = [E("v", j) for j in range(len(space))]
    b = builder_for(space)
    i64, b8 = b.index_dtype, np.dtype(bool)
    conds, inner = [], [None] * (2 + nsp)
    inner[ls[0]] = var[0]
    inner[ls[1]] = iadd(imul(var[1], i), var[2])
    for d in range(nsp):
        kv, ov = var[3 + d], var[3 + nsp + d]
        lo = p["padding"][d][0]
        ld = p["lhs_dilation"][d]
        rel = iadd(iadd(imul(ov, p["window_strides"][d]), imul(kv, p["rhs_dilation"][d])), iconst(-lo))
        relv = E("index", rel, i64)
        conds.append(E("op", "ge", (), b8, relv, const(0, i64)))
        conds.append(E("op", "le", (), b8, relv, const((xs[d] - 1) * ld, i64)))
        q = rel
        if ld > 1:
            nn = _nonneg(rel, lo)
            conds.append(E("op", "eq", (), b8, E("index", imod(nn, ld, b.ranges), i64), const(0, i64)))
            q = idiv(nn, ld, b.ranges)
        inner[ls[2 + d]] = iclamp(q, 0, xs[d] - 1)
    val = b.value(lhs, tuple(inner))
    ok = None
    for c in conds:
        if _provably_true(c, b.ranges):
            continue
        ok = c if ok is None else E("op", "and", (), b8, ok, c)
    if ok is not None:
        val = E("op", "select_n", (), dtype, ok, const(0, dtype), val)
    cols_buf = add_buf((n, g, kk, pp), dtype, "temp")
    cols = MapKernel(kname("im2col"), cols_buf, space, val, sorted(expr_inputs(val)))
    # weights as (O, I, kernel...) row-major = (G, Og, K)
    if rhs in materialized and _layout_of(rhs.aval.shape, (rs, rs)) is False:
        w = buf_of[rhs]
    else:
        wshape = (o, i) + ks
        widx = [None] * len(rs)
        for j, d in enumerate(rs):
            widx[d] = E("v", j)
        wb = builder_for(wshape)
        body = wb.value(rhs, tuple(widx))
        w = add_buf(wshape, dtype, "temp")
        steps.append(MapKernel(kname("conv_weights"), w, wshape, body, sorted(expr_inputs(body))))
    identity = tuple(range(2 + nsp))
    channels_last = os_ == (0, 1 + nsp) + tuple(range(1, 1 + nsp)) and nsp > 0
    if os_ == identity or channels_last:
        out = new_buf(v, "temp")
        steps.append(ConvKernel(kname("conv"), out, cols, w, dtype, n, g, og, kk, pp, channels_last))
        return steps
    tmp = add_buf((n, o) + sp, dtype, "temp")
    steps.append(ConvKernel(kname("conv"), tmp, cols, w, dtype, n, g, og, kk, pp, False))
    shape = tuple(v.aval.shape)
    idx = tuple(E("v", j) for j in range(len(shape)))
    logical = tuple(idx[os_[j]] for j in range(len(shape)))
    body = E("load", tmp, linearize(logical, (n, o) + sp), dtype)
    out = new_buf(v, "temp")
    steps.append(MapKernel(kname("conv_layout"), out, shape, body, [tmp]))
    return steps


def _provably_true(cond, ranges):
    """A `ge`/`le` comparison of an index with a constant that always holds."""
    if cond[1] not in ("ge", "le") or cond[4][0] != "index" or cond[5][0] != "const":
        return False
    bnd = bounds(cond[4][1], ranges)
    if bnd is None:
        return False
    return bnd[0] >= cond[5][1] if cond[1] == "ge" else bnd[1] <= cond[5][1]


def _scatter_steps(eq, kname, new_buf, builder_for, target):
    """A map kernel copying the operand into the result, then a serial kernel
    combining every update into its element (the reference's semantics: windows
    not entirely in bounds are skipped unless mode is "clip", which clamps)."""
    operand, indices, updates = eq.inputs
    v = eq.outputs[0]
    p = eq.params
    dn = p["dimension_numbers"]
    oshape, ushape = tuple(operand.aval.shape), tuple(updates.aval.shape)
    out = new_buf(v, "temp")
    idx = tuple(E("v", i) for i in range(len(oshape)))
    copy = builder_for(oshape).value(operand, idx)
    steps = [MapKernel(kname("scatter_init"), out, oshape, copy, sorted(expr_inputs(copy)))]
    uidx = tuple(E("v", i) for i in range(len(ushape)))
    b = builder_for(ushape)
    window = list(dn.update_window_dims)
    bidx = [i for q, i in enumerate(uidx) if q not in window]
    dropped = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
    wdims = [d for d in range(len(oshape)) if d not in dropped]
    sizes = [1] * len(oshape)
    for q, d in zip(window, wdims):
        sizes[d] = ushape[q]
    inner, ok = b.window_index(indices, bidx, dn.scatter_dims_to_operand_dims, oshape, sizes, p["mode"] != "clip",
                               dn.operand_batching_dims, dn.scatter_indices_batching_dims, wdims,
                               [uidx[q] for q in window])
    where = linearize(tuple(inner), oshape)
    body = b.value(updates, uidx)
    used = expr_inputs(body, expr_inputs(where, expr_inputs(ok) if ok is not None else None))
    steps.append(ScatterKernel(kname(eq.prim.name), out, ushape, SCATTERS[eq.prim], v.aval.dtype,
                               body, where, ok, sorted(used | {out}), atomic=target.scatter == "atomic"))
    return steps


def _reduce_steps(kname, add_buf, out, space, axes, op, dtype, body, prim_name, target):
    """The ReduceKernel(s) computing `out`: one, or (with target.split_reductions) a
    chunked partial reduction and a small final one when the outermost loop would
    not be parallel."""
    kept = tuple(i for i in range(len(space)) if i not in axes)
    d = np.dtype(dtype)
    reg = target.register_accumulator
    split = _split_chunks(space, axes, d, target)
    if split is None:
        return [ReduceKernel(kname(prim_name), out, space, axes, op, dtype, body, sorted(expr_inputs(body)),
                             registers=reg)]
    n0 = space[0]
    chunks, length = split
    # loop variables of the first kernel: (chunk, position in chunk, the other axes)
    pos = iadd(imul(E("v", 0), length), E("v", 1))
    mapping = {0: iclamp(pos, 0, n0 - 1) if chunks * length != n0 else pos}
    mapping.update({i: E("v", i + 1) for i in range(1, len(space))})
    pbody = substitute(body, mapping)
    if chunks * length != n0:
        ok = E("op", "lt", (), np.dtype(bool), E("index", pos, np.dtype(target.index_dtype)),
               const(n0, target.index_dtype))
        pbody = E("op", "select_n", (), d, ok, const(reduction_identity(op, d), d), pbody)
    pspace = (chunks, length) + tuple(space[1:])
    paxes = (1,) + tuple(a + 1 for a in axes if a != 0)
    kept_shape = tuple(space[i] for i in kept)
    partial = add_buf((chunks,) + kept_shape, d, "temp")
    first = ReduceKernel(kname(prim_name + "_part"), partial, pspace, paxes, op, d, pbody,
                         sorted(expr_inputs(pbody)), registers=reg)
    fspace = (chunks,) + kept_shape
    fbody = E("load", partial, linearize(tuple(E("v", i) for i in range(len(fspace))), fspace), d)
    final = ReduceKernel(kname(prim_name), out, fspace, (0,), op, d, fbody, [partial], registers=reg)
    return [first, final]
