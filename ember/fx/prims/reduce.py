"""Reduction primitives (reduce_sum/prod/max/min/and/or/xor, argmax/argmin) and their rules.

Example:
    >>> import numpy as np
    >>> from ember.fx.prims.reduce import reduce_sum
    >>> float(reduce_sum(np.ones((2, 3), np.float32), (0, 1)))
    6.0
"""
from __future__ import annotations

import math

import numpy as np

from ... import dtypes as _dt
from ..core import PRIMITIVES, AbstractArray, Primitive, Zero, get_aval, shape_error, tangent_aval
from .elementwise import from_order_keys, order_keys
from .rules import defjvp_zero, deflinear
from ..spelling import user_str

_LOWP = (_dt.float16, _dt.bfloat16)


def _asnp(x) -> np.ndarray:
    """A numpy array of `x` in its ember dtype (Python scalars arrive raw in impls)."""
    if type(x) is np.ndarray:
        return x
    return np.asarray(x, dtype=get_aval(x).dtype)


def _numeric(d):
    return d in _dt.NUMERIC


def _ordered(d):
    return d == _dt.bool_ or _dt.is_integer(d) or _dt.is_float(d)


def _intlike(d):
    return d == _dt.bool_ or _dt.is_integer(d)


def _real_float(d):
    return _dt.is_float(d)


_DTYPE_NOTE = {
    _numeric: "a number (not bool: convert first, or use reduce_or/reduce_and)",
    _ordered: "bool, an integer or a real float",
    _intlike: "bool or an integer",
    _real_float: "a real float",
}


def _check_dtype(name, x, allowed):
    if not allowed(x.dtype):
        raise TypeError(f"{name} does not accept dtype {x.dtype}: the operand must be "
                        f"{_DTYPE_NOTE[allowed]}")


def _check_axes(name, x, axes):
    if len(set(axes)) != len(axes) or any(not 0 <= a < x.ndim for a in axes):
        raise shape_error(name, f"axes {axes} are out of range or repeated for operand {user_str(x)}")


def _reduce_abstract(name, allowed):
    def abstract_eval(x, *, axes):
        _check_dtype(name, x, allowed)
        _check_axes(name, x, axes)
        shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
        return AbstractArray(shape, x.dtype, x.weak_type)
    return abstract_eval


def _reducer_batch(prim):
    def batch(axis_size, args, dims, *, axes):
        (x,), (d,) = args, dims
        new_axes = tuple(a + (a >= d) for a in axes)
        out_d = d - sum(a < d for a in new_axes)
        return prim.bind(x, axes=tuple(sorted(new_axes))), out_d
    return batch


def _normalize_axes(x, axes):
    nd = get_aval(x).ndim
    return tuple(sorted(int(a) + nd if int(a) < 0 else int(a) for a in axes))


def _kept_dims(ndim, axes):
    return tuple(i for i in range(ndim) if i not in axes)


def _reduced_size(aval, axes):
    n = 1
    for a in axes:
        n *= aval.shape[a]
    return n


# --- identities -------------------------------------------------------------------

def reduction_identity(op: str, dtype):
    """The identity of the monoid `op` ("sum", "prod", "max", "min", "and", "or",
    "xor") on `dtype`, as a Python scalar: what an empty reduction gives and what
    an accumulator starts from (the reference impls, the scheduler's padding of
    split reductions and the native renderers all read this one table).

    Example:
        >>> reduction_identity("and", np.int8), reduction_identity("max", np.float32)
        (-1, -inf)
    """
    d = np.dtype(dtype)
    if d == _dt.bool_:
        if op not in ("sum", "prod", "max", "min", "and", "or", "xor"):
            raise ValueError(f"no identity for {op!r} on bool")
        return op in ("and", "min", "prod")
    if op == "sum":
        return 0.0 if _dt.is_inexact(d) else 0
    if op == "prod":
        return 1.0 if _dt.is_inexact(d) else 1
    if _dt.is_float(d) and op in ("max", "min"):
        return -math.inf if op == "max" else math.inf
    if _dt.is_integer(d):
        info = np.iinfo(d)
        ident = {"max": info.min, "min": info.max, "or": 0, "xor": 0,
                 # all bits set: -1 for signed types
                 "and": -1 if d.kind == "i" else info.max}.get(op)
        if ident is not None:
            return int(ident)
    raise ValueError(f"no identity for {op!r} on {d.name}")


