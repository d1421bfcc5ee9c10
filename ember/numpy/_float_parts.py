"""frexp: a float's mantissa and binary exponent, read from its bits so the split is exact
on every backend (ldexp, its inverse, lives with the elementwise functions); spacing, the
gap to the next float away from zero.

Example:
    >>> import ember.numpy as enp
    >>> m, e = enp.frexp(enp.asarray([8.0, 0.75]))
    >>> m.tolist(), e.tolist()
    ([0.5, 0.75], [4, 0])
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..fx.core import get_aval
from ._core import ensure_array, promote_args
from ._util import const

__all__ = ["frexp", "spacing"]

# dtype -> (unsigned type of the same width, mantissa bits, exponent bias)
_LAYOUT = {
    "float16": (np.uint16, 10, 15),
    "bfloat16": (np.uint16, 7, 127),
    "float32": (np.uint32, 23, 127),
    "float64": (np.uint64, 52, 1023),
}


def _pow2(p, d):
    """2**p as dtype `d`, built from the exponent field (p must be a normal exponent): exact,
    where exp2 compiled through the LLVM mathlib need not be."""
    ut, nmant, bias = _LAYOUT[d.name]
    ut = np.dtype(ut)
    field = lax.convert_element_type(lax.add(p, const(get_aval(p).dtype, bias)), ut)
    return lax.bitcast_convert_type(lax.shift_left(field, const(ut, nmant)), d)


def frexp(x, /):
    """Split `x` into `mantissa * 2**exponent` with 0.5 <= |mantissa| < 1 (numpy's frexp);
    zero, inf and NaN give themselves and exponent 0. The exponent is int32. The mantissa
    is differentiable (`d mantissa / dx = 2**-exponent`).

    Example:
        >>> import ember.numpy as enp
        >>> [a.tolist() for a in enp.frexp(enp.asarray([-3.0, 0.0]))]
        [[-0.75, 0.0], [2, 0]]
    """
    x = ensure_array(x)
    if _dt.kind(get_aval(x).dtype) not in "f":
        if _dt.kind(get_aval(x).dtype) == "c":
            raise TypeError("frexp: complex input is not supported (numpy's frexp has no "
                            "complex loop either); apply it to x.real and x.imag")
        (x,) = promote_args("frexp", x, to_inexact=True)
    d = get_aval(x).dtype
    ut, nmant, bias = _LAYOUT[d.name]
    ut = np.dtype(ut)
    ax = lax.abs(x)
    from ._info import finfo
    tiny = lax.lt(ax, const(d, float(finfo(d).tiny)))
    # Subnormals have no implicit leading bit: scale them into the normal range first
    # (the factor is chosen before multiplying, so large values never overflow).
    shape = get_aval(x).shape
    factor = lax.select_n(tiny, lax.broadcast_in_dim(const(d, 1.0), shape, ()),
                          lax.broadcast_in_dim(const(d, float(2.0 ** (nmant + 1))), shape, ()))
    scaled = lax.mul(ax, factor)
    bits = lax.bitcast_convert_type(scaled, ut)
    field = lax.bitwise_and(lax.shift_right_logical(bits, const(ut, nmant)),
                            const(ut, (1 << (8 * ut.itemsize - 1 - nmant)) - 1))
    i32 = _dt.int32
    e = lax.sub(lax.convert_element_type(field, i32), const(i32, bias - 1))
    e = lax.select_n(tiny, e, lax.sub(e, const(i32, nmant + 1)))
    special = lax.bitwise_or(lax.eq(x, const(d, 0)), lax.bitwise_not(lax.is_finite(x)))
    e = lax.select_n(special, e, lax.broadcast_in_dim(const(i32, 0), get_aval(e).shape, ()))
    # Two half-scalings keep each power of two a normal number (e spans the subnormals).
    h = lax.div(e, const(i32, 2))
    m = lax.mul(lax.mul(x, _pow2(lax.neg(h), d)), _pow2(lax.neg(lax.sub(e, h)), d))
    return m, e


def spacing(x, /):
    """The distance from `x` to the next representable float away from zero (numpy's
    spacing: negative for negative `x`, NaN for inf and NaN; float16 steps towards +inf, as
    numpy and JAX do). Integers become floats; complex input is a ValueError, as in JAX.

    Example:
        >>> import ember.numpy as enp
        >>> float(enp.spacing(enp.asarray(1.0))) == float(enp.finfo(enp.float32).eps)
        True
    """
    from ._elementwise import nextafter
    from ._searching import where
    x = ensure_array(x)
    if _dt.kind(get_aval(x).dtype) == "c":
        raise ValueError(f"spacing: complex input is not supported, got "
                        f"{get_aval(x).str_user()}")
    (x,) = promote_args("spacing", x, to_inexact=True)
    d = get_aval(x).dtype
    if d == np.float16:
        # numpy's (and JAX's) float16 spacing always steps towards +inf
        out = nextafter(x, const(d, np.inf)) - x
        return where(lax.is_finite(x), out, const(d, np.nan))
    # -0.0 steps towards +inf too, as in numpy
    toward = where(lax.lt(x, const(d, 0)), const(d, -np.inf), const(d, np.inf))
    return nextafter(x, toward) - x
