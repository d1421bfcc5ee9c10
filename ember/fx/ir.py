"""The IR: variables, literals, equations, graphs; `typecheck` and `eval_graph`.

A Graph is first-order and in A-normal form: every equation applies one
primitive to variables or literals and defines fresh variables.  Sub-graphs of
higher-order primitives (cond, scan, jit_call, ...) are ClosedGraph params.

Example:
    >>> import ember, ember.numpy as enp
    >>> g = ember.make_graph(lambda x: enp.sin(x) * 2.0)(1.0)
    >>> [e.prim.name for e in g.graph.equations]
    ['sin', 'mul']
"""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from .core import AbstractArray, Primitive, get_aval, transform_source

_counter = itertools.count()


class Var:
    """A graph variable with an abstract value.  Identity is the object itself."""
    __slots__ = ("aval", "count", "name_hint")

    def __init__(self, aval: AbstractArray, name_hint: str = ""):
        self.aval = aval
        self.count = next(_counter)
        self.name_hint = name_hint

    def __repr__(self):
        return f"Var({self.count}:{self.aval})"


def constant_key(value, dtype) -> tuple:
    """The identity of a constant: its dtype and raw bits.

    Every place that interns, merges or caches constants keys them with this,
    never with `==`: `0.0 == -0.0` and `nan != nan`, but the two zeros give
    different answers (`1/x`, `atan2`) and NaN payloads are data.

    Example:
        >>> constant_key(0.0, "float32") == constant_key(-0.0, "float32")
        False
        >>> constant_key(float("nan"), "float32") == constant_key(float("nan"), "float32")
        True
    """
    d = np.dtype(dtype)
    return (d.str, d.name, np.asarray(value).astype(d, copy=False).tobytes())


def hashable_key(x):
    """`x` (a hashable Python value: a primitive param, a static argument) with every
    float replaced by its `constant_key`, so keys built from it tell -0.0 from 0.0
    and NaN payloads apart.  Nested tuples are walked iteratively.

    Example:
        >>> hashable_key((1, 0.0)) == hashable_key((1, -0.0))
        False
    """
    if not _has_float(x):
        return x
    # post-order rebuild of nested tuples without recursion
    out: dict = {}
    stack = [(x, False)]
    while stack:
        node, done = stack.pop()
        if isinstance(node, _FLOATS):
            out[id(node)] = ("float", constant_key(node, np.asarray(node).dtype))
        elif isinstance(node, tuple) and not done:
            stack.append((node, True))
            stack.extend((c, False) for c in node)
        elif isinstance(node, tuple):
            items = tuple(out.get(id(c), c) for c in node)
            # a namedtuple keeps its type in the key
            out[id(node)] = items if type(node) is tuple else (type(node), items)
    return out[id(x)]


_FLOATS = (float, complex, np.inexact)


def _has_float(x) -> bool:
    stack = [x]
    while stack:
        n = stack.pop()
        if isinstance(n, _FLOATS):
            return True
        if isinstance(n, tuple):
            stack.extend(n)
    return False


class Literal:
    """A constant scalar appearing inline in an equation."""
    __slots__ = ("value", "aval")

    def __init__(self, value, aval: AbstractArray | None = None):
        self.value = value
        self.aval = aval if aval is not None else get_aval(value)

    @property
    def key(self) -> tuple:
        """The literal's identity for merging (`constant_key`: dtype and bits)."""
        return constant_key(self.value, self.aval.dtype)

    def __repr__(self):
        v = self.value
        if isinstance(v, np.ndarray) and v.ndim == 0:
            v = v[()]
        if isinstance(v, (np.bool_, bool)):
            return str(bool(v))
        if isinstance(v, (np.floating, float)):
            return repr(float(v))
        if isinstance(v, (np.integer, int)):
            return str(int(v))
        return repr(v)


Atom = Var | Literal


class Equation:
    """`outputs = prim[params](*inputs)`, with the user's source line."""
    __slots__ = ("prim", "inputs", "outputs", "params", "source")

    def __init__(self, prim: Primitive, inputs: list, outputs: list, params: dict, source: str = ""):
        self.prim = prim
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.params = params
        self.source = source

    def replace(self, **kw) -> "Equation":
        d = dict(prim=self.prim, inputs=self.inputs, outputs=self.outputs,
                 params=self.params, source=self.source)
        d.update(kw)
        return Equation(**d)

    def __repr__(self):
        from .printing import format_equation
        return format_equation(self)


class Graph:
    """A typed first-order program: `constvars`, `inputs` -> `outputs`."""
    __slots__ = ("constvars", "inputs", "equations", "outputs")

    def __init__(self, constvars, inputs, equations, outputs):
        self.constvars = list(constvars)
        self.inputs = list(inputs)
        self.equations = list(equations)
        self.outputs = list(outputs)

    @property
    def in_avals(self):
        return [v.aval for v in self.inputs]

    @property
    def out_avals(self):
        return [v.aval for v in self.outputs]

    def __str__(self):
        from .printing import format_graph
        return format_graph(self)

    __repr__ = __str__


