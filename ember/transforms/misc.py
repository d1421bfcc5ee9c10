"""`stop_gradient` and `eval_shape`.

Example:
    >>> import ember, ember.numpy as enp
    >>> float(ember.grad(lambda x: x * ember.stop_gradient(x))(3.0))
    3.0
"""
from __future__ import annotations

import numpy as np

from ..fx.core import AbstractArray, Primitive, Zero, get_aval, tangent_aval
from ..fx.prims.rules import defvectorized
from ..fx.staging import ShapeDtypeStruct
from ..tree import tree_map, tree_unflatten
from .graph_api import make_graph

stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.abstract_eval = lambda x: x
stop_gradient_p.impl = lambda x: x
defvectorized(stop_gradient_p)
stop_gradient_p.kind = "identity"
stop_gradient_p.jvp = lambda primals, tangents: (stop_gradient_p.bind(primals[0]),
                                                 Zero(tangent_aval(get_aval(primals[0]))))
stop_gradient_p.not_applicable.add("transpose")


def stop_gradient(x):
    """The identity whose derivative is zero (applied leaf-wise to pytrees).

    Example:
        >>> import ember
        >>> float(ember.grad(lambda x: ember.stop_gradient(x) ** 2 + x)(2.0))
        1.0
    """
    return tree_map(stop_gradient_p.bind, x)


def eval_shape(fun, *args, **kwargs):
    """Shapes and dtypes of fun(*args) without computing anything.

    Example:
        >>> import ember.numpy as enp
        >>> eval_shape(lambda x: x[None] * 2.0, enp.ones(3))
        ShapeDtypeStruct(shape=(1, 3), dtype=float32)
    """
    args = tree_map(lambda a: a.aval if isinstance(a, ShapeDtypeStruct) else a, args)
    closed = make_graph(lambda *a: fun(*a, **kwargs))(*[_placeholder(a) for a in args])
    return tree_unflatten(closed.out_tree, [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type)
                                            for a in closed.out_avals])


def _placeholder(a):
    """ShapeDtypeStructs stand for arrays: stage over zeros of that type (never computed)."""
    if isinstance(a, AbstractArray):
        return np.broadcast_to(np.zeros((), a.dtype), a.shape)
    return a
