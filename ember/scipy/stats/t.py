"""Student's t distribution with `df` degrees of freedom (scipy.stats.t).

Example:
    >>> from ember.scipy.stats import t
    >>> float(t.cdf(0.0, 3.0))
    0.5
"""
from __future__ import annotations

import math

from .. import special
from ._util import nan_unless, promote, run, safe

__all__ = ["logpdf", "pdf", "cdf", "sf"]


def logpdf(x, df, loc=0, scale=1):
    """lgamma((df+1)/2) - lgamma(df/2) - log(pi df)/2 - log(scale)
    - (df+1)/2 log1p(z^2/df) (the lgamma difference by Stirling's series for large df);
    the normal logpdf for df = inf; NaN for df <= 0 or scale <= 0.

    Example:
        >>> from ember.scipy.stats import t
        >>> round(float(t.logpdf(0.5, 3.0)), 6)
        -1.160974
    """
    from ... import lax
    from ... import numpy as enp
    x, df, loc, scale = promote("t.logpdf", x, df, loc, scale)

    def f(x, df, loc, scale):
        z = (x - loc) / scale
        fin = enp.isfinite(df)
        dfs = safe(fin, df)
        v = (_log_norm_const(0.5 * dfs) - enp.log(scale)
             - 0.5 * (dfs + 1.0) * enp.log1p(z * z / dfs))
        # df = inf is the normal distribution
        normal = -0.5 * z * z - 0.5 * math.log(2.0 * math.pi) - enp.log(scale)
        return nan_unless((df > 0) & (scale > 0), enp.where(fin, v, normal))
    return run(f, x, df, loc, scale)


def _log_norm_const(a):
    """lgamma(a + 1/2) - lgamma(a) - log(2 pi a) / 2, the log normaliser at df = 2a.  For
    a >= 10 as a log1p(1/(2a)) - 1/2 + C(a + 1/2) - C(a) - log(2 pi)/2 with C the
    Stirling remainder of lgamma(. + 1), where the plain difference of the lgammas
    cancels (6e-7 absolute error at df = 1e10)."""
    from ... import lax
    from ... import numpy as enp
    big = a >= 10.0
    ab = safe(big, a, 10.0)
    c = special._lgamma1p_stirling_corr
    asym = ab * enp.log1p(0.5 / ab) - 0.5 + c(ab + 0.5) - c(ab) - 0.5 * math.log(2.0 * math.pi)
    asm = enp.where(big, enp.ones_like(a), a)
    direct = lax.lgamma(asm + 0.5) - lax.lgamma(asm) - 0.5 * enp.log(2.0 * math.pi * asm)
    return enp.where(big, asym, direct)


def pdf(x, df, loc=0, scale=1):
    """The t density.

    Example:
        >>> from ember.scipy.stats import t
        >>> round(float(t.pdf(0.0, 1.0)), 6)  # Cauchy at 0
        0.31831
    """
    from ... import numpy as enp
    return enp.exp(logpdf(x, df, loc, scale))


def _lower_tail(z, df):
    """P(T <= -|z|) = I_(df/(df+z^2))(df/2, 1/2) / 2, and its complement through
    I_(z^2/(df+z^2))(1/2, df/2) near 0, where the first argument rounds to 1."""
    from ... import numpy as enp
    z2 = z * z
    near = z2 < df
    w = df + z2
    tail = 0.5 * special._betainc(0.5 * df, enp.full_like(z, 0.5), enp.where(near, enp.full_like(z, 0.5), df / w))
    centre = 0.5 - 0.5 * special._betainc(enp.full_like(z, 0.5), 0.5 * df, enp.where(near, z2 / w, enp.full_like(z, 0.5)))
    return enp.where(near, centre, tail)


def _cdf(x, df, loc, scale, upper):
    from ... import numpy as enp
    z = (x - loc) / scale
    fin = enp.isfinite(df)
    zs = safe(enp.isfinite(z), z, 0.0)
    lo = _lower_tail(zs, safe(fin, df))
    # df = inf: the normal distribution's tail
    lo = enp.where(fin, lo, special._ndtr(-enp.abs(zs)))
    v = enp.where((z > 0) != upper, 1.0 - lo, lo)
    lim = enp.where((z > 0) != upper, enp.ones_like(z), enp.zeros_like(z))
    v = enp.where(enp.isinf(z), lim, v)
    return nan_unless((df > 0) & (scale > 0), v)


def cdf(x, df, loc=0, scale=1):
    """The t CDF through the incomplete beta function (the normal CDF for df = inf).

    Example:
        >>> from ember.scipy.stats import t
        >>> round(float(t.cdf(1.0, 1.0)), 6)  # Cauchy
        0.75
    """
    x, df, loc, scale = promote("t.cdf", x, df, loc, scale)
    return run(lambda *a: _cdf(*a, False), x, df, loc, scale)


def sf(x, df, loc=0, scale=1):
    """1 - cdf, from the same tail (no cancellation for large x).

    Example:
        >>> from ember.scipy.stats import t
        >>> round(float(t.sf(1.0, 1.0)), 6)
        0.25
    """
    x, df, loc, scale = promote("t.sf", x, df, loc, scale)
    return run(lambda *a: _cdf(*a, True), x, df, loc, scale)
