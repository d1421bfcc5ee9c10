"""Partition a graph into steps (fused loop kernels, gemm products, library
steps): classify each equation, choose which values get a buffer, emit the steps
in order and run the fusion passes.  The entry point of backends/kernels.

Fusion rules:
- elementwise, convert, select, iota and movement ops (broadcast_in_dim,
  reshape, transpose, squeeze, expand_dims, rev, slice, pad, concatenate) are
  *fused*: they never get a buffer of their own unless needed; consumers read
  them through index arithmetic;
- each reduction is the root of one kernel with its producers fused in; a large
  reduction whose outermost loop would not be parallel (a full sum, a column sum
  over many rows) is split into per-chunk partial results and a small final one;
- a fused value with several consumers is materialised when it is expensive
  (it contains a transcendental or a division) so it is computed once, unless
  all its consumers end in one kernel (elementwise), which computes it once;
  cheap values (adds, broadcasts) are recomputed, unless the expression tree a
  consumer would inline has grown past FUSED_TREE_MAX nodes (reads of one value
  at several indices, repeated, double it at every level);
- a reduction result is always materialised, so every consumer (e.g. softmax's
  shift and normalisation) sees bit-identical values;
- `dot_general` in the target's gemm dtypes is a `GemmKernel`: the target's gemm,
  on operands laid out as [batch, rows, k] (or transposed, which the gemm reads
  directly), read in place at an element offset when it is a contiguous slice
  of a buffer (weights unpacked from a flat parameter vector); an operand in
  another layout is copied once by a fused map kernel, shared by every product
  that reads it, and a product whose only use is a transpose is computed transposed;
- consecutive kernels over the same leading (row) dimensions whose reads of each
  other's results stay within a row become one `RowKernel` (one pass over rows);
- everything else (conv, sort, gather, control flow, linalg, ...) is a library
  step on whole buffers; a reduction across processes on a target with
  `async_collectives` is a start and a wait, moved apart (`overlap`).

What is fused is read from the primitives (`Primitive.kind`, `.cost`); every
machine-dependent choice from the `Target` the backend passes.  The pieces:
`expressions` (value expressions of fused equations), `kernel_steps` (reduction,
convolution and scatter steps), `policy` (the decisions that read the target),
`fusion` (epilogue and row passes over the steps).

Example:
    >>> import ember, numpy as np
    >>> from ember import lax
    >>> from ember.backends.llvm.kernel_target import cpu_target
    >>> g = ember.make_graph(lambda x: lax.reduce_sum(lax.exp(x), (0,)))(np.ones(4, np.float32))
    >>> [type(s).__name__ for s in schedule(g, cpu_target()).steps]
    ['ReduceKernel']
"""
from __future__ import annotations

import numpy as np

from ...fx.core import PRIMITIVES
from ...fx.ir import ClosedGraph, Literal, Var
from ...fx.prims import conv as _conv, contraction as _contraction, reduce as _reduce, shape as _shape
from .merge_products import merge_shared_operand_products
from .overlap import overlap_collectives, split_collective, splits
from .widen import widen_half_products
from .expressions import _ELEMENTWISE_KINDS, EXPR_RULES, _ExprBuilder
from .fusion import _alias_row_intermediates, _fuse_epilogues, _fuse_rows, _row_scratch
from .kernel_steps import SCATTERS, _conv_steps, _reduce_steps, _scatter_steps
from .loop_ir import E, Buffer, const, GemmKernel, LibraryStep, MapKernel, Program, expr_inputs, iadd, linearize, reset_interning
from .policy import (_concat_operands_to_store, _conv_ok, _dot_fuses, _gemm_blocks, _gemm_plan, _layout_of,
                     STORE_RELOAD_OPS, fused_nodes, movement_root, unrolls)
from .target import Target

# the monoid each fusible reduction folds with (reduce_xor has no native combine)
REDUCERS = {_reduce.reduce_sum_p: "sum", _reduce.reduce_prod_p: "prod", _reduce.reduce_max_p: "max",
            _reduce.reduce_min_p: "min", _reduce.reduce_and_p: "and", _reduce.reduce_or_p: "or"}
# operands that only reshape a buffer are read in place by a gemm
_RESHAPES = frozenset({_shape.reshape_p, _shape.squeeze_p, _shape.expand_dims_p})

# Expression op names by cost, for backends estimating the work of a kernel body
# (its `("op", name, ...)` nodes name primitives).
EXPENSIVE = frozenset(p.name for p in PRIMITIVES.values() if p.cost == "expensive")