# --- numpy implementations --------------------------------------------------------

def _accumulating(npfn):
    """sum/prod: wrap integers like C, accumulate half precision in float32."""
    def impl(x, *, axes):
        x = _asnp(x)
        with np.errstate(over="ignore", invalid="ignore"):
            if x.dtype in _LOWP:
                return np.asarray(npfn(x, axis=axes, dtype=np.float32)).astype(x.dtype)
            return np.asarray(npfn(x, axis=axes, dtype=x.dtype))
    return impl


def _extremum(npfn):
    op = "max" if npfn is np.max else "min"

    def impl(x, *, axes):
        x = _asnp(x)
        d = x.dtype
        xc = x.astype(np.float32) if d == _dt.bfloat16 else x
        with np.errstate(invalid="ignore"):
            out = np.asarray(npfn(xc, axis=axes, initial=np.array(reduction_identity(op, d), dtype=xc.dtype)[()]))
        if xc.dtype.kind == "f" and np.any(out == 0):
            # IEEE maximum/minimum order the zeros (-0.0 < +0.0); numpy keeps the first
            init = order_keys(np.array(reduction_identity(op, d), xc.dtype), op)[()]
            keys = npfn(order_keys(xc, op), axis=axes, initial=init)
            out = np.where(out == 0, from_order_keys(keys, xc.dtype), out)
        return np.asarray(out).astype(d, copy=False)
    return impl


def _bitwise(ufunc):
    def impl(x, *, axes):
        x = _asnp(x)
        return np.asarray(ufunc.reduce(x, axis=axes, dtype=x.dtype))
    return impl


_sum_impl = _accumulating(np.sum)


def _sum_transpose(ct, x, *, axes):
    from .shape import broadcast_in_dim
    shape = x.aval.shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return [broadcast_in_dim(ct, shape, kept)]


def _guarded(prim, allowed, impl):
    """The eager path runs impls without abstract_eval: reject what it would reject."""
    def guarded(x, **params):
        x = _asnp(x)
        if not allowed(x.dtype):
            prim.abstract_eval(get_aval(x), **params)
        return impl(x, **params)
    return guarded


def _reducer(name, allowed, impl):
    p = Primitive(name)
    p.abstract_eval = _reduce_abstract(name, allowed)
    p.impl = _guarded(p, allowed, impl)
    p.batch = _reducer_batch(p)
    p.kind = "reduction"
    return p


reduce_sum_p = _reducer("reduce_sum", _numeric, _sum_impl)
deflinear(reduce_sum_p, _sum_transpose)
reduce_prod_p = _reducer("reduce_prod", _numeric, _accumulating(np.prod))
reduce_max_p = _reducer("reduce_max", _ordered, _extremum(np.max))
reduce_min_p = _reducer("reduce_min", _ordered, _extremum(np.min))
reduce_and_p = _reducer("reduce_and", _intlike, _bitwise(np.bitwise_and))
reduce_or_p = _reducer("reduce_or", _intlike, _bitwise(np.bitwise_or))
reduce_xor_p = _reducer("reduce_xor", _intlike, _bitwise(np.bitwise_xor))
for _p in (reduce_and_p, reduce_or_p, reduce_xor_p):
    defjvp_zero(_p)
del _p


def _bind_reduce(prim, x, axes):
    axes = _normalize_axes(x, axes)
    if not axes:
        return x
    return prim.bind(x, axes=axes)


def reduce_sum(operand, axes):
    """Sum over `axes` (distinct axes; negative ones count from the end).

    Integers wrap on overflow; float16/bfloat16 accumulate in float32; an
    empty reduction gives 0.

    Example:
        >>> import numpy as np
        >>> reduce_sum(np.arange(6, dtype=np.int32).reshape(2, 3), (1,)).tolist()
        [3, 12]
    """
    return _bind_reduce(reduce_sum_p, operand, axes)


