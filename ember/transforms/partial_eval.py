"""Partial evaluation: run what is known, stage what depends on unknown inputs.

`PartialEvalTrace` is a staging trace that forwards every primitive whose
inputs are all known to its parent trace (where it is computed, or traced by
an outer transform) and records only the primitives that touch its own
(unknown) tracers.  Linearize runs JVP rules under it, so the staged graph is
exactly the linear tangent map and the known values it reads are residuals.

`partial_eval_graph` splits a closed graph into a known graph (which also
outputs residuals) and an unknown graph (residuals + unknown inputs ->
unknown outputs); higher-order primitives use it for their partial_eval rules.

Example:
    >>> import ember, ember.numpy as enp
    >>> y, f_jvp = ember.linearize(enp.sin, 0.5)
    >>> round(float(f_jvp(1.0)), 4)
    0.8776
"""
from __future__ import annotations

from ..fx.core import current_trace, new_trace, set_current_trace
from ..fx.ir import ClosedGraph, Graph, eval_graph
from ..fx.staging import StagingTrace, StagingTracer, trace_flat


class PartialEvalTrace(StagingTrace):
    def is_unknown(self, x) -> bool:
        return isinstance(x, StagingTracer) and x._trace is self

    def process_primitive(self, prim, args, params):
        for x in args:
            if isinstance(x, StagingTracer) and x._trace is self:
                break
        else:
            with set_current_trace(self.parent):
                return prim.bind(*args, **params)
        if prim.partial_eval is not None:
            return prim.partial_eval(self, list(args), params)
        return super().process_primitive(prim, args, params)

    def forward_known(self, prim, args, params):
        """Evaluate a primitive with known inputs on the parent trace."""
        with set_current_trace(self.parent):
            return prim.bind(*args, **params)


def partial_eval_graph(closed: ClosedGraph, unknowns, instantiate=False):
    """Split `closed` by which inputs are unknown.

    Returns (known_graph, unknown_graph, out_unknowns, num_residuals):
      known_graph:   known inputs -> known outputs + residuals
      unknown_graph: residuals + unknown inputs -> unknown outputs
    `instantiate` (bool or per-output list) forces outputs to be unknown.
    """
    in_avals = closed.in_avals
    n_out = len(closed.out_avals)
    inst = list(instantiate) if isinstance(instantiate, (list, tuple)) else [instantiate] * n_out
    box = {}

    def known_fun(*known_args):
        pe = PartialEvalTrace(current_trace())
        with new_trace(pe):
            it = iter(known_args)
            args = []
            for a, u in zip(in_avals, unknowns):
                args.append(pe.new_arg(a) if u else next(it))
            outs = eval_graph(closed.graph, closed.consts, *args)
            out_unknown = [pe.is_unknown(o) or i for o, i in zip(outs, inst)]
            unknown_outs = [o for o, u in zip(outs, out_unknown) if u]
            ug = pe.finish(unknown_outs)
        # ug's consts are the residuals: values of the known (outer) trace
        box["ug"] = ug
        box["out_unknown"] = out_unknown
        known_outs = [o for o, u in zip(outs, out_unknown) if not u]
        return known_outs + list(ug.consts)

    known_avals = [a for a, u in zip(in_avals, unknowns) if not u]
    kg = trace_flat(known_fun, known_avals)
    ug = box["ug"]
    # unknown graph: residual constvars become leading inputs
    g = ug.graph
    unknown_graph = ClosedGraph(Graph([], g.constvars + g.inputs, g.equations, g.outputs), [])
    return kg, unknown_graph, box["out_unknown"], len(ug.consts)
