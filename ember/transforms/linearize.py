"""Linearize = JVP + partial evaluation; the basis of reverse mode.

The primal computation runs on the parent trace (eagerly, or traced by an
outer transform), so Python control flow on primal values keeps working under
`grad` outside `jit`.  The tangent computation is staged into a linear graph.

Example:
    >>> import ember, ember.numpy as enp
    >>> y, f_jvp = ember.linearize(lambda x: x * x, 3.0)
    >>> float(f_jvp(1.0))
    6.0
"""
from __future__ import annotations

from ..fx.core import (Trace, Tracer, Zero, check_foreign, current_trace, get_aval, new_trace,
                       set_current_trace, tangent_aval)
from ..fx.ir import ClosedGraph, eval_graph
from ..fx.prims.rules import instantiate
from ..tree import tree_flatten, tree_unflatten
from .partial_eval import PartialEvalTrace
from .util import as_ember


class LinearizeTracer(Tracer):
    __slots__ = ("primal", "tangent")

    def __init__(self, trace, primal, tangent):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self):
        return get_aval(self.primal)

    def concrete_value(self):
        p = self.primal
        return p.concrete_value() if isinstance(p, Tracer) else p


class LinearizeTrace(Trace):
    def __init__(self, parent):
        super().__init__(parent)
        self.tangent_trace = PartialEvalTrace(parent)

    def lift(self, x, prim=None):
        if isinstance(x, LinearizeTracer) and x._trace is self:
            return x.primal, x.tangent
        if isinstance(x, Tracer):
            check_foreign(self, x, prim)
        return x, None

    def process_primitive(self, prim, args, params):
        primals, tangents, any_t = [], [], False
        for x in args:
            p, t = self.lift(x, prim)
            primals.append(p)
            if t is None:
                t = Zero(tangent_aval(get_aval(p)))
            else:
                any_t = True
            tangents.append(t)
        if not any_t:
            with set_current_trace(self.parent):
                return prim.bind(*primals, **params)
        if prim.jvp is None:
            raise NotImplementedError(f"differentiation rule for '{prim.name}' not implemented")
        with set_current_trace(self.tangent_trace):
            out, tout = prim.jvp(primals, tangents, **params)
        if prim.multiple_results:
            return [self.wrap(o, t) for o, t in zip(out, tout)]
        return self.wrap(out, tout)

    def wrap(self, primal, tangent):
        if type(tangent) is Zero:
            return primal
        return LinearizeTracer(self, primal, tangent)

    def invalidate(self):
        super().invalidate()
        self.tangent_trace.invalidate()


def linearize_flat(fun, primals, nonzeros=None):
    """Returns (primal_outs, linear ClosedGraph over the nonzero tangent inputs,
    out_nonzero flags).  The graph's consts are the residuals."""
    trace = LinearizeTrace(current_trace())
    pe = trace.tangent_trace
    nonzeros = nonzeros or [True] * len(primals)
    with new_trace(trace):
        ins = []
        for x, nz in zip(primals, nonzeros):
            if nz:
                ins.append(LinearizeTracer(trace, x, pe.new_arg(tangent_aval(get_aval(x)))))
            else:
                ins.append(x)
        outs = fun(*ins)
        res_p, res_t = [], []
        for o in outs:
            if isinstance(o, LinearizeTracer) and o._trace is trace:
                res_p.append(o.primal)
                res_t.append(o.tangent)
            else:
                if isinstance(o, Tracer):
                    check_foreign(trace, o)
                res_p.append(o)
                res_t.append(Zero(tangent_aval(get_aval(o))))
        out_nz = [type(t) is not Zero for t in res_t]
        with set_current_trace(pe):
            lin = pe.finish([instantiate(t) for t in res_t])
    return res_p, lin, out_nz


def linearize(fun, *primals, has_aux: bool = False):
    """Return (fun(*primals), f_jvp) where f_jvp(*tangents) applies the Jacobian.

    Example:
        >>> import ember.numpy as enp
        >>> y, f = linearize(enp.exp, 0.0)
        >>> float(f(2.0))
        2.0
    """
    p_leaves, p_tree = tree_flatten(tuple(primals))
    p_leaves = [as_ember(x) for x in p_leaves]
    box = []

    def flat(*xs):
        out = fun(*tree_unflatten(p_tree, xs))
        if has_aux:
            out, aux = out
            box.append(aux)
        leaves, tree = tree_flatten(out)
        box.insert(0, tree)
        return leaves

    outs, lin, _ = linearize_flat(flat, p_leaves)
    out_tree = box[0]

    def f_jvp(*tangents):
        t_leaves, t_tree = tree_flatten(tuple(tangents))
        if t_tree != p_tree:
            raise TypeError(f"linearize: tangents must have the structure of the primals "
                            f"{p_tree}, got {t_tree}")
        ts = [as_ember(t, get_aval(p).dtype) for t, p in zip(t_leaves, p_leaves)]
        return tree_unflatten(out_tree, eval_graph(lin.graph, lin.consts, *ts))

    res = (tree_unflatten(out_tree, outs), f_jvp)
    return res + (box[1],) if has_aux else res
