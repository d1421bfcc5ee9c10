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
