"""Elementwise primitives: unary math, binary arithmetic, comparisons, bitwise,
select_n and clamp.

Operands of n-ary elementwise primitives have equal shapes, except that a rank-0
operand broadcasts (so `max x 0.0` needs no explicit broadcast).  Dtypes must
match: promotion happens above, in `ember.numpy`.

Example:
    >>> import numpy as np
    >>> from ember.fx.prims.elementwise import sin
    >>> float(sin(np.float32(0.0)))
    0.0
"""
from __future__ import annotations

import enum
import math

import numpy as np
import scipy.special as _sp

from ... import dtypes as _dt
from ..core import AbstractArray, Primitive, Zero, const_like, get_aval, is_undefined, shape_error, weak_const
from .rules import (defbilinear, defbroadcasting, defjvp, defjvp_zero, defvectorized, unbroadcast)
from ..spelling import user_str

_LOWP = (_dt.float16, _dt.bfloat16)


def _operand(x) -> np.ndarray:
    """`x` as a numpy array of its abstract dtype: a Python float is a (weak) float32,
    not the float64 numpy would make of it."""
    if type(x) is np.ndarray:
        return x
    if isinstance(x, np.generic):
        return np.asarray(x)
    return np.asarray(x, dtype=get_aval(x).dtype)


def _exact(fn, out_dtype=None, lowp=True):
    """The impl of an elementwise primitive from a numpy/scipy function, returning
    exactly the dtype its abstract evaluation promises (`out_dtype` of the first
    operand's dtype, or that dtype).  numpy and scipy.special upcast (Python floats to
    float64, float32 to float64 in polygamma), so every impl of the family is cast here,
    once.  With `lowp`, half-precision operands are computed in float32 and rounded
    back, as the native backends do.

    Example:
        >>> _exact(np.sin)(0.5).dtype
        dtype('float32')
    """
    # every eager elementwise op runs this: the type checks are inlined (no calls
    # for the common case of numpy arrays of the right dtype)
    def impl(*xs, **params):
        for x in xs:
            # numpy arrays and scalars carry their dtype; Python numbers do not
            if type(x) is not np.ndarray and not isinstance(x, np.generic):
                xs = [_operand(x) for x in xs]
                break
        d = xs[0].dtype
        od = d if out_dtype is None else out_dtype(d)
        if lowp and d.itemsize == 2 and d in _LOWP:   # (dtype == is slow: test size first)
            xs = [x.astype(np.float32) for x in xs]
        out = fn(*xs, **params)
        if type(out) is not np.ndarray:
            out = np.asarray(out)
        if out.dtype is not od and out.dtype != od:
            with np.errstate(over="ignore", invalid="ignore"):
                out = out.astype(od)
        return out

    def direct(d):
        # for numpy operands of dtype d, impl(*xs) is fn(*xs) whenever fn's result already
        # has the promised dtype (the eager memo checks that on each result)
        return None if lowp and d.itemsize == 2 and d in _LOWP else fn
    impl.direct = direct
    return impl


def _check_dtype(name, aval, allowed):
    if not allowed(aval.dtype):
        raise TypeError(f"{name} does not accept dtype {aval.dtype}")


# --- unary ------------------------------------------------------------------------

def _unary_abstract(name, allowed, out_dtype=None):
    def abstract_eval(x: AbstractArray, **params):
        _check_dtype(name, x, allowed)
        d = out_dtype(x.dtype) if out_dtype else x.dtype
        return AbstractArray(x.shape, d, x.weak_type)
    return abstract_eval


def _inexact(d):
    return _dt.is_inexact(d)


def _float(d):
    return _dt.is_float(d)


def _numeric(d):
    return d != _dt.bool_


def _any(d):
    return True


def _intlike(d):
    return _dt.is_integer(d) or d == _dt.bool_


def unary(name, npfn, allowed=_inexact, out_dtype=None, lowp=True):
    p = Primitive(name)
    p.abstract_eval = _unary_abstract(name, allowed, out_dtype)
    p.impl = _exact(npfn, out_dtype, lowp)
    defvectorized(p)
    return p


def _as_unsigned(x):
    x = np.asarray(x)
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def _erf_inv(x):
    return _sp.erfinv(x)


neg_p = unary("neg", np.negative, _numeric, lowp=False)
# half types in float32: ml_dtypes' bfloat16 sign keeps -0.0, numpy's float sign (and the
# native code) gives +0.0 for either zero
sign_p = unary("sign", np.sign, _numeric)
floor_p = unary("floor", np.floor, _float)
ceil_p = unary("ceil", np.ceil, _float)
round_p = unary("round", np.rint, _float)  # half to even, like numpy and the array API
abs_p = unary("abs", np.abs, _numeric, out_dtype=_dt.real_dtype, lowp=False)
exp_p = unary("exp", np.exp)
exp2_p = unary("exp2", np.exp2)
log_p = unary("log", np.log)
log1p_p = unary("log1p", np.log1p)
def _expm1_impl(x):
    """numpy's expm1, with the array API's complex special cases (C99's cexp minus one)
    where numpy returns NaN: infinite real parts and NaN real parts with b = +-0.
    expm1(conj(z)) = conj(expm1(z)), so zero imaginary parts keep their sign."""
    with np.errstate(invalid="ignore", over="ignore"):
        out = np.asarray(np.expm1(x))
    if out.dtype.kind != "c" or not out.size:
        return out
    a, b = np.real(x), np.imag(x)
    fix = np.array(out, copy=True)
    zero_b = b == 0
    r, i = fix.real, fix.imag
    # a = +-0, b = +-0: the result is 0 + b j (never -0 in the real part)
    m = (a == 0) & zero_b
    r[m], i[m] = 0.0, b[m]
    # a = +inf: b = +-0 gives inf + b j; an infinite or NaN b gives inf + NaN j
    m = np.isposinf(a) & zero_b
    r[m], i[m] = np.inf, b[m]
    m = np.isposinf(a) & ~np.isfinite(b)
    r[m], i[m] = np.inf, np.nan
    # a = -inf: exp is +0 * cis(b), so the result is -1 + (+-0) j for every b
    m = np.isneginf(a)
    with np.errstate(invalid="ignore"):
        s = np.where(np.isfinite(b), np.sin(np.where(np.isfinite(b), b, 0)), np.copysign(1.0, b))
    r[m], i[m] = -1.0, np.copysign(0.0, s[m])
    # a = NaN, b = +-0: NaN + b j
    m = np.isnan(a) & zero_b
    r[m], i[m] = np.nan, b[m]
    return fix