def schedule(closed: ClosedGraph, target: Target, fuse_rows: bool = True) -> Program:
    """Build the Program for a closed graph under the backend's `target` (which
    equations it renders, its parallel model, gemm and reduction policy: see
    `Target`); `fuse_rows=False` keeps every kernel separate (no epilogues, no
    row kernels: for tests and debugging)."""
    if not isinstance(target, Target):
        raise TypeError(f"schedule: target must be a backends.kernels.Target, got {type(target).__name__} "
                        "(a backend supplies its own, e.g. backends.llvm.kernel_target.cpu_target())")
    reset_interning()
    closed = merge_shared_operand_products(widen_half_products(closed, target), target)
    g = closed.graph
    buffers: list[Buffer] = []
    buf_of: dict[Var, int] = {}

    def add_buf(shape, dtype, kind):
        buffers.append(Buffer(tuple(shape), np.dtype(dtype), kind))
        return len(buffers) - 1

    def new_buf(v, kind):
        buf_of[v] = add_buf(v.aval.shape, v.aval.dtype, kind)
        return buf_of[v]

    consts = [(new_buf(v, "const"), c) for v, c in zip(g.constvars, closed.consts)]
    inputs = [new_buf(v, "input") for v in g.inputs]

    producer = {}
    uses: dict[Var, int] = {}
    consumers: dict[Var, list] = {}
    for eq in g.equations:
        for v in eq.outputs:
            producer[v] = eq
        for a in eq.inputs:
            if type(a) is Var:
                uses[a] = uses.get(a, 0) + 1
                consumers.setdefault(a, []).append(eq)
    for a in g.outputs:
        if type(a) is Var:
            uses[a] = uses.get(a, 0) + 2  # outputs always need a buffer

    gemms = {}

    supports = target.supports

    def kind_of(eq):
        prim = eq.prim
        if eq.outputs and all(v.aval.size == 0 for v in eq.outputs) and not prim.multiple_results:
            return "empty"   # nothing to compute (and operands that may be empty too)
        if prim in target.library:
            return "lib"
        if prim is _contraction.dot_general_p:
            if _dot_fuses(eq, target):
                return "fuse"
            plan = _gemm_plan(eq, target) if supports(eq) else None
            if plan is not None:
                gemms[id(eq)] = plan
                return "gemm"
            return "lib"
        if prim is _conv.conv_general_dilated_p:
            return "conv" if target.conv_strategy is not None and supports(eq) and _conv_ok(eq, target) else "lib"
        if prim in REDUCERS and supports(eq):
            return "reduce"
        if prim in SCATTERS and supports(eq):
            return "scatter"
        if (prim.kind in _ELEMENTWISE_KINDS or prim in EXPR_RULES) and supports(eq):
            return "fuse"
        return "lib"

    kinds = {id(eq): kind_of(eq) for eq in g.equations}
    materialized: set = set(g.constvars) | set(g.inputs)
    out_set = {a for a in g.outputs if type(a) is Var}
    # a sum over a few elements read once is written out in its reader (in order)
    unrolled: set = set()
    if target.unrolled_reduce_max:
        def fused(e):
            return kinds[id(e)] == "fuse"
        for eq in g.equations:
            if kinds[id(eq)] == "reduce" and unrolls(eq, uses, out_set, producer, consumers, fused, unrolled,
                                                     target):
                kinds[id(eq)] = "fuse"
                unrolled.add(eq.outputs[0])
    expensive: dict[Var, bool] = {}

    def is_expensive(root):
        # post-order over producers with an explicit stack: fused chains can be far
        # deeper than Python's recursion limit
        def leaf(v):
            return v in materialized or type(v) is not Var or v not in producer
        if leaf(root):
            return False
        stack = [root]
        while stack:
            v = stack[-1]
            if v in expensive:
                stack.pop()
                continue
            eq = producer[v]
            ins = [a for a in eq.inputs if type(a) is Var and not leaf(a)]
            todo = [a for a in ins if a not in expensive]
            if todo and eq.prim.cost != "expensive":
                stack.extend(todo)
                continue
            stack.pop()
            expensive[v] = eq.prim.cost == "expensive" or any(expensive[a] for a in ins)
        return expensive[root]

    # a product whose only use is a transpose to [batch, cols, rows] is computed
    # transposed: the transpose's output is the gemm's buffer
    absorbed: dict[int, object] = {}  # id(transpose eq) -> its dot_general
    for eq in g.equations:
        k = kinds[id(eq)]
        if k == "empty":
            materialized.update(eq.outputs)
        elif k == "lib":
            materialized.update(eq.outputs)
            materialized.update(a for a in eq.inputs if type(a) is Var)
        elif k == "gemm":
            plan = gemms[id(eq)]
            d = eq.outputs[0]
            (t_eq,) = consumers.get(d, [None]) if uses.get(d, 0) == 1 else (None,)
            if (t_eq is not None and t_eq.prim is _shape.transpose_p and kinds[id(t_eq)] == "fuse"
                    and tuple(t_eq.params["permutation"]) == plan["swap_perm"]):
                absorbed[id(t_eq)] = eq
                plan["out_var"] = t_eq.outputs[0]
                materialized.add(t_eq.outputs[0])
            else:
                plan["out_var"] = d
                materialized.add(d)
            for x, perms in ((eq.inputs[0], plan["lhs_perms"]), (eq.inputs[1], plan["rhs_perms"])):
                # operands in a layout the gemm reads are materialised as they are (or read
                # in place when they only reshape a buffer); others are copied into
                # one by a map kernel (fusing their producers)
                if (type(x) is Var and _layout_of(x.aval.shape, perms) is not None
                        and not (x in producer and producer[x].prim in _RESHAPES)):
                    materialized.add(x)
                elif type(x) is Var:
                    r = _shared_layout_source(x, producer, uses, materialized)
                    if r is not None:
                        materialized.add(r)
    shared = []   # materialised because expensive (or large) and used more than once
    # A fused value is re-evaluated at every read, so the expression a consumer
    # inlines is a tree: a value read twice at different indices (x + shifted x,
    # repeated: a prefix scan in doubling steps) doubles it at each level.  The
    # tree's node count (capped) decides: a value used again whose tree has
    # grown past FUSED_TREE_MAX nodes is stored.
    tree: dict[Var, int] = {}

    def tree_size(eq):
        n = 1
        for a in eq.inputs:
            if type(a) is Var and a not in materialized:
                n += tree.get(a, 0)
        return min(n, 1 << 30)
    for eq in g.equations:
        if kinds[id(eq)] in ("lib", "gemm", "empty") or id(eq) in absorbed:
            continue
        if kinds[id(eq)] in ("scatter", "conv"):
            materialized.add(eq.outputs[0])
            if kinds[id(eq)] == "conv" and is_expensive(eq.inputs[0]):
                materialized.add(eq.inputs[0])  # patches read each input element ~k^2 times
            continue
        v = eq.outputs[0]
        if kinds[id(eq)] == "reduce" or v in out_set:
            materialized.add(v)
        elif uses.get(v, 0) > 1 and is_expensive(v):
            materialized.add(v)
            shared.append(v)
        elif kinds[id(eq)] == "fuse" and len(eq.outputs) == 1:
            tree[v] = tree_size(eq)
            if uses.get(v, 0) > 1 and tree[v] > FUSED_TREE_MAX:
                materialized.add(v)
                shared.append(v)
    # A value kept only for its several uses needs no buffer when all of them end,
    # through elementwise ops over its own shape, in one kernel: that kernel reads
    # it at one index per element, so the hash-consed expression is computed once
    # (the third derivative of sin(t)*t: one pass, not sin stored and read back).
    # Latest first, so what a value flows into is settled before the value.
    for v in reversed(shared):
        if _single_root(v, consumers, kinds, materialized, absorbed) is not None:
            materialized.discard(v)
    # a fused concatenate evaluates every operand at each of its elements: large
    # operand expressions (stacked Taylor coefficients) are computed once instead
    for eq in g.equations:
        # (a stored concatenate too: its kernel per operand would recompute what the
        # operands share, a Taylor recurrence's earlier coefficients)
        if eq.prim is _shape.concatenate_p and kinds[id(eq)] == "fuse" and eq.outputs[0].aval.size:
            materialized.update(_concat_operands_to_store(eq, producer, materialized))
            # fused, each element of K operands evaluates all K and K - 1 selects; stored,
            # each operand's kernel writes its slab once (the gradient of a flat parameter
            # vector, reduced against probes: 4 ns -> ~1 ns an element)
            if sum(1 for a in eq.inputs if a.aval.size) >= STORED_CONCAT_OPERANDS:
                materialized.add(eq.outputs[0])
    steps = []
    counter = [0]

    def kname(what):
        counter[0] += 1
        return f"k{counter[0]}_{what}"

    def builder_for(space):
        return _ExprBuilder(producer, materialized, buf_of, space, target.index_dtype)

    operand_cache = {}  # (var, perms) -> (buffer, transposed, offset): one layout copy per operand

    def gemm_operand(x, perms):
        if type(x) is not Var:
            return _gemm_operand(x, perms)
        key = (x, tuple(map(tuple, perms)))
        if key not in operand_cache:
            operand_cache[key] = _gemm_operand(x, perms)
        return operand_cache[key]

    def _gemm_operand(x, perms):
        if type(x) is Var and x in materialized:
            t = _layout_of(x.aval.shape, perms)
            if t is not None:
                return buf_of[x], t, 0
        bodies = []
        for t, perm in enumerate(perms):
            shape = tuple(x.aval.shape[p] for p in perm)
            idx = tuple(E("v", i) for i in range(len(shape)))
            inner = [None] * len(perm)
            for i, p in enumerate(perm):
                inner[p] = idx[i]
            body = builder_for(shape).value(x, tuple(inner))
            offset = _in_place_offset(body, linearize(idx, shape), x.aval.dtype)
            if offset is not None:
                # a reshape (of a contiguous slice) of a buffer in this layout: read in place
                return body[1], bool(t), offset
            bodies.append((shape, body))
        # a map kernel writes the operand in the [batch, rows, k] layout
        shape, body = bodies[0]
        out = add_buf(shape, x.aval.dtype, "temp")
        steps.append(MapKernel(kname("layout"), out, shape, body, sorted(expr_inputs(body))))
        return out, False, 0

    for eq in g.equations:
        k = kinds[id(eq)]
        if k == "empty":
            # a kernel whose loops run zero times: the buffer gets allocated like
            # every kernel output, and no operand is read
            v = eq.outputs[0]
            body = const(0, v.aval.dtype)
            steps.append(MapKernel(kname("empty"), new_buf(v, "temp"), tuple(v.aval.shape), body, []))
            continue
        if k == "lib":
            ins = [("lit", a.value) if type(a) is Literal else buf_of[a] for a in eq.inputs]
            outs = [new_buf(v, "temp") for v in eq.outputs]
            if splits(eq, target):   # a reduction across processes, overlapped (overlap.py)
                steps.extend(split_collective(eq, ins, outs, add_buf))
            else:
                steps.append(LibraryStep(eq, ins, outs))
            continue
        if k == "gemm":
            plan = gemms[id(eq)]
            a, ta, oa = gemm_operand(eq.inputs[0], plan["lhs_perms"])
            b, tb, ob = gemm_operand(eq.inputs[1], plan["rhs_perms"])
            out_var = plan["out_var"]
            out = new_buf(out_var, "temp")
            m, n = plan["m"], plan["n"]
            if out_var is not eq.outputs[0]:
                # C^T = op(B)^T op(A)^T
                a, b, ta, tb, oa, ob, m, n = b, a, not tb, not ta, ob, oa, n, m
            mblock, nblock = _gemm_blocks(plan["batch"], m, n, plan["k"], target)
            steps.append(GemmKernel(kname("gemm"), out, a, b, out_var.aval.dtype, plan["batch"], m, n,
                                    plan["k"], ta, tb, mblock, nblock, a_offset=oa, b_offset=ob))
            continue
        if id(eq) in absorbed:
            continue
        if k == "scatter":
            steps.extend(_scatter_steps(eq, kname, new_buf, builder_for, target))
            continue
        if k == "conv":
            steps.extend(_conv_steps(eq, kname, new_buf, add_buf, builder_for, materialized, buf_of))
            continue
        v = eq.outputs[0]
        if v not in materialized:
            continue
        if k == "reduce":
            (x,) = eq.inputs
            space = tuple(x.aval.shape)
            idx = tuple(E("v", i) for i in range(len(space)))
            body = builder_for(space).value(x, idx)
            out = new_buf(v, "temp")
            steps.extend(_reduce_steps(kname, add_buf, out, space, tuple(eq.params["axes"]),
                                       REDUCERS[eq.prim], v.aval.dtype, body, eq.prim.name, target))
        elif eq.prim is _shape.concatenate_p:
            steps.extend(_concatenate_steps(eq, kname, new_buf(v, "temp"), builder_for))
        else:
            shape = tuple(v.aval.shape)
            idx = tuple(E("v", i) for i in range(len(shape)))
            body = builder_for(shape).equation(eq, idx)
            out = new_buf(v, "temp")
            steps.append(MapKernel(kname(eq.prim.name), out, shape, body, sorted(expr_inputs(body))))
    if fuse_rows and target.gemm_epilogues:
        steps = _fuse_epilogues(steps, target)
    if fuse_rows and target.row_kernels:
        steps = _fuse_rows(steps, buffers)
        if target.row_aliasing:
            _alias_row_intermediates(steps, {buf_of[a] for a in g.outputs if type(a) is Var}, buffers)
        if target.row_scratch_bytes:
            _row_scratch(steps, {buf_of[a] for a in g.outputs if type(a) is Var}, buffers, target.row_scratch_bytes)
    # after fusion, which decides the kernels: the overlapped program runs the same ones
    steps = overlap_collectives(steps)
    outputs = []
    for a in g.outputs:
        if type(a) is Literal:
            outputs.append(("lit", a.value))
        else:
            outputs.append(buf_of[a])
    return Program(buffers, inputs, consts, steps, outputs)


