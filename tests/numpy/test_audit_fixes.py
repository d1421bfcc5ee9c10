"""Silent wrong answers found by the numpy-API audit, each checked against numpy (or JAX,
whose answers are written as literals here)."""
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember import jit

INF, NAN = math.inf, math.nan
FLOAT_SPECIAL = [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 3.0, -3.0, 0.5, -0.5, 7.0, 1e30, -1e-30]


def _same_floats(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape,
                                                                 want.dtype, want.shape)
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
    ok = ~np.isnan(w)
    np.testing.assert_array_equal(g[ok], w[ok])
    np.testing.assert_array_equal(np.signbit(g[ok]), np.signbit(w[ok]))


# --- 1. floor_divide / divmod on floats -----------------------------------------------

def test_floor_divide_infinities_match_numpy():
    a = np.array([3.0, -3.0, INF])
    b = np.array([-INF, INF, 2.0])
    want = np.array([-1.0, -1.0, NAN])  # numpy.floor_divide (and Python's //)
    _same_floats(enp.floor_divide(a, b), want)
    _same_floats(jit(enp.floor_divide)(a, b), want)
    q, r = enp.divmod(a, b)
    _same_floats(q, want)
    _same_floats(r, np.array([-INF, INF, NAN]))


def _np_floor_divide(a, b):
    with np.errstate(all="ignore"):
        return np.floor_divide(a, b)


def _np_divmod(a, b):
    with np.errstate(all="ignore"):
        return np.divmod(a, b)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([np.float16, np.float32, np.float64]),
       st.lists(st.tuples(st.one_of(st.sampled_from(FLOAT_SPECIAL), st.floats(-1e3, 1e3)),
                          st.one_of(st.sampled_from(FLOAT_SPECIAL), st.floats(-1e3, 1e3))),
                min_size=0, max_size=12))
def test_floor_divide_and_divmod_match_numpy(dtype, pairs):
    a = np.array([p[0] for p in pairs], dtype)
    b = np.array([p[1] for p in pairs], dtype)
    want = _np_floor_divide(a, b)
    _same_floats(enp.floor_divide(a, b), want)
    _same_floats(jit(enp.floor_divide)(a, b), want)
    wq, wr = _np_divmod(a, b)
    if dtype == np.float16:
        # half remainder is remainder's own business: divmod must agree with it
        wr = np.asarray(enp.remainder(a, b))
    q, r = enp.divmod(a, b)
    _same_floats(q, wq)
    _same_floats(r, wr)
    jq, jr = jit(enp.divmod)(a, b)
    _same_floats(jq, wq)
    _same_floats(jr, wr)


