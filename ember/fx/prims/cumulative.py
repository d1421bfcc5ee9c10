"""Cumulative primitives along one axis (cumsum, cumprod, cummax, cummin, cumlogsumexp).

Example:
    >>> import numpy as np
    >>> from ember.fx.prims.cumulative import cumsum
    >>> cumsum(np.array([1., 2., 3.], np.float32), 0).tolist()
    [1.0, 3.0, 6.0]
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ..core import (PRIMITIVES, AbstractArray, Primitive, Zero, const_like, get_aval, shape_error,
                    tangent_aval)
from .reduce import _LOWP, _asnp, _check_dtype, _numeric, _ordered, _real_float
from .elementwise import from_order_keys, order_keys
from .rules import deflinear
from ..spelling import user_str


def _cum_abstract(name, allowed):
    def abstract_eval(x, *, axis, reverse):
        _check_dtype(name, x, allowed)
        if not 0 <= axis < x.ndim:
            raise shape_error(name, f"axis {axis} is out of range for operand {user_str(x)}")
        return AbstractArray(x.shape, x.dtype, x.weak_type)
    return abstract_eval


def _cum_impl(name, allowed, accumulate):
    def impl(x, *, axis, reverse):
        x = _asnp(x)
        d = x.dtype
        if not allowed(d) or not 0 <= axis < x.ndim:
            # The eager path skips abstract_eval: let it raise the clear error.
            PRIMITIVES[name].abstract_eval(get_aval(x), axis=axis, reverse=reverse)
        xc = x.astype(np.float32) if d in _LOWP else x
        if reverse:
            xc = np.flip(xc, axis)
        with np.errstate(over="ignore", invalid="ignore"):
            out = accumulate(xc, axis)
        if reverse:
            out = np.flip(out, axis)
        return np.ascontiguousarray(out).astype(d, copy=False)
    return impl


def _cum_batch(prim):
    def batch(axis_size, args, dims, *, axis, reverse):
        (x,), (d,) = args, dims
        return prim.bind(x, axis=axis + (axis >= d), reverse=reverse), d
    return batch


def _cumulative(name, allowed, accumulate):
    p = Primitive(name)
    p.abstract_eval = _cum_abstract(name, allowed)
    p.impl = _cum_impl(name, allowed, accumulate)
    p.batch = _cum_batch(p)
    p.kind = "reduction"
    return p


def _int_wrapping(npfn):
    def acc(x, axis):
        return npfn(x, axis=axis, dtype=x.dtype)
    return acc


def _from_plus_zero(acc):
    """A running sum that starts from +0.0, as XLA's (and `reduce_sum`): adding +0.0
    turns a -0.0 prefix sum (all of its terms -0.0) into +0.0 and changes nothing else."""
    def run(x, axis):
        out = acc(x, axis)
        return out + out.dtype.type(0) if out.dtype.kind in "fc" else out
    return run


cumsum_p = _cumulative("cumsum", _numeric, _from_plus_zero(_int_wrapping(np.cumsum)))
cumprod_p = _cumulative("cumprod", _numeric, _int_wrapping(np.cumprod))
def _ieee_accumulate(ufunc, op):
    """Running IEEE maximum/minimum (-0.0 < +0.0, NaN propagates): on order keys for floats."""
    def acc(x, axis):
        if x.dtype.kind != "f":
            return ufunc.accumulate(x, axis=axis)
        return from_order_keys(ufunc.accumulate(order_keys(x, op), axis=axis), x.dtype)
    return acc


cummax_p = _cumulative("cummax", _ordered, _ieee_accumulate(np.maximum, "max"))
cummin_p = _cumulative("cummin", _ordered, _ieee_accumulate(np.minimum, "min"))
cumlogsumexp_p = _cumulative("cumlogsumexp", _real_float,
                             _from_plus_zero(lambda x, axis: np.logaddexp.accumulate(x, axis=axis)))


def _bind_cum(prim, x, axis, reverse):
    axis = int(axis)
    if axis < 0:
        axis += get_aval(x).ndim
    return prim.bind(x, axis=axis, reverse=bool(reverse))


def cumsum(operand, axis: int = 0, reverse: bool = False):
    """Running sum along `axis` (from the end when `reverse`); integers wrap and
    float16/bfloat16 accumulate in float32.  Linear: its transpose runs the other way.

    Example:
        >>> import numpy as np
        >>> cumsum(np.array([1, 2, 3], np.int32), 0, reverse=True).tolist()
        [6, 5, 3]
    """
    return _bind_cum(cumsum_p, operand, axis, reverse)


def cumprod(operand, axis: int = 0, reverse: bool = False):
    """Running product along `axis` (from the end when `reverse`); its derivative
    needs no division, so it is exact where elements are 0.

    Example:
        >>> import numpy as np
        >>> cumprod(np.array([1., 2., 3.], np.float32), 0).tolist()
        [1.0, 2.0, 6.0]
    """
    return _bind_cum(cumprod_p, operand, axis, reverse)


def cummax(operand, axis: int = 0, reverse: bool = False):
    """Running maximum along `axis` (NaN propagates).  Each output's tangent is
    that of the nearest position at or before it (after it, with `reverse`)
    that attains the running maximum.

    Example:
        >>> import numpy as np
        >>> cummax(np.array([1., 3., 2.], np.float32), 0).tolist()
        [1.0, 3.0, 3.0]
    """
    return _bind_cum(cummax_p, operand, axis, reverse)


def cummin(operand, axis: int = 0, reverse: bool = False):
    """Running minimum along `axis` (NaN propagates); tangents as for `cummax`.

    Example:
        >>> import numpy as np
        >>> cummin(np.array([3., 1., 2.], np.float32), 0).tolist()
        [3.0, 1.0, 1.0]
    """
    return _bind_cum(cummin_p, operand, axis, reverse)


def cumlogsumexp(operand, axis: int = 0, reverse: bool = False):
    """Running log(sum(exp(x))) along `axis`, computed without overflow.

    Example:
        >>> import numpy as np
        >>> [round(v, 4) for v in cumlogsumexp(np.zeros(2, np.float32), 0).tolist()]
        [0.0, 0.6931]
    """
    return _bind_cum(cumlogsumexp_p, operand, axis, reverse)


# --- shifting and scanning helpers (built from primitives, so differentiable) -------

def _shifted(x, axis: int, offset: int, reverse: bool):
    """(y, valid): y[i] = x[i - offset] (x[i + offset] when `reverse`) along `axis`,
    clamped at the ends; `valid` marks where that source index was in range."""
    from .shape import broadcast_in_dim
    from .sort import _take_along_axis
    shape = get_aval(x).shape
    n = shape[axis]
    pos = np.arange(n)
    src = pos + offset if reverse else pos - offset
    valid = (src >= 0) & (src < n)
    idx = np.clip(src, 0, max(n - 1, 0)).astype(np.int32)
    y = _take_along_axis(x, broadcast_in_dim(idx, shape, (axis,)), axis)
    return y, broadcast_in_dim(valid, shape, (axis,))


def _prefix_scan(combine, elems, axis: int, reverse: bool):
    """Inclusive scan of tuples `elems` along `axis` with an associative,
    commutative `combine(earlier, later)`, in log2(n) doubling steps."""
    from .elementwise import select_n
    n = get_aval(elems[0]).shape[axis]
    offset = 1
    while offset < n:
        prev, valid = [], None
        for e in elems:
            s, valid = _shifted(e, axis, offset, reverse)
            prev.append(s)
        new = combine(prev, elems)
        elems = [select_n(valid, e, c) for e, c in zip(elems, new)]
        offset *= 2
    return elems


# --- jvp and transpose rules ---------------------------------------------------------

deflinear(cumsum_p, lambda ct, x, *, axis, reverse: [cumsum_p.bind(ct, axis=axis,
                                                                   reverse=not reverse)])


def _cumprod_jvp(primals, tangents, *, axis, reverse):
    (x,), (g,) = primals, tangents
    ans = cumprod_p.bind(x, axis=axis, reverse=reverse)
    if type(g) is Zero:
        return ans, Zero(tangent_aval(get_aval(ans)))
    from .elementwise import add, mul

    # Scanning (value, tangent) pairs with the product rule gives every prefix's
    # "sum of tangent times product of the others" without dividing by x, so it
    # is exact at zeros and every higher derivative is again such a scan.
    def product_rule(earlier, later):
        (pa, ta), (pb, tb) = earlier, later
        return [mul(pa, pb), add(mul(ta, pb), mul(pa, tb))]

    _, t = _prefix_scan(product_rule, [x, g], axis, reverse)
    return ans, t


def _cumlogsumexp_jvp(primals, tangents, *, axis, reverse):
    (x,), (g,) = primals, tangents
    ans = cumlogsumexp_p.bind(x, axis=axis, reverse=reverse)
    if type(g) is Zero:
        return ans, Zero(tangent_aval(get_aval(ans)))
    from .elementwise import (abs, add, bitwise_and, bitwise_not, eq, exp, is_finite, log1p,
                              logistic, max, mul, neg, select_n, sub)
    from .rules import broadcast_to_shape

    # Scanning with logaddexp's own derivative keeps every weight exp(a - r) <= 1;
    # turning sum_j g_j exp(x_j - out_i) into one cumsum would need exp(x_j) and
    # exp(-out_i) separately, which overflow or underflow.
    def logaddexp_rule(earlier, later):
        (la, ta), (lb, tb) = earlier, later
        zero = broadcast_to_shape(const_like(la, 0), get_aval(la).shape)
        # Equal infinities would give inf - inf: compare them as 0 - 0, so their
        # weights are 1/2 each (the limit along the diagonal).
        both_inf = bitwise_and(eq(la, lb), bitwise_not(is_finite(la)))
        delta = sub(select_n(both_inf, la, zero), select_n(both_inf, lb, zero))
        r = add(max(la, lb), log1p(exp(neg(abs(delta)))))
        wa = logistic(delta)
        wb = logistic(neg(delta))
        return [r, add(mul(ta, wa), mul(tb, wb))]

    _, t = _prefix_scan(logaddexp_rule, [x, g], axis, reverse)
    return ans, t


def _cum_extremum_jvp(prim):
    def jvp(primals, tangents, *, axis, reverse):
        (x,), (g,) = primals, tangents
        ans = prim.bind(x, axis=axis, reverse=reverse)
        xa = get_aval(x)
        if type(g) is Zero or not _dt.is_inexact(xa.dtype):
            return ans, Zero(tangent_aval(get_aval(ans)))
        from .elementwise import bitwise_or, eq, ne, select_n
        from .shape import broadcast_in_dim
        from .sort import _take_along_axis
        n = xa.shape[axis]
        iota = broadcast_in_dim(np.arange(n, dtype=np.int32), xa.shape, (axis,))
        # A position whose value equals the running extremum there (or is the NaN
        # that made it NaN) attains it; each output takes the tangent of the
        # nearest such position at or before it.
        attains = bitwise_or(eq(x, ans), ne(x, x))
        if reverse:
            far = broadcast_in_dim(np.int32(n - 1), xa.shape, ())
            src = cummin_p.bind(select_n(attains, far, iota), axis=axis, reverse=True)
        else:
            near = broadcast_in_dim(np.int32(0), xa.shape, ())
            src = cummax_p.bind(select_n(attains, near, iota), axis=axis, reverse=False)
        return ans, _take_along_axis(g, src, axis)
    prim.jvp = jvp
    prim.not_applicable.add("transpose")
    return prim


cumprod_p.jvp = _cumprod_jvp
cumprod_p.not_applicable.add("transpose")
cumlogsumexp_p.jvp = _cumlogsumexp_jvp
cumlogsumexp_p.not_applicable.add("transpose")
_cum_extremum_jvp(cummax_p)
_cum_extremum_jvp(cummin_p)
