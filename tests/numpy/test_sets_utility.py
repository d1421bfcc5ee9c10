"""Set functions (eager, plus unique(size=) and isin under transforms) and utility
functions (all, any, diff, array_equal, interp, cross, trapezoid)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import ember
import ember.dtypes as dt
import ember.numpy as enp
from ember.fx.ir import typecheck

from enp_strategies import ALL, arrays, assert_close

SET = settings(max_examples=20, deadline=None)
DT = st.sampled_from([dt.int8, dt.int32, dt.uint8, dt.float32, dt.float64, dt.bool_])


@SET
@given(data=st.data())
def test_unique_family(data):
    d = data.draw(DT)
    a = data.draw(arrays(d, data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0,
                                                      max_side=4))))
    if d in (dt.int8, dt.int32, dt.uint8):
        a = (a % 4).astype(d)
    x = enp.asarray(a)
    vals, idx, inv, cnt = np.unique(a.ravel(), return_index=True, return_inverse=True,
                                    return_counts=True, equal_nan=False)
    r = enp.unique_all(x)
    assert_close(r.values, vals, d)
    assert_close(r.indices, idx.astype(np.int32), dt.int32)
    assert_close(r.inverse_indices, inv.reshape(a.shape).astype(np.int32), dt.int32)
    assert_close(r.counts, cnt.astype(np.int32), dt.int32)
    c = enp.unique_counts(x)
    assert_close(c.values, vals, d) or assert_close(c.counts, cnt.astype(np.int32), dt.int32)
    i = enp.unique_inverse(x)
    assert_close(i.inverse_indices, inv.reshape(a.shape).astype(np.int32), dt.int32)
    assert_close(enp.unique_values(x), vals, d)
    # the reconstruction property of the standard
    np.testing.assert_array_equal(np.asarray(r.values)[np.asarray(r.inverse_indices)], a)
    assert_close(enp.unique(x), np.unique(a), d)


def test_unique_nan_and_tracing():
    a = np.array([1.0, np.nan, 1.0, np.nan], np.float32)
    assert enp.unique_values(enp.asarray(a)).shape == (3,)          # each NaN is distinct
    assert enp.unique(enp.asarray(a)).shape == (2,)                 # numpy's equal_nan=True
    with pytest.raises(ember.ConcretizationError, match="unique_values"):
        ember.make_graph(enp.unique_values)(enp.asarray(a))
    f = ember.jit(lambda v: enp.unique(v, size=4, fill_value=-1))
    assert f(enp.asarray([3, 1, 3, 2, 1])).tolist() == [1, 2, 3, -1]
    assert enp.unique(enp.asarray([3, 1, 3]), size=2).tolist() == [1, 3]
    typecheck(ember.make_graph(lambda v: enp.unique(v, size=3))(enp.asarray([3, 1, 3])))
    vals, inv, counts = enp.unique(enp.asarray([[1, 2], [2, 2]]), return_inverse=True,
                                   return_counts=True)
    assert vals.tolist() == [1, 2] and inv.tolist() == [[0, 1], [1, 1]] and counts.tolist() == [1, 3]


@SET
@given(data=st.data(), invert=st.booleans())
def test_isin_and_set_ops(data, invert):
    e = data.draw(hnp.arrays(np.int32, hnp.array_shapes(min_dims=0, max_dims=2, min_side=0,
                                                        max_side=4), elements=st.integers(0, 6)))
    t = data.draw(hnp.arrays(np.int32, hnp.array_shapes(min_dims=1, max_dims=2, min_side=0,
                                                        max_side=4), elements=st.integers(0, 6)))
    got = enp.isin(enp.asarray(e), enp.asarray(t), invert=invert)
    assert_close(got, np.isin(e, t, invert=invert), dt.bool_)
    ea, ta = enp.asarray(e), enp.asarray(t)
    assert_close(enp.intersect1d(ea, ta), np.intersect1d(e, t), dt.int32)
    assert_close(enp.union1d(ea, ta), np.union1d(e, t), dt.int32)
    assert_close(enp.setdiff1d(ea, ta), np.setdiff1d(e, t), dt.int32)
    assert_close(enp.setxor1d(ea, ta), np.setxor1d(e, t), dt.int32)


def test_isin_traced_and_floats():
    f = ember.jit(lambda v: enp.isin(v, enp.asarray([1.5, np.nan, 3.0])))
    assert f(enp.asarray([1.5, 2.0, np.nan, 3.0])).tolist() == [True, False, False, True]


@SET
@given(data=st.data(), keepdims=st.booleans())
def test_all_any(data, keepdims):
    d = data.draw(st.sampled_from(ALL))
    a = data.draw(arrays(d))
    axis = data.draw(st.none() | st.integers(-a.ndim, a.ndim - 1)) if a.ndim else None
    src = a.astype(np.float32) if d == dt.bfloat16 else a
    assert_close(enp.all(enp.asarray(a), axis=axis, keepdims=keepdims),
                 np.asarray(np.all(src, axis=axis, keepdims=keepdims)), dt.bool_)
    assert_close(enp.any(enp.asarray(a), axis=axis, keepdims=keepdims),
                 np.asarray(np.any(src, axis=axis, keepdims=keepdims)), dt.bool_)


@SET
@given(data=st.data(), n=st.integers(0, 3))
def test_diff(data, n):
    d = data.draw(st.sampled_from([dt.int16, dt.float32, dt.bool_, dt.float64]))
    a = data.draw(arrays(d, data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0,
                                                      max_side=5))))
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    with np.errstate(all="ignore"):
        want = np.diff(a, n=n, axis=axis)
    assert_close(enp.diff(enp.asarray(a), n=n, axis=axis), want, d)
    if a.shape[axis] and d != dt.bool_:
        pre = np.take(a, [0], axis=axis)
        with np.errstate(all="ignore"):
            want = np.diff(a, axis=axis, prepend=pre, append=0)
        assert_close(enp.diff(enp.asarray(a), axis=axis, prepend=enp.asarray(pre), append=0),
                     want, d)


def test_misc_utilities():
    a = np.array([1.0, 2.0, np.nan])
    assert bool(enp.array_equal(enp.asarray(a), enp.asarray(a), equal_nan=True))
    assert not bool(enp.array_equal(enp.asarray(a), enp.asarray(a)))
    assert not bool(enp.array_equal(enp.asarray([1, 2]), enp.asarray([1, 2, 3])))
    assert bool(enp.array_equiv(enp.asarray([[1, 1]]), 1))
    np.testing.assert_allclose(np.asarray(enp.ediff1d(enp.asarray([1, 3, 6]), to_end=[9])),
                               np.ediff1d([1, 3, 6], to_end=[9]))
    xp, fp = np.array([0.0, 1.0, 3.0]), np.array([1.0, 3.0, 2.0])
    xs = np.array([-1.0, 0.5, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(np.asarray(enp.interp(enp.asarray(xs), enp.asarray(xp),
                                                     enp.asarray(fp))),
                               np.interp(xs, xp, fp), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(enp.interp(enp.asarray(xs), enp.asarray(xp),
                                                     enp.asarray(fp), left=-9, right=9)),
                               np.interp(xs, xp, fp, left=-9, right=9), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(enp.interp(enp.asarray(xs), enp.asarray(xp),
                                                     enp.asarray(fp), period=3)),
                               np.interp(xs, xp, fp, period=3), rtol=1e-6)
    u, v = np.array([[1, 2, 3], [4, 5, 6]]), np.array([7, 8, 10])
    assert enp.cross(enp.asarray(u), enp.asarray(v)).tolist() == np.cross(u, v).tolist()
    assert enp.cross(enp.asarray([1, 2]), enp.asarray([3, 4])).tolist() == \
        np.cross([1, 2, 0], [3, 4, 0])[2].tolist()
    y = np.array([[1.0, 2.0, 4.0], [0.0, 1.0, 0.0]])
    np.testing.assert_allclose(np.asarray(enp.trapezoid(enp.asarray(y))), np.trapezoid(y))
    np.testing.assert_allclose(np.asarray(enp.trapezoid(enp.asarray(y), x=enp.asarray([0.0, 1.0, 3.0]))),
                               np.trapezoid(y, x=[0.0, 1.0, 3.0]))
    assert enp.ndim([[1]]) == 2 and enp.shape(enp.ones((2, 3))) == (2, 3) and enp.size(enp.ones((2, 3)), 1) == 3
