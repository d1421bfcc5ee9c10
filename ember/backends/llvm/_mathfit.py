"""Offline generator for the polynomial coefficients used by ``mathlib``.

Not imported at run time.  Running ``python -m ember.backends.llvm._mathfit``
re-derives every coefficient and constant from first principles and rewrites
``_coefficients.py`` next to this file, so the numbers in that file can always
be reproduced and audited.

Method: every approximated function is first reduced (by ``mathlib``) to a
smooth kernel ``g`` on a short interval.  ``g`` is evaluated in 60-digit
``decimal`` arithmetic from its Taylor series (or a continued fraction, for the
tail of erfc), and a polynomial minimising the *relative* error of ``g`` is
found with the Remez exchange algorithm, also in ``decimal``.  The result is
then rounded once to the target float format.  Nothing here depends on the
accuracy of the platform's libm.

Example::

    python -m ember.backends.llvm._mathfit            # rewrite _coefficients.py
    python -m ember.backends.llvm._mathfit --report   # only print fit errors
"""

from __future__ import annotations

import decimal
import os
import struct
import sys
from decimal import Decimal as D

_CTX = decimal.Context(prec=60)
decimal.setcontext(_CTX)

# ---------------------------------------------------------------------------
# high-precision elementary pieces


def _atan_inv(n: int) -> D:
    # atan(1/n) by its alternating series; only used for pi (Machin's formula).
    x = D(1) / n
    x2 = x * x
    term, total, k = x, D(0), 0
    eps = D(10) ** -(_CTX.prec + 5)
    while abs(term) > eps:
        total += term / (2 * k + 1) * (1 if k % 2 == 0 else -1)
        term *= x2
        k += 1
    return total


def dpi() -> D:
    return 16 * _atan_inv(5) - 4 * _atan_inv(239)


def _series(coef, z: D, start: int = 0, limit: int = 4000) -> D:
    """Sum coef(n) * z**(n - start) for n >= start until terms vanish."""
    total, zp, n = D(0), D(1), start
    eps = D(10) ** -(_CTX.prec + 5)
    small = 0
    while n < limit:
        t = coef(n) * zp
        total += t
        # stop only after several negligible terms: some coefficients are 0
        small = small + 1 if abs(t) <= eps * (abs(total) + eps) else 0
        if small >= 3:
            break
        zp *= z
        n += 1
    return total


_FACT = [D(1)]
for _k in range(1, 400):
    _FACT.append(_FACT[-1] * _k)


def erf_dec(x: D) -> D:
    # erf(x) = 2/sqrt(pi) exp(-x^2) sum 2^n x^(2n+1) / (1*3*...*(2n+1)):
    # every term positive, so no cancellation for any x.
    x2 = x * x
    term, total, n = x, D(0), 0
    eps = D(10) ** -(_CTX.prec + 5)
    while term > eps * total or n < 2:
        total += term
        n += 1
        term = term * 2 * x2 / (2 * n + 1)
    return 2 / dpi().sqrt() * (-x2).exp() * total


def erfcx_dec(x: D) -> D:
    """exp(x^2) * erfc(x) for x >= 0."""
    if x < 4:
        with decimal.localcontext() as c:
            c.prec = _CTX.prec + 20  # 1 - erf loses < 8 digits for x < 4
            v = (x * x).exp() * (1 - erf_dec(x))
        return +v
    # Laplace continued fraction, evaluated bottom-up:
    # erfcx(x) = (1/sqrt(pi)) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
    depth = 400
    t = x
    for k in range(depth, 0, -1):
        t = x + D(k) / 2 / t
    return 1 / (dpi().sqrt() * t)


# ---------------------------------------------------------------------------
# kernels g(z) to fit, each a function of the variable the polynomial uses


def g_exp(r: D) -> D:
    """(e^r - 1 - r) / r^2 ; exp(r) = 1 + r + r^2 g(r)."""
    return _series(lambda n: 1 / _FACT[n + 2], r)


def g_log(w: D) -> D:
    """Q with log(1+f) = 2s + s^3 Q(s^2), s = f/(2+f)."""
    return _series(lambda n: D(2) / (2 * n + 3), w)


def g_sin(z: D) -> D:
    """(sin r - r)/r^3 as a function of z = r^2."""
    return _series(lambda n: (-1 if n % 2 == 0 else 1) / _FACT[2 * n + 3], z)


def g_cos(z: D) -> D:
    """(cos r - 1 + r^2/2)/r^4 as a function of z = r^2."""
    return _series(lambda n: (1 if n % 2 == 0 else -1) / _FACT[2 * n + 4], z)


def g_atan(z: D) -> D:
    """(atan t - t)/t^3 as a function of z = t^2."""
    return _series(lambda n: D(-1 if n % 2 == 0 else 1) / (2 * n + 3), z)


def _asin_coef(n: int) -> D:
    # Taylor coefficient of s^(2n+1) in asin(s): (2n)! / (4^n n!^2 (2n+1))
    return _FACT[2 * n] / (D(4) ** n * _FACT[n] ** 2 * (2 * n + 1))


