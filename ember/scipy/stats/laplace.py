"""The Laplace distribution, density exp(-|x - loc| / scale) / (2 scale)
(scipy.stats.laplace).

Example:
    >>> from ember.scipy.stats import laplace
    >>> float(laplace.cdf(0.0))
    0.5
"""
from __future__ import annotations

import math

from ._util import nan_unless, promote, run

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def _family(name, body, x, loc, scale):
    x, loc, scale = promote(name, x, loc, scale)
    return run(lambda x, loc, scale: nan_unless(scale > 0, body((x - loc) / scale, scale)), x, loc, scale)


def logpdf(x, loc=0, scale=1):
    """-|z| - log(2 scale); NaN for scale <= 0.

    Example:
        >>> from ember.scipy.stats import laplace
        >>> round(float(laplace.logpdf(1.0)), 6)
        -1.693147
    """
    from ... import numpy as enp
    return _family("laplace.logpdf", lambda z, s: -enp.abs(z) - enp.log(2.0 * s), x, loc, scale)


def pdf(x, loc=0, scale=1):
    """The Laplace density.

    Example:
        >>> from ember.scipy.stats import laplace
        >>> float(laplace.pdf(0.0))
        0.5
    """
    from ... import numpy as enp
    return enp.exp(logpdf(x, loc, scale))


def _lower(z):
    # cdf for z <= 0: exp(z) / 2; the upper half by symmetry keeps the tail's digits
    from ... import numpy as enp
    return 0.5 * enp.exp(-enp.abs(z))


def cdf(x, loc=0, scale=1):
    """exp(z) / 2 below loc, 1 - exp(-z) / 2 above.

    Example:
        >>> from ember.scipy.stats import laplace
        >>> round(float(laplace.cdf(1.0)), 6)
        0.81606
    """
    from ... import numpy as enp
    return _family("laplace.cdf", lambda z, s: enp.where(z <= 0, _lower(z), 1.0 - _lower(z)), x, loc, scale)


def logcdf(x, loc=0, scale=1):
    """z - log 2 below loc, log1p(-exp(-z) / 2) above.

    Example:
        >>> from ember.scipy.stats import laplace
        >>> round(float(laplace.logcdf(-3.0)), 6)
        -3.693147
    """
    from ... import numpy as enp
    return _family("laplace.logcdf", lambda z, s: enp.where(
        z <= 0, -enp.abs(z) - math.log(2.0), enp.log1p(-_lower(z))), x, loc, scale)


def sf(x, loc=0, scale=1):
    """cdf(-z): 1 - exp(z) / 2 below loc, exp(-z) / 2 above.

    Example:
        >>> from ember.scipy.stats import laplace
        >>> round(float(laplace.sf(1.0)), 6)
        0.18394
    """
    from ... import numpy as enp
    return _family("laplace.sf", lambda z, s: enp.where(z >= 0, _lower(z), 1.0 - _lower(z)), x, loc, scale)


def logsf(x, loc=0, scale=1):
    """log sf: -z - log 2 above loc, log1p(-exp(z) / 2) below.

    Example:
        >>> from ember.scipy.stats import laplace
        >>> round(float(laplace.logsf(3.0)), 6)
        -3.693147
    """
    from ... import numpy as enp
    return _family("laplace.logsf", lambda z, s: enp.where(
        z >= 0, -enp.abs(z) - math.log(2.0), enp.log1p(-_lower(z))), x, loc, scale)


def ppf(q, loc=0, scale=1):
    """loc + scale * log(2q) for q <= 1/2, loc - scale * log(2 - 2q) above; NaN outside [0, 1].

    Example:
        >>> from ember.scipy.stats import laplace
        >>> round(float(laplace.ppf(0.75)), 6)
        0.693147
    """
    from ... import numpy as enp
    q, loc, scale = promote("laplace.ppf", q, loc, scale)

    def f(q, loc, scale):
        ok = (q >= 0) & (q <= 1) & (scale > 0)
        lo = q <= 0.5
        half = enp.full_like(q, 0.5)
        qs = enp.where(ok, q, half)
        # each log sees only its own half of [0, 1]
        z = enp.where(lo, enp.log(2.0 * enp.where(lo, qs, half)),
                      -enp.log(2.0 - 2.0 * enp.where(lo, half, qs)))
        return nan_unless(ok, loc + scale * z)
    return run(f, q, loc, scale)
