"""Differential tests: ember against the installed JAX on edge inputs.

Each case runs the same function through `ember` and `jax` and compares dtypes and
values bit for bit (floats: equal values with equal signs of zero, any NaN matching
any NaN). JAX runs with 64-bit types enabled (`jax.enable_x64`) wherever an input is
64-bit, otherwise in its default 32-bit mode, so that JAX's default dtypes
(`arange`, `linspace`, index results) are compared with ember's, which are 32-bit.

Left out on purpose (documented ember choices, listed in docs/for-jax-users.md):
integer division by zero (`//`, `%`: ember gives 0 like numpy, XLA gives -1/255 and
garbage after the floor adjustment), `sign(-0.0)` (+0.0 like numpy, XLA -0.0), the
sign of zero results of float `floor_divide`/`remainder` (numpy's), `lax.round`'s
default (half to even), half-precision `cumsum` (ember accumulates in float32) and
subnormal inputs (XLA on CPU flushes them to zero).
"""
from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import jax.lax as jl  # noqa: E402
import ml_dtypes  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import ember  # noqa: E402
import ember.numpy as enp  # noqa: E402
from ember import lax as el  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.float16, BF16, np.float32, np.float64]
INTS = [np.int8, np.uint8, np.int32, np.int64]
SPECIALS = np.array([np.nan, -np.inf, -2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, np.inf, 3.0])


def _wide(args):
    return any(np.asarray(a).dtype.itemsize == 8 and np.asarray(a).dtype.kind in "iuf"
               for a in args)


def _as_list(out):
    return [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else [out])]


def _same(a, b):
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    if a.dtype.kind == "f" or a.dtype == BF16:
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        np.testing.assert_array_equal(a64, b64)
        keep = ~np.isnan(a64)
        assert (np.signbit(a64[keep]) == np.signbit(b64[keep])).all(), (a, b)
    else:
        np.testing.assert_array_equal(a, b)


def check(fe, fj, *args, x64=None):
    """`fe(*ember arrays)` against `fj(*jax arrays)`: same dtypes, same bits."""
    x64 = _wide(args) if x64 is None else x64
    got = _as_list(fe(*[enp.asarray(a) for a in args]))
    with jax.enable_x64(x64):
        want = _as_list(fj(*[jnp.asarray(a) for a in args]))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w)


# --- .at[].apply: once per occurrence ---------------------------------------------------

def _times10(v):
    return v * 10


@pytest.mark.parametrize("idx", [[0, 0, 2, 0], [1], [], [-1, 2, -1], [0, 1, 2]])
def test_at_apply_repeats_per_occurrence(idx):
    x = np.array([1.0, 2.0, 3.0], np.float32)
    i = np.array(idx, np.int32)
    check(lambda a, j: a.at[j].apply(_times10), lambda a, j: a.at[j].apply(_times10), x, i)
    check(lambda a, j: ember.jit(lambda a, j: a.at[j].apply(_times10))(a, j),
          lambda a, j: jax.jit(lambda a, j: a.at[j].apply(_times10))(a, j), x, i)


@pytest.mark.parametrize("mode", ["drop", "clip", "fill"])
def test_at_apply_out_of_range_modes(mode):
    x = np.array([1.0, 2.0, 3.0], np.float32)
    i = np.array([0, 5, 0, -7], np.int32)
    check(lambda a, j: a.at[j].apply(_times10, mode=mode),
          lambda a, j: a.at[j].apply(_times10, mode=mode), x, i)
    check(lambda a, j: ember.jit(lambda a, j: a.at[j].apply(_times10, mode=mode))(a, j),
          lambda a, j: jax.jit(lambda a, j: a.at[j].apply(_times10, mode=mode))(a, j), x, i)


def test_at_apply_traced_out_of_range_drops():
    x = np.array([1.0, 2.0, 3.0], np.float32)
    i = np.array([0, 5, 0, 100], np.int32)
    check(lambda a, j: ember.jit(lambda a, j: a.at[j].apply(_times10))(a, j),
          lambda a, j: jax.jit(lambda a, j: a.at[j].apply(_times10))(a, j), x, i)


