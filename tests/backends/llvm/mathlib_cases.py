"""Inputs, references and ulp measurement for the mathlib tests (shared with
the error-table script in the benchmark)."""

from __future__ import annotations

import math

import numpy as np
import scipy.special as sps

F32_TINY = np.float32(1.4e-45)


def ulp_error(got: np.ndarray, ref: np.ndarray, dtype) -> np.ndarray:
    """|got - ref| in units of the last place of ``dtype`` at ``ref``.

    Non-finite references (after rounding to ``dtype``) must match exactly
    (same NaN-ness, same infinity); a mismatch counts as an infinite error.
    """
    dt = np.dtype(dtype)
    p, emin = (24, -149) if dt == np.float32 else (53, -1074)
    got = got.astype(np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        ref_t = ref.astype(dt).astype(np.float64)
    err = np.zeros(ref.shape)
    fin = np.isfinite(ref_t)
    nonfin_bad = ~fin & ~((np.isnan(ref_t) & np.isnan(got)) | (ref_t == got))
    err[nonfin_bad] = np.inf
    g, r = got[fin], ref[fin]
    e = np.frexp(np.abs(r))[1]
    ulp = np.ldexp(1.0, np.maximum(e - p, emin))
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.abs(g - r) / ulp
    d[~np.isfinite(g)] = np.inf
    err[fin] = d
    return err


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


def inputs(name: str, dtype, n: int, seed: int = 0):
    """Sample inputs for ``name``: a list of arrays (one per argument)."""
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
        return [cat(rng.uniform(-hi, hi, q), rng.uniform(-10, 10, q), _logu(rng, 2 * q, 1e-30, hi), sp)]
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


def _expit(x):
    return sps.expit(x)


REFERENCE = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log1p": np.log1p, "tanh": np.tanh, "logistic": _expit, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "erf": sps.erf, "erfc": sps.erfc, "pow": np.power, "sqrt": np.sqrt,
    "atan": np.arctan, "atan2": np.arctan2, "asin": np.arcsin, "acos": np.arccos,
    "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "cbrt": np.cbrt,
}


# scipy's erf/erfc are Cephes ports: erfc loses ~500 ulp in the far tail
# (exp(-x*x) without splitting x*x) and erf is off by up to ~3 ulp; the C
# library's versions are accurate to ~1 ulp
_math_erf = np.frompyfunc(math.erf, 1, 1)
_math_erfc = np.frompyfunc(math.erfc, 1, 1)
REFERENCE_F64 = dict(REFERENCE, erf=lambda x: _math_erf(x).astype(np.float64),
                     erfc=lambda x: _math_erfc(x).astype(np.float64))


def reference(name: str, args):
    table = REFERENCE_F64 if args[0].dtype == np.float64 else REFERENCE
    with np.errstate(all="ignore"):
        return table[name](*[a.astype(np.float64) for a in args])
