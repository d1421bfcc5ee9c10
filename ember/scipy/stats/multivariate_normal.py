"""The multivariate normal distribution N(mean, cov) (scipy.stats.multivariate_normal /
jax.scipy.stats.multivariate_normal), the last axis of `x` holding the variables.

Example:
    >>> import ember.numpy as enp
    >>> from ember.scipy.stats import multivariate_normal
    >>> round(float(multivariate_normal.logpdf(enp.zeros(2), enp.zeros(2), enp.eye(2))), 6)
    -1.837877
"""
from __future__ import annotations

import math

from ._util import promote_shapes_apart

__all__ = ["logpdf", "pdf"]


def logpdf(x, mean, cov, allow_singular=None):
    """log density through the Cholesky factor L of cov: -|L^-1 (x - mean)|^2 / 2 -
    n log(2 pi) / 2 - sum(log diag L).  A 0-d `mean` is the univariate case (cov its
    variance); a 0-d `cov` with a vector mean is cov * identity.  `x` is (..., n); a
    cov that is not positive definite gives NaN (JAX's behaviour: there is no
    `allow_singular`).

    Example:
        >>> import ember.numpy as enp
        >>> from ember.scipy.stats import multivariate_normal
        >>> cov = enp.asarray([[2.0, 0.5], [0.5, 1.0]])
        >>> round(float(multivariate_normal.logpdf(enp.asarray([1.0, -1.0]), enp.zeros(2), cov)), 6)
        -3.260542
    """
    from ... import lax
    from ... import numpy as enp
    if allow_singular is not None:
        raise NotImplementedError("multivariate_normal.logpdf: allow_singular is not supported "
                                  "(a singular cov gives NaN), as in jax.scipy.stats")
    x, mean, cov = promote_shapes_apart("multivariate_normal.logpdf", x, mean, cov)
    if mean.ndim == 0:
        if cov.ndim != 0:
            raise ValueError(f"multivariate_normal.logpdf: a scalar mean needs a scalar cov, got "
                             f"cov of shape {cov.shape}")
        y = x - mean
        return -0.5 * y * y / cov - 0.5 * (math.log(2 * math.pi) + enp.log(cov))
    n = mean.shape[-1]
    if x.ndim == 0 or x.shape[-1] != n:
        raise ValueError(f"multivariate_normal.logpdf: x must end in the dimension of mean ({n}), "
                         f"got x of shape {x.shape}")
    y = x - mean
    if cov.ndim == 0:
        return -0.5 * (enp.sum(y * y, axis=-1) / cov + n * enp.log(2 * math.pi * cov))
    if cov.ndim != 2 or cov.shape != (n, n):
        raise ValueError(f"multivariate_normal.logpdf: cov must be ({n}, {n}) for a mean of "
                         f"dimension {n}, got {cov.shape}")
    L = lax.linalg.cholesky(cov)
    batch = y.shape[:-1]
    flat = enp.reshape(y, (-1, n))
    # y L^-T = z, i.e. L z^T = y^T: one triangular solve for every row
    z = lax.linalg.triangular_solve(L, flat, left_side=False, lower=True, transpose_a=True)
    z = enp.reshape(z, batch + (n,))
    logdet = enp.sum(enp.log(enp.diagonal(L)))
    return -0.5 * enp.sum(z * z, axis=-1) - 0.5 * n * math.log(2 * math.pi) - logdet


def pdf(x, mean, cov):
    """The multivariate normal density, exp(logpdf).

    Example:
        >>> import ember.numpy as enp
        >>> from ember.scipy.stats import multivariate_normal
        >>> round(float(multivariate_normal.pdf(enp.zeros(2), enp.zeros(2), enp.eye(2))), 6)
        0.159155
    """
    from ... import numpy as enp
    return enp.exp(logpdf(x, mean, cov))

