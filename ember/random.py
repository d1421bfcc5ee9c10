"""`ember.random`: explicit, counter-based pseudo-random numbers (threefry2x32) built
from integer primitives, so sampling is reproducible under `jit`, `vmap` and on
every backend.

Keys are plain arrays: a key is a `uint32[2]` array (`key(seed)`), a batch of
keys is `uint32[..., 2]` (what `split` returns).  Every sampler is a pure function
of its key: the same key gives the same numbers; use `split`/`fold_in` for new,
statistically independent keys and never reuse a key for two different draws.
Functions take a single key; map over a batch of keys with `ember.vmap`.

The generator is Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random
numbers: as easy as 1, 2, 3", SC 2011), computed with uint32 wrap-around
`add`/`xor`/shift primitives.  Random words for a draw of n values are the
threefry hashes of the counters 0..n-1 (the first half as the first word of each
block, the second half as the second), so the bits never depend on the backend.

Samplers turn the bits into floats with bit manipulation, + - * / and sqrt
(correctly rounded on every backend) and, where a distribution needs one, a
transcendental step (log, log1p, exp, erf, erf_inv) that every path evaluates
with the eager numpy implementation (`fx.prims.random.sampler_math`; compiled
programs run it as a library step rather than with their own vectorised
approximations, which can differ by an ulp).  So the same key gives bit-identical
samples eagerly, under jit and under vmap, for every dtype; on another machine
the transcendental step is whatever that machine's numpy computes.

Example:
    >>> from ember import random
    >>> k = random.key(0)
    >>> k1, k2 = random.split(k)
    >>> random.uniform(k1, (3,)).shape
    (3,)
"""
from __future__ import annotations

import math
import operator

import ml_dtypes
import numpy as np

from . import dtypes as _dt
from . import lax
from . import numpy as enp
from .fx.core import get_aval
from .fx.prims import random as _tf
from .fx.spelling import user_str

__all__ = ["key", "PRNGKey", "key_data", "split", "fold_in", "threefry2x32", "bits", "uniform",
           "normal", "truncated_normal", "bernoulli", "categorical", "randint", "permutation",
           "choice", "gumbel", "exponential", "laplace", "logistic", "gamma", "loggamma", "beta",
           "dirichlet", "rademacher", "set_threefry_impl", "clone", "key_impl"]

_U32 = _dt.uint32
_MASK32 = 0xFFFFFFFF


# --- keys ---------------------------------------------------------------------------

def _check_key(k, fn: str):
    k = enp.asarray(k)
    a = get_aval(k)
    if a.dtype != _U32 or a.shape != (2,):
        more = (" (a batch of keys: map over it with ember.vmap)"
                if a.dtype == _U32 and a.ndim > 1 and a.shape[-1] == 2 else "")
        raise TypeError(f"random.{fn}: expected a key, a uint32[2] array from random.key or "
                        f"random.split, got {user_str(a)}{more}")
    return k


def key(seed):
    """A new key from an integer seed (a Python int, or an integer scalar array that
    may be traced).  The key is the uint32[2] array `[seed >> 32, seed & 0xFFFFFFFF]`
    of the seed as a 64-bit two's-complement integer.

    Example:
        >>> key(42).tolist()
        [0, 42]
    """
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError("random.key: the seed must be an integer, not a bool")
    if isinstance(seed, (int, np.integer)):
        s = int(seed)
        if not -(1 << 63) <= s < (1 << 64):
            raise OverflowError(f"random.key: seed {s} does not fit in 64 bits")
        s &= (1 << 64) - 1
        return enp.asarray(np.array([s >> 32, s & _MASK32], np.uint32))
    s = enp.asarray(seed)
    a = get_aval(s)
    if a.shape != () or not _dt.is_integer(a.dtype):
        raise TypeError(f"random.key: the seed must be an integer scalar, got {user_str(a)}")
    if a.dtype.itemsize == 8:
        u = lax.convert_element_type(s, _dt.uint64) if a.dtype != _dt.uint64 else s
        hi = lax.convert_element_type(lax.shift_right_logical(u, np.uint64(32)), _U32)
        lo = lax.convert_element_type(lax.bitwise_and(u, np.uint64(_MASK32)), _U32)
    else:
        lo = lax.convert_element_type(s, _U32)
        if _dt.kind(a.dtype) == "u":
            hi = enp.asarray(np.uint32(0))
        else:
            hi = enp.where(s < 0, np.uint32(_MASK32), np.uint32(0))
    return enp.stack([hi, lo])


