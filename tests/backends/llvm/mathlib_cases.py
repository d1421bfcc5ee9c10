"""Inputs, references and ulp measurement for the mathlib tests (shared with
the error-table script in the benchmark)."""

from __future__ import annotations

import functools
import math

import mpmath
import numpy as np
import scipy.special as sps

F32_TINY = np.float32(1.4e-45)


def ulp_error(got: np.ndarray, ref, dtype) -> np.ndarray:
    """|got - ref| in units of the last place of ``dtype`` at ``ref``.

    ``ref`` is the double-double (hi, lo) from ``reference`` (or a float64
    array, taken as exact).  Non-finite references (after rounding to
    ``dtype``) must match exactly (same NaN-ness, same infinity); a mismatch
    counts as an infinite error.
    """
    dt = np.dtype(dtype)
    p, emin = (24, -149) if dt == np.float32 else (53, -1074)
    hi, lo = ref if isinstance(ref, tuple) else (ref, np.zeros(np.shape(ref)))
    got = got.astype(np.float64)
    ref = np.asarray(hi, dtype=np.float64)
    lo = np.asarray(lo, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        ref_t = ref.astype(dt).astype(np.float64)
    err = np.zeros(ref.shape)
    fin = np.isfinite(ref_t)
    nonfin_bad = ~fin & ~((np.isnan(ref_t) & np.isnan(got)) | (ref_t == got))
    err[nonfin_bad] = np.inf
    g, r, l = got[fin], ref[fin], lo[fin]
    e = np.frexp(np.abs(r))[1]
    ulp = np.ldexp(1.0, np.maximum(e - p, emin))
    with np.errstate(invalid="ignore", over="ignore"):
        # g - r is exact when g is within a factor of two of r (Sterbenz),
        # the only case where the low part matters
        d = np.abs((g - r) - l) / ulp
    d[~np.isfinite(g)] = np.inf
    err[fin] = d
    return err


def select(ref, mask):
    """The entries ``mask`` of a double-double reference (hi, lo)."""
    return ref[0][mask], ref[1][mask]


def _logu(rng, n, lo, hi, signed=True):
    mag = np.exp(rng.uniform(np.log(lo), np.log(hi), n))
    if signed:
        mag *= rng.choice([-1.0, 1.0], n)
    return mag


def specials(dtype):
    dt = np.dtype(dtype)
    fi = np.finfo(dt)
    sub = fi.smallest_subnormal
    return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, sub, -sub, 3 * sub, fi.tiny, -fi.tiny,
                     fi.tiny / 2, fi.max, -fi.max, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0], dtype=dt)


def _around(anchors, dtype, steps=2):
    """Each anchor rounded to ``dtype`` and its neighbours up to ``steps``
    ulps either side (the hard cases sit exactly at thresholds)."""
    a = np.asarray(anchors, np.float64)
    with np.errstate(over="ignore"):
        a = a[np.isfinite(a)].astype(dtype)
    out = [a]
    up, down = a.copy(), a.copy()
    for _ in range(steps):
        # stepping past the largest finite value gives inf, kept on purpose
        with np.errstate(over="ignore"):
            up = np.nextafter(up, np.asarray(np.inf, dtype))
            down = np.nextafter(down, np.asarray(-np.inf, dtype))
        out += [up, down]
    return np.concatenate(out)