expm1_p = unary("expm1", _expm1_impl)
tanh_p = unary("tanh", np.tanh)


def _logistic_impl(x):
    """scipy's expit (no overflow for large |x|) on real dtypes; it has no complex loop, so
    complex x takes the definition 1 / (1 + e**-x), as JAX's lax.logistic does."""
    x = np.asarray(x)
    if x.dtype.kind == "c":
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return 1 / (1 + np.exp(-x))
    return _sp.expit(x)


logistic_p = unary("logistic", _logistic_impl)
sin_p = unary("sin", np.sin)
cos_p = unary("cos", np.cos)
tan_p = unary("tan", np.tan)
asin_p = unary("asin", np.arcsin)
acos_p = unary("acos", np.arccos)
atan_p = unary("atan", np.arctan)
sinh_p = unary("sinh", np.sinh)
cosh_p = unary("cosh", np.cosh)
asinh_p = unary("asinh", np.arcsinh)
acosh_p = unary("acosh", np.arccosh)
atanh_p = unary("atanh", np.arctanh)
sqrt_p = unary("sqrt", np.sqrt)
rsqrt_p = unary("rsqrt", lambda x: 1 / np.sqrt(x))
cbrt_p = unary("cbrt", np.cbrt, _float)
erf_p = unary("erf", _sp.erf, _float)
erfc_p = unary("erfc", _sp.erfc, _float)
erf_inv_p = unary("erf_inv", _erf_inv, _float)
lgamma_p = unary("lgamma", _sp.gammaln, _float)
digamma_p = unary("digamma", _sp.psi, _float)
is_finite_p = unary("is_finite", np.isfinite, _float, out_dtype=lambda d: _dt.bool_, lowp=False)
not_p = unary("not", lambda x: np.invert(x), _intlike, lowp=False)
real_p = unary("real", np.real, lambda d: _dt.kind(d) == "c", out_dtype=_dt.real_dtype, lowp=False)
imag_p = unary("imag", np.imag, lambda d: _dt.kind(d) == "c", out_dtype=_dt.real_dtype, lowp=False)
conj_p = unary("conj", np.conj, _inexact, lowp=False)
# the bits of the two's complement (JAX's population_count; numpy's bitwise_count counts |x|)
population_count_p = unary("population_count", lambda x: np.bitwise_count(_as_unsigned(x)).astype(np.asarray(x).dtype),
                           _dt.is_integer, out_dtype=lambda d: d, lowp=False)
clz_p = unary("clz", None, _dt.is_integer, lowp=False)


def _clz_impl(x):
    x = np.asarray(x)
    bits = x.dtype.itemsize * 8
    u = x.view(np.dtype(f"u{x.dtype.itemsize}")).astype(np.uint64)
    out = np.full(u.shape, bits, dtype=np.int64)
    nz = u != 0
    # floor(log2(u)) computed exactly through bit_length on Python ints is slow; use
    # frexp on float64, exact for values < 2**53, and fix up the rest by shifting.
    hi = u >> np.uint64(32)
    lo = u & np.uint64(0xFFFFFFFF)
    e_hi = np.frexp(hi.astype(np.float64))[1]
    e_lo = np.frexp(lo.astype(np.float64))[1]
    length = np.where(hi != 0, e_hi + 32, e_lo)
    out = np.where(nz, bits - length, bits)
    return out.astype(x.dtype)


clz_p.impl = _exact(_clz_impl, lowp=False)


def _polygamma_impl(x, *, m):
    return _sp.polygamma(m, x)


polygamma_p = Primitive("polygamma")
polygamma_p.abstract_eval = _unary_abstract("polygamma", _float)
polygamma_p.impl = _exact(_polygamma_impl)
defvectorized(polygamma_p)


def _integer_pow_impl(x, *, y):
    x = np.asarray(x)
    if y == 0:
        return np.ones_like(x)
    if _dt.is_integer(x.dtype) or x.dtype == _dt.bool_:
        return np.power(x, y).astype(x.dtype)
    # Square-and-multiply with a rounding after every product, then one reciprocal
    # for y < 0: the native backends' and XLA's arithmetic.  np.power rounds the
    # exact power once, which differs in the last bits (0.1f**7) and overflows
    # differently (x**-2 with x*x > max is 0 here, a subnormal there).
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        acc = power_by_squaring(x, abs(y))
        if y < 0:
            acc = x.dtype.type(1) / acc
    return np.asarray(acc, dtype=x.dtype)


def power_by_squaring(x, k: int):
    """`x ** k` for an integer k >= 1 by square-and-multiply, each product rounded in
    x's dtype: the order every backend uses (numpy or CuPy arrays alike).

    Example:
        >>> import numpy as np
        >>> power_by_squaring(np.float32(3.0), 3)
        np.float32(27.0)
    """
    acc, base = None, x
    while k:
        if k & 1:
            acc = base if acc is None else acc * base
        k >>= 1
        if k:
            base = base * base
    return acc


def _integer_pow_abstract(x: AbstractArray, *, y):
    _check_dtype("integer_pow", x, _numeric)
    if y < 0 and _dt.is_integer(x.dtype):
        # checked here, not in the impl, so jit (whatever the size) rejects it too
        raise TypeError(f"integer_pow: an integer array ({x.dtype.name}) cannot be raised to the "
                        f"negative power {y}; convert it to a float dtype first "
                        f"(lax.convert_element_type(x, 'float32'))")
    return AbstractArray(x.shape, x.dtype, x.weak_type)


integer_pow_p = Primitive("integer_pow")
integer_pow_p.abstract_eval = _integer_pow_abstract
integer_pow_p.impl = _exact(_integer_pow_impl)
defvectorized(integer_pow_p)

