"""Partition a graph into fused loop kernels and library steps.

Fusion rules:
- elementwise, convert, select, iota and movement ops (broadcast_in_dim,
  reshape, transpose, squeeze, expand_dims, rev, slice, pad, concatenate) are
  *fused*: they never get a buffer of their own unless needed; consumers read
  them through index arithmetic;
- each reduction is the root of one kernel with its producers fused in;
- a fused value with several consumers is materialised when it is expensive
  (it contains a transcendental or a division) so it is computed once;
  cheap values (adds, broadcasts) are recomputed;
- a reduction result is always materialised, so every consumer (e.g. softmax's
  shift and normalisation) sees bit-identical values;
- everything else (dot_general, conv, sort, gather, control flow, linalg, ...)
  is a library step on whole buffers.

Example:
    >>> import ember, numpy as np
    >>> from ember import lax
    >>> g = ember.make_graph(lambda x: lax.reduce_sum(lax.exp(x), (0,)))(np.ones(4, np.float32))
    >>> [type(s).__name__ for s in schedule(g, lambda eq: True).steps]
    ['ReduceKernel']
"""
from __future__ import annotations

import numpy as np

from ...fx.ir import ClosedGraph, Literal, Var
from .loop_ir import (E, Buffer, reset_interning, LibraryStep, MapKernel, Program, ReduceKernel, delinearize, expr_inputs,
                      iadd, iclamp, iconst, idiv, imod, imul, linearize)

ELEMENTWISE = {
    "neg", "sign", "floor", "ceil", "round", "abs", "exp", "exp2", "log", "log1p", "expm1", "tanh",
    "logistic", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
    "atanh", "sqrt", "rsqrt", "cbrt", "erf", "erfc", "is_finite", "not", "integer_pow", "square",
    "add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "and", "or", "xor",
    "shift_left", "shift_right_arithmetic", "shift_right_logical", "eq", "ne", "lt", "le", "gt",
    "ge", "select_n", "clamp", "convert_element_type", "stop_gradient", "checkpoint_name",
}
MOVEMENT = {"broadcast_in_dim", "reshape", "transpose", "squeeze", "expand_dims", "rev", "slice",
            "pad", "concatenate", "iota"}
REDUCERS = {"reduce_sum": "sum", "reduce_prod": "prod", "reduce_max": "max", "reduce_min": "min",
            "reduce_and": "and", "reduce_or": "or"}
EXPENSIVE = {"exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan",
             "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "sqrt", "rsqrt",
             "cbrt", "erf", "erfc", "pow", "atan2", "div", "rem"}


