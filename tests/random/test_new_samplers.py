"""poisson, binomial, geometric, chisquare, t, multivariate_normal, orthogonal, ball and
rademacher: bit-identical eagerly / under jit / under vmap over keys (the mechanism of
test_bit_identical), and statistically right (moments within 5 standard errors of the
closed forms, chi-square goodness of fit or Kolmogorov-Smirnov against scipy), with fixed
keys so every test is deterministic."""
import math

import ml_dtypes
import numpy as np
import pytest
import scipy.stats as ss

import ember
import ember.numpy as enp
from ember import random
from ember.testing import check_grads

from test_bit_identical import _check_paths

N = 20000
COV = np.array([[2.0, 0.6, 0.1], [0.6, 1.0, -0.3], [0.1, -0.3, 0.5]])

SAMPLERS = {
    "poisson": (lambda k, s, lam: random.poisson(k, lam, s),
                (np.array([0.0, 0.7, 4.0, 9.99, 10.0, 37.5, 1e4], np.float32),), (6, 7)),
    "binomial": (lambda k, s, n, p: random.binomial(k, n, p, s),
                 (np.array([0.0, 5.0, 30.0, 200.0, 1000.0], np.float32),
                  np.array([0.3, 0.0, 0.7, 0.45, 1.0], np.float32)), (6, 5)),
    "geometric": (lambda k, s, p: random.geometric(k, p, s), (np.float32(0.3),), (5, 7)),
    "chisquare": (lambda k, s, df: random.chisquare(k, df, s), (np.float32(2.5),), (5, 7)),
    "t": (lambda k, s, df: random.t(k, df, s), (np.float32(3.0),), (5, 7)),
    "mvn_cholesky": (lambda k, s, m, c: random.multivariate_normal(k, m, c, s), 
                     (np.ones(3, np.float32), COV.astype(np.float32)), (5, 7)),
    "mvn_eigh": (lambda k, s, m, c: random.multivariate_normal(k, m, c, s, method="eigh"),
                 (np.ones(3, np.float32), COV.astype(np.float32)), (5, 7)),
    "mvn_svd": (lambda k, s, m, c: random.multivariate_normal(k, m, c, s, method="svd"),
                (np.ones(3, np.float32), COV.astype(np.float32)), (5, 7)),
    "orthogonal": (lambda k, s: random.orthogonal(k, 4, s), (), (3,)),
    "orthogonal_rect": (lambda k, s: random.orthogonal(k, 5, s, m=3), (), (2,)),
    "ball_p2": (lambda k, s: random.ball(k, 3, 2, s), (), (5, 7)),
    "ball_p1": (lambda k, s: random.ball(k, 4, 1, s), (), (5, 7)),
    "ball_p3": (lambda k, s: random.ball(k, 2, 3.0, s), (), (5, 7)),
    "rademacher": (lambda k, s: random.rademacher(k, s), (), (5, 7)),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_bit_identical_eager_jit_vmap(name):
    fn, params, shape = SAMPLERS[name]
    _check_paths(lambda k, *p: fn(k, shape, *p), params)
    _check_paths(lambda k, *p: fn(k, (0,) + shape[1:], *p), params, key_seed=3)  # empty


@pytest.mark.parametrize("dtype", [np.float64, np.float16, ml_dtypes.bfloat16],
                         ids=["float64", "float16", "bfloat16"])
def test_float_dtypes_bit_identical(dtype):
    shape = (4, 9)
    for f in (lambda k: random.chisquare(k, 3.0, shape, dtype),
              lambda k: random.t(k, 4.0, shape, dtype),
              lambda k: random.binomial(k, 50.0, 0.4, shape, dtype),
              lambda k: random.multivariate_normal(k, np.zeros(2), np.eye(2), shape, dtype),
              lambda k: random.orthogonal(k, 3, (2,), dtype),
              lambda k: random.ball(k, 3, 1.5, shape, dtype)):
        _check_paths(f, ())
        assert f(random.key(0)).dtype == np.dtype(dtype)
    _check_paths(lambda k: random.poisson(k, np.float64(25.0), shape), ())


def _chi2_gof(x, pmf, support):
    """p-value of a chi-square goodness-of-fit test on bins with expected count >= 5."""
    x = np.asarray(x).ravel()
    counts = np.array([(x == v).sum() for v in support], float)
    expected = pmf(np.asarray(support)) * x.size
    keep = expected >= 5
    obs = np.append(counts[keep], x.size - counts[keep].sum())
    exp = np.append(expected[keep], x.size - expected[keep].sum())
    mask = exp > 0
    return ss.chisquare(obs[mask], exp[mask]).pvalue


def _moments_ok(x, mean, var):
    x = np.asarray(x, np.float64).ravel()
    se_mean = math.sqrt(var / x.size)
    assert abs(x.mean() - mean) < 5 * se_mean + 1e-12, (x.mean(), mean)
    assert abs(x.var() - var) < 5 * var * math.sqrt(2.0 / x.size) * 2 + 1e-12, (x.var(), var)


@pytest.mark.parametrize("lam", [0.3, 4.0, 9.5, 10.0, 60.0, 2500.0])
def test_poisson_statistics(lam):
    x = random.poisson(random.key(11), lam, (N,))
    assert x.dtype == enp.int32
    _moments_ok(x, lam, lam)
    lo, hi = ss.poisson.ppf(1e-6, lam), ss.poisson.ppf(1 - 1e-6, lam)
    assert _chi2_gof(x, lambda v: ss.poisson.pmf(v, lam), np.arange(lo, hi + 1)) > 1e-3


def test_poisson_edge_values():
    x = random.poisson(random.key(0), np.array([0.0, -1.0, np.nan, np.inf, 3.0], np.float32))
    assert x.tolist()[:4] == [0, -1, -1, -1] and x.tolist()[4] >= 0
    assert random.poisson(random.key(0), 2.0, (3,), dtype="int64").dtype == enp.int64


@pytest.mark.parametrize("n,p", [(10, 0.3), (40, 0.5), (300, 0.2), (1000, 0.93), (7, 0.99)])
def test_binomial_statistics(n, p):
    x = random.binomial(random.key(5), float(n), p, (N,))
    assert x.dtype == enp.float32
    xs = np.asarray(x)
    assert xs.min() >= 0 and xs.max() <= n and np.array_equal(xs, np.floor(xs))
    _moments_ok(x, n * p, n * p * (1 - p))
    assert _chi2_gof(x, lambda v: ss.binom.pmf(v, n, p), np.arange(n + 1)) > 1e-3


def test_binomial_edge_values():
    x = random.binomial(random.key(0), np.array([0.0, 5.0, 5.0, -1.0, 5.0, np.inf, 5.0]),
                        np.array([0.5, 0.0, 1.0, 0.5, 1.5, 0.5, np.nan]))
    got = np.asarray(x)
    assert got[:3].tolist() == [0.0, 0.0, 5.0] and np.isnan(got[3:]).all()


@pytest.mark.parametrize("p", [0.05, 0.3, 0.9, 1.0])
def test_geometric_statistics(p):
    x = random.geometric(random.key(2), p, (N,))
    assert x.dtype == enp.int32 and int(x.min()) >= 1
    if p == 1.0:
        assert set(np.asarray(x).tolist()) == {1}
        return
    _moments_ok(x, 1 / p, (1 - p) / p ** 2)
    assert _chi2_gof(x, lambda v: ss.geom.pmf(v, p), np.arange(1, 200)) > 1e-3


@pytest.mark.parametrize("df", [0.7, 3.0, 20.0])
def test_chisquare_ks(df):
    x = np.asarray(random.chisquare(random.key(3), df, (N,)), np.float64)
    assert ss.kstest(x, ss.chi2(df).cdf).pvalue > 1e-3
    _moments_ok(x, df, 2 * df)


@pytest.mark.parametrize("df", [1.0, 4.0, 30.0])
def test_t_ks(df):
    x = np.asarray(random.t(random.key(4), df, (N,)), np.float64)
    assert ss.kstest(x, ss.t(df).cdf).pvalue > 1e-3


@pytest.mark.parametrize("method", ["cholesky", "eigh", "svd"])
def test_multivariate_normal_moments(method):
    mean = np.array([1.0, -2.0, 0.5])
    x = np.asarray(random.multivariate_normal(random.key(6), mean, COV, (N,), np.float64,
                                              method=method))
    assert x.shape == (N, 3)
    se = np.sqrt(np.diag(COV) / N)
    assert (np.abs(x.mean(0) - mean) < 5 * se).all()
    # var of a sample covariance entry: (S_ij^2 + S_ii S_jj) / N
    se_cov = np.sqrt((COV ** 2 + np.outer(np.diag(COV), np.diag(COV))) / N)
    assert (np.abs(np.cov(x.T) - COV) < 5 * se_cov).all()
    # every projection is normal
    proj = (x - mean) @ np.array([0.3, -0.5, 0.8])
    sd = math.sqrt(np.array([0.3, -0.5, 0.8]) @ COV @ np.array([0.3, -0.5, 0.8]))
    assert ss.kstest(proj / sd, ss.norm.cdf).pvalue > 1e-3


def test_multivariate_normal_batching_semidefinite_grads_and_errors():
    k = random.key(1)
    means = np.zeros((4, 2))
    x = random.multivariate_normal(k, means, np.eye(2), dtype=np.float64)
    assert x.shape == (4, 2)
    assert random.multivariate_normal(k, np.zeros(2), np.eye(2), (5, 4)).shape == (5, 4, 2)
    psd = np.array([[1.0, 1.0], [1.0, 1.0]])  # rank 1: eigh and svd handle it
    for m in ("eigh", "svd"):
        y = np.asarray(random.multivariate_normal(k, np.zeros(2), psd, (200,), np.float64, m))
        np.testing.assert_allclose(y[:, 0], y[:, 1], atol=1e-6)
    # reparameterised: differentiable in mean and cov
    check_grads(lambda m, c: random.multivariate_normal(k, m, c @ c.T + np.eye(3), (4,),
                                                        np.float64),
                (np.ones(3), np.eye(3) * 0.5), order=1)
    with pytest.raises(ValueError, match="method must be one of"):
        random.multivariate_normal(k, np.zeros(2), np.eye(2), method="lu")
    with pytest.raises(ValueError, match="same n"):
        random.multivariate_normal(k, np.zeros(3), np.eye(2))


def test_orthogonal_is_haar():
    q = np.asarray(random.orthogonal(random.key(8), 3, (N // 4,), np.float64))
    assert q.shape == (N // 4, 3, 3)
    np.testing.assert_allclose(np.einsum("bji,bjk->bik", q, q), np.broadcast_to(np.eye(3), q.shape),
                               atol=1e-12)
    # Haar: each entry has mean 0 and variance 1/n; q[:, 0, 0] has density of a coordinate
    # of a uniform point on the sphere S^2, i.e. uniform on [-1, 1]
    assert abs(q.mean()) < 5 * math.sqrt(1 / 3 / q.size) * 3
    assert ss.kstest(q[:, 0, 0], ss.uniform(-1, 2).cdf).pvalue > 1e-3
    # determinant is +1 or -1 with equal probability
    dets = np.linalg.det(q)
    assert abs((dets > 0).mean() - 0.5) < 5 * math.sqrt(0.25 / dets.size)
    r = np.asarray(random.orthogonal(random.key(9), 5, (), np.float64, m=3))
    np.testing.assert_allclose(r.T @ r, np.eye(3), atol=1e-12)


@pytest.mark.parametrize("d,p", [(1, 2), (3, 2), (2, 1), (4, 1), (3, 3.0), (2, 0.5)])
def test_ball_is_uniform(d, p):
    x = np.asarray(random.ball(random.key(10), d, p, (N,), np.float64))
    assert x.shape == (N, d)
    r = (np.abs(x) ** p).sum(-1) ** (1 / p)
    assert r.max() <= 1.0
    # uniform in the ball: r^d is uniform on [0, 1], and the direction is symmetric
    assert ss.kstest(r ** d, ss.uniform.cdf).pvalue > 1e-3
    assert (np.abs(x.mean(0)) < 5 * x.std(0) / math.sqrt(N)).all()


def test_rademacher_statistics():
    x = np.asarray(random.rademacher(random.key(12), (N,)))
    assert set(x.tolist()) == {-1, 1}
    assert abs(x.mean()) < 5 / math.sqrt(N)
    assert random.rademacher(random.key(0), (3,), np.float32).dtype == enp.float32


def test_errors_name_the_sampler():
    with pytest.raises(TypeError, match="random.poisson: dtype must be an integer"):
        random.poisson(random.key(0), 1.0, dtype="float32")
    with pytest.raises(ValueError, match="random.ball: p must be a positive"):
        random.ball(random.key(0), 2, p=-1)
    with pytest.raises(TypeError, match="random.geometric: expected a key"):
        random.geometric(np.zeros(3), 0.5)
