"""Products that share an operand, computed as one product.

`x @ W`, `J @ W` and `L @ W` with the same weight `W` (a forward Laplacian's value,
Jacobian and Laplacian; a jet's primal and its stacked coefficients; a jvp's primal
and tangent) are one gemm over the rows of the three left operands stacked: `W` is
packed once and the work is cut into blocks for all the threads, where the small
products alone would each run on one.  Done on the graph the scheduler gets, after
the passes: what a transform stacked itself would also pay for rows nobody reads
(the last layer's Jacobian when only the Laplacian is an output).

Products join only when no one reads, however indirectly, what another computes
(a recurrence `h = tanh(h @ W)` stays a chain), only when one of them alone
would not fill the target's threads (products that already do would only pay the
copy of their operands into the stacked one), and only when their operands stack
without dividing indices (see `_stacks_without_division`).

Example:
    >>> import ember, numpy as np
    >>> from ember.backends.llvm.kernel_target import cpu_target
    >>> a, b, w = np.ones((4, 8), np.float32), np.ones((2, 8), np.float32), np.ones((8, 8), np.float32)
    >>> g = ember.make_graph(lambda a, b, w: (a @ w, b @ w))(a, b, w)
    >>> [e.prim.name for e in merge_shared_operand_products(g, cpu_target()).graph.equations]
    ['reshape', 'reshape', 'concatenate', 'dot_general', 'slice', 'reshape', 'slice', 'reshape']
"""
from __future__ import annotations

import heapq
import math

from ...fx.core import AbstractArray
from ...fx.ir import ClosedGraph, Equation, Graph, Var
from ...fx.prims.contraction import dot_general_p
from ...fx.prims.shape import concatenate_p, reshape_p, slice_p
from .policy import _dot_fuses, _gemm_blocks, _gemm_plan
from .target import Target


def _key(eq, target):
    """What members of one stacked product share (the right operand, contraction and
    dtypes), or None for a product that cannot join one: the left operand contracts
    its last axis, no batch axes, and the target computes it as a gemm."""
    if eq.prim is not dot_general_p:
        return None
    a, b = eq.inputs
    if type(a) is not Var or type(b) is not Var or a.aval.ndim < 1:
        return None
    (lc, rc), (lb, rb) = eq.params["dimension_numbers"]
    if tuple(lb) or tuple(rb) or tuple(lc) != (a.aval.ndim - 1,) or a.aval.size == 0:
        return None
    if _dot_fuses(eq, target) or not target.supports(eq) or _gemm_plan(eq, target) is None:
        return None
    return (b, tuple(rc), a.aval.dtype, eq.outputs[0].aval.dtype, eq.params["preferred_element_type"])


