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

from ..fx.core import Zero, current_trace, get_aval, new_trace, set_current_trace, tangent_aval
from ..fx.ir import eval_graph
from ..fx.prims.rules import instantiate
from ..tree import tree_flatten, tree_unflatten
from .jvp import JVPTrace, JVPTracer
from .partial_eval import PartialEvalTrace
from .util import as_ember, as_ember_args, flat_with_aux, split_aux


class LinearizeTrace(JVPTrace):
    """JVP whose rules run on a partial-evaluation trace: primal work goes to the
    parent, tangent work is staged into the linear graph."""

    def __init__(self, parent):
        super().__init__(parent)
        self.tangent_trace = PartialEvalTrace(parent)

    def rule_trace(self):
        return self.tangent_trace

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
        ins = [JVPTracer(trace, x, pe.new_arg(tangent_aval(get_aval(x)))) if nz else x
               for x, nz in zip(primals, nonzeros)]
        res_p, res_t = trace.unpack(fun(*ins))
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
    p_leaves = as_ember_args("linearize", fun, p_leaves, p_tree)
    flat, store = flat_with_aux(fun, p_tree, has_aux, "linearize")
    outs, lin, _ = linearize_flat(flat, p_leaves)
    outs, aux = split_aux(store, outs)
    out_tree, n_out = store["out_tree"], store["n_out"]

    def f_jvp(*tangents):
        t_leaves, t_tree = tree_flatten(tuple(tangents))
        if t_tree != p_tree:
            raise TypeError(f"linearize: tangents must have the structure of the primals "
                            f"{p_tree}, got {t_tree}")
        ts = [as_ember(t, get_aval(p).dtype) for t, p in zip(t_leaves, p_leaves)]
        return tree_unflatten(out_tree, eval_graph(lin.graph, lin.consts, *ts)[:n_out])

    res = (tree_unflatten(out_tree, outs), f_jvp)
    return res + (aux,) if has_aux else res
