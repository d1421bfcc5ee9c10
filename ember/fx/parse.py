"""The IR text parser: `ember.fx.parse(str(graph))` rebuilds the graph that printed it.

Primitives are looked up by name in the registry (`fx.core.PRIMITIVES`) and
params are read by the printer's small literal grammar (see
`ember.fx.printing`); nothing is evaluated or imported by name, so parsing
untrusted text runs no code.  Every equation is checked against its
primitive's abstract evaluation as it is read.  `structurally_equal` is the
graph equality the round trip is tested with: the same inputs, outputs and
equations up to a renaming of variables, with equal params (sub-graphs
compared the same way, floats by their bits).

Example:
    >>> import ember, ember.fx
    >>> g = ember.make_graph(lambda x: ember.numpy.sin(x) * -0.0)(1.0)
    >>> h = ember.fx.parse(str(g))
    >>> structurally_equal(g, h)
    True
"""
from __future__ import annotations

import json
import re
import sys
import types

import numpy as np

from .. import dtypes as _dt
from .core import PRIMITIVES, AbstractArray
from . import trampoline
from .ir import ClosedGraph, Equation, Graph, Literal, Var, constant_key

DTYPES = {_dt.short_name(d): d for d in _dt.ALL_DTYPES}
DTYPES["float0"] = _dt.float0


class ParseError(ValueError):
    """The text is not a graph this parser can read; says where and why.

    Example:
        >>> try:
        ...     parse("{ lambda ; a:f32[]. let b:f32[] = nope a in (b,) }")
        ... except ParseError as e:
        ...     print(str(e).split(": ")[-1])
        unknown primitive 'nope' (not in ember.fx.core.PRIMITIVES)
    """


_NUM = r"(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|nan0x[0-9a-f]+|(?:inf|nan)(?![A-Za-z0-9_]))"
_TOKEN = re.compile(rf"""
 (?P<ws>\s+|\#[^\n]*)
|(?P<str>"(?:[^"\\]|\\.)*")
|(?P<num>[-+]?{_NUM}(?:[-+]{_NUM}j)?)
|(?P<name>[A-Za-z_][A-Za-z0-9_.]*)
|(?P<at>@[A-Za-z_][A-Za-z0-9_.]*)
|(?P<punct>[{{}}()\[\]=:;,~.!])
""", re.VERBOSE)


class _Tok:
    __slots__ = ("kind", "text", "pos")

    def __init__(self, kind, text, pos):
        self.kind, self.text, self.pos = kind, text, pos


def _tokenize(text: str) -> list:
    toks, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ParseError(f"cannot read the IR text at {_where(text, pos)}: unexpected "
                             f"character {text[pos]!r}")
        if m.lastgroup != "ws":
            toks.append(_Tok(m.lastgroup, m.group(), pos))
        pos = m.end()
    toks.append(_Tok("end", "", len(text)))
    return toks


def _where(text, pos) -> str:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    src = text.splitlines()[line - 1] if text.splitlines() else ""
    return f"line {line}, column {col}: {src.strip()!r}"


def _from_bits(s: str, dtype):
    """A `nan0x...` spelling: the value with exactly these bits."""
    d = np.dtype(dtype)
    raw = bytes.fromhex(s[len("nan0x"):])
    if len(raw) != d.itemsize:
        raise ValueError(f"{s} has {len(raw)} bytes, {d.name} has {d.itemsize}")
    return np.frombuffer(raw[::-1], dtype=d)[0]


def _number(s: str):
    if s.startswith("nan0x"):
        return float("nan")
    if s.endswith("j"):
        m = re.fullmatch(rf"([-+]?{_NUM})([-+]{_NUM})j", s)
        return complex(float(m.group(1)), float(m.group(2)))
    if re.fullmatch(r"[-+]?\d+", s):
        return int(s)
    return float(s)


def _named_types() -> dict:
    # the param types with a spelling `Name(field=value, ...)`: a fixed table, never a lookup
    # of arbitrary names
    from .prims.conv import ConvDimensionNumbers
    from .prims.indexing import GatherDimensionNumbers, ScatterDimensionNumbers
    return {c.__name__: c for c in (ConvDimensionNumbers, GatherDimensionNumbers,
                                    ScatterDimensionNumbers)}