PRNGKey = key


def key_data(k):
    """The uint32 words of a key (keys are already plain arrays, so this is the identity).

    Example:
        >>> key_data(key(1)).tolist()
        [0, 1]
    """
    return enp.asarray(k)


def clone(key):
    """A copy of `key` (JAX's clone, for keys that are consumed; ember's keys are plain
    arrays, so this is the identity after checking it is a key).

    Example:
        >>> clone(key(3)).tolist()
        [0, 3]
    """
    return _check_key(key, "clone")


def key_impl(key):
    """The name of the generator behind `key`: always "threefry2x32" in ember.

    Example:
        >>> key_impl(key(0))
        'threefry2x32'
    """
    _check_key(key, "key_impl")
    return "threefry2x32"


_THREEFRY_IMPL = ["composite"]


def set_threefry_impl(name: str) -> str:
    """Choose how threefry is staged: "composite" (default: ~130 uint32
    add/xor/shift/or equations, which every backend compiles and fuses like any other
    integer arithmetic) or "primitive" (one `threefry2x32` equation run by its numpy
    implementation: shorter graphs and faster eager draws; a backend without
    library steps needs the composite).  Both give bit-identical results.  Returns
    the previous setting.

    Example:
        >>> old = set_threefry_impl("primitive"); _ = set_threefry_impl(old)
    """
    if name not in ("primitive", "composite"):
        raise ValueError(f"set_threefry_impl: expected 'primitive' or 'composite', got {name!r}")
    old = _THREEFRY_IMPL[0]
    _THREEFRY_IMPL[0] = name
    return old


def threefry2x32(key_words, x0, x1):
    """Threefry-2x32 (20 rounds) of the counter pairs `(x0, x1)` (uint32 arrays of one
    shape) under the key `key_words` (uint32[2]); returns the two output word arrays.

    Example:
        >>> import numpy as np
        >>> y0, y1 = threefry2x32(np.zeros(2, np.uint32), np.uint32(0), np.uint32(0))
        >>> hex(int(y0)), hex(int(y1))
        ('0x6b200159', '0x99ba4efe')
    """
    kw = enp.asarray(key_words)
    x0, x1 = enp.asarray(x0), enp.asarray(x1)
    for v, what in ((kw, "key"), (x0, "x0"), (x1, "x1")):
        if get_aval(v).dtype != _U32:
            raise TypeError(f"threefry2x32: {what} must be uint32, got {user_str(get_aval(v))}")
    if get_aval(kw).shape != (2,) or get_aval(x0).shape != get_aval(x1).shape:
        raise TypeError(f"threefry2x32: needs a uint32[2] key and two counter arrays of one shape, "
                        f"got {user_str(get_aval(kw))}, {user_str(get_aval(x0))}, {user_str(get_aval(x1))}")
    k0 = lax.reshape(lax.slice(kw, (0,), (1,)), ())
    k1 = lax.reshape(lax.slice(kw, (1,), (2,)), ())
    fn = _tf.threefry2x32 if _THREEFRY_IMPL[0] == "primitive" else _tf.threefry2x32_composite
    y0, y1 = fn(k0, k1, x0, x1)
    return y0, y1


def _words(k, n: int):
    """n random uint32 words: the hashes of the counters 0..n-1."""
    if n == 0:
        return lax.iota(_U32, (0,), 0)
    half = (n + 1) // 2
    c = lax.iota(_U32, (half,), 0)
    y0, y1 = threefry2x32(k, c, lax.add(c, np.uint32(half)))
    out = lax.concatenate([y0, y1], 0)
    return out if 2 * half == n else lax.slice(out, (0,), (n,))


def split(key, num: int = 2):
    """`num` new keys (a uint32[num, 2] array) derived from `key`; unpack or index it.

    Example:
        >>> k1, k2 = split(key(0))
        >>> split(key(0), 4).shape
        (4, 2)
    """
    k = _check_key(key, "split")
    num = _static_size(num, "split", "num")
    return lax.reshape(_words(k, 2 * num), (num, 2))


