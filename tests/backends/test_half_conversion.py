"""Conversions to float16/bfloat16 round once, under jit and eagerly (issue #12,
item 2): float64 and 32/64-bit integers do not go through a rounded float32."""
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ember import jit, lax

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
HALVES = [F16, BF16]


def _exact(x, dtype):
    """The correctly rounded (nearest, ties to even) `dtype` value of the exact number
    `x` (a Python int or float), searched among the neighbours of numpy's answer."""
    q = abs(Fraction(x))
    neg = x < 0 or (x == 0 and np.signbit(x))
    info = ml_dtypes.finfo(dtype)
    fmax = Fraction(float(info.max))
    if q >= fmax + Fraction(2) ** (int(np.log2(float(info.max))) - int(info.nmant)) / 2:
        return np.array(-np.inf if neg else np.inf, dtype)
    with np.errstate(over="ignore"):
        guess = int(np.array(float(q)).astype(dtype).view(np.uint16)) & 0x7FFF
    inf_code = int(np.array(np.inf, dtype).view(np.uint16))
    best = None
    for m in range(max(guess - 2, 0), min(guess + 3, inf_code)):
        c = Fraction(float(np.array(m, np.uint16).view(dtype)))
        key = (abs(c - q), m & 1)
        if best is None or key < best[0]:
            best = (key, m)
    return np.array(best[1] | (0x8000 if neg else 0), np.uint16).view(dtype)


def _conv(x, dtype):
    return np.asarray(jit(lambda v: lax.convert_element_type(v, dtype))(x)), \
        np.asarray(lax.convert_element_type(x, dtype))


def _same_bits(a, b):
    np.testing.assert_array_equal(np.asarray(a).view(np.uint16), np.asarray(b).view(np.uint16))


def test_audit_example():
    got, eager = _conv(np.array([-44304.00082759727]), F16)
    assert got.tolist() == eager.tolist() == [-44320.0]


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_float64_to_half_random_matches_numpy_and_exact(dtype):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(400_000) * 30000, rng.standard_normal(100_000) * 1e-6,
                        rng.standard_normal(100_000) * 1e-40])
    got, eager = _conv(x, dtype)
    _same_bits(got, eager)
    if dtype == F16:
        _same_bits(got, x.astype(F16))   # numpy's float64 -> float16 rounds once
    for i in rng.choice(x.size, 300, replace=False):
        _same_bits(got[i], _exact(float(x[i]), dtype))


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_float64_midpoints_round_once(dtype):
    """Values just off a midpoint of two half values, by less than float32 resolves."""
    h = np.arange(0, 0x7C00 if dtype == F16 else 0x7F80, 7, dtype=np.uint16).view(dtype)
    lo = h.astype(np.float64)
    hi = (h.view(np.uint16) + 1).view(dtype).astype(np.float64)
    mid = (lo + hi) / 2
    tiny = np.abs(mid) * 2.0 ** -40 + 2.0 ** -1070
    x = np.concatenate([mid + tiny, mid - tiny, -(mid + tiny), mid])
    x = x[np.isfinite(x)]
    got, eager = _conv(x, dtype)
    _same_bits(got, eager)
    for i in np.random.default_rng(1).choice(x.size, 400, replace=False):
        _same_bits(got[i], _exact(float(x[i]), dtype))


@pytest.mark.parametrize("dtype", HALVES, ids=str)
@pytest.mark.parametrize("wide", [np.float32, np.float64], ids=str)
def test_every_half_round_trips(dtype, wide):
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(dtype)
    back = np.asarray(jit(lambda v: lax.convert_element_type(lax.convert_element_type(v, wide), dtype))(h))
    nan = np.isnan(h.astype(np.float32))
    _same_bits(back[~nan], h[~nan])
    assert np.isnan(back[nan].astype(np.float32)).all()


@pytest.mark.parametrize("src,dst", [(F16, BF16), (BF16, F16)], ids=str)
def test_half_to_half_every_pattern(src, dst):
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(src)
    got, eager = _conv(h, dst)
    finite = np.isfinite(h.astype(np.float32))
    _same_bits(got[finite], eager[finite])
    assert (np.isnan(got.astype(np.float32)) == np.isnan(h.astype(np.float32))).all()
    for i in range(0, 1 << 16, 97):
        if finite[i]:
            _same_bits(got[i], _exact(float(h[i]), dst))


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([np.int32, np.int64, np.uint32, np.uint64]), st.sampled_from(HALVES),
       st.integers(0, 2**32 - 1))
def test_integers_to_half_round_once(itype, dtype, seed):
    info = np.iinfo(itype)
    rng = np.random.default_rng(seed)
    top = min(int(info.max), 2**63 - 1)
    x = np.concatenate([rng.integers(max(int(info.min), -top), top, 200, dtype=itype, endpoint=True),
                        np.array([info.min, info.max, 0, 1, 2**24 + 1, 2**24 + 3], dtype=itype)])
    # just above a bfloat16 midpoint: the bit below the kept ones, plus one
    for e in range(9, int(np.log2(float(info.max)))):
        x = np.append(x, np.array((1 << e) + (1 << (e - 8)) + 1, dtype=itype))
    got, eager = _conv(x, dtype)
    _same_bits(got, eager)
    for v, g in zip(x.tolist(), got):
        _same_bits(g, _exact(int(v), dtype))
