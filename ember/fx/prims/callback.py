"""`debug_callback`: a host call with concrete values at execution time (ember.debug).

The primitive has no outputs and is `effectful`, so no pass drops, merges or
reorders it; its kind is "library", so a compiled program runs it as a host
step between kernels, with the buffers' values at that point of the program.

Example:
    >>> import numpy as np
    >>> seen = []
    >>> debug_callback(lambda v: seen.append(float(v)), np.float32(2.5))
    []
    >>> seen
    [2.5]
"""
from __future__ import annotations

import numpy as np

from ..core import Primitive

debug_callback_p = Primitive("debug_callback", multiple_results=True)
debug_callback_p.kind = "library"
debug_callback_p.effectful = True
# no outputs, so nothing to transpose: a callback is never on a linear path
debug_callback_p.not_applicable.add("transpose")


_VMAP_METHODS = ("batched", "sequential")


def debug_callback(callback, *args, vmap_method: str = "batched"):
    """Bind `debug_callback`: `callback(*numpy_values)` runs when the program does.
    Under vmap, "batched" makes one call with the batch (batch axis first),
    "sequential" one call per example, in order.

    Example:
        >>> debug_callback(lambda v: print("got", v), np.float32(1.0))
        got 1.0
        []
    """
    if vmap_method not in _VMAP_METHODS:
        raise ValueError(f"vmap_method must be one of {list(_VMAP_METHODS)}, got {vmap_method!r}")
    return debug_callback_p.bind(*args, callback=callback, vmap_method=vmap_method)


def _abstract(*avals, callback, vmap_method="batched"):
    return []


def _impl(*vals, callback, vmap_method="batched"):
    # a compiled program passes views of its arena: the callback may keep what it gets
    callback(*[np.array(v, copy=True) for v in vals])
    return []


def _jvp(primals, tangents, **params):
    # prints the primal values; the callback has no output, so no tangent either
    return debug_callback_p.bind(*primals, **params), []


def _batch(axis_size, args, dims, *, callback, vmap_method="batched"):
    from .rules import moveaxis
    from .shape import index_in_dim
    if vmap_method == "sequential":
        # one call per example, in order (unrolled: a host step per example when compiled);
        # unbatched operands go to every call as they are
        for i in range(axis_size):
            ex = [a if d is None else index_in_dim(a, i, d, keepdims=False) for a, d in zip(args, dims)]
            debug_callback_p.bind(*ex, callback=callback, vmap_method=vmap_method)
        return [], []
    # one call with the whole batch, the batch axis first (JAX's debug.print defaults to
    # per example; one call keeps compiled code a single host step)
    moved = [a if d is None else moveaxis(a, d, 0) for a, d in zip(args, dims)]
    return debug_callback_p.bind(*moved, callback=callback, vmap_method=vmap_method), []


def _taylor(primals, series, **params):
    return debug_callback_p.bind(*primals, **params), []


debug_callback_p.abstract_eval = _abstract
debug_callback_p.impl = _impl
debug_callback_p.jvp = _jvp
debug_callback_p.batch = _batch
debug_callback_p.taylor = _taylor
