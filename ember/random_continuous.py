"""`ember.random`'s continuous samplers that are transformations of uniforms, normals,
exponentials and gammas: cauchy, lognormal, pareto, rayleigh, triangular, wald,
weibull_min, maxwell, double_sided_maxwell and generalized_normal (JAX's signatures
and constructions).

Each draws in at least float32 and casts to `dtype` at the end, and its transcendental
steps go through `sampler_math` (`pow(x, y)` is written exp(log(x) * y)), so a key gives
bit-identical samples eagerly, under jit and under vmap.  Except for generalized_normal
(a gamma draw), the samples are smooth functions of their parameters, so ordinary
autodiff gives the reparameterisation gradients.

Example:
    >>> from ember import random
    >>> random.cauchy(random.key(0), (2, 3)).shape
    (2, 3)
"""
from __future__ import annotations

import math

import numpy as np

from . import numpy as enp
from . import random as _r
from .fx.core import get_aval

__all__ = ["cauchy", "lognormal", "pareto", "rayleigh", "triangular", "wald", "weibull_min",
           "maxwell", "double_sided_maxwell", "generalized_normal"]


def _setup(fn, key, shape, dtype):
    k = _r._check_key(key, fn)
    shape = _r._shape(shape, fn)
    d = _r._float_dtype(dtype, fn)
    return k, shape, d, _r._compute_dtype(d)


def _params(fn, shape, cd, **params):
    """The parameters as `cd` arrays broadcast to `shape` (default: their broadcast
    shape; `_r._param_shape` checks a given one)."""
    ps = {n: enp.asarray(v).astype(cd) for n, v in params.items()}
    full = _r._param_shape(fn, shape, **{n: p.shape for n, p in ps.items()})
    return full, [enp.broadcast_to(p, full) for p in ps.values()]


def _out(x, d):
    return x if get_aval(x).dtype == d else x.astype(d)


def _pow(x, y):
    # exp(log x * y) on sampler_math, so jit and eager agree bit for bit (x >= 0)
    return _r._m("exp", _r._m("log", x) * y)


def cauchy(key, shape=(), dtype=None):
    """Standard Cauchy samples, tan(pi (u - 1/2)) with u uniform in [eps, 1).

    Example:
        >>> from ember import random
        >>> random.cauchy(random.key(0), (3,), "float16").dtype
        dtype('float16')
    """
    k, shape, d, cd = _setup("cauchy", key, shape, dtype)
    shape = () if shape is None else shape
    u = _r.uniform(k, shape, cd, np.finfo(cd).eps, 1.0)
    return _out(_r._m("tan", cd.type(math.pi) * (u - cd.type(0.5))), d)


def lognormal(key, sigma=np.float32(1), shape=None, dtype=None):
    """Log-normal samples exp(sigma * n), n standard normal; sigma broadcasts against
    `shape` (default: sigma's shape).

    Example:
        >>> from ember import random
        >>> x = random.lognormal(random.key(0), 0.5, (2,))
        >>> x.shape, bool((x > 0).all())
        ((2,), True)
    """
    k, shape, d, cd = _setup("lognormal", key, shape, dtype)
    shape, (sigma,) = _params("lognormal", shape, cd, sigma=sigma)
    return _out(_r._m("exp", _r.normal(k, shape, cd) * sigma), d)


def pareto(key, b, shape=None, dtype=None):
    """Pareto samples with shape parameter `b` (density b / x^(b+1) on x >= 1),
    exp(e / b) with e standard exponential; b broadcasts against `shape`.

    Example:
        >>> from ember import random
        >>> bool((random.pareto(random.key(0), 3.0, (100,)) >= 1).all())
        True
    """
    k, shape, d, cd = _setup("pareto", key, shape, dtype)
    shape, (b,) = _params("pareto", shape, cd, b=b)
    return _out(_r._m("exp", _r.exponential(k, shape, cd) / b), d)


def rayleigh(key, scale, shape=None, dtype=None):
    """Rayleigh samples, scale * sqrt(2 e) with e standard exponential (JAX's
    sqrt(-2 log u), with log1p so that u = 0 cannot give an infinity); scale broadcasts
    against `shape`.

    Example:
        >>> from ember import random
        >>> random.rayleigh(random.key(0), [1.0, 2.0]).shape
        (2,)
    """
    k, shape, d, cd = _setup("rayleigh", key, shape, dtype)
    shape, (scale,) = _params("rayleigh", shape, cd, scale=scale)
    e = _r.exponential(k, shape, cd)
    return _out(scale * enp.sqrt(cd.type(2.0) * e), d)