def test_at_apply_multi_index_int_and_slices():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    i, j = np.array([0, 0, 1], np.int32), np.array([1, 1, 2], np.int32)
    check(lambda a: a.at[i, j].apply(lambda v: v + 1), lambda a: a.at[i, j].apply(lambda v: v + 1), x)
    check(lambda a: a.at[np.array([1, 1])].apply(lambda v: v * 3),
          lambda a: a.at[np.array([1, 1])].apply(lambda v: v * 3), x)
    check(lambda a: a.at[:, 1:].apply(lambda v: -v), lambda a: a.at[:, 1:].apply(lambda v: -v), x)
    check(lambda a: a.at[()].apply(lambda v: v - 2), lambda a: a.at[()].apply(lambda v: v - 2),
          np.int8(5))


def test_at_apply_vmap():
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
    i = np.array([[0, 0, 2], [1, 1, 1]], np.int32)
    check(lambda a, j: ember.vmap(lambda a, j: a.at[j].apply(_times10))(a, j),
          lambda a, j: jax.vmap(lambda a, j: a.at[j].apply(_times10))(a, j), x, i)
    check(lambda a: ember.vmap(lambda a: a.at[np.array([2, 2])].apply(_times10))(a),
          lambda a: jax.vmap(lambda a: a.at[np.array([2, 2])].apply(_times10))(a), x)


