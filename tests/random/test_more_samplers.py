"""cauchy, lognormal, pareto, rayleigh, triangular, wald, weibull_min, maxwell,
double_sided_maxwell, generalized_normal, f, multinomial, clone and key_impl: the right
distribution (Kolmogorov-Smirnov against scipy.stats, moments for multinomial) with fixed
keys so every test is deterministic; JAX's shapes, dtypes and parameter broadcasting;
reparameterisation gradients; errors that name the sampler and the argument.  That they
are bit-identical eagerly / under jit / under vmap over keys is checked with the other
samplers in test_bit_identical.py (FLOAT_SAMPLERS, OTHER_SAMPLERS)."""
import ml_dtypes
import numpy as np
import pytest
import scipy.stats as ss

import ember
import ember.numpy as enp
from ember import random

from test_bit_identical import FLOATS

N = 20000


class _DoubleSidedMaxwell:
    def __init__(self, loc, scale):
        self.loc, self.scale = loc, scale

    def cdf(self, x):
        z = (np.asarray(x) - self.loc) / self.scale
        return 0.5 + 0.5 * np.sign(z) * ss.maxwell.cdf(np.abs(z))

# name -> (sampler(key, shape, dtype, *params), params)
SAMPLERS = {
    "cauchy": (lambda k, s, d: random.cauchy(k, s, d), ()),
    "lognormal": (lambda k, s, d, sg: random.lognormal(k, sg, s, d), (0.7,)),
    "pareto": (lambda k, s, d, b: random.pareto(k, b, s, d), (2.5,)),
    "rayleigh": (lambda k, s, d, sc: random.rayleigh(k, sc, s, d), (1.5,)),
    "triangular": (lambda k, s, d, lo, mo, hi: random.triangular(k, lo, mo, hi, s, d), (-1.0, 0.5, 2.0)),
    "wald": (lambda k, s, d, m: random.wald(k, m, s, d), (1.7,)),
    "weibull_min": (lambda k, s, d, sc, c: random.weibull_min(k, sc, c, s, d), (2.0, 1.3)),
    "maxwell": (lambda k, s, d: random.maxwell(k, s, d), ()),
    "double_sided_maxwell": (lambda k, s, d, lo, sc: random.double_sided_maxwell(k, lo, sc, s, d),
                             (0.5, 2.0)),
    "generalized_normal": (lambda k, s, d, p: random.generalized_normal(k, p, s, d), (1.5,)),
    "f": (lambda k, s, d, a, b: random.f(k, a, b, s, d), (4.0, 7.0)),
}

# name -> [(params, the scipy distribution of the samples)]
KS_CASES = {
    "cauchy": [((), ss.cauchy())],
    "lognormal": [((0.3,), ss.lognorm(0.3)), ((1.0,), ss.lognorm(1.0)), ((2.5,), ss.lognorm(2.5))],
    "pareto": [((0.5,), ss.pareto(0.5)), ((2.0,), ss.pareto(2.0)), ((7.0,), ss.pareto(7.0))],
    "rayleigh": [((0.5,), ss.rayleigh(scale=0.5)), ((3.0,), ss.rayleigh(scale=3.0))],
    "triangular": [((0.0, 0.0, 1.0), ss.triang(0.0, 0.0, 1.0)),
                   ((-1.0, 0.5, 2.0), ss.triang(0.5, -1.0, 3.0)),
                   ((2.0, 5.0, 5.0), ss.triang(1.0, 2.0, 3.0))],
    "wald": [((0.2,), ss.invgauss(0.2)), ((1.0,), ss.invgauss(1.0)), ((30.0,), ss.invgauss(30.0))],
    "weibull_min": [((1.0, 0.5), ss.weibull_min(0.5)), ((2.0, 1.0), ss.weibull_min(1.0, scale=2.0)),
                    ((0.7, 4.0), ss.weibull_min(4.0, scale=0.7))],
    "maxwell": [((), ss.maxwell())],
    "double_sided_maxwell": [((0.0, 1.0), _DoubleSidedMaxwell(0.0, 1.0)),
                             ((-2.0, 0.5), _DoubleSidedMaxwell(-2.0, 0.5))],
    "generalized_normal": [((0.5,), ss.gennorm(0.5)), ((1.0,), ss.gennorm(1.0)),
                           ((2.0,), ss.gennorm(2.0)), ((5.0,), ss.gennorm(5.0))],
    "f": [((1.0, 1.0), ss.f(1.0, 1.0)), ((4.0, 7.0), ss.f(4.0, 7.0)), ((0.3, 20.0), ss.f(0.3, 20.0))],
}
KS_IDS = [(n, i) for n in sorted(KS_CASES) for i in range(len(KS_CASES[n]))]


