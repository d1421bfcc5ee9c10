"""The uniform distribution on [loc, loc + scale] (scipy.stats.uniform).

Example:
    >>> from ember.scipy.stats import uniform
    >>> float(uniform.pdf(0.5)), float(uniform.pdf(2.0))
    (1.0, 0.0)
"""
from __future__ import annotations

import numpy as np

from ._util import nan_unless, promote, run

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def _family(name, body, x, loc, scale):
    x, loc, scale = promote(name, x, loc, scale)
    return run(lambda x, loc, scale: nan_unless(scale > 0, body((x - loc) / scale, scale)), x, loc, scale)


def logpdf(x, loc=0, scale=1):
    """-log(scale) on [loc, loc + scale], -inf outside; NaN for scale <= 0.

    Example:
        >>> from ember.scipy.stats import uniform
        >>> round(float(uniform.logpdf(1.0, loc=0.0, scale=4.0)), 6)
        -1.386294
    """
    from ... import numpy as enp
    return _family("uniform.logpdf", lambda z, s: enp.where((z >= 0) & (z <= 1), -enp.log(s) * enp.ones_like(z),
                                                            enp.full_like(z, -np.inf)), x, loc, scale)


def pdf(x, loc=0, scale=1):
    """1 / scale on [loc, loc + scale], 0 outside.

    Example:
        >>> from ember.scipy.stats import uniform
        >>> float(uniform.pdf(1.0, scale=4.0))
        0.25
    """
    from ... import numpy as enp
    return enp.exp(logpdf(x, loc, scale))


def _clip01(z):
    from ... import numpy as enp
    return enp.clip(z, 0.0, 1.0)


def cdf(x, loc=0, scale=1):
    """(x - loc) / scale clipped to [0, 1].

    Example:
        >>> from ember.scipy.stats import uniform
        >>> float(uniform.cdf(0.25))
        0.25
    """
    return _family("uniform.cdf", lambda z, s: _clip01(z), x, loc, scale)


def logcdf(x, loc=0, scale=1):
    """log(cdf).

    Example:
        >>> from ember.scipy.stats import uniform
        >>> float(uniform.logcdf(-1.0))
        -inf
    """
    from ... import numpy as enp
    return _family("uniform.logcdf", lambda z, s: enp.log(_clip01(z)), x, loc, scale)


def sf(x, loc=0, scale=1):
    """1 - cdf.

    Example:
        >>> from ember.scipy.stats import uniform
        >>> float(uniform.sf(0.25))
        0.75
    """
    return _family("uniform.sf", lambda z, s: _clip01(1.0 - z), x, loc, scale)


def logsf(x, loc=0, scale=1):
    """log(sf), as log1p(-z) inside the support.

    Example:
        >>> from ember.scipy.stats import uniform
        >>> float(uniform.logsf(2.0))
        -inf
    """
    from ... import numpy as enp
    return _family("uniform.logsf", lambda z, s: enp.log1p(-_clip01(z)), x, loc, scale)


def ppf(q, loc=0, scale=1):
    """loc + scale * q on [0, 1], NaN outside.

    Example:
        >>> from ember.scipy.stats import uniform
        >>> float(uniform.ppf(0.5, loc=1.0, scale=2.0))
        2.0
    """
    q, loc, scale = promote("uniform.ppf", q, loc, scale)
    return run(lambda q, loc, scale: nan_unless((q >= 0) & (q <= 1) & (scale > 0), loc + scale * q),
               q, loc, scale)