def reduce_prod(operand, axes):
    """Product over `axes`; integers wrap, half precision accumulates in float32,
    an empty reduction gives 1.

    Example:
        >>> import numpy as np
        >>> reduce_prod(np.array([[1., 2.], [3., 4.]], np.float32), (0,)).tolist()
        [3.0, 8.0]
    """
    return _bind_reduce(reduce_prod_p, operand, axes)


def reduce_max(operand, axes):
    """Maximum over `axes`; NaN propagates.

    An empty reduction gives the dtype's lowest value (-inf, iinfo.min, False):
    the primitive is total, while `ember.numpy.max` raises on empty input as
    numpy does.  Its derivative averages the tangents over tied maxima.

    Example:
        >>> import numpy as np
        >>> reduce_max(np.array([1., 5., 2.], np.float32), (0,)).item()
        5.0
    """
    return _bind_reduce(reduce_max_p, operand, axes)


def reduce_min(operand, axes):
    """Minimum over `axes`; NaN propagates.

    An empty reduction gives the dtype's highest value (+inf, iinfo.max, True).
    Its derivative averages the tangents over tied minima.

    Example:
        >>> import numpy as np
        >>> reduce_min(np.array([1., 5., 2.], np.float32), (0,)).item()
        1.0
    """
    return _bind_reduce(reduce_min_p, operand, axes)


def reduce_and(operand, axes):
    """Logical (bool) or bitwise (integer) AND over `axes`; empty gives all ones.

    Example:
        >>> import numpy as np
        >>> bool(reduce_and(np.array([True, False]), (0,)))
        False
    """
    return _bind_reduce(reduce_and_p, operand, axes)


def reduce_or(operand, axes):
    """Logical (bool) or bitwise (integer) OR over `axes`; empty gives 0.

    Example:
        >>> import numpy as np
        >>> bool(reduce_or(np.array([True, False]), (0,)))
        True
    """
    return _bind_reduce(reduce_or_p, operand, axes)


def reduce_xor(operand, axes):
    """Logical (bool) or bitwise (integer) XOR over `axes`; empty gives 0.

    Example:
        >>> import numpy as np
        >>> int(reduce_xor(np.array([6, 3], np.int32), (0,)))
        5
    """
    return _bind_reduce(reduce_xor_p, operand, axes)


# --- jvp rules ----------------------------------------------------------------------

def _prod_jvp(primals, tangents, *, axes):
    (x,), (g,) = primals, tangents
    ans = reduce_prod_p.bind(x, axes=axes)
    xa = get_aval(x)
    if type(g) is Zero or not _dt.is_inexact(xa.dtype) or _reduced_size(xa, axes) == 0:
        return ans, Zero(tangent_aval(get_aval(ans)))
    from .shape import reshape, transpose
    kept = _kept_dims(xa.ndim, axes)
    flat_shape = tuple(xa.shape[i] for i in kept) + (_reduced_size(xa, axes),)

    def flatten(v):
        return reshape(transpose(v, kept + tuple(axes)), flat_shape)

    # d prod = sum_i g_i * prod_{j != i} x_j; the products of the others come
    # from exclusive prefix and suffix products, so a zero among the x_j needs
    # no division and every derivative order stays exact.
    others = _products_of_others(flatten(x), len(flat_shape) - 1)
    from .elementwise import mul
    return ans, reduce_sum(mul(flatten(g), others), (len(flat_shape) - 1,))


def _products_of_others(x, axis):
    """prod_{j != i} x_j along `axis`, for every i, without division."""
    from .cumulative import cumprod, _shifted
    from .elementwise import mul, select_n
    from .rules import broadcast_to_shape
    shape = get_aval(x).shape
    one = broadcast_to_shape(np.array(1, dtype=get_aval(x).dtype)[()], shape)
    before, valid_b = _shifted(cumprod(x, axis), axis, 1, reverse=False)
    after, valid_a = _shifted(cumprod(x, axis, reverse=True), axis, 1, reverse=True)
    return mul(select_n(valid_b, one, before), select_n(valid_a, one, after))


