"""The scipy.special functions JAX users reach for beyond test_special.py's: gamma and
friends, the normal distribution function, entropies, softmax, unscaled Bessel and the
incomplete gamma / beta functions.  Values vs scipy over dtypes and edge values, the
tails vs mpmath, derivatives vs float64 finite differences (and the shape derivatives
of gammainc / betainc vs mpmath), vmap and jit."""
import math

import ml_dtypes
import mpmath as mp
import numpy as np
import pytest
import scipy.special as sp
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
import ember.scipy.special as sps
from ember.testing import check_grads, check_vmap

inf, nan = np.inf, np.nan
RTOL = {np.float64: 1e-13, np.float32: 3e-6}

UNARY = {
    "gamma": (sps.gamma, sp.gamma, [0.0, -0.0, 0.5, 1.0, 2.5, -0.5, -1.5, -2.5, 7.0, 30.5,
                                    -1.0, -3.0, 171.5, 172.0, inf, -inf, nan], 1),
    "factorial": (sps.factorial, lambda v: sp.factorial(v, exact=False),
                  [0.0, 1.0, 3.5, 5.0, 20.0, -1.0, -2.5, nan], 1),
    "ndtr": (sps.ndtr, sp.ndtr, [0.0, -0.0, 0.3, -0.3, 0.8, -0.8, 3.0, -3.0, -30.0, -40.0, 9.0,
                                 inf, -inf, nan], 1),
    "ndtri": (sps.ndtri, sp.ndtri, [0.0, 1.0, 0.5, 1e-300, 1e-20, 0.01, 0.1, 0.3, 0.9, 0.99,
                                    1 - 1e-12, -0.1, 1.1, nan], 1),
    "log_ndtr": (sps.log_ndtr, sp.log_ndtr, [0.0, -0.0, 0.5, -0.5, 3.0, -3.0, 7.9, 8.1, 20.0, -20.0,
                                             -36.9, -37.1, -50.0, -1e5, inf, -inf, nan], 1),
    "entr": (sps.entr, sp.entr, [0.0, 0.5, 1.0, 3.0, 1e-300, -1.0, inf, nan], 1),
    "i0": (sps.i0, sp.i0, [0.0, -0.0, 1e-3, 1.0, -2.5, 29.99, 30.01, -40.0, 700.0], 10),
    "i1": (sps.i1, sp.i1, [0.0, -0.0, 1e-3, 1.0, -2.5, 29.99, 30.01, -40.0, 700.0], 10),
}


def _close(got, want, dt, rtol):
    got = np.asarray(got)
    assert got.dtype == dt
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=0, equal_nan=True)


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_unary_values_and_edges(name, dt):
    ours, ref, pts, slack = UNARY[name]
    x = np.array(pts, dt)
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64))
        if dt == np.float32:   # the float32 result of the float32 input, rounded once
            want = want.astype(np.float32).astype(np.float64)
    if dt == np.float32 and name in ("gamma", "factorial"):
        slack = 3   # a few float32 roundings in the Stirling products
    _close(ours(enp.asarray(x)), want, dt, RTOL[dt] * slack)
    _close(ember.jit(ours)(enp.asarray(x)), want, dt, RTOL[dt] * slack)


def test_gamma_vs_mpmath():
    mp.mp.dps = 40
    rs = np.random.RandomState(3)
    x = np.r_[rs.uniform(1e-3, 10, 100), rs.uniform(10, 171.6, 100), 1e-300, 1e-8, 9.999999, 10.0]
    want = np.array([float(mp.gamma(mp.mpf(v))) for v in x])
    ulp = np.abs(np.asarray(sps.gamma(enp.asarray(x))) / want - 1) / 2.2e-16
    # 1 ulp typical; the recurrence below 10 multiplies ten rounded factors
    assert np.median(ulp) <= 2 and ulp.max() < 40, ulp.max()


