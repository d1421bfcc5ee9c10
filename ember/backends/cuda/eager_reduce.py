"""Eager rules of the reductions (`fx/prims/reduce.py`), the running sums and
products (`fx/prims/cumulative.py`) and `dot_general` (`fx/prims/contraction.py`)
over an array module `xp`.

Sums and products wrap integers and accumulate half precision in float32; float
max/min order zeros by sign (-0 < +0) through integer order keys and propagate
NaN; `dot_general` lays both operands out as one batched matmul (cuBLAS on the
GPU) and recomputes, as the reference does, the elements whose partial sums could
overflow or came out non-finite, so inf/NaN never come from the summation order.

Example:
    >>> import numpy as np
    >>> from ember.fx.prims.reduce import reduce_max_p
    >>> from .eager import run_rule
    >>> run_rule(np, reduce_max_p, [np.array([-0.0, 0.0, -1.0], np.float32)], dict(axes=(0,))).item()
    0.0
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ...fx.prims import contraction as K
from ...fx.prims import reduce as R
from .eager import NOT_COVERED, eager_rule, is_float, is_lowp, quiet
from .eager_elementwise import from_order_keys, order_keys


def _accumulating(name):
    def rule(xp, x, *, axes):
        with quiet(xp):
            if is_lowp(x.dtype):
                return xp.asarray(getattr(xp, name)(x.astype(np.float32), axis=axes,
                                                    dtype=np.float32)).astype(x.dtype)
            return xp.asarray(getattr(xp, name)(x, axis=axes, dtype=x.dtype))
    return rule


def _extremum(op):
    def rule(xp, x, *, axes):
        d = x.dtype
        xc = x.astype(np.float32) if d == _dt.bfloat16 else x
        ident = R.reduction_identity(op, d)
        fn = xp.max if op == "max" else xp.min
        with quiet(xp):
            if any(x.shape[a] == 0 for a in axes):
                # an empty reduction is the identity (numpy's `initial`, which CuPy lacks)
                shape = tuple(n for i, n in enumerate(x.shape) if i not in axes)
                return xp.full(shape, ident, dtype=xc.dtype).astype(d)
            out = xp.asarray(fn(xc, axis=axes))
            if is_float(xc.dtype):
                keys = fn(order_keys(xp, xc, op), axis=axes)
                out = xp.where(out == 0, from_order_keys(xp, xp.asarray(keys), xc.dtype), out)
        return xp.asarray(out).astype(d, copy=False)
    return rule


def _bitwise(name):
    def rule(xp, x, *, axes):
        if x.dtype == np.bool_:
            # logical folds: all / any / parity, which every array module has
            if name == "bitwise_and":
                return xp.asarray(xp.all(x, axis=axes))
            if name == "bitwise_or":
                return xp.asarray(xp.any(x, axis=axes))
            return xp.asarray(xp.count_nonzero(x, axis=axes) % 2 == 1)
        fn = getattr(getattr(xp, name), "reduce", None)
        if fn is None:   # an array module whose ufuncs cannot reduce: run it compiled
            return NOT_COVERED
        out = x
        try:
            for a in sorted(axes, reverse=True):   # one axis at a time, as every module allows
                out = fn(out, axis=a)
        except (NotImplementedError, TypeError):   # a reduce this module does not implement
            return NOT_COVERED
        return xp.asarray(out).astype(x.dtype, copy=False)
    return rule


eager_rule(R.reduce_sum_p)(_accumulating("sum"))
eager_rule(R.reduce_prod_p)(_accumulating("prod"))
eager_rule(R.reduce_max_p)(_extremum("max"))
eager_rule(R.reduce_min_p)(_extremum("min"))
eager_rule(R.reduce_and_p)(_bitwise("bitwise_and"))
eager_rule(R.reduce_or_p)(_bitwise("bitwise_or"))
eager_rule(R.reduce_xor_p)(_bitwise("bitwise_xor"))


def _arg(name):
    def rule(xp, x, *, axis, index_dtype):
        if x.dtype == _dt.bfloat16:
            x = x.astype(np.float32)
        return xp.asarray(getattr(xp, name)(x, axis=axis)).astype(index_dtype)
    return rule


eager_rule(R.argmax_p)(_arg("argmax"))
eager_rule(R.argmin_p)(_arg("argmin"))


# --- dot_general ------------------------------------------------------------------------

@eager_rule(K.dot_general_p)
def _dot_general(xp, lhs, rhs, *, dimension_numbers, preferred_element_type=None):
    out_dtype = preferred_element_type if preferred_element_type is not None else lhs.dtype
    cd = K._compute_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
    lhs, rhs = lhs.astype(cd, copy=False), rhs.astype(cd, copy=False)
    (lc, rc), (lb, rb) = dimension_numbers
    lf = K._free_dims(lhs.ndim, lc, lb)
    rf = K._free_dims(rhs.ndim, rc, rb)
    bshape = tuple(lhs.shape[d] for d in lb)
    mshape = tuple(lhs.shape[d] for d in lf)
    nshape = tuple(rhs.shape[d] for d in rf)
    b, m, n = (int(np.prod(s, dtype=np.int64)) for s in (bshape, mshape, nshape))
    k = int(np.prod([lhs.shape[d] for d in lc], dtype=np.int64))
    a = xp.transpose(lhs, tuple(lb) + lf + tuple(lc)).reshape(b, m, k)
    c = xp.transpose(rhs, tuple(rb) + tuple(rc) + rf).reshape(b, k, n)
    with quiet(xp):
        # one product without batch dims, as the reference computes it
        out = xp.matmul(a[0], c[0])[None] if not lb else xp.matmul(a, c)
    if cd.kind == "f" and k and out.size:
        _recompute_nonfinite(xp, a, c, out)
    out = out.reshape(bshape + mshape + nshape)
    return out.astype(out_dtype, copy=False)


def _max_exponents(xp, x):
    m = xp.where(xp.isfinite(x), xp.abs(x), 0.0).astype(np.float64).max(axis=-1)
    e = ((m.view(np.uint64) >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64) - 1022
    return xp.maximum(e, 0)


def _pow2(xp, e):
    return ((e + 1023).astype(np.uint64) << np.uint64(52)).view(np.float64)


def _recompute_nonfinite(xp, a, c, out):
    """`contraction._recompute_nonfinite` over `xp` (in place on `out`): the elements
    that are not finite or whose partial sums could overflow, summed again in
    float64 in order of k with power-of-two scaling.  The common case (finite,
    small operands, finite result) costs two reductions and one comparison."""
    limit = K.overflow_exponent(out.dtype, a.shape[2])
    with quiet(xp):
        big = [max(abs(float(x.max())), abs(float(x.min()))) if x.size else 0.0 for x in (a, c)]
        if all(np.isfinite(big)):
            e = [max(int(np.frexp(v)[1]), 0) for v in big]
            if e[0] + e[1] < limit and bool(xp.isfinite(out).all()):
                return
        ea_rows = _max_exponents(xp, a)
        eb_cols = _max_exponents(xp, xp.swapaxes(c, 1, 2))
        risky = ea_rows[:, :, None] + eb_cols[:, None, :] >= limit
        bi, i, j = xp.nonzero(~xp.isfinite(out) | risky)
        if not len(bi):
            return
        rows = a[bi, i, :].astype(np.float64)
        cols = xp.swapaxes(c, 1, 2)[bi, j, :].astype(np.float64)
        ea, eb = ea_rows[bi, i], eb_cols[bi, j]
        rows = rows * _pow2(xp, -(ea >> 1))[:, None] * _pow2(xp, -(ea - (ea >> 1)))[:, None]
        cols = cols * _pow2(xp, -(eb >> 1))[:, None] * _pow2(xp, -(eb - (eb >> 1)))[:, None]
        acc = xp.zeros(len(bi))
        for t in range(rows.shape[1]):
            acc = acc + rows[:, t] * cols[:, t]
        e = ea + eb
        e1 = e // 3
        e2 = (e - e1) // 2
        acc = acc * _pow2(xp, e1) * _pow2(xp, e2) * _pow2(xp, e - e1 - e2)
        out[bi, i, j] = acc.astype(out.dtype)


