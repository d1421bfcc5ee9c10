"""The Taylor rule of scatter_mul: products of the series of every update landing
on a position, in rounds (loops over the rounds need `ember.lax`'s control flow,
so the rule lives above fx and is installed when `ember.jet` loads).

Example:
    >>> from ember.fx.core import PRIMITIVES
    >>> PRIMITIVES["scatter_mul"].taylor.__name__
    '_scatter_mul_rule'
"""
from __future__ import annotations

import math

import numpy as np

from .. import lax
from ..fx.core import PRIMITIVES as P, const_like
from ..fx.prims import elementwise as ew, indexing as ix
from ..fx.prims.rules import aval_of, broadcast_to_shape, zeros
from ..fx.prims.taylor import _finish, _full, s_mul


# --- scatter_mul ------------------------------------------------------------------------

# up to this many update slots scatter_mul's rule runs one round per slot (static,
# reverse-differentiable); beyond, rounds until no update is left (while_loop)
_STATIC_ROUNDS = 16

def _scatter_mul_rule(primals, series, **params):
    """y = x * P with P(t), at each operand position, the product of the series of
    the updates that land there (1 where none do).

    P is built by Cauchy products, one per *round*: in each round every operand
    position takes one of its remaining updates (the highest-numbered, chosen by a
    scatter_max of update ids), and P is multiplied by the series so scattered.
    With at most `_STATIC_ROUNDS` update slots there is one round per slot (or a
    single one for unique indices); with more, a while_loop runs rounds until no
    update is left (as many as the most updates any position receives).  Only products and sums:
    exact with zero updates and as accurate as `s_mul`, O(K^2) per round, where
    the jvp-derived rule re-entered scatter_mul twice per order (2^K)."""
    x0, idx, u0 = primals
    sx, su = series[0], series[2]
    K = len(sx)
    ans = ix.scatter_mul_p.bind(x0, idx, u0, **params)
    if all(t is None for t in su):
        # P is constant in t: the rule is linear in the operand
        return _finish(ans, [ans] + [None if t is None else ix.scatter_mul_p.bind(t, idx, u0, **params)
                                     for t in sx])
    xa, ua = aval_of(x0).strip_weak(), aval_of(u0).strip_weak()
    u = [u0] + [zeros(ua) if t is None else t for t in su]
    ids = np.arange(max(ua.size, 1), dtype=np.int32)[:ua.size].reshape(ua.shape)
    none_x = broadcast_to_shape(np.int32(-1), xa.shape)
    none_u = broadcast_to_shape(np.int32(-1), ua.shape)
    one_x = broadcast_to_shape(const_like(u0, 1), xa.shape)
    one_u = broadcast_to_shape(const_like(u0, 1), ua.shape)
    zero_x, zero_u = zeros(xa), zeros(ua)

    def cond(carry):
        return carry[-1]

    def body(carry):
        p, remaining = carry[:K + 1], carry[K + 1]
        best = ix.scatter_max_p.bind(none_x, idx, ew.select_n(remaining, none_u, ids), **params)
        back = ix._inverse_gather(best, idx, ua.shape, **params)
        chosen = lax.bitwise_and(remaining, ew.eq(back, ids))
        # exactly one chosen update per position, so a product / sum scatters it alone
        s = [ix.scatter_mul_p.bind(one_x, idx, ew.select_n(chosen, one_u, u[0]), **params)]
        s += [ix.scatter_add_p.bind(zero_x, idx, ew.select_n(chosen, zero_u, u[k]), **params)
              for k in range(1, K + 1)]
        p = [zero_x if t is None else t for t in s_mul(list(p), s)]
        remaining = lax.bitwise_and(remaining, lax.bitwise_not(chosen))
        # stop when nothing is left, or nothing was chosen (updates a "drop" mode ignores)
        go = lax.bitwise_and(lax.reduce_or(remaining, tuple(range(ua.ndim))),
                             lax.reduce_or(chosen, tuple(range(ua.ndim))))
        return tuple(p) + (remaining, go)

    remaining = broadcast_to_shape(np.bool_(True), ua.shape)
    init = (one_x,) + (zero_x,) * K + (remaining, np.bool_(ua.size > 0))
    wdims = set(params["dimension_numbers"].update_window_dims)
    slots = math.prod(d for i, d in enumerate(ua.shape) if i not in wdims)
    if params["unique_indices"] or slots <= _STATIC_ROUNDS:
        # no position receives more updates than there are slots: a fixed number of
        # rounds (a scan, so reverse mode can differentiate the series too)
        rounds = 1 if params["unique_indices"] else slots
        p = list(lax.fori_loop(0, rounds, lambda i, carry: body(carry), init)[:K + 1])
    else:
        p = list(lax.while_loop(cond, body, init)[:K + 1])
    y = s_mul(_full(x0, sx), p)
    return _finish(ans, [ans] + y[1:])


P["scatter_mul"].taylor = _scatter_mul_rule
