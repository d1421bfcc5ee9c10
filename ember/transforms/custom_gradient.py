"""`custom_gradient`: JAX's one-function form of a custom VJP, where `fun` returns
its value together with the function that maps an output cotangent to the inputs'.

Built on `custom_vjp`: the forward pass traces the returned rule into a graph whose
consts (the values it closes over) are the residuals, so the rule may close over
anything the forward pass computed.

Example:
    >>> import ember, ember.numpy as enp
    >>> @ember.custom_gradient
    ... def clipped_log(x):
    ...     return enp.log(x), lambda g: (g / enp.maximum(x, 0.1),)
    >>> float(ember.grad(clipped_log)(0.01))
    10.0
"""
from __future__ import annotations

import functools

import numpy as np

from ..fx.core import get_aval, tangent_aval
from ..fx.ir import eval_graph
from ..tree import register_pytree_node, tree_flatten, tree_unflatten
from .closure import trace_closed
from .custom_derivatives import custom_vjp

__all__ = ["custom_gradient"]


class _Rule:
    """The traced rule as a residual: its consts are the children, the graph static."""

    def __init__(self, closed, out_tree, consts):
        self.closed, self.out_tree, self.consts = closed, out_tree, consts


register_pytree_node(_Rule, lambda r: (tuple(r.consts), (r.closed, r.out_tree)),
                     lambda aux, consts: _Rule(aux[0], aux[1], list(consts)))


def custom_gradient(fun):
    """`fun(*args) -> (value, vjp)` where `vjp(ct)` returns one cotangent per positional
    argument (a tuple; a single argument's may be returned bare).  The decorated
    function returns `value`, and reverse mode uses `vjp` (jax.custom_gradient).

    Example:
        >>> import ember, ember.numpy as enp
        >>> @ember.custom_gradient
        ... def scale_grad(x, s):
        ...     return x, lambda g: (g * s, enp.zeros_like(s))
        >>> float(ember.grad(lambda x: scale_grad(x, 3.0) * 2.0)(1.0))
        6.0
    """
    name = getattr(fun, "__name__", "fun")

    def call(args):
        got = fun(*args)
        if not (isinstance(got, tuple) and len(got) == 2 and callable(got[1])):
            raise TypeError(f"custom_gradient {name}: the function must return a pair "
                            f"(value, vjp_function), got {type(got).__name__}")
        return got

    @custom_vjp
    def wrapped(*args):
        return call(args)[0]

    def fwd(*args):
        ans, rule = call(args)
        leaves, tree = tree_flatten(ans)
        cts = tree_unflatten(tree, [np.zeros(a.shape, a.dtype) for a in
                                    (tangent_aval(get_aval(x)) for x in leaves)])
        closed, _, out_tree = trace_closed(rule, "custom_gradient", (cts,))
        return ans, (_Rule(closed, out_tree, list(closed.consts)), len(args))

    def bwd(res, ct):
        rule, n = res
        ct_leaves, _ = tree_flatten(ct)
        outs = eval_graph(rule.closed.graph, rule.consts, *ct_leaves)
        got = tree_unflatten(rule.out_tree, list(outs))
        if not isinstance(got, (tuple, list)) or (n == 1 and len(got) != 1):
            got = (got,)
        if len(got) != n:
            raise TypeError(f"custom_gradient {name}: the vjp function must return {n} "
                            f"cotangents (one per positional argument), got {len(got)}")
        return tuple(got)

    wrapped.defvjp(fwd, bwd)
    functools.update_wrapper(wrapped, fun, updated=())
    return wrapped
