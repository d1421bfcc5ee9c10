"""The Poisson distribution with mean `mu`, shifted by `loc` (scipy.stats.poisson).

Example:
    >>> from ember.scipy.stats import poisson
    >>> round(float(poisson.pmf(2, 3.0)), 6)
    0.224042
"""
from __future__ import annotations

import numpy as np

from .. import special
from ._util import nan_unless, promote, run, safe

__all__ = ["logpmf", "pmf", "cdf", "sf"]


def _k(k, loc):
    from ... import numpy as enp
    k = k - loc
    return k, (k >= 0) & (enp.floor(k) == k)


def logpmf(k, mu, loc=0):
    """xlogy(k, mu) - mu - gammaln(k + 1) at the integers k >= loc, -inf elsewhere; NaN for
    mu < 0 (mu = 0 puts all the mass at k = 0).

    Example:
        >>> from ember.scipy.stats import poisson
        >>> round(float(poisson.logpmf(2, 3.0)), 6)
        -1.495923
    """
    from ... import lax
    from ... import numpy as enp
    k, mu, loc = promote("poisson.logpmf", k, mu, loc)

    def f(k, mu, loc):
        k, ok = _k(k, loc)
        ks = safe(ok, k, 0.0)
        v = special._xlogy(ks, mu) - mu - lax.lgamma(ks + 1.0)
        return nan_unless(mu >= 0, enp.where(ok, v, enp.full_like(v, -np.inf)))
    return run(f, k, mu, loc)


def pmf(k, mu, loc=0):
    """The Poisson probability mass.

    Example:
        >>> from ember.scipy.stats import poisson
        >>> float(poisson.pmf(0, 0.0))
        1.0
    """
    from ... import numpy as enp
    return enp.exp(logpmf(k, mu, loc))


def _tail(name, k, mu, loc, upper):
    from ... import numpy as enp
    k, mu, loc = promote(name, k, mu, loc)

    def f(k, mu, loc):
        k = enp.floor(k - loc)
        ok = k >= 0
        ks = safe(ok, k, 0.0)
        # P(K <= k) = Q(k + 1, mu), the regularized upper incomplete gamma function
        v = (special._gammainc if upper else special._gammaincc)(ks + 1.0, mu)
        below = enp.ones_like(v) if upper else enp.zeros_like(v)
        v = enp.where(ok, v, below)
        return nan_unless(mu >= 0, enp.where(enp.isnan(k), k, v))
    return run(f, k, mu, loc)


def cdf(k, mu, loc=0):
    """P(K <= k) = gammaincc(floor(k - loc) + 1, mu); 0 below loc.

    Example:
        >>> from ember.scipy.stats import poisson
        >>> round(float(poisson.cdf(2, 3.0)), 6)
        0.42319
    """
    return _tail("poisson.cdf", k, mu, loc, False)


def sf(k, mu, loc=0):
    """P(K > k) = gammainc(floor(k - loc) + 1, mu), without 1 - cdf's cancellation.

    Example:
        >>> from ember.scipy.stats import poisson
        >>> round(float(poisson.sf(2, 3.0)), 6)
        0.57681
    """
    return _tail("poisson.sf", k, mu, loc, True)
