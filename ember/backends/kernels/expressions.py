"""Value expressions of fused equations: an output index pushed back through
elementwise, movement and gather equations to loads of materialised buffers.

Example:
    >>> import ember, numpy as np
    >>> from ember import lax
    >>> from ember.backends.kernels.loop_ir import E
    >>> g = ember.make_graph(lambda x: lax.exp(lax.rev(x, (0,))))(np.ones(4, np.float32))
    >>> x, (eq_rev, eq_exp) = g.graph.inputs[0], g.graph.equations
    >>> b = _ExprBuilder({v: e for e in g.graph.equations for v in e.outputs}, {x}, {x: 0}, (4,), np.int64)
    >>> from ember.backends.kernels.printing import format_value
    >>> format_value(b.value(eq_exp.outputs[0], (E('v', 0),)))
    'exp(b0[3 + i0*-1])'
"""
from __future__ import annotations

import itertools

import numpy as np

from ...fx.ir import Literal
from ...fx.prims import contraction as _contraction, convert as _cv, elementwise as _ew
from ...fx.prims import indexing as _indexing, reduce as _reduce
from ...fx.prims import shape as _shape
from .loop_ir import E, const, delinearize, iadd, iclamp, iconst, idiv, imod, imul, linearize

# kinds whose equations are one expression node per element (identity: none)
_ELEMENTWISE_KINDS = ("elementwise", "identity")
# params of elementwise primitives that the value expression carries (the rest,
# e.g. convert's new_dtype, are the expression's dtype)
_OP_PARAMS = {_ew.integer_pow_p: ("y",), _cv.reduce_precision_p: ("exponent_bits", "mantissa_bits")}


def _dot_indices(eq, out_idx, contract_idx):
    """Operand index tuples for output index `out_idx` and contracted indices."""
    lhs, rhs = eq.inputs
    (lc, rc), (lb, rb) = eq.params["dimension_numbers"]
    ls, rs = lhs.aval.shape, rhs.aval.shape
    lf = [i for i in range(len(ls)) if i not in lc and i not in lb]
    rf = [i for i in range(len(rs)) if i not in rc and i not in rb]
    nb, nm = len(lb), len(lf)
    li, ri = [None] * len(ls), [None] * len(rs)
    for j, (a, c) in enumerate(zip(lb, rb)):
        li[a], ri[c] = out_idx[j], out_idx[j]
    for j, a in enumerate(lf):
        li[a] = out_idx[nb + j]
    for j, c in enumerate(rf):
        ri[c] = out_idx[nb + nm + j]
    for j, (a, c) in enumerate(zip(lc, rc)):
        li[a], ri[c] = contract_idx[j], contract_idx[j]
    return tuple(li), tuple(ri)


class _Need(Exception):
    """Raised inside `_ExprBuilder._build` for an operand value not built yet."""

    def __init__(self, key):
        self.key = key


