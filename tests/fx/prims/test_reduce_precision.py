"""lax.reduce_precision against casts through the narrower formats ml_dtypes
implements (value for value, bit for bit), with JAX's semantics for what those casts
do differently (the reduced format has no subnormals: they flush to signed zero),
plus its linear derivative rules, batching and errors."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember import lax

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}
# (exponent bits, mantissa bits) -> the ml_dtypes format with that layout and IEEE
# behaviour at the top (inf and NaN codes): rounding to it is a cast there and back
FORMATS = {(5, 10): np.dtype(np.float16), (8, 7): BF16, (8, 23): np.dtype(np.float32),
           (5, 2): np.dtype(ml_dtypes.float8_e5m2)}


def _bits(a):
    a = np.asarray(a)
    return a.view(UINT[a.dtype.itemsize])


def _any_bits(dtype, n, seed):
    """Uniformly random bit patterns, so every exponent, subnormals and NaNs occur."""
    rng = np.random.default_rng(seed)
    d = np.dtype(dtype)
    u = rng.integers(0, np.iinfo(UINT[d.itemsize]).max, size=n, dtype=UINT[d.itemsize], endpoint=True)
    return u.view(d)


def _by_cast(x, fmt, flush):
    """x rounded to `fmt` by a cast there and back; with `flush` (the format has fewer
    exponent bits than x's), fmt's subnormals flushed to signed zero."""
    with np.errstate(all="ignore"):
        y = x.astype(fmt).astype(x.dtype)
    if not flush:
        return y
    tiny = float(ml_dtypes.finfo(fmt).smallest_normal)
    return np.where(np.abs(y) < tiny, np.copysign(np.zeros_like(y), y), y).astype(x.dtype)


def _rounds_like_a_cast(x, fmt):
    """Where the cast is the reference: not in [tiny / 2, tiny), where XLA rounds at the
    value's own exponent before flushing and a cast rounds at the subnormal step."""
    tiny = float(ml_dtypes.finfo(fmt).smallest_normal)
    a = np.abs(x.astype(np.float64))
    return ~((a >= tiny / 2) & (a < tiny))


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype
    nan = np.isnan(want.astype(np.float64))
    np.testing.assert_array_equal(np.isnan(got.astype(np.float64)), nan)
    np.testing.assert_array_equal(_bits(got)[~nan], _bits(want)[~nan])


LAYOUT = {np.dtype(np.float16): (5, 10), BF16: (8, 7), np.dtype(np.float32): (8, 23),
          np.dtype(np.float64): (11, 52)}
# (operand dtype, format) pairs whose format is no wider than the dtype in either field
NARROWER = [(d, f) for d in FLOATS for f in sorted(FORMATS)
            if f[0] <= LAYOUT[d][0] and f[1] <= LAYOUT[d][1]]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(NARROWER), st.integers(0, 2**31))
def test_matches_a_cast_through_the_narrower_format(case, seed):
    dtype, (e, m) = case
    x = _any_bits(dtype, 300, seed)
    got = np.asarray(lax.reduce_precision(x, e, m))
    if (e, m) == LAYOUT[dtype]:
        return _same(got, x)
    flush = e < LAYOUT[dtype][0]
    keep = _rounds_like_a_cast(x, FORMATS[(e, m)]) if flush else np.ones(x.shape, bool)
    _same(got[keep], _by_cast(x, FORMATS[(e, m)], flush)[keep])


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(FLOATS), st.integers(1, 11), st.integers(0, 52), st.integers(0, 2**31))
def test_native_code_matches_the_reference_bitwise(dtype, e, m, seed):
    x = _any_bits(dtype, 257, seed)
    # fused between other operations (half precision computes in float32 in a kernel)
    f = ember.jit(lambda v: lax.neg(lax.reduce_precision(lax.neg(v), e, m)))
    _same(f(x), lax.reduce_precision(x, e, m))


def test_edges():
    x = np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, 65504, 65520, -1e-7, 2 ** -14, np.inf, -np.inf, -0.0],
                 np.float32)
    got = np.asarray(lax.reduce_precision(x, 5, 10))
    # ties to even (1 + 2**-8 is halfway to bfloat16 but exact in float16); 65520 rounds up
    # past float16's max; -1e-7 is a float16 subnormal: -0.0; 2**-14 is its smallest normal
    np.testing.assert_array_equal(got, np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, 65504, np.inf, -0.0,
                                                 2 ** -14, np.inf, -np.inf, -0.0], np.float32))
    assert np.signbit(got[4]) and np.signbit(got[8])
    b = np.asarray(lax.reduce_precision(x[:2], 8, 7))
    np.testing.assert_array_equal(b, [1.0, 1 + 2 ** -6])  # ties to even both ways
    assert np.isnan(lax.reduce_precision(np.float64(np.nan), 2, 0))
    # wider than the operand's own format: the identity
    _same(lax.reduce_precision(x, 11, 52), x)


def test_derivatives_round_like_the_values():
    # linear, as in JAX: jvp and vjp round the tangent and cotangent to the format
    t = np.float32(1 + 2 ** -12)
    _, dy = ember.jvp(lambda v: lax.reduce_precision(v, 8, 7), (np.float32(3.0),), (t,))
    assert float(dy) == 1.0
    g = ember.grad(lambda v: (lax.reduce_precision(v, 5, 10) * np.float32(1 + 2 ** -12)).sum())
    np.testing.assert_array_equal(g(np.ones(3, np.float32)), np.ones(3, np.float32))
    h = ember.grad(ember.grad(lambda v: lax.reduce_precision(v * v, 8, 23)))(np.float64(1.5))
    assert float(h) == 2.0
    assert float(ember.grad(lambda v: lax.reduce_precision(v, 11, 52) * 3)(np.float64(2.0))) == 3.0


def test_vmap_matches_a_loop():
    x = _any_bits(np.float32, 24, 3).reshape(4, 6)
    f = ember.vmap(lambda v: lax.reduce_precision(v, 4, 3), in_axes=1, out_axes=1)
    _same(f(x), np.stack([np.asarray(lax.reduce_precision(x[:, j], 4, 3)) for j in range(6)], 1))


def test_bad_input_is_a_clear_error():
    with pytest.raises(TypeError, match="reduce_precision: operand must be a real float, got int32"):
        lax.reduce_precision(np.arange(3, dtype=np.int32), 5, 10)
    with pytest.raises(ValueError, match="exponent_bits must be >= 1"):
        lax.reduce_precision(np.ones(2, np.float32), 0, 10)