# thresholds where a result overflows, underflows, goes subnormal or
# saturates, per function, as (float32, float64) anchors
_THRESHOLDS = {
    "exp": ([88.72284, -87.33655, -103.97208, -103.2789], [709.782712893384, -708.3964185322641,
                                                          -745.1332191019412, -744.44007192138]),
    "exp2": ([128, -126, -149, -150, 127.5], [1024, -1022, -1074, -1075, 1023.5]),
    "expm1": ([88.72284, -17.3, 1e-7], [709.782712893384, -37.5, 1e-16]),
    "tanh": ([9.01, 0.55, 1e-4], [19.06, 0.55, 1e-8]),
    "logistic": ([-103.97, -87.33, 16.64, 36.7], [-745.13, -708.39, 36.74, 745.13]),
    "erf": ([0.84, 3.92, 1e-4], [0.84, 5.93, 1e-8]),
    "erfc": ([9.19, 10.05, 0.47, -3.92], [26.54, 27.22, 0.47, -5.93]),
    "sinh": ([89.41599, 88.72284, 1e-4], [710.4758600739439, 709.782712893384, 1e-8]),
    "cosh": ([89.41599, 88.72284], [710.4758600739439, 709.782712893384]),
    "log1p": ([-1 + 2**-24, -0.29, 1e-7], [-1 + 2**-53, -0.29, 1e-16]),
    "asin": ([1.0, -1.0, 0.5, 0.975], [1.0, -1.0, 0.5, 0.975]),
    "acos": ([1.0, -1.0, 0.5, 0.975], [1.0, -1.0, 0.5, 0.975]),
    "atanh": ([1.0, -1.0, 0.5], [1.0, -1.0, 0.5]),
    "acosh": ([1.0, 1.5, 1e19], [1.0, 1.5, 1e154]),
    "cbrt": ([8.0, -27.0, 1e-30, 1.25e-37], [8.0, -27.0, 1e-300, 8e-306]),
}
_TRIG = frozenset({"sin", "cos", "tan"})


def hard(name: str, dtype) -> list[np.ndarray]:
    """The hard regions of ``name`` for ``dtype``: subnormal, tiny and huge
    arguments, neighbours of integers and of the thresholds where the result
    overflows, underflows or saturates, and (for trig) of multiples of pi/2.
    A list of arrays, one per argument."""
    dt = np.dtype(dtype)
    fi = np.finfo(dt)
    f64 = dt == np.float64
    sub = float(fi.smallest_subnormal)
    mags = [sub, 7 * sub, float(fi.tiny) / 3, float(fi.tiny), float(fi.eps), 1e-20, 0.5, 1.0,
            1.5, 2.0, 3.0, 7.0, 10.0, 100.0, 1e10, float(fi.max) / 8, float(fi.max)]
    anchors = mags + [-m for m in mags]
    if name in _TRIG:
        k = np.concatenate([np.arange(1, 64), np.geomspace(64, 1e7 if f64 else 1e4, 64).round()])
        anchors += list(k * np.pi / 2) + list(-k * np.pi / 2)
        from ember.backends.llvm import trig_huge
        lim = trig_huge.FAST_LIMIT["f64" if f64 else "f32"]
        anchors += [lim, -lim, float(fi.max) / 2, 2.0 ** 1000 if f64 else 2.0 ** 100]
        worst = trig_worst_cases(dt)
        anchors += list(worst) + list(-worst)
    anchors += _THRESHOLDS.get(name, ([], []))[f64]
    if name in ("pow", "atan2"):
        return _hard_pairs(name, dt)
    return [_around(anchors, dt)]


def _hard_pairs(name, dt):
    f64 = dt == np.float64
    fi = np.finfo(dt)
    if name == "atan2":
        big, tiny = float(fi.max), float(fi.smallest_subnormal)
        pairs = [(tiny, big), (big, tiny), (1.0, 1.0), (-1.0, -1.0), (-tiny, -1.0), (1.0, -big),
                 (3.0, 1e-20), (1e-20, -3.0), (float(fi.tiny), -float(fi.tiny))]
        ys = [_around([y], dt) for y, _ in pairs]
        return [np.concatenate(ys), np.concatenate([np.full(y.size, x, dt) for y, (_, x) in zip(ys, pairs)])]
    emax, emin, esub = (1024, -1022, -1074) if f64 else (128, -126, -149)
    pairs = [(2.0, emax), (2.0, emax - 0.5), (2.0, emin), (2.0, esub), (2.0, esub - 1),
             (0.5, -emax), (0.5, -esub), (10.0, emax * 0.30103), (-2.0, emax - 1), (-2.0, esub),
             (-2.0, esub + 1), (1 + float(fi.eps), 1 / float(fi.eps)),
             (1 - float(fi.eps) / 2, 2 / float(fi.eps)), (1 + float(fi.eps), emax / float(fi.eps)),
             (float(fi.tiny), 1.0), (float(fi.tiny), -1.0), (float(fi.max), 0.5), (float(fi.max), -1.0),
             (float(fi.smallest_subnormal), 0.5), (7.0, 3.0), (-3.0, 5.0), (1.5, 1e6 if f64 else 100)]
    ys = [_around([y], dt) for _, y in pairs]
    xs = [np.full(y.size, x, dt) for y, (x, _) in zip(ys, pairs)]
    return [np.concatenate(xs), np.concatenate(ys)]


