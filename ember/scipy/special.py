"""`scipy.special` functions (JAX's `jax.scipy.special` names and semantics) composed from
ember primitives, so grad, jvp, vmap and jit apply to every one of them."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .. import lax
from ..fx.core import const_like
from ..transforms.custom_derivatives import custom_jvp

__all__ = ["gammaln", "digamma", "polygamma", "erf", "erfc", "erfinv", "xlogy", "xlog1py",
           "logsumexp", "betaln", "zeta", "i0e", "i1e", "expit", "logit"]


def _float_args(name, *args):
    from ..numpy._core import promote_args
    return promote_args(name, *args, to_inexact=True)


def _in_float32(fn, *xs):
    """fn over half-precision operands computed in float32 and rounded once, as the
    primitives do: the series and Euler-Maclaurin sums overflow float16 long before the
    result does."""
    d = xs[0].dtype
    if d.itemsize != 2:
        return fn(*xs)
    out = fn(*[lax.convert_element_type(x, np.float32) for x in xs])
    return lax.convert_element_type(out, d)


def _where(c, a, b):
    from ..numpy import where
    return where(c, a, b)


def gammaln(x):
    """log |Gamma(x)| (scipy.special.gammaln).

    Example:
        >>> from ember.scipy.special import gammaln
        >>> round(float(gammaln(5.0)), 6)  # log(4!)
        3.178054
    """
    (x,) = _float_args("gammaln", x)
    return lax.lgamma(x)


def digamma(x):
    """The logarithmic derivative of Gamma (scipy.special.digamma / psi).

    Example:
        >>> from ember.scipy.special import digamma
        >>> round(float(digamma(1.0)), 6)  # -Euler's constant
        -0.577216
    """
    (x,) = _float_args("digamma", x)
    return lax.digamma(x)


def polygamma(n, x):
    """The n-th derivative of digamma (scipy.special.polygamma).  A Python int `n` uses the
    polygamma primitive; an array `n` (traced or not) goes through
    `(-1)**(n+1) n! zeta(n+1, x)`, as JAX does, with `n == 0` giving digamma.

    Example:
        >>> from ember.scipy.special import polygamma
        >>> round(float(polygamma(1, 1.0)), 6)  # pi**2 / 6
        1.644934
    """
    if isinstance(n, (int, np.integer)) and not isinstance(n, bool):
        if n < 0:
            raise ValueError(f"polygamma: n must be a non-negative integer, got {n}")
        (x,) = _float_args("polygamma", x)
        return lax.digamma(x) if n == 0 else lax.polygamma(int(n), x)
    from ..numpy import asarray
    n = asarray(n)
    if not (n.dtype.kind in "iu"):
        raise TypeError(f"polygamma: n must be an integer or an integer array, got "
                        f"{n.aval.str_user()}")
    (x,) = _float_args("polygamma", x)
    nf = lax.convert_element_type(n, x.dtype)
    one = const_like(x, 1.0)
    sign = lax.sub(one, lax.mul(lax.rem(lax.add(nf, one), const_like(x, 2.0)), const_like(x, 2.0)))
    fact = lax.exp(lax.lgamma(lax.add(nf, one)))
    nz = lax.gt(nf, const_like(x, 0.0))
    safe_n = _where(nz, nf, one)   # keep zeta's s > 1 in the branch digamma replaces
    val = sign * fact * zeta(safe_n + one, x)
    return _where(nz, val, lax.digamma(x + 0 * nf))


def erf(x):
    """The error function (scipy.special.erf).

    Example:
        >>> from ember.scipy.special import erf
        >>> round(float(erf(0.5)), 6)
        0.5205
    """
    (x,) = _float_args("erf", x)
    return lax.erf(x)


def erfc(x):
    """1 - erf(x), without the cancellation (scipy.special.erfc).

    Example:
        >>> from ember.scipy.special import erfc
        >>> float(erfc(10.0)) > 0
        True
    """
    (x,) = _float_args("erfc", x)
    return lax.erfc(x)


def erfinv(x):
    """The inverse of erf on (-1, 1); +-inf at +-1, NaN outside (scipy.special.erfinv).

    Example:
        >>> from ember.scipy.special import erf, erfinv
        >>> round(float(erf(erfinv(0.3))), 6)
        0.3
    """
    (x,) = _float_args("erfinv", x)
    return lax.erf_inv(x)


@custom_jvp
def _xlogy(x, y):
    return _where(lax.ne(x, const_like(x, 0.0)), lax.mul(x, lax.log(y)), lax.mul(x, const_like(x, 0.0)))


@_xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return _xlogy(x, y), tx * lax.log(y) + ty * x / y


def xlogy(x, y):
    """x * log(y), with 0 where x == 0 (so xlogy(0, 0) == 0), as scipy.special.xlogy.  The
    derivative is JAX's: log(y) in x and x / y in y (so at (0, 0): -inf and NaN; at
    (0, y > 0): log(y) and 0).

    Example:
        >>> from ember.scipy.special import xlogy
        >>> float(xlogy(0.0, 0.0)), round(float(xlogy(2.0, 3.0)), 6)
        (0.0, 2.197225)
    """
    x, y = _float_args("xlogy", x, y)
    return _xlogy(x, y)


@custom_jvp
def _xlog1py(x, y):
    return _where(lax.ne(x, const_like(x, 0.0)), lax.mul(x, lax.log1p(y)), lax.mul(x, const_like(x, 0.0)))


@_xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return _xlog1py(x, y), tx * lax.log1p(y) + ty * x / (y + 1.0)


def xlog1py(x, y):
    """x * log1p(y), with 0 where x == 0 (scipy.special.xlog1py); derivatives log1p(y) and
    x / (1 + y), as JAX's.

    Example:
        >>> from ember.scipy.special import xlog1py
        >>> float(xlog1py(0.0, 3.0))
        0.0
    """
    x, y = _float_args("xlog1py", x, y)
    return _xlog1py(x, y)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """log(sum(b * exp(a))) along `axis`, computed without overflow (the shift by the
    maximum is held constant for differentiation, which is exact).  With `return_sign`,
    returns (log|sum|, sign); without it a negative sum gives NaN, as scipy's.

    Example:
        >>> import ember.numpy as enp
        >>> from ember.scipy.special import logsumexp
        >>> round(float(logsumexp(enp.asarray([1000.0, 1000.0]))), 4)
        1000.6932
    """
    from .. import numpy as enp
    from ..transforms.misc import stop_gradient
    (a,) = _float_args("logsumexp", a)
    if b is not None:
        a, b = _float_args("logsumexp", a, b)
        a, b = enp.broadcast_arrays(a, b)
    amax = enp.max(a, axis=axis, keepdims=True)
    # an all -inf (or empty-weight) slice has max -inf: shift by 0 there, not inf - inf
    amax = stop_gradient(enp.where(enp.isfinite(amax), amax, enp.zeros_like(amax)))
    e = enp.exp(a - amax)
    if b is not None:
        e = e * b
    s = enp.sum(e, axis=axis, keepdims=True)
    sign = enp.sign(s)
    out = enp.log(enp.abs(s)) + amax
    if not return_sign:
        out = enp.where(sign < 0, enp.full_like(out, np.nan), out)
    if not keepdims:
        ax = tuple(range(a.ndim)) if axis is None else axis
        out = enp.squeeze(out, axis=ax)
        sign = enp.squeeze(sign, axis=ax)
    return (out, sign) if return_sign else out


def betaln(a, b):
    """log |B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b) (scipy.special.betaln).

    Example:
        >>> from ember.scipy.special import betaln
        >>> round(float(betaln(2.0, 3.0)), 6)  # log(1/12)
        -2.484907
    """
    a, b = _float_args("betaln", a, b)
    return lax.lgamma(a) + lax.lgamma(b) - lax.lgamma(a + b)


# Bernoulli numbers B_2j / (2j)!, exact, for the Euler-Maclaurin tail of zeta.
_B2J = [Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30), Fraction(5, 66),
        Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510), Fraction(43867, 798),
        Fraction(-174611, 330), Fraction(854513, 138), Fraction(-236364091, 2730)]
_EM = [float(bn / math.factorial(2 * (j + 1))) for j, bn in enumerate(_B2J)]
_EM_N = 10


def zeta(x, q=None):
    """The Hurwitz zeta function sum_k (k + q)**-x (scipy.special.zeta; `q=None` is the
    Riemann zeta, q = 1).  Defined for x > 1 (x == 1 gives inf, x < 1 NaN, as scipy's
    two-argument form); q may be negative (a non-positive integer q gives inf).  Computed
    by Euler-Maclaurin summation: 10 terms and 12 Bernoulli corrections, so the
    derivatives in x and q come from differentiating it.

    Example:
        >>> from ember.scipy.special import zeta
        >>> round(float(zeta(2.0)), 6), round(float(zeta(2.0, 2.0)), 6)  # pi^2/6, pi^2/6 - 1
        (1.644934, 0.644934)
    """
    from .. import numpy as enp
    x, q = _float_args("zeta", x, 1.0 if q is None else q)
    x, q = enp.broadcast_arrays(x, q)
    return _in_float32(_zeta, x, q)


def _zeta(x, q):
    from .. import numpy as enp
    one = const_like(x, 1.0)
    total = enp.zeros_like(x)
    for k in range(_EM_N):
        total = total + (q + float(k)) ** (-x)
    w = q + float(_EM_N)
    total = total + w ** (one - x) / (x - one) + 0.5 * w ** (-x)
    # tail: sum_j B_2j/(2j)! * x (x+1) ... (x+2j-2) * w^(-x-2j+1), the Pochhammer factor
    # and the power kept as one running product: apart, the first overflows and the second
    # underflows (inf * 0) for large x in float32
    t = x * w ** (-x - one)
    inv_w2 = one / (w * w)
    for j, c in enumerate(_EM):
        total = total + c * t
        t = t * ((x + float(2 * j + 1)) * inv_w2) * (x + float(2 * j + 2))
    return enp.where(x < one, enp.full_like(total, np.nan), total)


_SERIES_MAX = 30.0   # |x| above this: the asymptotic expansion (all-positive series below)
_SERIES_TERMS = 60
_ASYM_TERMS = 25


def _bessel_series(x2_4, first, nu):
    """sum_k first * (x^2/4)^k / (k! (k+nu)!) * nu!, all terms positive: no cancellation."""
    term, total = first, first
    for k in range(1, _SERIES_TERMS):
        term = term * x2_4 * (1.0 / (k * (k + nu)))
        total = total + term
    return total


def _bessel_asym(ax, nu):
    """e^-x I_nu(x) ~ (2 pi x)^-1/2 sum_k (-1)^k prod_j (4nu^2 - (2j-1)^2) / (k! (8x)^k)."""
    from .. import numpy as enp
    mu = 4.0 * nu * nu
    coef, total = 1.0, enp.ones_like(ax)
    inv8x = 1.0 / (8.0 * ax)
    p = enp.ones_like(ax)
    for k in range(1, _ASYM_TERMS):
        coef = -coef * (mu - (2 * k - 1) ** 2) / k
        p = p * inv8x
        total = total + coef * p
    return total / enp.sqrt(2.0 * math.pi * ax)


def _bessel_e(x, nu):
    from .. import numpy as enp
    ax = enp.abs(x)
    small = ax <= _SERIES_MAX
    # each branch sees only the inputs it is valid for, so the other's inf/NaN never
    # reaches a derivative through the where
    xs = enp.where(small, x, enp.zeros_like(x))
    xa = enp.where(small, enp.full_like(ax, 2 * _SERIES_MAX), ax)
    x2_4 = xs * xs * 0.25
    first = enp.ones_like(xs) if nu == 0 else xs * 0.5
    ser = _bessel_series(x2_4, first, nu) * enp.exp(-enp.abs(xs))
    asym = _bessel_asym(xa, nu)
    if nu == 1:
        asym = enp.sign(x) * asym
    return enp.where(small, ser, asym)


@custom_jvp
def _i0e(x):
    return _bessel_e(x, 0)


@custom_jvp
def _i1e(x):
    return _bessel_e(x, 1)


@_i0e.defjvp
def _i0e_jvp(primals, tangents):
    from .. import numpy as enp
    (x,), (t,) = primals, tangents
    y = _i0e(x)
    return y, t * (_i1e(x) - enp.sign(x) * y)


@_i1e.defjvp
def _i1e_jvp(primals, tangents):
    from .. import numpy as enp
    (x,), (t,) = primals, tangents
    y = _i1e(x)
    zero = x == 0
    safe = enp.where(zero, enp.ones_like(x), x)
    # I1(x)/x -> 1/2 at 0
    d = _i0e(x) - y * enp.sign(x) - enp.where(zero, enp.full_like(x, 0.5), y / safe)
    return y, t * d


def i0e(x):
    """exp(-|x|) I0(x), the exponentially scaled modified Bessel function of order 0
    (scipy.special.i0e): a positive-term power series for |x| <= 30, the asymptotic
    expansion beyond; derivative i1e(x) - sign(x) i0e(x).

    Example:
        >>> from ember.scipy.special import i0e
        >>> round(float(i0e(1.0)), 6)
        0.46576
    """
    (x,) = _float_args("i0e", x)
    return _in_float32(_i0e, x)


def i1e(x):
    """exp(-|x|) I1(x), order 1 (scipy.special.i1e); derivative
    i0e(x) - i1e(x) (sign(x) + 1/x).

    Example:
        >>> from ember.scipy.special import i1e
        >>> round(float(i1e(1.0)), 6)
        0.20791
    """
    (x,) = _float_args("i1e", x)
    return _in_float32(_i1e, x)


def expit(x):
    """The logistic sigmoid 1 / (1 + exp(-x)) (scipy.special.expit).

    Example:
        >>> from ember.scipy.special import expit
        >>> float(expit(0.0))
        0.5
    """
    (x,) = _float_args("expit", x)
    return lax.logistic(x)


def logit(p):
    """log(p / (1 - p)), the inverse of expit (scipy.special.logit).

    Example:
        >>> from ember.scipy.special import logit
        >>> float(logit(0.5))
        0.0
    """
    (p,) = _float_args("logit", p)
    return lax.sub(lax.log(p), lax.log1p(lax.neg(p)))