# Callables a param may name (`@name`), registered by the layers that define them (the
# checkpoint policies live in transforms, above fx): a fixed table, never a lookup of
# arbitrary names.
NAMED_CALLABLES: dict = {}


def register_named_callable(name: str, fn) -> None:
    """Let params spell `fn` as `@name` in IR text (e.g. a checkpoint policy).

    Example:
        >>> register_named_callable("my_policy", len); NAMED_CALLABLES.pop("my_policy") is len
        True
    """
    NAMED_CALLABLES[name] = fn


def _named_callables() -> dict:
    return NAMED_CALLABLES


_GRAPH, _VALUE = "graph", "value"


class _Parser:
    def __init__(self, text: str, consts):
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0
        self.consts = None if consts is None else list(consts)
        self.nconst = 0

    # --- tokens -------------------------------------------------------------------
    def peek(self, k: int = 0) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> _Tok:
        t = self.toks[self.i]
        self.i = min(self.i + 1, len(self.toks) - 1)
        return t

    def error(self, msg, tok=None) -> ParseError:
        tok = tok or self.peek()
        return ParseError(f"cannot read the IR text at {_where(self.text, tok.pos)}: {msg}")

    def expect(self, text: str) -> _Tok:
        t = self.next()
        if t.text != text or t.kind == "str":
            raise self.error(f"expected {text!r}, found {t.text or 'the end of the text'!r}", t)
        return t

    def is_(self, text, k=0) -> bool:
        t = self.peek(k)
        return t.text == text and t.kind != "str"

    # --- pieces -------------------------------------------------------------------
    def dtype(self):
        t = self.next()
        d = DTYPES.get(t.text) if t.kind == "name" else None
        if d is None:
            raise self.error(f"expected a dtype ({', '.join(DTYPES)}), found {t.text!r}", t)
        return d

    def type_(self) -> AbstractArray:
        d = self.dtype()
        self.expect("[")
        dims = []
        while not self.is_("]"):
            t = self.next()
            if t.kind != "num" or not re.fullmatch(r"\d+", t.text):
                raise self.error(f"expected a dimension size, found {t.text!r}", t)
            dims.append(int(t.text))
            if not self.is_("]"):
                self.expect(",")
        self.expect("]")
        weak = self.is_("~")
        if weak:
            self.next()
        return AbstractArray(tuple(dims), d, weak)

    def binders(self, scope, stop: str, define: bool = True) -> list:
        """`name:type ...` up to `stop`: (name, Var) pairs, added to `scope` if `define`."""
        out = []
        while not self.is_(stop):
            t = self.next()
            if t.kind != "name":
                raise self.error(f"expected a variable name, found {t.text!r}", t)
            if t.text in scope or any(n == t.text for n, _ in out):
                raise self.error(f"variable {t.text} is defined twice", t)
            self.expect(":")
            out.append((t.text, Var(self.type_())))
        if define:
            scope.update(out)
        return out

    def literal(self) -> Literal:
        t = self.next()
        if t.kind == "num":
            value = _number(t.text)
        elif t.text in ("True", "False"):
            value = t.text == "True"
        else:
            raise self.error(f"expected a literal, found {t.text!r}", t)
        kind = {bool: "b", int: "i", float: "f", complex: "c"}[type(value)]
        dtype, weak = {"b": _dt.bool_, "i": _dt.int32, "f": _dt.float32, "c": _dt.complex64}[kind], False
        if self.is_(":"):
            self.next()
            dtype = self.dtype()
            weak = self.is_("~")
            if weak:
                self.next()
        try:
            v = _from_bits(t.text, dtype) if t.text.startswith("nan0x") else np.asarray(value, dtype=dtype)[()]
        except (OverflowError, ValueError, TypeError):
            raise self.error(f"literal {t.text} does not fit {_dt.canonicalize(dtype).name}", t) from None
        return Literal(v, AbstractArray((), dtype, weak))

    def atom(self, scope):
        t = self.peek()
        if t.kind == "name" and t.text not in ("True", "False"):
            self.next()
            v = scope.get(t.text)
            if v is None:
                raise self.error(f"variable {t.text} is used before it is defined", t)
            return v
        return self.literal()

    def at_equation_end(self) -> bool:
        t = self.peek()
        if t.kind == "end" or self.is_("=") or self.is_("}"):
            return True
        if t.kind == "name" and t.text not in ("True", "False") and self.is_(":", 1):
            return True   # the next equation's first binder
        return t.text == "in" and self.is_("(", 1)

    # --- the coroutines the driver runs on an explicit stack -----------------------
    def graph(self):
        self.expect("{")
        self.expect("lambda")
        scope: dict = {}
        constvars = [v for _, v in self.binders(scope, ";")]
        self.expect(";")
        inputs = [v for _, v in self.binders(scope, ".")]
        self.expect(".")
        self.expect("let")
        eqs = []
        while not (self.peek().text == "in" and self.is_("(", 1)):
            outs_tok = self.peek()
            named = self.binders(scope, "=", define=False)
            out_binders = [v for _, v in named]
            self.expect("=")
            pt = self.next()
            prim = PRIMITIVES.get(pt.text) if pt.kind == "name" else None
            if prim is None:
                raise self.error(f"unknown primitive {pt.text!r} (not in ember.fx.core.PRIMITIVES)", pt)
            params = {}
            if self.is_("["):
                self.next()
                while not self.is_("]"):
                    kt = self.next()
                    if kt.kind != "name":
                        raise self.error(f"expected a param name, found {kt.text!r}", kt)
                    self.expect("=")
                    params[kt.text] = yield _VALUE
                self.expect("]")
            ins = []
            while not self.at_equation_end():
                ins.append(self.atom(scope))
            self.check(prim, ins, out_binders, params, outs_tok)
            scope.update(named)
            eqs.append(Equation(prim, ins, out_binders, params))
        self.expect("in")
        self.expect("(")
        outs = []
        while not self.is_(")"):
            outs.append(self.atom(scope))
            if not self.is_(")"):
                self.expect(",")
        self.expect(")")
        self.expect("}")
        consts = []
        if constvars:
            if self.consts is None:
                raise self.error(f"the graph has {len(constvars)} consts, whose values are not in "
                                 f"the text; pass them: parse(text, consts=[...])")
            consts = self.consts[self.nconst:self.nconst + len(constvars)]
            self.nconst += len(constvars)
            if len(consts) != len(constvars):
                raise ParseError(f"parse: the text has more consts than the {len(self.consts)} "
                                 f"values passed in consts=")
        return ClosedGraph(Graph(constvars, inputs, eqs, outs), consts)

    def check(self, prim, ins, outs, params, tok):
        if prim.abstract_eval is None:
            raise self.error(f"primitive {prim.name} has no abstract evaluation", tok)
        try:
            got = prim.abstract_eval(*[a.aval for a in ins], **params)
        except Exception as e:  # a wrong equation in the text: say which, with the rule's message
            raise self.error(f"{prim.name} does not accept these operands/params: {e}", tok) from None
        got = got if prim.multiple_results else [got]
        if len(got) != len(outs) or any(a.shape != v.aval.shape or a.dtype != v.aval.dtype
                                        for a, v in zip(got, outs)):
            raise self.error(f"{prim.name} gives {', '.join(a.str_user() for a in got)} but the text "
                             f"says {', '.join(v.aval.str_user() for v in outs)}", tok)

    def value(self):
        t = self.next()
        if t.kind == "num":
            v = _number(t.text)
            if self.is_(":"):   # a numpy scalar: value:dtype
                self.next()
                d = self.dtype()
                try:
                    v = _from_bits(t.text, d) if t.text.startswith("nan0x") else np.asarray(v, dtype=d)[()]
                except (OverflowError, ValueError, TypeError) as e:
                    raise self.error(f"value {t.text}: {e}", t) from None
            elif t.text.startswith("nan0x"):
                v = float(_from_bits(t.text, np.float64))
            return v
        if t.kind == "str":
            return json.loads(t.text)
        if t.text == "{":
            self.i -= 1
            return (yield _GRAPH)
        if t.text == "(":
            items = []
            while not self.is_(")"):
                items.append((yield _VALUE))
                if not self.is_(")"):
                    self.expect(",")
            self.expect(")")
            return tuple(items)
        if t.kind == "at":
            fns = _named_callables()
            fn = fns.get(t.text[1:])
            if fn is None:
                raise self.error(f"param names the Python function {t.text[1:]!r}, which the text "
                                 f"cannot carry (known: {', '.join(fns)}); for custom_jvp/custom_vjp "
                                 f"rules, print the graph from ember.export.trace_custom_rules(graph)", t)
            if self.is_("("):
                self.next()
                args = []
                while not self.is_(")"):
                    args.append((yield _VALUE))
                    if not self.is_(")"):
                        self.expect(",")
                self.expect(")")
                return fn(*args)
            return fn
        if t.text == "!":
            raise self.error("this param is an object the IR text has no spelling for", t)
        if t.kind != "name":
            raise self.error(f"expected a param value, found {t.text!r}", t)
        if t.text in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[t.text]
        if t.text in DTYPES:
            if self.is_("["):
                self.i -= 1
                return self.type_()
            return DTYPES[t.text]
        if self.is_("(") and t.text == "TracedRule":
            from .rule_graph import TracedRule
            fields = yield _Fields(self)
            kind = fields.pop("kind", None)
            graph = fields.pop("graph", None)
            try:
                return TracedRule(kind, graph, **fields)
            except (TypeError, ValueError) as e:
                raise self.error(str(e), t) from None
        if self.is_("("):
            cls = _named_types().get(t.text)
            if cls is None:
                raise self.error(f"unknown param type {t.text}", t)
            fields = yield _Fields(self)
            try:
                return cls(**fields)
            except TypeError as e:
                raise self.error(f"{t.text}: {e}", t) from None
        return t.text