class _ExprBuilder:
    """Builds value expressions by pushing index vectors back through fused equations.

    The walk over producers is iterative (fused chains from unrolled loops or
    high-order derivatives are tens of thousands of equations deep): an equation
    that needs an operand not built yet raises `_Need`; the driver builds that
    operand first and then runs the equation again (its other operands are memo
    hits by then)."""

    def __init__(self, producer, materialized, buf_of, space, index_dtype):
        self.producer = producer
        self.index_dtype = np.dtype(index_dtype)
        self.materialized = materialized
        self.buf_of = buf_of
        self.memo = {}
        self._inside = 0
        # extents of the loop variables, for index simplification
        self.ranges = {k: n for k, n in enumerate(space)}

    def value(self, a, idx):
        if type(a) is Literal:
            return const(a.value, a.aval.dtype)
        if a.aval.size == 0:
            # an empty operand of a non-empty result (pad, concatenate): every read of
            # it is masked out, and a load would be out of bounds
            return const(0, a.aval.dtype)
        if a in self.materialized:
            if a.aval.ndim == 0:
                return E("load", self.buf_of[a], E("c", 0), a.aval.dtype)
            return E("load", self.buf_of[a], linearize(idx, a.aval.shape), a.aval.dtype)
        key = (a, idx)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        if self._inside:
            raise _Need(key)
        return self._build(key)

    def _build(self, root):
        stack = [root]
        while stack:
            key = stack[-1]
            if key in self.memo:
                stack.pop()
                continue
            a, idx = key
            self._inside += 1
            try:
                r = self.equation(self.producer[a], idx)
            except _Need as need:
                stack.append(need.key)
                continue
            finally:
                self._inside -= 1
            self.memo[key] = r
            stack.pop()
        return self.memo[root]

    def equation(self, eq, idx):
        prim = eq.prim
        p = eq.params
        if prim.kind in _ELEMENTWISE_KINDS:
            args = [self.value(a, idx if a.aval.ndim else ()) for a in eq.inputs]
            if prim.kind == "identity":
                return args[0]
            params = tuple((k, p[k]) for k in _OP_PARAMS.get(prim, ()))
            return E("op", prim.name, params, eq.outputs[0].aval.dtype, *args)
        rule = EXPR_RULES.get(prim) or UNROLLED_RULES[prim]
        return rule(self, eq, idx, p)

    # --- movement: map the output index to the operand index --------------------------
    def _broadcast_in_dim(self, eq, idx, p):
        (x,) = eq.inputs
        xs = x.aval.shape
        inner = tuple(E("c", 0) if xs[i] == 1 else idx[d] for i, d in enumerate(p["broadcast_dimensions"]))
        return self.value(x, inner)

    def _reshape(self, eq, idx, p):
        (x,) = eq.inputs
        flat = linearize(idx, eq.outputs[0].aval.shape)
        return self.value(x, delinearize(flat, x.aval.shape, self.ranges))

    def _transpose(self, eq, idx, p):
        (x,) = eq.inputs
        perm = p["permutation"]
        inner = [None] * len(perm)
        for i, q in enumerate(perm):
            inner[q] = idx[i]
        return self.value(x, tuple(inner))

    def _squeeze(self, eq, idx, p):
        (x,) = eq.inputs
        dims = set(p["dimensions"])
        it = iter(idx)
        return self.value(x, tuple(E("c", 0) if i in dims else next(it) for i in range(x.aval.ndim)))

    def _expand_dims(self, eq, idx, p):
        (x,) = eq.inputs
        dims = set(p["dimensions"])
        return self.value(x, tuple(i for k, i in enumerate(idx) if k not in dims))

    def _rev(self, eq, idx, p):
        (x,) = eq.inputs
        dims = set(p["dimensions"])
        n = x.aval.shape
        return self.value(x, tuple(iadd(iconst(n[k] - 1), imul(i, -1)) if k in dims else i
                                   for k, i in enumerate(idx)))

    def _slice(self, eq, idx, p):
        (x,) = eq.inputs
        strides = p.get("strides") or (1,) * len(idx)
        return self.value(x, tuple(iadd(iconst(s), imul(i, st))
                                   for i, s, st in zip(idx, p["start_indices"], strides)))

    def _gather(self, eq, idx, p):
        """XLA gather: the operand index of an output element is its window offset plus
        the start read from `indices` (clamped so the window fits; windows not entirely
        in bounds read the fill value in "fill" mode)."""
        operand, indices = eq.inputs
        dn, sizes = p["dimension_numbers"], p["slice_sizes"]
        oshape = operand.aval.shape
        dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
        wdims = [d for d in range(len(oshape)) if d not in dropped]
        offset = set(dn.offset_dims)
        bidx = [i for q, i in enumerate(idx) if q not in offset]
        widx = [i for q, i in enumerate(idx) if q in offset]
        inner, ok = self.window_index(indices, bidx, dn.start_index_map, oshape, sizes, p["mode"] == "fill",
                                      dn.operand_batching_dims, dn.start_indices_batching_dims, wdims, widx)
        val = self.value(operand, tuple(inner))
        if ok is None:
            return val
        dtype = eq.outputs[0].aval.dtype
        fill = p["fill_value"]
        fill = const(0 if fill is None else fill, dtype)
        return E("op", "select_n", (), dtype, ok, fill, val)

    def window_index(self, indices, bidx, start_map, oshape, sizes, checked, batch_dims, index_batch_dims,
                     wdims, widx):
        """Operand index of one element of a gather/scatter window, and (with
        `checked`) the bool expression saying its window lies in bounds (else None).
        Window starts are read from `indices` at the batch position `bidx` (one per
        dimension of `start_map`), converted to the index dtype and clamped so the
        window fits; operand batching dimensions take the batch index, window
        dimensions `wdims` add the offset `widx`.

        Example:
            >>> import numpy as np
            >>> from ember.fx.ir import Var
            >>> from ember.fx.core import AbstractArray
            >>> ix = Var(AbstractArray((3, 1), np.dtype(np.int64)))
            >>> b = _ExprBuilder({}, {ix}, {ix: 0}, (3, 2), np.int64)
            >>> inner, ok = b.window_index(ix, [E("v", 0)], (0,), (5, 2), (1, 2), True, (), (), [1], [E("v", 1)])
            >>> len(inner), ok[0] == "op"
            (2, True)
        """
        i64, b8 = self.index_dtype, np.dtype(bool)
        starts, ok = {}, None
        for k, d in enumerate(start_map):
            raw = self.value(indices, tuple(bidx) + (iconst(k),))
            if np.dtype(raw[3] if raw[0] == "op" else raw[-1]) != i64:
                raw = E("op", "convert_element_type", (), i64, raw)
            hi = oshape[d] - sizes[d]
            starts[d] = iclamp(E("val", raw), 0, hi)
            if checked:
                inside = E("op", "and", (), b8, E("op", "ge", (), b8, raw, const(0, i64)),
                           E("op", "le", (), b8, raw, const(hi, i64)))
                ok = inside if ok is None else E("op", "and", (), b8, ok, inside)
        inner = []
        for d in range(len(oshape)):
            e = starts.get(d, iconst(0))
            if d in batch_dims:
                e = iadd(e, bidx[index_batch_dims[batch_dims.index(d)]])
            if d in wdims:
                e = iadd(e, widx[wdims.index(d)])
            inner.append(e)
        return inner, ok

    def _dot_general(self, eq, idx, p):
        """A product over at most target.dot_fuse_max_k contracted elements, written out."""
        lhs, rhs = eq.inputs
        (lc, _), _ = p["dimension_numbers"]
        dtype = eq.outputs[0].aval.dtype
        total = None
        for ks in itertools.product(*[range(lhs.aval.shape[i]) for i in lc]):
            li, ri = _dot_indices(eq, idx, tuple(iconst(k) for k in ks))
            term = E("op", "mul", (), dtype, self.value(lhs, li), self.value(rhs, ri))
            total = term if total is None else E("op", "add", (), dtype, total, term)
        if total is None:
            return const(0, dtype)
        if np.dtype(dtype).kind == "f":
            # a product's accumulator starts at +0.0 (as in a gemm and numpy's matmul):
            # a -0.0 product gives +0.0
            total = E("op", "add", (), dtype, const(0, dtype), total)
        return total

    def _unrolled_reduce(self, eq, idx, p):
        """A sum or product over a few elements (target.unrolled_reduce_max), written
        out in the order a reduction kernel folds them: from the identity, reduced
        indices in row-major order, one rounding per step (so the bits are the
        kernel's; starting from +0.0, a sum of -0.0 terms is +0.0 there too)."""
        (x,) = eq.inputs
        axes = tuple(p["axes"])
        dtype = eq.outputs[0].aval.dtype
        op = _UNROLLED_OPS[eq.prim]
        total = const(_reduce.reduction_identity("sum" if op == "add" else "prod", dtype), dtype)
        for ks in itertools.product(*[range(x.aval.shape[a]) for a in axes]):
            kept, red = iter(idx), iter(ks)
            inner = tuple(iconst(next(red)) if d in axes else next(kept) for d in range(x.aval.ndim))
            total = E("op", op, (), dtype, total, self.value(x, inner))
        return total

    def _iota(self, eq, idx, p):
        return E("index", idx[p["dimension"]], eq.outputs[0].aval.dtype)

    def _pad(self, eq, idx, p):
        x, pv = eq.inputs
        dtype = eq.outputs[0].aval.dtype
        conds = []
        inner = []
        for i, (lo, hi, interior), n in zip(idx, p["padding_config"], x.aval.shape):
            step = interior + 1
            rel = iadd(i, iconst(-lo))
            q = idiv(_nonneg(rel, lo), step, self.ranges) if step > 1 else rel
            conds.append(E("op", "ge", (), np.dtype(bool), E("index", rel, self.index_dtype),
                          const(0, self.index_dtype)))
            conds.append(E("op", "lt", (), np.dtype(bool), E("index", rel, self.index_dtype),
                          const((n - 1) * step + 1, self.index_dtype)))
            if step > 1:
                conds.append(E("op", "eq", (), np.dtype(bool),
                              E("index", imod(_nonneg(rel, lo), step, self.ranges), self.index_dtype),
                              const(0, self.index_dtype)))
            inner.append(iclamp(q, 0, max(n - 1, 0)))
        ok = conds[0]
        for c in conds[1:]:
            ok = E("op", "and", (), np.dtype(bool), ok, c)
        val = self.value(x, tuple(inner))
        pad = self.value(pv, ())
        return E("op", "select_n", (), dtype, ok, pad, val)

    def _concatenate(self, eq, idx, p):
        d = p["dimension"]
        dtype = eq.outputs[0].aval.dtype
        offsets = []
        off = 0
        for a in eq.inputs:
            offsets.append(off)
            off += a.aval.shape[d]
        result = None
        for a, o in reversed(list(zip(eq.inputs, offsets))):
            n = a.aval.shape[d]
            if n == 0:
                continue
            inner = list(idx)
            inner[d] = iclamp(iadd(idx[d], iconst(-o)), 0, n - 1)
            v = self.value(a, tuple(inner))
            if result is None:
                result = v
            else:
                # idx[d] >= o + n belongs to a later operand (already in `result`)
                later = E("op", "ge", (), np.dtype(bool), E("index", idx[d], self.index_dtype),
                         const(o + n, self.index_dtype))
                result = E("op", "select_n", (), dtype, later, v, result)
        return result


