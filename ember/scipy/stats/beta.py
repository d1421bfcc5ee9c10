"""The beta distribution with shapes `a`, `b` on [loc, loc + scale] (scipy.stats.beta).

Example:
    >>> from ember.scipy.stats import beta
    >>> float(beta.cdf(0.5, 2.0, 2.0))
    0.5
"""
from __future__ import annotations

import numpy as np

from .. import special
from ._util import nan_unless, promote, run, safe

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, b, loc=0, scale=1):
    """xlogy(a - 1, z) + xlog1py(b - 1, -z) - betaln(a, b) - log(scale) on [0, 1], -inf
    outside; NaN for a, b <= 0 or scale <= 0.

    Example:
        >>> from ember.scipy.stats import beta
        >>> round(float(beta.logpdf(0.3, 2.0, 5.0)), 6)
        0.770525
    """
    from ... import numpy as enp
    x, a, b, loc, scale = promote("beta.logpdf", x, a, b, loc, scale)

    def f(x, a, b, loc, scale):
        z = (x - loc) / scale
        ok = (z >= 0) & (z <= 1)
        zs = safe(ok, z, 0.5)
        v = (special._xlogy(a - 1.0, zs) + special._xlog1py(b - 1.0, -zs) - special.betaln(a, b)
             - enp.log(scale))
        return nan_unless((a > 0) & (b > 0) & (scale > 0), enp.where(ok, v, enp.full_like(v, -np.inf)))
    return run(f, x, a, b, loc, scale)


def pdf(x, a, b, loc=0, scale=1):
    """The beta density.

    Example:
        >>> from ember.scipy.stats import beta
        >>> float(beta.pdf(0.5, 1.0, 1.0))
        1.0
    """
    from ... import numpy as enp
    return enp.exp(logpdf(x, a, b, loc, scale))


def _p(name, x, a, b, loc, scale, upper, log):
    from ... import numpy as enp
    x, a, b, loc, scale = promote(name, x, a, b, loc, scale)

    def f(x, a, b, loc, scale):
        z = enp.clip((x - loc) / scale, 0.0, 1.0)
        z = enp.where(enp.isnan(x), x, z)
        # the upper tail as I_(1-z)(b, a): 1 - cdf would lose it
        lower, upper_tail = special._betainc(a, b, z), special._betainc(b, a, 1.0 - z)
        v, w = (upper_tail, lower) if upper else (lower, upper_tail)
        if log:
            # near 1, log1p of the other tail keeps the digits log(v) rounds away
            v = enp.where(v > 0.5, enp.log1p(-w), enp.log(v))
        return nan_unless((a > 0) & (b > 0) & (scale > 0), v)
    return run(f, x, a, b, loc, scale)


def cdf(x, a, b, loc=0, scale=1):
    """special.betainc(a, b, z), z clipped to [0, 1].

    Example:
        >>> from ember.scipy.stats import beta
        >>> round(float(beta.cdf(0.3, 2.0, 5.0)), 6)
        0.579825
    """
    return _p("beta.cdf", x, a, b, loc, scale, False, False)


def logcdf(x, a, b, loc=0, scale=1):
    """log(cdf).

    Example:
        >>> from ember.scipy.stats import beta
        >>> round(float(beta.logcdf(0.3, 2.0, 5.0)), 6)
        -0.545029
    """
    return _p("beta.logcdf", x, a, b, loc, scale, False, True)


def sf(x, a, b, loc=0, scale=1):
    """1 - cdf, as betainc(b, a, 1 - z).

    Example:
        >>> from ember.scipy.stats import beta
        >>> round(float(beta.sf(0.3, 2.0, 5.0)), 6)
        0.420175
    """
    return _p("beta.sf", x, a, b, loc, scale, True, False)


def logsf(x, a, b, loc=0, scale=1):
    """log(sf).

    Example:
        >>> from ember.scipy.stats import beta
        >>> round(float(beta.logsf(0.3, 2.0, 5.0)), 6)
        -0.867084
    """
    return _p("beta.logsf", x, a, b, loc, scale, True, True)