def test_floor_divide_every_special_pair_vs_numpy():
    pairs = [(x, y) for x in FLOAT_SPECIAL for y in FLOAT_SPECIAL]
    for dtype in (np.float32, np.float64):
        a = np.array([p[0] for p in pairs], dtype)
        b = np.array([p[1] for p in pairs], dtype)
        want = _np_floor_divide(a, b)
        _same_floats(enp.floor_divide(a, b), want)
        _same_floats(jit(enp.floor_divide)(a, b), want)
        _same_floats(jit(lambda u, v: u // v)(enp.asarray(a), enp.asarray(b)), want)


# --- 3. take modes ---------------------------------------------------------------------

@pytest.mark.parametrize("idt", [np.int8, np.int16, np.int32, np.int64])
def test_take_clip_clips_negative_indices_to_zero(idt):
    a = np.arange(5.0)
    i = np.array([-7, -1, 0, 4, 7], idt)
    want = np.take(a, i, mode="clip")  # [0, 0, 0, 4, 4]
    np.testing.assert_array_equal(enp.take(a, i, mode="clip"), want)
    np.testing.assert_array_equal(jit(lambda u, v: enp.take(u, v, mode="clip"))(a, i), want)


@pytest.mark.parametrize("idt", [np.uint8, np.uint64])
def test_take_clip_and_wrap_unsigned(idt):
    a = np.arange(5.0)
    i = np.array([0, 4, 7, 200, 255], idt)
    for mode in ("clip", "wrap"):
        want = np.take(a, i, mode=mode)
        np.testing.assert_array_equal(enp.take(a, i, mode=mode), want)
        np.testing.assert_array_equal(jit(lambda u, v: enp.take(u, v, mode=mode))(a, i), want)


def test_take_modes_along_an_axis_and_scalar_index():
    a = np.arange(12.0).reshape(3, 4)
    i = np.array([[-1, 5], [0, -9]])
    for mode in ("clip", "wrap"):
        np.testing.assert_array_equal(enp.take(a, i, axis=1, mode=mode),
                                      np.take(a, i, axis=1, mode=mode))
        np.testing.assert_array_equal(enp.take(a, -3, mode=mode), np.take(a, -3, mode=mode))
        np.testing.assert_array_equal(enp.take(a, np.array(-3), axis=0, mode=mode),
                                      np.take(a, np.array(-3), axis=0, mode=mode))


def test_take_fill_wraps_negatives_once_like_jax():
    a = np.arange(5.0)
    i = np.array([-7, -1, 0, 4, 7])
    want = np.array([NAN, 4.0, 0.0, 4.0, NAN])  # jax.numpy.take(mode="fill")
    _same_floats(enp.take(a, i, mode="fill"), want)
    _same_floats(jit(lambda u, v: enp.take(u, v, mode="fill"))(a, i), want)


# --- 4. take_along_axis with an empty batch axis; order statistics of empty slices ----

@pytest.mark.parametrize("xshape, ishape, axis", [((0, 3), (0, 3), 0), ((0, 3), (0, 2), 1),
                                                  ((2, 0, 3), (2, 0, 1), 2),
                                                  ((4, 0), (2, 0), 0)])
def test_take_along_axis_empty_result(xshape, ishape, axis):
    x = np.zeros(xshape, np.float32)
    i = np.zeros(ishape, np.int32)
    want = np.take_along_axis(x, i, axis=axis)
    for f in (enp.take_along_axis, jit(enp.take_along_axis, static_argnums=2)):
        got = np.asarray(f(x, i, axis))
        assert got.shape == want.shape and got.dtype == want.dtype


_EMPTY_STATS = {
    "median": (lambda a, **k: enp.median(a, **k), lambda a, **k: np.median(a, **k)),
    "nanmedian": (lambda a, **k: enp.nanmedian(a, **k), lambda a, **k: np.nanmedian(a, **k)),
    "nanquantile": (lambda a, **k: enp.nanquantile(a, 0.25, **k),
                    lambda a, **k: np.nanquantile(a, 0.25, **k)),
    "nanpercentile": (lambda a, **k: enp.nanpercentile(a, 30, **k),
                      lambda a, **k: np.nanpercentile(a, 30, **k)),
    # numpy's quantile/percentile raise an IndexError from inside here; the answer is
    # numpy's nanquantile's (and JAX's): NaN of the same shape
    "quantile": (lambda a, **k: enp.quantile(a, 0.25, **k),
                 lambda a, **k: np.nanquantile(a, 0.25, **k)),
    "percentile": (lambda a, **k: enp.percentile(a, 30, **k),
                   lambda a, **k: np.nanpercentile(a, 30, **k)),
}


@pytest.mark.parametrize("name", sorted(_EMPTY_STATS))
@pytest.mark.parametrize("shape, kw", [((0, 3), {}), ((0, 3), {"axis": 0}),
                                       ((0, 3), {"axis": 1}), ((0,), {"keepdims": True}),
                                       ((2, 0, 3), {"axis": 1, "keepdims": True}),
                                       ((2, 0, 3), {"axis": (0, 1)}), ((2, 0, 3), {"axis": 0})])
def test_order_statistics_of_empty_slices_are_nan_with_a_warning(name, shape, kw):
    ours, ref = _EMPTY_STATS[name]
    x = np.zeros(shape)
    with warnings.catch_warnings(record=True) as w_np:
        warnings.simplefilter("always")
        want = np.asarray(ref(x, **kw))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = np.asarray(ours(x, **kw))
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.isnan(got).all() and np.isnan(want).all()
    warned = any(issubclass(r.category, RuntimeWarning) for r in w)
    assert warned == (want.size > 0) == any(issubclass(r.category, RuntimeWarning) for r in w_np)
    got_jit = np.asarray(jit(lambda a: ours(a, **kw))(x))
    assert got_jit.shape == want.shape and np.isnan(got_jit).all()


def test_quantile_of_empty_with_a_vector_of_q():
    # q's axis comes first, as for non-empty input (numpy's nanquantile drops it here)
    with pytest.warns(RuntimeWarning):
        got = np.asarray(enp.quantile(np.zeros((0, 3)), [0.25, 0.5], axis=0, keepdims=True))
    assert got.shape == (2, 1, 3) and np.isnan(got).all()
    with pytest.warns(RuntimeWarning):
        got = np.asarray(enp.nanpercentile(np.zeros((0, 3), np.int32), [10, 20, 30]))
    assert got.shape == (3,) and np.isnan(got).all()


def test_quantile_of_empty_still_checks_q():
    with pytest.raises(ValueError, match="range"):
        enp.quantile(np.zeros((0, 3)), 1.5)


# --- 5. .at[] updates with duplicate indices -------------------------------------------

_AT_X = np.array([2.0, 3.0, 4.0, 5.0])
_AT_I = np.array([0, 0, 1])
_AT_V = np.array([2.0, 3.0, 0.5])
# jax.numpy 0.10, x.at[[0, 0, 1]].<method>([2, 3, 0.5]) on [2, 3, 4, 5]
_AT_WANT = {
    "add": [7.0, 3.5, 4.0, 5.0],
    "multiply": [12.0, 1.5, 4.0, 5.0],
    "divide": [2.0 / 6.0, 6.0, 4.0, 5.0],
    "power": [64.0, 3.0 ** 0.5, 4.0, 5.0],
    "min": [2.0, 0.5, 4.0, 5.0],
    "max": [3.0, 3.0, 4.0, 5.0],
    "set": [3.0, 0.5, 4.0, 5.0],
}


@pytest.mark.parametrize("method", sorted(_AT_WANT))
def test_at_methods_apply_every_duplicate_like_jax(method):
    f = lambda x, v: getattr(x.at[_AT_I], method)(v)  # noqa: E731
    want = np.array(_AT_WANT[method])
    x = enp.asarray(_AT_X)
    np.testing.assert_allclose(np.asarray(f(x, _AT_V)), want, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(jit(f)(x, _AT_V)), want, rtol=1e-15)


def test_at_divide_power_integer_and_modes_like_jax():
    xi = enp.asarray(np.array([2, 3, 4, 5], np.int32))
    got = xi.at[np.array([0, 0])].divide(2)
    assert got.dtype == np.float32  # JAX: true division of an int array
    np.testing.assert_array_equal(got, [0.5, 3.0, 4.0, 5.0])
    got = xi.at[np.array([0, 0])].power(2)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, [16, 3, 4, 5])
    xf = enp.asarray(np.array([2.0, 3.0, 4.0, 5.0], np.float32))
    i = np.array([0, 0, 9])
    np.testing.assert_array_equal(xf.at[i].divide(2.0, mode="drop"), [0.5, 3.0, 4.0, 5.0])
    np.testing.assert_array_equal(xf.at[i].power(2.0, mode="clip"), [16.0, 3.0, 4.0, 25.0])
    np.testing.assert_array_equal(xf.at[np.array([-1, -1])].divide(2.0), [2.0, 3.0, 4.0, 1.25])
    # JAX multiplies the exponents: (-8) ** (2 * 0.5), not ((-8) ** 2) ** 0.5
    np.testing.assert_array_equal(
        enp.asarray(np.array([-8.0, 3.0])).at[np.array([0, 0])].power(np.array([2.0, 0.5])),
        [-8.0, 3.0])


def test_at_divide_gradient_with_duplicates():
    def f(x, v):
        return x.at[_AT_I].divide(v).sum()
    gx, gv = ember.grad(f, argnums=(0, 1))(_AT_X, _AT_V)
    # d/dx = 1 / prod(values at each entry); d/dv_k = -x_i / (v_k * prod)
    np.testing.assert_allclose(np.asarray(gx), [1 / 6, 2.0, 1.0, 1.0], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gv), [-2 / 12, -2 / 18, -3 / 0.25], rtol=1e-12)