def fold_in(key, data):
    """A new key from `key` and an integer (Python or traced scalar), e.g. a step
    number or a device index: `fold_in(k, i)` differ for different `i`.

    Example:
        >>> fold_in(key(0), 1).tolist() != fold_in(key(0), 2).tolist()
        True
    """
    k = _check_key(key, "fold_in")
    if isinstance(data, (int, np.integer)) and not isinstance(data, (bool, np.bool_)):
        d = enp.asarray(np.uint32(int(data) & _MASK32))
    else:
        d = enp.asarray(data)
        a = get_aval(d)
        if a.shape != () or not (_dt.is_integer(a.dtype)):
            raise TypeError(f"random.fold_in: data must be an integer scalar, got {user_str(a)}")
        d = lax.convert_element_type(d, _U32)
    y0, y1 = threefry2x32(k, lax.reshape(np.uint32(0), (1,)), lax.reshape(d, (1,)))
    return lax.concatenate([y0, y1], 0)


# --- helpers ------------------------------------------------------------------------

def _static_size(n, fn, what):
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"random.{fn}: {what} must be a static Python int, got {n!r}")
    if n < 0:
        raise ValueError(f"random.{fn}: {what} must be >= 0, got {n}")
    return int(n)


def _shape(shape, fn):
    if shape is None:
        return None
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        shape = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"random.{fn}: shape must be a tuple of static ints, got {shape!r}") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"random.{fn}: negative dimension in shape {shape}")
    return shape


def _param_shape(fn, shape, **shapes):
    """The result shape of sampler `fn` for parameters of the given shapes: their
    broadcast, or `shape` when given, which (as in JAX) must itself be that
    broadcast with `shape` included; else a ValueError naming the sampler."""
    shapes = {n: tuple(s) for n, s in shapes.items()}
    try:
        full = tuple(enp.broadcast_shapes(*shapes.values(), *(() if shape is None else (shape,))))
    except (TypeError, ValueError):
        full = None
    if full is None or (shape is not None and full != tuple(shape)):
        got = ", ".join(f"{n} {s}" for n, s in shapes.items())
        if shape is None:
            raise ValueError(f"random.{fn}: the parameter shapes ({got}) do not broadcast together")
        raise ValueError(f"random.{fn}: shape {tuple(shape)} is not a broadcast of the parameter "
                         f"shapes ({got}); pass shape=None or a shape they broadcast to")
    return full


def _float_dtype(dtype, fn):
    d = _dt.canonicalize(dtype if dtype is not None else _dt.default_float)
    if not _dt.is_float(d):
        raise TypeError(f"random.{fn}: dtype must be a floating-point dtype, got {d}")
    return d


def _compute_dtype(d):
    """Distributions computed through transcendental functions draw in at least float32."""
    return _dt.float32 if d.itemsize < 4 else d


def _m(fn, x):
    """The transcendental step of a sampler: `fn(x)` evaluated by the eager (numpy)
    implementation on every path (`fx.prims.random.sampler_math`), so a key gives
    bit-identical samples eagerly, under jit and under vmap."""
    return _tf.sampler_math(fn, x)


def _logaddexp(a, b):
    # ember.numpy.logaddexp's formula, on _m's functions
    cd = get_aval(a).dtype
    m = enp.maximum(a, b)
    r = m + _m("log1p", _m("exp", -enp.abs(a - b)))
    return enp.where(a == b, m + cd.type(math.log(2.0)), r)


def _size(shape):
    n = 1
    for s in shape:
        n *= s
    return n


# --- raw bits -----------------------------------------------------------------------

def bits(key, shape=(), dtype=_dt.uint32):
    """Uniformly random unsigned integers of `dtype` (uint8/16/32/64) with `shape`.

    Example:
        >>> bits(key(0), (2,)).dtype
        dtype('uint32')
    """
    k = _check_key(key, "bits")
    shape = _shape(shape, "bits")
    d = _dt.canonicalize(dtype)
    if _dt.kind(d) != "u":
        raise TypeError(f"random.bits: dtype must be an unsigned integer dtype, got {d}")
    n = _size(shape)
    if d == _dt.uint64:
        w = _words(k, 2 * n)
        hi = lax.convert_element_type(lax.slice(w, (0,), (n,)), _dt.uint64)
        lo = lax.convert_element_type(lax.slice(w, (n,), (2 * n,)), _dt.uint64)
        out = lax.bitwise_or(lax.shift_left(hi, np.uint64(32)), lo)
    else:
        w = _words(k, n)
        # Narrow types keep the low bits of each word (every bit of a word is uniform).
        mask = np.uint32((1 << (8 * d.itemsize)) - 1)
        out = w if d == _U32 else lax.convert_element_type(lax.bitwise_and(w, mask), d)
    return lax.reshape(out, shape)