class ClosedGraph:
    """A Graph with values for its constvars.

    `in_tree` / `out_tree` (optional) record the pytree structures of the
    Python function the graph was traced from.
    """
    __slots__ = ("graph", "consts", "in_tree", "out_tree", "_cache", "__weakref__")

    def __init__(self, graph: Graph, consts, in_tree=None, out_tree=None):
        assert len(graph.constvars) == len(consts), (len(graph.constvars), len(consts))
        self.graph = graph
        self.consts = list(consts)
        self.in_tree = in_tree
        self.out_tree = out_tree
        self._cache = {}

    @property
    def in_avals(self):
        return self.graph.in_avals

    @property
    def out_avals(self):
        return self.graph.out_avals

    @property
    def equations(self):
        return self.graph.equations

    def consts_as_buffers(self):
        out = []
        for c in self.consts:
            v = getattr(c, "_value", None)
            out.append(v if v is not None else np.asarray(c))
        return out

    def __str__(self):
        from .printing import format_graph
        return format_graph(self.graph, self.consts)

    __repr__ = __str__

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))

    def pretty(self, source: bool = False) -> str:
        """The IR text (`str(graph)`); `source=True` appends `# file:line` of the user's
        code to each equation (equations made by transforms carry the line they derive
        from). `ember.fx.parse` reads either text.

        Example:
            >>> import ember, ember.numpy as enp
            >>> g = ember.make_graph(lambda x: enp.sin(x))(1.0)
            >>> "# " in g.pretty(source=True), g.pretty() == str(g)
            (True, True)
        """
        from .printing import format_graph
        return format_graph(self.graph, self.consts, source=source)

    def to_dot(self) -> str:
        from .printing import to_dot
        return to_dot(self.graph)

    # Graph params must be hashable: closed graphs hash by identity.
    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other


# --- evaluation ------------------------------------------------------------------

def eval_graph(graph: Graph, consts, *args) -> list:
    """Evaluate a graph by binding each equation under the current trace.

    Because it binds, evaluating a graph inside a transform transforms it; the
    equations a transform stages meanwhile record each original equation's source.
    """
    env: dict[Var, Any] = {}

    def read(a):
        return a.value if type(a) is Literal else env[a]

    for v, x in zip(graph.constvars, consts):
        env[v] = x
    if len(args) != len(graph.inputs):
        raise TypeError(f"graph takes {len(graph.inputs)} inputs, got {len(args)}")
    for v, x in zip(graph.inputs, args):
        env[v] = x
    for eq in graph.equations:
        ins = [read(a) for a in eq.inputs]
        # what a transform creates from this equation records the equation's own line
        tok = transform_source.set(eq.source)
        try:
            outs = eq.prim.bind(*ins, **eq.params)
        finally:
            transform_source.reset(tok)
        if eq.prim.multiple_results:
            for v, o in zip(eq.outputs, outs):
                env[v] = o
        else:
            env[eq.outputs[0]] = outs
    return [read(a) for a in graph.outputs]


# --- typechecking ----------------------------------------------------------------

class GraphTypeError(Exception):
    """A graph is ill-typed: an internal error, never the user's."""


def typecheck(graph: Graph | ClosedGraph) -> None:
    """Check that every variable is defined once before use and every equation's
    output types match its primitive's abstract evaluation, in ``graph`` and in
    every sub-graph held in its equations' params (at any depth).

    Example:
        >>> import ember
        >>> typecheck(ember.make_graph(lambda x: x + 1.0)(2.0))
    """
    # an explicit stack of graphs still to check: sub-graphs nest as deep as
    # programs do (1,500 nested jits), far beyond Python's recursion limit
    pending = [graph]
    # a sub-graph shared by several equations (cond branches, a reused jit) is
    # checked once: checking it per use is exponential in the nesting depth
    seen: set = set()
    while pending:
        g = pending.pop()
        if id(g) in seen:
            continue
        seen.add(id(g))
        subs = _typecheck_one(g)
        pending.extend(reversed(subs))


def _typecheck_one(graph: Graph | ClosedGraph) -> list:
    """Check one graph (not its sub-graphs); returns the sub-graphs it holds,
    in order.  Sub-graphs are closed: each is checked in its own scope."""
    if isinstance(graph, ClosedGraph):
        for v, c in zip(graph.graph.constvars, graph.consts):
            a = get_aval(c)
            if a.shape != v.aval.shape or a.dtype != v.aval.dtype:
                raise GraphTypeError(f"const {v} has value of type {a}")
        graph = graph.graph
    defined: set = set()

    def define(v):
        if not isinstance(v, Var):
            raise GraphTypeError(f"binder {v!r} is not a Var")
        if v in defined:
            raise GraphTypeError(f"variable {v} defined twice")
        defined.add(v)

    def use(a, where):
        if isinstance(a, Literal):
            return a.aval
        if a not in defined:
            raise GraphTypeError(f"variable {a} used before definition in {where}")
        return a.aval

    subs = []
    for v in graph.constvars + graph.inputs:
        define(v)
    for eq in graph.equations:
        in_avals = [use(a, eq) for a in eq.inputs]
        if eq.prim.abstract_eval is None:
            raise GraphTypeError(f"primitive {eq.prim} has no abstract_eval")
        out = eq.prim.abstract_eval(*in_avals, **eq.params)
        outs = out if eq.prim.multiple_results else [out]
        if len(outs) != len(eq.outputs):
            raise GraphTypeError(f"{eq.prim}: {len(outs)} results but {len(eq.outputs)} binders")
        for v, a in zip(eq.outputs, outs):
            if v.aval.shape != a.shape or v.aval.dtype != a.dtype:
                raise GraphTypeError(f"{eq.prim}: binder {v.aval} but abstract eval says {a}\n  in {eq}")
            define(v)
        subs.extend(_subgraphs(eq.params))
    for a in graph.outputs:
        use(a, "outputs")
    return subs


def _subgraphs(params):
    for v in params.values():
        if isinstance(v, (ClosedGraph, Graph)):
            yield v
        elif isinstance(v, tuple):
            for w in v:
                if isinstance(w, (ClosedGraph, Graph)):
                    yield w


def subgraphs(params):
    """The sub-graphs (ClosedGraph or Graph) held in an equation's params."""
    return list(_subgraphs(params))