def test_at_apply_grad_composes_per_occurrence():
    # JAX has no JVP for scatter_apply; ember's gradient is that of sin applied k times
    x = np.array([0.3, 0.7, 1.1])
    i = np.array([0, 0, 2, 0], np.int32)

    def f(a):
        return a.at[i].apply(enp.sin).sum()

    def ref(a):  # JAX on the unrolled composition
        return jnp.sin(jnp.sin(jnp.sin(a[0]))) + a[1] + jnp.sin(a[2])

    with jax.enable_x64(True):
        want = np.asarray(jax.grad(ref)(jnp.asarray(x)))
    np.testing.assert_allclose(np.asarray(ember.grad(f)(x)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(ember.jit(ember.grad(f))(x)), want, rtol=1e-12)
    jj = ember.jit(ember.grad(lambda a, j: a.at[j].apply(enp.sin).sum()))
    np.testing.assert_allclose(np.asarray(jj(x, i)), want, rtol=1e-12)


# --- lax: integer arithmetic, shifts, bit counts -----------------------------------------

_INT_VALUES = {
    np.int8: [-128, -7, -1, 0, 1, 7, 127],
    np.uint8: [0, 1, 7, 128, 255, 3, 254],
    np.int32: [-2**31, -7, -1, 0, 1, 7, 2**31 - 1],
    np.int64: [-2**63, -7, -1, 0, 1, 7, 2**63 - 1],
}


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", ["div", "rem"])
def test_lax_integer_div_rem_negatives(dtype, op):
    a = np.array(_INT_VALUES[dtype], dtype)
    b = np.roll(a, 1)
    b[b == 0] = 3
    check(getattr(el, op), getattr(jl, op), a, b)
    if np.dtype(dtype).kind == "i":
        check(getattr(el, op), getattr(jl, op), a, np.full_like(a, -1))


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", ["div", "rem"])
def test_lax_integer_div_rem_by_zero(dtype, op):
    a = np.array(_INT_VALUES[dtype], dtype)
    check(getattr(el, op), getattr(jl, op), a, np.zeros_like(a))


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", ["shift_left", "shift_right_logical", "shift_right_arithmetic"])
def test_lax_shifts_past_bit_width(dtype, op):
    bits = np.dtype(dtype).itemsize * 8
    a = np.array(_INT_VALUES[dtype], dtype)
    for s in [0, 1, bits - 1, bits, bits + 1, np.iinfo(dtype).max]:
        check(getattr(el, op), getattr(jl, op), a, np.full_like(a, s))
    if np.dtype(dtype).kind == "i":
        check(getattr(el, op), getattr(jl, op), a, np.full_like(a, -1))


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", ["population_count", "clz"])
def test_lax_bit_counts(dtype, op):
    check(getattr(el, op), getattr(jl, op), np.array(_INT_VALUES[dtype], dtype))
    check(getattr(el, op), getattr(jl, op), np.array(_INT_VALUES[dtype][0], dtype))  # 0-d


# --- lax: float edge values ----------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["rem", "div", "nextafter", "max", "min"])
def test_lax_float_binary_specials(dtype, op):
    a = SPECIALS.astype(dtype)
    for shift in (1, 3, 6):
        check(getattr(el, op), getattr(jl, op), a, np.roll(a, shift))


@pytest.mark.parametrize("dtype", FLOATS)
def test_lax_round_half_even_and_clamp(dtype):
    a = SPECIALS.astype(dtype)
    check(el.round, lambda x: jl.round(x, jl.RoundingMethod.TO_NEAREST_EVEN), a)
    check(el.floor, jl.floor, a)
    lo, hi = np.array(-1, dtype), np.array(1, dtype)
    check(lambda x: el.clamp(lo, x, hi), lambda x: jl.clamp(lo, x, hi), a)
    # clamp(min, x, max): a lower bound above the upper one gives the upper one
    check(lambda x: el.clamp(hi, x, lo), lambda x: jl.clamp(hi, x, lo), a[1:])
    z = np.array(0, dtype)
    check(lambda x: el.clamp(z, x, hi), lambda x: jl.clamp(z, x, hi), a)  # -0.0 vs +0.0


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("method", [0, 1])
def test_lax_round_rounding_method(dtype, method):
    x = np.concatenate([SPECIALS, [0.49999997, -0.4, 1e20, 4503599627370497.0, -3.5]]).astype(dtype)
    check(lambda a: el.round(a, method), lambda a: jl.round(a, method), x)
    check(lambda a: ember.jit(lambda v: el.round(v, el.RoundingMethod(method)))(a),
          lambda a: jl.round(a, jl.RoundingMethod(method)), x)


def test_lax_clamp_array_bounds_and_ints():
    check(el.clamp, jl.clamp, np.array([0., 5, -1]), np.array([1., 2, 3]), np.array([2., 1, 9]))
    check(lambda x: el.clamp(np.int8(-3), x, np.int8(3)),
          lambda x: jl.clamp(np.int8(-3), x, np.int8(3)), np.array([-128, 0, 127], np.int8))


# --- lax: dynamic slices clamp their starts ---------------------------------------------

_STARTS = [(0, 4), (1, 3), (5, 9), (-1, -2), (-3, 0), (-100, 100)]


@pytest.mark.parametrize("start", _STARTS)
def test_lax_dynamic_slice_clamps_starts(start):
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    up = np.ones((1, 2), np.float32)
    check(lambda a: el.dynamic_slice(a, start, (1, 2)), lambda a: jl.dynamic_slice(a, start, (1, 2)), x)
    check(lambda a: el.dynamic_update_slice(a, up, start),
          lambda a: jl.dynamic_update_slice(a, up, start), x)
    s0, s1 = np.int32(start[0]), np.int32(start[1])
    check(lambda a, i, j: ember.jit(lambda a, i, j: el.dynamic_slice(a, (i, j), (1, 2)))(a, i, j),
          lambda a, i, j: jax.jit(lambda a, i, j: jl.dynamic_slice(a, (i, j), (1, 2)))(a, i, j),
          x, s0, s1)
    check(lambda a, i, j: ember.jit(lambda a, i, j: el.dynamic_update_slice(a, up, (i, j)))(a, i, j),
          lambda a, i, j: jax.jit(lambda a, i, j: jl.dynamic_update_slice(a, up, (i, j)))(a, i, j),
          x, s0, s1)
    check(lambda a: el.dynamic_index_in_dim(a, start[1], 1, False),
          lambda a: jl.dynamic_index_in_dim(a, start[1], 1, False), x)


def test_lax_dynamic_slice_narrow_start_dtypes():
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    for st_ in [(np.uint8(1), np.uint8(200)), (np.int8(-1), np.int8(-128))]:
        check(lambda a: el.dynamic_slice(a, st_, (1, 2)), lambda a: jl.dynamic_slice(a, st_, (1, 2)), x)


# --- lax: sorting, top_k, argmax, cumulative ---------------------------------------------

_NANS = np.array([3., np.nan, -0.0, 0.0, -np.inf, np.nan, 1., np.inf, 0.0, -0.0])


@pytest.mark.parametrize("dtype", FLOATS)
def test_lax_sort_argmax_with_nan_and_zeros(dtype):
    a = _NANS.astype(dtype)
    check(el.sort, jl.sort, a)
    ids = np.arange(10, dtype=np.int32)
    check(lambda x: el.sort((x, ids)), lambda x: jl.sort((x, ids)), a)
    check(lambda x: el.top_k(x, 5), lambda x: jl.top_k(x, 5), a)
    for idt in (np.int32, np.uint8):
        check(lambda x: el.argmax(x, 0, idt), lambda x: jl.argmax(x, 0, idt), a)
        check(lambda x: el.argmin(x, 0, idt), lambda x: jl.argmin(x, 0, idt), a)
    check(lambda x: el.argmax(x, 0, np.int64), lambda x: jl.argmax(x, 0, np.int64), a, x64=True)


def test_lax_sort_multiple_operands_and_keys():
    k = np.array([2, 1, 2, 1, 0], np.int32)
    v = np.array([5., 4., 3., 2., 1.], np.float32)
    check(lambda a, b: el.sort((a, b), num_keys=1), lambda a, b: jl.sort((a, b), num_keys=1), k, v)
    check(lambda a, b: el.sort((a, b), num_keys=2), lambda a, b: jl.sort((a, b), num_keys=2), k, v)
    check(el.sort_key_val, jl.sort_key_val, k, v)
    check(lambda a: el.sort(a, dimension=0), lambda a: jl.sort(a, dimension=0),
          np.array([[3, 1], [np.nan, 0], [-1, np.nan]], np.float32))
    check(el.sort, jl.sort, np.zeros((0,), np.float32))
    check(el.sort, jl.sort, np.array([True, False, True]))


def test_lax_top_k_ties_ints_and_k0():
    t = np.array([1., 3., 3., 2., 3., 1.], np.float32)
    check(lambda x: el.top_k(x, 4), lambda x: jl.top_k(x, 4), t)
    check(lambda x: el.top_k(x, 0), lambda x: jl.top_k(x, 0), t)
    check(lambda x: el.top_k(x, 3), lambda x: jl.top_k(x, 3), np.array([-128, 127, 0, 127, -1], np.int8))
    check(lambda x: el.top_k(x, 2), lambda x: jl.top_k(x, 2), np.array([[0, 255, 3], [7, 7, 7]], np.uint8))
    check(lambda x: el.argmax(x, 1, np.int32), lambda x: jl.argmax(x, 1, np.int32),
          np.array([[np.nan, 1], [2, np.nan], [1, 1]], np.float32))
    check(lambda x: el.argmax(x, 0, np.int32), lambda x: jl.argmax(x, 0, np.int32),
          np.array([False, True, True]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"])
@pytest.mark.parametrize("reverse", [False, True])
def test_lax_cumulative_reverse_specials(dtype, name, reverse):
    a = _NANS.astype(dtype)
    check(lambda x: getattr(el, name)(x, 0, reverse=reverse),
          lambda x: getattr(jl, name)(x, 0, reverse=reverse), a)
    check(lambda x: getattr(el, name)(x, 0, reverse=reverse),
          lambda x: getattr(jl, name)(x, 0, reverse=reverse), a[1:][::-1].copy())
    check(lambda x: ember.jit(lambda v: getattr(el, name)(v, 0, reverse=reverse))(x),
          lambda x: getattr(jl, name)(x, 0, reverse=reverse), a)
    zeros = np.array([-0.0, -0.0, 0.0, -0.0], dtype)  # a running sum starts from +0.0
    check(lambda x: ember.jit(lambda v: getattr(el, name)(v, 0, reverse=reverse))(x),
          lambda x: getattr(jl, name)(x, 0, reverse=reverse), zeros)
    check(lambda x: getattr(el, name)(x, 0, reverse=reverse),
          lambda x: getattr(jl, name)(x, 0, reverse=reverse), zeros)


def test_lax_cumulative_ints_and_shapes():
    check(lambda x: el.cumsum(x, 0), lambda x: jl.cumsum(x, 0), np.array([100, 100, 100], np.int8))
    check(lambda x: el.cumsum(x, 0, reverse=True), lambda x: jl.cumsum(x, 0, reverse=True),
          np.array([200, 100, 1], np.uint8))
    check(lambda x: el.cummax(x, 0, reverse=True), lambda x: jl.cummax(x, 0, reverse=True),
          np.array([-128, 5, -3, 127, 0], np.int8))
    check(lambda x: el.cumsum(x, 1, reverse=True), lambda x: jl.cumsum(x, 1, reverse=True),
          np.arange(6.).reshape(2, 3))
    check(lambda x: el.cumlogsumexp(x, 0), lambda x: jl.cumlogsumexp(x, 0),
          np.array([-np.inf, -np.inf, 0., np.inf, -np.inf]))
    check(lambda x: el.cumsum(x, 0), lambda x: jl.cumsum(x, 0), np.zeros((0, 2), np.float32))


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=5),
                  elements=st.sampled_from([np.nan, -np.inf, -1.0, -0.0, 0.0, 1.0, 2.0, np.inf])),
       st.booleans())