def g_asin(w: D) -> D:
    """(asin s - s)/s^3 as a function of w = s^2."""
    return _series(lambda n: _asin_coef(n + 1), w)


def g_erf(w: D) -> D:
    """erf(x)/x as a function of w = x^2."""
    c = 2 / dpi().sqrt()
    return c * _series(lambda n: D(-1 if n % 2 else 1) / (_FACT[n] * (2 * n + 1)), w)


ERFC_K = D(3)  # t = (x - K)/(x + K) maps [0, inf) onto [-1, 1)
ERFC_X0 = D("0.45")  # the tail formula is used for |x| >= 0.5


def g_erfc(t: D) -> D:
    """(1 + 2x) * erfcx(x) with x = K (1 + t) / (1 - t)."""
    if t >= 1:
        return 2 / dpi().sqrt()
    x = ERFC_K * (1 + t) / (1 - t)
    return (1 + 2 * x) * erfcx_dec(x)


# ---------------------------------------------------------------------------
# Remez exchange for min-max relative error


def _solve(a, b):
    """Gaussian elimination with partial pivoting, in Decimal."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[piv] = m[piv], m[col]
        p = m[col][col]
        for r in range(col + 1, n):
            f = m[r][col] / p
            if f:
                for c in range(col, n + 1):
                    m[r][c] -= f * m[col][c]
    x = [D(0)] * n
    for r in range(n - 1, -1, -1):
        s = m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))
        x[r] = s / m[r][r]
    return x


def _peval(c, z):
    acc = D(0)
    for v in reversed(c):
        acc = acc * z + v
    return acc


def _cos_dec(x: D) -> D:
    return _series(lambda n: (1 if n % 2 == 0 else -1) / _FACT[2 * n], x * x)


def remez(g, a, b, degree, iters=12, grid=None):
    """Return (coefficients, max relative error) of the degree-`degree`
    polynomial in z minimising max |p(z)/g(z) - 1| on [a, b]."""
    a, b = D(a), D(b)
    n = degree
    pi = dpi()
    mid, half = (a + b) / 2, (b - a) / 2
    npts = grid or 30 * (n + 2)
    # grid clustered at the ends, where the error of near-minimax fits peaks
    zs = [mid - half * _cos_dec(pi * k / (npts - 1)) for k in range(npts)]
    gs = [g(z) for z in zs]
    ref = [round(k * (npts - 1) / (n + 1)) for k in range(n + 2)]
    best = None
    for _ in range(iters):
        rows, rhs = [], []
        for i, k in enumerate(ref):
            z = zs[k]
            powers, zp = [], D(1)
            for _j in range(n + 1):
                powers.append(zp)
                zp *= z
            rows.append(powers + [(-1) ** i * abs(gs[k])])
            rhs.append(gs[k])
        sol = _solve(rows, rhs)
        c = sol[:-1]
        err = [(_peval(c, z) - gz) / abs(gz) for z, gz in zip(zs, gs)]
        emax = max(abs(e) for e in err)
        if best is None or emax < best[1]:
            best = (c, emax)
        # new reference: extremum of each run of equal sign
        runs = []
        start = 0
        for k in range(1, npts + 1):
            if k == npts or (err[k] > 0) != (err[start] > 0):
                seg = range(start, k)
                runs.append(max(seg, key=lambda q: abs(err[q])))
                start = k
        if len(runs) < n + 2:
            break
        while len(runs) > n + 2:
            # dropping an end keeps the signs alternating
            if abs(err[runs[0]]) < abs(err[runs[-1]]):
                runs.pop(0)
            else:
                runs.pop()
        emin = min(abs(err[k]) for k in runs)
        ref = runs
        if emax / emin < D("1.02"):
            break
    return best


# ---------------------------------------------------------------------------
# splitting constants


def f32(x) -> float:
    return struct.unpack("f", struct.pack("f", float(x)))[0]


def split_bits(x: D, bits: int, parts: int):
    """Split x into `parts` doubles whose first parts-1 carry at most `bits`
    significant bits (so k * part is exact for small integers k)."""
    out = []
    rest = x
    for i in range(parts):
        if i == parts - 1:
            out.append(float(rest))
            break
        v = float(rest)
        m, e = _frexp(v)
        scale = 2 ** (bits - e)
        hi = float(round(D(v) * scale)) / scale
        out.append(hi)
        rest = rest - D(hi)
    return out


def split_f32(x: D, parts: int):
    """Split x into float32 parts: x ~ p0 + p1 + ... (each a correctly rounded
    float32 of the remainder)."""
    out, rest = [], x
    for _ in range(parts):
        v = f32(float(rest))
        out.append(v)
        rest -= D(v)
    return out


def split_f64(x: D, parts: int):
    out, rest = [], x
    for _ in range(parts):
        v = float(rest)
        out.append(v)
        rest -= D(v)
    return out


def _frexp(v: float):
    import math
    return math.frexp(v)


def split_trailing_zeros_f32(x: D, bits: int):
    """float32 hi with only `bits` significant bits, plus f32 remainder."""
    v = float(x)
    m, e = _frexp(v)
    scale = 2 ** (bits - e)
    hi = float(round(D(v) * scale)) / scale
    return [f32(hi), f32(float(x - D(hi)))]


# ---------------------------------------------------------------------------
# what mathlib needs

# (kernel, interval, degree for float32, degree for float64)
LN2 = D(2).ln()
SQRT2 = D(2).sqrt()
_S = (SQRT2 - 1) / (SQRT2 + 1)


def _specs():
    pi = dpi()
    t_min = (ERFC_X0 - ERFC_K) / (ERFC_X0 + ERFC_K)
    t_max_f64 = (D("27.5") - ERFC_K) / (D("27.5") + ERFC_K)
    t_max_f32 = (D("10.25") - ERFC_K) / (D("10.25") + ERFC_K)
    # a few percent of slack on every reduced interval: reductions round
    return {
        "exp": (g_exp, -LN2 / 2 * D("1.02"), LN2 / 2 * D("1.02"), 4, 10),
        "log": (g_log, 0, _S * _S * D("1.03"), 3, 8),
        "sin": (g_sin, 0, (pi / 4) ** 2 * D("1.05"), 3, 6),
        "cos": (g_cos, 0, (pi / 4) ** 2 * D("1.05"), 3, 5),
        "atan": (g_atan, 0, (SQRT2 - 1) ** 2 * D("1.03"), 4, 11),
        "asin": (g_asin, 0, D("0.25"), 5, 12),
        "erf": (g_erf, 0, D(1), 6, 11),
        "erfc32": (g_erfc, t_min, t_max_f32, 10, None),
        "erfc64": (g_erfc, t_min, t_max_f64, None, 22),
    }


def generate(report_only: bool = False, degrees=None):
    lines = [
        '"""Generated by ``python -m ember.backends.llvm._mathfit``; do not edit.',
        "",
        "Polynomial coefficients (lowest order first) and reduction constants for",
        "``mathlib``; each entry records the relative error of the exact-coefficient",
        'fit on its interval."""',
        "",
        "# fmt: off",
        "POLY = {",
    ]
    for name, (g, a, b, d32, d64) in _specs().items():
        # erf/erfc for float32 are evaluated in double: also emit the
        # float32-degree fits with unrounded (double) coefficients
        variants = [("f32", d32), ("f64", d64)]
        if name in ("erf", "erfc32"):
            variants.append(("f32d", d32))
        for dt, deg in variants:
            if deg is None:
                continue
            if degrees and (name, dt) in degrees:
                deg = degrees[(name, dt)]
            c, e = remez(g, a, b, deg)
            print(f"{name:7s} {dt} deg {deg:2d} on [{float(a):.4g}, {float(b):.4g}]"
                  f" rel err {float(e):.3e} (2^{float(e.ln() / LN2):.1f})",
                  file=sys.stderr)
            if dt == "f32":
                vals = [f32(float(v)) for v in c]
            else:
                vals = [float(v) for v in c]
            key = name if not name.startswith("erfc") else "erfc"
            lines.append(f"    ({key!r}, {dt!r}): (  # fit rel err {float(e):.2e}")
            for v in vals:
                lines.append(f"        {v!r},")
            lines.append("    ),")
    lines.append("}")
    lines.append("")
    pi = dpi()
    consts = {
        # e^x: k*LN2_HI exact for |k| < 2^12 (f32) / 2^20 (f64)
        "LN2_F32": split_trailing_zeros_f32(LN2, 12),
        "LN2_F64": split_bits(LN2, 32, 2),
        "LN2_DW_F32": split_f32(LN2, 2),
        "LN2_DW_F64": split_f64(LN2, 2),
        "INV_LN2_DW_F32": split_f32(1 / LN2, 2),
        "INV_LN2_DW_F64": split_f64(1 / LN2, 2),
        # three-part pi/2 for FMA-based Cody-Waite reduction
        "PIO2_F32": split_f32(pi / 2, 3),
        "PIO2_F64": split_f64(pi / 2, 3),
        "PIO4_DW_F32": split_f32(pi / 4, 2),
        "PIO4_DW_F64": split_f64(pi / 4, 2),
        "PI_DW_F32": split_f32(pi, 2),
        "THREE_PIO4_DW_F32": split_f32(3 * pi / 4, 2),
        "THREE_PIO4_DW_F64": split_f64(3 * pi / 4, 2),
        "PI_DW_F64": split_f64(pi, 2),
        "TWO_OVER_PI": [float(2 / pi)],
        "TWO_OVER_SQRTPI": [float(2 / pi.sqrt())],
        "ERFC_K": [float(ERFC_K)],
        # the leading log-tail coefficient as a double-word (pow's precise log)
        "TWO_THIRDS_DW_F64": split_f64(D(2) / 3, 2),
    }
    for k, v in consts.items():
        lines.append(f"{k} = {tuple(v)!r}")
    lines.append("# fmt: on")
    text = "\n".join(lines) + "\n"
    if not report_only:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_coefficients.py")
        with open(path, "w") as f:
            f.write(text)
    return text


if __name__ == "__main__":
    generate(report_only="--report" in sys.argv)
