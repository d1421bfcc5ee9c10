"""The scheduling decisions that read the `Target`: which products are gemms
(and how each is cut into blocks), which are written out, which convolutions
are native, which reductions are split into chunks.

Example:
    >>> from ember.backends.llvm.kernel_target import cpu_target
    >>> _gemm_blocks(1, 1024, 1024, 1024, cpu_target(threads=2))
    (1024, 512)
"""
from __future__ import annotations

import math

import numpy as np

from ...fx.ir import Var


def _gemm_plan(eq, target):
    """Sizes and operand layouts of a dot_general that the target's gemm can compute, or None."""
    lhs, rhs = eq.inputs
    d = np.dtype(eq.outputs[0].aval.dtype)
    if d not in target.gemm_dtypes or lhs.aval.dtype != d or rhs.aval.dtype != d:
        return None
    (lc, rc), (lb, rb) = eq.params["dimension_numbers"]
    lc, rc, lb, rb = tuple(lc), tuple(rc), tuple(lb), tuple(rb)
    ls, rs = lhs.aval.shape, rhs.aval.shape
    lf = tuple(i for i in range(len(ls)) if i not in lc and i not in lb)
    rf = tuple(i for i in range(len(rs)) if i not in rc and i not in rb)
    size = lambda shape, dims: math.prod(shape[i] for i in dims)  # noqa: E731
    batch, m, n, k = size(ls, lb), size(ls, lf), size(rs, rf), size(ls, lc)
    if min(batch, m, n, k) == 0 or max(m, n, k) >= target.gemm_max_dim:
        return None  # degenerate products and sizes the gemm cannot take are library steps
    nb, nm, nn = len(lb), len(lf), len(rf)
    return {"batch": batch, "m": m, "n": n, "k": k,
            "lhs_perms": (lb + lf + lc, lb + lc + lf), "rhs_perms": (rb + rc + rf, rb + rf + rc),
            "swap_perm": tuple(range(nb)) + tuple(range(nb + nm, nb + nm + nn)) + tuple(range(nb, nb + nm))}


def _dot_fuses(eq, target):
    """A product small enough to write out (target.dot_fuse_max_k*)."""
    lhs, rhs = eq.inputs
    d = np.dtype(eq.outputs[0].aval.dtype)
    if d.kind not in "fiu" or d.name in ("float16", "bfloat16") or lhs.aval.dtype != d or rhs.aval.dtype != d:
        return False
    (lc, _), _ = eq.params["dimension_numbers"]
    limit = target.dot_fuse_max_k_float if d.kind == "f" else target.dot_fuse_max_k
    return math.prod(lhs.aval.shape[i] for i in lc) <= limit


def _layout_of(shape, perms):
    """False when a row-major buffer of `shape` is laid out as `perms[0]` (ignoring
    unit dimensions), True for `perms[1]` (the gemm reads it transposed), else None."""
    for t, perm in enumerate(perms):
        dims = [p for p in perm if shape[p] != 1]
        if dims == sorted(dims):
            return bool(t)
    return None