square_p = unary("square", np.square, _numeric, lowp=False)


def neg(x):
    """-x, elementwise."""
    return neg_p.bind(x)
def sign(x):
    """The sign of x elementwise: -1, 0 or 1 (NaN for NaN)."""
    return sign_p.bind(x)
def floor(x):
    """The largest integer value <= x, elementwise."""
    return floor_p.bind(x)
def ceil(x):
    """The smallest integer value >= x, elementwise."""
    return ceil_p.bind(x)
class RoundingMethod(enum.IntEnum):
    """How `round` breaks ties (the values of `jax.lax.RoundingMethod`)."""
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def round(x, rounding_method=None):  # noqa: A001
    """x rounded to the nearest integer. Halves go to even by default (numpy and the
    array API; `jax.lax.round` defaults to away from zero); pass
    `rounding_method=RoundingMethod.AWAY_FROM_ZERO` (or 0) for JAX's default.

    Example:
        >>> round(np.array([0.5, 2.5, -2.5], np.float32), RoundingMethod.AWAY_FROM_ZERO).tolist()
        [1.0, 3.0, -3.0]
    """
    even = round_p.bind(x)
    if rounding_method is None:
        return even
    try:
        method = RoundingMethod(int(rounding_method))
    except (TypeError, ValueError):
        raise ValueError(f"round: rounding_method must be a RoundingMethod (0 or 1), got "
                         f"{rounding_method!r}") from None
    if method is RoundingMethod.TO_NEAREST_EVEN:
        return even
    # a tie (x - floor(x) == 0.5, exact) rounds away from zero; the rest as `even`
    fl = floor(x)
    half = const_like(fl, 0.5)
    tie = eq(sub(x, fl), half)
    away = select_n(ge(x, const_like(fl, 0.0)), fl, add(fl, const_like(fl, 1.0)))
    return select_n(tie, even, away)
def abs(x):  # noqa: A001
    """|x| elementwise."""
    return abs_p.bind(x)
def exp(x):
    """e**x elementwise."""
    return exp_p.bind(x)
def exp2(x):
    """2**x elementwise."""
    return exp2_p.bind(x)
def log(x):
    """The natural logarithm of x, elementwise."""
    return log_p.bind(x)
def log1p(x):
    """log(1 + x) elementwise, accurate for small x."""
    return log1p_p.bind(x)
def expm1(x):
    """e**x - 1 elementwise, accurate for small x."""
    return expm1_p.bind(x)
def tanh(x):
    """The hyperbolic tangent of x, elementwise."""
    return tanh_p.bind(x)
def logistic(x):
    """The logistic sigmoid 1 / (1 + e**-x), elementwise."""
    return logistic_p.bind(x)
def sin(x):
    """The sine of x (radians), elementwise."""
    return sin_p.bind(x)
def cos(x):
    """The cosine of x (radians), elementwise."""
    return cos_p.bind(x)
def tan(x):
    """The tangent of x (radians), elementwise."""
    return tan_p.bind(x)
def asin(x):
    """The inverse sine of x, elementwise."""
    return asin_p.bind(x)
def acos(x):
    """The inverse cosine of x, elementwise."""
    return acos_p.bind(x)
def atan(x):
    """The inverse tangent of x, elementwise."""
    return atan_p.bind(x)
def sinh(x):
    """The hyperbolic sine of x, elementwise."""
    return sinh_p.bind(x)
def cosh(x):
    """The hyperbolic cosine of x, elementwise."""
    return cosh_p.bind(x)
def asinh(x):
    """The inverse hyperbolic sine of x, elementwise."""
    return asinh_p.bind(x)
def acosh(x):
    """The inverse hyperbolic cosine of x, elementwise."""
    return acosh_p.bind(x)
def atanh(x):
    """The inverse hyperbolic tangent of x, elementwise."""
    return atanh_p.bind(x)
def sqrt(x):
    """The square root of x, elementwise."""
    return sqrt_p.bind(x)
def rsqrt(x):
    """1 / sqrt(x) elementwise."""
    return rsqrt_p.bind(x)
def cbrt(x):
    """The real cube root of x, elementwise."""
    return cbrt_p.bind(x)
def erf(x):
    """The error function of x, elementwise."""
    return erf_p.bind(x)
def erfc(x):
    """The complementary error function 1 - erf(x), elementwise."""
    return erfc_p.bind(x)
def erf_inv(x):
    """The inverse error function of x, elementwise."""
    return erf_inv_p.bind(x)
def lgamma(x):
    """log|Gamma(x)| elementwise."""
    return lgamma_p.bind(x)
def digamma(x):
    """The digamma function (d/dx log Gamma(x)), elementwise."""
    return digamma_p.bind(x)
def polygamma(m: int, x):
    """The m-th derivative of the digamma function at x, elementwise."""
    return polygamma_p.bind(x, m=int(m))
def is_finite(x):
    """True where x is neither infinite nor NaN."""
    return is_finite_p.bind(x)
def bitwise_not(x):
    """~x: bitwise NOT of an integer, logical NOT of a bool."""
    return not_p.bind(x)
def real(x):
    """The real part of a complex x."""
    return real_p.bind(x)
def imag(x):
    """The imaginary part of a complex x."""
    return imag_p.bind(x)
def conj(x):
    """The complex conjugate of x."""
    return conj_p.bind(x)
def population_count(x):
    """The number of set bits of each integer element."""
    return population_count_p.bind(x)
def clz(x):
    """The number of leading zero bits of each integer element."""
    return clz_p.bind(x)
def integer_pow(x, y: int):
    """x**y for a static Python int y, by repeated multiplication."""
    return integer_pow_p.bind(x, y=int(y))
def square(x):
    """x * x elementwise."""
    return square_p.bind(x)


# --- binary -----------------------------------------------------------------------

