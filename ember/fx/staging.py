"""Staging: trace a Python function into a Graph (`trace_flat`; the user-facing
`ember.make_graph` is `transforms/graph_api.py`).

Example:
    >>> import ember, ember.numpy as enp
    >>> print(ember.make_graph(lambda x: enp.sum(x * x))(enp.ones(3)))
    { lambda ; a:f32[3]. let
        b:f32[3] = mul a a
        c:f32[] = reduce_sum[axes=(0,)] b
      in (c,) }
"""
from __future__ import annotations

import numpy as np

from .. import config
from .. import dtypes as _dt
from .core import (AbstractArray, Trace, Tracer, check_foreign, current_trace, get_aval, python_scalar_value,
                   new_trace, user_source)
from .ir import ClosedGraph, Equation, Graph, Literal, Var, typecheck


class StagingTracer(Tracer):
    __slots__ = ("var",)

    def __init__(self, trace, var: Var):
        self._trace = trace
        self.var = var

    @property
    def aval(self):
        return self.var.aval


class StagingTrace(Trace):
    """Records every primitive applied to its tracers as an equation."""

    def __init__(self, parent: Trace | None = None):
        super().__init__(parent if parent is not None else current_trace())
        self.equations: list[Equation] = []
        self.inputs: list[Var] = []
        self.constvars: list[Var] = []
        self.consts: list = []
        self._const_ids: dict[int, Var] = {}
        # the user's names for the inputs (e.g. "params['w']") and the function
        # ("jit(f)"), set by jit/make_graph so errors can say where a value came from
        self.arg_names: list[str] | None = None
        self.fun_desc = ""

    def new_arg(self, aval: AbstractArray) -> StagingTracer:
        v = Var(aval)
        self.inputs.append(v)
        return StagingTracer(self, v)

    def const_var(self, x) -> Var:
        v = self._const_ids.get(id(x))
        if v is None:
            v = Var(get_aval(x).strip_weak() if not isinstance(x, Tracer) else x.aval)
            self._const_ids[id(x)] = v
            self.constvars.append(v)
            self.consts.append(x)
        return v

    def to_atom(self, x, prim=None):
        if isinstance(x, Tracer):
            if x._trace is self:
                return x.var
            check_foreign(self, x, prim)
            return self.const_var(x)
        t = type(x)
        if t is bool or t is int or t is float or t is complex:
            aval = get_aval(x)
            return Literal(python_scalar_value(x, aval.dtype, getattr(prim, "name", "jit"))[()], aval)
        if isinstance(x, np.generic):
            return Literal(x, get_aval(x))
        aval = getattr(x, "aval", None)
        if aval is not None and aval.ndim == 0 and aval.dtype != _dt.float0:
            return Literal(np.asarray(x)[()], aval)
        if isinstance(x, np.ndarray) and x.ndim == 0:
            return Literal(x[()], get_aval(x))
        return self.const_var(x)

    def process_primitive(self, prim, args, params):
        atoms = [self.to_atom(x, prim) for x in args]
        return self.stage(prim, atoms, params)

    def stage(self, prim, atoms, params):
        if prim.abstract_eval is None:
            raise NotImplementedError(f"primitive {prim.name} cannot be staged: no abstract_eval")
        out = prim.abstract_eval(*[a.aval for a in atoms], **params)
        if prim.multiple_results:
            outvars = [Var(a) for a in out]
            self.equations.append(Equation(prim, atoms, outvars, params, user_source()))
            return [StagingTracer(self, v) for v in outvars]
        v = Var(out)
        self.equations.append(Equation(prim, atoms, [v], params, user_source()))
        return StagingTracer(self, v)

    def describe(self) -> str:
        return self.fun_desc or "a staged trace (jit / make_graph / a control-flow body)"

    def sources_of(self, tracer):
        """Walk the equations staged so far backwards from `tracer` (one pass over
        the list, no recursion): named inputs it reaches, and captured outer
        tracers (consts) whose own traces continue the walk."""
        if tracer._trace is not self:
            return super().sources_of(tracer)
        needed = {tracer.var}
        for eqn in reversed(self.equations):
            if any(v in needed for v in eqn.outputs):
                needed.update(a for a in eqn.inputs if isinstance(a, Var))
        names = []
        if self.arg_names is not None:
            names = [f"`{n}` of {self.fun_desc}" for v, n in zip(self.inputs, self.arg_names)
                     if v in needed]
        outer = [c for v, c in zip(self.constvars, self.consts) if v in needed and isinstance(c, Tracer)]
        return names, outer

    def finish(self, outs) -> ClosedGraph:
        """Build the closed graph whose outputs are `outs` (tracers or constants)."""
        out_atoms = [self.to_atom(x) for x in outs]
        g = Graph(self.constvars, self.inputs, self.equations, out_atoms)
        return ClosedGraph(g, self.consts)


def trace_flat(fun, in_avals, parent: Trace | None = None, arg_names=None,
               fun_desc: str = "") -> ClosedGraph:
    """Stage `fun(*tracers) -> list` over abstract inputs into a ClosedGraph.

    `arg_names` (one per input) and `fun_desc` let errors name the argument a
    traced value came from.
    """
    trace = StagingTrace(parent)
    trace.arg_names, trace.fun_desc = arg_names, fun_desc
    with new_trace(trace):
        args = [trace.new_arg(a) for a in in_avals]
        outs = fun(*args)
        closed = trace.finish(list(outs))
    if config.typecheck_graphs():
        typecheck(closed)
    return closed


def consts_to_inputs(closed: ClosedGraph) -> tuple[ClosedGraph, list]:
    """Move a closed graph's constvars to the front of its inputs.

    Returns the const-free graph and the values to pass for those inputs; this
    is how control-flow and jit bodies pass captured values (possibly tracers of
    an outer transform) explicitly, so the outer transform sees them.
    """
    g = closed.graph
    if not g.constvars:
        return closed, []
    ng = Graph([], g.constvars + g.inputs, g.equations, g.outputs)
    return ClosedGraph(ng, [], closed.in_tree, closed.out_tree), list(closed.consts)


class ShapeDtypeStruct:
    """A shape and dtype without data, as returned by `eval_shape`.

    Example:
        >>> ShapeDtypeStruct((2,), "float32")
        ShapeDtypeStruct(shape=(2,), dtype=float32)
    """
    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, weak_type=False):
        self.shape = tuple(shape)
        self.dtype = _dt.canonicalize(dtype)
        self.weak_type = weak_type

    @property
    def aval(self):
        return AbstractArray(self.shape, self.dtype, self.weak_type)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __eq__(self, o):
        return isinstance(o, ShapeDtypeStruct) and (self.shape, self.dtype) == (o.shape, o.dtype)

    def __hash__(self):
        return hash((self.shape, str(self.dtype)))

    def __repr__(self):
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype})"