def _gemm_blocks(batch, m, n, k, target, epilogue_flops=0):
    """(mblock, nblock): the block of one product a parallel task computes (at most
    one block per worker; of the grids with that many blocks, the one packing the
    least, column blocks x |A| + row blocks x |B|).  `epilogue_flops`: the work of
    the elementwise kernels fused onto the product's blocks, which the blocks share
    (a tanh over a small product's output is worth its own thread).  On a "grid"
    target the product is one block: its library gemm (cuBLAS) cuts the work itself."""
    if target.parallel_model == "grid":
        return m, n
    want = min(target.threads, (2 * m * n * k + epilogue_flops) // target.gemm_min_block_flops) // batch
    best = None
    for tasks in range(max(want, 1), 0, -1):
        for r in range(1, tasks + 1):
            if tasks % r:
                continue
            c = tasks // r
            if (r > 1 and m // r < target.gemm_min_block) or (c > 1 and n // c < target.gemm_min_block):
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
        tile = target.gemm_tile
        return min(-(-b // tile) * tile, extent)  # whole micro-tiles
    return block(m, r), block(n, c)


def _conv_ok(eq, target):
    lhs, rhs = eq.inputs
    d = np.dtype(eq.outputs[0].aval.dtype)
    p = eq.params
    if d not in target.gemm_dtypes or lhs.aval.dtype != d or rhs.aval.dtype != d or p["batch_group_count"] != 1:
        return False
    return type(lhs) is Var and type(rhs) is Var and eq.outputs[0].aval.size > 0 and rhs.aval.size > 0


def _split_chunks(space, axes, dtype, target):
    """(chunks, chunk length) of a reduction over `space` split along its outermost
    axis into partial results, or None to keep it one kernel: the target splits
    reductions whose outermost loop is reduced (the workers could not share it)
    into at most `split_max_chunks` chunks of at least `split_min_chunk` elements;
    half precision never (its float32 accumulator lives in a register only).

    Example:
        >>> from ember.backends.llvm.kernel_target import cpu_target
        >>> _split_chunks((1 << 20,), (0,), np.dtype(np.float32), cpu_target())
        (32, 32768)
    """
    kept = tuple(i for i in range(len(space)) if i not in axes)
    n0 = space[0] if space else 0
    chunks = min(target.split_max_chunks, n0, math.prod(space) // target.split_min_chunk)
    lowp = np.dtype(dtype).name in ("float16", "bfloat16")
    if 0 in kept or not space or lowp or chunks < 2 or not target.split_reductions:
        return None
    for c in range(chunks, max(chunks // 2, 1), -1):
        if n0 % c == 0:
            chunks = c
            break
    length = -(-n0 // chunks)
    return -(-n0 // length), length


# A stored-and-reloaded element costs about this many arithmetic nodes of a fused
# expression (one store, one load, the kernel's loop): what materialising saves must
# exceed it.
STORE_RELOAD_OPS = 8


# An unrolled reduction's operand is evaluated once per reduced element: at most
# this many (fused arithmetic nodes x reduced elements), so what it writes out stays
# a short expression.
UNROLLED_REDUCE_NODES = 256


def unrolls(eq, uses, outputs, producer, consumers, fused, unrolled, target) -> bool:
    """Whether the reduction `eq` is written out in its one reader's expression
    (`target.unrolled_reduce_max`): a sum or product over a few elements, its result
    read once and not a program output, in a dtype that accumulates in itself (half
    precision sums in float32), and whose operand expression is short
    (transcendentals weigh `EXPENSIVE_COST`) and holds no other unrolled reduction
    (nested, the terms would multiply).  A transcendental in the operand also needs
    the result read at most once per element downstream (`_read_once`): through a
    broadcast, the reader would evaluate the terms again at every broadcast element.
    `consumers`: var -> equations reading it; `fused`: whether an equation's result
    is fused into its readers; `unrolled`: the results of the reductions already
    unrolled.

    Example:
        >>> import ember, numpy as np
        >>> from ember.backends.llvm.kernel_target import cpu_target
        >>> g = ember.make_graph(lambda y: y.sum(1) * 2.0)(np.ones((4, 3, 8), np.float32)).graph
        >>> producer = {v: e for e in g.equations for v in e.outputs}
        >>> red, mul = g.equations
        >>> unrolls(red, {red.outputs[0]: 1}, set(), producer, {red.outputs[0]: [mul]}, lambda e: False, set(),
        ...         cpu_target())
        True
    """
    from .expressions import UNROLLED_RULES
    from .runner import EXPENSIVE_COST
    (x,) = eq.inputs
    v = eq.outputs[0]
    d = np.dtype(v.aval.dtype)
    if (eq.prim not in UNROLLED_RULES or uses.get(v, 0) != 1 or v in outputs or d.kind not in "fiuc"
            or d.name in ("float16", "bfloat16") or d != np.dtype(x.aval.dtype)):
        return False
    extent = math.prod(x.aval.shape[a] for a in eq.params["axes"])
    if not 1 <= extent <= target.unrolled_reduce_max:
        return False
    budget = UNROLLED_REDUCE_NODES // extent
    once = None   # computed on the first transcendental
    n, seen, stack = 0, set(), [x]
    while stack:
        u = stack.pop()
        if type(u) is not Var or u in seen or u not in producer or not fused(producer[u]):
            continue
        if u in unrolled:
            return False
        seen.add(u)
        p = producer[u]
        if p.prim.cost == "expensive":
            once = _read_once(v, uses, outputs, consumers, fused) if once is None else once
            if not once:
                return False
        if p.prim.kind != "movement":
            n += EXPENSIVE_COST if p.prim.cost == "expensive" else 1
        if n > budget:
            return False
        stack.extend(p.inputs)
    return True


def _read_once(v, uses, outputs, consumers, fused) -> bool:
    """Whether the fused chain from `v` (single uses through fused equations) reads
    each of its elements at most once: no reader on the way produces more elements
    than it reads, except a concatenate or pad (which place each once)."""
    while True:
        (r,) = consumers.get(v) or [None]
        if r is None or len(r.outputs) != 1:
            return True   # a host step (a callback has no outputs) or a multi-output one reads it stored
        if r.outputs[0].aval.size > v.aval.size and r.prim.name not in ("concatenate", "pad"):
            return False
        w = r.outputs[0]
        if not fused(r) or uses.get(w, 0) != 1 or w in outputs:
            return True   # stored (or read by a kernel of its own) here
        v = w


def movement_root(v, producer, materialized):
    """The computed value under a chain of single-operand movement ops (not pad or
    concatenate) that are not stored."""
    while type(v) is Var and v in producer and v not in materialized:
        p = producer[v]
        if p.prim.kind != "movement" or len(p.inputs) != 1 or p.prim.name in ("pad", "concatenate"):
            break
        v = p.inputs[0]
    return v


def fused_nodes(v, producer, materialized, stop=(), limit=None):
    """The arithmetic equations (movement ops count nothing) of `v`'s fused
    expression, stopping at stored values and at the values in `stop` other than
    `v`; with `limit`, counting stops once it is reached."""
    n, seen, stack = 0, set(), [v]
    while stack and (limit is None or n < limit):
        u = stack.pop()
        if type(u) is not Var or u in seen or u in materialized or u not in producer:
            continue
        seen.add(u)
        p = producer[u]
        if p.prim.kind != "movement":
            n += 1
        stack.extend(a for a in p.inputs if a not in stop or a is v)
    return n


def _concat_operands_to_store(eq, producer, materialized):
    """The values feeding a fused concatenate that are cheaper computed once into a
    buffer of their own.  A fused concatenate is one select per output element over
    *every* operand's expression (a select, not a branch, so the loop vectorises),
    so an operand costs its expression's arithmetic nodes `c` at each of the output's
    elements, not only its own: materialising saves (size(out) - size(operand)) * c
    and costs about size(operand) * STORE_RELOAD_OPS.  The stacked Taylor
    coefficients y_1..y_K (the operand of one product) are such a concatenate: each
    y_k's expression holds the recurrence of every y_j before it.

    An operand's expression is counted as if the others were stored (they then are
    read back: y_k's kernel loads y_1..y_{k-1}); movement ops count nothing and are
    looked through, so what is stored is the computed value under an `expand_dims`.

    Example:
        >>> import ember, ember.numpy as enp, numpy as np
        >>> from ember.fx.prims import shape as sh
        >>> def f(x):
        ...     ys = [x]
        ...     for _ in range(6):
        ...         ys.append(ys[-1] * ys[-1] + x * 0.5 - ys[-1] * x)
        ...     return sh.concatenate([sh.expand_dims(y, (0,)) for y in ys], 0)
        >>> g = ember.make_graph(f)(np.ones(8, np.float32)).graph
        >>> producer = {v: e for e in g.equations for v in e.outputs}
        >>> cat = g.equations[-1]
        >>> len(_concat_operands_to_store(cat, producer, set(g.inputs)))
        6
    """
    out_size = eq.outputs[0].aval.size

    roots = {movement_root(a, producer, materialized) for a in eq.inputs if type(a) is Var}
    stop = set(roots)

    store = []
    for r in roots:
        if type(r) is not Var or r in materialized or r not in producer:
            continue
        size = r.aval.size
        if (out_size - size) * fused_nodes(r, producer, materialized, stop) > size * STORE_RELOAD_OPS:
            store.append(r)
    return store