def _shared_layout_source(x, producer, uses, materialized):
    """The computed value under `x`'s movement ops when the gemm's layout copy of `x`
    would recompute a large expression that another kernel computes too: stored in
    its own layout once, the copy is then a transposing read of one buffer instead of
    the whole expression evaluated at scattered indices (10 ns vs ~1 ns an element in
    the Hutchinson estimator's backward product)."""
    r = movement_root(x, producer, materialized)
    if type(r) is not Var or r in materialized or r not in producer or uses.get(r, 0) < 2:
        return None
    return r if fused_nodes(r, producer, materialized, limit=STORE_RELOAD_OPS) >= STORE_RELOAD_OPS else None


# a fused concatenate of this many non-empty operands or more is stored instead
STORED_CONCAT_OPERANDS = 3
FUSED_TREE_MAX = 64


def _concatenate_steps(eq, kname, out, builder_for):
    """A stored concatenate as one map kernel per non-empty operand, each over the
    operand's own shape and writing its slab of `out` (`MapKernel.store`): as one
    kernel, every element would evaluate every operand and select one."""
    d = eq.params["dimension"]
    full = tuple(eq.outputs[0].aval.shape)
    steps, offset = [], 0
    for a in eq.inputs:
        shape = tuple(a.aval.shape)
        if shape[d]:
            idx = tuple(E("v", i) for i in range(len(shape)))
            at = list(idx)
            at[d] = iadd(idx[d], E("c", offset))
            body = builder_for(shape).value(a, idx)
            steps.append(MapKernel(kname("concatenate"), out, shape, body, sorted(expr_inputs(body)),
                                   store=linearize(tuple(at), full)))
        offset += shape[d]
    return steps


