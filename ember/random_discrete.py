"""`ember.random`'s counting samplers: poisson, binomial, geometric and multinomial
(a scan of conditional binomials, as in JAX).

Small means use exact sequential methods (Knuth's product of uniforms, sums of geometric
waiting times); large means Hörmann's transformed rejection (PTRS for Poisson, BTRS for
the binomial, 1993), each a vectorised while_loop in which every element draws from the
stream (iteration, index), so the result never depends on when the other elements were
accepted. The only transcendental steps (log, log1p, exp) go through `sampler_math` and
log k! is a table plus a Stirling series on them, so the samples are bit-identical eagerly,
under jit and under vmap.

Example:
    >>> from ember import random
    >>> random.poisson(random.key(0), 3.0, (4,)).dtype
    dtype('int32')
"""
from __future__ import annotations

import math

import numpy as np

from . import dtypes as _dt
from . import numpy as enp
from . import random as _r
from .fx.core import get_aval

__all__ = ["poisson", "binomial", "geometric", "multinomial"]

# log k! for k < 16, exactly rounded; beyond, Stirling's series (error < 1e-13 there)
_LOG_FACT = [math.lgamma(k + 1.0) for k in range(16)]


def _log_factorial(k):
    """log k! for non-negative integer-valued floats k (elementwise)."""
    cd = get_aval(k).dtype
    table = enp.asarray(np.array(_LOG_FACT, cd))
    small = k < 16
    ks = enp.where(small, k, cd.type(0.0)).astype(_dt.int32)
    x = enp.where(small, cd.type(16.0), k) + cd.type(1.0)  # lgamma(x), x = k + 1 >= 17
    ix = cd.type(1.0) / x
    ix2 = ix * ix
    series = ix * (cd.type(1 / 12) - ix2 * (cd.type(1 / 360) - ix2 * (
        cd.type(1 / 1260) - ix2 * cd.type(1 / 1680))))
    big = (x - cd.type(0.5)) * _r._m("log", x) - x + cd.type(0.5 * math.log(2 * math.pi)) + series
    return enp.where(small, table[ks], big)


def _rejection(k, shape, cd, propose):
    """Vectorised rejection: `propose(key, shape) -> (accepted, value)` is drawn with the
    key fold_in(k, i) at iteration i until every element has accepted once."""
    from .transforms.control_flow import while_loop

    def cond(state):
        return enp.logical_not(enp.all(state[1]))

    def body(state):
        i, done, val = state
        ok, v = propose(_r.fold_in(k, i), shape)
        val = enp.where(enp.logical_not(done) & ok, v, val)
        return i + np.uint32(1), done | ok, val

    init = (enp.asarray(np.uint32(0)), enp.zeros(shape, dtype=_dt.bool_),
            enp.zeros(shape, dtype=cd))
    return while_loop(cond, body, init)[2]


def _count_until(k, shape, cd, step):
    """Sequential counting: `step(key, shape, total) -> (total, stop)`; returns, per element,
    the number of steps taken before `stop` first held."""
    from .transforms.control_flow import while_loop

    def cond(state):
        return enp.logical_not(enp.all(state[1]))

    def body(state):
        i, done, count, total = state
        total, stop = step(_r.fold_in(k, i), shape, total)
        stop = done | stop
        count = enp.where(stop, count, count + cd.type(1.0))
        return i + np.uint32(1), stop, count, total

    init = (enp.asarray(np.uint32(0)), enp.zeros(shape, dtype=_dt.bool_),
            enp.zeros(shape, dtype=cd), enp.zeros(shape, dtype=cd))
    return while_loop(cond, body, init)[2]


def _compute(x):
    d = get_aval(x).dtype
    return _dt.float64 if d == _dt.float64 else _dt.float32


def _int_dtype(dtype, fn):
    d = _dt.canonicalize(dtype)
    if not _dt.is_integer(d):
        raise TypeError(f"random.{fn}: dtype must be an integer dtype, got {d}")
    return d


def _broadcast_params(fn, shape, **params):
    """(shape, compute dtype, the parameters broadcast to it): float64 when one is."""
    ps = {n: enp.asarray(p) for n, p in params.items()}
    cd = _dt.float64 if any(get_aval(p).dtype == _dt.float64 for p in ps.values()) else _dt.float32
    shape = _r._param_shape(fn, shape, **{n: p.shape for n, p in ps.items()})
    return shape, cd, [enp.broadcast_to(p.astype(cd), shape) for p in ps.values()]


