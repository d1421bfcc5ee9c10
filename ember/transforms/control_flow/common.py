"""Helpers shared by the control-flow primitives: reshaping graphs."""
from __future__ import annotations

from ...fx.ir import ClosedGraph, eval_graph
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
