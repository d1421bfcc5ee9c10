"""The Bernoulli distribution, P(K = 1) = p (scipy.stats.bernoulli).

Example:
    >>> from ember.scipy.stats import bernoulli
    >>> float(bernoulli.pmf(1, 0.25))
    0.25
"""
from __future__ import annotations

import numpy as np

from .. import special
from ._util import nan_unless, promote, run

__all__ = ["logpmf", "pmf", "cdf", "ppf"]


def logpmf(k, p, loc=0):
    """xlogy(k, p) + xlog1py(1 - k, -p) at k - loc in {0, 1}, -inf elsewhere; NaN for p
    outside [0, 1].

    Example:
        >>> from ember.scipy.stats import bernoulli
        >>> round(float(bernoulli.logpmf(0, 0.25)), 6)
        -0.287682
    """
    from ... import numpy as enp
    k, p, loc = promote("bernoulli.logpmf", k, p, loc)

    def f(k, p, loc):
        k = k - loc
        ok = (k == 0) | (k == 1)
        ks = enp.where(ok, k, enp.zeros_like(k))
        v = special._xlogy(ks, p) + special._xlog1py(1.0 - ks, -p)
        return nan_unless((p >= 0) & (p <= 1), enp.where(ok, v, enp.full_like(v, -np.inf)))
    return run(f, k, p, loc)


def pmf(k, p, loc=0):
    """The Bernoulli probability mass.

    Example:
        >>> from ember.scipy.stats import bernoulli
        >>> float(bernoulli.pmf(2, 0.25))
        0.0
    """
    from ... import numpy as enp
    return enp.exp(logpmf(k, p, loc))


def cdf(k, p, loc=0):
    """0 below loc, 1 - p on [loc, loc + 1), 1 above.

    Example:
        >>> from ember.scipy.stats import bernoulli
        >>> float(bernoulli.cdf(0.5, 0.25))
        0.75
    """
    from ... import numpy as enp
    k, p, loc = promote("bernoulli.cdf", k, p, loc)

    def f(k, p, loc):
        k = k - loc
        v = enp.where(k < 0, enp.zeros_like(p), enp.where(k < 1, 1.0 - p, enp.ones_like(p)))
        return nan_unless((p >= 0) & (p <= 1), enp.where(enp.isnan(k), k, v))
    return run(f, k, p, loc)


def ppf(q, p, loc=0):
    """The smallest k with cdf(k) >= q, as scipy: loc - 1 at q = 0, loc + 1 at q = 1,
    otherwise loc where q <= 1 - p and loc + 1 above; NaN outside [0, 1].

    Example:
        >>> from ember.scipy.stats import bernoulli
        >>> float(bernoulli.ppf(0.5, 0.25)), float(bernoulli.ppf(0.9, 0.25))
        (0.0, 1.0)
    """
    from ... import numpy as enp
    q, p, loc = promote("bernoulli.ppf", q, p, loc)

    def f(q, p, loc):
        one = enp.ones_like(q)
        k = enp.where(q == 0, -one, enp.where(q == 1, one, enp.where(q <= 1.0 - p, 0.0 * one, one)))
        ok = (q >= 0) & (q <= 1) & (p >= 0) & (p <= 1)
        return nan_unless(ok, k + loc)
    return run(f, q, p, loc)
