"""ember.scipy.special vs scipy.special: values over dtypes and edge cases (0, negatives,
+-inf, NaN), derivatives vs float64 finite differences, vmap and jit, and JAX's xlogy
derivative at 0."""
import numpy as np
import pytest
import scipy.special as sp
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
import ember.scipy.special as sps
from ember.testing import check_grads, check_vmap

EDGE = [0.0, -0.0, 0.5, 1.0, 2.5, -0.5, -2.5, 7.0, 31.0, -40.0, np.inf, -np.inf, np.nan]

UNARY = {
    "gammaln": (sps.gammaln, sp.gammaln, EDGE),
    "digamma": (sps.digamma, sp.digamma, [0.5, 1.0, 2.5, -0.5, -2.5, 7.0, 31.0, np.inf, np.nan]),
    "erf": (sps.erf, sp.erf, EDGE),
    "erfc": (sps.erfc, sp.erfc, EDGE),
    "erfinv": (sps.erfinv, sp.erfinv, [0.0, -0.0, 0.3, -0.9, 0.999, 1.0, -1.0, 2.0, np.nan]),
    "i0e": (sps.i0e, sp.i0e, EDGE + [29.99, 30.01, -30.01, 1e-3, 700.0]),
    "i1e": (sps.i1e, sp.i1e, EDGE + [29.99, 30.01, -30.01, 1e-3, 700.0]),
    "expit": (sps.expit, sp.expit, EDGE),
    "logit": (sps.logit, sp.logit, [0.0, 0.1, 0.5, 0.9, 1.0, -0.5, 1.5, np.nan]),
}
RTOL = {np.float64: 1e-13, np.float32: 2e-6}


def _close(got, want, dt, rtol=None):
    got = np.asarray(got)
    assert got.dtype == dt
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol or RTOL[dt],
                               atol=RTOL[dt] * 1e-2, equal_nan=True)


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_unary_values_and_edges(name, dt):
    ours, ref, pts = UNARY[name]
    x = np.array(pts, dt)
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64))
    rtol = RTOL[dt] * (100 if name in ("gammaln", "digamma") else 10)  # near the poles/roots
    _close(ours(enp.asarray(x)), want, dt, rtol)
    _close(ember.jit(ours)(enp.asarray(x)), want, dt, rtol)


def test_integer_inputs_become_float():
    assert sps.gammaln(enp.arange(1, 4)).dtype == np.float32
    np.testing.assert_allclose(np.asarray(sps.gammaln(enp.arange(1, 4))), sp.gammaln([1, 2, 3]),
                               rtol=1e-6)
    with ember.default_float("float64"):
        assert sps.erf(enp.arange(3)).dtype == np.float64


@pytest.mark.parametrize("fn,x", [
    (sps.gammaln, [0.7, 3.2]), (sps.digamma, [0.7, 3.2]), (sps.erf, [-0.4, 1.1]),
    (sps.erfc, [-0.4, 1.1]), (sps.erfinv, [-0.4, 0.6]), (sps.i0e, [-2.0, 0.3, 35.0]),
    (sps.i1e, [-2.0, 0.3, 35.0, 0.0]), (sps.expit, [-1.0, 2.0]), (sps.logit, [0.2, 0.7]),
    (lambda x: sps.polygamma(2, x), [0.7, 3.2]), (lambda x: sps.zeta(3.0, x), [0.7, 3.2]),
    (lambda x: sps.zeta(x, 1.5), [2.5, 4.0]),
])
def test_derivatives_vs_finite_differences(fn, x):
    check_grads(fn, (enp.asarray(np.array(x)),), order=2)


def test_vmap():
    x = enp.asarray(np.linspace(-5, 40, 7))
    for fn in (sps.i0e, sps.i1e, sps.gammaln, lambda v: sps.zeta(2.0, enp.abs(v) + 1.0)):
        check_vmap(fn, (x,))
    check_vmap(lambda a, b: sps.betaln(a, b), (enp.asarray([1.0, 2.5]), enp.asarray([3.0, 0.5])))


@settings(max_examples=25, deadline=None)
@given(st.floats(1.05, 30.0), st.floats(-4.5, 50.0))
def test_zeta_hurwitz(s, q):
    if abs(q - round(q)) < 1e-3 and q <= 0:
        q += 0.5
    with np.errstate(all="ignore"):
        want = sp.zeta(s, q)
    got = float(sps.zeta(enp.asarray(s, dtype="float64"), enp.asarray(q, dtype="float64")))
    if q < 0:
        # negative non-integer q with non-integer s: complex powers, NaN like scipy's
        if s != int(s):
            assert np.isnan(got) == np.isnan(want)
            return
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_zeta_edges():
    z = lambda s, q: float(sps.zeta(enp.asarray(s, dtype="float64"), q))  # noqa: E731
    assert abs(z(2.0, None) - np.pi ** 2 / 6) < 1e-15
    assert z(1.0, 2.0) == np.inf and z(2.0, 0.0) == np.inf and z(2.0, -2.0) == np.inf
    assert np.isnan(z(0.5, 2.0))
    np.testing.assert_allclose(z(2.0, -1.5), sp.zeta(2, -1.5), rtol=1e-12)
    np.testing.assert_allclose(z(40.0, 3.0), sp.zeta(40, 3.0), rtol=1e-12)