def _binary_abstract(name, allowed, out_dtype=None, same_dtype=True):
    def abstract_eval(*avals, **params):
        shape = ()
        for a in avals:
            if a.ndim:
                if shape and a.shape != shape:
                    raise shape_error(name, "operands must have equal shapes (or be rank 0), got "
                                      + ", ".join(user_str(b) for b in avals))
                shape = a.shape
        d0 = avals[0].dtype
        for a in avals:
            _check_dtype(name, a, allowed)
            if same_dtype and a.dtype != d0:
                raise TypeError(f"{name}: operands must have the same dtype, got "
                                + ", ".join(user_str(b) for b in avals)
                                + " (promote with ember.numpy functions or convert_element_type)")
        d = out_dtype(d0) if out_dtype else d0
        return AbstractArray(shape, d, all(a.weak_type for a in avals))
    return abstract_eval


def binary(name, npfn, allowed=_numeric, out_dtype=None, lowp=True):
    p = Primitive(name)
    p.abstract_eval = _binary_abstract(name, allowed, out_dtype)
    p.impl = _exact(npfn, out_dtype, lowp)
    defbroadcasting(p)
    return p


def _div_impl(x, y):
    x, y = np.asarray(x), np.asarray(y)
    if _dt.is_integer(x.dtype):
        # C semantics: truncate toward zero; x / 0 is defined as -1 (all ones) so
        # the reference never traps, matching what the native code produces.
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            safe = np.where(y == 0, 1, y)
            if x.dtype.kind == "i":
                # truncate toward zero: floor division, then step back up where the
                # signs differ and the division was inexact (wraps like C for MIN / -1)
                q = np.floor_divide(x, safe)
                inexact = (x - q * safe) != 0
                q = q + (inexact & ((x < 0) != (safe < 0))).astype(x.dtype)
                return np.where(y == 0, -1, q).astype(x.dtype)
            q = x // safe
            return np.where(y == 0, -1, q).astype(x.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.true_divide(x, y)


def _nextafter_impl(x, y):
    # equal operands give y (C, XLA): numpy's float16 loop gives x, which differs for
    # nextafter(+-0, -+0)
    x, y = np.asarray(x), np.asarray(y)
    return np.where(x == y, y, np.nextafter(x, y)).astype(x.dtype)


def _rem_impl(x, y):
    x, y = np.asarray(x), np.asarray(y)
    if _dt.is_integer(x.dtype):
        with np.errstate(divide="ignore", invalid="ignore"):
            safe = np.where(y == 0, 1, y)
            r = np.fmod(x, safe)
            return np.where(y == 0, x, r).astype(x.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.fmod(x, y)


def _pow_impl(x, y):
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r = np.power(x, y)
        if _dt.is_inexact(r.dtype) and r.dtype.kind != "c":
            # numpy computes x**0.5 as sqrt(x) and x**-0.5 as 1/sqrt(x), which keep the
            # sign of -0.0; C99 (and the compiled pow): pow(+-0, y) is +0 / +inf
            # unless y is an odd integer
            x, y = np.asarray(x), np.asarray(y)
            zero = x == 0
            if np.any(zero):
                odd = (np.abs(y) % 2 == 1) & np.signbit(x)
                big = y < 0
                fixed = np.where(big, np.inf, 0.0).astype(r.dtype)
                fixed = np.where(odd, -fixed, fixed)
                r = np.where(zero & ~np.isnan(y) & (y != 0), fixed, r)
        return r


def order_keys(x, op="max", xp=np):
    """Float array `x` as signed integers ordered like IEEE 754-2019 `maximum`/
    `minimum` (-0.0 < +0.0), NaN mapped to the key that wins `op`: an integer
    max/min (or `.reduce`, `.accumulate`, `.at`) on keys, mapped back with
    `from_order_keys`, is the IEEE operation, NaN-propagating.  The LLVM backend's
    float max/min reductions use the same keys (codegen `_order_key`); `xp` is the
    array module (the CUDA backend passes CuPy).

    Example:
        >>> k = order_keys(np.array([0.0, -0.0, 1.0], np.float32))
        >>> from_order_keys(np.maximum(k[0], k[1]), np.float32).item(), int(k[1] < k[0])
        (0.0, 1)
    """
    x = xp.asarray(x)
    ity = np.dtype(f"i{x.dtype.itemsize}")
    bits = x.view(ity)
    top = ity.type(np.iinfo(ity).max)
    keys = bits ^ ((bits >> (8 * ity.itemsize - 1)) & top)
    nan = xp.isnan(x.astype(np.float32)) if x.dtype == _dt.bfloat16 else xp.isnan(x)
    return xp.where(nan, top if op == "max" else ity.type(np.iinfo(ity).min), keys).astype(ity)


def from_order_keys(keys, dtype, xp=np):
    """The floats of `order_keys` (the map is its own inverse on bit patterns).

    Example:
        >>> from_order_keys(order_keys(np.array([-0.0, 2.5])), np.float64).tolist()
        [-0.0, 2.5]
    """
    keys = xp.asarray(keys)
    top = keys.dtype.type(np.iinfo(keys.dtype).max)
    return (keys ^ ((keys >> (8 * keys.dtype.itemsize - 1)) & top)).view(np.dtype(dtype))


def _ieee_extremum(npfn, op):
    """IEEE 754-2019 maximum/minimum: NaN propagates and -0.0 < +0.0 (numpy's
    maximum leaves the sign of a zero tie to the argument order)."""
    def impl(x, y):
        x, y = np.asarray(x), np.asarray(y)
        r = np.asarray(npfn(x, y))
        if (r.dtype.kind == "f" or r.dtype == _dt.bfloat16) and np.any(r == 0):
            r = np.where(r == 0, from_order_keys(npfn(order_keys(x.astype(r.dtype), op),
                                                      order_keys(y.astype(r.dtype), op)), r.dtype), r)
        return r
    return impl


ieee_maximum = _ieee_extremum(np.maximum, "max")
ieee_minimum = _ieee_extremum(np.minimum, "min")


def _shift_mask(x, y, f):
    x, y = np.asarray(x), np.asarray(y)
    bits = x.dtype.itemsize * 8
    big = (y < 0) | (y >= bits)
    ys = np.where(big, 0, y).astype(x.dtype)
    return x, ys, big, bits


def _shl(x, y):
    x, ys, big, bits = _shift_mask(x, y, None)
    return np.where(big, 0, np.left_shift(x, ys)).astype(x.dtype)


def _shr_arith(x, y):
    x, ys, big, bits = _shift_mask(x, y, None)
    if x.dtype.kind == "u":
        sx = x.view(np.dtype(f"i{x.dtype.itemsize}"))
        r = np.right_shift(sx, ys.astype(sx.dtype))
        fill = np.where(sx < 0, -1, 0).astype(sx.dtype)
        return np.where(big, fill, r).astype(sx.dtype).view(x.dtype)
    return np.where(big, np.where(x < 0, -1, 0), np.right_shift(x, ys)).astype(x.dtype)


def _shr_logical(x, y):
    x, ys, big, bits = _shift_mask(x, y, None)
    ux = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    r = np.right_shift(ux, ys.astype(ux.dtype))
    return np.where(big, 0, r).astype(ux.dtype).view(x.dtype)


add_p = binary("add", np.add, _any, lowp=False)
sub_p = binary("sub", np.subtract, _numeric, lowp=False)
mul_p = binary("mul", np.multiply, _any, lowp=False)
div_p = binary("div", _div_impl, _numeric)
rem_p = binary("rem", _rem_impl, _numeric)
pow_p = binary("pow", _pow_impl, _inexact)
max_p = binary("max", ieee_maximum, _any, lowp=False)
min_p = binary("min", ieee_minimum, _any, lowp=False)
atan2_p = binary("atan2", np.arctan2, _float)
nextafter_p = binary("nextafter", _nextafter_impl, _float, lowp=False)  # in float32 a half step is lost
and_p = binary("and", np.bitwise_and, _intlike, lowp=False)
or_p = binary("or", np.bitwise_or, _intlike, lowp=False)
xor_p = binary("xor", np.bitwise_xor, _intlike, lowp=False)
shift_left_p = binary("shift_left", _shl, _dt.is_integer, lowp=False)
shift_right_arithmetic_p = binary("shift_right_arithmetic", _shr_arith, _dt.is_integer, lowp=False)
shift_right_logical_p = binary("shift_right_logical", _shr_logical, _dt.is_integer, lowp=False)

# Transcendentals and divisions: a fused value containing one is worth a buffer
# when several kernels read it (cheap values are recomputed by each reader).
for _p in (exp_p, exp2_p, log_p, log1p_p, expm1_p, tanh_p, logistic_p, sin_p, cos_p, tan_p, asin_p,
           acos_p, atan_p, sinh_p, cosh_p, asinh_p, acosh_p, atanh_p, sqrt_p, rsqrt_p, cbrt_p, erf_p,
           erfc_p, erf_inv_p, lgamma_p, digamma_p, polygamma_p, pow_p, atan2_p, div_p, rem_p):
    _p.cost = "expensive"
del _p


def _cmp(name, npfn, allowed=_any):
    p = Primitive(name)
    p.abstract_eval = _binary_abstract(name, allowed, out_dtype=lambda d: _dt.bool_)
    p.impl = _exact(npfn, lambda d: _dt.bool_, lowp=False)
    defbroadcasting(p)
    defjvp_zero(p)
    return p


eq_p = _cmp("eq", np.equal)
ne_p = _cmp("ne", np.not_equal)
lt_p = _cmp("lt", np.less, lambda d: _dt.kind(d) != "c")
le_p = _cmp("le", np.less_equal, lambda d: _dt.kind(d) != "c")
gt_p = _cmp("gt", np.greater, lambda d: _dt.kind(d) != "c")
ge_p = _cmp("ge", np.greater_equal, lambda d: _dt.kind(d) != "c")

complex_p = Primitive("complex")
complex_p.abstract_eval = _binary_abstract("complex", lambda d: d in (_dt.float32, _dt.float64),
                                           out_dtype=_dt.complex_dtype)
def _complex_impl(x, y):
    x, y = np.asarray(x), np.asarray(y)
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), _dt.complex_dtype(x.dtype))
    out.real = x  # component-wise: x + 1j*y would turn (0, inf) into (nan, inf)
    out.imag = y
    return out