@pytest.mark.parametrize("name,i", KS_IDS, ids=[f"{n}-{i}" for n, i in KS_IDS])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_kolmogorov_smirnov(name, i, dtype):
    fn, _ = SAMPLERS[name]
    params, dist = KS_CASES[name][i]
    x = np.asarray(fn(random.key(11 + i), (N,), dtype, *params)).astype(np.float64)
    assert x.dtype == np.float64 and np.isfinite(x).all()
    assert ss.kstest(x, dist.cdf).pvalue > 1e-3


def test_ks_in_half_precision():
    # float16/bfloat16 samples are rounded float32 draws: check against the rounded CDF grid
    for d in (np.float16, ml_dtypes.bfloat16):
        x = np.asarray(random.lognormal(random.key(2), 0.5, (N,), d)).astype(np.float64)
        assert np.isfinite(x).all()
        assert abs(np.median(x) - 1.0) < 0.03


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_shapes_dtypes_and_broadcasting(name):
    fn, params = SAMPLERS[name]
    k = random.key(0)
    for d in FLOATS:
        x = fn(k, (2, 3), d, *params)
        assert x.shape == (2, 3) and x.dtype == np.dtype(d)
    assert fn(k, (), None, *params).shape == ()
    assert fn(k, (), None, *params).dtype == np.float32
    assert fn(k, (0, 3), None, *params).shape == (0, 3)
    if params:
        # a parameter of shape (3,) broadcasts against (2, 3); each entry is its own draw
        vec = (np.array([params[0]] * 3, np.float32),) + params[1:]
        # double_sided_maxwell's shape is a batch shape in front of the parameters'
        x = np.asarray(fn(k, (2,) if name == "double_sided_maxwell" else (2, 3), None, *vec))
        assert x.shape == (2, 3) and len(np.unique(x)) == 6
        assert fn(k, None, None, *vec).shape == (3,)


def test_parameter_vectors_pick_their_own_law():
    x = np.asarray(random.rayleigh(random.key(0), np.array([[1.0], [10.0]]), (2, N)))
    assert abs(x[1].mean() / x[0].mean() - 10.0) < 0.3
    t = np.asarray(random.triangular(random.key(1), [0.0, 10.0], 1.0 + np.array([0.0, 10.0]),
                                     [2.0, 12.0], (N, 2)))
    assert (t[:, 0] <= 2).all() and (t[:, 1] >= 10).all()


def test_jax_shape_rules_of_weibull_and_double_sided_maxwell():
    k = random.key(0)
    assert random.weibull_min(k, np.ones(3), 1.0).shape == (3,)  # shape=() broadcasts
    assert random.weibull_min(k, np.ones(3), 1.0, (2, 1)).shape == (2, 3)
    assert random.double_sided_maxwell(k, np.zeros(3), 1.0, (2,)).shape == (2, 3)
    assert random.double_sided_maxwell(k, np.zeros(3), 1.0).shape == (3,)
    assert random.maxwell(k).shape == () and random.cauchy(k).shape == ()


def test_multinomial_statistics():
    p = np.array([0.05, 0.25, 0.0, 0.7])
    n = 30.0
    x = np.asarray(random.multinomial(random.key(5), n, p, shape=(N, 4)), np.float64)
    assert x.dtype == np.float64 and (x >= 0).all() and (x == np.round(x)).all()
    assert (x.sum(-1) == n).all() and (x[:, 2] == 0).all()
    se = np.sqrt(n * p * (1 - p) / N)
    assert (np.abs(x.mean(0) - n * p) <= 5 * se + 1e-12).all()
    # covariance -n p_i p_j
    c = np.cov(x[:, [0, 1, 3]].T)
    want = n * (np.diag(p[[0, 1, 3]]) - np.outer(p[[0, 1, 3]], p[[0, 1, 3]]))
    assert np.abs(c - want).max() < 0.1 * np.abs(want).max()
    # chi-square of the first category's counts against Binomial(n, p0)
    obs = np.bincount(x[:, 0].astype(int), minlength=8)[:8]
    exp = ss.binom(n, p[0]).pmf(np.arange(8)) * N
    obs = np.append(obs, N - obs.sum())
    exp = np.append(exp, N - exp.sum())
    assert ss.chisquare(obs, exp).pvalue > 1e-3


