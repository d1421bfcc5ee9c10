"""Dead-code elimination: drop equations whose outputs are never used (effectful
equations, such as `ember.debug.print`'s callbacks, are always kept).

Example:
    >>> import ember
    >>> g = ember.make_graph(lambda x: (x * 2.0, x + 1.0)[0])(1.0)
    >>> len(dce(g.graph).equations)
    1
"""
from __future__ import annotations

from ..ir import ClosedGraph, Graph, Var


def dce(graph: Graph) -> Graph:
    """Return a graph without equations that do not contribute to the outputs."""
    live = {a for a in graph.outputs if type(a) is Var}
    kept = []
    for eq in reversed(graph.equations):
        if eq.prim.effectful or any(v in live for v in eq.outputs):
            kept.append(eq)
            live.update(a for a in eq.inputs if type(a) is Var)
    kept.reverse()
    if len(kept) == len(graph.equations):
        return graph
    return Graph(graph.constvars, graph.inputs, kept, graph.outputs)


def dce_closed(closed: ClosedGraph) -> ClosedGraph:
    g = dce(closed.graph)
    return closed if g is closed.graph else ClosedGraph(g, closed.consts, closed.in_tree, closed.out_tree)