# --- continuous distributions -------------------------------------------------------

def _unit_float(k, shape, d):
    """Uniform floats in [0, 1) of dtype `d` from the top mantissa bits."""
    fi = ml_dtypes.finfo(d)
    nbits, nmant = d.itemsize * 8, int(fi.nmant)
    ud = {16: _dt.uint16, 32: _dt.uint32, 64: _dt.uint64}[nbits]
    b = bits(k, shape, ud)
    one = np.array(1.0, d).view(ud)[()]
    m = lax.bitwise_or(lax.shift_right_logical(b, ud.type(nbits - nmant)), one)
    return lax.sub(lax.bitcast_convert_type(m, d), d.type(1.0))


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform floats in [minval, maxval) (minval/maxval broadcast against `shape`).

    Example:
        >>> x = uniform(key(0), (1000,))
        >>> bool((x >= 0).all() and (x < 1).all())
        True
    """
    k = _check_key(key, "uniform")
    shape = _shape(shape, "uniform")
    d = _float_dtype(dtype, "uniform")
    lo = enp.astype(enp.asarray(minval), d)
    hi = enp.astype(enp.asarray(maxval), d)
    if shape is None:
        shape = tuple(enp.broadcast_shapes(lo.shape, hi.shape))
    f = _unit_float(k, shape, d)
    lo_b, hi_b = enp.broadcast_to(lo, shape), enp.broadcast_to(hi, shape)
    return enp.maximum(lo_b, f * (hi_b - lo_b) + lo_b)


def normal(key, shape=(), dtype=None):
    """Standard normal samples (inverse-CDF: sqrt(2) * erfinv(u), u uniform in (-1, 1)).

    Example:
        >>> float(abs(normal(key(0), (10000,)).mean())) < 0.05
        True
    """
    k = _check_key(key, "normal")
    shape = _shape(shape, "normal")
    d = _float_dtype(dtype, "normal")
    cd = _compute_dtype(d)
    lo = np.nextafter(cd.type(-1.0), cd.type(0.0))
    u = uniform(k, shape, cd, lo, 1.0)
    out = lax.mul(cd.type(math.sqrt(2.0)), _m("erf_inv", u))
    return out if cd == d else lax.convert_element_type(out, d)


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Standard normal samples conditioned on lower < x < upper (inverse CDF).

    Example:
        >>> x = truncated_normal(key(0), -1.0, 2.0, (500,))
        >>> bool((x > -1).all() and (x < 2).all())
        True
    """
    k = _check_key(key, "truncated_normal")
    shape = _shape(shape, "truncated_normal")
    d = _float_dtype(dtype, "truncated_normal")
    cd = _compute_dtype(d)
    lo = enp.astype(enp.asarray(lower), cd)
    hi = enp.astype(enp.asarray(upper), cd)
    shape = _param_shape("truncated_normal", shape, lower=lo.shape, upper=hi.shape)
    s2 = cd.type(math.sqrt(2.0))
    a = _m("erf", lo / s2)
    b = _m("erf", hi / s2)
    u = uniform(k, shape, cd, a, b)
    out = s2 * _m("erf_inv", u)
    # Rounding at the ends of the erf range can step outside (lower, upper).
    out = enp.clip(out, enp.nextafter(lo, enp.asarray(np.inf, cd)),
                   enp.nextafter(hi, enp.asarray(-np.inf, cd)))
    return out if cd == d else enp.astype(out, d)