def poisson(key, lam, shape=None, dtype=_dt.int32):
    """Poisson(lam) samples (integers, `dtype` int32 by default; lam broadcasts against
    `shape`). lam = 0 gives 0; a negative, infinite or NaN lam gives -1. Not differentiable.

    Example:
        >>> from ember import random
        >>> x = random.poisson(random.key(0), 4.0, (5000,))
        >>> bool(abs(float(x.mean()) - 4.0) < 0.15)
        True
    """
    from .transforms.misc import stop_gradient

    k = _r._check_key(key, "poisson")
    shape = _r._shape(shape, "poisson")
    d = _int_dtype(dtype, "poisson")
    shape, cd, (lam,) = _broadcast_params("poisson", shape, lam=lam)
    lam = stop_gradient(lam)
    k_small, k_large = _r.split(k)
    c = cd.type
    valid = (lam >= 0) & enp.isfinite(lam)
    small = (lam < 10) | enp.logical_not(valid)  # invalid ones must not enter the rejection loop
    lam = enp.where(valid, lam, c(0.0))
    # Knuth: the number of uniforms whose running product stays above exp(-lam)
    limit = _r._m("exp", -enp.where(small, lam, c(0.0)))

    def knuth(kk, shp, prod):
        prod = enp.where(prod == 0, c(1.0), prod)  # the first step starts from 1
        prod = prod * _r.uniform(kk, shp, cd)
        return prod, prod <= limit

    n_small = _count_until(k_small, shape, cd, knuth)
    # PTRS for lam >= 10 (the others run it on a dummy lam = 10 and are discarded)
    L = enp.where(small, c(10.0), lam)
    slam = enp.sqrt(L)
    loglam = _r._m("log", L)
    b = c(0.931) + c(2.53) * slam
    a = c(-0.059) + c(0.02483) * b
    log_inv_alpha = _r._m("log", c(1.1239) + c(1.1328) / (b - c(3.4)))
    vr = c(0.9277) - c(3.6224) / (b - c(2.0))

    def ptrs(kk, shp):
        ku, kv = _r.split(kk)
        u = _r.uniform(ku, shp, cd) - c(0.5)
        v = _r.uniform(kv, shp, cd)
        us = c(0.5) - enp.abs(u)
        kf = enp.floor((c(2.0) * a / us + b) * u + L + c(0.43))
        quick = (us >= c(0.07)) & (v <= vr)
        valid = (kf >= 0) & ((us >= c(0.013)) | (v <= us))
        ks = enp.where(kf >= 0, kf, c(0.0))
        lhs = _r._m("log", enp.where(v > 0, v, c(1.0))) + log_inv_alpha - _r._m(
            "log", a / (us * us) + b)
        rhs = -L + ks * loglam - _log_factorial(ks)
        return quick | (valid & (v > 0) & (lhs <= rhs)), kf

    n_large = _rejection(k_large, shape, cd, ptrs)
    out = enp.where(small, n_small, n_large)
    out = enp.where(lam == 0, c(0.0), out)
    out = enp.where(valid, out, c(-1.0))
    return out.astype(d)


