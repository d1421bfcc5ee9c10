"""The Cauchy distribution, density 1 / (pi scale (1 + z^2)) (scipy.stats.cauchy).

Example:
    >>> from ember.scipy.stats import cauchy
    >>> float(cauchy.cdf(0.0))
    0.5
"""
from __future__ import annotations

import math

from ._util import nan_unless, promote, run, safe

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def _family(name, body, x, loc, scale):
    x, loc, scale = promote(name, x, loc, scale)
    return run(lambda x, loc, scale: nan_unless(scale > 0, body((x - loc) / scale, scale)), x, loc, scale)


def logpdf(x, loc=0, scale=1):
    """-log(pi scale) - log1p(z^2) (for |z| > 1 as 2 log|z| + log1p(1/z^2), so z^2 does not
    overflow); NaN for scale <= 0.

    Example:
        >>> from ember.scipy.stats import cauchy
        >>> round(float(cauchy.logpdf(0.0)), 6)
        -1.14473
    """
    return _family("cauchy.logpdf", lambda z, s: -math.log(math.pi) - _log_scale(s) - _log1p_sq(z),
                   x, loc, scale)


def _log_scale(s):
    from ... import numpy as enp
    return enp.log(s)


def _log1p_sq(z):
    """log(1 + z^2) without overflowing z^2: 2 log|z| + log1p(1/z^2) for |z| > 1."""
    from ... import numpy as enp
    big = enp.abs(z) > 1.0
    zb = safe(big, z)
    return enp.where(big, 2.0 * enp.log(enp.abs(zb)) + enp.log1p(1.0 / (zb * zb)), enp.log1p(z * z))


def pdf(x, loc=0, scale=1):
    """The Cauchy density.

    Example:
        >>> from ember.scipy.stats import cauchy
        >>> round(float(cauchy.pdf(0.0)), 6)
        0.31831
    """
    from ... import numpy as enp
    return enp.exp(logpdf(x, loc, scale))


def _cdf(z):
    # 1/2 + atan(z)/pi = atan2(1, -z)/pi: no cancellation in the lower tail
    from ... import numpy as enp
    return enp.arctan2(enp.ones_like(z), -z) / math.pi


def cdf(x, loc=0, scale=1):
    """atan2(1, -z) / pi, which is 1/2 + atan(z) / pi without its lower-tail cancellation.

    Example:
        >>> from ember.scipy.stats import cauchy
        >>> round(float(cauchy.cdf(1.0)), 6)
        0.75
    """
    return _family("cauchy.cdf", lambda z, s: _cdf(z), x, loc, scale)


def logcdf(x, loc=0, scale=1):
    """log(cdf).

    Example:
        >>> from ember.scipy.stats import cauchy
        >>> round(float(cauchy.logcdf(1.0)), 6)
        -0.287682
    """
    from ... import numpy as enp
    return _family("cauchy.logcdf", lambda z, s: enp.log(_cdf(z)), x, loc, scale)


def sf(x, loc=0, scale=1):
    """cdf(-z).

    Example:
        >>> from ember.scipy.stats import cauchy
        >>> round(float(cauchy.sf(1.0)), 6)
        0.25
    """
    return _family("cauchy.sf", lambda z, s: _cdf(-z), x, loc, scale)


def logsf(x, loc=0, scale=1):
    """log(sf).

    Example:
        >>> from ember.scipy.stats import cauchy
        >>> round(float(cauchy.logsf(1.0)), 6)
        -1.386294
    """
    from ... import numpy as enp
    return _family("cauchy.logsf", lambda z, s: enp.log(_cdf(-z)), x, loc, scale)


def _quantile(name, q, loc, scale, sign):
    from ... import numpy as enp
    q, loc, scale = promote(name, q, loc, scale)

    def f(q, loc, scale):
        ok = (q >= 0) & (q <= 1) & (scale > 0)
        qs = safe(ok, q, 0.5)
        # tan(pi (q - 1/2)) = -1 / tan(pi q): exact at the ends, where q - 1/2 is not
        z = -1.0 / enp.tan(math.pi * qs)
        z = enp.where(qs == 0.5, enp.zeros_like(z), enp.where(qs == 0, enp.full_like(z, -math.inf),
                                                              enp.where(qs == 1, enp.full_like(z, math.inf), z)))
        return nan_unless(ok, loc + sign * scale * z)
    return run(f, q, loc, scale)


def ppf(q, loc=0, scale=1):
    """loc + scale * tan(pi (q - 1/2)); -inf at 0, inf at 1, NaN outside [0, 1].

    Example:
        >>> from ember.scipy.stats import cauchy
        >>> round(float(cauchy.ppf(0.75)), 6)
        1.0
    """
    return _quantile("cauchy.ppf", q, loc, scale, 1.0)


def isf(q, loc=0, scale=1):
    """loc - scale * tan(pi (q - 1/2)).

    Example:
        >>> from ember.scipy.stats import cauchy
        >>> round(float(cauchy.isf(0.25)), 6)
        1.0
    """
    return _quantile("cauchy.isf", q, loc, scale, -1.0)