class _Fields:
    """A request to the driver: read `(field=value, ...)` and send back the dict."""
    __slots__ = ("parser",)

    def __init__(self, parser):
        self.parser = parser

    def run(self):
        p = self.parser
        p.expect("(")
        fields = {}
        while not p.is_(")"):
            kt = p.next()
            if kt.kind != "name":
                raise p.error(f"expected a field name, found {kt.text!r}", kt)
            p.expect("=")
            fields[kt.text] = yield _VALUE
            if not p.is_(")"):
                p.expect(",")
        p.expect(")")
        return fields


def _drive(parser: _Parser, first):
    """Run the parser's coroutines on an explicit stack (no recursion, however
    deeply sub-graphs and tuples nest)."""
    def spawn(req):
        if req == _GRAPH:
            return parser.graph()
        if req == _VALUE:
            return parser.value()
        return req.run()
    return trampoline.run(first, spawn)


def parse(text: str, consts=None) -> ClosedGraph:
    """Read the text `print(graph)` shows back into a ClosedGraph.

    `consts` are the values of the graph's consts (they are not in the text), in
    the order their variables appear, sub-graphs included
    (`ember.fx.printing.consts_in_order(graph)`).

    Example:
        >>> import ember, ember.fx
        >>> g = ember.fx.parse('''{ lambda ; a:f32[3]. let
        ...     b:f32[3] = mul a 2.0
        ...   in (b,) }''')
        >>> [e.prim.name for e in g.equations], g.in_avals[0].str_user()
        (['mul'], 'float32[3]')
    """
    if not isinstance(text, str):
        raise TypeError(f"ember.fx.parse: expected the IR text (a str), got {type(text).__name__}")
    p = _Parser(text, consts)
    g = _drive(p, p.graph())
    if p.peek().kind != "end":
        raise p.error("unexpected text after the graph")
    if p.consts is not None and p.nconst != len(p.consts):
        raise ParseError(f"parse: {len(p.consts)} values were passed in consts= but the text has "
                         f"{p.nconst} consts")
    return g