def test_multinomial_shapes_and_unnormalised_p():
    k = random.key(0)
    assert random.multinomial(k, 10.0, [0.2, 0.8]).shape == (2,)
    x = random.multinomial(k, np.array([3.0, 50.0]), [1.0, 2.0, 1.0], shape=(2, 3),
                           dtype=np.float64)
    assert x.dtype == np.float64 and x.sum(-1).tolist() == [3.0, 50.0]
    y = np.asarray(random.multinomial(k, 1000.0, [2.0, 6.0], shape=(200, 2)))
    assert abs(y[:, 1].mean() - 750.0) < 5.0
    assert random.multinomial(k, 5.0, [1.0], shape=(0, 1)).shape == (0, 1)
    assert random.multinomial(k, 4.0, [0.5, 0.5], shape=(3, 2), unroll=2).sum() == 12.0


def test_reparameterisation_gradients():
    k = random.key(4)

    def mean_of(fn):
        return lambda *a: fn(*a).mean()

    # d/dsigma mean(exp(sigma z)) = mean(z exp(sigma z))
    z = np.asarray(random.normal(k, (500,), np.float64))
    g = ember.grad(mean_of(lambda s: random.lognormal(k, s, (500,), np.float64)))(np.float64(0.8))
    assert float(g) == pytest.approx(float((z * np.exp(0.8 * z)).mean()), rel=1e-10)
    # rayleigh and weibull_min are linear in scale: d/dscale = sample / scale
    r = np.asarray(random.rayleigh(k, 2.0, (500,), np.float64))
    g = ember.grad(mean_of(lambda s: random.rayleigh(k, s, (500,), np.float64)))(np.float64(2.0))
    assert float(g) == pytest.approx(r.mean() / 2.0, rel=1e-10)
    w = lambda c: random.weibull_min(k, 1.5, c, (500,), np.float64)
    h = 1e-6
    fd = (float(w(np.float64(2.0 + h)).mean()) - float(w(np.float64(2.0 - h)).mean())) / (2 * h)
    assert float(ember.grad(mean_of(w))(np.float64(2.0))) == pytest.approx(fd, rel=1e-6)
    tri = lambda m: random.triangular(k, 0.0, m, 3.0, (500,), np.float64)
    fd = (float(tri(np.float64(1.0 + h)).mean()) - float(tri(np.float64(1.0 - h)).mean())) / (2 * h)
    assert float(ember.grad(mean_of(tri))(np.float64(1.0))) == pytest.approx(fd, rel=1e-6)
    # under jit too
    g2 = ember.jit(ember.grad(mean_of(lambda s: random.rayleigh(k, s, (500,), np.float64))))(np.float64(2.0))
    assert float(g2) == pytest.approx(r.mean() / 2.0, rel=1e-10)


def test_clone_and_key_impl():
    k = random.key(9)
    assert random.clone(k).tolist() == k.tolist()
    assert random.key_impl(k) == "threefry2x32"
    ks = random.split(k, 3)
    assert ember.vmap(random.clone)(ks).tolist() == ks.tolist()
    with pytest.raises(TypeError, match="random.clone: expected a key"):
        random.clone(np.zeros(3, np.float32))


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_errors_name_the_sampler_and_argument(name):
    fn, params = SAMPLERS[name]
    k = random.key(0)
    with pytest.raises(TypeError, match=rf"random\.{name}: dtype must be a floating-point dtype, got int32"):
        fn(k, (2,), np.int32, *params)
    with pytest.raises(TypeError, match=rf"random\.{name}: expected a key"):
        fn(np.zeros(2, np.float32), (2,), None, *params)
    if params and name != "double_sided_maxwell":
        bad = (np.ones(3, np.float32),) + params[1:]
        with pytest.raises(ValueError, match=rf"random\.{name}: .*\((?:sigma|b|scale|left|mean|p|dfnum) \(3,\)"):
            fn(k, (2,), None, *bad)


def test_multinomial_errors():
    k = random.key(0)
    with pytest.raises(ValueError, match="random.multinomial: p must have at least one dimension"):
        random.multinomial(k, 3.0, 0.5)
    with pytest.raises(ValueError, match=r"random.multinomial: shape \(2, 4\) must end with the 3"):
        random.multinomial(k, 3.0, [0.2, 0.3, 0.5], shape=(2, 4))
    with pytest.raises(ValueError, match=r"random.multinomial: .*n \(3,\)"):
        random.multinomial(k, np.ones(3), [0.2, 0.3, 0.5], shape=(2, 3))
    with pytest.raises(TypeError, match="random.multinomial: dtype must be a floating-point dtype, got int32"):
        random.multinomial(k, 3.0, [0.5, 0.5], dtype="int32")


def test_t_defaults_to_the_shape_of_df():
    # t's shape used to default to (), so an array df raised a broadcast_to error
    assert random.t(random.key(0), np.array([2.0, 3.0, 9.0])).shape == (3,)
    assert random.t(random.key(0), 3.0).shape == ()
