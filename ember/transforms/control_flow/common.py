"""Helpers shared by the control-flow primitives: reshaping graphs, weak loop carries."""
from __future__ import annotations

from ... import dtypes as _dt
from ...array import Array
from ...fx.core import eval_trace, get_aval, set_current_trace
from ...fx.ir import ClosedGraph, eval_graph
from ...fx.prims.convert import convert_element_type
from ...fx.staging import trace_flat


def reorder_graph(closed: ClosedGraph, in_perm, out_perm=None) -> ClosedGraph:
    """A graph whose i-th input is `closed`'s input in_perm[i] (and outputs likewise)."""
    n = len(closed.in_avals)
    inv = [0] * n
    for i, p in enumerate(in_perm):
        inv[p] = i
    avals = [closed.in_avals[p] for p in in_perm]

    def fun(*xs):
        args = [xs[inv[j]] for j in range(n)]
        outs = eval_graph(closed.graph, closed.consts, *args)
        return outs if out_perm is None else [outs[p] for p in out_perm]

    return trace_flat(fun, avals)


def graph_with_extra_inputs(closed: ClosedGraph, extra_avals, position: int) -> ClosedGraph:
    """`closed` with unused inputs of `extra_avals` inserted at `position`."""
    avals = list(closed.in_avals)
    k = len(extra_avals)
    new_avals = avals[:position] + list(extra_avals) + avals[position:]

    def fun(*xs):
        args = list(xs[:position]) + list(xs[position + k:])
        return eval_graph(closed.graph, closed.consts, *args)

    return trace_flat(fun, new_avals)


def trace_weak_carry(flat, c_leaves, c_avals, x_avals, box):
    """Trace a loop body `flat(*carry, *xs)` whose carry may start weakly typed (a Python
    scalar), settling each weak carry's type as JAX does (`_promote_weak_typed_inputs`):
    a weak carry stays weak while the body returns it weak with the same dtype; otherwise
    the init is converted to the promoted dtype of (init, body output), strongly typed,
    and the body retraced (`fori_loop(0, n, lambda i, v: v + h, 0.0)` with a float16 `h`
    carries float16; `fori_loop(0, n, lambda i, v: v + 0.5, 0)` carries float32).

    Returns (closed body, carry leaves, carry avals); `box` keeps the last trace's
    output trees first.  Each retrace makes at least one carry strong, so it ends.
    """
    while True:
        box.clear()
        closed = trace_flat(flat, list(c_avals) + list(x_avals))
        outs = closed.out_avals[:len(c_avals)]
        changed = False
        for i, (a, o) in enumerate(zip(c_avals, outs)):
            if not a.weak_type or (o.dtype == a.dtype and o.weak_type):
                continue
            # a shape mismatch is reported by the caller's carry check, on the strong type
            dt = _dt.promote([a.dtype, o.dtype], [True, o.weak_type])[0] if o.shape == a.shape else a.dtype
            v = c_leaves[i]
            if isinstance(v, Array):   # a concrete init (a Python scalar): convert it now,
                with set_current_trace(eval_trace()):   # not as a staged equation
                    v = convert_element_type(v, dt)
            else:
                v = convert_element_type(v, dt)
            c_leaves[i] = v
            c_avals[i] = get_aval(c_leaves[i])
            changed = True
        if not changed:
            return closed, c_leaves, c_avals