# how each fusible primitive that is not elementwise becomes a value expression
# (movement and gather: by mapping the output index to operand indices)
EXPR_RULES = {
    _shape.broadcast_in_dim_p: _ExprBuilder._broadcast_in_dim, _shape.reshape_p: _ExprBuilder._reshape,
    _shape.transpose_p: _ExprBuilder._transpose, _shape.squeeze_p: _ExprBuilder._squeeze,
    _shape.expand_dims_p: _ExprBuilder._expand_dims, _shape.rev_p: _ExprBuilder._rev,
    _shape.slice_p: _ExprBuilder._slice, _shape.pad_p: _ExprBuilder._pad,
    _shape.concatenate_p: _ExprBuilder._concatenate, _shape.iota_p: _ExprBuilder._iota,
    _indexing.gather_p: _ExprBuilder._gather, _contraction.dot_general_p: _ExprBuilder._dot_general,
}
# reductions that may be written out (the scheduler decides which: `unrolled_reductions`)
# and the elementwise op that folds them
_UNROLLED_OPS = {_reduce.reduce_sum_p: "add", _reduce.reduce_prod_p: "mul"}
UNROLLED_RULES = {p: _ExprBuilder._unrolled_reduce for p in _UNROLLED_OPS}


def _nonneg(rel, lo):
    """`rel` shifted so that division/modulo see a non-negative value (invalid
    positions are masked separately)."""
    return E("clamp", rel, 0, 1 << 62)