# --- structural equality ----------------------------------------------------------

def graph_difference(a, b) -> str | None:
    """None when graphs `a` and `b` are equal up to renaming variables, else a
    description of the first difference.  Iterative over nested sub-graphs.

    Example:
        >>> import ember
        >>> f = ember.make_graph(lambda x: x + 1.0)
        >>> graph_difference(f(1.0), f(2.0)) is None
        True
        >>> graph_difference(f(1.0), ember.make_graph(lambda x: x - 1.0)(1.0))
        'equation 0: primitive add vs sub'
    """
    from .rule_graph import TracedRule
    graphs = [(a, b, "")]
    while graphs:
        ga, gb, where = graphs.pop()
        ca = ga.consts if isinstance(ga, ClosedGraph) else []
        cb = gb.consts if isinstance(gb, ClosedGraph) else []
        ga = ga.graph if isinstance(ga, ClosedGraph) else ga
        gb = gb.graph if isinstance(gb, ClosedGraph) else gb
        ren: dict = {}
        back: dict = {}

        def bind(xs, ys, what):
            if len(xs) != len(ys):
                return f"{where}{what}: {len(xs)} vs {len(ys)}"
            for x, y in zip(xs, ys):
                if x.aval != y.aval:
                    return f"{where}{what}: type {_ty(x.aval)} vs {_ty(y.aval)}"
                ren[x], back[y] = y, x
            return None

        def same_atom(x, y) -> bool:
            if isinstance(x, Literal) or isinstance(y, Literal):
                return (isinstance(x, Literal) and isinstance(y, Literal) and x.aval == y.aval
                        and x.key == y.key)
            return ren.get(x) is y and back.get(y) is x

        d = bind(ga.constvars, gb.constvars, "consts") or bind(ga.inputs, gb.inputs, "inputs")
        if d:
            return d
        if len(ca) != len(cb) or any(constant_key(np.asarray(x), np.asarray(x).dtype)
                                     != constant_key(np.asarray(y), np.asarray(y).dtype)
                                     for x, y in zip(ca, cb)):
            return f"{where}const values differ"
        if len(ga.equations) != len(gb.equations):
            return f"{where}{len(ga.equations)} vs {len(gb.equations)} equations"
        for i, (ea, eb) in enumerate(zip(ga.equations, gb.equations)):
            here = f"{where}equation {i}"
            if ea.prim is not eb.prim:
                return f"{here}: primitive {ea.prim.name} vs {eb.prim.name}"
            if len(ea.inputs) != len(eb.inputs) or not all(map(same_atom, ea.inputs, eb.inputs)):
                return f"{here} ({ea.prim.name}): operands differ"
            if sorted(ea.params) != sorted(eb.params):
                return f"{here} ({ea.prim.name}): param names {sorted(ea.params)} vs {sorted(eb.params)}"
            values = [(ea.params[k], eb.params[k], f"{here} ({ea.prim.name}) param {k}")
                      for k in sorted(ea.params)]
            while values:
                x, y, w = values.pop()
                if isinstance(x, (ClosedGraph, Graph)) and isinstance(y, (ClosedGraph, Graph)):
                    graphs.append((x, y, w + " > "))
                elif isinstance(x, TracedRule) and isinstance(y, TracedRule):
                    if x.kind != y.kind or sorted(x.meta) != sorted(y.meta):
                        return f"{w}: rules differ"
                    values.extend((x.meta[k], y.meta[k], w) for k in x.meta)
                    graphs.append((x.graph, y.graph, w + " > "))
                elif isinstance(x, tuple) and isinstance(y, tuple):
                    if type(x) is not type(y) or len(x) != len(y):
                        return f"{w}: {x!r} vs {y!r}"
                    values.extend((p, q, w) for p, q in zip(x, y))
                elif not _same_scalar(x, y):
                    return f"{w}: {x!r} vs {y!r}"
            d = bind(ea.outputs, eb.outputs, here + " results")
            if d:
                return d
        if len(ga.outputs) != len(gb.outputs) or not all(map(same_atom, ga.outputs, gb.outputs)):
            return f"{where}outputs differ"
    return None


def _ty(aval) -> str:
    return aval.str_user() + (" (weak)" if aval.weak_type else "")


def _same_scalar(x, y) -> bool:
    if type(x) is not type(y):
        # a named callable parses to an equal function object only for the fixed policies
        return False
    if isinstance(x, (float, complex, np.generic)):
        return constant_key(x, np.asarray(x).dtype) == constant_key(y, np.asarray(y).dtype)
    if callable(x) and not isinstance(x, type):
        return x is y or getattr(x, "__name__", None) == getattr(y, "__name__", 0)
    return x == y


def structurally_equal(a, b) -> bool:
    """Whether two graphs are equal up to renaming variables (see `graph_difference`).

    Example:
        >>> import ember
        >>> f = ember.make_graph(lambda x: x * x)
        >>> structurally_equal(f(1.0), f(3.0))
        True
    """
    return graph_difference(a, b) is None


class _CallableModule(types.ModuleType):
    """`ember.fx.parse` is both this module and the `parse` function: the attribute
    is the module once it is imported, and calling it parses."""

    def __call__(self, text, consts=None):
        return parse(text, consts)


sys.modules[__name__].__class__ = _CallableModule
