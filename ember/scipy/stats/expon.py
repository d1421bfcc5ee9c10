"""The exponential distribution, density exp(-(x - loc) / scale) / scale on x >= loc
(scipy.stats.expon).

Example:
    >>> from ember.scipy.stats import expon
    >>> round(float(expon.cdf(1.0)), 6)
    0.632121
"""
from __future__ import annotations

import numpy as np

from ._util import nan_unless, promote, run, safe

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def _family(name, body, x, loc, scale):
    x, loc, scale = promote(name, x, loc, scale)

    def f(x, loc, scale):
        z = (x - loc) / scale
        return nan_unless(scale > 0, body(z, scale))
    return run(f, x, loc, scale)


def logpdf(x, loc=0, scale=1):
    """-(x - loc) / scale - log(scale) on x >= loc, -inf below; NaN for scale <= 0.

    Example:
        >>> from ember.scipy.stats import expon
        >>> float(expon.logpdf(2.0)), float(expon.logpdf(-1.0))
        (-2.0, -inf)
    """
    from ... import numpy as enp
    return _family("expon.logpdf", lambda z, s: enp.where(z >= 0, -z - enp.log(s), enp.full_like(z, -np.inf)),
                   x, loc, scale)


def pdf(x, loc=0, scale=1):
    """The exponential density.

    Example:
        >>> from ember.scipy.stats import expon
        >>> round(float(expon.pdf(1.0)), 6)
        0.367879
    """
    from ... import numpy as enp
    return enp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """1 - exp(-z) as -expm1(-z), so small z keeps its digits; 0 below loc.

    Example:
        >>> from ember.scipy.stats import expon
        >>> float(expon.cdf(1e-20)) > 0  # 1 - exp(-z) would round to 0
        True
    """
    from ... import numpy as enp
    return _family("expon.cdf", lambda z, s: enp.where(z > 0, -enp.expm1(-safe(z > 0, z, 0.0)), enp.zeros_like(z)),
                   x, loc, scale)


def logcdf(x, loc=0, scale=1):
    """log(1 - exp(-z)): log(-expm1(-z)) for z < log 2, log1p(-exp(-z)) above (each
    where it does not cancel); -inf at and below loc.

    Example:
        >>> from ember.scipy.stats import expon
        >>> round(float(expon.logcdf(50.0)) * 1e22, 3)  # -exp(-50)
        -1.929
    """
    from ... import numpy as enp

    def body(z, s):
        zs = safe(z > 0, z)
        v = enp.where(zs < np.log(2.0), enp.log(-enp.expm1(-zs)), enp.log1p(-enp.exp(-zs)))
        return enp.where(z > 0, v, enp.full_like(z, -np.inf))
    return _family("expon.logcdf", body, x, loc, scale)


def sf(x, loc=0, scale=1):
    """exp(-z), 1 below loc.

    Example:
        >>> from ember.scipy.stats import expon
        >>> round(float(expon.sf(1.0)), 6)
        0.367879
    """
    from ... import numpy as enp
    return _family("expon.sf", lambda z, s: enp.exp(-enp.maximum(z, enp.zeros_like(z))), x, loc, scale)


def logsf(x, loc=0, scale=1):
    """-z, 0 below loc.

    Example:
        >>> from ember.scipy.stats import expon
        >>> float(expon.logsf(3.0))
        -3.0
    """
    from ... import numpy as enp
    return _family("expon.logsf", lambda z, s: -enp.maximum(z, enp.zeros_like(z)), x, loc, scale)


def ppf(q, loc=0, scale=1):
    """loc - scale * log1p(-q); inf at q = 1, NaN outside [0, 1].

    Example:
        >>> from ember.scipy.stats import expon
        >>> round(float(expon.ppf(0.5)), 6)
        0.693147
    """
    from ... import numpy as enp
    q, loc, scale = promote("expon.ppf", q, loc, scale)

    def f(q, loc, scale):
        ok = (q >= 0) & (q <= 1) & (scale > 0)
        return nan_unless(ok, loc - scale * enp.log1p(-safe(ok, q, 0.5)))
    return run(f, q, loc, scale)
