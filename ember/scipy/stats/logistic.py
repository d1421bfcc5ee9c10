"""The logistic distribution, cdf expit((x - loc) / scale) (scipy.stats.logistic).

Example:
    >>> from ember.scipy.stats import logistic
    >>> float(logistic.cdf(0.0))
    0.5
"""
from __future__ import annotations

from ._util import nan_unless, promote, run, safe

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def _family(name, body, x, loc, scale):
    x, loc, scale = promote(name, x, loc, scale)
    return run(lambda x, loc, scale: nan_unless(scale > 0, body((x - loc) / scale, scale)), x, loc, scale)


def _softplus(v):
    # log(1 + exp(v)) without overflow
    from ... import numpy as enp
    return enp.maximum(v, enp.zeros_like(v)) + enp.log1p(enp.exp(-enp.abs(v)))


def logpdf(x, loc=0, scale=1):
    """-|z| - 2 log1p(exp(-|z|)) - log(scale) (the density is even in z, and this form
    neither overflows nor cancels); NaN for scale <= 0.

    Example:
        >>> from ember.scipy.stats import logistic
        >>> round(float(logistic.logpdf(0.0)), 6)
        -1.386294
    """
    from ... import numpy as enp
    return _family("logistic.logpdf", lambda z, s: -enp.abs(z) - 2.0 * enp.log1p(enp.exp(-enp.abs(z)))
                   - enp.log(s), x, loc, scale)


def pdf(x, loc=0, scale=1):
    """The logistic density.

    Example:
        >>> from ember.scipy.stats import logistic
        >>> float(logistic.pdf(0.0))
        0.25
    """
    from ... import numpy as enp
    return enp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """expit(z).

    Example:
        >>> from ember.scipy.stats import logistic
        >>> round(float(logistic.cdf(1.0)), 6)
        0.731059
    """
    from ... import lax
    return _family("logistic.cdf", lambda z, s: lax.logistic(z), x, loc, scale)


def logcdf(x, loc=0, scale=1):
    """-softplus(-z).

    Example:
        >>> from ember.scipy.stats import logistic
        >>> round(float(logistic.logcdf(-100.0)), 6)
        -100.0
    """
    return _family("logistic.logcdf", lambda z, s: -_softplus(-z), x, loc, scale)


def sf(x, loc=0, scale=1):
    """expit(-z).

    Example:
        >>> from ember.scipy.stats import logistic
        >>> round(float(logistic.sf(1.0)), 6)
        0.268941
    """
    from ... import lax
    return _family("logistic.sf", lambda z, s: lax.logistic(-z), x, loc, scale)


def logsf(x, loc=0, scale=1):
    """-softplus(z).

    Example:
        >>> from ember.scipy.stats import logistic
        >>> round(float(logistic.logsf(100.0)), 6)
        -100.0
    """
    return _family("logistic.logsf", lambda z, s: -_softplus(z), x, loc, scale)


def _quantile(name, q, loc, scale, sign):
    from ... import numpy as enp
    q, loc, scale = promote(name, q, loc, scale)

    def f(q, loc, scale):
        ok = (q >= 0) & (q <= 1) & (scale > 0)
        qs = safe(ok, q, 0.5)
        return nan_unless(ok, loc + sign * scale * (enp.log(qs) - enp.log1p(-qs)))
    return run(f, q, loc, scale)


def ppf(q, loc=0, scale=1):
    """loc + scale * logit(q); NaN outside [0, 1].

    Example:
        >>> from ember.scipy.stats import logistic
        >>> round(float(logistic.ppf(0.731059)), 5)
        1.0
    """
    return _quantile("logistic.ppf", q, loc, scale, 1.0)


def isf(q, loc=0, scale=1):
    """loc - scale * logit(q).

    Example:
        >>> from ember.scipy.stats import logistic
        >>> round(float(logistic.isf(0.268941)), 5)
        1.0
    """
    return _quantile("logistic.isf", q, loc, scale, -1.0)