def gumbel(key, shape=(), dtype=None):
    """Standard Gumbel samples, -log(-log(u)).

    Example:
        >>> gumbel(key(0), (2, 3)).shape
        (2, 3)
    """
    k = _check_key(key, "gumbel")
    shape = _shape(shape, "gumbel")
    d = _float_dtype(dtype, "gumbel")
    cd = _compute_dtype(d)
    u = uniform(k, shape, cd, np.finfo(cd).tiny if cd != _dt.bfloat16 else 1e-38, 1.0)
    out = -_m("log", -_m("log", u))
    return out if cd == d else enp.astype(out, d)


def exponential(key, shape=(), dtype=None):
    """Standard exponential samples (rate 1), -log1p(-u).

    Example:
        >>> bool((exponential(key(0), (100,)) >= 0).all())
        True
    """
    k = _check_key(key, "exponential")
    shape = _shape(shape, "exponential")
    d = _float_dtype(dtype, "exponential")
    cd = _compute_dtype(d)
    out = -_m("log1p", -uniform(k, shape, cd))
    return out if cd == d else enp.astype(out, d)


def laplace(key, shape=(), dtype=None):
    """Standard Laplace samples (location 0, scale 1).

    Example:
        >>> laplace(key(0), (3,)).shape
        (3,)
    """
    k = _check_key(key, "laplace")
    shape = _shape(shape, "laplace")
    d = _float_dtype(dtype, "laplace")
    cd = _compute_dtype(d)
    u = uniform(k, shape, cd, np.nextafter(cd.type(-1.0), cd.type(0.0)), 1.0)
    out = enp.sign(u) * -_m("log1p", -enp.abs(u))
    return out if cd == d else enp.astype(out, d)


def logistic(key, shape=(), dtype=None):
    """Standard logistic samples, log(u / (1 - u)).

    Example:
        >>> logistic(key(0), (3,)).shape
        (3,)
    """
    k = _check_key(key, "logistic")
    shape = _shape(shape, "logistic")
    d = _float_dtype(dtype, "logistic")
    cd = _compute_dtype(d)
    u = uniform(k, shape, cd, np.finfo(cd).tiny, 1.0)
    out = _m("log", u) - _m("log1p", -u)
    return out if cd == d else enp.astype(out, d)


def rademacher(key, shape=(), dtype=_dt.int32):
    """Uniform samples from {-1, +1}.

    Example:
        >>> sorted(set(rademacher(key(0), (50,)).tolist()))
        [-1, 1]
    """
    k = _check_key(key, "rademacher")
    shape = _shape(shape, "rademacher")
    b = lax.convert_element_type(lax.shift_right_logical(bits(k, shape), np.uint32(31)), _dt.int32)
    return enp.astype(2 * b - 1, dtype)


# --- discrete distributions ---------------------------------------------------------

def bernoulli(key, p=0.5, shape=None):
    """Boolean samples that are True with probability `p` (broadcast against `shape`).

    Example:
        >>> bernoulli(key(0), 0.3, (4,)).dtype
        dtype('bool')
    """
    k = _check_key(key, "bernoulli")
    shape = _shape(shape, "bernoulli")
    p = enp.asarray(p)
    pd = get_aval(p).dtype
    d = pd if _dt.is_float(pd) and pd.itemsize >= 4 else _dt.float32
    p = enp.astype(p, d)
    shape = _param_shape("bernoulli", shape, p=p.shape)
    return uniform(k, shape, d) < p


