"""Pretty printing of graphs (jaxpr-like text that `ember.fx.parse` reads back) and Graphviz DOT export.

The text is compact and unambiguous: every param prints in a small literal
grammar (ints, floats incl. `nan`/`inf`/`-0.0`, bools, None, bare or quoted
strings, dtypes, tuples, named tuples `Name(field=value,...)`, types
`f32[3]`, sub-graphs, registered callables `@name`), a literal whose dtype is
not the default for its Python kind (float32, int32, bool) carries it
(`0.0:f64`), and a weakly typed value is marked with `~` (`a:f32[]~`).

Example:
    >>> import ember
    >>> print(ember.make_graph(lambda x: x * 2.0)(1.0))
    { lambda ; a:f32[]~. let
        b:f32[]~ = mul a 2.0:f32~
      in (b,) }
"""
from __future__ import annotations

import json
import math
import re

import numpy as np

from ..dtypes import short_name
from .ir import ClosedGraph, Graph, Literal, Var

# Words the parser reads as literals or keywords: a variable is never given one.
RESERVED = frozenset({"in", "let", "lambda", "nan", "inf", "True", "False", "None"})
_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")


class _Names:
    def __init__(self):
        self.names: dict[Var, str] = {}
        self.next = 0

    def __call__(self, v) -> str:
        if isinstance(v, Literal):
            return format_literal(v)
        n = self.names.get(v)
        if n is None:
            n = _encode(self.next)
            self.next += 1
            while n in RESERVED:
                n = _encode(self.next)
                self.next += 1
            self.names[v] = n
        return n


def _encode(i: int) -> str:
    s = ""
    i += 1
    while i > 0:
        i, r = divmod(i - 1, 26)
        s = chr(ord("a") + r) + s
    return s


def format_type(aval) -> str:
    """`f32[3,4]`, with `~` appended for a weak type."""
    return f"{aval}~" if aval.weak_type else str(aval)


def _short(dtype) -> str:
    from ..dtypes import short_name
    return short_name(dtype)


def format_number(v, dtype=None) -> str:
    """A Python/numpy scalar's exact spelling: `repr` of the float (or int), and
    `re+imj` for complex values; `dtype` (default: the value's own) says which.

    Example:
        >>> format_number(-0.0), format_number(1 + 2j), format_number(True)
        ('-0.0', '1.0+2.0j', 'True')
    """
    from .. import dtypes as _dt
    if dtype is None:
        dtype = np.asarray(v).dtype if isinstance(v, np.generic) else None
    if dtype is not None and dtype != _dt.float0:
        kind = _dt.kind(dtype)
    else:
        kind = {bool: "b", int: "i", float: "f", complex: "c"}.get(type(v), "f")
    if kind == "b":
        return str(bool(v))
    if kind == "c":
        re_, im = float(np.real(v)), float(np.imag(v))
        sign = "-" if math.copysign(1.0, im) < 0 else "+"
        return f"{re_!r}{sign}{abs(im)!r}j"
    if kind == "f":
        f = float(v)
        if f != f and dtype is not None:
            # NaN payloads (and the sign) are data: a non-default NaN prints its bits
            bits = np.asarray(v, dtype=dtype).tobytes()
            if bits != np.asarray(np.nan, dtype=dtype).tobytes():
                return "nan0x" + int.from_bytes(bits, "little").to_bytes(len(bits), "big").hex()
        return repr(f)
    return str(int(v))


_DEFAULT_LITERAL = {"b": "bool", "i": "i32", "f": "f32"}  # numpy kind -> unmarked dtype


def format_literal(lit: Literal) -> str:
    v = lit.value
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    a = lit.aval
    s = format_number(v, a.dtype)
    short = _short(a.dtype)
    if _DEFAULT_LITERAL.get(a.dtype.kind) != short or a.weak_type:
        s += ":" + short + ("~" if a.weak_type else "")
    return s


def format_string(s: str) -> str:
    """Bare when it is an identifier the parser cannot mistake for a dtype or a
    keyword, JSON-quoted otherwise."""
    from .parse import DTYPES
    if _BARE.match(s) and s not in RESERVED and s not in DTYPES:
        return s
    return json.dumps(s)


def _is_graph(v) -> bool:
    return isinstance(v, (ClosedGraph, Graph))


