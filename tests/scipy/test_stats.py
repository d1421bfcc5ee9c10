"""ember.scipy.stats vs scipy.stats: every function of every family over points inside,
on the edge of and outside the support (and +-inf, NaN, invalid parameters), derivatives
vs float64 finite differences, vmap, jit and dtypes."""
import ml_dtypes
import numpy as np
import pytest
import scipy.stats as ss
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
import ember.scipy.special as sps
from ember.scipy import stats
from ember.testing import check_grads, check_vmap

inf, nan = np.inf, np.nan

@pytest.fixture(autouse=True)
def short_loops(monkeypatch):
    """The incomplete gamma / beta loops run 500 steps (test_special_extra checks them at
    that length up to shapes of 2000); every shape here is <= 40 (betainc's <= 20), where
    80 steps converge to the last bit, and the eager passes stay quick."""
    monkeypatch.setattr(sps, "_IGAMMA_STEPS", 80)
    monkeypatch.setattr(sps, "_IBETA_STEPS", 80)


X = np.array([-50.0, -3.0, -1.0, -0.0, 0.0, 1e-8, 0.3, 0.5, 1.0, 1.7, 4.0, 40.0, inf, -inf, nan])
Q = np.array([0.0, 1e-10, 0.01, 0.3, 0.5, 0.75, 0.99, 1.0, -0.1, 1.1, nan])

# family -> (list of (ember args, scipy kwargs) parameter sets, functions, points)
CONTINUOUS = {
    "norm": ([((), {}), ((0.5, 2.0), {"loc": 0.5, "scale": 2.0}), ((0.0, -1.0), {"loc": 0.0, "scale": -1.0})],
             ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]),
    "expon": ([((), {}), ((0.5, 2.0), {"loc": 0.5, "scale": 2.0}), ((0.0, 0.0), {"loc": 0.0, "scale": 0.0})],
              ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]),
    "laplace": ([((), {}), ((0.5, 2.0), {"loc": 0.5, "scale": 2.0}), ((0.0, -1.0), {"loc": 0.0, "scale": -1.0})],
                ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]),
    "logistic": ([((), {}), ((0.5, 2.0), {"loc": 0.5, "scale": 2.0})],
                 ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]),
    "cauchy": ([((), {}), ((0.5, 2.0), {"loc": 0.5, "scale": 2.0}), ((0.0, -1.0), {"loc": 0.0, "scale": -1.0})],
               ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]),
    "uniform": ([((), {}), ((-1.0, 3.0), {"loc": -1.0, "scale": 3.0}), ((0.0, -1.0), {"loc": 0.0, "scale": -1.0})],
                ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]),
    "t": ([((3.0,), {"df": 3.0}), ((0.7, 0.5, 2.0), {"df": 0.7, "loc": 0.5, "scale": 2.0}),
           ((40.0,), {"df": 40.0}), ((-1.0,), {"df": -1.0})],
          ["logpdf", "pdf", "cdf", "sf"]),
    "gamma": ([((1.0,), {"a": 1.0}), ((0.5,), {"a": 0.5}), ((3.5, 0.5, 2.0), {"a": 3.5, "loc": 0.5, "scale": 2.0}),
               ((-1.0,), {"a": -1.0})],
              ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]),
    "beta": ([((2.0, 5.0), {"a": 2.0, "b": 5.0}), ((0.5, 0.5), {"a": 0.5, "b": 0.5}), ((1.0, 1.0), {"a": 1.0, "b": 1.0}),
              ((2.0, 3.0, -1.0, 3.0), {"a": 2.0, "b": 3.0, "loc": -1.0, "scale": 3.0}), ((0.0, 1.0), {"a": 0.0, "b": 1.0})],
             ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]),
}
CASES = [(fam, i, fn) for fam, (params, fns) in CONTINUOUS.items() for i in range(len(params)) for fn in fns]


def _ref(dist, fn, pts, kw):
    with np.errstate(all="ignore"):
        return np.asarray(getattr(dist, fn)(pts, **kw), np.float64)


@pytest.mark.parametrize("fam,i,fn", CASES)
def test_continuous_vs_scipy(fam, i, fn):
    args, kw = CONTINUOUS[fam][0][i]
    pts = Q if fn in ("ppf", "isf") else X
    want = _ref(getattr(ss, fam), fn, pts, kw)
    ours = getattr(getattr(stats, fam), fn)
    got = np.asarray(ours(enp.asarray(pts), *args))
    assert got.dtype == np.float64
    # exp(logpdf) carries logpdf's absolute error as a relative one; the cdf of the t
    # and the gamma / beta ones come through the incomplete functions
    rtol = 1e-13 if fn not in ("pdf",) else 1e-13 * 50
    if fam in ("t", "gamma", "beta"):
        rtol = 5e-13
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-300, equal_nan=True,
                               err_msg=f"{fam}.{fn}{args}")