# --- 7. signed zeros in max/min under jit; logaddexp2's derivative at ties -------------

def _ieee_zero_max(a, b):
    # ember's (and JAX's) rule: IEEE 754-2019 maximum, -0.0 < +0.0 (numpy's maximum
    # returns the second operand of a zero tie, its fmax the first)
    return np.where(np.signbit(a) & np.signbit(b), -0.0, 0.0)


def _ieee_zero_min(a, b):
    return np.where(np.signbit(a) | np.signbit(b), -0.0, 0.0)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 7, 37, 300])
def test_max_min_of_signed_zeros_jit_matches_eager(dtype, n):
    rng = np.random.default_rng(n)
    a = rng.choice(np.array([0.0, -0.0], dtype), n)
    b = rng.choice(np.array([0.0, -0.0], dtype), n)
    for f, rule in ((enp.maximum, _ieee_zero_max), (enp.minimum, _ieee_zero_min),
                    (enp.fmax, _ieee_zero_max), (enp.fmin, _ieee_zero_min)):
        want = rule(a, b).astype(dtype)
        _same_floats(f(a, b), want)
        _same_floats(jit(f)(a, b), want)
    all_pos = not np.signbit(a).all()
    any_neg = np.signbit(a).any()
    for f, neg in ((enp.max, not all_pos), (enp.nanmax, not all_pos), (enp.min, any_neg),
                   (enp.nanmin, any_neg)):
        want = np.array(-0.0 if neg else 0.0, dtype)
        _same_floats(f(a), want)
        _same_floats(jit(f)(a), want)