complex_p.impl = _exact(_complex_impl, _dt.complex_dtype, lowp=False)
defbroadcasting(complex_p)


def _like(x, y, op):
    """Python scalars take the dtype of the other operand (they are weakly typed),
    so `lax.add(x, 1.0)` works for any float dtype, as in JAX."""
    px, py = type(x) in _PY_SCALARS, type(y) in _PY_SCALARS
    if px and not py:
        return _scalar_like(x, y, op), y
    if py and not px:
        return x, _scalar_like(y, x, op)
    return x, y


def _scalar_like(v, other, op):
    a = get_aval(other)
    if _dt.PY_KIND_RANK[type(v)] > _dt.KIND_RANK[_dt.kind(a.dtype)]:
        # 1.5 as an int32 would silently be 1 (JAX refuses the mix as well)
        raise TypeError(f"lax.{op}: the Python {type(v).__name__} {v!r} cannot take the dtype of the "
                        f"{user_str(a)} operand without losing its value; ember.lax ops do not "
                        f"promote (use the ember.numpy function, or convert_element_type first)")
    try:
        c = np.array(v, dtype=a.dtype)[()]
    except OverflowError:
        raise OverflowError(f"lax.{op}: the Python int {v!r} is out of range for the {user_str(a)} "
                            f"operand; convert the array to a wider dtype first") from None
    # beside a weak operand the scalar stays weak, so the result does (as in JAX)
    return weak_const(c) if a.weak_type else c


_PY_SCALARS = (bool, int, float)


def add(x, y):
    """x + y elementwise (operands of equal shape, or rank 0)."""
    return add_p.bind(*_like(x, y, "add"))
def sub(x, y):
    """x - y elementwise."""
    return sub_p.bind(*_like(x, y, "sub"))
def mul(x, y):
    """x * y elementwise."""
    return mul_p.bind(*_like(x, y, "mul"))
