"""Transposition of linear graphs: the backward pass of reverse mode.

Example:
    >>> import ember, ember.numpy as enp
    >>> f_t = ember.linear_transpose(lambda x: x * 3.0, 1.0)
    >>> float(f_t(1.0)[0])
    3.0
"""
from __future__ import annotations

from ..fx.core import UndefinedPrimal, Zero, get_aval, tangent_aval, transform_source
from ..fx.ir import Graph, Literal, Var
from ..fx.prims.rules import add_tangents, instantiate
from ..fx.staging import trace_flat
from ..tree import tree_flatten, tree_unflatten
from .util import as_ember


def backward_pass(graph: Graph, consts, cts_out) -> list:
    """Given cotangents of `graph`'s outputs, return cotangents of its inputs.

    `graph.inputs` are the linear inputs; `graph.constvars` (valued by `consts`)
    are known.  Equations that read no linear value are evaluated forward.
    Returns `Zero` for inputs that receive no cotangent.
    """
    known = {}
    for v, c in zip(graph.constvars, consts):
        known[v] = c
    linear = set(graph.inputs)
    lin_eqs = []
    for eq in graph.equations:
        if any(type(a) is Var and a in linear for a in eq.inputs):
            lin_eqs.append(eq)
            linear.update(eq.outputs)
        else:
            ins = [a.value if type(a) is Literal else known[a] for a in eq.inputs]
            tok = transform_source.set(eq.source)   # what it creates keeps the forward line
            try:
                out = eq.prim.bind(*ins, **eq.params)
            finally:
                transform_source.reset(tok)
            if eq.prim.multiple_results:
                known.update(zip(eq.outputs, out))
            else:
                known[eq.outputs[0]] = out

    ct_env: dict = {}

    def write(v, ct):
        if type(v) is not Var or v not in linear or ct is None or type(ct) is Zero:
            return
        prev = ct_env.get(v)
        ct_env[v] = ct if prev is None else add_tangents(prev, ct)

    for v, ct in zip(graph.outputs, cts_out):
        write(v, ct)

    for eq in reversed(lin_eqs):
        cts = [ct_env.pop(v, None) for v in eq.outputs]
        if all(c is None for c in cts):
            continue
        args = [UndefinedPrimal(a.aval) if type(a) is Var and a in linear
                else (a.value if type(a) is Literal else known[a]) for a in eq.inputs]
        if eq.prim.transpose is None:
            culprit = eq if _hint(eq.prim.name) else (_untransposable_source(eq, lin_eqs, linear) or eq)
            raise TypeError(
                f"cannot transpose '{culprit.prim.name}': it is not linear in its differentiated "
                f"inputs (source: {culprit.source or 'unknown'}). "
                + _hint(culprit.prim.name))
        if eq.prim.multiple_results:
            ct_arg = [Zero(tangent_aval(v.aval)) if c is None else c for v, c in zip(eq.outputs, cts)]
        else:
            ct_arg = cts[0]
        tok = transform_source.set(eq.source)   # equations it creates keep the forward line
        try:
            cts_in = eq.prim.transpose(ct_arg, *args, **eq.params)
        except TypeError as e:
            culprit = _untransposable_source(eq, lin_eqs, linear)
            if culprit is None:
                raise
            # a value the untransposable equation computed reached `eq` as if linear (the
            # primal of a while_loop's carry: mul of it and its tangent is "not linear")
            raise TypeError(
                f"cannot transpose '{culprit.prim.name}': it is not linear in its differentiated "
                f"inputs (source: {culprit.source or 'unknown'}). " + _hint(culprit.prim.name)) from e
        finally:
            transform_source.reset(tok)
        for a, c in zip(eq.inputs, cts_in):
            write(a, c)

    return [ct_env.get(v, Zero(tangent_aval(v.aval))) for v in graph.inputs]


def _untransposable_source(eq, lin_eqs, linear):
    """The equation with no transpose rule and a hint for it (a while_loop) upstream of
    `eq`'s linear inputs, or None. Iterative: linear chains can be long."""
    producer = {v: e for e in lin_eqs for v in e.outputs}
    stack = [a for a in eq.inputs if type(a) is Var and a in linear]
    seen = set()
    while stack:
        v = stack.pop()
        if v in seen or v not in producer:
            continue
        seen.add(v)
        e = producer[v]
        if e.prim.transpose is None and _hint(e.prim.name):
            return e
        stack.extend(a for a in e.inputs if type(a) is Var and a in linear)
    return None


def _hint(name):
    if name == "while_loop":
        return ("Reverse-mode differentiation through while_loop is not supported because its "
                "trip count is dynamic; use ember.lax.scan or fori_loop with static bounds.")
    return ""


def linear_transpose(fun, *primals):
    """Transpose a linear function: returns `f_t(ct) -> tuple of input cotangents`.

    Example:
        >>> import ember.numpy as enp
        >>> f_t = linear_transpose(lambda x: enp.sum(x), enp.ones(3))
        >>> f_t(2.0)[0].tolist()
        [2.0, 2.0, 2.0]
    """
    p_leaves, p_tree = tree_flatten(tuple(primals))
    avals = [get_aval(as_ember(x)) for x in p_leaves]
    box = []

    def flat(*xs):
        out = fun(*tree_unflatten(p_tree, xs))
        leaves, tree = tree_flatten(out)
        box.append(tree)
        return leaves

    closed = trace_flat(flat, avals)
    out_tree = box[0]

    def f_t(ct):
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != out_tree:
            raise TypeError(f"linear_transpose: cotangent structure {ct_tree} does not match "
                            f"the output structure {out_tree}")
        cts = [as_ember(c, a.dtype) for c, a in zip(ct_leaves, closed.out_avals)]
        res = backward_pass(closed.graph, closed.consts, cts)
        return tree_unflatten(p_tree, [instantiate(r) for r in res])

    return f_t
