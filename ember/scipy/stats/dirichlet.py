"""The Dirichlet distribution with concentration `alpha` (scipy.stats.dirichlet /
jax.scipy.stats.dirichlet); as scipy, the FIRST axis of `x` indexes the K components.

Example:
    >>> import ember.numpy as enp
    >>> from ember.scipy.stats import dirichlet
    >>> round(float(dirichlet.pdf(enp.asarray([0.2, 0.8]), enp.asarray([1.0, 1.0]))), 6)
    1.0
"""
from __future__ import annotations

import numpy as np

from .. import special

from ._util import promote_shapes_apart

__all__ = ["logpdf", "pdf"]


def logpdf(x, alpha):
    """sum_i xlogy(alpha_i - 1, x_i) - (sum_i gammaln(alpha_i) - gammaln(sum alpha)) on the
    simplex, -inf off it.  `alpha` is (K,); `x` is (K, ...) or (K - 1, ...), the last
    component then being 1 - the sum of the others.

    Example:
        >>> import ember.numpy as enp
        >>> from ember.scipy.stats import dirichlet
        >>> round(float(dirichlet.logpdf(enp.asarray([0.2, 0.3, 0.5]), enp.asarray([1.5, 2.0, 3.0]))), 6)
        1.695211
    """
    from ... import lax
    from ... import numpy as enp
    x, alpha = promote_shapes_apart("dirichlet.logpdf", x, alpha)
    if alpha.ndim != 1:
        raise ValueError(f"dirichlet.logpdf: alpha must be one-dimensional, got shape {alpha.shape}")
    K = alpha.shape[0]
    if x.ndim == 0 or x.shape[0] not in (K, K - 1):
        raise ValueError(f"dirichlet.logpdf: x must have {K} (or {K - 1}) entries along its first "
                         f"axis, got shape {x.shape}")
    if x.shape[0] == K - 1:
        x = enp.concatenate([x, 1.0 - enp.sum(x, axis=0, keepdims=True)], axis=0)
    a = enp.reshape(alpha, (K,) + (1,) * (x.ndim - 1))
    norm = enp.sum(lax.lgamma(alpha)) - lax.lgamma(enp.sum(alpha))
    on = enp.all((x >= 0) & (x <= 1), axis=0) & (enp.abs(enp.sum(x, axis=0) - 1.0) < _sum_tol(x.dtype))
    xs = enp.where(on, x, enp.full_like(x, 1.0 / K))
    v = enp.sum(special._xlogy(a - 1.0 + 0 * xs, xs), axis=0) - norm
    bad = enp.any(alpha <= 0)
    v = enp.where(on, v, enp.full_like(v, -np.inf))
    return enp.where(bad, enp.full_like(v, np.nan), v)


def _sum_tol(dtype):
    # scipy accepts a simplex to within 1e-10 of sum 1 in float64
    return 1e-10 if dtype == np.float64 else 1e-5


def pdf(x, alpha):
    """The Dirichlet density, exp(logpdf).

    Example:
        >>> import ember.numpy as enp
        >>> from ember.scipy.stats import dirichlet
        >>> round(float(dirichlet.pdf(enp.asarray([0.5, 0.5]), enp.asarray([2.0, 2.0]))), 6)
        1.5
    """
    from ... import numpy as enp
    return enp.exp(logpdf(x, alpha))
