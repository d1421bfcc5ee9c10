"""`make_graph`: trace a Python function on example arguments into its graph,
with the transforms' argument checks (a non-array argument or output is named
by its path), so it lives with them rather than in the core's staging module.

Example:
    >>> import ember
    >>> print(ember.make_graph(lambda x: x * 2.0)(1.0).equations[0].prim)
    mul
"""
from __future__ import annotations

from ..fx.core import get_aval
from ..fx.staging import ShapeDtypeStruct, trace_flat
from ..tree import tree_flatten, tree_unflatten
from .util import argument_names, as_ember_args, flatten_outputs


def _split_static(args, static_argnums):
    static = {i: args[i] for i in static_argnums}
    dynamic = [a for i, a in enumerate(args) if i not in static]
    return static, dynamic


def _merge_static(static, dynamic, n):
    it = iter(dynamic)
    return [static[i] if i in static else next(it) for i in range(n)]


def make_graph(fun, static_argnums=(), *, return_shape: bool = False):
    """Return a function that traces `fun` on example arguments and returns its Graph.

    Example:
        >>> import ember
        >>> g = ember.make_graph(lambda x, y: x * y + 1.0)(2.0, 3.0)
        >>> [e.prim.name for e in g.equations]
        ['mul', 'add']
    """
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)

    def wrapped(*args, **kwargs):
        n = len(args)
        nums = tuple(i % n if n else i for i in static_argnums)
        static, dynamic = _split_static(args, nums)
        desc = f"make_graph({getattr(fun, '__name__', 'fun')})"
        leaves, in_tree = tree_flatten((dynamic, kwargs))
        dyn_nums = [i for i in range(n) if i not in static]
        in_avals = as_ember_args(desc, fun, leaves, in_tree, dyn_nums, with_kwargs=True,
                                 convert=get_aval)
        out_tree_box = []

        def flat_fun(*tracers):
            dyn, kw = tree_unflatten(in_tree, tracers)
            out = fun(*_merge_static(static, dyn, n), **kw)
            out_leaves, out_tree = flatten_outputs(desc, fun, out)
            out_tree_box.append(out_tree)
            return out_leaves

        names = argument_names(fun, in_tree, dyn_nums, with_kwargs=True)
        closed = trace_flat(flat_fun, in_avals, arg_names=names, fun_desc=desc)
        closed.in_tree = in_tree
        closed.out_tree = out_tree_box[0]
        if return_shape:
            shapes = tree_unflatten(closed.out_tree, [ShapeDtypeStruct(a.shape, a.dtype) for a in closed.out_avals])
            return closed, shapes
        return closed

    wrapped.__name__ = f"make_graph({getattr(fun, '__name__', 'fun')})"
    return wrapped


def make_jaxpr(fun, static_argnums=(), *, return_shape: bool = False):
    """JAX's name for `make_graph`: a function that traces `fun` on example arguments
    and returns its printable graph (ember's jaxpr).

    Example:
        >>> import ember, numpy as np
        >>> print(ember.make_jaxpr(lambda x: x * 2.0)(np.float32(1.0)))
        { lambda ; a:f32[]. let
            b:f32[] = mul a 2.0
          in (b,) }
    """
    return make_graph(fun, static_argnums, return_shape=return_shape)