def triangular(key, left, mode, right, shape=None, dtype=None):
    """Triangular samples on [left, right] with peak at `mode`, by inverting the CDF;
    the parameters broadcast against `shape`.

    Example:
        >>> from ember import random
        >>> x = random.triangular(random.key(0), 0.0, 1.0, 3.0, (100,))
        >>> bool((x >= 0).all() and (x <= 3).all())
        True
    """
    k, shape, d, cd = _setup("triangular", key, shape, dtype)
    shape, (lo, mo, hi) = _params("triangular", shape, cd, left=left, mode=mode, right=right)
    u = _r.uniform(k, shape, cd)
    fc = (mo - lo) / (hi - lo)
    out1 = lo + enp.sqrt(u * (hi - lo) * (mo - lo))
    out2 = hi - enp.sqrt((cd.type(1.0) - u) * (hi - lo) * (hi - mo))
    return _out(enp.where(u < fc, out1, out2), d)


def wald(key, mean, shape=None, dtype=None):
    """Wald (inverse Gaussian, scale 1) samples with `mean` (Michael, Schucany and
    Haas 1976); mean broadcasts against `shape`.

    Example:
        >>> from ember import random
        >>> bool((random.wald(random.key(0), 2.0, (100,)) > 0).all())
        True
    """
    k, shape, d, cd = _setup("wald", key, shape, dtype)
    shape, (mean,) = _params("wald", shape, cd, mean=mean)
    kn, ku = _r.split(k)
    v = _r.normal(kn, shape, cd)
    z = _r.uniform(ku, shape, cd)
    a = mean * v * v
    # JAX's mean + mean a / 2 - mean sqrt(4 a + a^2) / 2 cancels to 0 for large a;
    # times its conjugate it is mean / (1 + a / 2 + sqrt(a + a^2 / 4)), the same root
    x = mean / (cd.type(1.0) + cd.type(0.5) * a + enp.sqrt(a + cd.type(0.25) * a * a))
    return _out(enp.where(z <= mean / (mean + x), x, mean * mean / x), d)


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull samples, scale * e^(1 / concentration) with e standard exponential.  The
    result has the broadcast shape of `shape`, scale and concentration (JAX's rule for
    this sampler; every element is an independent draw).

    Example:
        >>> from ember import random
        >>> random.weibull_min(random.key(0), 1.0, [0.5, 2.0]).shape
        (2,)
    """
    k, shape, d, cd = _setup("weibull_min", key, shape, dtype)
    shape = () if shape is None else shape
    ps = {"scale": enp.asarray(scale), "concentration": enp.asarray(concentration)}
    try:
        full = tuple(enp.broadcast_shapes(shape, *(tuple(p.shape) for p in ps.values())))
    except (TypeError, ValueError):
        got = ", ".join(f"{n} {tuple(p.shape)}" for n, p in ps.items())
        raise ValueError(f"random.weibull_min: shape {shape} and the parameter shapes ({got}) "
                         f"do not broadcast together") from None
    _, (scale, conc) = _params("weibull_min", full, cd, **ps)
    e = _r.exponential(k, full, cd)
    return _out(scale * _pow(e, cd.type(1.0) / conc), d)


def maxwell(key, shape=(), dtype=None):
    """Maxwell samples (the length of a standard normal 3-vector).

    Example:
        >>> from ember import random
        >>> random.maxwell(random.key(0), (2,)).shape
        (2,)
    """
    k, shape, d, cd = _setup("maxwell", key, shape, dtype)
    shape = () if shape is None else shape
    n = _r.normal(k, tuple(shape) + (3,), cd)
    return _out(enp.sqrt((n * n).sum(axis=-1)), d)


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Double-sided Maxwell samples, loc + scale * s * m with m Maxwell and s a random
    sign.  The result shape is `shape + broadcast(loc.shape, scale.shape)` (JAX's rule;
    for `shape=()` JAX repeats the parameter shape, giving (3, 3) for a loc of shape (3,),
    where this gives (3,)).

    Example:
        >>> from ember import random
        >>> random.double_sided_maxwell(random.key(0), 0.0, 1.0, (4,)).shape
        (4,)
    """
    k, shape, d, cd = _setup("double_sided_maxwell", key, shape, dtype)
    shape = () if shape is None else shape
    _, (loc, scale) = _params("double_sided_maxwell", None, cd, loc=loc, scale=scale)
    full = tuple(shape) + tuple(loc.shape)
    km, ks = _r.split(k)
    m = maxwell(km, full, cd)
    s = _r.rademacher(ks, full, cd)
    return _out(s * m * scale + loc, d)


def generalized_normal(key, p, shape=(), dtype=None):
    """Generalized normal samples with density proportional to exp(-|x|^p):
    s * g^(1/p) with g ~ Gamma(1/p) (in log space) and s a random sign; p broadcasts
    against `shape`.  Not differentiable in p.

    Example:
        >>> from ember import random
        >>> random.generalized_normal(random.key(0), 1.5, (2, 2)).shape
        (2, 2)
    """
    k, shape, d, cd = _setup("generalized_normal", key, shape, dtype)
    shape, (p,) = _params("generalized_normal", shape, cd, p=p)
    kg, ks = _r.split(k)
    lg = _r.loggamma(kg, cd.type(1.0) / p, shape, cd)
    s = _r.rademacher(ks, shape, cd)
    return _out(s * _r._m("exp", lg / p), d)
