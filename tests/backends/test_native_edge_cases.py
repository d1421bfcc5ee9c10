"""Native-backend edge cases found by the numpy-API audit: eager (reference impls), jit
(the LLVM backend) and the compiled graph agree with the documented lax semantics."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember import jit, lax
from ember.backends.llvm.executable import compile_graph

UNSIGNED = [np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64)]
SIGNED = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64)]


def _want_select(which, cases):
    # select_n's documented out-of-range rule: the selector is clipped into
    # [0, len(cases) - 1] (np.choose(mode="clip")), computed here in Python ints
    idx = [min(max(int(w), 0), len(cases) - 1) for w in which.ravel()]
    flat = [c.ravel() for c in cases]
    return np.array([flat[k][i] for i, k in enumerate(idx)], cases[0].dtype).reshape(which.shape)


def _top_bit_values(dtype):
    info = np.iinfo(dtype)
    top = 1 << (dtype.itemsize * 8 - 1)
    return [0, 1, 2, 3, top, top + 1, int(info.max), int(info.max) - 1]


@pytest.mark.parametrize("dtype", UNSIGNED, ids=str)
@pytest.mark.parametrize("n", [1, 8, 37])  # scalar loop, vector body, tail
@pytest.mark.parametrize("ncases", [2, 3, 4])
def test_select_n_unsigned_selector_with_top_bit_set(dtype, n, ncases):
    vals = _top_bit_values(dtype)
    which = np.array([vals[i % len(vals)] for i in range(n)], dtype)
    cases = [np.full(n, 10.0 * (k + 1), np.float32) + np.arange(n, dtype=np.float32)
             for k in range(ncases)]
    want = _want_select(which, cases)
    np.testing.assert_array_equal(np.asarray(lax.select_n(which, *cases)), want)
    np.testing.assert_array_equal(np.asarray(jit(lax.select_n)(which, *cases)), want)
    g = ember.make_graph(lax.select_n)(which, *cases)
    np.testing.assert_array_equal(np.asarray(compile_graph(g)(which, *cases)[0]), want)


def test_select_n_uint8_200_picks_the_last_case():
    which = np.array([200, 255, 128, 1, 0], np.uint8)
    cases = [np.zeros(5, np.int32), np.ones(5, np.int32), np.full(5, 2, np.int32)]
    want = np.array([2, 2, 2, 1, 0], np.int32)
    np.testing.assert_array_equal(np.asarray(lax.select_n(which, *cases)), want)
    np.testing.assert_array_equal(np.asarray(jit(lax.select_n)(which, *cases)), want)


def test_select_n_uint64_above_2_63():
    which = np.array([2**63 + 1, 2**64 - 1, 2**63, 1], np.uint64)
    cases = [np.full(4, -1.0), np.full(4, 7.0)]
    want = np.array([7.0, 7.0, 7.0, 7.0])
    np.testing.assert_array_equal(np.asarray(lax.select_n(which, *cases)), want)
    np.testing.assert_array_equal(np.asarray(jit(lax.select_n)(which, *cases)), want)


@pytest.mark.parametrize("dtype", SIGNED, ids=str)
def test_select_n_signed_selector_negative_clips_to_first(dtype):
    info = np.iinfo(dtype)
    which = np.array([int(info.min), -1, 0, 1, 2, int(info.max)], dtype)
    cases = [np.full(6, 1.0), np.full(6, 2.0), np.full(6, 3.0)]
    want = np.array([1.0, 1.0, 1.0, 2.0, 3.0, 3.0])
    np.testing.assert_array_equal(np.asarray(lax.select_n(which, *cases)), want)
    np.testing.assert_array_equal(np.asarray(jit(lax.select_n)(which, *cases)), want)


def test_select_n_bool_selector_and_rank0_selector():
    which = np.array([True, False, True])
    a, b = np.array([1, 2, 3], np.int8), np.array([4, 5, 6], np.int8)
    np.testing.assert_array_equal(np.asarray(jit(lax.select_n)(which, a, b)), [4, 2, 6])
    s = np.uint8(250)
    np.testing.assert_array_equal(np.asarray(jit(lax.select_n)(s, a, b)), b)
    np.testing.assert_array_equal(np.asarray(lax.select_n(s, a, b)), b)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(UNSIGNED + SIGNED), st.integers(2, 4), st.data())
def test_select_n_eager_matches_jit(dtype, ncases, data):
    info = np.iinfo(dtype)
    n = data.draw(st.integers(0, 20))
    which = np.array(data.draw(st.lists(st.integers(int(info.min), int(info.max)),
                                        min_size=n, max_size=n)), dtype)
    cases = [np.arange(n, dtype=np.float64) + 100 * k for k in range(ncases)]
    want = _want_select(which, cases)
    np.testing.assert_array_equal(np.asarray(lax.select_n(which, *cases)), want)
    np.testing.assert_array_equal(np.asarray(jit(lax.select_n)(which, *cases)), want)


# integer_pow of floats is square-and-multiply with a rounding per product (then one
# reciprocal for a negative power), as XLA computes it; the expected values are that
# arithmetic, checked against jax.lax.integer_pow.
@pytest.mark.parametrize("dtype, x, y, want", [
    (np.float32, 0.1, 7, 1.0000001537946446e-07),      # np.power: 1.000000082740371e-07
    (np.float32, 255.9, 7, 7.186078575152333e+16),
    (np.float32, 0.1, -2, 99.99999237060547),          # np.power: 100.0
    (np.float32, 2.0 ** 64, -2, 0.0),                  # x*x overflows: 1/inf
    (np.float64, 1e30, 3, 1.0000000000000002e+90),
    (np.float64, -1e30, 7, -1.0000000000000005e+210),
    (np.float64, 1e-40, -2, 1.0000000000000003e+80),
    (np.float64, -0.0, -3, -np.inf),
    (ml_dtypes.bfloat16, 2.0 ** 64, -2, 0.0),          # computed in float32, as jit does
    # half precision: float32 products, one rounding (ember's rule; XLA rounds each
    # product to float16 and gets 0.00099945068359375)
    (np.float16, 0.1, 3, 0.0009999275207519531),
])
@pytest.mark.parametrize("n", [1, 17])  # scalar loop and vector body + tail
def test_integer_pow_rounds_like_repeated_multiplication(dtype, x, y, want, n):
    xs = np.full(n, x, dtype)
    want = np.full(n, want, dtype)
    eager = np.asarray(lax.integer_pow(xs, y))
    jitted = np.asarray(jit(lambda v: lax.integer_pow(v, y))(xs))
    assert eager.dtype == jitted.dtype == want.dtype
    np.testing.assert_array_equal(eager.view(np.uint8), want.view(np.uint8))
    np.testing.assert_array_equal(jitted.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("shape", [(0,), (), (3,)])
def test_integer_pow_negative_power_of_ints_is_a_type_error_eager_and_jit(shape):
    x = np.zeros(shape, np.int32)
    with pytest.raises(TypeError, match=r"int32.*negative power -1.*float32"):
        lax.integer_pow(x, -1)
    # the size-0 case used to return an empty array under jit, others an LLVM parse error
    with pytest.raises(TypeError, match=r"int32.*negative power -1"):
        jit(lambda v: lax.integer_pow(v, -1))(x)