def inputs(name: str, dtype, n: int, seed: int = 0):
    """Sample inputs for ``name``: a list of arrays (one per argument), about
    ``n`` random points over the main, tiny and huge ranges followed by the
    hard regions of ``hard``."""
    parts = _random_inputs(name, dtype, n, seed)
    return [np.concatenate([r, h]) for r, h in zip(parts, hard(name, dtype))]


def _random_inputs(name: str, dtype, n: int, seed: int):
    rng = np.random.default_rng(seed)
    f64 = np.dtype(dtype) == np.float64
    q = n // 4

    def cat(*parts):
        return np.concatenate([np.asarray(p, np.float64) for p in parts]).astype(dtype)

    sp = specials(dtype).astype(np.float64)
    if name == "exp":
        lo, hi = (-746, 710) if f64 else (-104, 89)
        return [cat(rng.uniform(lo, hi, 2 * q), rng.uniform(-2, 2, q), _logu(rng, q, 1e-30, 1e3), sp)]
    if name == "exp2":
        lo, hi = (-1076, 1025) if f64 else (-151, 129)
        return [cat(rng.uniform(lo, hi, 2 * q), rng.uniform(-2, 2, q), _logu(rng, q, 1e-30, 1e3), sp)]
    if name == "expm1":
        lo, hi = (-40, 710) if f64 else (-20, 89)
        return [cat(rng.uniform(lo, hi, q), rng.uniform(-2, 2, q), _logu(rng, 2 * q, 1e-30, 1e2), sp)]
    if name in ("log", "log2"):
        big = 1e308 if f64 else 3e38
        tiny = 5e-324 if f64 else 1.4e-45
        return [cat(_logu(rng, 2 * q, tiny, big, False), 1 + rng.uniform(-0.3, 0.3, q),
                    1 + _logu(rng, q, 1e-15, 1e-1), sp)]
    if name == "log1p":
        big = 1e308 if f64 else 3e38
        return [cat(_logu(rng, q, 1e-30, 1.0), rng.uniform(-1, 1, q), -1 + _logu(rng, q // 2, 1e-15, 1, False),
                    _logu(rng, q, 1.0, big, False), sp)]
    if name == "tanh":
        return [cat(_logu(rng, 2 * q, 1e-30, 50), rng.uniform(-5, 5, 2 * q), sp)]
    if name == "logistic":
        hi = 800 if f64 else 120
        return [cat(rng.uniform(-hi, hi, 2 * q), rng.uniform(-10, 10, q), _logu(rng, q, 1e-30, 10), sp)]
    if name in ("sin", "cos", "tan"):
        hi = 1e9 if f64 else 1e5
        top = float(np.finfo(dtype).max)
        return [cat(rng.uniform(-hi, hi, q), rng.uniform(-10, 10, q), _logu(rng, q, 1e-30, hi),
                    _logu(rng, q, hi, top), sp)]
    if name in ("erf", "erfc"):
        hi = 30 if f64 else 12
        return [cat(rng.uniform(-hi, hi, q), rng.uniform(-3, 3, q), _logu(rng, 2 * q, 1e-30, hi), sp)]
    if name in ("atan", "asinh"):
        big = 1e300 if f64 else 1e37
        return [cat(_logu(rng, 2 * q, 1e-30, big), rng.uniform(-4, 4, 2 * q), sp)]
    if name in ("asin", "acos"):
        return [cat(rng.uniform(-1, 1, 2 * q), _logu(rng, q, 1e-30, 1),
                    (1 - _logu(rng, q, 1e-16, 1e-1, False)) * rng.choice([-1, 1], q), sp)]
    if name in ("sinh", "cosh"):
        hi = 711 if f64 else 90
        return [cat(rng.uniform(-hi, hi, q), rng.uniform(-3, 3, q), _logu(rng, 2 * q, 1e-30, hi), sp)]
    if name == "acosh":
        big = 1e300 if f64 else 1e37
        return [cat(1 + _logu(rng, 2 * q, 1e-15, big, False), rng.uniform(1, 4, q), rng.uniform(-2, 1, q // 8), sp)]
    if name == "atanh":
        return [cat(rng.uniform(-1, 1, 2 * q), _logu(rng, q, 1e-30, 1),
                    (1 - _logu(rng, q, 1e-16, 1e-1, False)) * rng.choice([-1, 1], q), sp)]
    if name == "cbrt":
        big = 1e308 if f64 else 3e38
        tiny = 5e-324 if f64 else 1.4e-45
        return [cat(_logu(rng, 3 * q, tiny, big), rng.uniform(-2, 2, q), sp)]
    if name == "sqrt":
        big = 1e308 if f64 else 3e38
        return [cat(_logu(rng, 4 * q, 1e-300 if f64 else 1e-44, big), sp)]
    if name == "atan2":
        big = 1e300 if f64 else 1e37
        y = cat(_logu(rng, 2 * q, 1e-30, big), rng.uniform(-3, 3, 2 * q))
        x = cat(_logu(rng, 2 * q, 1e-30, big), rng.uniform(-3, 3, 2 * q))
        sy, sx = np.meshgrid(sp, sp)
        return [np.concatenate([y, sy.ravel().astype(dtype)]), np.concatenate([x, sx.ravel().astype(dtype)])]
    if name == "pow":
        xb = 1e300 if f64 else 1e30
        x1 = _logu(rng, q, 1e-30, xb, False)
        y1 = rng.uniform(-10, 10, q)
        x2 = 1 + rng.uniform(-1e-3, 1e-3, q)
        y2 = rng.uniform(-3e4, 3e4, q) * (10 if f64 else 1)
        x3 = -_logu(rng, q, 1e-5, 1e5, False)
        y3 = np.round(rng.uniform(-20, 20, q))
        x4 = _logu(rng, q, 1e-3, 1e3, False)
        y4 = rng.uniform(-100, 100, q)
        sy, sx = np.meshgrid(np.concatenate([sp, [0.5, -0.5, 3.0, -3.0, 2.5]]),
                             np.concatenate([sp, [0.25, -3.0, 4.0]]))
        return [cat(x1, x2, x3, x4, sx.ravel()), cat(y1, y2, y3, y4, sy.ravel())]
    raise KeyError(name)


# The reference is mpmath at 128 bits, returned as a double-double (hi, lo):
# hi is the correctly rounded float64 value, so the measured error of a
# float64 result is its true error (to ~2^-70 ulp), whatever the host libm
# gets wrong (glibc's float64 cbrt is off by up to 3 ulp on some CPUs).
_PREC = 128


def _mp_erfc(x):
    # mpmath's series overflows for huge x; beyond 40 the value is below
    # 2^-2000, far under the smallest subnormal, which is all that matters
    return mpmath.erfc(x) if x < 40 else mpmath.mpf(2) ** -2000


def _mp_cbrt(x):
    return mpmath.sign(x) * mpmath.cbrt(abs(x))


MP_REFERENCE = {
    "exp": mpmath.exp, "exp2": lambda x: mpmath.power(2, x), "expm1": mpmath.expm1,
    "log": mpmath.log, "log2": lambda x: mpmath.log(x, 2), "log1p": mpmath.log1p,
    "tanh": mpmath.tanh, "logistic": lambda x: 1 / (1 + mpmath.exp(-x)),
    "sin": mpmath.sin, "cos": mpmath.cos, "tan": mpmath.tan, "erf": mpmath.erf,
    "erfc": _mp_erfc, "pow": mpmath.power, "sqrt": mpmath.sqrt, "atan": mpmath.atan,
    "atan2": mpmath.atan2, "asin": mpmath.asin, "acos": mpmath.acos, "sinh": mpmath.sinh,
    "cosh": mpmath.cosh, "asinh": mpmath.asinh, "acosh": mpmath.acosh,
    "atanh": mpmath.atanh, "cbrt": _mp_cbrt,
}

# Arguments that are +-0, +-inf or NaN have exact results fixed by C99 Annex F
# (signed zeros, infinities), which mpmath does not model (it has no -0);
# numpy's functions return exactly those values, so they supply this part.
_C99 = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log1p": np.log1p, "tanh": np.tanh, "logistic": sps.expit, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "erf": sps.erf, "erfc": sps.erfc, "pow": np.power, "sqrt": np.sqrt,
    "atan": np.arctan, "atan2": np.arctan2, "asin": np.arcsin, "acos": np.arccos,
    "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "cbrt": np.cbrt,
}


def _to_pair(r) -> tuple[float, float]:
    if not isinstance(r, mpmath.mpf):          # a complex result: outside the real domain
        return math.nan, 0.0
    if mpmath.isnan(r):
        return math.nan, 0.0
    hi = float(r)                              # round to nearest, overflow -> inf
    if not math.isfinite(hi):
        return hi, 0.0
    return hi, float(r - hi)


def mp_apply(fn, args) -> tuple[np.ndarray, np.ndarray]:
    """Evaluate the mpmath function ``fn`` on float64 argument arrays at 128
    bits; returns the double-double result (hi, lo)."""
    hi = np.empty(args[0].shape)
    lo = np.empty(args[0].shape)
    flat = [np.asarray(a, np.float64).ravel() for a in args]
    with mpmath.workprec(_PREC):
        for i in range(hi.size):
            try:
                r = fn(*[mpmath.mpf(float(a[i])) for a in flat])
            except (ValueError, ZeroDivisionError):
                r = mpmath.mpc(0, 1)
            hi.flat[i], lo.flat[i] = _to_pair(r)
    return hi, lo


def reference(name: str, args) -> tuple[np.ndarray, np.ndarray]:
    """The exact value of ``name`` at ``args`` as a double-double (hi, lo).

    hi is the correctly rounded float64 result, hi + lo the value to ~2^-110
    relative; NaN where the function is undefined.
    """
    a64 = [np.asarray(a, np.float64) for a in args]
    special = np.zeros(a64[0].shape, bool)
    for a in a64:
        special |= ~np.isfinite(a) | (a == 0)
    hi = np.empty(a64[0].shape)
    lo = np.zeros(a64[0].shape)
    with np.errstate(all="ignore"):
        hi[special] = _C99[name](*[a[special] for a in a64])
    h, l = mp_apply(MP_REFERENCE[name], [a[~special] for a in a64])
    hi[~special], lo[~special] = h, l
    return hi, lo


@functools.lru_cache(maxsize=None)
def trig_worst_cases(dtype, per_binade: int = 2) -> np.ndarray:
    """Positive floats of ``dtype`` closest to a multiple of pi/2, a few per
    binade from 2 up to the largest finite value: where sin or cos is tiny and
    a range reduction without enough bits of pi loses everything.

    For x = M * 2**e (M a p-bit integer) the distance is ||M * a|| with
    a = frac(2**e * 2/pi); the M that minimise it are multiples of the
    continued-fraction denominators of a (the best approximations), found with
    mpmath at 1400 bits.  float32 covers every binade, float64 every fourth."""
    dt = np.dtype(dtype)
    p, emax = (24, 128) if dt == np.float32 else (53, 1024)
    step = 1 if dt == np.float32 else 4
    out = []
    with mpmath.workprec(1400):
        two_over_pi = 2 / mpmath.pi
        for top in range(2, emax + 1, step):       # x in [2^(top-1), 2^top)
            e = top - p
            a = mpmath.frac(two_over_pi * mpmath.ldexp(1, e))
            cands = set()
            # continued-fraction denominators q_n of a, and multiples in range
            q0, q1, y = 1, 0, a
            for _ in range(80):
                if y == 0:
                    break
                c = int(mpmath.floor(y))
                q0, q1 = q1, c * q1 + q0
                if q1 >= 1 << p:
                    break
                lo = -(-(1 << (p - 1)) // q1)
                for mult in range(lo, lo + 3):
                    if mult * q1 < 1 << p:
                        cands.add(mult * q1)
                frac = y - c
                y = 1 / frac if frac != 0 else 0
            scored = []
            for mant in cands:
                t = mant * a
                scored.append((abs(t - mpmath.nint(t)), mant))
            for _, mant in sorted(scored)[:per_binade]:
                out.append(math.ldexp(mant, e))
    with np.errstate(over="ignore"):
        arr = np.array(out, np.float64).astype(dt)
    return arr[np.isfinite(arr)]
