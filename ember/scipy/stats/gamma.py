"""The gamma distribution with shape `a` (scipy.stats.gamma), density
z^(a-1) e^-z / (Gamma(a) scale), z = (x - loc) / scale >= 0.

Example:
    >>> from ember.scipy.stats import gamma
    >>> round(float(gamma.cdf(1.0, 1.0)), 5)
    0.63212
"""
from __future__ import annotations

import numpy as np

from .. import special
from ._util import nan_unless, promote, run, safe

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, loc=0, scale=1):
    """xlogy(a - 1, z) - z - gammaln(a) - log(scale) for z >= 0 (so z = 0 gives -log(scale)
    at a = 1 and inf below), -inf for z < 0; NaN for a <= 0 or scale <= 0.

    Example:
        >>> from ember.scipy.stats import gamma
        >>> round(float(gamma.logpdf(2.0, 3.0)), 6)
        -1.306853
    """
    from ... import lax
    from ... import numpy as enp
    x, a, loc, scale = promote("gamma.logpdf", x, a, loc, scale)

    def f(x, a, loc, scale):
        z = (x - loc) / scale
        ok = z >= 0
        zs = safe(ok, z)
        v = special._xlogy(a - 1.0, zs) - zs - lax.lgamma(a) - enp.log(scale)
        return nan_unless((a > 0) & (scale > 0), enp.where(ok, v, enp.full_like(v, -np.inf)))
    return run(f, x, a, loc, scale)


def pdf(x, a, loc=0, scale=1):
    """The gamma density.

    Example:
        >>> from ember.scipy.stats import gamma
        >>> round(float(gamma.pdf(1.0, 1.0)), 6)
        0.367879
    """
    from ... import numpy as enp
    return enp.exp(logpdf(x, a, loc, scale))


def _p(name, x, a, loc, scale, upper, log):
    from ... import numpy as enp
    x, a, loc, scale = promote(name, x, a, loc, scale)

    def f(x, a, loc, scale):
        z = enp.maximum((x - loc) / scale, enp.zeros_like(x))
        z = enp.where(enp.isnan(x), x, z)
        v = (special._gammaincc if upper else special._gammainc)(a, z)
        if log:
            # near 1, log1p of the other tail keeps the digits log(v) rounds away
            w = (special._gammainc if upper else special._gammaincc)(a, z)
            v = enp.where(v > 0.5, enp.log1p(-w), enp.log(v))
        return nan_unless((a > 0) & (scale > 0), v)
    return run(f, x, a, loc, scale)


def cdf(x, a, loc=0, scale=1):
    """special.gammainc(a, z), 0 below loc.

    Example:
        >>> from ember.scipy.stats import gamma
        >>> round(float(gamma.cdf(2.0, 3.0)), 6)
        0.323324
    """
    return _p("gamma.cdf", x, a, loc, scale, False, False)


def logcdf(x, a, loc=0, scale=1):
    """log(cdf).

    Example:
        >>> from ember.scipy.stats import gamma
        >>> round(float(gamma.logcdf(2.0, 3.0)), 6)
        -1.129102
    """
    return _p("gamma.logcdf", x, a, loc, scale, False, True)


def sf(x, a, loc=0, scale=1):
    """special.gammaincc(a, z): the upper tail keeps its digits.

    Example:
        >>> from ember.scipy.stats import gamma
        >>> round(float(gamma.sf(2.0, 3.0)), 6)
        0.676676
    """
    return _p("gamma.sf", x, a, loc, scale, True, False)


def logsf(x, a, loc=0, scale=1):
    """log(sf).

    Example:
        >>> from ember.scipy.stats import gamma
        >>> round(float(gamma.logsf(2.0, 3.0)), 6)
        -0.390562
    """
    return _p("gamma.logsf", x, a, loc, scale, True, True)
