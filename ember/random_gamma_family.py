"""`ember.random`'s gamma-derived samplers: chisquare, Student's t and Snedecor's F
(JAX's constructions: 2 Gamma(df/2), normal * sqrt((df/2) / Gamma(df/2)), and the ratio
of two chi-squares each divided by its degrees of freedom).

Example:
    >>> from ember import random
    >>> random.chisquare(random.key(0), 3.0, (2,)).shape
    (2,)
"""
from __future__ import annotations

from . import numpy as enp
from . import random as _r

__all__ = ["chisquare", "t", "f"]


def chisquare(key, df, shape=None, dtype=None):
    """Chi-square samples with `df` degrees of freedom (2 * Gamma(df / 2)); df broadcasts
    against `shape`. Not differentiable in df.

    Example:
        >>> from ember import random
        >>> x = random.chisquare(random.key(0), 4.0, (4000,))
        >>> bool(abs(float(x.mean()) - 4.0) < 0.2)
        True
    """
    k = _r._check_key(key, "chisquare")
    shape = _r._shape(shape, "chisquare")
    d = _r._float_dtype(dtype, "chisquare")
    cd = _r._compute_dtype(d)
    df = enp.asarray(df).astype(cd)
    shape = _r._param_shape("chisquare", shape, df=df.shape)
    half = enp.broadcast_to(df, shape) / cd.type(2.0)
    out = cd.type(2.0) * _r._m("exp", _r.loggamma(k, half, shape, cd))
    return out if cd == d else out.astype(d)


def t(key, df, shape=None, dtype=None):
    """Student's t samples with `df` degrees of freedom, normal * sqrt((df/2) / Gamma(df/2))
    (JAX's construction); df broadcasts against `shape` (default: df's shape, as in JAX).

    Example:
        >>> from ember import random
        >>> x = random.t(random.key(0), 5.0, (4000,))
        >>> bool(abs(float(x.mean())) < 0.1)
        True
    """
    k = _r._check_key(key, "t")
    shape = _r._shape(shape, "t")
    d = _r._float_dtype(dtype, "t")
    cd = _r._compute_dtype(d)
    df = enp.asarray(df).astype(cd)
    shape = _r._param_shape("t", shape, df=df.shape)
    kn, kg = _r.split(k)
    n = _r.normal(kn, shape, cd)
    half = enp.broadcast_to(df, shape) / cd.type(2.0)
    lg = _r.loggamma(kg, half, shape, cd)
    # sqrt(half / g) = sqrt(half) * exp(-lg / 2): stays finite when g underflows
    out = n * enp.sqrt(half) * _r._m("exp", -lg / cd.type(2.0))
    return out if cd == d else out.astype(d)


def f(key, dfnum, dfden, shape=None, dtype=None):
    """F-distribution samples, (X / dfnum) / (Y / dfden) with X, Y chi-square with dfnum
    and dfden degrees of freedom; dfnum and dfden broadcast against `shape` (default:
    their broadcast shape).  Not differentiable in the degrees of freedom.

    Example:
        >>> from ember import random
        >>> x = random.f(random.key(0), 5.0, 10.0, (4000,))
        >>> bool(abs(float(x.mean()) - 10.0 / 8.0) < 0.1)
        True
    """
    from .random_continuous import _params
    k = _r._check_key(key, "f")
    shape = _r._shape(shape, "f")
    d = _r._float_dtype(dtype, "f")
    cd = _r._compute_dtype(d)
    shape, (dn, dd) = _params("f", shape, cd, dfnum=dfnum, dfden=dfden)
    k_den, k_num = _r.split(k)
    half = cd.type(0.5)
    # in log space: the ratio stays finite when a small-df gamma draw underflows
    lnum = _r.loggamma(k_num, dn * half, shape, cd)
    lden = _r.loggamma(k_den, dd * half, shape, cd)
    out = _r._m("exp", lnum - lden) * (dd / dn)
    return out if cd == d else out.astype(d)
