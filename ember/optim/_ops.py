"""The few array operations the optimisers and schedules use, resolved from `ember.numpy`.

Every name is looked up in `ember.numpy` at call time; while the namespace is
still being filled in, a missing name falls back to the equivalent `ember.lax`
composition (same promotion and broadcasting), so optimiser math always binds
ember primitives and therefore traces under `jit` and differentiates.

Example:
    >>> from ember.optim import _ops
    >>> float(_ops.sqrt(_ops.asarray(4.0)))
    2.0
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .. import dtypes as _dt
from .. import lax as _lax
from ..array import Array
from ..fx.core import Tracer, get_aval
from ..numpy import _core as _core

import ember.numpy as _enp

float64 = _dt.float64
int32 = _dt.int32
bool_ = _dt.bool_


def _resolve(name, fallback):
    def f(*args, **kwargs):
        impl = getattr(_enp, name, None)
        return impl(*args, **kwargs) if impl is not None else fallback(*args, **kwargs)
    f.__name__ = name
    f.__doc__ = f"`ember.numpy.{name}` (or its `ember.lax` equivalent until that lands)."
    return f


def _broadcast_all(args):
    shape = _core.broadcast_shapes(*[get_aval(a).shape for a in args], op="where")
    return [_core.broadcast_to(a, shape) if get_aval(a).shape != shape else a for a in args]


def _fb_where(cond, x, y):
    x, y = _core.promote_args("where", x, y)
    cond = _core.ensure_array(cond)
    if get_aval(cond).dtype != bool_:
        cond = _lax.ne(cond, np.zeros((), get_aval(cond).dtype)[()])
    cond, x, y = _broadcast_all([cond, _core.ensure_array(x), _core.ensure_array(y)])
    return _lax.select_n(cond, y, x)


def _fb_unary(prim, to_inexact=True):
    def f(x):
        (a,) = _core.promote_args(prim.__name__, x, to_inexact=to_inexact)
        return prim(_core.ensure_array(a))
    return f


def _fb_binary(prim):
    def f(x, y):
        a, b = _core.promote_args(prim.__name__, x, y)
        if not isinstance(a, (Array, Tracer)) and not isinstance(b, (Array, Tracer)):
            a = _core.ensure_array(a)
        return prim(a, b)
    return f


def _fb_sum(x):
    x = _core.ensure_array(x)
    return _lax.reduce_sum(x, tuple(range(get_aval(x).ndim)))


def _fb_pow(x, y):
    a, b = _core.promote_args("pow", x, y, to_inexact=True)
    if not isinstance(a, (Array, Tracer)) and not isinstance(b, (Array, Tracer)):
        a = _core.ensure_array(a)
    return _lax.pow(a, b)


def _fb_logical(prim):
    def f(x, y):
        return prim(_core.ensure_array(x), _core.ensure_array(y))
    return f


def _fb_logical_not(x):
    return _lax.bitwise_not(_core.ensure_array(x))


def _fb_astype(x, dtype):
    x = _core.ensure_array(x)
    dtype = _dt.canonicalize(dtype)
    return x if get_aval(x).dtype == dtype else _lax.convert_element_type(x, dtype)


def _fb_zeros_like(x, dtype=None):
    a = get_aval(x)
    d = a.dtype if dtype is None else _dt.canonicalize(dtype)
    return _core.asarray(np.zeros(a.shape, d))


def _fb_full_like(x, fill_value, dtype=None):
    a = get_aval(x)
    d = a.dtype if dtype is None else _dt.canonicalize(dtype)
    return _core.asarray(np.full(a.shape, fill_value, d))


def _fb_clip(x, lo, hi):
    return minimum(maximum(x, lo), hi)


asarray = _core.asarray
where = _resolve("where", _fb_where)
sqrt = _resolve("sqrt", _fb_unary(_lax.sqrt))
cos = _resolve("cos", _fb_unary(_lax.cos))
floor = _resolve("floor", _fb_unary(_lax.floor))
abs = _resolve("abs", _fb_unary(_lax.abs, to_inexact=False))  # noqa: A001
sign = _resolve("sign", _fb_unary(_lax.sign, to_inexact=False))
maximum = _resolve("maximum", _fb_binary(_lax.max))
minimum = _resolve("minimum", _fb_binary(_lax.min))
greater = _resolve("greater", _fb_binary(_lax.gt))
greater_equal = _resolve("greater_equal", _fb_binary(_lax.ge))
less = _resolve("less", _fb_binary(_lax.lt))
equal = _resolve("equal", _fb_binary(_lax.eq))
not_equal = _resolve("not_equal", _fb_binary(_lax.ne))
logical_and = _resolve("logical_and", _fb_logical(_lax.bitwise_and))
logical_or = _resolve("logical_or", _fb_logical(_lax.bitwise_or))
logical_not = _resolve("logical_not", _fb_logical_not)
pow = _resolve("pow", _fb_pow)  # noqa: A001
sum = _resolve("sum", _fb_sum)  # noqa: A001
astype = _resolve("astype", _fb_astype)
zeros_like = _resolve("zeros_like", _fb_zeros_like)
full_like = _resolve("full_like", _fb_full_like)
clip = _resolve("clip", _fb_clip)


# --- helpers on top ------------------------------------------------------------

def is_array(x) -> bool:
    """True for ember Arrays and tracers."""
    return isinstance(x, (Array, Tracer))


def is_number(x) -> bool:
    """True for Python/numpy real numbers (not bool)."""
    return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))


def concrete(x):
    """A Python float for a concrete scalar (number, numpy scalar, Array, concrete tracer),
    or None when `x` is traced and its value is not known yet."""
    if isinstance(x, Tracer):
        v = x.concrete_value()
        if v is None:
            return None
        return float(np.asarray(v).reshape(()))
    if isinstance(x, Array):
        return float(x) if x.size == 1 else None
    if isinstance(x, (np.ndarray, np.generic)):
        return float(np.asarray(x).reshape(())) if np.size(x) == 1 else None
    if is_number(x):
        return float(x)
    return None


def f64(x):
    """A float64 ember scalar from a number or an array (traced or not)."""
    if is_array(x):
        return astype(x, float64)
    return asarray(np.float64(x))


def cast(x, dtype):
    """`x` (a number or a scalar array) in `dtype`, the dtype of the leaf it scales."""
    if is_array(x):
        return astype(x, dtype)
    return asarray(np.asarray(x, dtype=dtype))


def global_norm(leaves):
    """sqrt of the sum of squares of all leaves, in the promoted dtype of the leaves."""
    leaves = list(leaves)
    if not leaves:
        return asarray(np.float32(0.0))
    dt = _dt.promote([get_aval(g).dtype for g in leaves], [False] * len(leaves))[0]
    total = None
    for g in leaves:
        s = astype(sum(g * g), dt)
        total = s if total is None else total + s
    return sqrt(total)


def isfinite_number(v) -> bool:
    return v is not None and math.isfinite(v)