def schedule(closed: ClosedGraph, supports) -> Program:
    """Build the Program for a closed graph; `supports(eq) -> bool` says which
    fusible equations the target backend can render (others become library steps)."""
    reset_interning()
    g = closed.graph
    buffers: list[Buffer] = []
    buf_of: dict[Var, int] = {}

    def new_buf(v, kind):
        buffers.append(Buffer(tuple(v.aval.shape), v.aval.dtype, kind))
        buf_of[v] = len(buffers) - 1
        return buf_of[v]

    consts = [(new_buf(v, "const"), c) for v, c in zip(g.constvars, closed.consts)]
    inputs = [new_buf(v, "input") for v in g.inputs]

    producer = {}
    uses: dict[Var, int] = {}
    for eq in g.equations:
        for v in eq.outputs:
            producer[v] = eq
        for a in eq.inputs:
            if type(a) is Var:
                uses[a] = uses.get(a, 0) + 1
    for a in g.outputs:
        if type(a) is Var:
            uses[a] = uses.get(a, 0) + 2  # outputs always need a buffer

    def kind_of(eq):
        n = eq.prim.name
        if n in REDUCERS and supports(eq):
            return "reduce"
        if (n in ELEMENTWISE or n in MOVEMENT) and supports(eq):
            return "fuse"
        return "lib"

    kinds = {id(eq): kind_of(eq) for eq in g.equations}
    materialized: set = set(g.constvars) | set(g.inputs)
    out_set = {a for a in g.outputs if type(a) is Var}
    expensive: dict[Var, bool] = {}

    def is_expensive(v):
        if v in materialized or type(v) is not Var or v not in producer:
            return False
        r = expensive.get(v)
        if r is None:
            eq = producer[v]
            r = eq.prim.name in EXPENSIVE or any(is_expensive(a) for a in eq.inputs if type(a) is Var)
            expensive[v] = r
        return r

    for eq in g.equations:
        if kinds[id(eq)] == "lib":
            materialized.update(eq.outputs)
            materialized.update(a for a in eq.inputs if type(a) is Var)
    for eq in g.equations:
        if kinds[id(eq)] == "lib":
            continue
        v = eq.outputs[0]
        if kinds[id(eq)] == "reduce" or v in out_set or (uses.get(v, 0) > 1 and is_expensive(v)):
            materialized.add(v)
    steps = []
    counter = [0]
    for eq in g.equations:
        k = kinds[id(eq)]
        if k == "lib":
            ins = [("lit", a.value) if type(a) is Literal else buf_of[a] for a in eq.inputs]
            outs = [new_buf(v, "temp") for v in eq.outputs]
            steps.append(LibraryStep(eq, ins, outs))
            continue
        v = eq.outputs[0]
        if v not in materialized:
            continue
        out = new_buf(v, "temp")
        counter[0] += 1
        name = f"k{counter[0]}_{eq.prim.name}"
        space = tuple(eq.inputs[0].aval.shape) if k == "reduce" else tuple(v.aval.shape)
        builder = _ExprBuilder(producer, materialized, buf_of, space)
        if k == "reduce":
            (x,) = eq.inputs
            space = tuple(x.aval.shape)
            idx = tuple(E("v", i) for i in range(len(space)))
            body = builder.value(x, idx)
            steps.append(ReduceKernel(name, out, space, tuple(eq.params["axes"]),
                                      REDUCERS[eq.prim.name], v.aval.dtype, body,
                                      sorted(expr_inputs(body))))
        else:
            shape = tuple(v.aval.shape)
            idx = tuple(E("v", i) for i in range(len(shape)))
            body = builder.equation(eq, idx)
            steps.append(MapKernel(name, out, shape, body, sorted(expr_inputs(body))))
    outputs = []
    for a in g.outputs:
        if type(a) is Literal:
            outputs.append(("lit", a.value))
        else:
            outputs.append(buf_of[a])
    return Program(buffers, inputs, consts, steps, outputs)


class _ExprBuilder:
    """Builds value expressions by pushing index vectors back through fused equations."""

    def __init__(self, producer, materialized, buf_of, space):
        self.producer = producer
        self.materialized = materialized
        self.buf_of = buf_of
        self.memo = {}
        # extents of the loop variables, for index simplification
        self.ranges = {k: n for k, n in enumerate(space)}

    def value(self, a, idx):
        if type(a) is Literal:
            return E("const", _pyval(a.value), a.aval.dtype)
        if a in self.materialized:
            if a.aval.ndim == 0:
                return E("load", self.buf_of[a], E("c", 0), a.aval.dtype)
            return E("load", self.buf_of[a], linearize(idx, a.aval.shape), a.aval.dtype)
        key = (a, idx)
        hit = self.memo.get(key)
        if hit is None:
            hit = self.memo[key] = self.equation(self.producer[a], idx)
        return hit

    def equation(self, eq, idx):
        name = eq.prim.name
        p = eq.params
        out_aval = eq.outputs[0].aval
        if name in ELEMENTWISE:
            args = [self.value(a, idx if a.aval.ndim else ()) for a in eq.inputs]
            if name in ("stop_gradient", "checkpoint_name"):
                return args[0]
            params = ()
            if name == "integer_pow":
                params = (("y", p["y"]),)
            return E("op", name, params, out_aval.dtype, *args)
        method = getattr(self, "_" + name)
        return method(eq, idx, p)

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
            conds.append(E("op", "ge", (), np.dtype(bool), E("index", rel, np.dtype(np.int64)),
                          E("const", 0, np.dtype(np.int64))))
            conds.append(E("op", "lt", (), np.dtype(bool), E("index", rel, np.dtype(np.int64)),
                          E("const", (n - 1) * step + 1, np.dtype(np.int64))))
            if step > 1:
                conds.append(E("op", "eq", (), np.dtype(bool),
                              E("index", imod(_nonneg(rel, lo), step, self.ranges), np.dtype(np.int64)),
                              E("const", 0, np.dtype(np.int64))))
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
                later = E("op", "ge", (), np.dtype(bool), E("index", idx[d], np.dtype(np.int64)),
                         E("const", o + n, np.dtype(np.int64)))
                result = E("op", "select_n", (), dtype, later, v, result)
        return result


def _nonneg(rel, lo):
    """`rel` shifted so that division/modulo see a non-negative value (invalid
    positions are masked separately)."""
    return E("clamp", rel, 0, 1 << 62)


def _pyval(v):
    v = np.asarray(v)
    return v.item()
