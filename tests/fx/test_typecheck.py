"""typecheck walks sub-graphs with an explicit stack: graphs nested far deeper
than Python's recursion limit are checked, errors at the deepest level found."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.fx.core import PRIMITIVES, AbstractArray
from ember.fx.ir import ClosedGraph, Equation, Graph, GraphTypeError, Literal, Var, typecheck

DEPTH = 1500   # beyond Python's default recursion limit (1000)


def _deep(depth, innermost_out_dtype="float32"):
    """``depth`` levels alternating a jit_call and a cond (index a literal 0)
    around one sin; every level is a one-input graph."""
    aval = AbstractArray((2,), "float32")
    x = Var(aval)
    y = Var(AbstractArray((2,), innermost_out_dtype))
    inner = ClosedGraph(Graph([], [x], [Equation(PRIMITIVES["sin"], [x], [y], {})], [y]), [])
    for level in range(depth):
        a, b = Var(aval), Var(aval)
        if level % 2:
            eq = Equation(PRIMITIVES["jit_call"], [a], [b], {"graph": inner, "name": "f", "backend": "cpu"})
        else:
            index = Literal(np.int32(0), AbstractArray((), "int32"))
            eq = Equation(PRIMITIVES["cond"], [index, a], [b], {"branches": (inner, inner)})
        inner = ClosedGraph(Graph([], [a], [eq], [b]), [])
    return inner


def test_typecheck_of_nesting_beyond_the_recursion_limit():
    g = _deep(DEPTH)
    assert DEPTH > sys.getrecursionlimit()
    typecheck(g)   # no RecursionError
    # every level is really there
    n, cur = 0, g
    while cur.graph.equations and cur.graph.equations[-1].prim.name in ("jit_call", "cond"):
        eq = cur.graph.equations[-1]
        cur = eq.params["graph"] if "graph" in eq.params else eq.params["branches"][0]
        n += 1
    assert n == DEPTH


def test_error_at_the_deepest_level_is_found():
    bad = _deep(DEPTH, innermost_out_dtype="float64")
    with pytest.raises(GraphTypeError, match="sin"):
        typecheck(bad)


def test_typecheck_of_traced_nested_control_flow():
    def f(p, x):
        inner = ember.jit(lambda v: lax.cond(p, lambda w: enp.sin(w), lambda w: w * 2.0, v))
        return ember.jit(lambda v: inner(v) + 1.0)(x)
    g = ember.make_graph(f)(True, np.ones(3, np.float32))
    typecheck(g)
    np.testing.assert_allclose(np.asarray(ember.jit(f)(True, np.ones(3, np.float32))), np.sin(1.0) + 1, rtol=1e-6)
