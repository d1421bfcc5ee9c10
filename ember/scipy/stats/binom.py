"""The binomial distribution, `n` trials of probability `p` (scipy.stats.binom).

Example:
    >>> from ember.scipy.stats import binom
    >>> round(float(binom.pmf(2, 4, 0.5)), 6)
    0.375
"""
from __future__ import annotations

import numpy as np

from .. import special
from ._util import nan_unless, promote, run, safe

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    """gammaln(n+1) - gammaln(k+1) - gammaln(n-k+1) + xlogy(k, p) + xlog1py(n-k, -p) at
    the integers 0 <= k - loc <= n, -inf elsewhere; NaN for p outside [0, 1] or n not a
    non-negative integer.  The log-gamma differences lose about log10(n) digits for large
    n (scipy's saddle-point form keeps them).

    Example:
        >>> from ember.scipy.stats import binom
        >>> round(float(binom.logpmf(2, 4, 0.5)), 6)
        -0.980829
    """
    from ... import lax
    from ... import numpy as enp
    k, n, p, loc = promote("binom.logpmf", k, n, p, loc)

    def f(k, n, p, loc):
        k = k - loc
        ok = (k >= 0) & (k <= n) & (enp.floor(k) == k)
        ks = safe(ok, k, 0.0)
        comb = lax.lgamma(n + 1.0) - lax.lgamma(ks + 1.0) - lax.lgamma(n - ks + 1.0)
        v = comb + special._xlogy(ks, p) + special._xlog1py(n - ks, -p)
        valid = (p >= 0) & (p <= 1) & (n >= 0) & (enp.floor(n) == n)
        return nan_unless(valid, enp.where(ok, v, enp.full_like(v, -np.inf)))
    return run(f, k, n, p, loc)


def pmf(k, n, p, loc=0):
    """The binomial probability mass.

    Example:
        >>> from ember.scipy.stats import binom
        >>> float(binom.pmf(0, 3, 0.0))
        1.0
    """
    from ... import numpy as enp
    return enp.exp(logpmf(k, n, p, loc))