def test_ppf_inverts_cdf():
    # (q at 1e-12 would test loc + 2e-12 rounding, not the functions)
    q = np.array([1e-6, 0.01, 0.3, 0.5, 0.8, 0.999])
    for fam in ("norm", "expon", "laplace", "logistic", "cauchy", "uniform"):
        mod = getattr(stats, fam)
        x = mod.ppf(enp.asarray(q), 0.5, 2.0)
        np.testing.assert_allclose(np.asarray(mod.cdf(x, 0.5, 2.0)), q, rtol=1e-10, err_msg=fam)


K = np.array([-1.0, 0.0, 1.0, 2.0, 2.5, 3.0, 7.0, 30.0, inf, nan])


@pytest.mark.parametrize("mu", [0.0, 0.3, 3.0, 25.0, -1.0])
def test_poisson(mu):
    for fn in ("logpmf", "pmf", "cdf", "sf"):
        want = _ref(ss.poisson, fn, K, {"mu": mu})
        got = np.asarray(getattr(stats.poisson, fn)(enp.asarray(K), mu))
        # the k = 30 tails (1e-51 at mu = 0.3) through the incomplete gamma function
        np.testing.assert_allclose(got, want, rtol=1e-13 if fn.endswith("pmf") else 5e-13,
                                   atol=1e-300, equal_nan=True, err_msg=fn)
    np.testing.assert_allclose(np.asarray(stats.poisson.pmf(enp.asarray(K), 3.0, loc=1.0)),
                               _ref(ss.poisson, "pmf", K, {"mu": 3.0, "loc": 1.0}), rtol=1e-13, equal_nan=True)


@pytest.mark.parametrize("p", [0.0, 0.25, 1.0, 1.5])
def test_bernoulli_binom(p):
    k = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, nan])
    for fn in ("logpmf", "pmf", "cdf"):
        want = _ref(ss.bernoulli, fn, k, {"p": p})
        got = np.asarray(getattr(stats.bernoulli, fn)(enp.asarray(k), p))
        np.testing.assert_allclose(got, want, rtol=1e-14, equal_nan=True, err_msg=fn)
    qs = np.array([0.0, 0.1, 0.69, 0.7, 0.71, 0.75, 1.0, -0.1, 1.1, nan])
    np.testing.assert_array_equal(np.asarray(stats.bernoulli.ppf(enp.asarray(qs), p, 2.0)),
                                  _ref(ss.bernoulli, "ppf", qs, {"p": p, "loc": 2.0}))
    for n in (0.0, 4.0, 60.0, 2.5):
        for fn in ("logpmf", "pmf"):
            want = _ref(ss.binom, fn, k, {"n": n, "p": p})
            got = np.asarray(getattr(stats.binom, fn)(enp.asarray(k), n, p))
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-300, equal_nan=True,
                                       err_msg=f"binom.{fn} n={n}")


def test_binom_large_n():
    k = np.array([0.0, 10.0, 500.0, 999.0, 1000.0])
    got = np.asarray(stats.binom.logpmf(enp.asarray(k), 1000.0, 0.4))
    np.testing.assert_allclose(got, ss.binom.logpmf(k, 1000, 0.4), rtol=1e-12)


def test_multivariate_normal():
    rs = np.random.RandomState(0)
    d = 4
    A = rs.randn(d, d)
    cov = A @ A.T + d * np.eye(d)
    mean = rs.randn(d)
    x = rs.randn(3, 5, d)
    want = ss.multivariate_normal.logpdf(x, mean, cov)
    got = np.asarray(stats.multivariate_normal.logpdf(enp.asarray(x), enp.asarray(mean), enp.asarray(cov)))
    np.testing.assert_allclose(got, want, rtol=1e-13)
    np.testing.assert_allclose(np.asarray(stats.multivariate_normal.pdf(enp.asarray(x[0, 0]), mean, cov)),
                               ss.multivariate_normal.pdf(x[0, 0], mean, cov), rtol=1e-13)
    # scalar cov: cov * identity; scalar mean: the univariate normal with variance cov
    np.testing.assert_allclose(np.asarray(stats.multivariate_normal.logpdf(enp.asarray(x), enp.asarray(mean), 2.0)),
                               ss.multivariate_normal.logpdf(x, mean, 2.0 * np.eye(d)), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(stats.multivariate_normal.logpdf(np.array([0.3, 1.0]), np.float64(0.5),
                                                                          np.float64(2.0))),
                               ss.norm.logpdf([0.3, 1.0], 0.5, np.sqrt(2.0)), rtol=1e-14)
    with pytest.raises(ValueError, match="multivariate_normal.logpdf: cov must be"):
        stats.multivariate_normal.logpdf(enp.zeros(3), enp.zeros(3), enp.eye(2))
    with pytest.raises(ValueError, match="multivariate_normal.logpdf: x must end"):
        stats.multivariate_normal.logpdf(enp.zeros(2), enp.zeros(3), enp.eye(3))


