"""`pure_callback`: a host function of array values, with declared result shapes,
inside traced and compiled code (JAX's `jax.pure_callback`).

The primitive is "library" kind, so a compiled program runs it as a host step
with the values of that point of the program; unlike `debug_callback` it is not
effectful: it has results, and passes may drop it when they are unused or merge
two identical calls, as JAX may.  It has no derivative (JAX's neither): give one
with `ember.custom_jvp` / `ember.custom_vjp`.  Under `vmap` the `vmap_method`
says how the batch reaches the function.

Example:
    >>> import numpy as np, ember
    >>> f = lambda x: ember.pure_callback(np.sinc, ember.ShapeDtypeStruct(x.shape, x.dtype), x)
    >>> ember.jit(f)(np.zeros(2, np.float32)).tolist()
    [1.0, 1.0]
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..fx.core import AbstractArray, Primitive, get_aval
from ..fx.prims.rules import bdim_to_front
from ..fx.prims.shape import broadcast_in_dim, expand_dims
from ..fx.spelling import user_str
from ..tree import tree_flatten, tree_unflatten
from .control_flow import map as lax_map

pure_callback_p = Primitive("pure_callback", multiple_results=True)
pure_callback_p.kind = "library"
pure_callback_p.not_applicable.add("transpose")

_VMAP_METHODS = ("sequential", "expand_dims", "broadcast_all")


def _abstract(*avals, callback, result_avals, vmap_method):
    return list(result_avals)


def _impl(*vals, callback, result_avals, vmap_method):
    # a compiled program passes views of its arena: the callback may keep what it gets
    out = callback(*[np.array(v, copy=True) for v in vals])
    leaves, _ = tree_flatten(out)
    if len(leaves) != len(result_avals):
        raise TypeError(f"pure_callback: {_name(callback)} returned {len(leaves)} arrays, but "
                        f"result_shape_dtypes declares {len(result_avals)}")
    res = []
    for i, (v, want) in enumerate(zip(leaves, result_avals)):
        v = np.asarray(v)
        if v.shape != want.shape or v.dtype != want.dtype:
            got = user_str(AbstractArray(v.shape, v.dtype))
            raise TypeError(f"pure_callback: result {i} of {_name(callback)} is {got}, but "
                            f"result_shape_dtypes declares {user_str(want)}; return exactly that "
                            f"shape and dtype (np.asarray(r, dtype))")
        res.append(v)
    return res


def _name(fn) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _jvp(primals, tangents, *, callback, **_):
    raise TypeError(f"pure_callback: cannot differentiate the host function {_name(callback)}; "
                    f"give it a derivative with ember.custom_jvp or ember.custom_vjp")


def _batch(axis_size, args, dims, *, callback, result_avals, vmap_method):
    if vmap_method is None:
        raise ValueError(f"pure_callback: {_name(callback)} is under vmap, but no vmap_method was "
                         f"given; pass vmap_method='sequential' (one call per example), "
                         f"'expand_dims' (one call, unbatched operands get a size-1 leading axis) "
                         f"or 'broadcast_all' (one call, every operand batched)")
    batched_avals = [AbstractArray((axis_size,) + a.shape, a.dtype) for a in result_avals]
    if vmap_method == "sequential":
        idx = [i for i, d in enumerate(dims) if d is not None]
        moved = [bdim_to_front(args[i], dims[i], axis_size) for i in idx]

        def one(xs):
            full = list(args)
            for i, x in zip(idx, xs):
                full[i] = x
            return tuple(pure_callback_p.bind(*full, callback=callback, result_avals=result_avals,
                                              vmap_method=vmap_method))
        return list(lax_map(one, tuple(moved))), [0] * len(result_avals)
    ops = []
    for a, d in zip(args, dims):
        if d is not None:
            ops.append(bdim_to_front(a, d, axis_size))
        elif vmap_method == "expand_dims":
            ops.append(expand_dims(a, (0,)))
        else:
            av = get_aval(a)
            ops.append(broadcast_in_dim(a, (axis_size,) + av.shape, tuple(range(1, av.ndim + 1))))
    outs = pure_callback_p.bind(*ops, callback=callback, result_avals=tuple(batched_avals),
                                vmap_method=vmap_method)
    return outs, [0] * len(result_avals)


pure_callback_p.abstract_eval = _abstract
pure_callback_p.impl = _impl
pure_callback_p.jvp = _jvp
pure_callback_p.batch = _batch
pure_callback_p.taylor = lambda primals, series, **params: _jvp(primals, series, **params)


def pure_callback(callback, result_shape_dtypes, *args, vmap_method: str | None = None, **kwargs):
    """Call the host function `callback(*args, **kwargs)` on concrete numpy values when the
    program runs, eagerly or compiled, returning arrays of `result_shape_dtypes` (a pytree
    of `ember.ShapeDtypeStruct`s or anything with `.shape` and `.dtype`).  The function
    must be pure: ember may drop an unused call or merge two identical ones.

    Under `vmap`, `vmap_method` is required: "sequential" calls once per example (in a
    loop), "expand_dims" calls once with the batch axis first and a size-1 axis on
    unbatched operands, "broadcast_all" once with every operand batched; the function
    must then return results with the batch axis first.  There is no derivative: wrap
    the call in `ember.custom_jvp` / `ember.custom_vjp` to give one.

    Example:
        >>> import numpy as np, scipy.special, ember
        >>> def erfcx(x):
        ...     spec = ember.ShapeDtypeStruct(x.shape, x.dtype)
        ...     return ember.pure_callback(lambda v: scipy.special.erfcx(v).astype(v.dtype), spec, x,
        ...                                vmap_method="expand_dims")
        >>> [round(v, 4) for v in ember.jit(erfcx)(np.array([0.0, 1.0], np.float32)).tolist()]
        [1.0, 0.4276]
    """
    from ..numpy import asarray
    if vmap_method is not None and vmap_method not in _VMAP_METHODS:
        raise ValueError(f"pure_callback: vmap_method must be one of {list(_VMAP_METHODS)}, "
                         f"got {vmap_method!r}")
    spec_leaves, out_tree = tree_flatten(result_shape_dtypes)
    result_avals = []
    for s in spec_leaves:
        if not (hasattr(s, "shape") and hasattr(s, "dtype")):
            raise TypeError(f"pure_callback: result_shape_dtypes must hold objects with .shape and "
                            f".dtype (ember.ShapeDtypeStruct), got a {type(s).__name__}")
        result_avals.append(AbstractArray(tuple(int(n) for n in s.shape), _dt.canonicalize(s.dtype)))
    leaves, in_tree = tree_flatten((args, kwargs))
    ops = [asarray(x) for x in leaves]

    def flat(*vals):
        a, kw = tree_unflatten(in_tree, list(vals))
        return callback(*a, **kw)
    flat.__qualname__ = _name(callback)
    outs = pure_callback_p.bind(*ops, callback=flat, result_avals=tuple(result_avals),
                                vmap_method=vmap_method)
    return tree_unflatten(out_tree, list(outs))
