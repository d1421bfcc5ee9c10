"""Tests of sort, top_k and the private take-along-axis gather/scatter pair:
values vs numpy, stability, NaN placement, errors, derivatives, batching."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember import lax
from ember.fx.core import AbstractArray, get_aval
from ember.fx.ir import typecheck
from ember.fx.prims import sort as S
from ember.testing import check_grads, check_vmap

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.uint64, F16, BF16, np.float32,
          np.float64]


def rand(rng, shape, dtype):
    d = np.dtype(dtype)
    if d == np.bool_:
        return rng.random(shape) < 0.5
    if d.kind in "iu":
        info = np.iinfo(d)
        return rng.integers(max(info.min, -4), min(info.max, 4) + 1, shape).astype(d)
    return rng.integers(-4, 5, shape).astype(d)  # floats with plenty of ties


def np_key(x):
    return x.astype(np.float32) if x.dtype in (F16, BF16) else x


def check_abstract(prim, *args, **params):
    outs = prim.bind(*args, **params)
    want = prim.abstract_eval(*[get_aval(a) for a in args], **params)
    raw = prim.impl(*args, **params)
    for o, r, w in zip(outs, raw, want):
        assert (o.shape, o.dtype) == (w.shape, w.dtype) == (r.shape, r.dtype)
    return [np.asarray(o) for o in outs]


# --- sort values ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES + [np.complex64])
def test_sort_values_vs_numpy(dtype):
    rng = np.random.default_rng(0)
    for shape, dim in [((7,), 0), ((0,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 0, 3), 2),
                       ((2, 3, 4), 1)]:
        x = rand(rng, shape, dtype)
        (got,) = check_abstract(S.sort_p, x, dimension=dim, is_stable=True, num_keys=1)
        want = np.sort(np_key(x), axis=dim, kind="stable").astype(x.dtype)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.asarray(lax.sort(x, dim - len(shape))), want)


@pytest.mark.parametrize("dtype", [F16, BF16, np.float32, np.float64])
def test_nans_sort_last_and_signed_zeros_keep_their_order(dtype):
    x = np.array([np.nan, 2.0, -np.inf, np.nan, -1.0, np.inf, 0.0], dtype)
    k, v = lax.sort((x, np.arange(7, dtype=np.int32)))
    np.testing.assert_array_equal(np.asarray(k).astype(np.float64)[:5], [-np.inf, -1, 0, 2, np.inf])
    assert np.isnan(np.asarray(k).astype(np.float64)[5:]).all()
    assert np.asarray(v).tolist() == [2, 4, 6, 1, 5, 0, 3]  # NaNs in input order
    z = np.array([0.0, -0.0, 0.0, -0.0], dtype)
    _, order = lax.sort((z, np.arange(4, dtype=np.int32)))
    assert np.asarray(order).tolist() == [0, 1, 2, 3]  # -0.0 == +0.0: stable


@pytest.mark.parametrize("is_stable", [True, False])
def test_sort_is_stable(is_stable):
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 3, (4, 50)).astype(np.float32)
    iota = np.broadcast_to(np.arange(50, dtype=np.int32), (4, 50))
    k, v = lax.sort((keys, iota), 1, is_stable=is_stable)
    k, v = np.asarray(k), np.asarray(v)
    np.testing.assert_array_equal(v, np.argsort(keys, axis=1, kind="stable"))
    same = k[:, 1:] == k[:, :-1]
    assert (v[:, 1:][same] > v[:, :-1][same]).all()


@pytest.mark.parametrize("num_keys", [1, 2, 3])
def test_multiple_keys_sort_lexicographically(num_keys):
    rng = np.random.default_rng(2)
    a = rng.integers(0, 2, (3, 40)).astype(np.int8)
    b = rng.integers(0, 3, (3, 40)).astype(np.float32)
    c = rng.standard_normal((3, 40))
    outs = check_abstract(S.sort_p, a, b, c, dimension=1, is_stable=True, num_keys=num_keys)
    perm = np.lexsort([c, b, a][3 - num_keys:], axis=1)
    for got, op in zip(outs, (a, b, c)):
        np.testing.assert_array_equal(got, np.take_along_axis(op, perm, 1))


def test_sort_key_val_and_single_operand_form():
    k, v = lax.sort_key_val(np.array([3.0, 1.0, 2.0]), np.array([10, 20, 30], np.int32))
    assert np.asarray(k).tolist() == [1, 2, 3] and np.asarray(v).tolist() == [20, 30, 10]
    assert isinstance(lax.sort([np.array([2.0, 1.0])]), tuple)
    assert np.asarray(lax.sort(np.array([2.0, 1.0]))).tolist() == [1.0, 2.0]


def test_sort_errors():
    f32 = np.float32
    with pytest.raises(TypeError, match="sort: operands must have equal shapes"):
        lax.sort((np.ones(3), np.ones(4)))
    with pytest.raises(TypeError, match="num_keys must be between 1 and the number of operands"):
        lax.sort((np.ones(3), np.ones(3)), num_keys=3)
    with pytest.raises(TypeError, match="sort: dimension 0 is out of range"):
        lax.sort(f32(1.0), 0)
    with pytest.raises(TypeError, match="sort: dimension 2 is out of range"):
        S.sort_p.abstract_eval(AbstractArray((2, 2), f32), dimension=2, is_stable=True, num_keys=1)


# --- top_k values ------------------------------------------------------------------------

def top_k_reference(x, k):
    """Descending, ties by lower index, NaN largest: sort by (not NaN, -value, index)."""
    n = x.shape[-1]
    rows = np_key(x).reshape(int(np.prod(x.shape[:-1])), n)

    def order_key(r, i):
        v = r[i]
        if r.dtype.kind == "f" and np.isnan(v):
            return (0, 0, i)
        return (1, -int(v) if r.dtype.kind in "iub" else -float(v), i)

    idx = [sorted(range(n), key=lambda i: order_key(r, i))[:k] for r in rows]
    idx = np.array(idx, np.int64).reshape(x.shape[:-1] + (k,))
    return np.take_along_axis(x, idx, -1), idx.astype(np.int32)


@pytest.mark.parametrize("dtype", DTYPES)
def test_top_k_values(dtype):
    rng = np.random.default_rng(3)
    for shape, k in [((6,), 3), ((6,), 0), ((6,), 6), ((2, 3, 5), 2), ((0, 4), 1), ((3, 0), 0)]:
        x = rand(rng, shape, dtype)
        vals, idx = check_abstract(S.top_k_p, x, k=k)
        want_v, want_i = top_k_reference(x, k)
        np.testing.assert_array_equal(idx, want_i)
        np.testing.assert_array_equal(vals, want_v)


def test_top_k_nan_first_and_ties_by_index():
    x = np.array([1.0, np.nan, 4.0, 4.0, np.nan, 0.0], np.float32)
    v, i = lax.top_k(x, 4)
    assert np.asarray(i).tolist() == [1, 4, 2, 3]
    assert np.asarray(v).tolist()[2:] == [4.0, 4.0]


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64])
def test_top_k_ranks_by_ieee_total_order(dtype):
    # JAX's top_k (XLA TopK) ranks floats by IEEE total order, unlike its sort:
    # +0.0 above -0.0, and a NaN with the sign bit set below -inf. ember ranked
    # -0.0 and +0.0 as ties (by index) and every NaN first.
    neg_nan = np.copysign(np.float32(np.nan), np.float32(-1.0))
    x = np.array([0.0, -0.0, neg_nan, np.nan, -np.inf, 1.0, 0.0, -0.0, -3.0], np.float32).astype(dtype)
    for f in (lambda a: lax.top_k(a, 9), ember.jit(lambda a: lax.top_k(a, 9))):
        v, i = f(x)
        assert np.asarray(i).tolist() == [3, 5, 0, 6, 1, 7, 8, 4, 2]
        v = np.asarray(v).astype(np.float64)
        assert np.signbit(v).tolist() == [False, False, False, False, True, True, True, True, True]
        assert np.isnan(v[[0, 8]]).all()


def test_top_k_errors():
    with pytest.raises(TypeError, match="top_k: k=4 must be between 0 and the last dimension"):
        lax.top_k(np.ones(3), 4)
    with pytest.raises(TypeError, match="top_k: the operand must have rank >= 1"):
        lax.top_k(np.float32(1.0), 1)
    with pytest.raises(TypeError, match="top_k does not accept dtype complex64"):
        lax.top_k(np.ones(3, np.complex64), 1)


# --- take_along_axis / scatter_add_along_axis ---------------------------------------------

def test_take_and_scatter_values_and_transposes():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 5))
    idx = rng.integers(0, 5, (3, 7)).astype(np.int32)
    got = np.asarray(S._take_along_axis(x, idx, 1))
    np.testing.assert_array_equal(got, np.take_along_axis(x, idx, 1))
    upd = rng.standard_normal((3, 7))
    want = np.zeros((3, 5))
    for r in range(3):
        np.add.at(want[r], idx[r], upd[r])
    np.testing.assert_allclose(np.asarray(S._scatter_add_along_axis(upd, idx, 1, 5)), want)
    # dot-product tests: <ct, A x> == <A^T ct, x> in both directions
    (xt,) = ember.linear_transpose(lambda v: S._take_along_axis(v, idx, 1), x)(upd)
    assert np.isclose(np.sum(got * upd), np.sum(np.asarray(xt) * x))
    (ut,) = ember.linear_transpose(lambda u: S._scatter_add_along_axis(u, idx, 1, 5), upd)(x)
    assert np.isclose(np.sum(want * x), np.sum(np.asarray(ut) * upd))
    check_grads(lambda v: S._take_along_axis(v, idx, 1), (x,), order=2)
    check_grads(lambda u: S._scatter_add_along_axis(u, idx, 1, 5), (upd,), order=2)
    for bdim in (0, 1, 2):
        xb = np.moveaxis(np.stack([x, 2 * x]), 0, bdim)
        ub = np.moveaxis(np.stack([upd, -upd]), 0, bdim)
        ib = np.moveaxis(np.stack([idx, idx[::-1]]), 0, bdim)
        check_vmap(lambda v: S._take_along_axis(v, idx, 1), (xb,), in_axes=bdim)
        check_vmap(lambda v, i: S._take_along_axis(v, i, 1), (xb, ib), in_axes=bdim)
        check_vmap(lambda i: S._take_along_axis(x, i, 1), (ib,), in_axes=bdim)
        check_vmap(lambda u, i: S._scatter_add_along_axis(u, i, 1, 5), (ub, ib), in_axes=bdim)


def test_take_along_axis_errors():
    with pytest.raises(TypeError, match="indices must have an integer dtype"):
        S._take_along_axis(np.ones(3), np.ones(3), 0)
    with pytest.raises(TypeError, match="take_along_axis: indices .* must match the shape"):
        S._take_along_axis(np.ones((2, 3)), np.zeros((3, 3), np.int32), 1)


# --- derivatives ---------------------------------------------------------------------------

def test_sort_grads():
    x = np.random.default_rng(5).permutation(20).reshape(4, 5) / 3.0  # distinct keys
    check_grads(lambda v: lax.sort(v, 1), (x,), order=2)
    check_grads(lambda v: lax.sort(v, 0), (x,), order=2)
    keys = np.array([[2, 0, 1, 0, 2]] * 4, np.int32)
    check_grads(lambda v: lax.sort((keys, v), 1)[1], (x,), order=2)
    check_grads(lambda a, b: lax.sort((a, b), 1, num_keys=2), (x, x.T.reshape(4, 5)), order=1)


def test_sort_tangents_follow_the_permutation():
    x = np.array([3.0, 1.0, 2.0])
    _, t = ember.jvp(lambda v: lax.sort(v), (x,), (np.array([10.0, 20.0, 30.0]),))
    assert np.asarray(t).tolist() == [20.0, 30.0, 10.0]
    g = ember.grad(lambda v: lax.reduce_sum(lax.sort(v) * np.array([1.0, 2.0, 3.0]), (0,)))(x)
    assert np.asarray(g).tolist() == [3.0, 1.0, 2.0]


def test_top_k_grads():
    x = np.random.default_rng(6).permutation(24).reshape(2, 3, 4) / 5.0
    check_grads(lambda v: lax.top_k(v, 2)[0], (x,), order=2)
    _, (tv, ti) = ember.jvp(lambda v: lax.top_k(v, 2), (x,), (np.ones_like(x),))
    assert ti.dtype == ember.dtypes.float0
    np.testing.assert_array_equal(np.asarray(tv), np.ones((2, 3, 2)))


@pytest.mark.parametrize("case", ["sort", "sort2", "top_k"])
def test_rule_graphs_typecheck(case):
    x = np.random.default_rng(7).standard_normal((3, 4))
    f = {"sort": lambda v: lax.sort(v, 0),
         "sort2": lambda v: lax.sort((v, v * 2.0), 1)[1],
         "top_k": lambda v: lax.top_k(v, 2)[0]}[case]
    typecheck(ember.make_graph(f)(x))
    typecheck(ember.make_graph(lambda v, t: ember.jvp(f, (v,), (t,)))(x, x))
    typecheck(ember.make_graph(lambda v: ember.vjp(f, v)[1](f(v)))(x))
    typecheck(ember.make_graph(ember.vmap(f, in_axes=1))(np.stack([x, x], 1)))


# --- batching -------------------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=3), st.data())
def test_sort_vmap_vs_loop(shape, data):
    dim = data.draw(st.integers(0, len(shape) - 1))
    num_keys = data.draw(st.integers(1, 2))
    d0 = data.draw(st.integers(0, len(shape)))
    d1 = data.draw(st.none() | st.integers(0, len(shape)))
    rng = np.random.default_rng(8)
    a = np.moveaxis(rng.integers(0, 3, (2,) + tuple(shape)).astype(np.float32), 0, d0)
    b_shape = (2,) + tuple(shape) if d1 is not None else tuple(shape)
    b = rng.standard_normal(b_shape)
    if d1 is not None:
        b = np.moveaxis(b, 0, d1)
    check_vmap(lambda p, q: lax.sort((p, q), dim, num_keys=num_keys), (a, b), in_axes=(d0, d1))


@pytest.mark.parametrize("bdim", [0, 1, 2])
def test_top_k_vmap_vs_loop(bdim):
    x = np.random.default_rng(9).integers(0, 4, (3, 4, 5)).astype(np.float64)  # ties
    check_vmap(lambda v: lax.top_k(v, 2), (x,), in_axes=bdim)
    check_vmap(ember.grad(lambda v: lax.reduce_sum(lax.top_k(v, 2)[0] ** 2, (0, 1))), (x,),
               in_axes=bdim)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=3), st.data())
def test_sort_values_hypothesis(shape, data):
    dim = data.draw(st.integers(0, len(shape) - 1))
    x = np.random.default_rng(10).standard_normal(shape)
    x[x > 1.0] = np.nan
    (got,) = check_abstract(S.sort_p, x, dimension=dim, is_stable=True, num_keys=1)
    np.testing.assert_array_equal(got, np.sort(x, axis=dim))
