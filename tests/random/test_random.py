"""Tests for ember.random: threefry known answers, key handling, distributions
(statistical sanity at fixed seeds), and jit/vmap consistency."""
import numpy as np
import pytest
import scipy.stats as st

import ember
import ember.numpy as enp
from ember import random

M32 = 0xFFFFFFFF


def _np(x):
    return np.asarray(x)


# --- threefry ------------------------------------------------------------------------

def _ref_threefry(key, x0, x1):
    """Threefry-2x32/20 in plain Python integers, written from the Random123 spec."""
    rot = [13, 15, 26, 6, 17, 29, 16, 24]
    ks = [key[0], key[1], key[0] ^ key[1] ^ 0x1BD11BDA]
    x0 = (x0 + ks[0]) & M32
    x1 = (x1 + ks[1]) & M32
    for r in range(20):
        x0 = (x0 + x1) & M32
        c = rot[r % 8]
        x1 = ((x1 << c) | (x1 >> (32 - c))) & M32
        x1 ^= x0
        if r % 4 == 3:
            s = r // 4 + 1
            x0 = (x0 + ks[s % 3]) & M32
            x1 = (x1 + ks[(s + 1) % 3] + s) & M32
    return x0, x1


@pytest.mark.parametrize("key,ctr,expected", [
    ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
    ((M32, M32), (M32, M32), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
])
def test_threefry_known_answers(key, ctr, expected):
    # Random123 known-answer vectors for threefry2x32 with 20 rounds.
    y0, y1 = random.threefry2x32(np.array(key, np.uint32), np.uint32(ctr[0]), np.uint32(ctr[1]))
    assert (int(y0), int(y1)) == expected
    assert _ref_threefry(key, *ctr) == expected


def test_threefry_matches_reference_on_random_inputs():
    rng = np.random.default_rng(0)
    for _ in range(3):
        key = rng.integers(0, 2 ** 32, 2, dtype=np.uint64).astype(np.uint32)
        x0 = rng.integers(0, 2 ** 32, 17, dtype=np.uint64).astype(np.uint32)
        x1 = rng.integers(0, 2 ** 32, 17, dtype=np.uint64).astype(np.uint32)
        y0, y1 = random.threefry2x32(key, x0, x1)
        ref = [_ref_threefry((int(key[0]), int(key[1])), int(a), int(b)) for a, b in zip(x0, x1)]
        assert _np(y0).tolist() == [r[0] for r in ref]
        assert _np(y1).tolist() == [r[1] for r in ref]


def test_threefry_is_built_from_integer_primitives_and_matches_the_primitive():
    g = ember.make_graph(lambda k: random.bits(k, (4,)))(random.key(0))
    names = {e.prim.name for e in g.graph.equations}
    assert {"add", "xor", "shift_left", "shift_right_logical", "or"} <= names
    assert "threefry2x32" not in names
    old = random.set_threefry_impl("primitive")
    try:
        gp = ember.make_graph(lambda k: random.bits(k, (4,)))(random.key(0))
        prim = {n: _np(f(random.key(5))) for n, f in _SAMPLERS.items()}
        prim_vmap = _np(ember.vmap(_SAMPLERS["normal"])(random.split(random.key(5), 2)))
        prim_jit = _np(ember.jit(_SAMPLERS["randint"])(random.key(5)))
    finally:
        random.set_threefry_impl(old)
    assert [e.prim.name for e in gp.graph.equations].count("threefry2x32") == 1
    for n, f in _SAMPLERS.items():
        np.testing.assert_array_equal(prim[n], _np(f(random.key(5))), err_msg=n)
    np.testing.assert_array_equal(prim_vmap, _np(ember.vmap(_SAMPLERS["normal"])(random.split(random.key(5), 2))))
    np.testing.assert_array_equal(prim_jit, _np(_SAMPLERS["randint"](random.key(5))))
    # the compiled composite produces the same bits as the eager one
    np.testing.assert_array_equal(_np(ember.jit(lambda k: random.bits(k, (1000,)))(random.key(9))),
                                  _np(random.bits(random.key(9), (1000,))))
    with pytest.raises(ValueError):
        random.set_threefry_impl("fast")


def test_threefry_primitive_rules():
    from ember.fx.prims import random as prims
    rng = np.random.default_rng(1)
    k = rng.integers(0, 2 ** 32, (2, 5), dtype=np.uint64).astype(np.uint32)
    x = rng.integers(0, 2 ** 32, (2, 5), dtype=np.uint64).astype(np.uint32)
    want = prims.threefry2x32(k[0], k[1], x[0], x[1])
    comp = prims.threefry2x32_composite(k[0], k[1], x[0], x[1])
    for a, b in zip(want, comp):
        np.testing.assert_array_equal(_np(a), _np(b))
    # batched keys against unbatched counters, and the reverse
    got = ember.vmap(lambda a, b: prims.threefry2x32(a, b, x[0], x[1]))(k[0], k[1])
    for j in range(2):
        np.testing.assert_array_equal(_np(got[j])[1], _np(prims.threefry2x32(k[0, 1], k[1, 1], x[0], x[1])[j]))
    with pytest.raises(TypeError):
        prims.threefry2x32(np.float32(0), np.uint32(0), np.uint32(0), np.uint32(0))


# --- keys ----------------------------------------------------------------------------

def test_key_values():
    assert _np(random.key(42)).tolist() == [0, 42]
    assert _np(random.key(2 ** 32 + 5)).tolist() == [1, 5]
    assert _np(random.key(-1)).tolist() == [M32, M32]
    assert random.key(0).dtype == np.uint32
    assert random.PRNGKey is random.key
    jk = ember.jit(random.key)(np.int32(-3))
    assert _np(jk).tolist() == _np(random.key(-3)).tolist()
    assert _np(ember.jit(random.key)(np.int64(2 ** 33 + 7))).tolist() == [2, 7]
    with pytest.raises(TypeError):
        random.key(1.5)
    with pytest.raises(TypeError):
        random.key(True)


def test_split_and_fold_in():
    k = random.key(0)
    ks = random.split(k, 5)
    assert ks.shape == (5, 2) and ks.dtype == np.uint32
    rows = {tuple(r) for r in _np(ks).tolist()}
    assert len(rows) == 5 and (0, 0) not in rows
    a, b = random.split(k)
    assert _np(random.split(k, 2)).tolist() == [_np(a).tolist(), _np(b).tolist()]
    folds = {tuple(_np(random.fold_in(k, i)).tolist()) for i in range(20)}
    assert len(folds) == 20
    assert _np(random.fold_in(k, 3)).tolist() == _np(random.fold_in(k, enp.asarray(3))).tolist()
    # deterministic
    assert _np(random.split(random.key(7), 3)).tolist() == _np(random.split(random.key(7), 3)).tolist()
    assert random.split(k, 0).shape == (0, 2)


def test_bad_keys_are_reported():
    with pytest.raises(TypeError, match="uint32\\[2\\]"):
        random.normal(np.zeros(2, np.int32))
    with pytest.raises(TypeError, match="vmap"):
        random.normal(random.split(random.key(0), 3))
    with pytest.raises(TypeError):
        random.split(random.key(0), 2.0)


def test_split_keys_are_independent():
    k1, k2 = random.split(random.key(123))
    a = _np(random.uniform(k1, (4000,)))
    b = _np(random.uniform(k2, (4000,)))
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.05
    # neighbouring fold_in keys too
    c = _np(random.normal(random.fold_in(k1, 1), (4000,)))
    d = _np(random.normal(random.fold_in(k1, 2), (4000,)))
    assert abs(np.corrcoef(c, d)[0, 1]) < 0.05
    # consecutive outputs of one stream are uncorrelated
    assert abs(np.corrcoef(a[:-1], a[1:])[0, 1]) < 0.05


# --- bits and uniform --------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_bits_dtypes(dtype):
    x = random.bits(random.key(1), (3, 5), dtype)
    assert x.shape == (3, 5) and x.dtype == dtype
    v = _np(x).astype(np.float64) / float(np.iinfo(dtype).max)
    assert 0.2 < v.mean() < 0.8
    assert random.bits(random.key(1), (0,), dtype).shape == (0,)
    with pytest.raises(TypeError):
        random.bits(random.key(1), (2,), np.int32)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_uniform_range_and_dtype(dtype):
    x = random.uniform(random.key(3), (2000,), dtype, -2.0, 3.0)
    assert x.dtype == enp.dtype(dtype) if hasattr(enp, "dtype") else True
    v = _np(x).astype(np.float64)
    assert v.min() >= -2.0 and v.max() < 3.0
    assert abs(v.mean() - 0.5) < 0.15


def test_uniform_ks_and_moments():
    x = _np(random.uniform(random.key(0), (5000,))).astype(np.float64)
    assert st.kstest(x, "uniform").pvalue > 1e-3
    assert abs(x.var() - 1 / 12) < 0.005
    y = _np(random.uniform(random.key(0), (3000,), "float64")).astype(np.float64)
    assert st.kstest(y, "uniform").pvalue > 1e-3
    # array bounds broadcast against the shape
    z = _np(random.uniform(random.key(1), (2, 3), minval=enp.asarray([0.0, 10.0, 20.0]),
                           maxval=enp.asarray([1.0, 11.0, 21.0])))
    assert ((z >= [0, 10, 20]) & (z < [1, 11, 21])).all()


# --- continuous distributions ------------------------------------------------------

@pytest.mark.parametrize("name,dist", [
    ("normal", st.norm), ("gumbel", st.gumbel_r), ("exponential", st.expon),
    ("laplace", st.laplace), ("logistic", st.logistic)])
def test_continuous_ks(name, dist):
    x = _np(getattr(random, name)(random.key(11), (4000,))).astype(np.float64)
    assert np.isfinite(x).all()
    assert st.kstest(x, dist.cdf).pvalue > 1e-3
    assert abs(x.mean() - dist.mean()) < 0.1
    assert abs(x.var() / dist.var() - 1) < 0.1


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_normal_dtypes(dtype):
    x = random.normal(random.key(0), (1000,), dtype)
    assert str(x.dtype) == dtype
    v = _np(x).astype(np.float64)
    assert abs(v.mean()) < 0.15 and abs(v.std() - 1) < 0.1


def test_truncated_normal():
    lo, hi = -0.5, 1.5
    x = _np(random.truncated_normal(random.key(2), lo, hi, (4000,))).astype(np.float64)
    assert (x > lo).all() and (x < hi).all()
    assert st.kstest(x, st.truncnorm(lo, hi).cdf).pvalue > 1e-3
    y = random.truncated_normal(random.key(2), enp.asarray([-1.0, 0.0]), 1.0)
    assert y.shape == (2,)
    assert random.truncated_normal(random.key(2), -2.0, 2.0, (3,), "bfloat16").dtype.name == "bfloat16"


@pytest.mark.parametrize("a", [0.3, 1.0, 3.5])
def test_gamma_ks(a):
    x = _np(random.gamma(random.key(5), a, (3000,))).astype(np.float64)
    assert (x > 0).all()
    assert st.kstest(x, st.gamma(a).cdf).pvalue > 1e-3


def test_gamma_array_shape_and_small_alpha():
    a = enp.asarray([0.5, 2.0, 10.0])
    x = random.gamma(random.key(0), a, (400, 3))
    m = _np(x).mean(0)
    np.testing.assert_allclose(m, [0.5, 2.0, 10.0], rtol=0.15)
    lg = _np(random.loggamma(random.key(0), 1e-3, (100,)))
    assert np.isfinite(lg).all() and lg.mean() < -50
    assert float(random.gamma(random.key(0), 0.0)) == 0.0


def test_beta_and_dirichlet():
    x = _np(random.beta(random.key(4), 2.0, 5.0, (3000,))).astype(np.float64)
    assert ((x >= 0) & (x <= 1)).all()
    assert st.kstest(x, st.beta(2.0, 5.0).cdf).pvalue > 1e-3
    d = _np(random.dirichlet(random.key(4), enp.asarray([1.0, 2.0, 3.0]), (2000,)))
    assert d.shape == (2000, 3)
    np.testing.assert_allclose(d.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(d.mean(0), [1 / 6, 2 / 6, 3 / 6], atol=0.02)


def test_gamma_has_zero_gradient_in_alpha():
    g = ember.grad(lambda a: random.gamma(random.key(0), a, (5,)).sum())(2.0)
    assert float(g) == 0.0


# --- discrete distributions --------------------------------------------------------

def test_bernoulli():
    x = _np(random.bernoulli(random.key(0), 0.3, (5000,)))
    assert x.dtype == np.bool_
    assert abs(x.mean() - 0.3) < 0.03
    y = _np(random.bernoulli(random.key(0), enp.asarray([0.0, 1.0])))
    assert y.tolist() == [False, True]


def test_randint():
    x = _np(random.randint(random.key(0), (6000,), 0, 6))
    assert x.dtype == np.int32 and x.min() == 0 and x.max() == 5
    counts = np.bincount(x, minlength=6)
    assert st.chisquare(counts).pvalue > 1e-3
    y = _np(random.randint(random.key(0), (3000,), -5, 5, np.int8))
    assert y.dtype == np.int8 and y.min() == -5 and y.max() == 4
    z = _np(random.randint(random.key(1), (3000,), 0, 256, np.uint8))
    assert z.max() == 255
    w = _np(random.randint(random.key(1), (10,), 5, 5))
    assert (w == 5).all()
    big = _np(random.randint(random.key(2), (1000,), 0, 2 ** 40, np.int64))
    assert big.max() > 2 ** 38 and big.min() >= 0
    arr = _np(random.randint(random.key(2), (2, 3), enp.asarray([0, 10, 100]), enp.asarray([1, 12, 103])))
    assert ((arr >= [0, 10, 100]) & (arr < [1, 12, 103])).all()


def test_categorical():
    p = np.array([0.1, 0.2, 0.7])
    x = _np(random.categorical(random.key(0), enp.log(enp.asarray(p)), shape=(5000,)))
    freq = np.bincount(x, minlength=3) / 5000
    np.testing.assert_allclose(freq, p, atol=0.03)
    logits = enp.asarray([[0.0, -50.0], [-50.0, 0.0], [0.0, 0.0]])
    y = random.categorical(random.key(1), logits)
    assert _np(y)[:2].tolist() == [0, 1]
    z = random.categorical(random.key(1), enp.moveaxis(logits, 0, 1), axis=0, shape=(4, 3))
    assert z.shape == (4, 3) and (_np(z)[:, :2] == [0, 1]).all()
    with pytest.raises(ValueError):
        random.categorical(random.key(1), logits, shape=(4, 2))


def test_permutation():
    p = _np(random.permutation(random.key(0), 50))
    assert sorted(p.tolist()) == list(range(50)) and p.tolist() != list(range(50))
    x = enp.arange(12).reshape(3, 4)
    y = _np(random.permutation(random.key(1), x, axis=1))
    assert (np.sort(y, 1) == _np(x)).all()
    assert (y - y[:, :1] == (_np(x) - _np(x)[:, :1])[:, np.argsort(np.argsort(y[0]))]).all() or \
        len({tuple(r - r.min()) for r in y}) == 1
    z = _np(random.permutation(random.key(1), x, axis=1, independent=True))
    assert (np.sort(z, 1) == _np(x)).all()
    # every position of a 3-permutation is uniform over 3 values
    keys = ember.vmap(lambda i: random.fold_in(random.key(9), i))(enp.arange(300))
    firsts = _np(ember.vmap(lambda k: random.permutation(k, 3)[0])(keys))
    assert st.chisquare(np.bincount(firsts, minlength=3)).pvalue > 1e-3


def test_choice():
    k = random.key(0)
    x = _np(random.choice(k, 10, (10,), replace=False))
    assert sorted(x.tolist()) == list(range(10))
    a = enp.arange(5) * 10
    y = _np(random.choice(k, a, (2000,)))
    assert set(y.tolist()) <= {0, 10, 20, 30, 40}
    p = enp.asarray([0.0, 0.5, 0.5, 0.0])
    z = _np(random.choice(k, 4, (1000,), p=p))
    assert set(z.tolist()) == {1, 2}
    w = _np(random.choice(k, 4, (2,), replace=False, p=p))
    assert sorted(w.tolist()) == [1, 2]
    m = _np(random.choice(k, enp.arange(12).reshape(3, 4), (2,), axis=1))
    assert m.shape == (3, 2)
    with pytest.raises(ValueError):
        random.choice(k, 3, (4,), replace=False)


# --- transforms --------------------------------------------------------------------

_SAMPLERS = {
    "uniform": lambda k: random.uniform(k, (3, 2)),
    "normal": lambda k: random.normal(k, (5,)),
    "bits": lambda k: random.bits(k, (4,), np.uint64),
    "randint": lambda k: random.randint(k, (4,), -3, 9),
    "categorical": lambda k: random.categorical(k, enp.asarray([0.0, 1.0, 2.0]), shape=(4,)),
    "permutation": lambda k: random.permutation(k, 7),
    "choice": lambda k: random.choice(k, 6, (3,), replace=False),
    "gamma": lambda k: random.gamma(k, enp.asarray([0.5, 3.0]), (2, 2)),
    "split": lambda k: random.split(k, 3),
    "fold_in": lambda k: random.fold_in(k, 5),
    "truncated_normal": lambda k: random.truncated_normal(k, -1.0, 1.0, (3,)),
}


@pytest.mark.parametrize("name", sorted(_SAMPLERS))
def test_vmap_over_keys_equals_loop(name):
    f = _SAMPLERS[name]
    keys = random.split(random.key(17), 3)
    got = _np(ember.vmap(f)(keys))
    want = np.stack([_np(f(keys[i])) for i in range(3)])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", sorted(_SAMPLERS))
def test_jit_equals_eager(name):
    f = _SAMPLERS[name]
    k = random.key(3)
    got, want = _np(ember.jit(f)(k)), _np(f(k))
    # bit-identical, transcendental samplers included (tests/random/test_bit_identical.py)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_fold_in_traced_data_under_jit_and_vmap():
    k = random.key(0)
    f = ember.jit(lambda i: random.normal(random.fold_in(k, i), (2,)))
    np.testing.assert_array_equal(_np(f(np.int32(4))), _np(random.normal(random.fold_in(k, 4), (2,))))
    v = ember.vmap(lambda i: random.fold_in(k, i))(enp.arange(3))
    assert _np(v).tolist() == [_np(random.fold_in(k, i)).tolist() for i in range(3)]


def test_reparameterised_gradients():
    k = random.key(0)
    eps = random.normal(k, (4,))
    g = ember.grad(lambda mu, s: (mu + s * random.normal(k, (4,))).sum(), argnums=(0, 1))(1.0, 2.0)
    assert float(g[0]) == 4.0
    np.testing.assert_allclose(float(g[1]), float(_np(eps).sum()), rtol=1e-6)