def test_lax_sort_cummax_hypothesis(a, reverse):
    check(lambda x: el.sort(x, dimension=0), lambda x: jl.sort(x, dimension=0), a)
    check(lambda x: el.cummax(x, 0, reverse=reverse), lambda x: jl.cummax(x, 0, reverse=reverse), a)
    check(lambda x: el.cummin(x, 0, reverse=reverse), lambda x: jl.cummin(x, 0, reverse=reverse), a)
    if a.shape[-1]:
        check(lambda x: el.argmax(x, a.ndim - 1, np.int32),
              lambda x: jl.argmax(x, a.ndim - 1, np.int32), a)


# --- numpy: where JAX differs from numpy ------------------------------------------------

_IDX = np.array([0, 4, 5, -1, -6, 100], np.int32)


@pytest.mark.parametrize("mode", [None, "clip", "fill", "wrap"])
def test_take_out_of_range_modes(mode):
    # traced indices: JAX's default mode for take / take_along_axis fills (ember's static
    # out-of-range indices raise instead, see docs/sharp-bits.md)
    x = np.arange(5, dtype=np.float32) + 1
    if mode is not None:
        check(lambda a, i: enp.take(a, i, mode=mode), lambda a, i: jnp.take(a, i, mode=mode), x, _IDX)
    check(lambda a, i: ember.jit(lambda a, i: enp.take(a, i, mode=mode))(a, i),
          lambda a, i: jax.jit(lambda a, i: jnp.take(a, i, mode=mode))(a, i), x, _IDX)
    if mode != "wrap":  # JAX's take_along_axis has no 'wrap'
        check(lambda a, i: ember.jit(lambda a, i: enp.take_along_axis(a, i, axis=0, mode=mode))(a, i),
              lambda a, i: jax.jit(lambda a, i: jnp.take_along_axis(a, i, axis=0, mode=mode))(a, i),
              x, _IDX)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.float16, BF16])