def _fills_threads(eq, target) -> bool:
    plan = _gemm_plan(eq, target)
    mb, nb = _gemm_blocks(1, plan["m"], plan["n"], plan["k"], target)
    return -(-plan["m"] // mb) * -(-plan["n"] // nb) >= target.threads


def _groups(eqs, target):
    """Lists of equation positions: products that can be one (two or more each)."""
    open_ = {}      # key -> (member positions, values computed from the members)
    done = []
    for i, eq in enumerate(eqs):
        k = _key(eq, target)
        for key, (members, tainted) in open_.items():
            if key != k and any(type(x) is Var and x in tainted for x in eq.inputs):
                tainted.update(eq.outputs)
        if k is None:
            continue
        group = open_.get(k)
        if group is not None and eq.inputs[0] in group[1]:
            done.append(group[0])   # reads a member: starts a product of its own
            group = None
        if group is None:
            group = open_[k] = ([], set())
        group[0].append(i)
        group[1].update(eq.outputs)
    done.extend(members for members, _ in open_.values())
    return [m for m in done if len(m) > 1 and not all(_fills_threads(eqs[i], target) for i in m)
            and _stacks_without_division([eqs[i].inputs[0].aval.shape for i in m])]


def _stacks_without_division(shapes) -> bool:
    """Whether the left operands stack with their rows read by plain offsets: after
    the leading axes they share, each has at most one axis longer than 1 (a
    [10, 256, k] operand beside a [256, k] one would be read as flat rows, a
    division and a remainder per element of the stacked operand)."""
    axis = len(_common_prefix([s[:-1] for s in shapes]))
    return all(sum(d != 1 for d in s[axis:-1]) <= 1 for s in shapes)


def _common_prefix(shapes):
    """The leading axes all `shapes` share (the batch of points of a vmapped function)."""
    first = shapes[0]
    n = min(len(t) for t in shapes)
    p = 0
    while p < n and all(t[p] == first[p] for t in shapes):
        p += 1
    return tuple(first[:p])


def _stacked(members, eqs):
    """The equations computing the members' outputs by one product.  The left
    operands are stacked along the first axis where they differ (a vmapped
    Laplacian's [points, 1, k] value and [points, n, 1, k] Jacobian become one
    [points, n + 1, k] operand): the stacked rows of one point stay together and
    the pieces are read without dividing flat indices."""
    first = eqs[members[0]]
    b = first.inputs[1]
    k = first.inputs[0].aval.shape[-1]
    (_, rc), _ = first.params["dimension_numbers"]
    dtype = first.inputs[0].aval.dtype
    out_dtype = first.outputs[0].aval.dtype
    rhs_free = tuple(d for i, d in enumerate(b.aval.shape) if i not in tuple(rc))
    prefix = _common_prefix([eqs[i].inputs[0].aval.shape[:-1] for i in members])
    axis = len(prefix)
    src = first.source
    new, rows = [], []
    for i in members:
        a = eqs[i].inputs[0]
        n = math.prod(a.aval.shape[axis:-1])
        shape = prefix + (n, k)
        flat = Var(AbstractArray(shape, dtype))
        new.append(Equation(reshape_p, [a], [flat], {"new_sizes": shape}, src))
        rows.append((flat, n))
    total = sum(n for _, n in rows)
    cat = Var(AbstractArray(prefix + (total, k), dtype))
    new.append(Equation(concatenate_p, [f for f, _ in rows], [cat], {"dimension": axis}, src))
    prod = Var(AbstractArray(prefix + (total,) + rhs_free, out_dtype))
    params = dict(first.params, dimension_numbers=(((axis + 1,), tuple(rc)), ((), ())))
    new.append(Equation(dot_general_p, [cat, b], [prod], params, src))
    off = 0
    for i, (_, n) in zip(members, rows):
        out = eqs[i].outputs[0]
        shape = prefix + (n,) + rhs_free
        part = Var(AbstractArray(shape, out_dtype))
        new.append(Equation(slice_p, [prod], [part],
                            {"start_indices": (0,) * axis + (off,) + (0,) * len(rhs_free),
                             "limit_indices": shape[:axis] + (off + n,) + rhs_free,
                             "strides": (1,) * len(shape)}, eqs[i].source))
        new.append(Equation(reshape_p, [part], [out], {"new_sizes": tuple(out.aval.shape)}, eqs[i].source))
        off += n
    return new


def _topological(eqs, order_key):
    """`eqs` in an order where every value is computed before it is read, keeping
    the given order (order_key per equation) wherever it already is one; equations
    that wait on each other are left out."""
    producer = {}
    for j, e in enumerate(eqs):
        for v in e.outputs:
            producer[v] = j
    waits = [0] * len(eqs)
    readers = [[] for _ in eqs]
    for j, e in enumerate(eqs):
        deps = {producer[x] for x in e.inputs if type(x) is Var and x in producer}
        waits[j] = len(deps)
        for d in deps:
            readers[d].append(j)
    ready = [(order_key[j], j) for j in range(len(eqs)) if waits[j] == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        _, j = heapq.heappop(ready)
        out.append(eqs[j])
        for r in readers[j]:
            waits[r] -= 1
            if waits[r] == 0:
                heapq.heappush(ready, (order_key[r], r))
    return out


def merge_shared_operand_products(closed: ClosedGraph, target: Target) -> ClosedGraph:
    """`closed` with products sharing their right operand computed as one product
    over their stacked left operands (the graph itself when there are none).

    Example:
        >>> import ember, numpy as np
        >>> from ember.backends.llvm.kernel_target import cpu_target
        >>> w = np.ones((8, 8), np.float32)
        >>> g = ember.make_graph(lambda a: (a @ w) @ w)(np.ones((4, 8), np.float32))
        >>> merge_shared_operand_products(g, cpu_target()) is g   # a chain: nothing to stack
        True
    """
    g = closed.graph
    eqs = g.equations
    if sum(e.prim is dot_general_p for e in eqs) < 2:
        return closed
    groups = _groups(eqs, target)
    if not groups:
        return closed
    # Each group is checked on its own (no member reads another, however indirectly),
    # but two groups can still need each other: one member of each reading a member
    # of the other (u = a @ w and y = q @ w share w, q = a @ x and z = u @ x share x:
    # the Hessian of trace(x @ x @ x)) puts each stacked product after the other. Groups join one at a time, each
    # only if the graph stays ordered (a cycle would lose its equations).
    accepted, ordered = [], None
    for group in groups:
        new, key = _merged_equations(eqs, accepted + [group])
        order = _topological(new, key)
        if len(order) == len(new):
            accepted.append(group)
            ordered = order
    if not accepted:
        return closed
    return ClosedGraph(Graph(g.constvars, g.inputs, ordered, g.outputs), closed.consts,
                       closed.in_tree, closed.out_tree)


def _merged_equations(eqs, groups):
    """The equations with each group's members replaced by its stacked product (at
    its last member's position; readers of an earlier member now follow it), and
    their order keys for `_topological`."""
    at_last = {m[-1]: m for m in groups}
    members = {i for m in groups for i in m}
    new, key = [], []
    for i, e in enumerate(eqs):
        if i in at_last:
            for s in _stacked(at_last[i], eqs):
                new.append(s)
                key.append((i, len(key)))
        elif i not in members:
            new.append(e)
            key.append((i, len(key)))
    return new, key
