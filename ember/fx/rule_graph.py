"""`TracedRule`: a custom-derivative rule held as a traced graph, so it prints, parses and serialises.

`custom_jvp_call` / `custom_vjp_call` / `custom_lin` keep the user's rules as
Python callables; `ember.export.trace_custom_rules` replaces each with a
TracedRule of the same calling convention, evaluating its graph by binding (so
the rule still transforms: vmap of a traced `fwd` batches it).

Example:
    >>> import ember, ember.numpy as enp
    >>> g = ember.make_graph(lambda x: (enp.sin(x), 2.0 * x))(1.0)
    >>> fwd = TracedRule("custom_vjp_fwd", g, num_out=1)
    >>> out, res, _ = fwd([0.0])
    >>> float(out[0]), float(res[0])
    (0.0, 0.0)
"""
from __future__ import annotations

from .core import Zero
from .ir import ClosedGraph, eval_graph

KINDS = ("custom_jvp", "custom_vjp_fwd", "custom_vjp_bwd")


class TracedRule:
    """A rule as a graph with one of three calling conventions (`kind`):

    - `custom_jvp`: `rule(primals, tangents) -> (outs, tangent_outs)`; the graph
      maps primals + tangents to outs + tangent outs (`num_out` of each).
    - `custom_vjp_fwd`: `rule(primals) -> (outs, residuals, res_tree)`; the graph
      maps primals to outs (`num_out`) + residuals (a flat list).
    - `custom_vjp_bwd`: `rule(res_tree, residuals, cts) -> input cotangents`; the
      graph maps residuals + cts to the cotangents that are not zero (`zeros`
      marks the rest; `cotangent_types` gives every cotangent's type).
    """
    __slots__ = ("kind", "graph", "meta")

    def __init__(self, kind: str, graph: ClosedGraph, **meta):
        if kind not in KINDS:
            raise ValueError(f"TracedRule: unknown kind {kind!r}; expected one of {KINDS}")
        if not isinstance(graph, ClosedGraph):
            raise TypeError(f"TracedRule: graph must be a ClosedGraph, got {type(graph).__name__}")
        self.kind, self.graph, self.meta = kind, graph, dict(meta)

    def meta_items(self):
        return sorted(self.meta.items())

    @property
    def __name__(self):
        return f"traced_{self.kind}"

    def _run(self, args):
        return eval_graph(self.graph.graph, self.graph.consts, *args)

    def __call__(self, *args):
        from ..tree import tree_structure
        if self.kind == "custom_jvp":
            primals, tangents = args
            outs = self._run(list(primals) + list(tangents))
            n = self.meta["num_out"]
            return outs[:n], outs[n:]
        if self.kind == "custom_vjp_fwd":
            (primals,) = args
            outs = self._run(list(primals))
            n = self.meta["num_out"]
            res = outs[n:]
            return outs[:n], res, tree_structure(list(range(len(res))))
        _res_tree, res, cts = args
        got = iter(self._run(list(res) + list(cts)))
        return [Zero(t) if z else next(got)
                for z, t in zip(self.meta["zeros"], self.meta["cotangent_types"])]

    # hashable params: identity, as for ClosedGraph
    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __repr__(self):
        return f"TracedRule({self.kind}, {len(self.graph.equations)} equations)"