def test_log_ndtr_and_ndtri_tails_vs_mpmath():
    mp.mp.dps = 40
    x = np.array([-1e4, -300.0, -50.0, -37.5, -37.0, -36.9, -25.0, -8.0, -1.0, 1.0, 5.0, 8.5, 30.0])
    want = np.array([float(mp.log(mp.ncdf(v))) if v < 25 else -float(mp.ncdf(-v)) for v in x])
    got = np.asarray(sps.log_ndtr(enp.asarray(x)))
    # for x > 0 the value is -ndtr(-x) ~ erfc(x / sqrt 2): rounding x / sqrt 2 alone costs
    # x^2 eps (scipy's too); below 0 the same error is relative to log's size x^2 / 2
    tol = np.where(x > 0, 4e-16 * np.maximum(1.0, x * x), 4e-16)
    assert np.all(np.abs(got / want - 1) <= tol)
    p = np.array([1e-300, 1e-100, 1e-30, 1e-10, 1e-3, 0.2, 0.5, 0.7, 0.999, 1 - 1e-10])
    want = np.array([float(mp.findroot(lambda t, v=v: mp.ncdf(t) - mp.mpf(v), sp.ndtri(v))) for v in p])
    np.testing.assert_allclose(np.asarray(sps.ndtri(enp.asarray(p))), want, rtol=2e-15)


def test_binary_edges():
    x = np.array([0.0, 0.0, 1.0, 1.0, -1.0, 0.5, 2.0, 1e-300, nan, 1.0])
    y = np.array([0.0, -1.0, 0.0, inf, 1.0, 0.25, 3.0, 1.0, 1.0, nan])
    with np.errstate(all="ignore"):
        for ours, ref in [(sps.rel_entr, sp.rel_entr), (sps.kl_div, sp.kl_div)]:
            _close(ours(enp.asarray(x), enp.asarray(y)), ref(x, y), np.float64, 1e-14)
    z = np.array([1.5, 0.0, -3.0, -3.0, 2.0, 0.5, -2.5, 10.0, 3.0])
    m = np.array([0.0, 2.0, 2.0, 3.0, 3.5, -0.25, 1.5, 20.0, -1.0])
    _close(sps.poch(enp.asarray(z), enp.asarray(m)), sp.poch(z, m), np.float64, 1e-13)


def test_multigammaln_and_softmax():
    a = np.array([1.5, 3.0, 10.25])
    for d in (1, 2, 3, 5):
        ok = a > (d - 1) / 2
        _close(sps.multigammaln(enp.asarray(a[ok]), d), sp.multigammaln(a[ok], d), np.float64, 1e-14)
    x = np.random.RandomState(0).randn(3, 4, 2) * 30
    for axis in (None, 0, -1, (0, 2)):
        _close(sps.softmax(enp.asarray(x), axis=axis), sp.softmax(x, axis=axis), np.float64, 1e-13)
        np.testing.assert_allclose(np.asarray(sps.log_softmax(enp.asarray(x), axis=axis)),
                                   sp.log_softmax(x, axis=axis), rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(np.asarray(sps.softmax(enp.asarray([-inf, 0.0, -inf]))), [0.0, 1.0, 0.0])


INC_EDGES_A = [0.0, 0.0, 1.0, -1.0, 1.0, 1.0, inf, 2.0, nan, inf, 3.0, 1e-300]
INC_EDGES_X = [0.0, 1.0, 0.0, 1.0, -1.0, inf, 1.0, nan, 1.0, inf, 1e-200, 1.0]


@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_incomplete_gamma_values(name):
    ours, ref = getattr(sps, name), getattr(sp, name)
    rs = np.random.RandomState(1)
    a = np.r_[np.exp(rs.uniform(-6, 7.5, 300)), INC_EDGES_A]
    x = np.r_[a[:300] * np.exp(rs.uniform(-1.5, 1.5, 300)), INC_EDGES_X]
    want = ref(a, x)
    got = np.asarray(ours(enp.asarray(a), enp.asarray(x)))
    # scipy's own error reaches 6e-12 for a ~ 2000 (mpmath below is the accuracy check)
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-300, equal_nan=True)
    assert np.median(np.abs(got[want > 0] / want[want > 0] - 1)) < 1e-15