def test_take_fill_defaults_per_dtype(dtype):
    x = np.arange(5).astype(dtype)
    check(lambda a, i: enp.take(a, i, mode="fill"), lambda a, i: jnp.take(a, i, mode="fill"), x, _IDX)
    check(lambda a, i: ember.jit(lambda a, i: a.at[i].get(mode="fill"))(a, i),
          lambda a, i: jax.jit(lambda a, i: a.at[i].get(mode="fill"))(a, i), x, _IDX)


def test_traced_indexing_clamps_reads_and_drops_writes():
    x = np.arange(5, dtype=np.float32) + 1
    check(lambda a, i: ember.jit(lambda a, i: a[i])(a, i), lambda a, i: jax.jit(lambda a, i: a[i])(a, i),
          x, _IDX)
    check(lambda a, i: ember.jit(lambda a, i: a[i])(a, i), lambda a, i: jax.jit(lambda a, i: a[i])(a, i),
          x, np.int32(-7))
    big = np.arange(100, dtype=np.float32)
    for i in (np.array([-128, 127, -1], np.int8), np.array([0, 255, 200], np.uint8)):
        check(lambda a, i: ember.jit(lambda a, i: a[i])(a, i),
              lambda a, i: jax.jit(lambda a, i: a[i])(a, i), big, i)
    for upd in ("set", "add", "multiply", "min", "max"):
        check(lambda a, i: ember.jit(lambda a, i: getattr(a.at[i], upd)(2.0))(a, i),
              lambda a, i: jax.jit(lambda a, i: getattr(a.at[i], upd)(2.0))(a, i), x, _IDX)


