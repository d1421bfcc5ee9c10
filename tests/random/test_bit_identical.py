"""Every public sampler in ember.random gives bit-identical numbers for one key
eagerly, under jit (compiled through the native backend) and under vmap, in every
float dtype and for empty shapes: the docs promise it, and the compiled
transcendental approximations differ from numpy's by an ulp, so the samplers'
transcendental step is `sampler_math`, evaluated the same way on every path."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember import random

FLOATS = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16]

# name -> (sampler(key, dtype, shape, *params), params): params are passed to the
# jitted function as arguments, so their transcendental work is compiled too
FLOAT_SAMPLERS = {
    "uniform": (lambda k, d, s, lo, hi: random.uniform(k, s, d, lo, hi), (-2.0, 3.0)),
    "normal": (lambda k, d, s: random.normal(k, s, d), ()),
    "truncated_normal": (lambda k, d, s, lo, hi: random.truncated_normal(k, lo, hi, s, d), (-1.5, 0.7)),
    "gumbel": (lambda k, d, s: random.gumbel(k, s, d), ()),
    "exponential": (lambda k, d, s: random.exponential(k, s, d), ()),
    "laplace": (lambda k, d, s: random.laplace(k, s, d), ()),
    "logistic": (lambda k, d, s: random.logistic(k, s, d), ()),
    "gamma": (lambda k, d, s, a: random.gamma(k, a, s, d), (0.6,)),
    "loggamma": (lambda k, d, s, a: random.loggamma(k, a, s, d), (2.5,)),
    "beta": (lambda k, d, s, a, b: random.beta(k, a, b, s, d), (2.0, 0.5)),
    "dirichlet": (lambda k, d, s, a: random.dirichlet(k, a, s, d), ([0.5, 1.0, 3.0],)),
    "cauchy": (lambda k, d, s: random.cauchy(k, s, d), ()),
    "lognormal": (lambda k, d, s, sg: random.lognormal(k, sg, s, d), (0.7,)),
    "pareto": (lambda k, d, s, b: random.pareto(k, b, s, d), (2.5,)),
    "rayleigh": (lambda k, d, s, sc: random.rayleigh(k, sc, s, d), (1.5,)),
    "triangular": (lambda k, d, s, lo, mo, hi: random.triangular(k, lo, mo, hi, s, d), (-1.0, 0.5, 2.0)),
    "wald": (lambda k, d, s, m: random.wald(k, m, s, d), (1.7,)),
    "weibull_min": (lambda k, d, s, sc, c: random.weibull_min(k, sc, c, s, d), (2.0, 1.3)),
    "maxwell": (lambda k, d, s: random.maxwell(k, s, d), ()),
    "double_sided_maxwell": (lambda k, d, s, lo, sc: random.double_sided_maxwell(k, lo, sc, s, d),
                             (0.5, 2.0)),
    "generalized_normal": (lambda k, d, s, p: random.generalized_normal(k, p, s, d), (1.5,)),
    "f": (lambda k, d, s, a, b: random.f(k, a, b, s, d), (4.0, 7.0)),
}

# samplers without a float dtype argument: name -> sampler(key, shape, *params), params
OTHER_SAMPLERS = {
    "bits": (lambda k, s: random.bits(k, s, np.uint64), ()),
    "randint": (lambda k, s, lo, hi: random.randint(k, s, lo, hi), (np.int32(-3), np.int32(9))),
    "bernoulli": (lambda k, s, p: random.bernoulli(k, p, s), (np.float32(0.3),)),
    "categorical": (lambda k, s, lg: random.categorical(k, lg, shape=s + (2,)),
                    (np.array([[0.0, 1.0, 2.0], [3.0, -1.0, 0.5]], np.float32),)),
    "rademacher": (lambda k, s: random.rademacher(k, s), ()),
    "permutation": (lambda k, s: random.permutation(k, int(np.prod(s))), ()),
    "choice_p": (lambda k, s, p: random.choice(k, 4, s, p=p), (np.array([0.1, 0.2, 0.3, 0.4], np.float32),)),
    "choice_noreplace_p": (lambda k, s, p: random.choice(k, 8, (min(int(np.prod(s)), 8),), replace=False, p=p),
                           (np.linspace(0.05, 0.2, 8).astype(np.float32),)),
    "split": (lambda k, s: random.split(k, int(np.prod(s))), ()),
    "fold_in": (lambda k, s: random.fold_in(k, 12345), ()),
    "multinomial": (lambda k, s, n, p: random.multinomial(k, n, p, shape=s + (4,)),
                    (np.float32(40.0), np.array([0.1, 0.0, 0.6, 0.3], np.float32))),
    "clone": (lambda k, s: random.clone(k), ()),
}


def _bits(x):
    a = np.asarray(x)
    return a.dtype, a.shape, a.tobytes()


def _assert_identical(got, want, what):
    gd, gs, gb = _bits(got)
    wd, ws, wb = _bits(want)
    assert (gd, gs) == (wd, ws), (what, gd, gs, wd, ws)
    if gb != wb:
        g, w = np.asarray(got).ravel(), np.asarray(want).ravel()
        bad = np.flatnonzero((g.view(np.uint8).reshape(g.size, -1)
                              != w.view(np.uint8).reshape(w.size, -1)).any(-1))
        pytest.fail(f"{what}: {bad.size} of {g.size} entries differ, e.g. {g[bad[:3]]} vs {w[bad[:3]]}")


def _check_paths(f, params, key_seed=7):
    """eager == jit, and vmap (eager and jitted) over keys == the loop of eager calls."""
    params = tuple(enp.asarray(p) for p in params)
    k = random.key(key_seed)
    eager = f(k, *params)
    _assert_identical(ember.jit(f)(k, *params), eager, "jit vs eager")
    keys = random.split(k, 3)
    loop = np.stack([np.asarray(f(keys[i], *params)) for i in range(3)])
    in_axes = (0,) + (None,) * len(params)
    _assert_identical(ember.vmap(f, in_axes=in_axes)(keys, *params), loop, "vmap vs loop")
    _assert_identical(ember.jit(ember.vmap(f, in_axes=in_axes))(keys, *params), loop, "jit(vmap) vs loop")


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(FLOAT_SAMPLERS))
@pytest.mark.parametrize("shape", [(3, 171), (0,)], ids=["n513", "empty"])
def test_float_samplers_bit_identical(name, dtype, shape):
    fn, params = FLOAT_SAMPLERS[name]
    _check_paths(lambda k, *p: fn(k, dtype, shape, *p), params)


@pytest.mark.parametrize("name", sorted(OTHER_SAMPLERS))
@pytest.mark.parametrize("shape", [(5, 7), (0,)], ids=["n35", "empty"])
def test_other_samplers_bit_identical(name, shape):
    fn, params = OTHER_SAMPLERS[name]
    _check_paths(lambda k, *p: fn(k, shape, *p), params)


@settings(max_examples=12, deadline=None)
@given(name=st.sampled_from(sorted(FLOAT_SAMPLERS)), dtype=st.sampled_from(FLOATS),
       shape=st.lists(st.integers(0, 9), min_size=0, max_size=3).map(tuple), seed=st.integers(0, 2 ** 31))
def test_float_samplers_bit_identical_hypothesis(name, dtype, shape, seed):
    fn, params = FLOAT_SAMPLERS[name]
    _check_paths(lambda k, *p: fn(k, dtype, shape, *p), params, key_seed=seed)


def test_sampler_math_is_the_eager_function():
    from ember.fx.prims.random import SAMPLER_MATH, sampler_math
    import scipy.special as sp
    x = np.linspace(0.01, 0.99, 101).astype(np.float32)
    ref = {"log": np.log, "log1p": np.log1p, "exp": np.exp, "erf": sp.erf, "erf_inv": sp.erfinv, "tan": np.tan}
    for fn in SAMPLER_MATH:
        want = ref[fn](x)
        _assert_identical(sampler_math(fn, enp.asarray(x)), want, fn)
        _assert_identical(ember.jit(lambda v: sampler_math(fn, v))(enp.asarray(x)), want, f"jit {fn}")
    # its derivative is the function's
    g = ember.grad(lambda v: sampler_math("log1p", v))(0.5)
    assert float(g) == pytest.approx(1 / 1.5, rel=1e-6)
    with pytest.raises(ValueError, match="one of"):
        sampler_math("tanh", enp.asarray(x))
