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
           "logsumexp", "betaln", "zeta", "i0e", "i1e", "expit", "logit", "gamma", "factorial",
           "poch", "multigammaln", "ndtr", "ndtri", "log_ndtr", "entr", "rel_entr", "kl_div",
           "softmax", "log_softmax", "i0", "i1", "gammainc", "gammaincc", "betainc"]


def _float_args(name, *args):
    from ..numpy._core import promote_args
    return promote_args(name, *args, to_inexact=True)


def _real_args(name, *args):
    """_float_args for the real-only functions: a complex operand is an error naming the
    function, not a NaN or a trace-time failure deep inside a series."""
    out = _float_args(name, *args)
    for x in out:
        if x.dtype.kind == "c":
            raise TypeError(f"{name}: complex inputs are not supported, got {x.dtype.name}")
    return out


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
    # x == 0 gives 0, except for a NaN y, which propagates (scipy and JAX)
    keep = lax.ne(x, const_like(x, 0.0)) | lax.ne(y, y)
    return _where(keep, lax.mul(x, lax.log(y)), lax.mul(x, const_like(x, 0.0)))


@_xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return _xlogy(x, y), tx * lax.log(y) + ty * x / y


def xlogy(x, y):
    """x * log(y), with 0 where x == 0 (so xlogy(0, 0) == 0; a NaN y still gives NaN), as
    scipy.special.xlogy.  The
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
    keep = lax.ne(x, const_like(x, 0.0)) | lax.ne(y, y)
    return _where(keep, lax.mul(x, lax.log1p(y)), lax.mul(x, const_like(x, 0.0)))


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


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """log(sum(b * exp(a))) along `axis`, computed without overflow (the shift by the
    maximum real part is held constant for differentiation, which is exact), as
    scipy.special.logsumexp / JAX's.  With `return_sign`, returns (log|sum|, sign); without
    it a negative real sum gives NaN.  Entries whose weight `b` is 0 are left out (so
    a = inf there does not give NaN); `where` masks entries out of the sum.  For complex
    `a` or `b` the result is the complex log of the sum (principal branch, imaginary part
    in (-pi, pi]), and with `return_sign` it is (log|sum|, sum / |sum|), real and complex.
    An empty sum gives -inf.

    Example:
        >>> import ember.numpy as enp
        >>> from ember.scipy.special import logsumexp
        >>> round(float(logsumexp(enp.asarray([1000.0, 1000.0]))), 4)
        1000.6932
        >>> z = logsumexp(enp.asarray([0.0 + 1.0j, 0.0 - 1.0j]))  # log(2 cos 1)
        >>> round(float(z.real), 6), float(z.imag)
        (0.077521, 0.0)
    """
    from .. import numpy as enp
    from ..transforms.misc import stop_gradient
    if b is None:
        (a,) = _float_args("logsumexp", a)
    else:
        a, b = _float_args("logsumexp", a, b)
        a, b = enp.broadcast_arrays(a, b)
        # a zero weight removes its term, whatever a is (inf * 0 would be NaN)
        a = enp.where(b != 0, a, enp.full_like(a, -np.inf))
    if where is not None:
        where = enp.asarray(where)
        if where.dtype != np.bool_:
            raise TypeError(f"logsumexp: `where` must be a boolean array, got "
                            f"{where.aval.str_user()}")
        a = enp.where(where, a, enp.full_like(a, -np.inf))
        if b is not None:
            b = enp.where(where, b, enp.zeros_like(b))
    ax = _norm_axis("logsumexp", axis, a.ndim)
    cplx = a.dtype.kind == "c"
    ar = enp.real(a) if cplx else a
    amax = enp.max(ar, axis=ax, keepdims=True, initial=-np.inf)
    # an all -inf (or empty-weight) slice has max -inf: shift by 0 there, not inf - inf
    amax = stop_gradient(enp.where(enp.isfinite(amax), amax, enp.zeros_like(amax)))
    e = enp.exp(a - amax.astype(a.dtype))
    if b is not None:
        e = e * b
    s = enp.sum(e, axis=ax, keepdims=True)
    sign = enp.sign(s)
    if return_sign or not cplx:
        s = enp.abs(s)
    out = enp.log(s) + amax.astype(s.dtype)
    if not return_sign and not cplx:
        out = enp.where(sign < 0, enp.full_like(out, np.nan), out)
    if not keepdims:
        out = enp.squeeze(out, axis=ax)
        sign = enp.squeeze(sign, axis=ax)
    return (out, sign) if return_sign else out


def betaln(a, b):
    """log |B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b) (scipy.special.betaln);
    -inf when one argument is +inf and the other finite and positive.

    Example:
        >>> from ember.scipy.special import betaln
        >>> round(float(betaln(2.0, 3.0)), 6)  # log(1/12)
        -2.484907
    """
    from .. import numpy as enp
    a, b = _float_args("betaln", a, b)
    out = lax.lgamma(a) + lax.lgamma(b) - lax.lgamma(a + b)
    # B(inf, b) = 0 for a finite b > 0 (inf - inf above), as scipy's
    inf_one = (enp.isposinf(a) & enp.isfinite(b) & (b > 0)) | (enp.isposinf(b) & enp.isfinite(a) & (a > 0))
    return enp.where(inf_one, enp.full_like(out, -np.inf), out)


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
    # x = inf: (q + k)^-inf is 0, 1 or inf term by term (the tail above is inf * 0)
    head = enp.zeros_like(x)
    for k in range(_EM_N):
        head = head + (q + float(k)) ** (-x)
    total = enp.where(enp.isposinf(x), head, total)
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


# ---------------------------------------------------------------------------------------
# gamma, factorials, Pochhammer


def _gammasgn(x):
    """The sign of Gamma(x): -1 on (-2k-1, -2k), 1 elsewhere (NaN for NaN)."""
    from .. import numpy as enp
    fl = enp.floor(x)
    odd = enp.remainder(fl, 2.0) == 1.0
    neg = (x < 0) & (fl != x) & odd
    return enp.where(neg, -enp.ones_like(x), enp.ones_like(x))


def _gamma_pos(x):
    """Gamma(x) for x > 0 to a few ulp: Stirling, sqrt(2 pi) (x^(x/2 - 1/4) e^(-x/2))^2
    e^C(x) (pow and exp each round once, where exp(lgamma(x)) would turn lgamma's
    absolute error into a relative one: 600 ulp near 170), at x >= 10, and below 10
    Gamma(x + 10) / (x (x+1) ... (x+9))."""
    from .. import numpy as enp
    big = x >= 10.0
    xb = enp.where(big, x, x + 10.0)
    h = enp.power(xb, 0.5 * xb - 0.25) * enp.exp(-0.5 * xb)
    # C(x) of lgamma(x) is _lgamma1p_stirling_corr's remainder at x
    st = math.sqrt(2.0 * math.pi) * (h * h) * enp.exp(_lgamma1p_stirling_corr(xb))
    den = enp.ones_like(x)
    for j in range(10):
        den = den * (x + float(j))
    return enp.where(big, st, st / enp.where(big, enp.ones_like(den), den))


def _gamma(x):
    from .. import numpy as enp
    pos = x > 0
    gp = _gamma_pos(enp.where(pos, x, enp.ones_like(x)))
    g = enp.where(pos, gp, _gammasgn(x) * lax.exp(lax.lgamma(x)))
    g = enp.where(x == np.inf, x, g)
    pole = (x <= 0) & (enp.floor(x) == x)
    # Gamma(+-0) = +-inf; the other non-positive integers are poles of both signs: NaN
    zero_val = enp.where(enp.signbit(x), enp.full_like(x, -np.inf), enp.full_like(x, np.inf))
    return enp.where(pole, enp.where(x == 0, zero_val, enp.full_like(x, np.nan)), g)


def gamma(x):
    """The gamma function (scipy.special.gamma): for x > 0 Stirling's series (below 10
    after the recurrence up by 10), a few ulp; for x < 0 sign(Gamma(x)) exp(gammaln(x));
    +-inf at +-0, NaN at the negative integers, inf past x = 171.6 (float64).

    Example:
        >>> from ember.scipy.special import gamma
        >>> round(float(gamma(5.0)), 4), round(float(gamma(-1.5)), 6)
        (24.0, 2.363272)
    """
    (x,) = _real_args("gamma", x)
    return _in_float32(_gamma, x)


def factorial(n, exact=False):
    """n! = Gamma(n + 1) as floats, 0 for n < 0 (scipy.special.factorial with
    exact=False; exact=True needs Python integers, which a traced array cannot give).

    Example:
        >>> from ember.scipy.special import factorial
        >>> round(float(factorial(5)), 3), float(factorial(-1.0))
        (120.0, 0.0)
    """
    from .. import numpy as enp
    if exact:
        raise ValueError("factorial: exact=True is not supported (the result is a float "
                         "array); use math.factorial for exact integers")
    (n,) = _real_args("factorial", n)

    def f(n):
        return enp.where(n < 0, enp.zeros_like(n), _gamma(enp.where(n < 0, enp.zeros_like(n), n) + 1.0))
    return _in_float32(f, n)


def poch(z, m):
    """The Pochhammer symbol (z)_m = Gamma(z + m) / Gamma(z) (scipy.special.poch), as
    sign * exp(gammaln(z + m) - gammaln(z)); 1 where m == 0.

    Example:
        >>> from ember.scipy.special import poch
        >>> round(float(poch(3.0, 2.0)), 6)  # 3 * 4
        12.0
    """
    from .. import numpy as enp
    z, m = _real_args("poch", z, m)
    z, m = enp.broadcast_arrays(z, m)

    def f(z, m):
        zm = z + m
        val = _gammasgn(zm) * _gammasgn(z) * lax.exp(lax.lgamma(zm) - lax.lgamma(z))
        # Gamma(z) at a pole with Gamma(z + m) finite: the ratio is 0
        zpole = (z <= 0) & (enp.floor(z) == z)
        zmpole = (zm <= 0) & (enp.floor(zm) == zm)
        # both poles: (z)_m = z (z+1) ... (z+m-1) = (-1)^m Gamma(1-z) / Gamma(1-z-m)
        mz = enp.where(zpole & zmpole, 1.0 - z, enp.ones_like(z))
        mzm = enp.where(zpole & zmpole, 1.0 - zm, enp.ones_like(z))
        both = (1.0 - 2.0 * enp.remainder(m, 2.0)) * lax.exp(lax.lgamma(mz) - lax.lgamma(mzm))
        val = enp.where(zpole, enp.where(zmpole, both, enp.zeros_like(val)),
                        enp.where(zmpole, enp.full_like(val, np.inf), val))   # scipy's sign
        return enp.where(m == 0, enp.ones_like(val), val)
    return _in_float32(f, z, m)


def multigammaln(a, d):
    """log of the multivariate gamma function, d(d-1)/4 log(pi) + sum_j gammaln(a - j/2)
    for j < d (scipy.special.multigammaln); `d` is a Python int.

    Example:
        >>> from ember.scipy.special import multigammaln
        >>> round(float(multigammaln(3.0, 3)), 6)
        2.694925
    """
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"multigammaln: d must be a positive Python int, got {d!r}")
    (a,) = _real_args("multigammaln", a)
    d = int(d)
    out = lax.lgamma(a)
    for j in range(1, d):
        out = out + lax.lgamma(a - 0.5 * j)
    return out + 0.25 * d * (d - 1) * math.log(math.pi)


# ---------------------------------------------------------------------------------------
# the normal distribution function


def _ndtr(x):
    from .. import numpy as enp
    h = 0.5 * math.sqrt(2.0)
    w = x * h
    z = enp.abs(w)
    # erf near 0, erfc in the tails: each where it does not cancel
    y = enp.where(z < h, 1.0 + lax.erf(w), enp.where(w > 0, 2.0 - lax.erfc(z), lax.erfc(z)))
    return 0.5 * y


def ndtr(x):
    """The standard normal CDF, (1 + erf(x / sqrt 2)) / 2 (scipy.special.ndtr), through
    erfc in the tails so ndtr(-30) is not 0.

    Example:
        >>> from ember.scipy.special import ndtr
        >>> float(ndtr(0.0)), round(float(ndtr(1.0)), 6)
        (0.5, 0.841345)
    """
    (x,) = _real_args("ndtr", x)
    return _in_float32(_ndtr, x)


# Cephes ndtri's rational approximations (netlib, as scipy and JAX use them)
_NDTRI_P0 = [-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
             1.39312609387279679503E1, -1.23916583867381258016E0]
_NDTRI_Q0 = [1.0, 1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
             -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
             1.59056225126211695515E1, -1.18331621121330003142E0]
_NDTRI_P1 = [4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
             4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
             -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4]
_NDTRI_Q1 = [1.0, 1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
             1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
             -3.80806407691578277194E-2, -9.33259480895457427372E-4]
_NDTRI_P2 = [3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
             1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
             3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9]
_NDTRI_Q2 = [1.0, 6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
             2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
             2.89247864745380683936E-6, 6.79019408009981274425E-9]


def _polyval(coefs, x):
    from .. import numpy as enp
    out = enp.full_like(x, coefs[0])
    for c in coefs[1:]:
        out = out * x + c
    return out


def _ndtri_raw(p):
    from .. import numpy as enp
    e2 = math.exp(-2.0)
    upper = p > 1.0 - e2
    mcp = enp.where(upper, 1.0 - p, p)
    # 0 and 1 (and anything outside) are answered below; keep the logs finite here
    bad = ~((mcp > 0) & (mcp <= 0.5 + 0.5))
    mcp = enp.where(bad, enp.full_like(mcp, 0.5), mcp)
    w = mcp - 0.5
    ww = w * w
    big = -math.sqrt(2.0 * math.pi) * (w + w * ww * (_polyval(_NDTRI_P0, ww) / _polyval(_NDTRI_Q0, ww)))
    z = enp.sqrt(-2.0 * enp.log(mcp))
    iz = 1.0 / z
    first = z - enp.log(z) / z
    small = first - _polyval(_NDTRI_P2, iz) / _polyval(_NDTRI_Q2, iz) / z
    other = first - _polyval(_NDTRI_P1, iz) / _polyval(_NDTRI_Q1, iz) / z
    x = enp.where(mcp > e2, big, enp.where(z >= 8.0, small, other))
    x = enp.where(upper, x, -x)
    x = enp.where(p == 0, enp.full_like(x, -np.inf), enp.where(p == 1, enp.full_like(x, np.inf), x))
    return enp.where((p < 0) | (p > 1) | enp.isnan(p), enp.full_like(x, np.nan), x)


@custom_jvp
def _ndtri(p):
    return _ndtri_raw(p)


@_ndtri.defjvp
def _ndtri_jvp(primals, tangents):
    from .. import numpy as enp
    (p,), (t,) = primals, tangents
    x = _ndtri(p)
    # d/dp ndtr^-1(p) = 1 / ndtr'(x) = sqrt(2 pi) exp(x^2 / 2)
    return x, t * math.sqrt(2.0 * math.pi) * enp.exp(0.5 * x * x)


def ndtri(p):
    """The inverse of ndtr (scipy.special.ndtri): Cephes' rational approximations, -inf at
    0, inf at 1, NaN outside [0, 1]; derivative sqrt(2 pi) exp(ndtri(p)**2 / 2).

    Example:
        >>> from ember.scipy.special import ndtri
        >>> round(float(ndtri(0.975)), 6), float(ndtri(0.0))
        (1.959964, -inf)
    """
    (p,) = _real_args("ndtri", p)
    return _in_float32(_ndtri, p)


def _log_ndtr_series(x, series_order):
    """log ndtr(x) for x << -1: -x^2/2 - log(-x) - log(2 pi)/2 + log(1 + sum_n
    (-1)^n (2n-1)!! / x^(2n)), the asymptotic expansion scipy and JAX use."""
    from .. import numpy as enp
    x2 = x * x
    s = enp.zeros_like(x)
    x2n = x2
    dfact = 1.0
    for n in range(1, series_order + 1):
        dfact *= 2 * n - 1
        s = s + ((-1.0) ** n * dfact) / x2n
        x2n = x2n * x2
    return -0.5 * x2 - enp.log(-x) - 0.5 * math.log(2.0 * math.pi) + enp.log1p(s)


def _log_ndtr_impl(x, series_order):
    from .. import numpy as enp
    # erfc is exact down to its underflow (ndtr(-37) ~ 6e-300 in float64; float32 stops
    # near -13): below these the asymptotic series; above 8 (5), log(1 - q) ~ -q
    lower, upper = (-37.0, 8.0) if x.dtype == np.float64 else (-10.0, 5.0)
    pos = x > 0
    arg = enp.where(pos, -x, enp.maximum(x, const_like(x, lower)))
    q = _ndtr(arg)
    # x > 0: log(1 - ndtr(-x)); ndtr(x) itself rounds to 1 there
    return enp.where(pos, enp.where(x > upper, -q, enp.log1p(-q)), enp.where(x > lower, enp.log(q),
                                       _log_ndtr_series(enp.minimum(x, const_like(x, lower)),
                                                        series_order)))


def log_ndtr(x, series_order=None):
    """log(ndtr(x)) without underflow (scipy.special.log_ndtr): log(ndtr(x)) down to where
    ndtr underflows (x = -37 in float64, -10 in float32), the asymptotic series beyond,
    log1p(-ndtr(-x)) for x > 0.  `series_order` is JAX's: the number of series terms; the
    default None takes 8 in float64 (JAX's 3 leaves a 1e-13 relative error at x = -37)
    and 3 in float32.  The derivative is exp(log_pdf(x) - log_ndtr(x)).

    Example:
        >>> from ember.scipy.special import log_ndtr
        >>> round(float(log_ndtr(0.0)), 6), round(float(log_ndtr(-50.0)), 4)
        (-0.693147, -1254.8313)
    """
    if series_order is not None and (isinstance(series_order, bool) or not isinstance(
            series_order, (int, np.integer)) or not 0 <= series_order <= 30):
        raise ValueError(f"log_ndtr: series_order must be an int in [0, 30], got {series_order!r}")
    (x,) = _real_args("log_ndtr", x)
    order = int(series_order) if series_order is not None else (8 if x.dtype == np.float64 else 3)
    return _in_float32(lambda v: _log_ndtr(v, order), x)


_log_ndtr = custom_jvp(_log_ndtr_impl, nondiff_argnums=(1,))


@_log_ndtr.defjvp
def _log_ndtr_jvp(series_order, primals, tangents):
    (x,), (t,) = primals, tangents
    ans = _log_ndtr(x, series_order)
    # pdf / cdf, formed in logs: both underflow in the lower tail long before the ratio
    return ans, t * lax.exp(-0.5 * x * x - 0.5 * math.log(2.0 * math.pi) - ans)


# ---------------------------------------------------------------------------------------
# entropies, softmax, unscaled Bessel


def _xlogx_safe(x):
    from .. import numpy as enp
    pos = x > 0
    sx = enp.where(pos, x, enp.ones_like(x))
    return enp.where(pos, sx * enp.log(sx), enp.zeros_like(x))


def entr(x):
    """-x log(x) for x > 0, 0 at 0, -inf for x < 0 (scipy.special.entr).

    Example:
        >>> from ember.scipy.special import entr
        >>> round(float(entr(0.5)), 6), float(entr(0.0))
        (0.346574, 0.0)
    """
    from .. import numpy as enp
    (x,) = _real_args("entr", x)

    def f(x):
        v = enp.where(x < 0, enp.full_like(x, -np.inf), 0.0 - _xlogx_safe(x))
        return enp.where(enp.isnan(x), x, v)
    return _in_float32(f, x)


def rel_entr(x, y):
    """x log(x / y) for x, y > 0; 0 where x == 0 and y >= 0; inf otherwise
    (scipy.special.rel_entr).  The derivative is taken on the x, y > 0 branch only, so
    the other branches' infinities never reach it.

    Example:
        >>> from ember.scipy.special import rel_entr
        >>> round(float(rel_entr(0.5, 0.25)), 6), float(rel_entr(0.0, 1.0))
        (0.346574, 0.0)
    """
    from .. import numpy as enp
    x, y = _real_args("rel_entr", x, y)
    x, y = enp.broadcast_arrays(x, y)
    return _in_float32(_rel_entr, x, y)


def _rel_entr(x, y):
    from .. import numpy as enp
    both = (x > 0) & (y > 0)
    sx = enp.where(both, x, enp.ones_like(x))
    sy = enp.where(both, y, enp.ones_like(y))
    val = sx * (enp.log(sx) - enp.log(sy))
    zero = (x == 0) & (y >= 0)
    val = enp.where(both, val, enp.where(zero, enp.zeros_like(x), enp.full_like(x, np.inf)))
    return enp.where(enp.isnan(x) | enp.isnan(y), x + y, val)


def kl_div(x, y):
    """x log(x / y) - x + y for x, y > 0; y where x == 0 and y >= 0; inf otherwise
    (scipy.special.kl_div).

    Example:
        >>> from ember.scipy.special import kl_div
        >>> round(float(kl_div(0.5, 0.25)), 6), float(kl_div(0.0, 2.0))
        (0.096574, 2.0)
    """
    from .. import numpy as enp
    x, y = _real_args("kl_div", x, y)
    x, y = enp.broadcast_arrays(x, y)
    # in float32 for half inputs: the three terms cancel
    return _in_float32(lambda x, y: _rel_entr(x, y) - x + y, x, y)


def _norm_axis(name, axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < max(ndim, 1):
            raise ValueError(f"{name}: axis {a} is out of range for an array of {ndim} dimensions")
        out.append(int(a) % max(ndim, 1))
    return tuple(out)


def log_softmax(x, axis=None):
    """x - logsumexp(x) over `axis` (scipy.special.log_softmax; `axis=None`, scipy's
    default, means all axes).

    Example:
        >>> import ember.numpy as enp
        >>> from ember.scipy.special import log_softmax
        >>> [round(float(v), 6) for v in log_softmax(enp.asarray([0.0, 1000.0]))]
        [-1000.0, 0.0]
    """
    from .. import numpy as enp
    from ..transforms.misc import stop_gradient
    (x,) = _real_args("log_softmax", x)
    ax = _norm_axis("log_softmax", axis, x.ndim)

    def f(x):
        m = enp.max(x, axis=ax, keepdims=True, initial=-np.inf)
        # a constant shift cancels exactly: hold it out of the derivative
        m = stop_gradient(enp.where(enp.isfinite(m), m, enp.zeros_like(m)))
        s = x - m
        return s - enp.log(enp.sum(enp.exp(s), axis=ax, keepdims=True))
    return _in_float32(f, x)


def softmax(x, axis=None):
    """exp(x) / sum(exp(x)) over `axis` (scipy.special.softmax; `axis=None` means all
    axes), shifted by the maximum so large x does not overflow.

    Example:
        >>> import ember.numpy as enp
        >>> from ember.scipy.special import softmax
        >>> [round(float(v), 6) for v in softmax(enp.asarray([0.0, 1.0]))]
        [0.268941, 0.731059]
    """
    from .. import numpy as enp
    from ..transforms.misc import stop_gradient
    (x,) = _real_args("softmax", x)
    ax = _norm_axis("softmax", axis, x.ndim)

    def f(x):
        m = enp.max(x, axis=ax, keepdims=True, initial=-np.inf)
        # shift by 0 only for an all -inf slice; a +inf maximum gives NaN, as scipy's
        m = stop_gradient(enp.where(enp.isneginf(m), enp.zeros_like(m), m))
        e = enp.exp(x - m)
        return e / enp.sum(e, axis=ax, keepdims=True)
    return _in_float32(f, x)


def i0(x):
    """The modified Bessel function of order 0, i0e(x) * exp(|x|) (scipy.special.i0).

    Example:
        >>> from ember.scipy.special import i0
        >>> round(float(i0(1.0)), 6)
        1.266066
    """
    from .. import numpy as enp
    (x,) = _real_args("i0", x)
    return _in_float32(lambda v: _i0e(v) * enp.exp(enp.abs(v)), x)


def i1(x):
    """The modified Bessel function of order 1, i1e(x) * exp(|x|) (scipy.special.i1).

    Example:
        >>> from ember.scipy.special import i1
        >>> round(float(i1(1.0)), 6)
        0.565159
    """
    from .. import numpy as enp
    (x,) = _real_args("i1", x)
    return _in_float32(lambda v: _i1e(v) * enp.exp(enp.abs(v)), x)


# ---------------------------------------------------------------------------------------
# incomplete gamma and beta functions

# Loop lengths: the power series of P(a, x) (x < a + 1) and the continued fraction of
# Q(a, x) (x >= a + 1) both need about 9 sqrt(a) steps for a float64 result, so 500
# steps serve a up to about 3000; the incomplete beta fraction needs about 9
# sqrt(max(a, b)) as well.  Fixed trip counts (fori_loop), not a convergence test, so
# that reverse-mode differentiation in the shape parameters runs through the loop and
# the derivative gets the terms the value no longer needs.
_IGAMMA_STEPS = 500
_IBETA_STEPS = 500


def _lgamma1p_stirling_corr(a):
    """lgamma(a + 1) - ((a + 0.5) log a - a + log(2 pi) / 2), the Stirling remainder by
    its series for a >= 10 (forming it by subtraction loses log(a) * a digits)."""
    from .. import numpy as enp
    big = a >= 10.0
    ab = enp.where(big, a, enp.full_like(a, 10.0))
    r = 1.0 / ab
    r2 = r * r
    # B_2k / (2k (2k - 1)) for k = 1..9: the first term left out is 4e-20 at a = 10
    coefs = [1.0 / 12, -1.0 / 360, 1.0 / 1260, -1.0 / 1680, 1.0 / 1188, -691.0 / 360360,
             1.0 / 156, -3617.0 / 122400, 43867.0 / 244188]
    ser = enp.full_like(a, coefs[-1])
    for c in coefs[-2::-1]:
        ser = ser * r2 + c
    ser = ser * r
    sm = enp.where(big, enp.ones_like(a), a)
    direct = lax.lgamma(sm + 1.0) - ((sm + 0.5) * enp.log(sm) - sm + 0.5 * math.log(2 * math.pi))
    return enp.where(big, ser, direct)


def _igamma_log_prefactor(a, x):
    """log(x^a e^-x / Gamma(a + 1)), written as a (log(x/a) + 1 - x/a) - log(2 pi a)/2 -
    stirling_corr(a), whose terms do not cancel when x and a are large and close."""
    from .. import numpy as enp
    t = (x - a) / a
    # a (log(x/a) - (x-a)/a) = a (log1p(t) - t): both small near x = a
    main = a * (enp.log1p(t) - t)
    stirling = main - 0.5 * enp.log(2.0 * math.pi * a) - _lgamma1p_stirling_corr(a)
    # small a: the plain sum has nothing large to cancel (see _ibeta_log_front)
    return enp.where(a < 10.0, a * enp.log(x) - x - lax.lgamma(a + 1.0), stirling)


def _igamma_series(a, x):
    """P(a, x) = x^a e^-x / Gamma(a+1) * sum_n x^n / ((a+1) ... (a+n)): all terms
    positive, used where x < a + 1."""
    from .. import numpy as enp

    def body(i, c):
        term, total = c
        term = term * (x / (a + lax.convert_element_type(i, x.dtype)))
        return term, total + term
    one = enp.ones_like(x)
    _, total = lax.fori_loop(1, _IGAMMA_STEPS, body, (one, one))
    return enp.exp(_igamma_log_prefactor(a, x)) * total


def _igammac_cf(a, x):
    """Q(a, x) = x^a e^-x / Gamma(a) / (b0 + c1/(b1 + c2/(b2 + ...))), b_i = x + 1 - a + 2i,
    c_i = -i (i - a), used where x >= a + 1.  Evaluated from a fixed tail backwards: a
    forward (Lentz) recurrence stopped at convergence would also stop the derivative in
    a, which converges later (and for integer a the fraction terminates, c_a = 0, with a
    nonzero derivative behind it); run past convergence it would random-walk the last
    digits through hundreds of 1 +- rounding factors."""
    from .. import numpy as enp
    n = _IGAMMA_STEPS

    def body(j, t):
        i = lax.convert_element_type(n - j, x.dtype)
        return (x + 1.0 - a + 2.0 * (i - 1.0)) + (-i * (i - a)) / t
    t = lax.fori_loop(0, n, body, x + 1.0 - a + 2.0 * n)
    # x^a e^-x / Gamma(a) = a * x^a e^-x / Gamma(a + 1)
    return enp.exp(_igamma_log_prefactor(a, x)) * a / t


def _igamma_raw(a, x, upper):
    from .. import numpy as enp
    nan = (a < 0) | (x < 0) | enp.isnan(a) | enp.isnan(x) | ((a == 0) & (x == 0)) \
        | (enp.isinf(a) & enp.isinf(x))
    ok = (a > 0) & (x > 0) & enp.isfinite(a) & enp.isfinite(x)
    # each branch is evaluated where it converges only, so its inf/NaN elsewhere never
    # reaches a derivative through the where
    a_s = enp.where(ok, a, enp.ones_like(a))
    x_s = enp.where(ok, x, enp.ones_like(x))
    ser = x_s < a_s + 1.0
    p = _igamma_series(a_s, enp.where(ser, x_s, 0.5 * (a_s + 1.0)))
    q = _igammac_cf(a_s, enp.where(ser, a_s + 2.0, x_s))
    v = enp.where(ser, 1.0 - p, q) if upper else enp.where(ser, p, 1.0 - q)
    # the limits: P(a, 0) = 0, P(0, x > 0) = 1, P(a, inf) = 1, P(inf, x) = 0
    lim_p = enp.where((x == 0) | enp.isinf(a), enp.zeros_like(x), enp.ones_like(x))
    lim = 1.0 - lim_p if upper else lim_p
    v = enp.where(ok, v, lim)
    return enp.where(nan, enp.full_like(v, np.nan), v)


def _known_zero(t):
    """True for a tangent that is concretely all zeros (a constant shape argument: the
    rule then skips differentiating through the loop for it, which is most of the cost
    of second-order derivatives in x).  Tracers never count, even with a zero value:
    their own tangents may not be zero."""
    from ..array import Array
    if isinstance(t, np.ndarray) or type(t) is Array:
        return not np.any(np.asarray(t))
    return False


def _igamma_dx(a, x):
    # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a)
    return lax.exp(_xlogy(a - 1.0, x) - x - lax.lgamma(a))


@custom_jvp
def _gammainc(a, x):
    return _igamma_raw(a, x, False)


@custom_jvp
def _gammaincc(a, x):
    return _igamma_raw(a, x, True)


def _igamma_rule(upper):
    from .. import numpy as enp
    from ..transforms.jvp import jvp

    def rule(primals, tangents):
        (a, x), (ta, tx) = primals, tangents
        f = _gammaincc if upper else _gammainc
        out = f(a, x)
        dx = _igamma_dx(a, x)
        tout = tx * (-dx if upper else dx)
        if not _known_zero(ta):
            # the shape derivative through the series / fraction; the x one is closed form
            _, da = jvp(lambda aa: _igamma_raw(aa, x, upper), (a,), (ta,))
            tout = tout + da
        return out, tout
    return rule


_gammainc.defjvp(_igamma_rule(False))
_gammaincc.defjvp(_igamma_rule(True))


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x) (scipy.special.gammainc):
    the power series for x < a + 1, 1 - the continued fraction of Q beyond (each run a
    fixed 500 steps, float64-accurate for a up to about 3000).  P(a, 0) = 0, P(0, x > 0)
    = 1, P(a, inf) = 1; NaN for a < 0 or x < 0.  d/dx is the closed form
    x^(a-1) e^-x / Gamma(a); d/da differentiates the series / fraction.

    Example:
        >>> from ember.scipy.special import gammainc
        >>> round(float(gammainc(1.0, 1.0)), 5)  # 1 - 1/e
        0.63212
    """
    from .. import numpy as enp
    a, x = _real_args("gammainc", a, x)
    a, x = enp.broadcast_arrays(a, x)
    return _in_float32(_gammainc, a, x)


def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)
    (scipy.special.gammaincc), from the continued fraction directly where x >= a + 1, so
    small tails keep their digits; below, 1 - P, whose relative error is eps * P / Q
    (about 1e-14 at a = 0.01, x = 0.5, where scipy's small-a series does better).

    Example:
        >>> from ember.scipy.special import gammaincc
        >>> round(float(gammaincc(1.0, 1.0)), 5)  # 1/e
        0.36788
    """
    from .. import numpy as enp
    a, x = _real_args("gammaincc", a, x)
    a, x = enp.broadcast_arrays(a, x)
    return _in_float32(_gammaincc, a, x)


def _ibeta_log_front(a, b, x, y):
    """log(x^a y^b / B(a, b)) with y = 1 - x, as a (log1p(t) - t) + b (log1p(s) - s) +
    log(ab / (2 pi (a + b))) / 2 - C(a) - C(b) + C(a + b), where t = u/a, s = -u/b,
    u = b x - a y and C the Stirling remainder: around the mean x = a / (a + b) the
    direct sum of a log x, b log y and betaln cancels (a + b) * eps of accuracy away."""
    from .. import numpy as enp
    u = b * x - a * y
    t = u / a
    s = -u / b
    ab = a + b

    def l1p(v, r):
        # log1p(v) from v near 0; from the ratio itself far out (1 + v loses v's digits)
        return enp.where(enp.abs(v) < 0.5, enp.log1p(v), enp.log(r))
    c = _lgamma1p_stirling_corr
    stirling = (a * (l1p(t, x * (ab / a)) - t) + b * (l1p(s, y * (ab / b)) - s)
                + 0.5 * enp.log(a * b / (2.0 * math.pi * (a + b))) - c(a) - c(b) + c(a + b))
    # both below 10 nothing large cancels in the plain sum, while the remainders C, formed
    # there by subtraction, would carry lgamma's absolute error
    direct = a * enp.log(x) + b * enp.log(y) - betaln(a, b)
    return enp.where(enp.maximum(a, b) < 10.0, direct, stirling)


def _ibeta_cf(a, b, x, y):
    """I_x(a, b) = x^a (1-x)^b / (a B(a, b)) / (1 + d1/(1 + d2/(1 + ...))), used where
    x < (a + 1) / (a + b + 2); y = 1 - x is passed in so that the flipped call keeps the
    caller's exact x.  Evaluated backwards from a fixed tail, as _igammac_cf (for integer
    b the fraction terminates at d_2b = 0, whose b-derivative is not 0)."""
    from .. import numpy as enp
    n = _IBETA_STEPS

    def d_odd(m):    # d_(2m+1)
        return -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 1.0 + 2.0 * m))

    def d_even(m):   # d_(2m)
        return m * (b - m) * x / ((a - 1.0 + 2.0 * m) * (a + 2.0 * m))

    def body(j, t):
        m = lax.convert_element_type(n - 1 - j, x.dtype)
        t = 1.0 + d_odd(m) / t
        return 1.0 + d_even(m) / t
    t = lax.fori_loop(0, n - 1, body, enp.ones_like(x))
    t = 1.0 + d_odd(0.0) / t
    return enp.exp(_ibeta_log_front(a, b, x, y)) / (a * t)


def _ibeta_raw(a, b, x):
    from .. import numpy as enp
    nan = (a < 0) | (b < 0) | (x < 0) | (x > 1) | enp.isnan(a) | enp.isnan(b) | enp.isnan(x) \
        | ((a == 0) & (b == 0)) | (enp.isinf(a) & enp.isinf(b))
    ok = (a > 0) & (b > 0) & (x > 0) & (x < 1) & enp.isfinite(a) & enp.isfinite(b)
    a_s = enp.where(ok, a, enp.ones_like(a))
    b_s = enp.where(ok, b, enp.ones_like(b))
    x_s = enp.where(ok, x, enp.full_like(x, 0.5))
    # the fraction converges fast below the mean-ish point; above it, by symmetry
    # I_x(a, b) = 1 - I_(1-x)(b, a)
    lo = x_s < (a_s + 1.0) / (a_s + b_s + 2.0)
    xd = enp.where(lo, x_s, 0.5 * (a_s + 1.0) / (a_s + b_s + 2.0))
    direct = _ibeta_cf(a_s, b_s, xd, 1.0 - xd)
    yf = enp.where(lo, 0.5 * (b_s + 1.0) / (a_s + b_s + 2.0), 1.0 - x_s)
    flipped = 1.0 - _ibeta_cf(b_s, a_s, yf, enp.where(lo, 1.0 - yf, x_s))
    v = enp.where(lo, direct, flipped)
    # limits: I_0 = 0, I_1 = 1, a == 0 (b > 0) or b == inf: 1; b == 0 or a == inf: 0
    one = (x == 1) | (((a == 0) | enp.isinf(b)) & (x > 0))
    lim = enp.where(one, enp.ones_like(x), enp.zeros_like(x))
    v = enp.where(ok, v, lim)
    return enp.where(nan, enp.full_like(v, np.nan), v)


@custom_jvp
def _betainc(a, b, x):
    return _ibeta_raw(a, b, x)


@_betainc.defjvp
def _betainc_jvp(primals, tangents):
    from .. import numpy as enp
    from ..transforms.jvp import jvp
    (a, b, x), (ta, tb, tx) = primals, tangents
    out = _betainc(a, b, x)
    # a and b through the continued fraction; x in closed form
    dx = enp.exp(_xlogy(a - 1.0, x) + _xlog1py(b - 1.0, -x) - betaln(a, b))
    tout = tx * dx
    if not (_known_zero(ta) and _known_zero(tb)):
        _, dab = jvp(lambda aa, bb: _ibeta_raw(aa, bb, x), (a, b), (ta, tb))
        tout = tout + dab
    return out, tout


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b) (scipy.special.betainc): a
    continued fraction (500 fixed steps; float64-accurate for a, b up to about 3000),
    through I_x(a, b) = 1 - I_(1-x)(b, a) above x = (a + 1) / (a + b + 2).  0 at x = 0,
    1 at x = 1, NaN outside [0, 1] or for negative a, b.  d/dx is the closed form
    x^(a-1) (1-x)^(b-1) / B(a, b); d/da and d/db differentiate the fraction.

    Example:
        >>> from ember.scipy.special import betainc
        >>> round(float(betainc(2.0, 3.0, 0.4)), 6)
        0.5248
    """
    from .. import numpy as enp
    a, b, x = _real_args("betainc", a, b, x)
    a, b, x = enp.broadcast_arrays(a, b, x)
    return _in_float32(_betainc, a, b, x)