def div(x, y):
    """x / y elementwise; integer division rounds toward zero (C semantics, as `jax.lax.div`)."""
    return div_p.bind(*_like(x, y, "div"))
def rem(x, y):
    """The remainder of x / y with the sign of x (C fmod semantics, as `jax.lax.rem`)."""
    return rem_p.bind(*_like(x, y, "rem"))
def pow(x, y):  # noqa: A001
    """x**y elementwise."""
    return pow_p.bind(*_like(x, y, "pow"))
def max(x, y):  # noqa: A001
    """The IEEE 754-2019 maximum of x and y (NaN propagates, -0 < +0)."""
    return max_p.bind(*_like(x, y, "max"))
def min(x, y):  # noqa: A001
    """The IEEE 754-2019 minimum of x and y (NaN propagates, -0 < +0)."""
    return min_p.bind(*_like(x, y, "min"))
def atan2(x, y):
    """The four-quadrant inverse tangent of x / y (`jax.lax.atan2(x, y)`: x is the ordinate)."""
    return atan2_p.bind(*_like(x, y, "atan2"))
def nextafter(x, y):
    """The next representable value after x towards y."""
    return nextafter_p.bind(*_like(x, y, "nextafter"))
def bitwise_and(x, y):
    """x & y elementwise (logical AND for bools)."""
    return and_p.bind(*_like(x, y, "bitwise_and"))
def bitwise_or(x, y):
    """x | y elementwise (logical OR for bools)."""
    return or_p.bind(*_like(x, y, "bitwise_or"))
def bitwise_xor(x, y):
    """x ^ y elementwise (logical XOR for bools)."""
    return xor_p.bind(*_like(x, y, "bitwise_xor"))
def shift_left(x, y):
    """x << y elementwise; shifts of the bit width or more give 0."""
    return shift_left_p.bind(*_like(x, y, "shift_left"))
def shift_right_arithmetic(x, y):
    """x >> y with sign extension; large shifts give 0 or -1."""
    return shift_right_arithmetic_p.bind(*_like(x, y, "shift_right_arithmetic"))
def shift_right_logical(x, y):
    """x >> y filling with zeros; large shifts give 0."""
    return shift_right_logical_p.bind(*_like(x, y, "shift_right_logical"))
def eq(x, y):
    """x == y elementwise (bool result)."""
    return eq_p.bind(*_like(x, y, "eq"))
def ne(x, y):
    """x != y elementwise (bool result)."""
    return ne_p.bind(*_like(x, y, "ne"))
def lt(x, y):
    """x < y elementwise (bool result)."""
    return lt_p.bind(*_like(x, y, "lt"))
def le(x, y):
    """x <= y elementwise (bool result)."""
    return le_p.bind(*_like(x, y, "le"))
def gt(x, y):
    """x > y elementwise (bool result)."""
    return gt_p.bind(*_like(x, y, "gt"))
def ge(x, y):
    """x >= y elementwise (bool result)."""
    return ge_p.bind(*_like(x, y, "ge"))
def complex(x, y):  # noqa: A001
    """x + 1j * y from real parts x and imaginary parts y."""
    return complex_p.bind(x, y)


# --- select_n and clamp -----------------------------------------------------------

def _select_abstract(which, *cases):
    if not cases:
        raise TypeError("select_n needs at least one case")
    if which.dtype != _dt.bool_ and not _dt.is_integer(which.dtype):
        raise TypeError(f"select_n: the selector must be bool or int, got {which.dtype}")
    if which.dtype == _dt.bool_ and len(cases) > 2:
        raise TypeError("select_n: a boolean selector picks between at most 2 cases")
    c0 = cases[0]
    shape = ()
    for a in (which,) + cases:
        if a.ndim:
            if shape and a.shape != shape:
                raise shape_error("select_n", "the selector and cases must have equal shapes (or be "
                                  "rank 0), got " + ", ".join(str(c) for c in (which,) + cases))
            shape = a.shape
    for c in cases:
        if c.dtype != c0.dtype:
            raise TypeError("select_n: cases must have equal dtypes, got "
                            + ", ".join(str(c) for c in cases))
    return AbstractArray(shape, c0.dtype, all(c.weak_type for c in cases))


def _select_impl(which, *cases):
    which = np.asarray(which)
    cases = [_operand(c) for c in cases]
    if len(cases) == 1:
        return np.asarray(np.broadcast_to(cases[0], np.broadcast_shapes(which.shape, np.shape(cases[0]))))
    if which.dtype == np.bool_:
        return np.asarray(np.where(which, cases[1], cases[0]), dtype=np.result_type(cases[0]))
    # clip in the selector's own dtype first: uint64 above 2**63 must not wrap negative
    which = np.minimum(which, which.dtype.type(len(cases) - 1))
    return np.asarray(np.choose(which.astype(np.int64), [np.asarray(c) for c in cases], mode="clip"))


select_n_p = Primitive("select_n")
select_n_p.abstract_eval = _select_abstract
select_n_p.impl = _select_impl
defbroadcasting(select_n_p)


def select_n(which, *cases):
    """cases[which] elementwise: with a bool selector, (case_false, case_true).

    An integer selector outside [0, len(cases)) is clipped on every backend: a negative
    one picks the first case, a larger one (an unsigned one with its top bit set too) the
    last.
    """
    return select_n_p.bind(which, *cases)


def _clamp_abstract(lo, x, hi):
    for b in (lo, hi):
        if b.dtype != x.dtype:
            raise TypeError(f"clamp: bounds must have dtype {x.dtype}, got {b.dtype}")
        if b.ndim and b.shape != x.shape:
            raise shape_error("clamp", f"bounds must be rank 0 or of shape {x.shape}, got {b.shape}")
    return AbstractArray(x.shape, x.dtype, x.weak_type)


clamp_p = Primitive("clamp")
clamp_p.abstract_eval = _clamp_abstract
clamp_p.impl = _exact(lambda lo, x, hi: ieee_minimum(ieee_maximum(x, lo), hi), lowp=False)
defbroadcasting(clamp_p)


def clamp(lo, x, hi):
    """min(max(x, lo), hi)."""
    return clamp_p.bind(lo, x, hi)