def randint(key, shape, minval, maxval, dtype=_dt.int32):
    """Uniform integers in [minval, maxval) (broadcast against `shape`); when
    maxval <= minval the result is minval.  Bounds outside `dtype`'s range are clipped
    to it (so `maxval=256` with uint8 includes 255).

    Example:
        >>> x = randint(key(0), (100,), 0, 10)
        >>> bool((x >= 0).all() and (x < 10).all())
        True
    """
    k = _check_key(key, "randint")
    shape = _shape(shape, "randint")
    d = _dt.canonicalize(dtype)
    if not _dt.is_integer(d):
        raise TypeError(f"random.randint: dtype must be an integer dtype, got {d}")
    info = np.iinfo(d)
    unsigned = _dt.kind(d) == "u"
    # Work in a 64-bit type: uint64 for unsigned dtypes, int64 otherwise.
    wd = _dt.uint64 if unsigned else _dt.int64

    def bound(v, extra):
        if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
            v = min(max(int(v), int(info.min)), int(info.max) + extra)
            if v > np.iinfo(wd).max:
                v = int(np.iinfo(wd).max)
            return enp.asarray(np.array(v, wd))
        v = enp.asarray(v)
        if not _dt.is_integer(get_aval(v).dtype):
            raise TypeError(f"random.randint: minval/maxval must be integers, got {user_str(get_aval(v))}")
        return enp.astype(v, wd)

    lo, hi = bound(minval, 0), bound(maxval, 1)
    shape = _param_shape("randint", shape, minval=lo.shape, maxval=hi.shape)
    lo, hi = enp.broadcast_to(lo, shape), enp.broadcast_to(hi, shape)
    r = bits(k, shape, _dt.uint64)
    if unsigned:
        span = enp.where(hi > lo, hi - lo, np.uint64(1))
        off = lax.rem(r, span)
        out = lo + off
    else:
        diff = hi - lo
        span = enp.where(diff > 0, lax.bitcast_convert_type(diff, _dt.uint64), np.uint64(1))
        off = lax.bitcast_convert_type(lax.rem(r, span), _dt.int64)
        out = lo + off
    return lax.convert_element_type(out, d)


def categorical(key, logits, axis=-1, shape=None):
    """Indices drawn from the categorical distributions given by unnormalised
    log-probabilities `logits` along `axis` (Gumbel-max).  `shape` defaults to the
    batch shape of `logits`; a given `shape` must end with it.

    Example:
        >>> import ember.numpy as enp
        >>> int(categorical(key(0), enp.asarray([-50.0, -50.0, 0.0])))
        2
    """
    k = _check_key(key, "categorical")
    shape = _shape(shape, "categorical")
    logits = enp.asarray(logits)
    nd = logits.ndim
    if nd == 0:
        raise ValueError("random.categorical: logits must have at least one dimension")
    ax = axis % nd
    lg = enp.moveaxis(logits, ax, -1)
    batch = tuple(lg.shape[:-1])
    if shape is None:
        shape = batch
    elif tuple(shape[len(shape) - len(batch):]) != batch:
        raise ValueError(f"random.categorical: shape {shape} must end with the batch shape "
                         f"{batch} of logits")
    ld = get_aval(lg).dtype
    cd = ld if _dt.is_float(ld) and ld.itemsize >= 4 else _dt.float32
    lg = enp.astype(lg, cd)
    full = tuple(shape) + (lg.shape[-1],)
    g = gumbel(k, full, cd)
    return enp.argmax(enp.broadcast_to(lg, full) + g, axis=-1).astype(_dt.int32)


def _sort_rounds(n):
    # Ties among n uint32 sort keys happen with probability ~ n^2 / 2^33; each extra
    # round of sorting by fresh keys multiplies the chance of a biased tie by ~ n / 2^32.
    if n <= 1:
        return 1
    return max(1, math.ceil(3 * math.log(n) / math.log(2.0 ** 32)))


def permutation(key, x, axis=0, independent=False):
    """A random permutation of `range(x)` (x an int) or of `x` along `axis`; with
    `independent=True` each slice along `axis` is shuffled independently.

    Example:
        >>> sorted(permutation(key(0), 5).tolist())
        [0, 1, 2, 3, 4]
    """
    k = _check_key(key, "permutation")
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        n = _static_size(x, "permutation", "x")
        arr = enp.arange(n, dtype=_dt.int32)
        ax = 0
    else:
        arr = enp.asarray(x)
        if arr.ndim == 0:
            raise ValueError("random.permutation: x must be an int or an array with >= 1 dimension")
        ax = axis % arr.ndim
        n = arr.shape[ax]
    if independent and arr.ndim > 1:
        vals = arr
        for _ in range(_sort_rounds(n)):
            k, sub = split(k)
            sk = bits(sub, tuple(arr.shape))
            _, vals = lax.sort_key_val(sk, vals, dimension=ax)
        return vals
    perm = lax.iota(_dt.int32, (n,), 0)
    for _ in range(_sort_rounds(n)):
        k, sub = split(k)
        _, perm = lax.sort_key_val(bits(sub, (n,)), perm)
    return enp.take(arr, perm, axis=ax)


