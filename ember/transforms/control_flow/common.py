"""Helpers shared by the control-flow primitives: tracing bodies and reshaping graphs."""
from __future__ import annotations

from ...fx.core import get_aval
from ...fx.ir import ClosedGraph, eval_graph
from ...fx.staging import consts_to_inputs, trace_flat
from ...tree import tree_flatten, tree_unflatten


def trace_body(fun, in_tree, in_avals, what: str):
    """Stage `fun` (taking pytrees) over abstract flat inputs.

    Returns (const-free ClosedGraph taking consts + inputs, consts, out_tree).
    """
    box = []

    def flat(*xs):
        out = fun(*tree_unflatten(in_tree, list(xs)))
        leaves, tree = tree_flatten(out)
        box.append(tree)
        return leaves

    closed = trace_flat(flat, in_avals)
    g, consts = consts_to_inputs(closed)
    return g, consts, box[0]


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


def avals_equal(a, b) -> bool:
    return len(a) == len(b) and all(x.shape == y.shape and x.dtype == y.dtype for x, y in zip(a, b))


def fmt_avals(avals) -> str:
    return "(" + ", ".join(a.str_user() for a in avals) + ")"


def leaves_avals(tree):
    leaves, t = tree_flatten(tree)
    return leaves, t, [get_aval(x) for x in leaves]