# --- jvp and transpose rules ------------------------------------------------------

defjvp(neg_p, lambda g, ans, x: neg(g))
neg_p.transpose = lambda ct, x: [neg(ct)]
defjvp_zero(sign_p)
defjvp_zero(floor_p)
defjvp_zero(ceil_p)
defjvp_zero(round_p)
defjvp_zero(is_finite_p)
defjvp_zero(not_p)
defjvp_zero(population_count_p)
defjvp_zero(clz_p)
defjvp_zero(nextafter_p)
for _p in (and_p, or_p, xor_p, shift_left_p, shift_right_arithmetic_p, shift_right_logical_p):
    defjvp_zero(_p)


def _abs_jvp(g, ans, x):
    if _dt.kind(get_aval(x).dtype) == "c":
        return div(real(mul(conj(x), g)), select_n(eq(ans, const_like(ans, 0)), ans, const_like(ans, 1)))
    return mul(g, sign(x))


defjvp(abs_p, _abs_jvp)
defjvp(exp_p, lambda g, ans, x: mul(g, ans))
defjvp(exp2_p, lambda g, ans, x: mul(g, mul(ans, const_like(x, math.log(2)))))
defjvp(log_p, lambda g, ans, x: div(g, x))
defjvp(log1p_p, lambda g, ans, x: div(g, add(x, const_like(x, 1))))
defjvp(expm1_p, lambda g, ans, x: mul(g, add(ans, const_like(x, 1))))
defjvp(tanh_p, lambda g, ans, x: mul(g, sub(const_like(x, 1), mul(ans, ans))))
defjvp(logistic_p, lambda g, ans, x: mul(g, mul(ans, sub(const_like(x, 1), ans))))
defjvp(sin_p, lambda g, ans, x: mul(g, cos(x)))
defjvp(cos_p, lambda g, ans, x: neg(mul(g, sin(x))))
defjvp(tan_p, lambda g, ans, x: mul(g, add(const_like(x, 1), mul(ans, ans))))
defjvp(asin_p, lambda g, ans, x: mul(g, rsqrt(sub(const_like(x, 1), mul(x, x)))))
defjvp(acos_p, lambda g, ans, x: neg(mul(g, rsqrt(sub(const_like(x, 1), mul(x, x))))))
defjvp(atan_p, lambda g, ans, x: div(g, add(const_like(x, 1), mul(x, x))))
defjvp(sinh_p, lambda g, ans, x: mul(g, cosh(x)))
defjvp(cosh_p, lambda g, ans, x: mul(g, sinh(x)))
defjvp(asinh_p, lambda g, ans, x: mul(g, rsqrt(add(mul(x, x), const_like(x, 1)))))
defjvp(acosh_p, lambda g, ans, x: mul(g, rsqrt(mul(sub(x, const_like(x, 1)), add(x, const_like(x, 1))))))
defjvp(atanh_p, lambda g, ans, x: div(g, sub(const_like(x, 1), mul(x, x))))
defjvp(sqrt_p, lambda g, ans, x: div(mul(g, const_like(x, 0.5)), ans))
defjvp(rsqrt_p, lambda g, ans, x: mul(g, mul(const_like(x, -0.5), div(ans, x))))
defjvp(cbrt_p, lambda g, ans, x: mul(g, div(const_like(x, 1 / 3), mul(ans, ans))))
defjvp(erf_p, lambda g, ans, x: mul(g, mul(const_like(x, 2 / math.sqrt(math.pi)), exp(neg(mul(x, x))))))
defjvp(erfc_p, lambda g, ans, x: mul(g, mul(const_like(x, -2 / math.sqrt(math.pi)), exp(neg(mul(x, x))))))
defjvp(erf_inv_p, lambda g, ans, x: mul(g, mul(const_like(x, math.sqrt(math.pi) / 2), exp(mul(ans, ans)))))
defjvp(lgamma_p, lambda g, ans, x: mul(g, digamma(x)))
defjvp(digamma_p, lambda g, ans, x: mul(g, polygamma(1, x)))
defjvp(polygamma_p, lambda g, ans, x, m: mul(g, polygamma(m + 1, x)))
defjvp(square_p, lambda g, ans, x: mul(g, mul(const_like(x, 2), x)))


def _integer_pow_jvp(g, ans, x, y):
    if y == 0:
        return Zero(get_aval(g))
    d = const_like(x, y) if y != 1 else None
    return mul(g, d) if y == 1 else mul(g, mul(d, integer_pow(x, y - 1)))


defjvp(integer_pow_p, lambda g, ans, x, y: (g if y == 1 else _integer_pow_jvp(g, ans, x, y)))
defjvp(real_p, lambda g, ans, x: real(g))
defjvp(imag_p, lambda g, ans, x: imag(g))
defjvp(conj_p, lambda g, ans, x: conj(g))
real_p.transpose = lambda ct, x: [complex(ct, const_like(ct, 0))]
imag_p.transpose = lambda ct, x: [complex(const_like(ct, 0), neg(ct))]
conj_p.transpose = lambda ct, x: [conj(ct)]
defjvp(complex_p, lambda g, ans, x, y: complex(g, const_like(g, 0)),
       lambda g, ans, x, y: complex(const_like(g, 0), g))
complex_p.transpose = lambda ct, x, y: [real(ct) if is_undefined(x) else None,
                                        neg(imag(ct)) if is_undefined(y) else None]


def _add_transpose(ct, x, y):
    return [unbroadcast(x.aval, ct) if is_undefined(x) else None,
            unbroadcast(y.aval, ct) if is_undefined(y) else None]


def _sub_transpose(ct, x, y):
    return [unbroadcast(x.aval, ct) if is_undefined(x) else None,
            unbroadcast(y.aval, neg(ct)) if is_undefined(y) else None]


def _mul_transpose(ct, x, y):
    if is_undefined(x) and is_undefined(y):
        raise TypeError("mul is not linear when both operands are linear inputs")
    if is_undefined(x):
        return [unbroadcast(x.aval, mul(ct, y)), None]
    return [None, unbroadcast(y.aval, mul(x, ct))]