def test_at_duplicates_accumulate_like_jax():
    x = np.arange(5, dtype=np.float32) + 1
    i = np.array([1, 1, 2])
    check(lambda a: a.at[i].multiply(3.), lambda a: a.at[i].multiply(3.), x)
    check(lambda a: a.at[i].divide(2.), lambda a: a.at[i].divide(2.), x)
    check(lambda a: a.at[i].power(2.), lambda a: a.at[i].power(2.), x)
    v = np.array([0.5, -3., 9.], np.float32)
    check(lambda a: a.at[i].min(v), lambda a: a.at[i].min(v), x)
    check(lambda a: a.at[np.array([1, 1])].set(v[:2]), lambda a: a.at[np.array([1, 1])].set(v[:2]), x)


_HALVES = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.25, 0.35, -0.0, np.nan, 1234.5, np.inf])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("decimals", [0, 1, 2, -1, -2])
def test_round_half_to_even(dtype, decimals):
    x = _HALVES.astype(dtype)
    if decimals == 0:
        check(lambda a: enp.round(a, decimals), lambda a: jnp.round(a, decimals), x)
    else:  # JAX divides by 10**decimals, ember too but multiplies by it for decimals < 0
        got = np.asarray(enp.round(enp.asarray(x), decimals))
        with jax.enable_x64(dtype == np.float64):
            want = np.asarray(jnp.round(jnp.asarray(x), decimals))
        assert got.dtype == want.dtype
        np.testing.assert_array_max_ulp(got, want, maxulp=1)
    check(lambda a: enp.rint(a), lambda a: jnp.rint(a), _HALVES.astype(dtype))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, BF16])
@pytest.mark.parametrize("decimals", [3, 5, 39])
def test_round_many_decimals_does_not_overflow(dtype, decimals):
    # float16 scales in float32 (x * 1e5 is inf in float16); past the dtype's range
    # rounding is a no-op
    x = np.array([1234.5, 0.35, 1.0, 2.5e-3, -7.25, 60000.0]).astype(dtype)
    if dtype != np.float32:
        check(lambda a: enp.round(a, decimals), lambda a: jnp.round(a, decimals), x)
        return
    got, want = np.asarray(enp.round(enp.asarray(x), decimals)), np.asarray(jnp.round(x, decimals))
    assert got.dtype == want.dtype and np.isfinite(got).all()
    np.testing.assert_array_max_ulp(got, want, maxulp=1)  # JAX's x*1e3/1e3 is off by an ulp


@pytest.mark.parametrize("decimals", [0, 1])
def test_round_ints(decimals):
    check(lambda a: enp.round(a, decimals), lambda a: jnp.round(a, decimals),
          np.array([15, 25, -15, 127, -128], np.int8))