def test_logaddexp2_derivative_at_ties_like_logaddexp():
    g2 = ember.grad(enp.logaddexp2, argnums=(0, 1))
    g = ember.grad(enp.logaddexp, argnums=(0, 1))
    for u in (1.0, -3.0, 0.0):
        # JAX: 0.5 each
        assert [float(v) for v in g2(u, u)] == [0.5, 0.5]
        assert float(ember.grad(lambda t: enp.logaddexp2(t, t))(u)) == 1.0
    for u in (np.inf, -np.inf):  # equal infinities split evenly, as logaddexp does
        assert [float(v) for v in g2(u, u)] == [float(v) for v in g(u, u)] == [0.5, 0.5]
    # away from ties: 2**a / (2**a + 2**b); JAX gives (0.2, 0.8) at (1, 3)
    np.testing.assert_allclose([float(v) for v in g2(1.0, 3.0)], [0.2, 0.8], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jit(ember.grad(enp.logaddexp2))(2.0, 2.0)), 0.5)
    np.testing.assert_allclose(
        np.asarray(ember.vmap(ember.grad(enp.logaddexp2))(np.array([1.0, 2.0, -3.0]),
                                                           np.array([1.0, 0.0, -3.0]))),
        [0.5, 0.8, 0.5], rtol=1e-6)


def test_logaddexp2_gradients_vs_finite_differences():
    from ember.testing import check_grads
    check_grads(enp.logaddexp2, (np.array([0.3, -1.2]), np.array([2.0, -1.1])), order=2,
                modes=("fwd", "rev"))


# --- 2. clip with bounds of another dtype ------------------------------------------------

@pytest.mark.parametrize("x, lo, hi", [
    (np.array([-128, 0, 127], np.int8), np.array([-1.5]), np.array([100.7])),
    (np.array([0, 10, 255], np.uint8), np.array([-5]), np.array([300])),
    (np.array([0, 10, 255], np.uint8), np.array([-5], np.int8), np.array([3], np.int8)),
    (np.array([0, 10, 255], np.uint8), np.int8(-5), np.int8(100)),
    (np.array([-128, 0, 127], np.int8), 0, 300),
    (np.array([-128, 0, 127], np.int8), -1000, None),
    (np.array([0, 10, 255], np.uint8), -5, 300),
    (np.array([True, False]), False, True),
    (np.array([1.0, 2.0, 3.0], np.float16), np.array(1.5), 2.5),
    (np.array([[1.0, 2.0, 3.0]], np.float32), np.array([[0.0], [2.5]], np.float32), 2.8),
])
def test_clip_result_dtype_follows_numpy_promotion_without_wrapping(x, lo, hi):
    want = np.clip(x, lo, hi)
    for got in (enp.clip(x, lo, hi), jit(lambda a: enp.clip(a, lo, hi))(x)):
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        np.testing.assert_array_equal(np.asarray(got), want)