def _log_prob(p):
    pd = get_aval(p).dtype
    p = p if _dt.is_float(pd) and pd.itemsize >= 4 else enp.astype(p, _dt.float32)
    pos = p > 0
    return enp.where(pos, _m("log", enp.where(pos, p, 1.0)), -np.inf)


def choice(key, a, shape=(), replace=True, p=None, axis=0):
    """Samples from `a` (an int n meaning `arange(n)`, or an array along `axis`), with or
    without replacement, uniformly or with probabilities `p`.

    Example:
        >>> x = choice(key(0), 5, (3,), replace=False)
        >>> len(set(x.tolist()))
        3
    """
    k = _check_key(key, "choice")
    shape = _shape(shape, "choice")
    if isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_)):
        n = _static_size(a, "choice", "a")
        arr = None
    else:
        arr = enp.asarray(a)
        if arr.ndim == 0:
            raise ValueError("random.choice: a must be an int or an array with >= 1 dimension")
        axis = axis % arr.ndim
        n = arr.shape[axis]
    m = _size(shape)
    if n == 0 and m > 0:
        raise ValueError("random.choice: cannot take a non-empty sample from an empty population")
    if p is not None:
        p = enp.asarray(p)
        if p.shape != (n,):
            raise ValueError(f"random.choice: p must have shape ({n},), got {p.shape}")
    if replace:
        if p is None:
            idx = randint(k, shape, 0, n)
        else:
            idx = categorical(k, _log_prob(p), shape=shape)
    else:
        if m > n:
            raise ValueError(f"random.choice: cannot take {m} samples without replacement from a "
                             f"population of {n}")
        if p is None:
            idx = lax.slice(permutation(k, n), (0,), (m,))
        else:
            lp = _log_prob(p)
            # Gumbel-top-k draws m distinct items with the successive-sampling law.
            g = lp + gumbel(k, (n,), get_aval(lp).dtype)
            idx = lax.top_k(g, m)[1].astype(_dt.int32) if m > 0 else lax.iota(_dt.int32, (0,), 0)
        idx = lax.reshape(idx, shape)
    if arr is None:
        return idx
    return enp.take(arr, idx, axis=axis)


# --- gamma family -------------------------------------------------------------------

def _marsaglia_tsang(k, alpha):
    """Gamma(alpha) samples for alpha >= 1 by Marsaglia and Tsang (2000), as one
    vectorised while_loop: every element draws from the stream (iteration, index), so
    the result never depends on when the other elements were accepted."""
    from .transforms.control_flow import while_loop
    cd = get_aval(alpha).dtype
    shape = tuple(alpha.shape)
    d = alpha - cd.type(1.0 / 3.0)
    c = cd.type(1.0) / enp.sqrt(cd.type(9.0) * d)

    def cond(state):
        _, done, _ = state
        return enp.logical_not(enp.all(done))

    def body(state):
        i, done, val = state
        kx, ku = split(fold_in(k, i))
        x = normal(kx, shape, cd)
        u = uniform(ku, shape, cd)
        v = cd.type(1.0) + c * x
        v = v * v * v
        safe_v = enp.where(v > 0, v, cd.type(1.0))
        ok = (v > 0) & (_m("log", u) < cd.type(0.5) * x * x + d - d * safe_v + d * _m("log", safe_v))
        val = enp.where(enp.logical_not(done) & ok, d * safe_v, val)
        return i + np.uint32(1), done | ok, val

    init = (enp.asarray(np.uint32(0)), enp.zeros(shape, dtype=_dt.bool_), enp.zeros(shape, dtype=cd))
    return while_loop(cond, body, init)[2]


def loggamma(key, a, shape=None, dtype=None):
    """log of Gamma(a, 1) samples, accurate for small `a` where the samples underflow.

    Example:
        >>> loggamma(key(0), 0.01, (3,)).shape
        (3,)
    """
    return _loggamma(key, a, shape, dtype, "loggamma")