def test_betainc_values():
    rs = np.random.RandomState(2)
    n = 300
    a = np.exp(rs.uniform(-4, 7, n))
    b = np.exp(rs.uniform(-4, 7, n))
    m0 = a / (a + b)
    x = np.clip(np.where(rs.rand(n) < 0.5, rs.uniform(0, 1, n),
                         m0 + rs.randn(n) * np.sqrt(m0 * (1 - m0) / (a + b + 1))), 1e-8, 1 - 1e-8)
    ea = [0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, -1.0, inf, 2.0, 1.0, 0.0, 2.0, 3.0]
    eb = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 3.0, inf, 1.0, 3.0, 2.0]
    ex = [0.5, 0.5, 0.5, 0.0, 1.0, -0.1, 1.1, 0.5, 0.5, nan, 0.5, 0.0, 1e-300, 1.0]
    a, b, x = np.r_[a, ea], np.r_[b, eb], np.r_[x, ex]
    with np.errstate(all="ignore"):
        want = sp.betainc(a, b, x)
    got = np.asarray(sps.betainc(enp.asarray(a), enp.asarray(b), enp.asarray(x)))
    np.testing.assert_allclose(got, want, rtol=5e-12, atol=1e-300, equal_nan=True)
    assert np.median(np.abs(got[want > 0] / want[want > 0] - 1)) < 1e-15


_GAMMAINC, _GAMMAINCC, _BETAINC = ember.jit(sps.gammainc), ember.jit(sps.gammaincc), ember.jit(sps.betainc)


@settings(max_examples=15, deadline=None)
@given(st.floats(-5, 7), st.floats(-1.2, 1.2))
def test_incomplete_gamma_vs_mpmath(loga, logr):
    a, x = math.exp(loga), math.exp(loga + logr)
    mp.mp.dps = 40
    p = mp.gammainc(a, 0, x, regularized=True)
    q = mp.gammainc(a, x, mp.inf, regularized=True)
    # the condition number of P, Q in (a, x) is about |log P| (resp. Q): 300 eps at
    # 1e-100; and the one formed as 1 - the other carries that one's error times P / Q
    for fn, v, w in [(_GAMMAINC, p, q), (_GAMMAINCC, q, p)]:
        if v < 1e-300:
            continue
        cond_x = float(mp.mpf(x) ** a * mp.exp(-x) / mp.gamma(a) / v)   # x P'(x) / P
        tol = 8e-16 * max(8.0, abs(float(mp.log(v))), float(2 * w / v), cond_x)
        assert abs(float(fn(np.float64(a), np.float64(x))) / float(v) - 1) < tol


@settings(max_examples=15, deadline=None)
@given(st.floats(-4, 6), st.floats(-4, 6), st.floats(1e-6, 1 - 1e-6))
def test_betainc_vs_mpmath(loga, logb, x):
    a, b = math.exp(loga), math.exp(logb)
    mp.mp.dps = 40
    want = mp.betainc(a, b, 0, x, regularized=True)
    if want < 1e-280 or 1 - want < 1e-30:   # underflows / rounds to 1: nothing to compare
        return
    # conditioning as for gammainc: |log I| + |log(1 - I)| covers both branches
    # ... and the condition number in x, x I'(x) / I (min(I, 1 - I) for the branch
    # formed as 1 - the other)
    dens = mp.mpf(x) ** a * mp.mpf(1 - x) ** b / mp.beta(a, b) / (x * (1 - x))
    cond_x = float(x * dens / min(want, 1 - want))
    ratio = float(2 * max(want, 1 - want) / min(want, 1 - want))   # the 1 - other branch
    tol = 8e-16 * max(8.0, abs(float(mp.log(want))) + abs(float(mp.log(1 - want))), cond_x, ratio)
    # below a, b = 10 the prefactor is the plain sum a log x + b log(1-x) - betaln(a, b):
    # eps times its terms' size (15 ulp at a = b = 7.4, x = 0.44)
    if max(a, b) < 10:
        tol += 2.2e-16 * (a * abs(math.log(x)) + b * abs(math.log1p(-x)) + abs(float(mp.log(mp.beta(a, b)))))
    got = float(_BETAINC(np.float64(a), np.float64(b), np.float64(x)))
    assert abs(got / float(want) - 1) < tol