def test_clip_python_float_bounds_of_an_int_array_give_a_float_result():
    # numpy: float64, JAX: float32 (its default float), both [-1.5, 0, 100.7]; ember uses
    # its default float for the weak Python float, as JAX does
    x = np.array([-128, 0, 127], np.int8)
    got = enp.clip(x, -1.5, 100.7)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(got), np.array([-1.5, 0.0, 100.7], np.float32))
    got = enp.clip(np.array([1, 5, 9], np.int32), NAN, 3)
    assert got.dtype == np.float32 and np.isnan(np.asarray(got)).all()


# --- 8. order statistics next to infinities ----------------------------------------------

@pytest.mark.parametrize("values", [[1.0, INF, -INF], [1.0, INF], [-INF, INF],
                                    [-INF, 1.0, 2.0, INF],
                                    [-INF, -INF, 1.0], [INF, INF], [NAN, 1.0, INF],
                                    [3.0, -INF, 2.0, 5.0, INF]])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_median_next_to_infinities_matches_numpy(values, dtype):
    a = np.array(values, dtype)
    with np.errstate(all="ignore"):
        want = np.median(a)
        want_nan = np.nanmedian(a)
    _same_floats(enp.median(a), want)
    _same_floats(jit(enp.median)(a), want)
    _same_floats(enp.nanmedian(a), want_nan)


def test_quantile_on_an_element_is_that_element():
    a = np.array([-INF, 1.0, 2.0, INF])
    # positions 0, 1, 2, 3 exactly (numpy's lerp gives NaN at the ends: inf * 0)
    got = np.asarray(enp.quantile(a, np.array([0.0, 1 / 3, 2 / 3, 1.0])))
    np.testing.assert_array_equal(got, [-INF, 1.0, 2.0, INF])
    np.testing.assert_array_equal(np.asarray(enp.quantile(np.array([1.0, INF]), 0.25)), INF)
    np.testing.assert_array_equal(np.asarray(enp.quantile(np.array([-INF, 1.0]), 0.75)), -INF)
    assert float(enp.quantile(np.array([1.0, INF, -INF]), 0.5, method="midpoint")) == 1.0


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_half_logaddexp_rounds_once_like_numpy(name):
    rng = np.random.default_rng(1)
    special = np.array([0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 2.5, -7.0, 65504.0])
    a = np.concatenate([rng.uniform(-20, 20, 400), rng.choice(special, 100)]).astype(np.float16)
    b = np.concatenate([rng.uniform(-20, 20, 400), rng.choice(special, 100)]).astype(np.float16)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a, b)
    f = getattr(enp, name)
    for got in (f(a, b), jit(f)(a, b)):
        got = np.asarray(got)
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got, want)
    g = ember.grad(lambda u, v: f(u, v).astype(np.float32))(np.float16(1.0), np.float16(1.0))
    assert g.dtype == np.float16 and float(g) == 0.5


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32,
                                   np.bool_])
