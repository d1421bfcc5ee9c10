"""Forward mode: the JVP trace, `jvp`, and `jvp_graph` for higher-order primitives.

Example:
    >>> import ember, ember.numpy as enp
    >>> out, t = ember.jvp(enp.sin, (0.0,), (1.0,))
    >>> float(t)
    1.0
"""
from __future__ import annotations

from ..dtypes import float0
from ..fx.core import (Trace, Tracer, Zero, check_foreign, current_trace, get_aval, new_trace,
                       set_current_trace, tangent_aval)
from ..fx.ir import ClosedGraph, eval_graph
from ..fx.prims.rules import instantiate
from ..fx.staging import trace_flat
from ..tree import tree_flatten, tree_unflatten
from .. import dtypes as _dt
from .util import (PrimalTracer, as_ember, as_ember_args, as_ember_weak, at_user, check_same_structure, flat_with_aux,
                   float0_zeros, leaf_names, split_aux)


class JVPTracer(PrimalTracer):
    __slots__ = ("primal", "tangent")

    def __init__(self, trace, primal, tangent):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    def inner_values(self):
        return (self.primal,)


class JVPTrace(Trace):
    """Forward mode: primal and tangent travel together.  Rules run on
    `rule_trace()` (the parent here; linearize runs them on a partial-evaluation
    trace so that tangent work is staged)."""

    def rule_trace(self):
        return self.parent

    def lift(self, x, prim=None):
        if isinstance(x, JVPTracer) and x._trace is self:
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
        with set_current_trace(self.rule_trace()):
            out, tout = prim.jvp(primals, tangents, **params)
        if prim.multiple_results:
            return [self.wrap(o, t) for o, t in zip(out, tout)]
        return self.wrap(out, tout)

    def wrap(self, primal, tangent):
        if type(tangent) is Zero:
            return primal
        return JVPTracer(self, primal, tangent)

    def unpack(self, outs):
        """Split a function's outputs into primals and tangents (Zero where none)."""
        res_p, res_t = [], []
        for o in outs:
            if isinstance(o, JVPTracer) and o._trace is self:
                res_p.append(o.primal)
                res_t.append(o.tangent)
            else:
                if isinstance(o, Tracer):
                    check_foreign(self, o)
                res_p.append(o)
                res_t.append(Zero(tangent_aval(get_aval(o))))
        return res_p, res_t


def jvp_flat(fun, primals, tangents):
    """Run `fun` over flat lists under a fresh JVP trace; returns (outs, tangent_outs)
    where zero tangents are `Zero` instances."""
    trace = JVPTrace(current_trace())
    with new_trace(trace):
        ins = [x if type(t) is Zero else JVPTracer(trace, x, t) for x, t in zip(primals, tangents)]
        return trace.unpack(fun(*ins))


def jvp(fun, primals, tangents, has_aux: bool = False):
    """Forward-mode derivative: returns (fun(*primals), J @ tangents).

    Example:
        >>> import ember.numpy as enp
        >>> y, t = jvp(lambda x: x * x, (3.0,), (1.0,))
        >>> float(y), float(t)
        (9.0, 6.0)
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples (or lists) of arguments, "
                        f"got {type(primals).__name__} and {type(tangents).__name__}")
    if len(primals) != len(tangents):
        raise TypeError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    p_leaves, p_tree = tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_flatten(tuple(tangents))
    check_same_structure("jvp", p_tree, t_tree, "primals", "tangents")
    p_leaves = as_ember_args("jvp", fun, p_leaves, p_tree, convert=as_ember_weak)
    ts = []
    names = None
    for i, (p, t) in enumerate(zip(p_leaves, t_leaves)):
        pa = get_aval(p)
        ta = get_aval(t)
        if ta.shape != pa.shape:
            raise TypeError(f"jvp: tangent shape {ta.shape} does not match primal shape {pa.shape}")
        if (not ta.weak_type and ta.dtype != pa.dtype and _dt.is_inexact(pa.dtype)
                and ta.dtype != float0_dtype()):
            # as JAX: a float32 tangent for float64 code would silently lose precision
            names = names or leaf_names(p_tree, "primals")
            raise TypeError(
                f"jvp: the tangent of {names[i]} has dtype {ta.dtype} but the primal has dtype "
                f"{pa.dtype}; tangent dtypes must equal their primals' (pass "
                f"tangents[...].astype({str(pa.dtype)!r}), or a Python scalar)" + at_user())
        if not _dt.is_inexact(pa.dtype) and ta.dtype != float0_dtype():
            # as JAX: an integer or bool input has no tangent space; a tangent given for
            # it used to flow through the integer ops as if it were one
            names = names or leaf_names(p_tree, "primals")
            raise TypeError(
                f"jvp: {names[i]} has dtype {pa.dtype}, which has no tangents, but its tangent "
                f"has dtype {ta.dtype}; pass a float0 tangent (numpy.zeros({pa.shape}, "
                f"dtype=ember.dtypes.float0)), or make the primal floating point"
                f" (.astype('float32'))" + at_user())
        ts.append(Zero(tangent_aval(pa)) if ta.dtype == float0_dtype()
                  else as_ember_weak(t) if pa.weak_type and ta.weak_type and ta.dtype == pa.dtype
                  else as_ember(t, pa.dtype))
    flat, store = flat_with_aux(fun, p_tree, has_aux, "jvp")
    outs, touts = jvp_flat(flat, p_leaves, ts)
    outs, aux = split_aux(store, outs)
    touts = [float0_zeros(t.aval) if type(t) is Zero and t.aval.dtype == float0_dtype()
             else instantiate(t) for t in touts[:store["n_out"]]]
    res = (tree_unflatten(store["out_tree"], outs), tree_unflatten(store["out_tree"], touts))
    return res + (aux,) if has_aux else res


def float0_dtype():
    return float0


def jvp_graph(closed: ClosedGraph, nonzeros, instantiate_out=False):
    """The JVP of a closed graph as a new closed graph.

    Inputs: primals then the tangents of inputs marked in `nonzeros`.  Outputs:
    primal outputs then the tangents marked in the returned `out_nonzeros`
    (all of them when `instantiate_out` is True, or per-output booleans).
    """
    n = len(closed.in_avals)
    t_avals = [tangent_aval(a) for a, nz in zip(closed.in_avals, nonzeros) if nz]
    out_nz_box = []

    def fun(*args):
        primals = list(args[:n])
        it = iter(args[n:])
        tangents = [next(it) if nz else Zero(tangent_aval(a)) for a, nz in zip(closed.in_avals, nonzeros)]
        outs, touts = jvp_flat(lambda *xs: eval_graph(closed.graph, closed.consts, *xs), primals, tangents)
        inst = instantiate_out if isinstance(instantiate_out, (list, tuple)) else [instantiate_out] * len(outs)
        out_nz = [type(t) is not Zero or i for t, i in zip(touts, inst)]
        out_nz_box.append(out_nz)
        return outs + [instantiate(t) for t, nz in zip(touts, out_nz) if nz]

    g = trace_flat(fun, list(closed.in_avals) + t_avals)
    return g, out_nz_box[0]