@pytest.mark.parametrize("fn,x", [
    (sps.gamma, [-1.5, 0.3, 4.0]), (sps.factorial, [0.5, 3.0]), (sps.ndtr, [-9.0, -0.3, 0.8, 6.0]),
    (sps.ndtri, [0.03, 0.3, 0.9]), (sps.log_ndtr, [-40.0, -3.0, 0.5, 9.0]), (sps.entr, [0.3, 2.0]),
    (sps.i0, [-2.0, 0.5, 35.0]), (sps.i1, [-2.0, 0.5, 35.0]),
    (lambda v: sps.multigammaln(v, 3), [1.7, 4.0]), (lambda v: sps.poch(v, 2.5), [0.7, 3.0]),
    (lambda v: sps.poch(1.5, v), [0.7, 3.0]), (lambda v: sps.rel_entr(v, 1.5 - v), [0.3, 1.1]),
    (lambda v: sps.kl_div(v, 2.0 * v * v), [0.3, 1.1]),
    (lambda v: sps.softmax(v, axis=0), [0.3, -1.0, 2.0]), (lambda v: sps.log_softmax(v), [0.3, -1.0, 2.0]),
])
def test_derivatives_vs_finite_differences(fn, x):
    check_grads(fn, (enp.asarray(np.array(x)),), order=2)


@pytest.fixture
def short_loops(monkeypatch):
    """The fractions / series at a, b, x <= 7 converge in ~30 steps: run 80, not 500, so
    that the reference interpreter's nested derivative passes stay quick."""
    monkeypatch.setattr(sps, "_IGAMMA_STEPS", 80)
    monkeypatch.setattr(sps, "_IBETA_STEPS", 80)


def test_incomplete_derivatives_vs_finite_differences(monkeypatch):
    # a, b <= 3, x <= 5: 40 steps converge past the finite differences' 1e-5 (the
    # shape derivatives at full length are checked against mpmath below)
    monkeypatch.setattr(sps, "_IGAMMA_STEPS", 40)
    monkeypatch.setattr(sps, "_IBETA_STEPS", 40)
    # one point on each side of x = a + 1 (series / fraction)
    a = enp.asarray(np.array([0.5, 3.0]))
    x = enp.asarray(np.array([0.3, 5.0]))
    check_grads(sps.gammainc, (a, x), order=2, modes=("fwd",))
    check_grads(sps.gammaincc, (a, x), order=1)
    check_grads(sps.betainc, (enp.asarray(np.array([0.5, 3.0])), enp.asarray(np.array([2.0, 1.5])),
                              enp.asarray(np.array([0.3, 0.8]))), order=1)
    # second order in x alone
    check_grads(lambda v: sps.betainc(2.5, 3.0, v), (enp.asarray(np.array([0.2, 0.7])),), order=2)


def test_shape_derivatives_vs_mpmath():
    mp.mp.dps = 30
    f64 = np.float64
    dp = ember.jit(ember.grad(sps.gammainc))
    dq = ember.jit(ember.grad(sps.gammaincc))
    for a, x in [(2.0, 4.0), (2.0, 1.0), (7.0, 6.0), (3.0, 30.0), (500.0, 520.0), (1e-3, 2.0)]:
        want = float(mp.diff(lambda aa: mp.gammainc(aa, 0, x, regularized=True), a))
        assert abs(float(dp(f64(a), f64(x))) / want - 1) < 1e-13, (a, x)
        assert abs(float(dq(f64(a), f64(x))) / want + 1) < 1e-13, (a, x)
    db = ember.jit(ember.grad(sps.betainc, argnums=(0, 1, 2)))
    # second order in the shape, through the loop twice
    d2p = float(ember.grad(ember.grad(lambda aa: sps.gammainc(aa, f64(3.0))))(f64(2.0)))
    assert abs(d2p / float(mp.diff(lambda aa: mp.gammainc(aa, 0, 3, regularized=True), 2, 2)) - 1) < 1e-13
    d2b = float(ember.grad(ember.grad(lambda aa: sps.betainc(aa, f64(3.0), f64(0.4))))(f64(2.5)))
    assert abs(d2b / float(mp.diff(lambda aa: mp.betainc(aa, 3, 0, 0.4, regularized=True), 2.5, 2)) - 1) < 1e-13
    # integer b: the fraction terminates, its derivative in b does not
    for a, b, x in [(2.0, 3.0, 0.4), (0.5, 0.7, 0.9), (30.0, 50.0, 0.4), (200.0, 3.0, 0.99), (3.0, 2.0, 0.9)]:
        ga, gb, gx = db(f64(a), f64(b), f64(x))
        for got, k in [(ga, 0), (gb, 1), (gx, 2)]:
            args = [a, b, x]

            def f(v, k=k, args=args):
                args = list(args)
                args[k] = v
                return mp.betainc(args[0], args[1], 0, args[2], regularized=True)
            want = float(mp.diff(f, args[k]))
            assert abs(float(got) / want - 1) < 1e-13, (a, b, x, k)


