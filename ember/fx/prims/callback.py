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


def debug_callback(callback, *args):
    """Bind `debug_callback`: `callback(*numpy_values)` runs when the program does.

    Example:
        >>> debug_callback(lambda v: print("got", v), np.float32(1.0))
        got 1.0
        []
    """
    return debug_callback_p.bind(*args, callback=callback)


def _abstract(*avals, callback):
    return []


def _impl(*vals, callback):
    # a compiled program passes views of its arena: the callback may keep what it gets
    callback(*[np.array(v, copy=True) for v in vals])
    return []


def _jvp(primals, tangents, *, callback):
    # prints the primal values; the callback has no output, so no tangent either
    return debug_callback_p.bind(*primals, callback=callback), []


def _batch(axis_size, args, dims, *, callback):
    # one call with the whole batch, the batch axis first (JAX's default for debug.print
    # is per example; one call keeps compiled code a single host step per iteration)
    from .rules import moveaxis
    moved = [a if d is None else moveaxis(a, d, 0) for a, d in zip(args, dims)]
    return debug_callback_p.bind(*moved, callback=callback), []


def _taylor(primals, series, *, callback):
    return debug_callback_p.bind(*primals, callback=callback), []


debug_callback_p.abstract_eval = _abstract
debug_callback_p.impl = _impl
debug_callback_p.jvp = _jvp
debug_callback_p.batch = _batch
debug_callback_p.taylor = _taylor
