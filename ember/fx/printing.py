"""Pretty printing of graphs (jaxpr-like text) and Graphviz DOT export.

Example:
    >>> import ember
    >>> print(ember.make_graph(lambda x: x * 2.0)(1.0))
    { lambda ; a:f32[]. let
        b:f32[] = mul a 2.0
      in (b,) }
"""
from __future__ import annotations

import numpy as np

from ..dtypes import short_name
from .ir import ClosedGraph, Graph, Literal, Var


class _Names:
    def __init__(self):
        self.names: dict[Var, str] = {}

    def __call__(self, v) -> str:
        if isinstance(v, Literal):
            return repr(v)
        n = self.names.get(v)
        if n is None:
            n = self.names[v] = _encode(len(self.names))
        return n


def _encode(i: int) -> str:
    s = ""
    i += 1
    while i > 0:
        i, r = divmod(i - 1, 26)
        s = chr(ord("a") + r) + s
    return s


def _fmt_param(v, indent: int) -> str:
    if isinstance(v, (ClosedGraph, Graph)):
        g = v.graph if isinstance(v, ClosedGraph) else v
        consts = v.consts if isinstance(v, ClosedGraph) else None
        inner = format_graph(g, consts, indent + 4)
        return "\n" + inner
    if isinstance(v, tuple) and any(isinstance(w, (ClosedGraph, Graph)) for w in v):
        return "(" + ", ".join(_fmt_param(w, indent) for w in v) + ")"
    if isinstance(v, np.dtype):
        return short_name(v)
    if callable(v) and hasattr(v, "__name__"):
        return v.__name__
    return str(v).replace(" ", "")


def format_equation(eq, names=None, indent: int = 0) -> str:
    names = names or _Names()
    ins = " ".join(names(a) for a in eq.inputs)
    outs = " ".join(f"{names(v)}:{v.aval}" for v in eq.outputs)
    params = ""
    if eq.params:
        params = "[" + " ".join(f"{k}={_fmt_param(v, indent)}" for k, v in sorted(eq.params.items())) + "]"
    return f"{outs} = {eq.prim.name}{params} {ins}".rstrip()


def format_graph(graph: Graph, consts=None, indent: int = 0, names=None) -> str:
    """Render a graph as text; `consts` values are not printed, only their types."""
    names = names or _Names()
    pad = " " * indent
    cv = " ".join(f"{names(v)}:{v.aval}" for v in graph.constvars)
    iv = " ".join(f"{names(v)}:{v.aval}" for v in graph.inputs)
    lines = [f"{pad}{{ lambda {cv}{' ' if cv else ''}; {iv}. let"]
    for eq in graph.equations:
        lines.append(f"{pad}    {format_equation(eq, names, indent + 4)}")
    outs = ", ".join(names(a) for a in graph.outputs)
    if len(graph.outputs) == 1:
        outs += ","
    lines.append(f"{pad}  in ({outs}) }}")
    return "\n".join(lines)


def to_dot(graph: Graph) -> str:
    """Graphviz DOT text of a graph: one node per equation and per input.

    Example:
        >>> import ember
        >>> "digraph" in ember.make_graph(lambda x: x + 1.0)(1.0).to_dot()
        True
    """
    names = _Names()
    lines = ["digraph ember {", "  rankdir=TB;", "  node [shape=box, fontname=monospace];"]
    producer = {}
    for v in graph.constvars + graph.inputs:
        nid = f"in_{names(v)}"
        producer[v] = nid
        lines.append(f'  {nid} [label="{names(v)}: {v.aval}", shape=ellipse];')
    for i, eq in enumerate(graph.equations):
        nid = f"eq{i}"
        label = f"{eq.prim.name}\\n" + ", ".join(f"{names(v)}: {v.aval}" for v in eq.outputs)
        lines.append(f'  {nid} [label="{label}"];')
        for a in eq.inputs:
            if isinstance(a, Var) and a in producer:
                lines.append(f"  {producer[a]} -> {nid};")
        for v in eq.outputs:
            producer[v] = nid
    for j, a in enumerate(graph.outputs):
        lines.append(f'  out{j} [label="out {j}", shape=ellipse];')
        if isinstance(a, Var) and a in producer:
            lines.append(f"  {producer[a]} -> out{j};")
    lines.append("}")
    return "\n".join(lines)