@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_polygamma_int_and_array_orders(n):
    x = np.array([0.3, 1.0, 2.5, 9.0, -1.5])
    want = sp.polygamma(n, x)
    np.testing.assert_allclose(np.asarray(sps.polygamma(n, enp.asarray(x))), want, rtol=1e-12)
    got = sps.polygamma(enp.full((5,), n, dtype="int32"), enp.asarray(x))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10)
    # a traced order
    got = ember.jit(sps.polygamma)(enp.asarray(n), enp.asarray(x))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10)


def test_polygamma_errors():
    with pytest.raises(ValueError, match="non-negative integer"):
        sps.polygamma(-1, 1.0)
    with pytest.raises(TypeError, match=r"n must be an integer or an integer array, got float32\[\]"):
        sps.polygamma(enp.asarray(1.0), 1.0)


def test_xlogy_and_xlog1py():
    x = np.array([0.0, 0.0, 1.0, 2.0, 0.0, -1.0])
    y = np.array([0.0, 2.0, 0.0, 3.0, np.inf, 0.5])
    for ours, ref in ((sps.xlogy, sp.xlogy), (sps.xlog1py, sp.xlog1py)):
        yy = y if ours is sps.xlogy else y - 1.0
        with np.errstate(all="ignore"):
            want = ref(x, yy)
        np.testing.assert_allclose(np.asarray(ours(enp.asarray(x), enp.asarray(yy))), want,
                                   rtol=1e-14, equal_nan=True)
    assert float(sps.xlogy(0.0, 0.0)) == 0.0
    # JAX's derivatives: d/dx = log y, d/dy = x / y
    gx, gy = ember.grad(sps.xlogy, argnums=(0, 1))(enp.asarray(0.0, dtype="float64"),
                                                   enp.asarray(2.0, dtype="float64"))
    assert float(gx) == np.log(2.0) and float(gy) == 0.0
    with np.errstate(all="ignore"):
        gx, gy = ember.grad(sps.xlogy, argnums=(0, 1))(0.0, 0.0)
    assert float(gx) == -np.inf and np.isnan(float(gy))
    check_grads(sps.xlogy, (enp.asarray([0.5, 2.0]), enp.asarray([1.5, 0.3])), order=2)
    check_grads(sps.xlog1py, (enp.asarray([0.5, 2.0]), enp.asarray([1.5, 0.3])), order=2)


def test_logsumexp():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 4)) * 50
    for axis in (None, 0, 1, (0, 1)):
        for keepdims in (False, True):
            np.testing.assert_allclose(
                np.asarray(sps.logsumexp(enp.asarray(a), axis=axis, keepdims=keepdims)),
                sp.logsumexp(a, axis=axis, keepdims=keepdims), rtol=1e-13)
    b = rng.normal(size=(3, 4))
    v, s = sps.logsumexp(enp.asarray(a), axis=1, b=enp.asarray(b), return_sign=True)
    wv, ws = sp.logsumexp(a, axis=1, b=b, return_sign=True)
    np.testing.assert_allclose(np.asarray(v), wv, rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(s), ws)
    # all -inf, overflow, a negative sum without return_sign
    assert float(sps.logsumexp(enp.asarray([-np.inf, -np.inf]))) == -np.inf
    assert float(sps.logsumexp(enp.asarray([1e4, 1e4]))) == pytest.approx(1e4 + np.log(2))
    assert np.isnan(float(sps.logsumexp(enp.asarray([0.0, 0.0]), b=enp.asarray([-1.0, -2.0]))))
    # gradient is softmax
    g = ember.grad(lambda a: sps.logsumexp(a))(enp.asarray(a[0]))
    np.testing.assert_allclose(np.asarray(g), sp.softmax(a[0]), rtol=1e-12)
    check_grads(lambda a: sps.logsumexp(a, axis=1), (enp.asarray(a / 50),), order=2)


def test_betaln():
    a = np.array([0.5, 1.0, 2.0, 7.5, 30.0])
    b = np.array([0.5, 3.0, 2.0, 0.25, 40.0])
    np.testing.assert_allclose(np.asarray(sps.betaln(enp.asarray(a), enp.asarray(b))),
                               sp.betaln(a, b), rtol=1e-12)
    check_grads(sps.betaln, (enp.asarray(a[:3]), enp.asarray(b[:3])), order=1)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_half_precision_computes_in_float32(dt):
    x = np.array([0.5, 5.0, 20.0, 40.0])
    tol = 1e-2 if dt == "bfloat16" else 2e-3
    for ours, ref in ((sps.i0e, sp.i0e), (sps.i1e, sp.i1e)):
        got = ours(enp.asarray(x).astype(dt))
        assert got.dtype == np.dtype(dt) if dt == "float16" else got.dtype.name == dt
        np.testing.assert_allclose(np.asarray(got).astype(np.float64), ref(x), rtol=tol)
    got = sps.zeta(enp.asarray(x + 2.0).astype(dt), 2.0)
    np.testing.assert_allclose(np.asarray(got).astype(np.float64), sp.zeta(x + 2.0, 2.0), rtol=tol,
                               atol=1e-7)
