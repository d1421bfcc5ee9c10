"""Replace the Python rules of custom_jvp / custom_vjp equations by their traced graphs (`TracedRule`).

A graph that holds Python callables can neither be printed parseably nor
serialised; after this pass it holds only graphs, and still differentiates
and batches as before (a TracedRule evaluates its graph by binding).
"""
from __future__ import annotations

from ..fx.core import Zero, get_aval, tangent_aval
from ..fx.ir import ClosedGraph, Graph
from ..fx.rule_graph import TracedRule
from ..fx.staging import trace_flat


def _trace_vjp_rules(eq):
    p = eq.params
    fwd, bwd, nc = p["fwd"], p["bwd"], p["num_consts"]
    primal_avals = [a.aval for a in eq.inputs[nc:]]
    box = []

    def f(*ps):
        o, r, rt = fwd(list(ps))
        box.append((len(o), rt))
        return list(o) + list(r)

    fg = trace_flat(f, primal_avals)
    n_out, res_tree = box[0]
    res_avals = list(fg.out_avals[n_out:])
    ct_avals = [tangent_aval(v.aval) for v in eq.outputs]
    bg, meta = _trace_bwd(lambda res, cts: bwd(res_tree, res, cts), res_avals, ct_avals, primal_avals)
    return {"fwd": TracedRule("custom_vjp_fwd", fg, num_out=n_out),
            "bwd": TracedRule("custom_vjp_bwd", bg, **meta)}


def _trace_bwd(bwd, res_avals, ct_avals, primal_avals):
    nr = len(res_avals)
    box = []

    def b(*xs):
        got = list(bwd(list(xs[:nr]), list(xs[nr:])))
        box.append(got)
        return [g for g in got if type(g) is not Zero]

    bg = trace_flat(b, res_avals + ct_avals)
    got = box[0]
    zeros = tuple(type(g) is Zero for g in got)
    types = tuple(g.aval if type(g) is Zero else tangent_aval(get_aval(g)) for g in got)
    if len(types) != len(primal_avals):
        types = tuple(tangent_aval(a) for a in primal_avals)
    return bg, dict(zeros=zeros, cotangent_types=types)


def _trace_jvp_rule(eq):
    p = eq.params
    jvp, nc = p["jvp"], p["num_consts"]
    primal_avals = [a.aval for a in eq.inputs[nc:]]
    n = len(primal_avals)

    def f(*xs):
        o, t = jvp(list(xs[:n]), list(xs[n:]))
        return list(o) + list(t)

    g = trace_flat(f, primal_avals + [tangent_aval(a) for a in primal_avals])
    return {"jvp": TracedRule("custom_jvp", g, num_out=len(p["call"].out_avals))}


def _trace_lin_rule(eq):
    p = eq.params
    nr, bwd, res_tree = p["num_res"], p["bwd"], p["res_tree"]
    res_avals = [a.aval for a in eq.inputs[:nr]]
    t_avals = [a.aval for a in eq.inputs[nr:]]
    bg, meta = _trace_bwd(lambda res, cts: bwd(res_tree, res, cts), res_avals,
                          list(p["out_avals"]), t_avals)
    # a traced bwd takes its residuals flat: the structure is no longer needed
    return {"bwd": TracedRule("custom_vjp_bwd", bg, **meta), "res_tree": None}


_TRACERS = {"custom_vjp_call": _trace_vjp_rules, "custom_jvp_call": _trace_jvp_rule,
            "custom_lin": _trace_lin_rule}


def _rules_of(eq) -> dict:
    tracer = _TRACERS.get(eq.prim.name)
    if tracer is None:
        return {}
    if all(isinstance(v, TracedRule) for k, v in eq.params.items() if k in ("fwd", "bwd", "jvp")):
        return {}
    return tracer(eq)


def _children(params: dict) -> list:
    out = []
    for v in params.values():
        for w in (v if isinstance(v, tuple) else (v,)):
            if isinstance(w, (ClosedGraph, Graph)):
                out.append(w)
            elif isinstance(w, TracedRule):
                out.append(w.graph)
    return out


def trace_custom_rules(closed: ClosedGraph) -> ClosedGraph:
    """`closed` with every custom_jvp/custom_vjp rule (in any sub-graph) replaced
    by its traced graph, so that the result prints parseably and serialises.

    Example:
        >>> import ember, ember.numpy as enp
        >>> @ember.custom_vjp
        ... def f(x):
        ...     return enp.sin(x)
        >>> f.defvjp(lambda x: (enp.sin(x), enp.cos(x)), lambda c, g: (c * g,))
        >>> g = trace_custom_rules(ember.make_graph(f)(1.0))
        >>> "TracedRule(kind=custom_vjp_fwd" in str(g)
        True
    """
    done: dict = {}      # id(old graph) -> (old, new): the old one is kept alive for its id
    traced: dict = {}    # id(equation) -> (equation, {param: replacement})
    stack = [(closed, False)]
    while stack:
        g, expanded = stack.pop()
        if id(g) in done:
            continue
        graph = g.graph if isinstance(g, ClosedGraph) else g
        if not expanded:
            stack.append((g, True))
            for eq in graph.equations:
                if id(eq) not in traced:
                    traced[id(eq)] = (eq, _rules_of(eq))
                kids = _children(eq.params) + _children(traced[id(eq)][1])
                stack.extend((c, False) for c in kids if id(c) not in done)
            continue
        eqs = []
        for eq in graph.equations:
            params = dict(eq.params)
            params.update(traced[id(eq)][1])
            eqs.append(eq.replace(params={k: _mapped(v, done) for k, v in params.items()}))
        ng = Graph(graph.constvars, graph.inputs, eqs, graph.outputs)
        new = (ClosedGraph(ng, g.consts, g.in_tree, g.out_tree) if isinstance(g, ClosedGraph) else ng)
        done[id(g)] = (g, new)
    return done[id(closed)][1]


def _mapped(v, done):
    if isinstance(v, (ClosedGraph, Graph)):
        return done[id(v)][1]
    if isinstance(v, TracedRule):
        return TracedRule(v.kind, done[id(v.graph)][1], **v.meta)
    if isinstance(v, tuple) and not hasattr(type(v), "_fields"):
        return tuple(_mapped(w, done) if isinstance(w, (ClosedGraph, Graph, TracedRule)) else w
                     for w in v)
    return v
