"""The memoised eager path (`ember.numpy._eager_memo`) against the general dispatch.

Every operator and float function with a fast path is run twice (the first call fills
the memo, the second takes it) and compared, bit for bit, dtype and weak type, with
the general path (`promote_args` + `bind` through `EvalTrace`), and errors must be the
general path's errors.
"""
import math
import warnings
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.numpy as enp
from ember import dtypes as _dt
from ember.fx import core
from ember.numpy import _eager_memo

BINARY = [(op, name, refl) for op, name, refl in _eager_memo._OPERATORS]
DTYPES = [np.dtype(d) for d in ("bool", "int8", "uint8", "int16", "int32", "int64", "uint32",
                                "float16", "float32", "float64", "complex64")] + [_dt.bfloat16]
SCALARS = st.one_of(
    st.booleans(),
    st.integers(-300, 300),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, -1e30, math.inf, -math.inf, math.nan, 1e-40]),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.sampled_from([1j, complex(0.0, -0.0), complex(math.nan, 1.0)]),
)


def _array(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(shape) * 4
    if dtype.kind in "iu":
        v = np.clip(np.round(v), 0 if dtype.kind == "u" else -100, 100)
    elif dtype.kind == "b":
        v = v > 0
    v = np.asarray(v).astype(dtype)
    if dtype.kind == "f" or dtype == _dt.bfloat16:
        flat = v.reshape(-1)
        if flat.size > 2:
            flat[0], flat[1] = np.nan, -0.0
    return enp.asarray(v)


def _call(f, *args):
    """(result, None) or (None, (exception type, message without the user's line))."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return f(*args), None
        except Exception as e:  # noqa: BLE001 - the point is to compare errors
            return None, (type(e), str(e).split("\n  at ")[0])


def _same(fast, general):
    (r1, e1), (r2, e2) = fast, general
    assert e1 == e2
    if e1 is None:
        assert type(r1) is ember.Array and type(r2) is ember.Array
        assert r1.aval == r2.aval and r1.device == r2.device
        a, b = np.asarray(r1), np.asarray(r2)
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()   # bit-identical, NaN payloads and -0.0 included
        assert not a.flags.writeable


def _general(name):
    return getattr(enp, name)._eager[3]


@settings(max_examples=300, deadline=None)
@given(op=st.sampled_from(BINARY), dtype=st.sampled_from(DTYPES),
       shape=st.sampled_from([(), (1,), (5,), (2, 3)]), scalar=SCALARS,
       with_array=st.booleans(), other_dtype=st.sampled_from(DTYPES), seed=st.integers(0, 3))
def test_fast_path_matches_general_path(op, dtype, shape, scalar, with_array, other_dtype, seed):
    opname, fname, reflected = op
    x = _array(dtype, shape, seed)
    other = _array(other_dtype, shape if seed % 2 else (), seed + 1) if with_array else scalar
    method = getattr(ember.Array, opname)
    general = _general(fname)
    want = _call(general, other, x) if reflected else _call(general, x, other)
    for _ in range(2):   # fill the memo, then use it
        _same(_call(method, x, other), want)
    if not reflected:
        _same(_call(getattr(enp, fname), x, other), want)
        _same(_call(getattr(enp, fname), x, other), want)


UNARY = ["sin", "exp", "log", "sqrt", "tanh", "cos", "expm1", "log1p"]


@settings(max_examples=150, deadline=None)
@given(fname=st.sampled_from(UNARY),
       dtype=st.sampled_from([np.dtype("float16"), np.dtype("float32"), np.dtype("float64"),
                              np.dtype("complex64"), _dt.bfloat16, np.dtype("int32"),
                              np.dtype("bool")]),
       shape=st.sampled_from([(), (4,), (2, 3)]), seed=st.integers(0, 3))
def test_unary_fast_path_matches_general_path(fname, dtype, shape, seed):
    from ember.numpy._elementwise import _bind_checked, _INEXACT
    from ember.fx.prims import elementwise as ew
    x = _array(dtype, shape, seed)
    prim = getattr(ew, {"sin": "sin_p", "exp": "exp_p", "log": "log_p", "sqrt": "sqrt_p",
                        "tanh": "tanh_p", "cos": "cos_p", "expm1": "expm1_p",
                        "log1p": "log1p_p"}[fname])
    f = getattr(enp, fname)
    if _dt.is_inexact(x.dtype):
        want = _call(lambda v: _bind_checked(prim, fname, _INEXACT, v), x)
    else:
        want = _call(lambda v: f(v.astype(enp.float32)), x)
    for _ in range(2):
        _same(_call(f, x), want)


def test_fast_path_is_taken():
    # with the general dispatch made to fail, warmed-up signatures still run
    x = enp.asarray(np.arange(10, dtype=np.float32))
    y = x + 1, x * 2.0, x + x, 3 - x, enp.sin(x), x < 2
    with mock.patch.object(core.EvalTrace, "process_primitive", side_effect=AssertionError):
        z = x + 1, x * 2.0, x + x, 3 - x, enp.sin(x), x < 2
    for a, b in zip(y, z):
        _same((a, None), (b, None))


def test_scalar_values_are_not_confused():
    x = enp.asarray(np.ones(3, np.float32))
    for v in (0.0, -0.0, 0.0, 1, 1.0, True, math.nan, 2.0):
        r = np.asarray(x * v)
        assert r.tobytes() == (np.ones(3, np.float32) * np.float32(v)).tobytes(), v
    i = enp.asarray(np.ones(3, np.int8))
    assert (i + True).dtype == np.int8 and (i + 1.5).dtype == np.float32


def test_errors_are_the_general_paths():
    x = enp.asarray(np.ones(3, np.int8))
    for _ in range(2):
        with pytest.raises(OverflowError, match="out of range for dtype int8"):
            x + 1000
    assert (x + 1).tolist() == [2, 2, 2]
    b = enp.asarray(np.array([True, False]))
    for _ in range(2):
        with pytest.raises(TypeError, match="subtract"):
            b - b
    f = enp.asarray(np.ones(3, np.float32))
    for _ in range(2):
        with pytest.raises(TypeError, match="bitwise_and"):
            f & f
    for _ in range(2):
        with pytest.raises(TypeError, match="broadcast|shape"):
            f + enp.asarray(np.ones(4, np.float32))


def test_leaked_tracer_is_detected():
    x = enp.asarray(np.ones(3, np.float32))
    x + x
    leaked = []
    ember.jit(lambda a: leaked.append(a) or a)(x)
    with pytest.raises(core.UnexpectedTracerError):
        x + leaked[0]
    with pytest.raises(core.UnexpectedTracerError):
        leaked[0] + 1


def test_under_transforms_the_general_path_runs():
    x = enp.asarray(np.arange(3, dtype=np.float32))
    x * 2.0, x * x
    g = ember.grad(lambda a: (a * 2.0 + a * a).sum())(x)
    assert np.asarray(g).tolist() == [2.0, 4.0, 6.0]
    assert ember.jit(lambda a: a * 2.0)(x).tolist() == [0.0, 2.0, 4.0]


def test_debug_nans_still_checks():
    x = enp.asarray(np.zeros(3, np.float32))
    x / 0.0, x / 0.0
    ember.config.update("debug_nans", True)
    try:
        with pytest.raises(FloatingPointError):
            x / 0.0
    finally:
        ember.config.update("debug_nans", False)
    assert np.isnan(np.asarray(x / 0.0)).all()


def test_default_float_change_is_seen():
    i = enp.asarray(np.ones(3, np.int32))
    assert (i + 1.0).dtype == np.float32 and (i + 1.0).dtype == np.float32
    with ember.default_float("float64"):
        assert (i + 1.0).dtype == np.float64
        assert (i + 1.0).dtype == np.float64
    assert (i + 1.0).dtype == np.float32


def test_reference_device_keeps_its_device():
    x = ember.device_put(np.ones(3, np.float32), "reference")
    for _ in range(2):
        y = x + 1
        assert y.device == x.device and y.tolist() == [2.0, 2.0, 2.0]
    c = enp.asarray(np.ones(3, np.float32))
    c + c
    assert (c + c).device == c.device


def test_threads_sharing_the_memo_get_their_own_results():
    import threading
    xs = [enp.asarray(np.full(4, i, dtype=d)) for i, d in enumerate((np.float32, np.int32, np.float64, np.int8))]
    want = [np.asarray(x + 1).tobytes() for x in xs]
    bad = []

    def work(k):
        x = xs[k % len(xs)]
        for _ in range(2000):
            if np.asarray(x + 1).tobytes() != want[k % len(xs)]:
                bad.append(k)
                return
    ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not bad