def test_dirichlet():
    alpha = np.array([1.5, 2.0, 3.0])
    rs = np.random.RandomState(1)
    x = rs.dirichlet(alpha, size=6).T   # (K, N): components on the first axis, as scipy
    want = ss.dirichlet.logpdf(x, alpha)
    got = np.asarray(stats.dirichlet.logpdf(enp.asarray(x), enp.asarray(alpha)))
    np.testing.assert_allclose(got, want, rtol=1e-13)
    got2 = np.asarray(stats.dirichlet.logpdf(enp.asarray(x[:-1]), enp.asarray(alpha)))
    np.testing.assert_allclose(got2, want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(stats.dirichlet.pdf(enp.asarray(x[:, 0]), alpha)),
                               ss.dirichlet.pdf(x[:, 0], alpha), rtol=1e-13)
    off = np.array([[0.5, -0.1], [0.6, 0.6], [0.1, 0.5]])   # sums != 1 / a negative entry
    assert np.all(np.asarray(stats.dirichlet.logpdf(enp.asarray(off), alpha)) == -inf)
    with pytest.raises(ValueError, match="dirichlet.logpdf: x must have 3"):
        stats.dirichlet.logpdf(enp.ones((5,)), alpha)
    with pytest.raises(ValueError, match="dirichlet.logpdf: alpha must be one-dimensional"):
        stats.dirichlet.logpdf(enp.ones((2,)), enp.ones((2, 2)))


@pytest.mark.parametrize("fn,args", [
    (stats.norm.logpdf, (0.3, 0.5, 2.0)), (stats.norm.logcdf, (-3.0, 0.5, 2.0)), (stats.norm.ppf, (0.3, 0.5, 2.0)),
    (stats.expon.logpdf, (1.3, 0.5, 2.0)), (stats.expon.logcdf, (1.3, 0.5, 2.0)),
    (stats.laplace.cdf, (1.3, 0.5, 2.0)), (stats.logistic.logpdf, (1.3, 0.5, 2.0)),
    (stats.cauchy.cdf, (-1.3, 0.5, 2.0)), (stats.uniform.logsf, (0.3, 0.0, 2.0)),
    (stats.t.logpdf, (0.3, 3.0, 0.5, 2.0)), (stats.gamma.logpdf, (1.3, 2.5)), (stats.beta.logpdf, (0.3, 2.0, 3.0)),
    (stats.poisson.logpmf, (3.0, 2.5)), (stats.binom.logpmf, (3.0, 7.0, 0.4)),
    (stats.bernoulli.logpmf, (1.0, 0.3)),
])
def test_derivatives(fn, args):
    # k and n of the discrete families are not differentiable: hold them constant
    if fn in (stats.poisson.logpmf, stats.binom.logpmf, stats.bernoulli.logpmf):
        nk = 2 if fn is stats.binom.logpmf else 1
        check_grads(lambda *p: fn(*args[:nk], *p), tuple(np.float64(v) for v in args[nk:]), order=2)
    else:
        check_grads(fn, tuple(np.float64(v) for v in args), order=2)


def test_derivatives_through_incomplete_functions():
    f64 = np.float64
    check_grads(stats.gamma.cdf, (f64(1.3), f64(2.5)), order=1)
    check_grads(stats.beta.sf, (f64(0.3), f64(2.0), f64(3.0)), order=1)
    check_grads(stats.t.cdf, (f64(0.7), f64(3.0)), order=1)
    check_grads(lambda mu: stats.poisson.cdf(3.0, mu), (f64(2.5),), order=1)


def test_multivariate_derivatives():
    rs = np.random.RandomState(0)
    A = rs.randn(3, 3)
    cov = enp.asarray(A @ A.T + 3 * np.eye(3))
    x, mean = enp.asarray(rs.randn(2, 3)), enp.asarray(rs.randn(3))
    check_grads(lambda x, m, c: stats.multivariate_normal.logpdf(x, m, c), (x, mean, cov), order=1)
    alpha = enp.asarray(np.array([1.5, 2.0, 3.0]))
    xd = enp.asarray(np.array([0.2, 0.3, 0.5]))
    check_grads(lambda a: stats.dirichlet.logpdf(xd, a), (alpha,), order=2)