def _div_transpose(ct, x, y):
    if is_undefined(y):
        raise TypeError("div is not linear in its divisor")
    return [unbroadcast(x.aval, div(ct, y)), None]


defjvp(add_p, lambda g, ans, x, y: g, lambda g, ans, x, y: g)
add_p.transpose = _add_transpose
defjvp(sub_p, lambda g, ans, x, y: g, lambda g, ans, x, y: neg(g))
sub_p.transpose = _sub_transpose
defbilinear(mul_p)
mul_p.transpose = _mul_transpose
defjvp(div_p, lambda g, ans, x, y: div(g, y), lambda g, ans, x, y: neg(mul(g, div(ans, y))))
div_p.transpose = _div_transpose


def _rem_jvp_y(g, ans, x, y):
    q = div(x, y)
    return neg(mul(g, mul(sign(q), floor(abs(q)))))


defjvp(rem_p, lambda g, ans, x, y: g, _rem_jvp_y)


def _pow_jvp_x(g, ans, x, y):
    # y * x**(y-1). Only where x == 0 and y == 0 is that product nan (0 * inf) while
    # x**0 is the constant 1, so only there is the derivative pinned to 0 (as torch;
    # JAX 0.10 gives nan). Pinning every y == 0 would also drop this factor's own
    # derivative w.r.t. y (1/x at y == 0) and make the Hessian asymmetric; the base is
    # replaced by 1 at the pinned points so no inf/nan reaches higher-order or
    # reverse-mode derivatives of the unselected branch.
    pinned = bitwise_and(eq(x, const_like(x, 0)), eq(y, const_like(y, 0)))
    xs = select_n(pinned, x, const_like(x, 1))
    d = mul(y, pow(xs, sub(y, const_like(y, 1))))
    d = select_n(pinned, d, const_like(d, 0))
    return mul(g, d)


def _pow_jvp_y(g, ans, x, y):
    # x**y * log(x); at x == 0 the factor is 0 (0**y is constant in y for y > 0).
    # The log's argument is replaced by 1 there, rather than selecting after log(0),
    # so that the log's derivative (1/0) never meets a zero cotangent as 0 * inf = nan.
    zero = eq(x, const_like(x, 0))
    safe_log = log(select_n(zero, x, const_like(x, 1)))
    return mul(g, mul(ans, safe_log))


defjvp(pow_p, _pow_jvp_x, _pow_jvp_y)


def _minmax_jvp(pick_x):
    def jx(g, ans, x, y):
        half = const_like(g, 0.5)
        w = select_n(pick_x(x, y), const_like(g, 0), const_like(g, 1))
        w = select_n(eq(x, y), w, half)
        return mul(g, w)

    def jy(g, ans, x, y):
        half = const_like(g, 0.5)
        w = select_n(pick_x(x, y), const_like(g, 1), const_like(g, 0))
        w = select_n(eq(x, y), w, half)
        return mul(g, w)
    return jx, jy


defjvp(max_p, *_minmax_jvp(gt))
defjvp(min_p, *_minmax_jvp(lt))


def _atan2_jvp(which):
    def f(g, ans, x, y):
        den = add(mul(x, x), mul(y, y))
        return div(mul(g, y), den) if which == 0 else neg(div(mul(g, x), den))
    return f


defjvp(atan2_p, _atan2_jvp(0), _atan2_jvp(1))


def _select_jvp(primals, tangents):
    which, *cases = primals
    ans = select_n(which, *cases)
    out_aval = get_aval(ans)
    tc = tangents[1:]
    if all(type(t) is Zero for t in tc):
        from ..core import tangent_aval
        return ans, Zero(tangent_aval(out_aval))
    from .rules import zeros
    ts = [zeros(t.aval) if type(t) is Zero else t for t in tc]
    return ans, select_n(which, *ts)


def _select_transpose(ct, which, *cases):
    if is_undefined(which):
        raise TypeError("select_n is not linear in its selector")
    from .rules import zeros
    z = zeros(get_aval(ct))
    out = [None]
    for i, c in enumerate(cases):
        if is_undefined(c):
            branches = [z] * len(cases)
            branches[i] = ct
            out.append(unbroadcast(c.aval, select_n(which, *branches)))
        else:
            out.append(None)
    return out


select_n_p.jvp = _select_jvp
select_n_p.transpose = _select_transpose


def _clamp_jvp(primals, tangents):
    lo, x, hi = primals
    ans = clamp(lo, x, hi)
    out_aval = get_aval(ans)
    from ..core import tangent_aval
    from .rules import add_tangents, broadcast_to_shape
    t = Zero(tangent_aval(out_aval))
    glo, gx, ghi = tangents
    zero = const_like(ans, 0)
    if type(gx) is not Zero:
        inside = bitwise_and(ge(x, lo), le(x, hi))
        t = add_tangents(t, select_n(inside, broadcast_to_shape(zero, out_aval.shape), gx))
    if type(glo) is not Zero:
        t = add_tangents(t, select_n(lt(x, lo), zero, broadcast_to_shape(glo, out_aval.shape)))
    if type(ghi) is not Zero:
        t = add_tangents(t, select_n(gt(x, hi), zero, broadcast_to_shape(ghi, out_aval.shape)))
    if type(t) is not Zero:
        t = broadcast_to_shape(t, out_aval.shape)
    return ans, t


clamp_p.jvp = _clamp_jvp

# Non-linear primitives: no transpose rule applies.
for _p in (exp_p, exp2_p, log_p, log1p_p, expm1_p, tanh_p, logistic_p, sin_p, cos_p, tan_p,
           asin_p, acos_p, atan_p, sinh_p, cosh_p, asinh_p, acosh_p, atanh_p, sqrt_p, rsqrt_p,
           cbrt_p, erf_p, erfc_p, erf_inv_p, lgamma_p, digamma_p, polygamma_p, abs_p, square_p,
           integer_pow_p, rem_p, pow_p, max_p, min_p, atan2_p, clamp_p):
    _p.not_applicable.add("transpose")
