"""Searching and sorting vs numpy: argmax/argmin, where, nonzero (eager and size=),
count_nonzero, searchsorted, sort/argsort (stable, descending), lexsort, partition."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import ember
import ember.dtypes as dt
import ember.numpy as enp
from ember.fx.ir import typecheck

from enp_strategies import ALL, arrays, assert_close, broadcast_pair

SET = settings(max_examples=20, deadline=None)
ORDERED = [dt.bool_, dt.int8, dt.uint16, dt.int64, dt.float16, dt.bfloat16, dt.float32,
           dt.float64]


@SET
@given(data=st.data(), keepdims=st.booleans())
def test_argmax_argmin(data, keepdims):
    d = data.draw(st.sampled_from(ORDERED))
    a = data.draw(arrays(d, data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1,
                                                      max_side=4))))
    src = a.astype(np.float32) if d == dt.bfloat16 else a
    axis = data.draw(st.none() | st.integers(-a.ndim, a.ndim - 1)) if a.ndim else None
    for fn, ref in ((enp.argmax, np.argmax), (enp.argmin, np.argmin)):
        got = fn(enp.asarray(a), axis=axis, keepdims=keepdims)
        want = np.asarray(ref(src, axis=axis, keepdims=keepdims)).astype(np.int32)
        assert_close(got, want, dt.int32)


def test_argmax_errors_and_nan_variants():
    with pytest.raises(ValueError, match="empty"):
        enp.argmax(enp.zeros((0,)))
    a = np.array([[1.0, np.nan, 3.0], [np.nan, 2.0, -1.0]], np.float32)
    assert enp.nanargmax(enp.asarray(a), axis=1).tolist() == np.nanargmax(a, axis=1).tolist()
    assert enp.nanargmin(enp.asarray(a), axis=1).tolist() == np.nanargmin(a, axis=1).tolist()


@SET
@given(data=st.data())
def test_where_three_args(data):
    d1 = data.draw(st.sampled_from(ALL))
    d2 = data.draw(st.sampled_from(ALL))
    x, y = data.draw(broadcast_pair(d1, d2))
    cshape = data.draw(hnp.broadcastable_shapes(np.broadcast_shapes(x.shape, y.shape),
                                                min_side=0))
    c = data.draw(hnp.arrays(np.bool_, cshape))
    want_dt = dt.result_type(d1, d2)
    got = enp.where(enp.asarray(c), enp.asarray(x), enp.asarray(y))
    want = np.where(c, x.astype(want_dt), y.astype(want_dt))
    assert_close(got, want, want_dt)


def test_where_scalars_and_one_arg():
    x = enp.asarray(np.array([1.5, -2.0], np.float32))
    assert enp.where(x > 0, x, 0.0).dtype == dt.float32
    assert enp.where(x > 0, 1, 2).dtype == dt.int32
    assert enp.where(enp.asarray(np.array([1, 0, 3])), 1.0, x[0]).tolist() == [1.0, 1.5, 1.0]
    assert [i.tolist() for i in enp.where(enp.asarray([[0, 1], [1, 0]]))] == [[0, 1], [1, 0]]


@SET
@given(data=st.data())
def test_nonzero_count_nonzero_argwhere(data):
    d = data.draw(st.sampled_from(ALL))
    a = data.draw(arrays(d, data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0,
                                                      max_side=4))))
    x = enp.asarray(a)
    want = np.nonzero(a)
    got = enp.nonzero(x)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_close(g, w.astype(np.int32), dt.int32)
    axis = data.draw(st.none() | st.integers(-a.ndim, a.ndim - 1))
    assert_close(enp.count_nonzero(x, axis=axis), np.asarray(np.count_nonzero(a, axis=axis))
                 .astype(np.int32), dt.int32)
    assert_close(enp.argwhere(x), np.argwhere(a).astype(np.int32), dt.int32)
    assert_close(enp.flatnonzero(x), np.flatnonzero(a).astype(np.int32), dt.int32)
    # fixed-size form, usable under jit
    k = data.draw(st.integers(0, 6))
    sized = enp.nonzero(x, size=k, fill_value=-1)
    for g, w in zip(sized, want):
        w = w[:k]
        w = np.concatenate([w, np.full(k - len(w), -1)]).astype(np.int32)
        assert_close(g, w, dt.int32)


def test_nonzero_under_tracing():
    x = enp.asarray([0.0, 2.0, 0.0, 3.0])
    with pytest.raises(ember.ConcretizationError, match="size="):
        ember.make_graph(enp.nonzero)(x)
    f = ember.jit(lambda v: enp.nonzero(v, size=3)[0])
    assert f(x).tolist() == [1, 3, 0]
    typecheck(ember.make_graph(lambda v: enp.nonzero(v, size=3))(x))
    with pytest.raises(ValueError, match="zero-dimensional"):
        enp.nonzero(enp.asarray(1.0))


@SET
@given(data=st.data(), side=st.sampled_from(["left", "right"]))
def test_searchsorted(data, side):
    d = data.draw(st.sampled_from([dt.int32, dt.float32, dt.float64, dt.uint8]))
    a = np.sort(data.draw(arrays(d, (data.draw(st.integers(0, 9)),))))
    v = data.draw(arrays(d, data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0,
                                                      max_side=4))))
    got = enp.searchsorted(enp.asarray(a), enp.asarray(v), side=side)
    want = np.searchsorted(a, v, side=side).astype(np.int32)
    assert_close(got, np.asarray(want), dt.int32)
    perm = np.random.default_rng(0).permutation(len(a))
    shuffled = a[perm]
    sorter = np.argsort(shuffled, kind="stable")
    got = enp.searchsorted(enp.asarray(shuffled), enp.asarray(v), side=side,
                           sorter=enp.asarray(sorter))
    assert_close(got, np.asarray(np.searchsorted(shuffled, v, side=side, sorter=sorter))
                 .astype(np.int32), dt.int32)


def test_searchsorted_traced_and_digitize():
    a = enp.asarray([1.0, 2.0, 4.0])
    f = ember.jit(lambda v: enp.searchsorted(a, v))
    assert f(enp.asarray([0.0, 2.0, 5.0])).tolist() == [0, 1, 3]
    x = np.array([0.2, 6.4, 3.0, 1.6])
    bins = np.array([0.0, 1.0, 2.5, 4.0, 10.0])
    for right in (False, True):
        assert enp.digitize(enp.asarray(x), enp.asarray(bins), right=right).tolist() == \
            np.digitize(x, bins, right=right).tolist()
        assert enp.digitize(enp.asarray(x), enp.asarray(bins[::-1]), right=right).tolist() == \
            np.digitize(x, bins[::-1], right=right).tolist()


def test_select_extract_bincount():
    x = np.arange(6)
    assert enp.select([enp.asarray(x) < 2, enp.asarray(x) > 3], [enp.asarray(x), enp.asarray(x) ** 2],
                      default=-1).tolist() == np.select([x < 2, x > 3], [x, x ** 2], -1).tolist()
    assert enp.extract(enp.asarray(x) % 2 == 0, enp.asarray(x)).tolist() == [0, 2, 4]
    v = np.array([0, 1, 1, 3, 5, 1])
    assert enp.bincount(enp.asarray(v)).tolist() == np.bincount(v).tolist()
    w = np.array([0.5, 1.0, 1.0, 2.0, 0.0, 1.0], np.float32)
    np.testing.assert_allclose(np.asarray(enp.bincount(enp.asarray(v), enp.asarray(w),
                                                       minlength=8)),
                               np.bincount(v, w, minlength=8))
    f = ember.jit(lambda v: enp.bincount(v, length=4))
    assert f(enp.asarray(v)).tolist() == [1, 3, 0, 1]


@SET
@given(data=st.data(), descending=st.booleans())
def test_sort_argsort(data, descending):
    d = data.draw(st.sampled_from(ORDERED + [dt.complex64]))
    a = data.draw(arrays(d, data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0,
                                                      max_side=5)), special=d != dt.complex64))
    # ties are common with small ints: stability is checked against numpy's stable sort
    if d in (dt.int8, dt.uint16, dt.int64):
        a = (a % 3).astype(d)
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    src = a.astype(np.float32) if d == dt.bfloat16 else a
    x = enp.asarray(a)
    if descending:
        if d == dt.complex64:
            return
        want_idx = np.flip(np.argsort(np.flip(src, axis=axis), axis=axis, kind="stable"),
                           axis=axis)
        want_idx = (a.shape[axis] - 1) - want_idx
        want = np.take_along_axis(a, want_idx, axis=axis)
    else:
        want_idx = np.argsort(src, axis=axis, kind="stable")
        want = np.sort(a, axis=axis) if d != dt.bfloat16 else np.take_along_axis(a, want_idx,
                                                                               axis=axis)
    got = enp.sort(x, axis=axis, descending=descending)
    assert_close(got, want, d)
    got_i = enp.argsort(x, axis=axis, descending=descending)
    assert_close(got_i, want_idx.astype(np.int32), dt.int32)


def test_sort_nan_order_and_stable_descending():
    a = np.array([3.0, np.nan, 1.0, np.nan, 2.0], np.float32)
    np.testing.assert_array_equal(np.asarray(enp.sort(enp.asarray(a))), np.sort(a))
    b = enp.asarray([1, 2, 1, 2])
    assert enp.argsort(b, descending=True).tolist() == [1, 3, 0, 2]
    assert enp.sort(enp.asarray([[3, 1], [2, 4]]), axis=None).tolist() == [1, 2, 3, 4]


def test_lexsort_partition():
    k1 = np.array([1, 5, 1, 4, 3, 4, 4])
    k2 = np.array([9, 4, 0, 4, 0, 2, 1])
    assert enp.lexsort((enp.asarray(k1), enp.asarray(k2))).tolist() == np.lexsort((k1, k2)).tolist()
    a = np.array([7, 2, 9, 1, 5])
    for kth in (0, 2, -1):
        p = np.asarray(enp.partition(enp.asarray(a), kth))
        assert p[kth] == np.sort(a)[kth]
        assert np.all(p[:kth % 5] <= p[kth]) and np.all(p[kth % 5:] >= p[kth])
        ip = np.asarray(enp.argpartition(enp.asarray(a), kth))
        assert a[ip][kth] == np.sort(a)[kth]
    with pytest.raises(ValueError):
        enp.partition(enp.asarray(a), 5)


def test_sorting_under_make_graph_and_grad():
    x = enp.asarray([3.0, 1.0, 2.0])
    typecheck(ember.make_graph(lambda v: (enp.sort(v), enp.argsort(v, descending=True),
                                          enp.searchsorted(enp.sort(v), v)))(x))
    g = ember.grad(lambda v: (enp.sort(v) * enp.asarray([1.0, 2.0, 3.0])).sum())(x)
    assert np.asarray(g).tolist() == [3.0, 1.0, 2.0]
