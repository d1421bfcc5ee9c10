"""Shared hypothesis strategies and comparison helpers for the ember.numpy tests."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember.dtypes as dt
import ember.numpy as enp

BOOL = [dt.bool_]
SIGNED = [dt.int8, dt.int16, dt.int32, dt.int64]
UNSIGNED = [dt.uint8, dt.uint16, dt.uint32, dt.uint64]
INTS = SIGNED + UNSIGNED
FLOATS = [dt.float16, dt.bfloat16, dt.float32, dt.float64]
COMPLEX = [dt.complex64, dt.complex128]
REAL = INTS + FLOATS
NUMERIC = REAL + COMPLEX
ALL = BOOL + NUMERIC

SPECIAL = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -3.0]


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    """Array shapes including 0-d and size-0."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def _float_elements(width, lo, hi, special):
    base = st.floats(lo, hi, width=width, allow_subnormal=False)
    if special:
        return st.one_of(base, st.sampled_from(SPECIAL))
    return base


def elements(dtype, *, special=True, lo=None, hi=None):
    """Hypothesis elements for `dtype` (moderate magnitudes, optionally special values)."""
    d = np.dtype(dtype)
    if d == dt.bool_:
        return st.booleans()
    if d.kind in "iu":
        info = np.iinfo(d)
        a = info.min if lo is None else max(int(lo), int(info.min))
        b = info.max if hi is None else min(int(hi), int(info.max))
        return st.integers(a, b)
    lo = -1e3 if lo is None else lo
    hi = 1e3 if hi is None else hi
    if d == dt.bfloat16 or d == dt.float16:
        return _float_elements(16 if d == dt.float16 else 32, lo, hi, special)
    if d.kind == "c":
        w = 32 if d == dt.complex64 else 64
        part = _float_elements(w, lo, hi, special)
        return st.builds(complex, part, part)
    return _float_elements(32 if d == dt.float32 else 64, lo, hi, special)


@st.composite
def arrays(draw, dtype, shape=None, **kw):
    """A numpy array of `dtype` (bfloat16 included) with elements from `elements`."""
    d = np.dtype(dtype)
    if shape is None:
        shape = draw(shapes())
    gen_dtype = np.float32 if d == dt.bfloat16 else d
    a = draw(hnp.arrays(gen_dtype, shape, elements=elements(dtype, **kw)))
    return a.astype(d)


@st.composite
def broadcast_pair(draw, d1, d2, **kw):
    """Two numpy arrays with mutually broadcastable shapes."""
    bs = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3,
                                                min_side=0, max_side=4))
    a = draw(arrays(d1, bs.input_shapes[0], **kw))
    b = draw(arrays(d2, bs.input_shapes[1], **kw))
    return a, b


def to_np(x):
    """numpy value of an ember result (bfloat16 stays bfloat16)."""
    return np.asarray(x)


def tolerance(dtype):
    d = np.dtype(dtype)
    if d in (dt.float16,):
        return 5e-3, 1e-3
    if d == dt.bfloat16:
        return 3e-2, 1e-2
    if d in (dt.float32, dt.complex64):
        return 2e-5, 1e-6
    if d in (dt.float64, dt.complex128):
        return 1e-12, 1e-300
    return 0, 0


def _widen(a):
    a = np.asarray(a)
    if a.dtype == dt.bfloat16 or a.dtype == dt.float16:
        return a.astype(np.float32)
    return a


def assert_close(actual, expected, dtype=None, rtol=None, atol=None, check_dtype=True,
                 signed_zeros=False):
    """Compare an ember result with a numpy reference: dtype, shape, NaN/inf positions and
    values within tolerances for `dtype` (exact for bool/int)."""
    a = to_np(actual)
    e = np.asarray(expected)
    if check_dtype:
        want = np.dtype(dtype) if dtype is not None else e.dtype
        assert a.dtype == want, f"dtype {a.dtype} != expected {want}"
    assert a.shape == e.shape, f"shape {a.shape} != expected {e.shape}"
    d = np.dtype(dtype) if dtype is not None else a.dtype
    r, t = tolerance(d)
    r = r if rtol is None else rtol
    t = t if atol is None else atol
    if a.dtype.kind in "biu" and (d.kind in "biu"):
        np.testing.assert_array_equal(a, e.astype(a.dtype))
        return
    aw, ew = _widen(a), _widen(e)
    if ew.dtype.kind not in "fc" and aw.dtype.kind in "fc":
        ew = ew.astype(aw.dtype)
    np.testing.assert_allclose(aw, ew, rtol=r, atol=t, equal_nan=True)
    if signed_zeros:
        af = np.asarray(aw, dtype=np.complex128 if aw.dtype.kind == "c" else np.float64)
        ef = np.asarray(ew, dtype=np.complex128 if ew.dtype.kind == "c" else np.float64)
        for comp in ((np.real, np.imag) if af.dtype.kind == "c" else (lambda v: v,)):
            x, y = comp(af), comp(ef)
            zero = (y == 0)
            np.testing.assert_array_equal(np.signbit(x[zero]), np.signbit(y[zero]),
                                          err_msg="signed zeros differ")


def reference(fn, *arrays, dtype):
    """numpy reference computed in `dtype` (half precision computed in float32 and rounded)."""
    d = np.dtype(dtype)
    with np.errstate(all="ignore"):
        if d in (dt.bfloat16, dt.float16):
            out = fn(*[np.asarray(a).astype(np.float32) for a in arrays])
            return np.asarray(out).astype(d) if np.asarray(out).dtype.kind == "f" else out
        return fn(*[np.asarray(a).astype(d) if np.asarray(a).dtype != d else np.asarray(a)
                    for a in arrays])


def ember(a):
    return enp.asarray(a)


__all__ = ["ALL", "BOOL", "SIGNED", "UNSIGNED", "INTS", "FLOATS", "COMPLEX", "REAL", "NUMERIC",
           "shapes", "elements", "arrays", "broadcast_pair", "to_np", "assert_close",
           "reference", "tolerance", "ember", "ml_dtypes"]
