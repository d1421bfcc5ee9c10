"""The normal distribution N(loc, scale**2) (scipy.stats.norm / jax.scipy.stats.norm).

Example:
    >>> from ember.scipy.stats import norm
    >>> round(float(norm.logpdf(0.0)), 6), float(norm.cdf(0.0))
    (-0.918939, 0.5)
"""
from __future__ import annotations

import math

from .. import special
from ._util import nan_unless, promote, run

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _z(x, loc, scale):
    return (x - loc) / scale


def logpdf(x, loc=0, scale=1):
    """log of the normal density; NaN for scale <= 0 (as scipy).

    Example:
        >>> from ember.scipy.stats import norm
        >>> round(float(norm.logpdf(1.0, loc=1.0, scale=2.0)), 6)
        -1.612086
    """
    from ... import numpy as enp
    x, loc, scale = promote("norm.logpdf", x, loc, scale)

    def f(x, loc, scale):
        z = _z(x, loc, scale)
        return nan_unless(scale > 0, -0.5 * z * z - _HALF_LOG_2PI - enp.log(scale))
    return run(f, x, loc, scale)


def pdf(x, loc=0, scale=1):
    """The normal density.

    Example:
        >>> from ember.scipy.stats import norm
        >>> round(float(norm.pdf(0.0)), 6)
        0.398942
    """
    from ... import numpy as enp
    return enp.exp(logpdf(x, loc, scale))


def _via(name, fn, x, loc, scale, sign):
    x, loc, scale = promote(name, x, loc, scale)
    return run(lambda x, loc, scale: nan_unless(scale > 0, fn(sign * _z(x, loc, scale))), x, loc, scale)


def cdf(x, loc=0, scale=1):
    """The normal CDF, special.ndtr((x - loc) / scale).

    Example:
        >>> from ember.scipy.stats import norm
        >>> round(float(norm.cdf(1.959964)), 6)
        0.975
    """
    return _via("norm.cdf", special._ndtr, x, loc, scale, 1.0)


def logcdf(x, loc=0, scale=1):
    """log CDF via special.log_ndtr: finite far into the lower tail.

    Example:
        >>> from ember.scipy.stats import norm
        >>> round(float(norm.logcdf(-40.0)), 2)
        -804.61
    """
    x, loc, scale = promote("norm.logcdf", x, loc, scale)
    return nan_unless(scale > 0, special.log_ndtr(_z(x, loc, scale)))


def sf(x, loc=0, scale=1):
    """The survival function 1 - cdf, as ndtr(-z) so the upper tail keeps its digits.

    Example:
        >>> from ember.scipy.stats import norm
        >>> float(norm.sf(10.0)) > 0
        True
    """
    return _via("norm.sf", special._ndtr, x, loc, scale, -1.0)


def logsf(x, loc=0, scale=1):
    """log of the survival function, log_ndtr(-z).

    Example:
        >>> from ember.scipy.stats import norm
        >>> round(float(norm.logsf(40.0)), 2)
        -804.61
    """
    x, loc, scale = promote("norm.logsf", x, loc, scale)
    return nan_unless(scale > 0, special.log_ndtr(-_z(x, loc, scale)))


def ppf(q, loc=0, scale=1):
    """The quantile function, loc + scale * ndtri(q); +-inf at q = 1 / 0, NaN outside [0, 1].

    Example:
        >>> from ember.scipy.stats import norm
        >>> round(float(norm.ppf(0.975)), 6)
        1.959964
    """
    q, loc, scale = promote("norm.ppf", q, loc, scale)
    return nan_unless(scale > 0, loc + scale * special.ndtri(q))


def isf(q, loc=0, scale=1):
    """The inverse survival function, loc - scale * ndtri(q).

    Example:
        >>> from ember.scipy.stats import norm
        >>> round(float(norm.isf(0.025)), 6)
        1.959964
    """
    q, loc, scale = promote("norm.isf", q, loc, scale)
    return nan_unless(scale > 0, loc - scale * special.ndtri(q))