def _in_place_offset(body, lin, dtype):
    """The element offset at which `body` reads a buffer in row-major order over the
    operand's space (`load(b, lin)` or `load(b, c + lin)`), or None when it does not
    (a gather, a broadcast, another layout or dtype, or any computation)."""
    if body[0] != "load" or body[3] != dtype:
        return None
    ix = body[2]
    if ix is lin:
        return 0
    if ix[0] == "+":
        if ix[1][0] == "c" and ix[2] is lin and ix[1][1] >= 0:
            return int(ix[1][1])
        if ix[2][0] == "c" and ix[1] is lin and ix[2][1] >= 0:
            return int(ix[2][1])
    return None


def _single_root(v, consumers, kinds, materialized, absorbed):
    """The one kernel root every use of `v` flows into through same-shape elementwise
    ops (a materialised value, or a reduction of such a value), else None."""
    roots, seen, stack = set(), {v}, [v]
    while stack:
        u = stack.pop()
        for c in consumers.get(u, ()):
            w = c.outputs[0]
            if kinds[id(c)] == "reduce" and c.inputs[0] is u:
                roots.add(w)
            elif (kinds[id(c)] == "fuse" and c.prim.kind in _ELEMENTWISE_KINDS and id(c) not in absorbed
                  and len(c.outputs) == 1 and w.aval.shape == u.aval.shape):
                if w in materialized:
                    roots.add(w)
                elif w not in seen:
                    seen.add(w)
                    stack.append(w)
            else:
                return None
            if len(roots) > 1:
                return None
    return next(iter(roots), None)