def geometric(key, p, shape=None, dtype=_dt.int32):
    """Geometric(p) samples: the number of Bernoulli(p) trials up to and including the
    first success (support 1, 2, ...), by inversion: floor(log1p(-u) / log1p(-p)) + 1.

    Example:
        >>> from ember import random
        >>> x = random.geometric(random.key(0), 0.25, (4000,))
        >>> bool(x.min() >= 1 and abs(float(x.mean()) - 4.0) < 0.2)
        True
    """
    k = _r._check_key(key, "geometric")
    shape = _r._shape(shape, "geometric")
    d = _int_dtype(dtype, "geometric")
    shape, cd, (p,) = _broadcast_params("geometric", shape, p=p)
    u = _r.uniform(k, shape, cd)
    out = enp.floor(_r._m("log1p", -u) / _r._m("log1p", -p)) + cd.type(1.0)
    return out.astype(d)


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial(n, p) samples: successes in n trials of probability p (n and p broadcast
    against `shape`; float32 by default, as in JAX). n = 0 or p = 0 gives 0, p = 1 gives n;
    n < 0, an infinite n or p outside [0, 1] gives NaN. Not differentiable.

    Example:
        >>> from ember import random
        >>> x = random.binomial(random.key(0), 20.0, 0.3, (4000,))
        >>> bool(abs(float(x.mean()) - 6.0) < 0.2 and float(x.max()) <= 20)
        True
    """
    from .transforms.misc import stop_gradient

    k = _r._check_key(key, "binomial")
    shape = _r._shape(shape, "binomial")
    od = _r._float_dtype(dtype, "binomial")
    shape, cd, (n, p) = _broadcast_params("binomial", shape, n=n, p=p)
    n, p = stop_gradient(enp.floor(n)), stop_gradient(p)
    c = cd.type
    bad = (n < 0) | enp.logical_not(enp.isfinite(n)) | enp.logical_not((p >= 0) & (p <= 1))
    n = enp.where(bad, c(0.0), n)  # keeps invalid ones out of the rejection loop
    flip = p > c(0.5)
    q = enp.where(flip, c(1.0) - p, p)  # sample with q <= 1/2, then mirror
    q_ok = enp.where((q > 0) & (q <= 0.5), q, c(0.25))
    small = n * q_ok < 10
    k_small, k_large = _r.split(k)
    # inversion: count geometric waiting times while their sum stays <= n
    log1m = _r._m("log1p", -q_ok)
    n_small_in = enp.where(small, n, c(0.0))

    def waits(kk, shp, total):
        u = _r.uniform(kk, shp, cd, np.finfo(cd).tiny, 1.0)
        total = total + enp.floor(_r._m("log", u) / log1m) + c(1.0)
        return total, total > n_small_in

    x_small = _count_until(k_small, shape, cd, waits)
    # BTRS for n q >= 10 (others run it on dummy parameters and are discarded)
    N = enp.where(small, c(100.0), n)
    P = enp.where(small, c(0.25), q_ok)
    Q = c(1.0) - P
    spq = enp.sqrt(N * P * Q)
    b = c(1.15) + c(2.53) * spq
    a = c(-0.0873) + c(0.0248) * b + c(0.01) * P
    cc = N * P + c(0.5)
    vr = c(0.92) - c(4.2) / b
    log_alpha = _r._m("log", (c(2.83) + c(5.1) / b) * spq)
    lpq = _r._m("log", P / Q)
    m = enp.floor((N + c(1.0)) * P)
    h = _log_factorial(m) + _log_factorial(N - m)

    def btrs(kk, shp):
        ku, kv = _r.split(kk)
        u = _r.uniform(ku, shp, cd) - c(0.5)
        v = _r.uniform(kv, shp, cd)
        us = c(0.5) - enp.abs(u)
        kf = enp.floor((c(2.0) * a / us + b) * u + cc)
        inside = (kf >= 0) & (kf <= N)
        quick = (us >= c(0.07)) & (v <= vr)
        ks = enp.clip(kf, c(0.0), N)
        lhs = _r._m("log", enp.where(v > 0, v, c(1.0))) + log_alpha - _r._m(
            "log", a / (us * us) + b)
        rhs = h - _log_factorial(ks) - _log_factorial(N - ks) + (ks - m) * lpq
        return inside & (quick | ((v > 0) & (lhs <= rhs))), kf

    x_large = _rejection(k_large, shape, cd, btrs)
    x = enp.where(small, x_small, x_large)
    x = enp.where(flip, n - x, x)
    x = enp.where((q == 0) | (n == 0), enp.where(flip, n, c(0.0)), x)
    x = enp.where(bad, c(np.nan), x)
    return x.astype(od)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Multinomial counts of `n` trials over the categories of `p` (last axis; p need not
    be normalised): the result has `shape` (default p's shape; its last entry is the
    number of categories), n broadcasts against shape[:-1] and p against shape.  Counts
    are drawn category by category as Binomial(remaining n, p_i / sum_{j>=i} p_j) in a
    scan (`unroll` as in `lax.scan`).  Float counts (`dtype`, float32 by default), as in
    JAX; not differentiable.

    Example:
        >>> from ember import random
        >>> x = random.multinomial(random.key(0), 10.0, [0.2, 0.3, 0.5], shape=(2, 3))
        >>> x.shape, x.sum(-1).tolist()
        ((2, 3), [10.0, 10.0])
    """
    from .transforms.control_flow import scan
    from .transforms.misc import stop_gradient

    k = _r._check_key(key, "multinomial")
    shape = _r._shape(shape, "multinomial")
    od = _r._float_dtype(dtype, "multinomial")
    n, p = enp.asarray(n), enp.asarray(p)
    if p.ndim < 1:
        raise ValueError("random.multinomial: p must have at least one dimension (the "
                         f"categories), got shape {tuple(p.shape)}")
    cd = _dt.float64 if _dt.float64 in (get_aval(n).dtype, get_aval(p).dtype) else _dt.float32
    if shape is None:
        shape = tuple(p.shape)
    try:
        if not shape or shape[-1] != p.shape[-1]:
            raise ValueError
        n = enp.broadcast_to(stop_gradient(n.astype(cd)), shape[:-1])
        p = enp.broadcast_to(stop_gradient(p.astype(cd)), shape)
    except (TypeError, ValueError):
        raise ValueError(f"random.multinomial: shape {shape} must end with the {p.shape[-1]} "
                         f"categories of p and be a broadcast of n {tuple(n.shape)} (for "
                         f"shape[:-1]) and p {tuple(p.shape)}") from None
    ncat = shape[-1]
    pm = enp.moveaxis(p, -1, 0)
    # the tail sums by a Python loop: one addition order on every path
    tails, acc = [None] * ncat, enp.zeros(shape[:-1], cd)
    for i in reversed(range(ncat)):
        acc = acc + pm[i]
        tails[i] = acc
    tail = enp.stack(tails) if ncat else enp.zeros((0,) + tuple(shape[:-1]), cd)
    ratios = enp.clip(pm / enp.where(tail == 0, cd.type(1.0), tail), cd.type(0.0), cd.type(1.0))

    def step(remainder, ratio_key):
        ratio, kk = ratio_key
        count = binomial(kk, remainder, ratio, dtype=cd)
        return remainder - count, count

    _, counts = scan(step, n, (ratios, _r.split(k, ncat)), unroll=unroll)
    return enp.moveaxis(counts, 0, -1).astype(od)