def test_vmap_and_jit(short_loops):
    a = enp.asarray(np.array([0.5, 2.0, 30.0, 4.0]))
    x = enp.asarray(np.array([0.2, 3.0, 25.0, 4.0]))
    check_vmap(sps.gammainc, (a, x), atol=1e-14, rtol=1e-14)
    check_vmap(lambda v: sps.betainc(v, 2.0, 0.3), (a,), atol=1e-14, rtol=1e-14)
    check_vmap(sps.ndtri, (enp.asarray(np.array([0.01, 0.5, 0.99])),))
    check_vmap(lambda v: sps.softmax(v, axis=-1), (enp.asarray(np.random.RandomState(0).randn(3, 4)),))
    check_vmap(ember.grad(lambda v: sps.gammaincc(v, 3.0)), (a,), atol=1e-14, rtol=1e-14)
    got = ember.jit(ember.grad(lambda aa, xx: sps.betainc(aa, 2.0, xx), argnums=(0, 1)))(np.float64(2.5), np.float64(0.4))
    want = ember.grad(lambda aa, xx: sps.betainc(aa, 2.0, xx), argnums=(0, 1))(np.float64(2.5), np.float64(0.4))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-14)


HALF = [np.float16, ml_dtypes.bfloat16]


@pytest.mark.parametrize("dt", HALF + [np.float32])
def test_dtypes(dt):
    cases = [(sps.gamma, (3.5,)), (sps.ndtri, (0.3,)), (sps.log_ndtr, (-12.0,)), (sps.i0, (3.0,)),
             (sps.gammainc, (2.5, 3.0)), (sps.gammaincc, (2.5, 3.0)), (sps.betainc, (2.0, 3.0, 0.4)),
             (sps.entr, (0.3,)), (sps.kl_div, (0.3, 0.5)), (sps.poch, (2.5, 1.5)), (sps.ndtr, (0.7,)),
             (lambda v: sps.multigammaln(v, 2), (3.0,)), (sps.factorial, (4.0,)),
             (sps.softmax, ([0.3, 1.2],)), (sps.log_softmax, ([0.3, 1.2],))]
    for fn, args in cases:
        got = fn(*[enp.asarray(np.array(v, dt)) for v in args])
        assert got.dtype == dt, fn
        want = np.asarray(fn(*[np.float64(np.array(v, dt)) for v in args]))
        # the float32 computation rounded once to the half type
        np.testing.assert_allclose(np.asarray(got).astype(np.float64), want,
                                   rtol=float(ml_dtypes.finfo(dt).eps) * (16 if dt == np.float32 else 1))


def test_integer_inputs_become_float():
    assert sps.gamma(enp.arange(1, 4)).dtype == np.float32
    assert sps.gammainc(2, enp.arange(3)).dtype == np.float32
    with ember.default_float("float64"):
        assert sps.betainc(2, 3, enp.asarray([0, 1])).dtype == np.float64
        np.testing.assert_array_equal(np.asarray(sps.betainc(2, 3, enp.asarray([0, 1]))), [0.0, 1.0])


def test_bad_arguments():
    with pytest.raises(ValueError, match="factorial: exact=True"):
        sps.factorial(3, exact=True)
    with pytest.raises(ValueError, match="multigammaln: d"):
        sps.multigammaln(3.0, 0)
    with pytest.raises(ValueError, match="log_ndtr: series_order"):
        sps.log_ndtr(1.0, series_order=-1)
    with pytest.raises(ValueError, match="softmax: axis 2"):
        sps.softmax(enp.ones((2, 2)), axis=2)
    with pytest.raises(TypeError, match="gammainc"):
        sps.gammainc(enp.asarray([1.0 + 1j]), 1.0)
    with pytest.raises(TypeError, match="ndtri: complex inputs are not supported, got complex64"):
        sps.ndtri(enp.asarray([0.5 + 0j], dtype="complex64"))
