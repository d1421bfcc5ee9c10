"""sin/cos/tan of huge arguments (the Payne-Hanek branch of trig_huge) against
mpmath: the largest floats, the floats closest to multiples of pi/2 in every
binade, the 2/pi table itself, and the same under EMBER_CPU=haswell / x86-64."""

from __future__ import annotations

import os
import subprocess
import sys

import mpmath
import numpy as np
import pytest

import mathlib_cases as mc
import test_mathlib as tm
from ember.backends.llvm import mathlib, trig_huge

TRIG = ("sin", "cos", "tan")
DTYPES = [np.float32, np.float64]


def test_two_over_pi_bits_match_mpmath():
    with mpmath.workprec(1400):
        want = int(mpmath.floor(2 / mpmath.pi * mpmath.mpf(2) ** 1280))
    assert trig_huge.TWO_OVER_PI_BITS == want


def test_window_gives_the_quadrant():
    # 2^e * 2/pi mod 4 from the window equals the high-precision value
    for e in (0, 30, 100, 500, 971):
        w = trig_huge.two_over_pi_window(e)
        with mpmath.workprec(1400):
            frac4 = mpmath.fmod(mpmath.ldexp(1, e) * 2 / mpmath.pi, 4)
            got = mpmath.mpf(w) / mpmath.mpf(2) ** 190
            assert abs(got - frac4) < mpmath.mpf(2) ** -189


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("name", TRIG)
def test_issue_values_are_finite_and_accurate(name, dtype):
    # the report: sin(3e38) in float32 and sin(1e30) in float64 were NaN
    fi = np.finfo(dtype)
    x = np.array([3e38 if dtype == np.float32 else 1e30, fi.max, -fi.max, fi.max / 3,
                  2.0 ** 100, -(2.0 ** 60), np.nextafter(trig_huge.FAST_LIMIT[
                      "f32" if dtype == np.float32 else "f64"], np.inf)], dtype)
    got = tm._apply(name, dtype, [x])
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, getattr(np, name)(x.astype(np.float64)).astype(dtype), rtol=1e-5)
    err = mc.ulp_error(got, mc.reference(name, [x]), dtype)
    assert err.max() <= tm._bound(name, dtype), (x[np.argmax(err)], err.max())


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("name", TRIG)
def test_closest_to_multiples_of_half_pi(name, dtype):
    w = mc.trig_worst_cases(np.dtype(dtype))
    # the hardest double (|x mod pi/2| ~ 2^-60.9, near 5.3e255) is among them
    if dtype == np.float64:
        with mpmath.workprec(1400):
            d = min(abs(mpmath.mpf(float(v)) - mpmath.nint(mpmath.mpf(float(v)) / (mpmath.pi / 2))
                        * mpmath.pi / 2) for v in w)
        assert d < mpmath.mpf(2) ** -60
    x = np.concatenate([w, -w])
    got = tm._apply(name, dtype, [x])
    err = mc.ulp_error(got, mc.reference(name, [x]), dtype)
    assert err.max() <= tm._bound(name, dtype), (x[np.argmax(err)], err.max())


@pytest.mark.parametrize("name", TRIG)
def test_specials_on_the_huge_branch(name):
    for dtype in DTYPES:
        x = np.array([np.inf, -np.inf, np.nan], dtype)
        assert np.all(np.isnan(tm._apply(name, dtype, [x])))


def test_jit_sin_of_huge_values():
    import ember
    import ember.numpy as enp
    x32 = np.array([3e38, -1e30, 1e20, 12345678.0], np.float32)
    x64 = np.array([1e30, 1e300, -1e200, 2.0 ** 52], np.float64)
    for x in (x32, x64):
        got = np.asarray(ember.jit(enp.sin)(x))
        np.testing.assert_allclose(got, np.sin(x.astype(np.float64)).astype(x.dtype), rtol=1e-5)


_CHILD = r"""
import sys
sys.path.insert(0, {here!r})
import numpy as np
import mathlib_cases as mc, test_mathlib as tm
worst = []
for dt in (np.float32, np.float64):
    w = mc.trig_worst_cases(np.dtype(dt))
    rng = np.random.default_rng(1)
    big = np.exp(rng.uniform(np.log(1e3), np.log(float(np.finfo(dt).max)), 400)).astype(dt)
    x = np.concatenate([w, -big, big, np.array([np.finfo(dt).max], dt)])
    for name in ("sin", "cos", "tan"):
        err = mc.ulp_error(tm._apply(name, dt, [x]), mc.reference(name, [x]), dt)
        assert err.max() <= tm._bound(name, dt), (name, dt, float(err.max()))
print("ok")
"""


@pytest.mark.parametrize("cpu", ["haswell", "x86-64"])
def test_forced_targets(cpu):
    env = dict(os.environ, EMBER_CPU=cpu)
    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run([sys.executable, "-c", _CHILD.format(here=here)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]


def test_supported_names_unchanged():
    assert all(mathlib.supported(n) for n in TRIG)
