"""`closure_convert`: a function's closed-over float arrays made explicit arguments, so
that custom derivative rules (custom_vjp, custom_root) can differentiate with respect to
them."""
from __future__ import annotations

from .. import dtypes as _dt
from ..fx.core import get_aval
from ..fx.ir import eval_graph
from ..fx.staging import trace_flat
from ..tree import tree_flatten, tree_unflatten
from .util import as_ember, as_ember_args, fun_location

__all__ = ["closure_convert", "trace_closed"]


def trace_closed(fun, api, example_args):
    """Trace `fun(*example_args)` into a closed graph: returns (closed, in_tree, out_tree).
    The graph's consts are the values `fun` closed over (possibly outer tracers)."""
    leaves, in_tree = tree_flatten(tuple(example_args))
    leaves = as_ember_args(api, fun, leaves, in_tree)
    box = []

    def flat(*xs):
        out = fun(*tree_unflatten(in_tree, list(xs)))
        ol, ot = tree_flatten(out)
        box.append(ot)
        return [as_ember(o) for o in ol]

    closed = trace_flat(flat, [get_aval(x) for x in leaves], fun_desc=fun_location(fun))
    return closed, in_tree, box[0]


def closure_convert(fun, *example_args):
    """JAX's `closure_convert`: returns `(converted, consts)` where `consts` are the float
    arrays `fun` closes over (tracers of an enclosing transform among them) and
    `converted(*args, *consts)` computes `fun(*args)` from them.  `converted` is traced
    for the shapes and dtypes of `example_args`.  Integer and boolean values it closes
    over stay inside (they have no derivative), as do concrete rank-0 values, which
    tracing inlines as literals; tracers of an enclosing transform are always hoisted.

    Example:
        >>> import ember, ember.numpy as enp
        >>> def outer(w):
        ...     f = lambda x: enp.sin(w * x)
        ...     g, consts = ember.closure_convert(f, 1.0)
        ...     return g(2.0, *consts)
        >>> round(float(ember.grad(outer)(0.5)), 6) == round(2 * float(enp.cos(1.0)), 6)
        True
    """
    closed, in_tree, out_tree = trace_closed(fun, "closure_convert", example_args)
    consts = list(closed.consts)
    hoist = [i for i, c in enumerate(consts) if _dt.is_inexact(get_aval(c).dtype)]
    kept = {i: c for i, c in enumerate(consts) if i not in set(hoist)}
    in_avals = closed.in_avals
    name = fun_location(fun)

    def converted(*args):
        n = len(args) - len(hoist)
        if n < 0:
            raise TypeError(f"closure_convert: the converted {name} takes its arguments and "
                            f"then {len(hoist)} closed-over arrays; got {len(args)} values")
        leaves, tree = tree_flatten(tuple(args[:n]))
        if tree != in_tree:
            raise TypeError(f"closure_convert: the converted {name} was traced for arguments "
                            f"of structure {in_tree}, got {tree}")
        leaves = [as_ember(x, a.dtype) for x, a in zip(leaves, in_avals)]
        for x, a in zip(leaves, in_avals):
            if get_aval(x).shape != a.shape:
                raise TypeError(f"closure_convert: the converted {name} was traced for "
                                f"{a.str_user()}, got {get_aval(x).str_user()}")
        it = iter(args[n:])
        cs = [kept[i] if i in kept else next(it) for i in range(len(consts))]
        return tree_unflatten(out_tree, eval_graph(closed.graph, cs, *leaves))

    return converted, [consts[i] for i in hoist]