def test_mean_of_narrow_integers_is_exact_and_jit_agrees(dtype):
    if dtype == np.bool_:
        x = np.array([True, False, True, True, False, True, True])
    else:
        info = np.iinfo(dtype)
        x = np.array([info.min, info.max, 0, 1, 7, info.min + 1, info.max - 1, 3, 5], dtype)
    # numpy's float64 mean rounded once to ember's result dtype (float32; float64 for
    # uint32, which float32 cannot hold)
    rd = np.float64 if dtype == np.uint32 else np.float32
    want = rd(np.mean(x))
    for got in (enp.mean(x), jit(enp.mean)(x)):
        assert got.dtype == rd
        assert float(got) == float(want)
    m = x.reshape(1, -1).repeat(3, axis=0)
    mean_rows = lambda v: enp.mean(v, axis=1, keepdims=True)  # noqa: E731
    for got in (mean_rows(m), jit(mean_rows)(m)):
        np.testing.assert_array_equal(np.asarray(got), np.full((3, 1), want))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_hypot_rounds_once(dtype):
    import ml_dtypes
    d = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(np.float16)
    rng = np.random.default_rng(2)
    special = np.array([0.0, -0.0, INF, -INF, NAN, 1.0, -7.0, 1.5, 3.0])
    a = np.concatenate([rng.uniform(-50, 50, 300), rng.choice(special, 60)]).astype(d)
    b = np.concatenate([rng.uniform(-50, 50, 300), rng.choice(special, 60)]).astype(d)
    # numpy's answer: float32 hypot rounded once to the half type
    want = np.hypot(a.astype(np.float32), b.astype(np.float32)).astype(d)
    for got in (enp.hypot(a, b), jit(enp.hypot)(a, b)):
        got = np.asarray(got)
        assert got.dtype == d
        np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


@pytest.mark.parametrize("make", [
    lambda: enp.pow(enp.asarray(np.array([2, 3], np.int32)), -1),
    lambda: enp.asarray(np.array([2, 3], np.int8)) ** -2,
    lambda: jit(lambda v: v ** -1)(np.array([2, 3], np.int64)),
    lambda: enp.power(np.array([2, 3], np.uint8), np.int64(-1)),
    lambda: enp.power(2, -1),
])
def test_integer_base_to_a_negative_scalar_power_raises_like_numpy(make):
    with pytest.raises(ValueError, match="negative integer powers"):
        make()


def test_negative_powers_that_stay_allowed():
    np.testing.assert_array_equal(enp.asarray(np.array([2.0, 4.0], np.float32)) ** -1, [0.5, 0.25])
    assert float(enp.power(2.0, -1)) == 0.5
    assert enp.power(np.array([2, 3], np.int32), 2).tolist() == [4, 9]


def test_ix_takes_a_boolean_sequence_as_its_true_positions():
    m = np.arange(12.0).reshape(3, 4)
    rows, cols = np.array([True, False, True]), np.array([1, 3])
    want = m[np.ix_(rows, cols)]
    got = np.asarray(enp.asarray(m)[enp.ix_(rows, cols)])
    np.testing.assert_array_equal(got, want)
    assert [a.shape for a in enp.ix_(rows, cols)] == [(2, 1), (1, 2)]
    with pytest.raises(TypeError, match="ix_: boolean argument 0 must be concrete"):
        jit(lambda r: enp.ix_(r, cols)[0])(rows)


@pytest.mark.parametrize("fn", ["nanargmax", "nanargmin"])
def test_nanarg_all_nan_slice_is_minus_one_eager_jit_vmap(fn):
    # index 0 was a plausible wrong answer for an all-NaN slice; JAX gives -1
    n = np.nan
    a = np.array([[n, n], [1.0, n], [n, 2.0]])
    f = getattr(enp, fn)
    assert f(enp.asarray(a), axis=1).tolist() == [-1, 0, 1]
    assert f(enp.asarray(a), axis=1, keepdims=True).tolist() == [[-1], [0], [1]]
    assert int(f(enp.asarray([n, n]))) == -1
    assert ember.jit(lambda x: f(x, axis=1))(enp.asarray(a)).tolist() == [-1, 0, 1]
    assert ember.vmap(f)(enp.asarray(a)).tolist() == [-1, 0, 1]
    assert int(f(enp.asarray([3, 1]))) == (0 if fn == "nanargmax" else 1)


def test_power_uint64_exponents_past_2_63():
    # the exponent's bit length was read through int64, so 2**63 wrapped negative and
    # its top bit was never multiplied in (x**(2**63) gave 1)
    x = np.array([0, 2, 3, 1], np.uint64)
    e = np.array([2**63, 2**63, 2**63 + 1, 2**64 - 1], np.uint64)
    want = np.power(x, e).tolist()
    assert enp.power(enp.asarray(x), enp.asarray(e)).tolist() == want
    assert jit(enp.power)(enp.asarray(x), enp.asarray(e)).tolist() == want