def _value_tasks(v, indent: int) -> list:
    """The pieces of one param value: strings, and ("value"|"graph", x, indent)
    tasks that the explicit-stack renderer expands in place."""
    from .core import AbstractArray
    from .rule_graph import TracedRule
    if _is_graph(v):
        return ["\n", ("graph", v, indent + 4)]
    if isinstance(v, TracedRule):
        parts = [f"TracedRule(kind={v.kind}"]
        for k, x in v.meta_items():
            parts += [f",{k}=", ("value", x, indent)]
        return parts + [",graph=", ("value", v.graph, indent), ")"]
    if isinstance(v, tuple) and hasattr(type(v), "_fields"):
        parts = [type(v).__name__ + "("]
        for i, (k, x) in enumerate(zip(v._fields, v)):
            parts += [("," if i else "") + k + "=", ("value", x, indent)]
        return parts + [")"]
    if isinstance(v, tuple):
        sep = ", " if any(_is_graph(w) for w in v) else ","
        parts = ["("]
        for i, w in enumerate(v):
            if i:
                parts.append(sep)
            parts.append(("value", w, indent))
        return parts + [",)" if len(v) == 1 else ")"]
    if v is None:
        return ["None"]
    if isinstance(v, (bool, int, float, complex)):
        return [format_number(v, np.float64 if isinstance(v, float) else None)]
    if isinstance(v, str):
        return [format_string(v)]
    if isinstance(v, np.dtype):
        return [_short(v)]
    if isinstance(v, np.generic):
        return [format_number(v) + ":" + _short(v.dtype)]
    if isinstance(v, AbstractArray):
        return [format_type(v)]
    if callable(v) and hasattr(v, "__name__"):
        return ["@" + v.__name__.replace(" ", "")]
    # an object the grammar has no spelling for: printed, and refused by the parser
    return ["!" + json.dumps(str(v))]


def _graph_tasks(graph: Graph, indent: int, source: bool = False) -> list:
    names = _Names()
    pad = " " * indent
    cv = " ".join(f"{names(v)}:{format_type(v.aval)}" for v in graph.constvars)
    iv = " ".join(f"{names(v)}:{format_type(v.aval)}" for v in graph.inputs)
    parts = [f"{pad}{{ lambda {cv}{' ' if cv else ''}; {iv}. let\n"]
    for eq in graph.equations:
        ins = " ".join(names(a) for a in eq.inputs)
        outs = " ".join(f"{names(v)}:{format_type(v.aval)}" for v in eq.outputs)
        parts.append(f"{pad}    {outs} = {eq.prim.name}")
        if eq.params:
            parts.append("[")
            for i, (k, v) in enumerate(sorted(eq.params.items())):
                parts += [(" " if i else "") + k + "=", ("value", v, indent + 4)]
            parts.append("]")
        note = f"  # {_short_source(eq.source)}" if source and eq.source else ""
        parts.append((" " + ins if ins else "") + note + "\n")
    outs = ", ".join(names(a) for a in graph.outputs)
    if len(graph.outputs) == 1:
        outs += ","
    parts.append(f"{pad}  in ({outs}) }}")
    return parts


def _short_source(src: str) -> str:
    # 'file:line (function)' -> 'file:line', the file relative to the working directory
    # when it lies below it (the comment stays short)
    import os
    loc = src.split(" (", 1)[0]
    try:
        rel = os.path.relpath(loc)
    except ValueError:
        return loc
    return loc if rel.startswith("..") else rel


def _render(first: list, seen: list | None = None, source: bool = False) -> str:
    out: list[str] = []
    stack = list(reversed(first))
    while stack:
        t = stack.pop()
        if type(t) is str:
            out.append(t)
            continue
        kind, x, indent = t
        if kind == "graph":
            if seen is not None:
                seen.append(x)
            stack.extend(reversed(_graph_tasks(x.graph if isinstance(x, ClosedGraph) else x, indent, source)))
        else:
            stack.extend(reversed(_value_tasks(x, indent)))
    return "".join(out)


def format_value(v, indent: int = 0) -> str:
    """One param value in the printer's literal grammar.

    Example:
        >>> format_value((1, -0.0, "mode", None))
        '(1,-0.0,mode,None)'
    """
    return _render([("value", v, indent)])


def format_equation(eq, names=None, indent: int = 0) -> str:
    """One equation as a line (sub-graphs indented below it)."""
    g = Graph([], [a for a in eq.inputs if isinstance(a, Var)], [eq], [])
    text = _render([("graph", g, indent)]).split("\n", 1)[1]
    return text.rsplit("\n", 1)[0][indent + 4:]


def format_graph(graph: Graph, consts=None, indent: int = 0, names=None, source: bool = False) -> str:
    """Render a graph as text; `consts` values are not printed, only their types.
    `source=True` ends each equation's line with `# file:line` of the user's code
    that made it (a comment: `ember.fx.parse` skips it)."""
    return _render([("graph", graph, indent)], source=source)


def consts_in_order(closed) -> list:
    """The const values of `closed` and of every sub-graph, in the order the printed
    text lists their variables: what `ember.fx.parse(text, consts=...)` takes.

    Example:
        >>> import ember, ember.numpy as enp
        >>> w = enp.ones(2)
        >>> len(consts_in_order(ember.make_graph(lambda x: x * w)(enp.ones(2))))
        1
    """
    seen: list = []
    _render([("graph", closed, 0)], seen)
    return [c for g in seen if isinstance(g, ClosedGraph) for c in g.consts]


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
