"""jit and eager agree on the sign of every zero (issue #12, item 4): max/min are
IEEE 754-2019 maximum/minimum (NaN propagates, -0.0 < +0.0) elementwise, in
reductions of every kernel variant, clamps, scatters, running and windowed
extrema; a product's accumulator starts at +0.0; pow(+-0, y) follows C99."""
import functools
import itertools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember.numpy as enp
from ember import jit, lax

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
SPECIAL = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan]


def _ieee(op, a, b):
    """IEEE 754-2019 maximum/minimum of two Python floats."""
    if a != a or b != b:
        return np.nan
    if a == b == 0:
        neg = (np.signbit(a) and np.signbit(b)) if op == "max" else (np.signbit(a) or np.signbit(b))
        return -0.0 if neg else 0.0
    return max(a, b) if op == "max" else min(a, b)


def _same(got, want):
    got = np.asarray(got).astype(np.float64)
    want = np.asarray(want, np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("n", [1, 7, 37, 300])   # scalar loop, vector body and tail
def test_elementwise_max_min_clamp_relu(dtype, n):
    pairs = list(itertools.product(SPECIAL, SPECIAL))
    a = np.array([pairs[i % len(pairs)][0] for i in range(n)], dtype)
    b = np.array([pairs[i % len(pairs)][1] for i in range(n)], dtype)
    for op, f in (("max", lax.max), ("min", lax.min)):
        want = [_ieee(op, float(x), float(y)) for x, y in zip(a, b)]
        _same(jit(f)(a, b), want)
        _same(f(a, b), want)
    relu = lambda v: enp.maximum(v, 0.0)  # noqa: E731
    want = [_ieee("max", float(x), 0.0) for x in a]
    _same(jit(relu)(a), want)
    _same(relu(a), want)
    lo, hi = np.array(-0.0, dtype), np.array(0.0, dtype)
    want = [_ieee("min", _ieee("max", float(x), -0.0), 0.0) for x in a]
    _same(jit(lambda v: lax.clamp(lo, v, hi))(a), want)
    _same(lax.clamp(lo, a, hi), want)


def test_rank0_max():
    _same(jit(lax.max)(np.float32(-0.0), np.float32(0.0)), 0.0)
    _same(lax.max(np.float32(-0.0), np.float32(0.0)), 0.0)
    _same(jit(lax.min)(np.float32(0.0), np.float32(-0.0)), -0.0)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(FLOATS), st.sampled_from([(5,), (3, 37), (37, 3), (2, 3, 40)]),
       st.integers(0, 2**32 - 1), st.booleans())
def test_reductions_order_zeros(dtype, shape, seed, with_nan):
    rng = np.random.default_rng(seed)
    pool = [0.0, -0.0, -1.0, 1.0] + ([np.nan] if with_nan else [])
    x = rng.choice(np.array(pool), size=shape).astype(dtype)
    for axes in {(0,), (len(shape) - 1,), tuple(range(len(shape)))}:
        for op, f in (("max", lax.reduce_max), ("min", lax.reduce_min)):
            x64 = x.astype(np.float64)
            flat = np.moveaxis(x64, axes, tuple(range(len(axes)))).reshape(
                int(np.prod([shape[a] for a in axes])), -1)
            want = np.array([functools.reduce(lambda p, q: _ieee(op, p, q), col.tolist())
                             for col in flat.T]).reshape([n for i, n in enumerate(shape) if i not in axes])
            _same(jit(lambda v: f(v, axes))(x), want)
            _same(f(x, axes), want)


def test_split_reduction_orders_zeros():
    # large enough to be split into per-chunk partial results
    x = np.full(1 << 17, -0.0, np.float32)
    x[77777] = 0.0
    _same(jit(lambda v: lax.reduce_max(v, (0,)))(x), 0.0)
    _same(lax.reduce_max(x, (0,)), 0.0)
    y = np.zeros(1 << 17, np.float32)
    y[5] = -0.0
    _same(jit(lambda v: lax.reduce_min(v, (0,)))(y), -0.0)
    _same(lax.reduce_min(y, (0,)), -0.0)


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_products_of_negative_zeros_are_positive_zero(k, dtype):
    x = np.array([[-1.0] * k, [2.0] * k, [-0.0] * k], dtype)
    y = np.zeros((k, 2), dtype)
    y[:, 1] = -0.0
    want = np.zeros((3, 2))
    _same(jit(lambda a, b: a @ b)(x, y), want)
    _same(enp.asarray(x) @ y, want)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_pow_of_zeros_follows_c99(dtype):
    x = np.array([-0.0, 0.0, -0.0, -0.0, -0.0, -0.0, 0.0], dtype)
    y = np.array([0.5, 0.5, -0.5, 3.0, -3.0, 2.0, -2.0], dtype)
    want = [0.0, 0.0, np.inf, -0.0, -np.inf, 0.0, np.inf]
    _same(jit(lambda a, b: a ** b)(x, y), want)
    _same(enp.asarray(x) ** y, want)
    # a scalar exponent of +-0.5 takes numpy's sqrt shortcut, which keeps -0.0
    z = np.array([-0.0], dtype)
    for e, w in ((0.5, 0.0), (-0.5, np.inf)):
        _same(enp.asarray(z) ** e, [w])
        _same(jit(lambda v: v ** e)(z), [w])


def test_scatter_running_and_windowed_extrema_order_zeros():
    dn = lax.ScatterDimensionNumbers((), (0,), (0,))
    op = np.array([-0.0, 0.0, -0.0], np.float32)
    idx = np.array([[0], [1], [2]])
    upd = np.array([0.0, -0.0, -0.0], np.float32)
    for f, want in ((lax.scatter_max, [0.0, 0.0, -0.0]), (lax.scatter_min, [-0.0, -0.0, -0.0])):
        _same(jit(lambda a, u: f(a, idx, u, dn))(op, upd), want)
        _same(f(op, idx, upd, dn), want)
    x = np.array([-0.0, 0.0, -0.0], np.float32)
    _same(lax.cummax(x), [-0.0, 0.0, 0.0])
    _same(jit(lax.cummin)(-x), [0.0, -0.0, -0.0])
    _same(lax.reduce_window_max(x, (2,), (1,)), [0.0, 0.0])
    _same(jit(lambda v: lax.reduce_window_max(v, (2,), (1,)))(x), [0.0, 0.0])