def test_vmap_and_jit():
    x = enp.asarray(np.linspace(-3, 3, 5))
    check_vmap(lambda v: stats.norm.logcdf(v, 0.5, 2.0), (x,))
    check_vmap(lambda v: stats.t.cdf(v, 3.0), (x,), atol=1e-14, rtol=1e-14)
    check_vmap(lambda s: stats.gamma.logpdf(2.0, s), (enp.asarray(np.array([0.5, 1.0, 3.0])),))
    means = enp.asarray(np.random.RandomState(0).randn(4, 2))
    check_vmap(lambda m: stats.multivariate_normal.logpdf(enp.zeros(2), m, enp.eye(2)), (means,))
    f = ember.jit(lambda v: stats.beta.cdf(v, 2.0, 3.0) + stats.poisson.logpmf(2.0, v))
    np.testing.assert_allclose(np.asarray(f(np.float64(0.4))),
                               ss.beta.cdf(0.4, 2, 3) + ss.poisson.logpmf(2, 0.4), rtol=1e-14)


@settings(max_examples=20, deadline=None)
@given(st.floats(-30, 30), st.floats(-5, 5), st.floats(0.05, 20))
def test_norm_logcdf_logsf_hypothesis(x, loc, scale):
    z = (x - loc) / scale
    want_cdf, want_sf = ss.norm.logcdf(z), ss.norm.logsf(z)
    np.testing.assert_allclose(float(stats.norm.logcdf(np.float64(x), loc, scale)), want_cdf,
                               rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(float(stats.norm.logsf(np.float64(x), loc, scale)), want_sf,
                               rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("dt", [np.float16, ml_dtypes.bfloat16, np.float32])
def test_dtypes(dt):
    cases = [(stats.norm.logpdf, (0.3,)), (stats.norm.cdf, (0.3,)), (stats.expon.logcdf, (0.3,)),
             (stats.laplace.cdf, (0.3,)), (stats.logistic.logpdf, (0.3,)), (stats.cauchy.ppf, (0.3,)),
             (stats.uniform.cdf, (0.3,)), (stats.t.logpdf, (0.3, 3.0)), (stats.t.cdf, (0.3, 3.0)),
             (stats.gamma.cdf, (1.3, 2.0)), (stats.beta.logpdf, (0.3, 2.0, 3.0)),
             (stats.poisson.logpmf, (2.0, 1.5)), (stats.binom.pmf, (2.0, 4.0, 0.3)),
             (stats.bernoulli.pmf, (1.0, 0.3))]
    eps = float(ml_dtypes.finfo(dt).eps)
    for fn, args in cases:
        got = fn(*[enp.asarray(np.array(v, dt)) for v in args])
        assert got.dtype == dt, fn
        want = np.asarray(fn(*[np.float64(np.array(v, dt)) for v in args]))
        np.testing.assert_allclose(np.asarray(got).astype(np.float64), want,
                                   rtol=eps * (16 if dt == np.float32 else 2), err_msg=str(fn))
    assert stats.norm.logpdf(enp.arange(3)).dtype == np.float32
    with pytest.raises(TypeError, match="norm.logpdf: complex inputs are not supported"):
        stats.norm.logpdf(enp.asarray([1j]))


def test_multivariate_normal_allow_singular_matches_scipys_degenerate_density():
    import scipy.stats as ss
    from ember.scipy.stats import multivariate_normal as mvn
    rng = np.random.default_rng(7)
    A = rng.standard_normal((4, 2))
    cov = A @ A.T                      # rank 2
    mean = rng.standard_normal(4)
    inside = (mean[:, None] + A @ rng.standard_normal((2, 6))).T
    want = ss.multivariate_normal.logpdf(inside, mean, cov, allow_singular=True)
    np.testing.assert_allclose(mvn.logpdf(inside, mean, cov, allow_singular=True), want, rtol=1e-9)
    np.testing.assert_allclose(mvn.pdf(inside, mean, cov, allow_singular=True), np.exp(want), rtol=1e-9)
    outside = inside + 0.1             # off the support: scipy's -inf
    assert np.all(np.isneginf(np.asarray(mvn.logpdf(outside, mean, cov, allow_singular=True))))
    # a full-rank cov gives the ordinary density, with the same gradient
    C = np.array([[2.0, 0.3], [0.3, 1.0]])
    x = rng.standard_normal((3, 2))
    np.testing.assert_allclose(mvn.logpdf(x, np.zeros(2), C, allow_singular=True),
                               ss.multivariate_normal.logpdf(x, np.zeros(2), C), rtol=1e-12)
    g1 = ember.grad(lambda m: mvn.logpdf(x, m, C, allow_singular=True).sum())(np.zeros(2))
    g2 = ember.grad(lambda m: mvn.logpdf(x, m, C).sum())(np.zeros(2))
    np.testing.assert_allclose(g1, g2, rtol=1e-12)
