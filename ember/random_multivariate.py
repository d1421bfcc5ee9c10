"""`ember.random`'s vector samplers: multivariate_normal (cholesky/eigh/svd factors, as
JAX), orthogonal (Haar-distributed, QR of a Gaussian matrix with the sign fix) and ball
(uniform in the unit p-norm ball).

Matrix-vector products are written as a fixed-order sum of elementwise products, and
the factorisations run numpy's LAPACK on every path, so a key gives bit-identical samples
eagerly, under jit and under vmap (a gemm's accumulation order differs between them).

Example:
    >>> from ember import random
    >>> random.orthogonal(random.key(0), 3).shape
    (3, 3)
"""
from __future__ import annotations

from . import dtypes as _dt
from . import numpy as enp
from . import random as _r
from .fx.core import get_aval

__all__ = ["multivariate_normal", "orthogonal", "ball"]

_METHODS = ("cholesky", "eigh", "svd")


def _matvec(F, z):
    """F @ z over the last axes, summed over j = 0, 1, ... in that order."""
    n = get_aval(F).shape[-1]
    acc = F[..., :, 0] * z[..., None, 0]
    for j in range(1, n):
        acc = acc + F[..., :, j] * z[..., None, j]
    return acc


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Samples of N(mean, cov): `mean` is [..., n], `cov` [..., n, n]; the result is
    `shape + (n,)` with `shape` defaulting to the broadcast batch shape of mean and cov.
    `method` picks the factor F with F F^T = cov: "cholesky" (default; cov must be
    positive definite), "eigh" or "svd" (also positive semi-definite). Differentiable in
    mean and cov (reparameterisation).

    Example:
        >>> import ember.numpy as enp
        >>> from ember import random
        >>> x = random.multivariate_normal(random.key(0), enp.zeros(2), enp.eye(2), (3,))
        >>> x.shape
        (3, 2)
    """
    k = _r._check_key(key, "multivariate_normal")
    shape = _r._shape(shape, "multivariate_normal")
    d = _r._float_dtype(dtype, "multivariate_normal")
    cd = _r._compute_dtype(d)
    if method not in _METHODS:
        raise ValueError(f"random.multivariate_normal: method must be one of "
                         f"{', '.join(map(repr, _METHODS))}, got {method!r}")
    mean, cov = enp.asarray(mean).astype(cd), enp.asarray(cov).astype(cd)
    ma, ca = get_aval(mean), get_aval(cov)
    if ma.ndim < 1 or ca.ndim < 2 or ca.shape[-1] != ca.shape[-2] or ca.shape[-1] != ma.shape[-1]:
        raise ValueError(f"random.multivariate_normal: mean must be [..., n] and cov [..., n, n] "
                         f"with the same n, got mean {ma.str_user()} and cov {ca.str_user()}")
    n = ma.shape[-1]
    shape = _r._param_shape("multivariate_normal", shape, mean_batch=ma.shape[:-1],
                            cov_batch=ca.shape[:-2])
    if method == "cholesky":
        factor = enp.linalg.cholesky(cov)
    elif method == "eigh":
        w, v = enp.linalg.eigh(cov)
        factor = v * enp.sqrt(enp.maximum(w, cd.type(0.0)))[..., None, :]
    else:
        u, s, _ = enp.linalg.svd(cov)
        factor = u * enp.sqrt(s)[..., None, :]
    z = _r.normal(k, tuple(shape) + (n,), cd)
    out = mean + _matvec(factor, z) if n else enp.broadcast_to(mean, tuple(shape) + (n,))
    return out if cd == d else out.astype(d)


def orthogonal(key, n, shape=(), dtype=None, m=None):
    """Haar-random matrices with orthonormal columns, `shape + (n, m)` (m defaults to n,
    so square orthogonal matrices): Q of the QR of a Gaussian matrix, its columns' signs
    fixed by R's diagonal (Mezzadri 2007), as JAX does.

    Example:
        >>> import numpy as np
        >>> from ember import random
        >>> q = np.asarray(random.orthogonal(random.key(1), 4, dtype="float64"))
        >>> bool(np.allclose(q.T @ q, np.eye(4)))
        True
    """
    k = _r._check_key(key, "orthogonal")
    shape = _r._shape(shape, "orthogonal")
    n = _r._static_size(n, "orthogonal", "n")
    m = n if m is None else _r._static_size(m, "orthogonal", "m")
    d = _r._float_dtype(dtype, "orthogonal")
    cd = _r._compute_dtype(d)
    z = _r.normal(k, tuple(shape) + (n, m), cd)
    q, r = enp.linalg.qr(z)
    dg = enp.diagonal(r, axis1=-2, axis2=-1)
    out = q * enp.where(dg < 0, cd.type(-1.0), cd.type(1.0))[..., None, :]
    return out if cd == d else out.astype(d)


def ball(key, d, p=2, shape=(), dtype=None):
    """Points uniform in the unit ball of the p-norm in R^d, `shape + (d,)` (Barthe et al.
    2005: a generalised-normal vector divided by (||g||_p^p + E)^(1/p), E exponential).

    Example:
        >>> import numpy as np
        >>> from ember import random
        >>> x = np.asarray(random.ball(random.key(0), 3, shape=(100,)))
        >>> bool((np.linalg.norm(x, axis=-1) <= 1).all())
        True
    """
    k = _r._check_key(key, "ball")
    shape = _r._shape(shape, "ball")
    dim = _r._static_size(d, "ball", "d")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not p > 0:
        raise ValueError(f"random.ball: p must be a positive number, got {p!r}")
    od = _r._float_dtype(dtype, "ball")
    cd = _r._compute_dtype(od)
    c = cd.type
    full = tuple(shape) + (dim,)
    kg, ke, ks = _r.split(k, 3)
    e = _r.exponential(ke, shape, cd)
    if p == 2:
        # density exp(-|x|^2) is N(0, 1/2); sqrt is exact, so no transcendental step
        g = _r.normal(kg, full, cd) * c(0.5 ** 0.5)
        out = g / enp.sqrt((g * g).sum(axis=-1) + e)[..., None]
    else:
        # |g|^p ~ Gamma(1/p): keep it in log space, |g| = exp(loggamma / p)
        lg = _r.loggamma(kg, enp.full(full, 1.0 / p, cd), full, cd)
        sign = _r.rademacher(ks, full, cd)
        g = sign * _r._m("exp", lg / c(p))
        r = _r._m("exp", _r._m("log", _r._m("exp", lg).sum(axis=-1) + e) / c(p))
        out = g / r[..., None]
    return out if cd == od else out.astype(od)