def test_unique_size_and_fill_value():
    u = np.array([3, 1, 3, 2, 1, 5], np.int32)
    for kw in [dict(size=3), dict(size=7), dict(size=7, fill_value=-1)]:
        check(lambda a: enp.unique(a, **kw), lambda a: jnp.unique(a, **kw), u)
        check(lambda a: ember.jit(lambda a: enp.unique(a, **kw))(a),
              lambda a: jax.jit(lambda a: jnp.unique(a, **kw))(a), u)
    check(lambda a: enp.unique(a, size=3, fill_value=9), lambda a: jnp.unique(a, size=3, fill_value=9),
          np.zeros(0, np.float32))
    check(enp.unique, jnp.unique, np.array([np.nan, 1., np.nan, 2.0], np.float32))
    check(lambda a: enp.unique(a, equal_nan=False), lambda a: jnp.unique(a, equal_nan=False),
          np.array([np.nan, 1., np.nan, 2.0], np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_unique_keeps_the_first_signed_zero(dtype):
    # -0.0 == +0.0: JAX's stable sort keeps the first occurrence's sign
    for vals in ([np.nan, 1., np.nan, -0.0, 0.0, 0.0], [0.0, -0.0, 1.0], [3., 0., -0., 2, -0., 0., 1.]):
        a = np.array(vals, dtype)
        check(enp.unique, jnp.unique, a)
        check(lambda x: enp.unique(x, equal_nan=False), lambda x: jnp.unique(x, equal_nan=False), a)
        check(lambda x: enp.unique(x, return_inverse=True, return_counts=True)[0],
              lambda x: jnp.unique(x, return_inverse=True, return_counts=True)[0], a)
        check(enp.unique_values, jnp.unique_values, a)
        check(lambda x: enp.unique(x, size=3), lambda x: jnp.unique(x, size=3), a)


def test_nonzero_argwhere_size():
    nz = np.array([[0, 1, 0], [2, 0, 3]], np.int32)
    for kw in [dict(size=2), dict(size=5), dict(size=5, fill_value=-1),
               dict(size=5, fill_value=(-1, -2))]:
        check(lambda a: enp.nonzero(a, **kw), lambda a: jnp.nonzero(a, **kw), nz)
        check(lambda a: ember.jit(lambda a: enp.nonzero(a, **kw))(a),
              lambda a: jax.jit(lambda a: jnp.nonzero(a, **kw))(a), nz)
    check(lambda a: enp.flatnonzero(a, size=4, fill_value=9), lambda a: jnp.flatnonzero(a, size=4, fill_value=9), nz)
    check(lambda a: enp.argwhere(a, size=4, fill_value=9), lambda a: jnp.argwhere(a, size=4, fill_value=9), nz)
    check(enp.nonzero, jnp.nonzero, np.array([np.nan, 0, -0.0], np.float32))
    check(lambda a: enp.where(a, size=5, fill_value=-1), lambda a: jnp.where(a, size=5, fill_value=-1), nz)
    check(lambda a: ember.jit(lambda a: enp.where(a, size=2))(a),
          lambda a: jax.jit(lambda a: jnp.where(a, size=2))(a), nz)


def test_argsort_is_stable_with_ties_nan_and_zeros():
    s = np.array([1, 0, 1, 0, 1, 0], np.int8)
    for kw in [dict(), dict(stable=True), dict(descending=True), dict(descending=True, stable=True)]:
        check(lambda a: enp.argsort(a, **kw), lambda a: jnp.argsort(a, **kw), s)
        check(lambda a: enp.argsort(a, **kw), lambda a: jnp.argsort(a, **kw), _NANS.astype(np.float32))
        check(lambda a: enp.sort(a, **{k: v for k, v in kw.items() if k == "descending"}),
              lambda a: jnp.sort(a, **{k: v for k, v in kw.items() if k == "descending"}),
              _NANS.astype(np.float32))
    check(lambda a, b: enp.lexsort((a, b)), lambda a, b: jnp.lexsort((a, b)), s, s[::-1].copy())


def test_searchsorted_and_digitize_edges():
    sa = np.array([1., 2., 2., 3., np.nan], np.float32)
    q = np.array([-np.inf, 0., 2., 2.5, 3., np.nan, np.inf, -0.0], np.float32)
    for side in ["left", "right"]:
        for method in ["scan", "scan_unrolled", "sort", "compare_all"]:
            check(lambda a, v: enp.searchsorted(a, v, side=side, method=method),
                  lambda a, v: jnp.searchsorted(a, v, side=side, method=method), sa, q)
    check(enp.searchsorted, jnp.searchsorted, np.zeros(0, np.float32), q)
    check(enp.searchsorted, jnp.searchsorted, sa, np.float32(2.))
    check(enp.searchsorted, jnp.searchsorted, np.array([0, 5, 200], np.uint8), np.array([0, 255, 6], np.uint8))
    check(lambda a, v: enp.digitize(v, a), lambda a, v: jnp.digitize(v, a), sa[:4], q)
    check(lambda a, v: enp.digitize(v, a, right=True), lambda a, v: jnp.digitize(v, a, right=True), sa[:4], q)


@pytest.mark.parametrize("args,kw", [((0, 10), {}), ((0, 10, 5), {}), ((0., 1., 0.1), {}),
                                     ((0, 5), {"dtype": np.int8}), ((5,), {}), ((0.5, 3), {}),
                                     ((10, 0, -3), {}), ((0, 0), {})])
def test_arange_dtypes(args, kw):
    check(lambda: enp.arange(*args, **kw), lambda: jnp.arange(*args, **kw), x64=False)


@pytest.mark.parametrize("args,kw", [((0, 10, 5), {}), ((0, 10, 5), {"dtype": np.int32}),
                                     ((0, 1, 4), {"endpoint": False}), ((0, 1, 1), {}),
                                     ((0, 1, 0), {}), ((-5, 5, 4), {"dtype": np.int8}),
                                     ((0, 9, 4), {"dtype": np.uint8})])
def test_linspace_dtypes(args, kw):
    check(lambda: enp.linspace(*args, **kw), lambda: jnp.linspace(*args, **kw), x64=False)


# --- lax.gather / scatter modes ------------------------------------------------------------

_ROWS = np.array([[0], [4], [5], [-1], [100]], np.int32)


# (lax.gather's default mode, fill with 0, and its default fill_value 0 are documented
# ember choices that keep it linear; JAX clamps by default and fills NaN)
@pytest.mark.parametrize("mode,fill", [("clip", None), ("fill", -3.0), ("fill", 0.0),
                                       ("promise_in_bounds", None)])
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8, np.bool_])
def test_lax_gather_modes_and_default_fill(mode, fill, dtype):
    x = np.arange(10).reshape(5, 2).astype(dtype)
    fv = None if fill is None else np.array(fill).astype(dtype).item()
    dn_e = el.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    dn_j = jl.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    check(lambda a, i: el.gather(a, i, dn_e, (1, 2), mode=mode, fill_value=fv),
          lambda a, i: jl.gather(a, i, dn_j, (1, 2), mode=mode, fill_value=fv), x, _ROWS)
    check(lambda a, i: ember.jit(lambda a, i: el.gather(a, i, dn_e, (1, 2), mode=mode, fill_value=fv))(a, i),
          lambda a, i: jax.jit(lambda a, i: jl.gather(a, i, dn_j, (1, 2), mode=mode, fill_value=fv))(a, i),
          x, _ROWS)
    # windows that stick out of the operand
    wn_e = el.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(0,))
    wn_j = jl.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(0,))
    v = np.arange(6).astype(dtype)
    w = np.array([[0], [3], [4], [-1]], np.int32)
    check(lambda a, i: el.gather(a, i, wn_e, (3,), mode=mode, fill_value=fv),
          lambda a, i: jl.gather(a, i, wn_j, (3,), mode=mode, fill_value=fv), v, w)