def _extremum_jvp(prim):
    def jvp(primals, tangents, *, axes):
        (x,), (g,) = primals, tangents
        ans = prim.bind(x, axes=axes)
        xa = get_aval(x)
        if type(g) is Zero or not _dt.is_inexact(xa.dtype) or _reduced_size(xa, axes) == 0:
            return ans, Zero(tangent_aval(get_aval(ans)))
        from .convert import convert_element_type
        from .elementwise import div, eq, mul
        from .shape import broadcast_in_dim
        # The tangent is the mean of the tangents at every location of the
        # extremum (ties share it equally); a NaN result gives a NaN tangent.
        where = eq(x, broadcast_in_dim(ans, xa.shape, _kept_dims(xa.ndim, axes)))
        mask = convert_element_type(where, xa.dtype)
        count = reduce_sum(mask, axes)
        return ans, div(reduce_sum(mul(g, mask), axes), count)
    prim.jvp = jvp
    prim.not_applicable.add("transpose")
    return prim


reduce_prod_p.jvp = _prod_jvp
reduce_prod_p.not_applicable.add("transpose")
_extremum_jvp(reduce_max_p)
_extremum_jvp(reduce_min_p)


# --- argmax / argmin ------------------------------------------------------------------

def _arg_abstract(name):
    def abstract_eval(x, *, axis, index_dtype):
        _check_dtype(name, x, _ordered)
        if not _dt.is_integer(index_dtype):
            raise TypeError(f"{name}: index_dtype must be an integer dtype, got {index_dtype}")
        if not 0 <= axis < x.ndim:
            raise shape_error(name, f"axis {axis} is out of range for operand {user_str(x)}")
        if x.shape[axis] == 0:
            raise shape_error(name, f"cannot take the {name[3:]} of an empty axis {axis} "
                              f"of operand {user_str(x)}")
        return AbstractArray(x.shape[:axis] + x.shape[axis + 1:], index_dtype)
    return abstract_eval


def _arg_impl(npfn, name):
    def impl(x, *, axis, index_dtype):
        x = _asnp(x)
        if not (_ordered(x.dtype) and _dt.is_integer(index_dtype)):
            PRIMITIVES[name].abstract_eval(get_aval(x), axis=axis, index_dtype=index_dtype)
        if x.dtype == _dt.bfloat16:
            x = x.astype(np.float32)
        return np.asarray(npfn(x, axis=axis)).astype(index_dtype)
    return impl


def _arg_batch(prim):
    def batch(axis_size, args, dims, *, axis, index_dtype):
        (x,), (d,) = args, dims
        new_axis = axis + (axis >= d)
        return prim.bind(x, axis=new_axis, index_dtype=index_dtype), d - (new_axis < d)
    return batch


argmax_p = Primitive("argmax")
argmax_p.kind = "reduction"
argmax_p.abstract_eval = _arg_abstract("argmax")
argmax_p.impl = _arg_impl(np.argmax, "argmax")
argmax_p.batch = _arg_batch(argmax_p)
defjvp_zero(argmax_p)

argmin_p = Primitive("argmin")
argmin_p.kind = "reduction"
argmin_p.abstract_eval = _arg_abstract("argmin")
argmin_p.impl = _arg_impl(np.argmin, "argmin")
argmin_p.batch = _arg_batch(argmin_p)
defjvp_zero(argmin_p)


def _bind_arg(prim, x, axis, index_dtype):
    axis = int(axis)
    if axis < 0:
        axis += get_aval(x).ndim
    return prim.bind(x, axis=axis, index_dtype=_dt.canonicalize(index_dtype))


def argmax(operand, axis: int, index_dtype):
    """Index of the first maximum along `axis` (NaN counts as the maximum, as in
    numpy); the axis must not be empty.

    Example:
        >>> import numpy as np
        >>> argmax(np.array([1., 3., 3.], np.float32), 0, np.int32).item()
        1
    """
    return _bind_arg(argmax_p, operand, axis, index_dtype)


def argmin(operand, axis: int, index_dtype):
    """Index of the first minimum along `axis` (NaN counts as the minimum).

    Example:
        >>> import numpy as np
        >>> argmin(np.array([2., 1., 1.], np.float32), 0, np.int32).item()
        1
    """
    return _bind_arg(argmin_p, operand, axis, index_dtype)