def _loggamma(key, a, shape, dtype, _name):
    """loggamma, its errors naming the public sampler `_name`."""
    from .transforms.misc import stop_gradient
    k = _check_key(key, _name)
    shape = _shape(shape, _name)
    d = _float_dtype(dtype, _name)
    cd = _compute_dtype(d)
    a = stop_gradient(enp.astype(enp.asarray(a), cd))
    shape = _param_shape(_name, shape, a=a.shape)
    a = enp.broadcast_to(a, shape)
    k1, k2 = split(k)
    boost = a < 1
    # alpha < 1: Gamma(a) = Gamma(a + 1) * U^(1/a) (Marsaglia & Tsang, section 6).
    g = _marsaglia_tsang(k1, enp.where(boost, a + cd.type(1.0), a))
    u = uniform(k2, shape, cd, np.finfo(cd).tiny, 1.0)
    out = _m("log", g) + enp.where(boost, _m("log", u) / enp.where(boost, a, cd.type(1.0)), cd.type(0.0))
    out = enp.where(a > 0, out, enp.where(a == 0, -np.inf, np.nan))
    return out if cd == d else enp.astype(out, d)


def gamma(key, a, shape=None, dtype=None):
    """Gamma(a, 1) samples (Marsaglia-Tsang with a vectorised while_loop, so it works
    under jit and vmap).  Not differentiable with respect to `a` (the gradient is zero).

    Example:
        >>> float(gamma(key(0), 3.0, (4000,)).mean()) > 2.8
        True
    """
    d = _float_dtype(dtype, "gamma")
    out = _m("exp", _loggamma(key, a, shape, _compute_dtype(d), "gamma"))
    return out if out.dtype == d else enp.astype(out, d)


def beta(key, a, b, shape=None, dtype=None):
    """Beta(a, b) samples as X / (X + Y), X ~ Gamma(a), Y ~ Gamma(b), in log space.

    Example:
        >>> x = beta(key(0), 2.0, 5.0, (100,))
        >>> bool((x >= 0).all() and (x <= 1).all())
        True
    """
    k = _check_key(key, "beta")
    shape = _shape(shape, "beta")
    d = _float_dtype(dtype, "beta")
    cd = _compute_dtype(d)
    a = enp.astype(enp.asarray(a), cd)
    b = enp.astype(enp.asarray(b), cd)
    shape = _param_shape("beta", shape, a=a.shape, b=b.shape)
    ka, kb = split(k)
    lx = loggamma(ka, enp.broadcast_to(a, shape), shape, cd)
    ly = loggamma(kb, enp.broadcast_to(b, shape), shape, cd)
    out = _m("exp", lx - _logaddexp(lx, ly))
    return out if cd == d else enp.astype(out, d)


def dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet(alpha) samples; the last axis of the result indexes the categories.
    `shape` is the batch shape (default: alpha's leading dimensions).

    Example:
        >>> x = dirichlet(key(0), [1.0, 2.0, 3.0], (5,))
        >>> x.shape
        (5, 3)
    """
    k = _check_key(key, "dirichlet")
    shape = _shape(shape, "dirichlet")
    d = _float_dtype(dtype, "dirichlet")
    cd = _compute_dtype(d)
    alpha = enp.astype(enp.asarray(alpha), cd)
    if alpha.ndim < 1:
        raise ValueError("random.dirichlet: alpha must have at least one dimension")
    shape = _param_shape("dirichlet", shape, alpha_batch=alpha.shape[:-1])
    full = tuple(shape) + (alpha.shape[-1],)
    lg = loggamma(k, enp.broadcast_to(alpha, full), full, cd)
    out = _m("exp", lg - enp.max(lg, axis=-1, keepdims=True))
    out = out / enp.sum(out, axis=-1, keepdims=True)
    return out if cd == d else enp.astype(out, d)


# --- samplers in their own files (one family each) -----------------------------------

from .random_continuous import (cauchy, double_sided_maxwell, generalized_normal,  # noqa: E402
                                lognormal, maxwell, pareto, rayleigh, triangular, wald,
                                weibull_min)
from .random_discrete import binomial, geometric, multinomial, poisson  # noqa: E402
from .random_gamma_family import chisquare, f, t  # noqa: E402
from .random_multivariate import ball, multivariate_normal, orthogonal  # noqa: E402

__all__ += ["poisson", "binomial", "geometric", "multinomial", "chisquare", "t", "f",
            "multivariate_normal", "orthogonal", "ball", "cauchy", "lognormal", "pareto",
            "rayleigh", "triangular", "wald", "weibull_min", "maxwell", "double_sided_maxwell",
            "generalized_normal"]
