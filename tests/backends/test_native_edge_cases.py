"""Native-backend edge cases found by the numpy-API audit: eager (reference impls), jit
(the LLVM backend) and the compiled graph agree with the documented lax semantics."""
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
