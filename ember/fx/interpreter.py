"""A fast graph interpreter over numpy buffers (the reference executable).

Unlike `eval_graph`, it calls each primitive's numpy impl directly, with no
tracing machinery, so it is the ground truth for compiled backends.
"""
from __future__ import annotations

from .ir import Graph, Literal


def run_graph_numpy(graph: Graph, consts, args) -> list:
    env = {}
    for v, x in zip(graph.constvars, consts):
        env[v] = x
    for v, x in zip(graph.inputs, args):
        env[v] = x
    for eq in graph.equations:
        ins = [a.value if type(a) is Literal else env[a] for a in eq.inputs]
        out = eq.prim.impl(*ins, **eq.params)
        if eq.prim.multiple_results:
            for v, o in zip(eq.outputs, out):
                env[v] = o
        else:
            env[eq.outputs[0]] = out
    return [a.value if type(a) is Literal else env[a] for a in graph.outputs]
