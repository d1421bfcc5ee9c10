"""Partition a graph into fused loop kernels, BLAS products and library steps.

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
  cheap values (adds, broadcasts) are recomputed;
- a reduction result is always materialised, so every consumer (e.g. softmax's
  shift and normalisation) sees bit-identical values;
- float32/float64 `dot_general` is a `GemmKernel`: a gemm called from native code,
  on operands laid out as [batch, rows, k] (or transposed, which the gemm reads
  directly); an operand in another layout is copied once by a fused map kernel,
  and a product whose only use is a transpose is computed transposed;
- consecutive kernels over the same leading (row) dimensions whose reads of each
  other's results stay within a row become one `RowKernel` (one pass over rows);
- everything else (conv, sort, gather, control flow, linalg, ...) is a library
  step on whole buffers.

Example:
    >>> import ember, numpy as np
    >>> from ember import lax
    >>> g = ember.make_graph(lambda x: lax.reduce_sum(lax.exp(x), (0,)))(np.ones(4, np.float32))
    >>> [type(s).__name__ for s in schedule(g, lambda eq: True).steps]
    ['ReduceKernel']
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ...fx.ir import ClosedGraph, Literal, Var
from .loop_ir import (E, Buffer, ConvKernel, GemmKernel, reset_interning, LibraryStep, MapKernel, Program, ReduceKernel,
                      RowKernel, ScatterKernel, bounds, delinearize, expr_inputs, iadd, iclamp, iconst, idiv, imod,
                      imul, linearize,
                      split_row, substitute)

ELEMENTWISE = {
    "neg", "sign", "floor", "ceil", "round", "abs", "exp", "exp2", "log", "log1p", "expm1", "tanh",
    "logistic", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
    "atanh", "sqrt", "rsqrt", "cbrt", "erf", "erfc", "is_finite", "not", "integer_pow", "square",
    "add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "and", "or", "xor",
    "shift_left", "shift_right_arithmetic", "shift_right_logical", "eq", "ne", "lt", "le", "gt",
    "ge", "select_n", "clamp", "convert_element_type", "stop_gradient", "checkpoint_name",
}
ELEMENTWISE |= {"clz", "population_count", "nextafter", "conj", "erf_inv", "lgamma", "digamma", "polygamma", "real", "imag", "complex"}  # noqa: E501 (until Primitive.kind replaces this table)
MOVEMENT = {"broadcast_in_dim", "reshape", "transpose", "squeeze", "expand_dims", "rev", "slice",
            "pad", "concatenate", "iota", "gather"}
REDUCERS = {"reduce_sum": "sum", "reduce_prod": "prod", "reduce_max": "max", "reduce_min": "min",
            "reduce_and": "and", "reduce_or": "or"}
_RESHAPES = {"reshape", "squeeze", "expand_dims"}
SCATTERS = {"scatter": "set", "scatter_add": "add", "scatter_mul": "mul", "scatter_min": "min",
            "scatter_max": "max"}
EXPENSIVE = {"exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan",
             "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "sqrt", "rsqrt",
             "cbrt", "erf", "erfc", "pow", "atan2", "div", "rem"}


GEMM_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
# A product is cut into a grid of one block per thread (fewer when small: a block
# is at least GEMM_MIN_BLOCK_FLOPS of work and GEMM_MIN_BLOCK rows or columns
# wide).  Every block is a gemm call that packs its rows of A and its columns of
# B again, so of the grids with that many blocks the one packing the least
# (column blocks x |A| + row blocks x |B|) is taken.  More blocks than threads
# would balance better on a busy machine but measured slower on a quiet one
# (1024^3: 10.5 ms with 2 blocks, 11.3 ms with 8 on two cores); on a busy one
# the worker pool runs products on the caller alone anyway.
GEMM_MIN_BLOCK_FLOPS = 1 << 23
GEMM_MIN_BLOCK = 128
# A reduction that cannot run in parallel over its outermost loop is split into
# chunks of at least this many elements when it has at least two of them.
SPLIT_MIN_CHUNK = 1 << 15
SPLIT_MAX_CHUNKS = 32


def schedule(closed: ClosedGraph, supports, fuse_rows: bool = True, threads: int = 2) -> Program:
    """Build the Program for a closed graph; `supports(eq) -> bool` says which
    fusible equations the target backend can render (others become library steps).
    `supports` may also answer for `dot_general` (native BLAS products), which are
    cut into at most `threads` parallel blocks; `fuse_rows=False` keeps every
    kernel separate (for tests and debugging)."""
    reset_interning()
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

    def kind_of(eq):
        n = eq.prim.name
        if eq.outputs and all(v.aval.size == 0 for v in eq.outputs) and not eq.prim.multiple_results:
            return "empty"   # nothing to compute (and operands that may be empty too)
        if n == "dot_general":
            if _dot_fuses(eq):
                return "fuse"
            plan = _gemm_plan(eq) if supports(eq) else None
            if plan is not None:
                gemms[id(eq)] = plan
                return "gemm"
            return "lib"
        if n == "conv_general_dilated" and supports(eq) and _conv_ok(eq):
            return "conv"
        if n in REDUCERS and supports(eq):
            return "reduce"
        if n in SCATTERS and supports(eq):
            return "scatter"
        if (n in ELEMENTWISE or n in MOVEMENT) and supports(eq):
            return "fuse"
        return "lib"

    kinds = {id(eq): kind_of(eq) for eq in g.equations}
    materialized: set = set(g.constvars) | set(g.inputs)
    out_set = {a for a in g.outputs if type(a) is Var}
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
            if todo and eq.prim.name not in EXPENSIVE:
                stack.extend(todo)
                continue
            stack.pop()
            expensive[v] = eq.prim.name in EXPENSIVE or any(expensive[a] for a in ins)
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
            if (t_eq is not None and t_eq.prim.name == "transpose" and kinds[id(t_eq)] == "fuse"
                    and tuple(t_eq.params["permutation"]) == plan["swap_perm"]):
                absorbed[id(t_eq)] = eq
                plan["out_var"] = t_eq.outputs[0]
                materialized.add(t_eq.outputs[0])
            else:
                plan["out_var"] = d
                materialized.add(d)
            for x, perms in ((eq.inputs[0], plan["lhs_perms"]), (eq.inputs[1], plan["rhs_perms"])):
                # operands in a layout BLAS reads are materialised as they are (or read
                # in place when they only reshape a buffer); others are copied into
                # one by a map kernel (fusing their producers)
                if (type(x) is Var and _layout_of(x.aval.shape, perms) is not None
                        and not (x in producer and producer[x].prim.name in _RESHAPES)):
                    materialized.add(x)
    shared = []   # materialised because expensive and used more than once
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
    # A value kept only for its several uses needs no buffer when all of them end,
    # through elementwise ops over its own shape, in one kernel: that kernel reads
    # it at one index per element, so the hash-consed expression is computed once
    # (the third derivative of sin(t)*t: one pass, not sin stored and read back).
    # Latest first, so what a value flows into is settled before the value.
    for v in reversed(shared):
        if _single_root(v, consumers, kinds, materialized, absorbed) is not None:
            materialized.discard(v)
    steps = []
    counter = [0]

    def kname(what):
        counter[0] += 1
        return f"k{counter[0]}_{what}"

    def builder_for(space):
        return _ExprBuilder(producer, materialized, buf_of, space)

    def gemm_operand(x, perms):
        if type(x) is Var and x in materialized:
            t = _layout_of(x.aval.shape, perms)
            if t is not None:
                return buf_of[x], t
        bodies = []
        for t, perm in enumerate(perms):
            shape = tuple(x.aval.shape[p] for p in perm)
            idx = tuple(E("v", i) for i in range(len(shape)))
            inner = [None] * len(perm)
            for i, p in enumerate(perm):
                inner[p] = idx[i]
            body = builder_for(shape).value(x, tuple(inner))
            if body[0] == "load" and body[2] is linearize(idx, shape) and body[3] == x.aval.dtype:
                return body[1], bool(t)   # a reshape of a buffer in this layout: read in place
            bodies.append((shape, body))
        # a map kernel writes the operand in the [batch, rows, k] layout
        shape, body = bodies[0]
        out = add_buf(shape, x.aval.dtype, "temp")
        steps.append(MapKernel(kname("layout"), out, shape, body, sorted(expr_inputs(body))))
        return out, False

    for eq in g.equations:
        k = kinds[id(eq)]
        if k == "empty":
            # a kernel whose loops run zero times: the buffer gets allocated like
            # every kernel output, and no operand is read
            v = eq.outputs[0]
            body = E("const", _pyval(np.zeros((), v.aval.dtype)), v.aval.dtype)
            steps.append(MapKernel(kname("empty"), new_buf(v, "temp"), tuple(v.aval.shape), body, []))
            continue
        if k == "lib":
            ins = [("lit", a.value) if type(a) is Literal else buf_of[a] for a in eq.inputs]
            outs = [new_buf(v, "temp") for v in eq.outputs]
            steps.append(LibraryStep(eq, ins, outs))
            continue
        if k == "gemm":
            plan = gemms[id(eq)]
            a, ta = gemm_operand(eq.inputs[0], plan["lhs_perms"])
            b, tb = gemm_operand(eq.inputs[1], plan["rhs_perms"])
            out_var = plan["out_var"]
            out = new_buf(out_var, "temp")
            m, n = plan["m"], plan["n"]
            if out_var is not eq.outputs[0]:
                # C^T = op(B)^T op(A)^T
                a, b, ta, tb, m, n = b, a, not tb, not ta, n, m
            mblock, nblock = _gemm_blocks(plan["batch"], m, n, plan["k"], threads)
            steps.append(GemmKernel(kname("gemm"), out, a, b, out_var.aval.dtype, plan["batch"], m, n,
                                    plan["k"], ta, tb, mblock, nblock))
            continue
        if id(eq) in absorbed:
            continue
        if k == "scatter":
            steps.extend(_scatter_steps(eq, kname, new_buf, builder_for))
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
                                       REDUCERS[eq.prim.name], v.aval.dtype, body, eq.prim.name))
        else:
            shape = tuple(v.aval.shape)
            idx = tuple(E("v", i) for i in range(len(shape)))
            body = builder_for(shape).equation(eq, idx)
            out = new_buf(v, "temp")
            steps.append(MapKernel(kname(eq.prim.name), out, shape, body, sorted(expr_inputs(body))))
    if fuse_rows:
        steps = _fuse_epilogues(steps)
        steps = _fuse_rows(steps)
        _alias_row_intermediates(steps, {buf_of[a] for a in g.outputs if type(a) is Var}, buffers)
    outputs = []
    for a in g.outputs:
        if type(a) is Literal:
            outputs.append(("lit", a.value))
        else:
            outputs.append(buf_of[a])
    return Program(buffers, inputs, consts, steps, outputs)


# --- BLAS products ----------------------------------------------------------------------

def _gemm_plan(eq):
    """Sizes and operand layouts of a dot_general that BLAS can compute, or None."""
    lhs, rhs = eq.inputs
    d = np.dtype(eq.outputs[0].aval.dtype)
    if d not in GEMM_DTYPES or lhs.aval.dtype != d or rhs.aval.dtype != d:
        return None
    (lc, rc), (lb, rb) = eq.params["dimension_numbers"]
    lc, rc, lb, rb = tuple(lc), tuple(rc), tuple(lb), tuple(rb)
    ls, rs = lhs.aval.shape, rhs.aval.shape
    lf = tuple(i for i in range(len(ls)) if i not in lc and i not in lb)
    rf = tuple(i for i in range(len(rs)) if i not in rc and i not in rb)
    size = lambda shape, dims: math.prod(shape[i] for i in dims)  # noqa: E731
    batch, m, n, k = size(ls, lb), size(ls, lf), size(rs, rf), size(ls, lc)
    if min(batch, m, n, k) == 0 or max(m, n, k) >= 1 << 31:
        return None  # degenerate products and 32-bit BLAS overflow stay with numpy
    nb, nm, nn = len(lb), len(lf), len(rf)
    return {"batch": batch, "m": m, "n": n, "k": k,
            "lhs_perms": (lb + lf + lc, lb + lc + lf), "rhs_perms": (rb + rc + rf, rb + rf + rc),
            "swap_perm": tuple(range(nb)) + tuple(range(nb + nm, nb + nm + nn)) + tuple(range(nb, nb + nm))}


# A product contracting at most DOT_FUSE_MAX_K elements (outer products, k = 1
# or 2) is written out as an expression and fuses like elementwise code: a BLAS
# call costs about a microsecond, and vmap of per-example gradients makes
# hundreds of 64x1 @ 1x32 outer products.  Float products fuse only for k = 1
# (one correctly rounded product, which is what the gemm's overflow recomputation
# gives too): a written-out sum of two products could overflow where the exact
# result does not, and only the gemm step recomputes such elements.
DOT_FUSE_MAX_K = 2
DOT_FUSE_MAX_K_FLOAT = 1


def _dot_fuses(eq):
    lhs, rhs = eq.inputs
    d = np.dtype(eq.outputs[0].aval.dtype)
    if d.kind not in "fiu" or d.name in ("float16", "bfloat16") or lhs.aval.dtype != d or rhs.aval.dtype != d:
        return False
    (lc, _), _ = eq.params["dimension_numbers"]
    return math.prod(lhs.aval.shape[i] for i in lc) <= (DOT_FUSE_MAX_K_FLOAT if d.kind == "f" else DOT_FUSE_MAX_K)


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


def _layout_of(shape, perms):
    """False when a row-major buffer of `shape` is laid out as `perms[0]` (ignoring
    unit dimensions), True for `perms[1]` (BLAS reads it transposed), else None."""
    for t, perm in enumerate(perms):
        dims = [p for p in perm if shape[p] != 1]
        if dims == sorted(dims):
            return bool(t)
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
            elif (kinds[id(c)] == "fuse" and c.prim.name in ELEMENTWISE and id(c) not in absorbed
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


def _gemm_blocks(batch, m, n, k, threads):
    """(mblock, nblock): the block of one product a parallel task computes."""
    want = min(threads, 2 * m * n * k // GEMM_MIN_BLOCK_FLOPS) // batch
    best = None
    for tasks in range(max(want, 1), 0, -1):
        for r in range(1, tasks + 1):
            if tasks % r:
                continue
            c = tasks // r
            if (r > 1 and m // r < GEMM_MIN_BLOCK) or (c > 1 and n // c < GEMM_MIN_BLOCK):
                continue
            cost = c * m * k + r * k * n
            if best is None or cost < best[0]:
                best = (cost, r, c)
        if best is not None:
            break
    _, r, c = best

    def block(extent, parts):
        if parts == 1:
            return extent
        b = -(-extent // parts)
        return min(-(-b // 16) * 16, extent)  # whole BLAS micro-tiles
    return block(m, r), block(n, c)


# --- convolutions ---------------------------------------------------------------------------

def _conv_ok(eq):
    lhs, rhs = eq.inputs
    d = np.dtype(eq.outputs[0].aval.dtype)
    p = eq.params
    if d not in GEMM_DTYPES or lhs.aval.dtype != d or rhs.aval.dtype != d or p["batch_group_count"] != 1:
        return False
    return type(lhs) is Var and type(rhs) is Var and eq.outputs[0].aval.size > 0 and rhs.aval.size > 0


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
    i64, b8 = np.dtype(np.int64), np.dtype(bool)
    conds, inner = [], [None] * (2 + nsp)
    inner[ls[0]] = var[0]
    inner[ls[1]] = iadd(imul(var[1], i), var[2])
    for d in range(nsp):
        kv, ov = var[3 + d], var[3 + nsp + d]
        lo = p["padding"][d][0]
        ld = p["lhs_dilation"][d]
        rel = iadd(iadd(imul(ov, p["window_strides"][d]), imul(kv, p["rhs_dilation"][d])), iconst(-lo))
        relv = E("index", rel, i64)
        conds.append(E("op", "ge", (), b8, relv, E("const", 0, i64)))
        conds.append(E("op", "le", (), b8, relv, E("const", (xs[d] - 1) * ld, i64)))
        q = rel
        if ld > 1:
            nn = _nonneg(rel, lo)
            conds.append(E("op", "eq", (), b8, E("index", imod(nn, ld, b.ranges), i64), E("const", 0, i64)))
            q = idiv(nn, ld, b.ranges)
        inner[ls[2 + d]] = iclamp(q, 0, xs[d] - 1)
    val = b.value(lhs, tuple(inner))
    ok = None
    for c in conds:
        if _provably_true(c, b.ranges):
            continue
        ok = c if ok is None else E("op", "and", (), b8, ok, c)
    if ok is not None:
        val = E("op", "select_n", (), dtype, ok, E("const", 0.0, dtype), val)
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


# --- scatters -------------------------------------------------------------------------------

def _scatter_steps(eq, kname, new_buf, builder_for):
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
    i64, b8 = np.dtype(np.int64), np.dtype(bool)
    starts, ok = {}, None
    for k, d in enumerate(dn.scatter_dims_to_operand_dims):
        raw = b.value(indices, tuple(bidx) + (iconst(k),))
        if np.dtype(raw[3] if raw[0] == "op" else raw[-1]) != i64:
            raw = E("op", "convert_element_type", (), i64, raw)
        hi = oshape[d] - sizes[d]
        starts[d] = iclamp(E("val", raw), 0, hi)
        if p["mode"] != "clip":
            inside = E("op", "and", (), b8, E("op", "ge", (), b8, raw, E("const", 0, i64)),
                       E("op", "le", (), b8, raw, E("const", hi, i64)))
            ok = inside if ok is None else E("op", "and", (), b8, ok, inside)
    inner = []
    for d in range(len(oshape)):
        e = starts.get(d, iconst(0))
        if d in dn.operand_batching_dims:
            e = iadd(e, bidx[dn.scatter_indices_batching_dims[dn.operand_batching_dims.index(d)]])
        if d in wdims:
            e = iadd(e, uidx[window[wdims.index(d)]])
        inner.append(e)
    target = linearize(tuple(inner), oshape)
    body = b.value(updates, uidx)
    used = expr_inputs(body, expr_inputs(target, expr_inputs(ok) if ok is not None else None))
    steps.append(ScatterKernel(kname(eq.prim.name), out, ushape, SCATTERS[eq.prim.name], v.aval.dtype,
                               body, target, ok, sorted(used | {out})))
    return steps


# --- gemm epilogues ----------------------------------------------------------------------------

def _fuse_epilogues(steps):
    """Move map kernels that read a (non-batched) product elementwise into its
    GemmKernel, when everything else they read exists before the product."""
    produced_at = {}
    for i, s in enumerate(steps):
        for o in _outs_of(s):
            produced_at[o] = i
    taken = set()
    for i, g in enumerate(steps):
        if not isinstance(g, GemmKernel) or g.batch != 1:
            continue
        ready = {o for o, j in produced_at.items() if j < i} | set(g.outs)
        elem = linearize((E("v", 0), E("v", 1)), (g.m, g.n))
        for j in range(i + 1, len(steps)):
            m = steps[j]
            if j in taken or not isinstance(m, MapKernel) or tuple(m.shape) != (g.m, g.n):
                continue
            loads = _loads(m.body)
            if not any(b == g.out for b, _ in loads):
                continue
            if any(b in g.outs and idx is not elem for b, idx in loads):
                continue
            if not all(b in ready or b not in produced_at for b in m.inputs):
                continue
            g.epilogue.append(m)
            ready.add(m.out)
            taken.add(j)
    return [s for j, s in enumerate(steps) if j not in taken]


def _outs_of(s):
    if isinstance(s, LibraryStep):
        return s.outputs
    if isinstance(s, (RowKernel, GemmKernel)):
        return s.outs
    if isinstance(s, ConvKernel):
        return [s.cols.out, s.out]
    return [s.out]


# --- reductions ----------------------------------------------------------------------------

def _reduce_steps(kname, add_buf, out, space, axes, op, dtype, body, prim_name):
    """The ReduceKernel(s) computing `out`: one, or a chunked partial reduction and a
    small final one when the outermost loop would not be parallel."""
    kept = tuple(i for i in range(len(space)) if i not in axes)
    total = math.prod(space)
    d = np.dtype(dtype)
    lowp = d.name in ("float16", "bfloat16")
    n0 = space[0] if space else 0
    chunks = min(SPLIT_MAX_CHUNKS, n0, total // SPLIT_MIN_CHUNK)
    if 0 in kept or not space or lowp or chunks < 2:
        return [ReduceKernel(kname(prim_name), out, space, axes, op, dtype, body, sorted(expr_inputs(body)))]
    for c in range(chunks, max(chunks // 2, 1), -1):
        if n0 % c == 0:
            chunks = c
            break
    length = -(-n0 // chunks)
    chunks = -(-n0 // length)
    # loop variables of the first kernel: (chunk, position in chunk, the other axes)
    pos = iadd(imul(E("v", 0), length), E("v", 1))
    mapping = {0: iclamp(pos, 0, n0 - 1) if chunks * length != n0 else pos}
    mapping.update({i: E("v", i + 1) for i in range(1, len(space))})
    pbody = substitute(body, mapping)
    if chunks * length != n0:
        ok = E("op", "lt", (), np.dtype(bool), E("index", pos, np.dtype(np.int64)),
               E("const", n0, np.dtype(np.int64)))
        pbody = E("op", "select_n", (), d, ok, E("const", _identity_value(op, d), d), pbody)
    pspace = (chunks, length) + tuple(space[1:])
    paxes = (1,) + tuple(a + 1 for a in axes if a != 0)
    kept_shape = tuple(space[i] for i in kept)
    partial = add_buf((chunks,) + kept_shape, d, "temp")
    first = ReduceKernel(kname(prim_name + "_part"), partial, pspace, paxes, op, d, pbody,
                         sorted(expr_inputs(pbody)))
    fspace = (chunks,) + kept_shape
    fbody = E("load", partial, linearize(tuple(E("v", i) for i in range(len(fspace))), fspace), d)
    final = ReduceKernel(kname(prim_name), out, fspace, (0,), op, d, fbody, [partial])
    return [first, final]


def _identity_value(op, d):
    if d == np.bool_:
        return op in ("and", "min", "prod")
    if d.kind == "f":
        return {"sum": 0.0, "prod": 1.0, "max": -math.inf, "min": math.inf}[op]
    if op in ("sum", "or"):
        return 0
    if op in ("prod", "and"):
        return 1
    info = np.iinfo(d)
    return int(info.min if op == "max" else info.max)


# --- row fusion ----------------------------------------------------------------------------

def _row_outer(step):
    """The leading dimensions a step can share with a row group, and whether it can
    start one (a reduction over trailing axes with a register accumulator)."""
    if isinstance(step, ReduceKernel):
        kept = step.kept
        if kept and step.register_accumulator and kept == tuple(range(len(kept))):
            return step.space[:len(kept)]
        return None
    return None


def _loads(expr):
    """(buffer, index expression) of every load in a value expression."""
    out, seen, stack = [], set(), [expr]
    while stack:
        e = stack.pop()
        if type(e) is not E or id(e) in seen:
            continue
        seen.add(id(e))
        if e[0] == "load":
            out.append((e[1], e[2]))
        stack.extend(x for x in e if type(x) is E)
    return out


def _joins(step, outer, produced):
    """Can `step` run inside a row group over `outer` whose members wrote `produced`?"""
    if isinstance(step, ReduceKernel):
        if _row_outer(step) != outer:
            return False
        space = step.space
    elif isinstance(step, MapKernel):
        space = step.shape
        if tuple(space[:len(outer)]) != tuple(outer):
            return False
    else:
        return False
    r = len(outer)
    ranges = {i: n for i, n in enumerate(space)}
    row = linearize(tuple(E("v", i) for i in range(r)), outer)
    for buf, idx in _loads(step.body):
        if buf not in produced:
            continue
        inner = math.prod(produced[buf]) // max(math.prod(outer), 1)
        if inner == 0:
            return False
        split = split_row(idx, inner, ranges)
        if split is None or split[0] is not row:
            return False
    return True


def _alias_row_intermediates(steps, outputs, buffers):
    """Store a row group's intermediate in the output of the member that reads it
    last, when nothing else needs it, that member reads it only at the element it
    writes (so each element is read before it is overwritten) and no member in
    between writes there."""
    read_later = set(outputs)
    for s in reversed(steps):
        if isinstance(s, RowKernel):
            members, aliases = s.members, s.aliases
            for j in range(len(members) - 1, -1, -1):
                a = members[j]
                x = a.out
                if x in read_later or not isinstance(a, MapKernel):
                    continue
                readers = [k for k in range(j + 1, len(members)) if any(b == x for b, _ in _loads(members[k].body))]
                if not readers:
                    continue
                last = members[readers[-1]]
                target = aliases.get(last.out, last.out)
                if (not isinstance(last, MapKernel) or tuple(last.shape) != tuple(a.shape)
                        or buffers[target].dtype != buffers[x].dtype
                        or any(aliases.get(members[k].out, members[k].out) == target for k in range(j + 1, readers[-1]))):
                    continue
                here = linearize(tuple(E("v", i) for i in range(len(last.shape))), last.shape)
                if all(idx is here for b, idx in _loads(last.body) if b == x):
                    aliases[x] = target
        for b in (s.inputs if not isinstance(s, LibraryStep) else [i for i in s.inputs if type(i) is int]):
            read_later.add(b)


def _fuse_rows(steps):
    out, group, outer, produced = [], [], None, {}

    def flush():
        if len(group) > 1:
            names = "_".join(m.name.split("_", 1)[0] for m in group)
            out.append(RowKernel(f"r_{names}", tuple(outer), list(group)))
        else:
            out.extend(group)

    for s in steps:
        if group and _joins(s, outer, produced):
            group.append(s)
            produced[s.out] = s.shape
            continue
        flush()
        group, outer, produced = [], None, {}
        o = _row_outer(s)
        if o is not None:
            group, outer, produced = [s], o, {s.out: s.shape}
        else:
            out.append(s)
    flush()
    return out


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

    def __init__(self, producer, materialized, buf_of, space):
        self.producer = producer
        self.materialized = materialized
        self.buf_of = buf_of
        self.memo = {}
        self._inside = 0
        # extents of the loop variables, for index simplification
        self.ranges = {k: n for k, n in enumerate(space)}

    def value(self, a, idx):
        if type(a) is Literal:
            return E("const", _pyval(a.value), a.aval.dtype)
        if a.aval.size == 0:
            # an empty operand of a non-empty result (pad, concatenate): every read of
            # it is masked out, and a load would be out of bounds
            return E("const", _pyval(np.zeros((), a.aval.dtype)), a.aval.dtype)
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

    def _gather(self, eq, idx, p):
        """XLA gather: the operand index of an output element is its window offset plus
        the start read from `indices` (clamped so the window fits; windows not entirely
        in bounds read the fill value in "fill" mode)."""
        operand, indices = eq.inputs
        dn, sizes = p["dimension_numbers"], p["slice_sizes"]
        i64, b8 = np.dtype(np.int64), np.dtype(bool)
        oshape = operand.aval.shape
        dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
        wdims = [d for d in range(len(oshape)) if d not in dropped]
        offset = set(dn.offset_dims)
        bidx = [i for q, i in enumerate(idx) if q not in offset]
        widx = [i for q, i in enumerate(idx) if q in offset]
        starts, ok = {}, None
        for k, d in enumerate(dn.start_index_map):
            raw = self.value(indices, tuple(bidx) + (iconst(k),))
            if np.dtype(raw[3] if raw[0] == "op" else raw[-1]) != i64:
                raw = E("op", "convert_element_type", (), i64, raw)
            hi = oshape[d] - sizes[d]
            starts[d] = iclamp(E("val", raw), 0, hi)
            if p["mode"] == "fill":
                inside = E("op", "and", (), b8, E("op", "ge", (), b8, raw, E("const", 0, i64)),
                           E("op", "le", (), b8, raw, E("const", hi, i64)))
                ok = inside if ok is None else E("op", "and", (), b8, ok, inside)
        inner = []
        for d in range(len(oshape)):
            e = starts.get(d, iconst(0))
            if d in dn.operand_batching_dims:
                e = iadd(e, bidx[dn.start_indices_batching_dims[dn.operand_batching_dims.index(d)]])
            if d in wdims:
                e = iadd(e, widx[wdims.index(d)])
            inner.append(e)
        val = self.value(operand, tuple(inner))
        if ok is None:
            return val
        dtype = eq.outputs[0].aval.dtype
        fill = p["fill_value"]
        fill = E("const", _pyval(np.array(0 if fill is None else fill).astype(dtype)), dtype)
        return E("op", "select_n", (), dtype, ok, fill, val)

    def _dot_general(self, eq, idx, p):
        """A product over at most DOT_FUSE_MAX_K contracted elements, written out."""
        lhs, rhs = eq.inputs
        (lc, _), _ = p["dimension_numbers"]
        dtype = eq.outputs[0].aval.dtype
        total = None
        for ks in itertools.product(*[range(lhs.aval.shape[i]) for i in lc]):
            li, ri = _dot_indices(eq, idx, tuple(iconst(k) for k in ks))
            term = E("op", "mul", (), dtype, self.value(lhs, li), self.value(rhs, ri))
            total = term if total is None else E("op", "add", (), dtype, total, term)
        if total is None:
            return E("const", _pyval(np.zeros((), dtype)), dtype)
        if np.dtype(dtype).kind == "f":
            # a product's accumulator starts at +0.0 (BLAS, the gemm, numpy's matmul):
            # a -0.0 product gives +0.0
            total = E("op", "add", (), dtype, E("const", 0.0, dtype), total)
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
