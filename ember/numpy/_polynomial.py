"""Polynomials as coefficient arrays, highest power first (numpy's poly1d-free functions):
Horner evaluation, least squares on the scaled Vandermonde matrix, arithmetic
(add/sub/mul/div), calculus (der/int) and roots from the companion matrix's eigenvalues.

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

__all__ = ["polyval", "polyfit", "poly", "polyadd", "polysub", "polymul", "polydiv", "polyder",
           "polyint", "roots"]


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


def _coeffs(op, *ps, inexact=False):
    """`ps` promoted together, each checked to be a 1-D coefficient vector."""
    ps = [ensure_array(v) for v in promote_dtypes(op, *map(ensure_array, ps), to_inexact=inexact)]
    for v in ps:
        if get_aval(v).ndim != 1:
            raise ValueError(f"{op}: the coefficients must be a 1-D array (highest power "
                             f"first), got {get_aval(v).str_user()}")
    return ps


def _pad_front(p, n):
    from ._manipulation import concatenate
    from ._creation import zeros
    k = get_aval(p).shape[0]
    if k >= n:
        return p
    return concatenate([zeros((n - k,), get_aval(p).dtype), p])


def poly(seq_of_zeros):
    """The coefficients (highest power first) of the monic polynomial with the given roots;
    a square matrix stands for its eigenvalues (numpy's poly). The result is inexact, and
    complex when the roots are (JAX does not fold conjugate pairs back to real).

    Example:
        >>> import ember.numpy as enp
        >>> enp.poly(enp.asarray([1.0, 2.0])).tolist()
        [1.0, -3.0, 2.0]
    """
    from ._convolve import convolve
    from ._creation import ones
    from ._manipulation import stack
    (z,) = (ensure_array(v) for v in promote_dtypes("poly", ensure_array(seq_of_zeros), to_inexact=True))
    if get_aval(z).ndim == 0:
        z = z.reshape((1,))   # one root, as in JAX (numpy rejects a 0-d input)
    a = get_aval(z)
    if a.ndim == 2 and a.shape[0] == a.shape[1] and a.shape[0] > 0:
        from . import linalg
        z = linalg.eigvals(z)
    elif (a.ndim == 1 and a.shape[0] == 0) or (a.ndim == 2 and a.size == 0):
        return ones((), a.dtype)
    elif a.ndim != 1:
        raise ValueError(f"poly: input must be a 1-D array of roots or a non-empty square "
                         f"matrix, got {a.str_user()}")
    d = get_aval(z).dtype
    out = ones((1,), d)
    for k in range(get_aval(z).shape[0]):
        out = convolve(out, stack([ones((), d), -z[k]]), mode="full")
    return out


def polyadd(a1, a2):
    """The sum of two polynomials (the shorter padded with leading zeros); like JAX, leading
    zeros are kept so the length is static.

    Example:
        >>> import ember.numpy as enp
        >>> enp.polyadd(enp.asarray([1, 2]), enp.asarray([1, 0, 0])).tolist()
        [1, 1, 2]
    """
    a1, a2 = _coeffs("polyadd", a1, a2)
    n = max(get_aval(a1).shape[0], get_aval(a2).shape[0])
    return _pad_front(a1, n) + _pad_front(a2, n)


def polysub(a1, a2):
    """The difference `a1 - a2` of two polynomials (see polyadd).

    Example:
        >>> import ember.numpy as enp
        >>> enp.polysub(enp.asarray([2.0, 10.0, -2.0]), enp.asarray([3.0, 10.0, -4.0])).tolist()
        [-1.0, 0.0, 2.0]
    """
    a1, a2 = _coeffs("polysub", a1, a2)
    n = max(get_aval(a1).shape[0], get_aval(a2).shape[0])
    return _pad_front(a1, n) - _pad_front(a2, n)


def _strip_leading(p, op, tol=0.0):
    """`p` without its leading (near-)zeros: needs concrete values, since they fix the length."""
    import numpy as np
    from ._util import concrete
    v = concrete(p, op, "trim_leading_zeros=True makes the output length depend on the "
                 "values; pass trim_leading_zeros=False under jit")
    nz = np.nonzero(np.abs(v) > tol)[0]
    start = int(nz[0]) if nz.size else get_aval(p).shape[0] - 1
    return p[max(start, 0):]


def polymul(a1, a2, *, trim_leading_zeros=False):
    """The product of two polynomials (the full convolution of their coefficients, inexact
    as in JAX). Leading zeros are kept unless `trim_leading_zeros=True` (concrete values).

    Example:
        >>> import ember.numpy as enp
        >>> enp.polymul(enp.asarray([1.0, 2.0, 3.0]), enp.asarray([9.0, 5.0, 1.0])).tolist()
        [9.0, 23.0, 38.0, 17.0, 3.0]
    """
    from ._convolve import convolve
    from ._creation import zeros
    a1, a2 = _coeffs("polymul", a1, a2, inexact=True)   # JAX's dtype rule (ints -> floats)
    d = get_aval(a1).dtype
    if trim_leading_zeros and get_aval(a1).shape[0] > 1:
        a1 = _strip_leading(a1, "polymul")
    if trim_leading_zeros and get_aval(a2).shape[0] > 1:
        a2 = _strip_leading(a2, "polymul")
    # an empty coefficient vector is the zero polynomial
    if get_aval(a1).shape[0] == 0:
        a1 = zeros((1,), d)
    if get_aval(a2).shape[0] == 0:
        a2 = zeros((1,), d)
    return convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros=False):
    """Quotient and remainder of polynomial long division `u / v` (inexact results). As in
    JAX the remainder keeps `len(u)` coefficients (leading zeros included) so its shape is
    static; `trim_leading_zeros=True` trims them (concrete values only).

    Example:
        >>> import ember.numpy as enp
        >>> q, r = enp.polydiv(enp.asarray([1.0, -3.0, 2.0]), enp.asarray([1.0, -1.0]))
        >>> q.tolist(), r.tolist()
        ([1.0, -2.0], [0.0, 0.0, 0.0])
    """
    from ._creation import zeros
    u, v = _coeffs("polydiv", u, v, inexact=True)
    m, n = get_aval(u).shape[0] - 1, get_aval(v).shape[0] - 1
    if n < 0:
        raise ValueError("polydiv: the divisor v must have at least one coefficient, got "
                         f"{get_aval(v).str_user()}")
    scale = 1.0 / v[0]
    q = zeros((max(m - n + 1, 1),), get_aval(u).dtype)
    for k in range(m - n + 1):
        d = scale * u[k]
        q = q.at[k].set(d)
        u = u.at[k:k + n + 1].add(-d * v)
    if trim_leading_zeros:
        import numpy as np
        from ._info import finfo
        tol = float(np.sqrt(finfo(_dt.real_dtype(get_aval(u).dtype)).eps))
        u = _strip_leading(u, "polydiv", tol)
    return q, u


def polyder(p, m=1):
    """The `m`-th derivative's coefficients (`m` a static non-negative integer).

    Example:
        >>> import ember.numpy as enp
        >>> enp.polyder(enp.asarray([1.0, 1.0, 1.0, 1.0])).tolist()
        [3.0, 2.0, 1.0]
    """
    import numpy as np
    from ._util import static_int
    m = static_int(m, "polyder", "m")
    if m < 0:
        raise ValueError(f"polyder: the order of the derivative m must be non-negative, got {m}")
    (p,) = _coeffs("polyder", p, inexact=True)
    if m == 0:
        return p
    n = get_aval(p).shape[0]
    # falling factorials (k)(k-1)...(k-m+1), highest power first: exact integers in numpy
    coeff = np.prod(np.arange(m, n)[None] - np.arange(m)[:, None], axis=0)[::-1] if n > m \
        else np.zeros(0)
    return p[:max(n - m, 0)] * ensure_array(coeff.astype(get_aval(p).dtype))


def polyint(p, m=1, k=None):
    """The `m`-th antiderivative's coefficients; `k` gives the integration constants (a
    scalar for all of them, or `m` values, the first for the outermost integral).

    Example:
        >>> import ember.numpy as enp
        >>> enp.polyint(enp.asarray([3.0, 2.0, 1.0])).tolist()
        [1.0, 1.0, 1.0, 0.0]
    """
    import numpy as np
    from ._util import static_int
    from ._creation import full
    from ._manipulation import concatenate, ravel
    m = static_int(m, "polyint", "m")
    if m < 0:
        raise ValueError(f"polyint: the order of the antiderivative m must be non-negative, "
                         f"got {m}")
    p, kk = _coeffs("polyint", p, ravel(ensure_array(0.0 if k is None else k)), inexact=True)
    if get_aval(kk).shape[0] == 1:
        kk = full((m,), kk[0], dtype=get_aval(p).dtype)
    if get_aval(kk).shape != (m,):
        raise ValueError(f"polyint: k must be a scalar or a 1-D array of length 1 or m = {m}, "
                         f"got {get_aval(kk).str_user()}")
    if m == 0:
        return p
    n = get_aval(p).shape[0]
    grid = np.arange(n + m)[None] - np.arange(m)[:, None]
    coeff = np.maximum(1, grid).prod(axis=0)[::-1].astype(get_aval(p).dtype)
    return concatenate([p, kk]) / ensure_array(coeff)


def roots(p, *, strip_zeros=True):
    """The roots of the polynomial with coefficients `p` (the eigenvalues of its companion
    matrix), complex. Leading zeros are stripped, which needs concrete values; under jit
    pass `strip_zeros=False`: then every leading zero gives a NaN root at the end, as in JAX.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> r = enp.roots(enp.asarray([1.0, -3.0, 2.0]))
        >>> sorted(np.round(np.asarray(r).real, 6).tolist())
        [1.0, 2.0]
    """
    from ._creation import asarray, ones, zeros
    from ._util import concrete_or_none
    from ..fx.core import ConcretizationError, argument_note
    (p,) = (ensure_array(v) for v in promote_dtypes("roots", ensure_array(p), to_inexact=True))
    if get_aval(p).ndim == 0:
        p = p.reshape((1,))
    if get_aval(p).ndim != 1:
        raise ValueError(f"roots: the coefficients must be a 1-D array, got "
                         f"{get_aval(p).str_user()}")
    cd = _dt.complex_dtype(get_aval(p).dtype)
    n = get_aval(p).shape[0]
    if n < 2:
        return zeros((0,), cd)
    if strip_zeros:
        import numpy as np
        v = concrete_or_none(p)
        if v is None:
            raise ConcretizationError(
                f"roots: stripping the leading zeros of p makes the number of roots depend on "
                f"the values, but p is the abstract value {get_aval(p).str_user()} under a "
                f"trace{argument_note(p)}. Pass strip_zeros=False to use roots under jit (each "
                f"leading zero then gives a NaN root).")
        nz = np.nonzero(v)[0]
        return _roots_no_zeros(p[int(nz[0]) if nz.size else n:], cd)
    from ._searching import argmin, where
    from ._utility import all as _all
    from ._manipulation import roll
    from ._creation import arange
    from .. import lax
    is0 = p == 0
    lead = where(_all(is0), n, argmin(is0))
    # an all-zero p would give a singular companion matrix: every root is NaN anyway
    p = where(lead == n, ones((), get_aval(p).dtype), p)
    r = _roots_no_zeros(roll(p, -lead), cd)
    # the leading zeros, rolled to the end, give zero roots: sort them last, then NaN them
    r = lax.sort((r == 0, r), num_keys=1)[1]
    return where(arange(n - 1) < n - 1 - lead, r, asarray(complex(float("nan"), float("nan")),
                                                         dtype=cd))


def _roots_no_zeros(p, cd):
    from ._creation import diag, ones, zeros
    n = get_aval(p).shape[0]
    if n < 2:
        return zeros((0,), cd)
    from . import linalg
    a = diag(ones((n - 2,), get_aval(p).dtype), -1)
    a = a.at[0, :].set(-p[1:] / p[0])
    return linalg.eigvals(a).astype(cd)
