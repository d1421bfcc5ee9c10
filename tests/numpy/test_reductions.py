"""Statistical reductions vs numpy (axis/keepdims/dtype rules, empty inputs, NaN variants)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import ember
import ember.dtypes as dt
import ember.numpy as enp
from ember.fx.ir import typecheck

from enp_strategies import BOOL, FLOATS, NUMERIC, REAL, arrays, assert_close

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
SET = settings(max_examples=20, deadline=None)


def accum_dtype(d):
    d = np.dtype(d)
    if d == dt.bool_:
        return dt.int32
    if d.kind == "i":
        return d if d.itemsize > 4 else dt.int32
    if d.kind == "u":
        return d if d.itemsize > 4 else dt.uint32
    return d


@st.composite
def array_and_axis(draw, dtypes, min_dims=0, **kw):
    d = draw(st.sampled_from(dtypes))
    a = draw(arrays(d, draw(hnp.array_shapes(min_dims=min_dims, max_dims=3, min_side=0,
                                             max_side=4)), **kw))
    nd = a.ndim
    axis = draw(st.none() | (st.integers(-nd, nd - 1) if nd else st.none())
                | st.lists(st.integers(0, max(nd - 1, 0)), unique=True, max_size=nd).map(tuple))
    if nd == 0 and axis not in (None, ()):
        axis = None
    return a, axis


def _np_axis(axis):
    return axis


@SET
@given(case=array_and_axis(NUMERIC + BOOL, lo=-20, hi=20), keepdims=st.booleans())
def test_sum_prod(case, keepdims):
    a, axis = case
    d = accum_dtype(a.dtype)
    for fn, ref in ((enp.sum, np.sum), (enp.prod, np.prod)):
        got = fn(enp.asarray(a), axis=axis, keepdims=keepdims)
        src = a.astype(np.float32) if a.dtype in (dt.bfloat16,) else a
        with np.errstate(all="ignore"):
            want = np.asarray(ref(src.astype(d) if a.dtype.kind in "biu" else src, axis=axis,
                                  keepdims=keepdims, dtype=None if a.dtype.kind not in "biu" else d))
        if ref is np.prod and a.dtype.kind == "c" and not np.all(np.isfinite(a)):
            continue  # numpy's complex product of infinities is not a reference
        tol = 1e-4 if a.dtype in (dt.float32, dt.complex64) else None
        if a.dtype in (dt.float16, dt.bfloat16):
            tol = 5e-2
        assert_close(got, want.astype(d), d, rtol=tol, atol=tol)


def test_sum_dtype_rules():
    assert enp.sum(enp.ones(3, dtype="int8")).dtype == dt.int32
    assert enp.sum(enp.ones(3, dtype="uint8")).dtype == dt.uint32
    assert enp.sum(enp.ones(3, dtype="int64")).dtype == dt.int64
    assert enp.sum(enp.ones(3, dtype="bool")).dtype == dt.int32
    assert enp.sum(enp.ones(3, dtype="float16")).dtype == dt.float16
    assert enp.sum(enp.ones(3, dtype="int8"), dtype="int8").dtype == dt.int8
    assert enp.prod(enp.ones(3, dtype="uint16")).dtype == dt.uint32
    assert enp.sum(enp.zeros((0, 3)), axis=0).tolist() == [0.0, 0.0, 0.0]
    assert enp.prod(enp.zeros((0,))).item() == 1.0
    assert enp.sum(enp.ones(3), initial=5.0).item() == 8.0
    assert enp.sum(enp.arange(4), where=enp.asarray([True, False, True, False])).item() == 2


@SET
@given(case=array_and_axis(REAL + BOOL), keepdims=st.booleans())
def test_max_min(case, keepdims):
    a, axis = case
    x = enp.asarray(a)
    for fn, ref in ((enp.max, np.max), (enp.min, np.min)):
        try:
            want = ref(a, axis=axis, keepdims=keepdims)
        except ValueError:
            with pytest.raises(ValueError, match="zero-size"):
                fn(x, axis=axis, keepdims=keepdims)
            continue
        assert_close(fn(x, axis=axis, keepdims=keepdims), np.asarray(want), a.dtype)


def test_max_min_initial_where():
    x = enp.asarray([[1.0, 5.0], [3.0, 2.0]])
    assert enp.max(enp.zeros((0,)), initial=-1.0).item() == -1.0
    assert enp.max(x, axis=1, initial=4.0).tolist() == [5.0, 4.0]
    w = enp.asarray([[True, False], [False, True]])
    assert enp.min(x, axis=1, where=w, initial=10.0).tolist() == [1.0, 2.0]
    assert enp.amax(x).item() == 5.0 and enp.amin(x).item() == 1.0
    with pytest.raises(TypeError, match="complex"):
        enp.max(enp.asarray([1j]))


@SET
@given(case=array_and_axis(FLOATS + [dt.complex64, dt.int16], special=False),
       keepdims=st.booleans(), corr=st.sampled_from([0, 1, 0.5]))
def test_mean_var_std(case, keepdims, corr):
    a, axis = case
    x = enp.asarray(a)
    # half precision accumulates in float32 (dtypes.accumulation_dtype, as JAX): so does
    # the reference, else numpy's float16 sums overflow where ember's do not
    src = a.astype(np.float32) if a.dtype in (dt.bfloat16, dt.float16, dt.int16) else a
    out_dt = dt.float32 if a.dtype == dt.int16 else a.dtype
    rdt = dt.real_dtype(out_dt)
    with np.errstate(all="ignore"):
        want_m = np.asarray(np.mean(src, axis=axis, keepdims=keepdims))
        want_v = np.asarray(np.var(src, axis=axis, keepdims=keepdims, ddof=corr))
        want_s = np.asarray(np.std(src, axis=axis, keepdims=keepdims, ddof=corr))
    tol = {dt.float16: 2e-2, dt.bfloat16: 5e-2}.get(a.dtype, 1e-4)
    assert_close(enp.mean(x, axis=axis, keepdims=keepdims), want_m.astype(out_dt), out_dt,
                 rtol=tol, atol=tol)
    assert_close(enp.var(x, axis=axis, keepdims=keepdims, correction=corr), want_v.astype(rdt),
                 rdt, rtol=tol, atol=tol)
    assert_close(enp.std(x, axis=axis, keepdims=keepdims, correction=corr), want_s.astype(rdt),
                 rdt, rtol=tol, atol=tol)


def test_mean_var_misc():
    x = enp.asarray([[1.0, 2.0], [3.0, 5.0]])
    assert np.isnan(enp.mean(enp.zeros((0,))).item())
    assert enp.var(x, ddof=1).item() == pytest.approx(np.var(np.asarray(x), ddof=1))
    assert x.var(ddof=1).item() == pytest.approx(np.var(np.asarray(x), ddof=1))
    assert enp.mean(x, where=enp.asarray([[True, False], [True, True]])).item() == pytest.approx(3.0)
    assert enp.mean(enp.asarray([1, 2], dtype="int64")).dtype == dt.float64
    assert enp.average(x, axis=1, weights=enp.asarray([1.0, 3.0])).tolist() == \
        np.average(np.asarray(x), axis=1, weights=[1.0, 3.0]).tolist()
    avg, scl = enp.average(x, returned=True)
    assert avg.item() == 2.75 and scl.item() == 4.0
    assert enp.ptp(x, axis=0).tolist() == [2.0, 3.0]


@SET
@given(case=array_and_axis(NUMERIC + BOOL, min_dims=1, lo=-10, hi=10),
       include=st.booleans())
def test_cumulative(case, include):
    a, axis = case
    if not isinstance(axis, int):
        axis = -1
    d = accum_dtype(a.dtype)
    x = enp.asarray(a)
    src = a.astype(np.float32) if a.dtype == dt.bfloat16 else a
    tol = 5e-2 if a.dtype in (dt.float16, dt.bfloat16) else (1e-4 if a.dtype in
                                                             (dt.float32, dt.complex64) else None)
    for fn, ref, init in ((enp.cumulative_sum, np.cumsum, 0), (enp.cumulative_prod, np.cumprod, 1)):
        got = fn(x, axis=axis, include_initial=include)
        with np.errstate(all="ignore"):
            want = ref(src.astype(d) if a.dtype.kind in "biu" else src, axis=axis)
        if include:
            pad = [(0, 0)] * a.ndim
            pad[axis] = (1, 0)
            want = np.pad(want, pad, constant_values=init)
        assert_close(got, np.asarray(want).astype(d), d, rtol=tol, atol=tol)
    # numpy's cumsum flattens when axis is None
    with np.errstate(all="ignore"):
        want = np.cumsum(src.astype(d) if a.dtype.kind in "biu" else src)
    assert_close(enp.cumsum(x), want.astype(d), d, rtol=tol, atol=tol)


def test_cumulative_axis_required_for_nd():
    with pytest.raises(ValueError, match="axis"):
        enp.cumulative_sum(enp.ones((2, 2)))


@SET
@given(case=array_and_axis([dt.float32, dt.float64, dt.int32], min_dims=1, special=False,
                          lo=-1000, hi=1000),
       q=st.floats(0, 1) | st.lists(st.floats(0, 1), min_size=1, max_size=3),
       method=st.sampled_from(["linear", "lower", "higher", "midpoint", "nearest"]),
       keepdims=st.booleans())
def test_quantile_median(case, q, method, keepdims):
    a, axis = case
    if a.size == 0:
        return
    want = np.quantile(a, q, axis=axis, method=method, keepdims=keepdims)
    got = enp.quantile(enp.asarray(a), q, axis=axis, method=method, keepdims=keepdims)
    out = dt.float32 if a.dtype == dt.int32 else a.dtype
    assert_close(got, np.asarray(want).astype(out), out, rtol=1e-5, atol=1e-4)
    assert_close(enp.median(enp.asarray(a), axis=axis, keepdims=keepdims),
                 np.asarray(np.median(a, axis=axis, keepdims=keepdims)).astype(out), out,
                 rtol=1e-5, atol=1e-4)
    qq = np.asarray(q) * 100
    assert_close(enp.percentile(enp.asarray(a), qq, axis=axis),
                 np.asarray(np.percentile(a, qq, axis=axis)).astype(out), out, rtol=1e-5, atol=1e-3)


def test_quantile_nan_and_errors():
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], np.float32)
    np.testing.assert_array_equal(np.asarray(enp.median(enp.asarray(a), axis=1)), [np.nan, 5.0])
    np.testing.assert_allclose(np.asarray(enp.nanmedian(enp.asarray(a), axis=1)),
                               np.nanmedian(a, axis=1))
    np.testing.assert_allclose(np.asarray(enp.nanquantile(enp.asarray(a), [0.25, 0.9], axis=1)),
                               np.nanquantile(a, [0.25, 0.9], axis=1), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(enp.nanpercentile(enp.asarray(a), 50)),
                               np.nanpercentile(a, 50))
    with pytest.raises(ValueError, match="range"):
        enp.quantile(enp.asarray(a), 1.5)


@SET
@given(case=array_and_axis([dt.float32, dt.float64], min_dims=1), keepdims=st.booleans())
def test_nan_reductions(case, keepdims):
    a, axis = case
    x = enp.asarray(a)
    for name in ("nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin"):
        with np.errstate(all="ignore"), __import__("warnings").catch_warnings():
            __import__("warnings").simplefilter("ignore")
            try:
                want = getattr(np, name)(a, axis=axis, keepdims=keepdims)
            except ValueError:
                continue
        got = getattr(enp, name)(x, axis=axis, keepdims=keepdims)
        assert_close(got, np.asarray(want).astype(a.dtype), a.dtype, rtol=1e-4, atol=1e-3)
    for name in ("nancumsum", "nancumprod"):
        want = getattr(np, name)(a, axis=axis if isinstance(axis, int) else None)
        got = getattr(enp, name)(x, axis=axis if isinstance(axis, int) else None)
        assert_close(got, want, a.dtype, rtol=1e-4, atol=1e-3)


def test_reductions_under_make_graph_and_grad():
    def f(x):
        return (enp.sum(x, axis=0) + enp.mean(x, axis=0) + enp.var(x, axis=0)
                + enp.max(x, axis=0) + enp.median(x, axis=0)
                + enp.cumulative_sum(x, axis=0)[-1]).sum()
    x = enp.asarray(np.arange(6, dtype=np.float32).reshape(3, 2))
    typecheck(ember.make_graph(f)(x))
    g = ember.grad(lambda x: enp.std(x))(enp.asarray([1.0, 2.0, 4.0]))
    xs = np.array([1.0, 2.0, 4.0])
    want = (xs - xs.mean()) / (len(xs) * xs.std())
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5)


# --- half precision accumulates in float32 (audit #12 item 1) ----------------------

HALF = [dt.float16, dt.bfloat16]


def _half_data(d, n, seed=0):
    """n values of dtype d in [0.5, 1.5) and their float64 image."""
    x = np.random.default_rng(seed).uniform(0.5, 1.5, n).astype(d)
    return x, x.astype(np.float64)


@pytest.mark.parametrize("d", HALF)
@pytest.mark.parametrize("staged", [False, True])
@pytest.mark.parametrize("fn,ref", [
    ("mean", np.mean), ("var", np.var), ("std", np.std), ("nanmean", np.nanmean),
    ("nanvar", np.nanvar), ("average", np.average), ("sum", np.sum), ("prod", None)])
def test_half_reductions_over_many_elements(d, staged, fn, ref):
    n = 70000  # the count 70000 is inf in float16
    x, x64 = _half_data(d, n)
    if fn == "prod":
        x = np.ones(n, d)
        x[:10] = 2
        x64, ref = x.astype(np.float64), np.prod
    f = getattr(enp, fn)
    f = ember.jit(f) if staged else f
    got = f(enp.asarray(x))
    assert got.dtype == d
    want = np.asarray(ref(x64)).astype(d)
    np.testing.assert_allclose(np.float64(np.asarray(got)), np.float64(want), rtol=2e-2)


@pytest.mark.parametrize("d", HALF)
def test_half_mean_of_small_values_and_where(d):
    x = enp.full((70000,), 0.001, dtype=d)
    np.testing.assert_allclose(float(enp.mean(x)), float(np.asarray(0.001, d)), rtol=1e-3)
    w = np.arange(70000) % 2 == 0
    got = enp.mean(x, where=enp.asarray(w))
    np.testing.assert_allclose(float(got), float(np.asarray(0.001, d)), rtol=1e-3)
    got = enp.average(x, weights=enp.ones(70000, dtype=d))
    np.testing.assert_allclose(float(got), float(np.asarray(0.001, d)), rtol=1e-3)


@pytest.mark.parametrize("d", HALF)
@pytest.mark.parametrize("staged", [False, True])
def test_half_grad_of_mean(d, staged):
    n = 70000
    x, x64 = _half_data(d, n, seed=1)
    g = ember.grad(lambda v: enp.mean(v * v))
    g = ember.jit(g) if staged else g
    got = g(enp.asarray(x))
    assert got.dtype == d
    np.testing.assert_allclose(np.asarray(got).astype(np.float64), 2 * x64 / n, rtol=2e-2)


def test_half_sum_is_rounded_once():
    # 4096 ones then 4096 halves: a float16 running sum sticks at 4096 (+0.5 rounds
    # to even at that magnitude); the float32 accumulation rounds 6144 exactly
    x = np.concatenate([np.ones(4096), np.full(4096, 0.5)]).astype(np.float16)
    assert float(enp.sum(enp.asarray(x))) == 6144.0
    assert float(ember.jit(enp.sum)(enp.asarray(x))) == 6144.0
