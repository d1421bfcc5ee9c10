"""Shape manipulation functions vs numpy."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.dtypes as dt
import ember.numpy as enp
from ember.fx.ir import typecheck

from enp_strategies import arrays, assert_close, shapes

SET = settings(max_examples=20, deadline=None)
DT = st.sampled_from([dt.bool_, dt.int8, dt.uint16, dt.int64, dt.bfloat16, dt.float32,
                      dt.complex64])


def _eq(got, want):
    want = np.asarray(want)
    assert_close(got, want, want.dtype)


@SET
@given(data=st.data())
def test_reshape_ravel(data):
    a = data.draw(arrays(data.draw(DT)))
    x = enp.asarray(a)
    _eq(enp.reshape(x, (-1,)), a.reshape(-1))
    _eq(enp.ravel(x), a.ravel())
    if a.size:
        _eq(enp.reshape(x, (a.size, -1)), a.reshape(a.size, -1))
    _eq(x.reshape(a.shape[::-1]), a.reshape(a.shape[::-1]))
    with pytest.raises(ValueError):
        enp.reshape(x, (a.size + 1,))


@SET
@given(data=st.data())
def test_concat_stack(data):
    d1, d2 = data.draw(DT), data.draw(DT)
    shape = data.draw(shapes(min_dims=1))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    a = data.draw(arrays(d1, shape))
    s2 = list(shape)
    s2[axis] = data.draw(st.integers(0, 3))
    b = data.draw(arrays(d2, tuple(s2)))
    want_dt = dt.result_type(d1, d2)
    _eq(enp.concat([enp.asarray(a), enp.asarray(b)], axis=axis),
        np.concatenate([a.astype(want_dt), b.astype(want_dt)], axis=axis))
    _eq(enp.concat([enp.asarray(a), enp.asarray(a)], axis=None),
        np.concatenate([a.ravel(), a.ravel()]))
    sax = data.draw(st.integers(-len(shape) - 1, len(shape)))
    _eq(enp.stack([enp.asarray(a), enp.asarray(a)], axis=sax), np.stack([a, a], axis=sax))


def test_concat_errors_name_shapes():
    with pytest.raises(TypeError, match=r"\(2, 3\).*\(2, 4\)"):
        enp.concat([enp.ones((2, 3)), enp.ones((2, 4))], axis=0)
    with pytest.raises(TypeError, match="same shape"):
        enp.stack([enp.ones(2), enp.ones(3)])


@SET
@given(data=st.data())
def test_axes_functions(data):
    a = data.draw(arrays(data.draw(DT), data.draw(shapes(min_dims=1))))
    x = enp.asarray(a)
    nd = a.ndim
    ax = data.draw(st.integers(-nd, nd - 1))
    ax2 = data.draw(st.integers(-nd, nd - 1))
    _eq(enp.flip(x), np.flip(a))
    _eq(enp.flip(x, axis=ax), np.flip(a, ax))
    _eq(enp.moveaxis(x, ax, ax2), np.moveaxis(a, ax, ax2))
    _eq(enp.swapaxes(x, ax, ax2), np.swapaxes(a, ax, ax2))
    perm = data.draw(st.permutations(range(nd)))
    _eq(enp.permute_dims(x, tuple(perm)), np.transpose(a, perm))
    _eq(enp.transpose(x), np.transpose(a))
    _eq(enp.expand_dims(x, axis=ax), np.expand_dims(a, ax))
    _eq(enp.expand_dims(x, axis=(0, -1)), np.expand_dims(a, (0, -1)))
    _eq(enp.squeeze(enp.expand_dims(x, axis=ax), axis=ax), a)
    _eq(enp.squeeze(x), np.squeeze(a))
    _eq(enp.rollaxis(x, ax), np.rollaxis(a, ax))
    if nd >= 2:
        _eq(enp.matrix_transpose(x), np.swapaxes(a, -1, -2))
        _eq(x.mT, np.swapaxes(a, -1, -2))


@SET
@given(data=st.data())
def test_roll(data):
    a = data.draw(arrays(data.draw(DT), data.draw(shapes(min_dims=1))))
    x = enp.asarray(a)
    shift = data.draw(st.integers(-7, 7))
    _eq(enp.roll(x, shift), np.roll(a, shift))
    ax = data.draw(st.integers(-a.ndim, a.ndim - 1))
    _eq(enp.roll(x, shift, axis=ax), np.roll(a, shift, axis=ax))
    if a.ndim >= 2:
        _eq(enp.roll(x, (shift, 1), axis=(0, 1)), np.roll(a, (shift, 1), axis=(0, 1)))


def test_roll_traced_shift():
    x = enp.arange(5)
    f = lambda s: enp.roll(x, s)  # noqa: E731
    g = ember.make_graph(f)(enp.asarray(2))
    typecheck(g)
    assert f(enp.asarray(-2)).tolist() == np.roll(np.arange(5), -2).tolist()


@SET
@given(data=st.data())
def test_repeat_tile(data):
    a = data.draw(arrays(data.draw(DT), data.draw(shapes(max_dims=2))))
    x = enp.asarray(a)
    r = data.draw(st.integers(0, 3))
    _eq(enp.repeat(x, r), np.repeat(a, r))
    if a.ndim:
        ax = data.draw(st.integers(-a.ndim, a.ndim - 1))
        _eq(enp.repeat(x, r, axis=ax), np.repeat(a, r, axis=ax))
        reps = data.draw(st.lists(st.integers(0, 3), min_size=a.shape[ax], max_size=a.shape[ax]))
        _eq(enp.repeat(x, enp.asarray(np.array(reps, np.int32)), axis=ax),
            np.repeat(a, reps, axis=ax))
    reps = tuple(data.draw(st.lists(st.integers(0, 3), min_size=0, max_size=3)))
    _eq(enp.tile(x, reps), np.tile(a, reps))


def test_repeat_traced_with_total_length():
    x = enp.asarray([1, 2, 3])
    f = lambda r: enp.repeat(x, r, total_repeat_length=6)  # noqa: E731
    typecheck(ember.make_graph(f)(enp.asarray([1, 2, 3])))
    assert f(enp.asarray([1, 2, 3])).tolist() == [1, 2, 2, 3, 3, 3]
    with pytest.raises(ember.ConcretizationError):
        ember.make_graph(lambda r: enp.repeat(x, r))(enp.asarray([1, 2, 3]))


@SET
@given(data=st.data())
def test_split_family(data):
    a = data.draw(arrays(data.draw(DT), data.draw(shapes(min_dims=1, min_side=1))))
    x = enp.asarray(a)
    ax = data.draw(st.integers(0, a.ndim - 1))
    k = data.draw(st.integers(1, 4))
    for g, w in zip(enp.array_split(x, k, axis=ax), np.array_split(a, k, axis=ax)):
        _eq(g, w)
    idx = sorted(data.draw(st.lists(st.integers(-5, 5), max_size=3)))
    for g, w in zip(enp.split(x, idx, axis=ax), np.split(a, idx, axis=ax)):
        _eq(g, w)
    for g, w in zip(enp.unstack(x, axis=ax), [np.take(a, i, axis=ax) for i in range(a.shape[ax])]):
        _eq(g, w)
    with pytest.raises(ValueError):
        if a.shape[ax] % 4:
            enp.split(x, 4, axis=ax)
        else:
            raise ValueError


def test_stacking_helpers():
    a, b = np.arange(3), np.arange(3) + 10
    m = np.arange(6).reshape(2, 3)
    for fn in ("hstack", "vstack", "dstack", "column_stack"):
        _eq(getattr(enp, fn)([enp.asarray(a), enp.asarray(b)]), getattr(np, fn)([a, b]))
        _eq(getattr(enp, fn)([enp.asarray(m), enp.asarray(m)]), getattr(np, fn)([m, m]))
    for fn in ("atleast_1d", "atleast_2d", "atleast_3d"):
        for v in (np.float32(1.0), a, m, m[None]):
            _eq(getattr(enp, fn)(enp.asarray(v)), getattr(np, fn)(v))
    for g, w in zip(enp.hsplit(enp.asarray(m.T), 2), np.hsplit(m.T, 2)):
        _eq(g, w)
    for g, w in zip(enp.vsplit(enp.asarray(m), 2), np.vsplit(m, 2)):
        _eq(g, w)


def test_broadcast_functions():
    a = enp.ones((2, 1))
    b = enp.ones((3,))
    assert [t.shape for t in enp.broadcast_arrays(a, b)] == [(2, 3), (2, 3)]
    assert enp.broadcast_to(b, (4, 3)).shape == (4, 3)
    assert enp.broadcast_shapes((2, 1), (1, 5), ()) == (2, 5)
    with pytest.raises(TypeError, match=r"\(2, 3\).*\(4,\)"):
        enp.broadcast_shapes((2, 3), (4,))
    with pytest.raises(TypeError, match="broadcast_to"):
        enp.broadcast_to(enp.ones(3), (4, 2))


_MODES = ["constant", "edge", "reflect", "symmetric", "wrap", "maximum", "minimum", "mean",
          "median", "linear_ramp", "empty"]


@pytest.mark.parametrize("mode", _MODES)
@SET
@given(data=st.data())
def test_pad(mode, data):
    d = data.draw(st.sampled_from([dt.int32, dt.float32, dt.float64]))
    shape = data.draw(shapes(min_dims=1, max_dims=2, min_side=1))
    a = data.draw(arrays(d, shape, special=False, lo=-100, hi=100))
    pw = data.draw(st.sampled_from([1, (2, 0), ((1, 3),) * len(shape), 0, 5]))
    kw = {}
    if mode == "constant":
        kw["constant_values"] = data.draw(st.sampled_from([0, 7, ((1, 2),) * len(shape)]))
    if mode in ("reflect", "symmetric"):
        kw["reflect_type"] = data.draw(st.sampled_from(["even", "odd"]))
    if mode in ("maximum", "minimum", "mean", "median"):
        kw["stat_length"] = data.draw(st.sampled_from([None, 1, 2]))
    if mode == "linear_ramp":
        kw["end_values"] = data.draw(st.sampled_from([0, 5]))
    got = enp.pad(enp.asarray(a), pw, mode=mode, **kw)
    want = np.pad(a, pw, mode=mode, **kw)
    if mode == "empty":
        assert got.shape == want.shape
        return
    assert_close(got, want, d, rtol=1e-5 if d == dt.float32 else None,
                 atol=1e-4 if d == dt.float32 else None)


def test_pad_errors():
    with pytest.raises(ValueError, match="mode"):
        enp.pad(enp.ones(3), 1, mode="bogus")
    with pytest.raises(ValueError, match="empty axis"):
        enp.pad(enp.ones((0,)), 1, mode="edge")


@SET
@given(data=st.data())
def test_rot90_diagonal_trace(data):
    a = data.draw(arrays(data.draw(DT), data.draw(shapes(min_dims=2, max_dims=3))))
    x = enp.asarray(a)
    k = data.draw(st.integers(-3, 5))
    _eq(enp.rot90(x, k), np.rot90(a, k))
    _eq(enp.rot90(x, k, axes=(1, 0)), np.rot90(a, k, axes=(1, 0)))
    off = data.draw(st.integers(-4, 4))
    a1, a2 = data.draw(st.sampled_from([(0, 1), (1, 0), (-1, 0), (0, -1)]))
    _eq(enp.diagonal(x, off, a1, a2), np.diagonal(a, off, a1, a2))
    if a.dtype.kind in "iuf" or a.dtype == dt.bfloat16:
        got = enp.trace(x, off)
        want = np.trace(a.astype(np.float64) if a.dtype == dt.bfloat16 else a, off)
        if a.dtype.kind in "iu":
            want = want.astype(got.dtype)
        np.testing.assert_allclose(np.asarray(got).astype(np.float64), np.asarray(want, np.float64),
                                   rtol=2e-2)


def test_append_delete():
    a = np.arange(6).reshape(2, 3)
    _eq(enp.append(enp.asarray(a), enp.asarray([[7, 8, 9]]), axis=0),
        np.append(a, [[7, 8, 9]], axis=0))
    _eq(enp.append(enp.asarray(a), 1), np.append(a, 1))
    _eq(enp.delete(enp.asarray(a), 1, axis=1), np.delete(a, 1, axis=1))
    _eq(enp.delete(enp.asarray(a), slice(0, 2), axis=1), np.delete(a, slice(0, 2), axis=1))
    _eq(enp.delete(enp.asarray(a), [0, -1]), np.delete(a, [0, -1]))


def test_manipulation_under_make_graph():
    def f(x):
        y = enp.concat([x, enp.flip(x, axis=0)], axis=0)
        y = enp.pad(y, 1, mode="reflect")
        y = enp.roll(y, 2, axis=1) + enp.tile(x, (2, 1))[:1, :1].sum()
        return enp.concat(enp.array_split(y, 2, axis=1), axis=1).sum(axis=0) + enp.diagonal(y).sum()
    x = enp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    typecheck(ember.make_graph(f)(x))
