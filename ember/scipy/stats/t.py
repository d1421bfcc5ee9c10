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
    - (df+1)/2 log1p(z^2/df); NaN for df <= 0 or scale <= 0.

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
        v = (lax.lgamma(0.5 * (df + 1.0)) - lax.lgamma(0.5 * df) - 0.5 * enp.log(math.pi * df)
             - enp.log(scale) - 0.5 * (df + 1.0) * enp.log1p(z * z / df))
        return nan_unless((df > 0) & (scale > 0), v)
    return run(f, x, df, loc, scale)


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
    lo = _lower_tail(safe(enp.isfinite(z), z, 0.0), df)
    v = enp.where((z > 0) != upper, 1.0 - lo, lo)
    lim = enp.where((z > 0) != upper, enp.ones_like(z), enp.zeros_like(z))
    v = enp.where(enp.isinf(z), lim, v)
    return nan_unless((df > 0) & (scale > 0), v)


def cdf(x, df, loc=0, scale=1):
    """The t CDF through the incomplete beta function.

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
