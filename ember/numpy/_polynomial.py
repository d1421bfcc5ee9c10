"""Polynomials as coefficient arrays, highest power first (numpy's polyval and polyfit):
Horner evaluation, and least squares on the scaled Vandermonde matrix.

Example:
    >>> import ember.numpy as enp
    >>> enp.polyval(enp.asarray([1.0, 0.0, -1.0]), enp.asarray([2.0, 3.0])).tolist()
    [3.0, 8.0]
"""
from __future__ import annotations

import operator

from .. import dtypes as _dt
from ..fx.core import get_aval
from ._core import ensure_array, promote_dtypes

__all__ = ["polyval", "polyfit"]


def polyval(p, x):
    """`p[0] * x**(N-1) + ... + p[N-1]` by Horner's rule, elementwise over `x`.

    Example:
        >>> import ember.numpy as enp
        >>> float(enp.polyval([3.0, 0.0, 1.0], 5.0))
        76.0
    """
    p = ensure_array(p)
    if get_aval(p).ndim != 1:
        raise ValueError(f"polyval: p must be a 1-D array of coefficients (highest power first), "
                         f"got {get_aval(p).str_user()}")
    p, x = (ensure_array(v) for v in promote_dtypes("polyval", p, x))
    from ._creation import zeros_like
    y = zeros_like(x)
    for i in range(get_aval(p).shape[0]):
        y = y * x + p[i]
    return y


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """Least-squares polynomial fit of degree `deg` (numpy's polyfit): the coefficients,
    highest power first (one column per column of a 2-D `y`). `full=True` also returns
    (residuals, rank, singular values, rcond); `cov=True` (or "unscaled") the coefficients'
    covariance matrix. Differentiable in x, y and w.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> x = enp.asarray([0.0, 1.0, 2.0, 3.0])
        >>> (np.round(np.asarray(enp.polyfit(x, 2 * x * x - 1, 2)), 4) + 0.0).tolist()
        [2.0, 0.0, -1.0]
    """
    from ._creation import vander
    from ._elementwise import sqrt
    from ._linear import outer
    from . import linalg
    deg = operator.index(deg)
    if deg < 0:
        raise ValueError(f"polyfit: deg must be non-negative, got {deg}")
    order = deg + 1
    x, y = ensure_array(x), ensure_array(y)
    if get_aval(x).ndim != 1 or get_aval(x).size == 0:
        raise TypeError(f"polyfit: x must be a non-empty 1-D array, got {get_aval(x).str_user()}")
    if get_aval(y).ndim not in (1, 2) or get_aval(y).shape[0] != get_aval(x).shape[0]:
        raise TypeError(f"polyfit: y must be 1-D or 2-D with len(x) = {get_aval(x).shape[0]} "
                        f"rows, got {get_aval(y).str_user()}")
    args = [x, y] if w is None else [x, y, ensure_array(w)]
    args = [ensure_array(v) for v in promote_dtypes("polyfit", *args, to_inexact=True)]
    x, y = args[0], args[1]
    n = get_aval(x).shape[0]
    if rcond is None:
        from ._info import finfo
        rcond = n * float(finfo(_dt.real_dtype(get_aval(x).dtype)).eps)
    lhs, rhs = vander(x, order), y
    if w is not None:
        w = args[2]
        if get_aval(w).shape != (n,):
            raise TypeError(f"polyfit: w must be 1-D with len(x) = {n} entries, got "
                            f"{get_aval(w).str_user()}")
        lhs = lhs * w[:, None]
        rhs = rhs * (w[:, None] if get_aval(rhs).ndim == 2 else w)
    # scaling the columns to unit norm conditions the Vandermonde matrix, as numpy does
    scale = sqrt((lhs * lhs.conj()).real.sum(axis=0))
    lhs = lhs / scale
    c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
    c = (c.T / scale).T
    if full:
        return c, resids, rank, s, rcond
    if cov:
        vbase = linalg.inv(lhs.T @ lhs) / outer(scale, scale)
        if cov == "unscaled":
            fac = 1.0
        else:
            if n <= order:
                raise ValueError(f"polyfit: the covariance needs more points ({n}) than "
                                 f"coefficients ({order}); use cov='unscaled'")
            fac = resids / (n - order)
        if get_aval(y).ndim == 1:
            return c, vbase * fac
        return c, vbase[:, :, None] * fac
    return c
