"""cov and corrcoef (numpy's estimators, with frequency and analytic weights), composed
from means and a matrix product so they are differentiable and batchable.

Example:
    >>> import ember.numpy as enp
    >>> enp.cov(enp.asarray([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])).tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
"""
from __future__ import annotations

from .. import dtypes as _dt
from ..fx.core import get_aval
from ._core import ensure_array, promote_args, promote_dtypes

__all__ = ["cov", "corrcoef"]


def _rows(v, rowvar, name, dtype):
    v = ensure_array(v)
    if dtype is not None:
        v = v.astype(dtype)
    (v,) = promote_args("cov", v, to_inexact=True)
    a = get_aval(v)
    if a.ndim > 2:
        raise ValueError(f"cov: {name} must be 1-D or 2-D (variables x observations), got "
                         f"{a.str_user()}")
    if a.ndim < 2:
        v = v.reshape(1, -1)
    if not rowvar and get_aval(v).shape[0] != 1:
        v = v.T
    return v


def _weights(w, n, name, integral):
    w = ensure_array(w)
    a = get_aval(w)
    if a.ndim != 1 or a.shape[0] != n:
        raise ValueError(f"cov: {name} must be 1-D with one weight per observation ({n}), got "
                         f"{a.str_user()}")
    if integral and _dt.kind(a.dtype) not in "biu":
        raise TypeError(f"cov: fweights must be integers (repeat counts), got {a.str_user()}; "
                        "use aweights for real-valued weights")
    return w


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """Covariance matrix of the variables in the rows of `m` (columns if `rowvar=False`),
    numpy's estimator: normalised by N - 1 (N with `bias=True`, N - ddof with `ddof`),
    weighted by integer `fweights` and/or real `aweights`. A single variable gives a 0-d array.

    Example:
        >>> import ember.numpy as enp
        >>> round(float(enp.cov(enp.asarray([1.0, 2.0, 4.0]))), 5)
        2.33333
    """
    from ._linear import matmul
    from ._manipulation import concatenate, squeeze
    from ._reductions import sum as asum
    X = _rows(m, rowvar, "m", dtype)
    if y is not None:
        Y = _rows(y, rowvar, "y", dtype)
        if get_aval(Y).shape[1] != get_aval(X).shape[1]:
            raise ValueError(f"cov: m and y need the same number of observations, got "
                             f"{get_aval(X).shape[1]} and {get_aval(Y).shape[1]}")
        X, Y = (ensure_array(v) for v in promote_dtypes("cov", X, Y))
        X = concatenate([X, Y], axis=0)
    n = get_aval(X).shape[1]
    if ddof is None:
        ddof = 0 if bias else 1
    w = None
    if fweights is not None:
        w = _weights(fweights, n, "fweights", True).astype(X.dtype)
    if aweights is not None:
        aw = _weights(aweights, n, "aweights", False).astype(X.dtype)
        w = aw if w is None else w * aw
    if w is None:
        avg = X.mean(axis=1)
        fact = n - ddof
    else:
        w_sum = asum(w)
        avg = matmul(X, w) / w_sum
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * asum(w * aw) / w_sum
    # numpy clamps non-positive degrees of freedom to 0 (so the result is inf / nan)
    if isinstance(fact, (int, float)):
        fact = max(fact, 0)
    else:
        from ._elementwise import maximum
        fact = maximum(fact, 0)
    Xc = X - avg[:, None]
    Xw = Xc if w is None else Xc * w
    c = matmul(Xc, Xw.conj().T) / fact
    return squeeze(c)


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """Pearson correlation coefficients, `cov / sqrt(var_i var_j)` (numpy's corrcoef); real
    parts clipped to [-1, 1] against rounding.

    Example:
        >>> import ember.numpy as enp
        >>> enp.corrcoef(enp.asarray([1.0, 2.0, 3.0]), enp.asarray([3.0, 2.0, 1.0])).tolist()
        [[1.0, -1.0], [-1.0, 1.0]]
    """
    from ._elementwise import clip, sqrt
    from ._manipulation import diagonal
    c = cov(x, y, rowvar, dtype=dtype)
    if get_aval(c).ndim == 0:
        return c / c
    d = diagonal(c).real
    s = sqrt(d)
    c = c / s[:, None] / s[None, :]
    if _dt.kind(get_aval(c).dtype) == "c":
        from ._elementwise import real, imag
        return clip(real(c), -1, 1) + 1j * clip(imag(c), -1, 1)
    return clip(c, -1, 1)
