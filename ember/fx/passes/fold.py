"""Constant folding: evaluate equations whose inputs are all literals.

Only small results (<= 1 element, i.e. scalars) are folded back into
literals, so folding never bloats a graph with large constants.

Example:
    >>> import ember
    >>> g = ember.make_graph(lambda x: x * (2.0 * 3.0))(1.0)
    >>> len(fold_constants(g.graph).equations)
    1
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Literal, Var, subgraphs


def fold_constants(graph: Graph) -> Graph:
    env: dict[Var, Literal] = {}
    out_eqs = []
    changed = False
    for eq in graph.equations:
        inputs = [env.get(a, a) if type(a) is Var else a for a in eq.inputs]
        if (inputs and all(type(a) is Literal for a in inputs) and not eq.prim.multiple_results
                and not subgraphs(eq.params) and eq.prim.impl is not None
                and eq.outputs[0].aval.size <= 1 and eq.outputs[0].aval.ndim == 0):
            val = np.asarray(eq.prim.impl(*[a.value for a in inputs], **eq.params))
            env[eq.outputs[0]] = Literal(val[()], eq.outputs[0].aval)
            changed = True
            continue
        if inputs != eq.inputs:
            eq = eq.replace(inputs=inputs)
            changed = True
        out_eqs.append(eq)
    if not changed:
        return graph
    outs = [env.get(a, a) if type(a) is Var else a for a in graph.outputs]
    return Graph(graph.constvars, graph.inputs, out_eqs, outs)