@pytest.mark.parametrize("fn", ["scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"])
@pytest.mark.parametrize("mode", [None, "clip", "fill", "drop"])
def test_lax_scatter_modes(fn, mode):
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    upd = np.ones((5, 2), np.float32) * np.arange(1, 6, dtype=np.float32)[:, None]
    dn_e = el.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,))
    dn_j = jl.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,))
    check(lambda a, i, u: getattr(el, fn)(a, i, u, dn_e, mode=mode),
          lambda a, i, u: getattr(jl, fn)(a, i, u, dn_j, mode=mode), x, _ROWS, upd)
    check(lambda a, i, u: ember.jit(lambda a, i, u: getattr(el, fn)(a, i, u, dn_e, mode=mode))(a, i, u),
          lambda a, i, u: jax.jit(lambda a, i, u: getattr(jl, fn)(a, i, u, dn_j, mode=mode))(a, i, u),
          x, _ROWS, upd)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8])
def test_bincount_length_clips_negatives_and_drops_large(dtype):
    x = np.array([0, 1, 5, 1, 2, 127], dtype)
    if np.dtype(dtype).kind == "i":
        x[2], x[4] = -1, -128
    w = np.linspace(0.5, 3.0, 6).astype(np.float32)
    check(lambda a: enp.bincount(a, length=3), lambda a: jnp.bincount(a, length=3), x)
    check(lambda a, b: enp.bincount(a, b, length=4), lambda a, b: jnp.bincount(a, b, length=4), x, w)
    check(lambda a: ember.jit(lambda v: enp.bincount(v, length=3))(a),
          lambda a: jax.jit(lambda v: jnp.bincount(v, length=3))(a), x)
