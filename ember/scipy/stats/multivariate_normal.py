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
    cov that is not positive definite gives NaN (JAX's behaviour).  With
    `allow_singular=True` the density is scipy's degenerate one: through the
    eigendecomposition of cov, its pseudo-inverse and pseudo-determinant over the
    eigenvalues above scipy's cutoff, and -inf off the support (x - mean outside
    cov's range).

    Example:
        >>> import ember.numpy as enp
        >>> from ember.scipy.stats import multivariate_normal
        >>> cov = enp.asarray([[2.0, 0.5], [0.5, 1.0]])
        >>> round(float(multivariate_normal.logpdf(enp.asarray([1.0, -1.0]), enp.zeros(2), cov)), 6)
        -3.260542
    """
    from ... import lax
    from ... import numpy as enp
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
    if allow_singular:
        return _degenerate_logpdf(y, cov, n)
    L = lax.linalg.cholesky(cov)
    batch = y.shape[:-1]
    flat = enp.reshape(y, (-1, n))
    # y L^-T = z, i.e. L z^T = y^T: one triangular solve for every row
    z = lax.linalg.triangular_solve(L, flat, left_side=False, lower=True, transpose_a=True)
    z = enp.reshape(z, batch + (n,))
    logdet = enp.sum(enp.log(enp.diagonal(L)))
    return -0.5 * enp.sum(z * z, axis=-1) - 0.5 * n * math.log(2 * math.pi) - logdet


def _degenerate_logpdf(y, cov, n):
    """scipy's allow_singular density (its _PSD): eigenvalues at most `cond` times the
    largest count as zero, with scipy's cond (1e3 eps in float32, 1e6 eps in float64)."""
    from ... import numpy as enp
    from ...transforms.misc import stop_gradient
    s, u = enp.linalg.eigh(cov)
    finfo = enp.finfo(s.dtype)
    cond = (1e6 if s.dtype.itemsize >= 8 else 1e3) * float(finfo.eps)
    eps = stop_gradient(cond * enp.max(enp.abs(s)))
    keep = s > eps
    safe = enp.where(keep, s, 1.0)
    proj = y @ u
    maha = enp.sum(enp.where(keep, proj * proj / safe, 0.0), axis=-1)
    rank = enp.sum(keep).astype(s.dtype)
    log_pdet = enp.sum(enp.where(keep, enp.log(safe), 0.0))
    out = -0.5 * (rank * math.log(2 * math.pi) + log_pdet + maha)
    off = enp.sqrt(enp.sum(enp.where(keep, 0.0, proj * proj), axis=-1))
    return enp.where(off < 1e3 * eps, out, -enp.inf)


def pdf(x, mean, cov, allow_singular=None):
    """The multivariate normal density, exp(logpdf) (`allow_singular` as there).

    Example:
        >>> import ember.numpy as enp
        >>> from ember.scipy.stats import multivariate_normal
        >>> round(float(multivariate_normal.pdf(enp.zeros(2), enp.zeros(2), enp.eye(2))), 6)
        0.159155
    """
    from ... import numpy as enp
    return enp.exp(logpdf(x, mean, cov, allow_singular))

