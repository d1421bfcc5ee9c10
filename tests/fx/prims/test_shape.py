"""Tests of the movement primitives (squeeze, expand_dims, rev, pad, concatenate,
slice, dynamic_slice, dynamic_update_slice, iota and the one-dimension helpers):
values vs numpy, abstract eval, errors, derivatives, transposes and batching."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember import lax
from ember.fx.core import UndefinedPrimal, get_aval
from ember.fx.ir import typecheck
from ember.fx.prims import shape as S
from ember.testing import check_grads, check_vmap

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.uint64, F16, BF16, np.float32,
          np.float64, np.complex64]
SMALL = settings(max_examples=25, deadline=None)


def rand(rng, shape, dtype=np.float64):
    return np.asarray(_rand(rng, shape, dtype))


def _rand(rng, shape, dtype):
    d = np.dtype(dtype)
    if d == np.bool_:
        return rng.random(shape) < 0.5
    if d.kind in "iu":
        return rng.integers(0 if d.kind == "u" else -50, 50, shape).astype(d)
    if d.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(d)
    return rng.standard_normal(shape).astype(d)


def run(prim, *args, **params):
    """Bind eagerly; the impl's result must match abstract_eval exactly."""
    want = prim.abstract_eval(*[get_aval(a) for a in args], **params)
    raw = prim.impl(*args, **params)
    assert raw.shape == want.shape and raw.dtype == want.dtype, (prim, raw.shape, raw.dtype, want)
    out = prim.bind(*args, **params)
    assert out.shape == want.shape and out.dtype == want.dtype
    return np.asarray(out)


def inner(a, b):
    return float(np.sum(np.asarray(a, np.float64) * np.asarray(b, np.float64)))


def dot_product_test(f, x_shapes, out_fn_args=(), seed=0):
    """<ct, f(xs)> == <f^T(ct), xs> for the linear map f, through ember.linear_transpose."""
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal(s) for s in x_shapes]
    y = np.asarray(f(*xs))
    ct = rng.standard_normal(y.shape)
    cts = ember.linear_transpose(f, *xs)(ct)
    lhs = inner(ct, y)
    rhs = sum(inner(c, x) for c, x in zip(cts, xs))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10, atol=1e-10)


shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


# --- squeeze / expand_dims / rev --------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_squeeze_expand_rev_values(dtype):
    rng = np.random.default_rng(0)
    x = rand(rng, (1, 3, 1, 2), dtype)
    np.testing.assert_array_equal(run(S.squeeze_p, x, dimensions=(0, 2)), x.reshape(3, 2))
    np.testing.assert_array_equal(lax.squeeze(x, (-2,)), x.reshape(1, 3, 2))
    np.testing.assert_array_equal(run(S.expand_dims_p, x, dimensions=(0, 5)), x[None, ..., None])
    np.testing.assert_array_equal(lax.expand_dims(x, (-1,)), x[..., None])
    np.testing.assert_array_equal(run(S.rev_p, x, dimensions=(1, 3)), x[:, ::-1, :, ::-1])
    s = rand(rng, (), dtype)
    np.testing.assert_array_equal(lax.expand_dims(s, (0, 1)), np.reshape(s, (1, 1)))
    np.testing.assert_array_equal(lax.rev(s, ()), s)


@SMALL
@given(shape=shapes, data=st.data())
def test_squeeze_expand_rev_hypothesis(shape, data):
    rng = np.random.default_rng(1)
    x = rand(rng, shape, np.float32)
    nd = len(shape)
    ones = [i for i, s in enumerate(shape) if s == 1]
    sq = tuple(sorted(data.draw(st.sets(st.sampled_from(ones)) if ones else st.just(set()))))
    np.testing.assert_array_equal(lax.squeeze(x, sq), np.squeeze(x, sq) if sq else x)
    k = data.draw(st.integers(0, 2))
    ex = tuple(sorted(data.draw(st.sets(st.integers(0, nd + k - 1), min_size=k, max_size=k)))) if k else ()
    np.testing.assert_array_equal(lax.expand_dims(x, ex), np.expand_dims(x, ex))
    rv = tuple(sorted(data.draw(st.sets(st.integers(0, nd - 1))))) if nd else ()
    np.testing.assert_array_equal(lax.rev(x, rv), np.flip(x, rv) if rv else x)


def test_squeeze_expand_rev_errors():
    x = np.zeros((1, 3), np.float32)
    with pytest.raises(TypeError, match=r"squeeze.*size 3"):
        lax.squeeze(x, (1,))
    with pytest.raises(IndexError, match=r"\(1, 3\)"):
        lax.squeeze(x, (2,))
    with pytest.raises(IndexError, match=r"\(1, 3\)"):
        lax.expand_dims(x, (4,))
    with pytest.raises(IndexError, match=r"\(1, 3\)"):
        lax.rev(x, (5,))
    with pytest.raises(TypeError, match="repeated"):
        S.rev_p.bind(x, dimensions=(0, 0))


# --- pad -------------------------------------------------------------------------------

def pad_reference(x, value, config):
    """Pad one axis at a time with explicit Python lists of slices."""
    out = np.asarray(x)
    for ax, (lo, hi, interior) in enumerate(config):
        pieces = []
        fill = np.full(out.shape[:ax] + (1,) + out.shape[ax + 1:], value, out.dtype)
        n = out.shape[ax]
        pieces += [fill] * max(lo, 0)
        for i in range(n):
            pieces.append(np.take(out, [i], axis=ax))
            if i < n - 1:
                pieces += [fill] * interior
        pieces += [fill] * max(hi, 0)
        full = np.concatenate(pieces, axis=ax) if pieces else np.zeros(
            out.shape[:ax] + (0,) + out.shape[ax + 1:], out.dtype)
        m = full.shape[ax]
        out = np.take(full, range(max(-lo, 0), m - max(-hi, 0)), axis=ax)
    return out


@st.composite
def pad_case(draw):
    shape = draw(st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple))
    config = []
    for n in shape:
        interior = draw(st.integers(0, 2))
        full = n + max(n - 1, 0) * interior
        lo = draw(st.integers(-full, 3))
        hi = draw(st.integers(-(full + lo), 3))
        config.append((lo, hi, interior))
    return shape, tuple(config)


@SMALL
@given(case=pad_case(), dtype=st.sampled_from(DTYPES))
def test_pad_values_hypothesis(case, dtype):
    shape, config = case
    rng = np.random.default_rng(2)
    x = rand(rng, shape, dtype)
    v = rand(rng, (), dtype)
    got = run(S.pad_p, x, v, padding_config=config)
    np.testing.assert_array_equal(got, pad_reference(x, v, config))


@pytest.mark.parametrize("dtype", DTYPES)
def test_pad_matches_np_pad(dtype):
    rng = np.random.default_rng(3)
    x = rand(rng, (2, 3), dtype)
    v = rand(rng, (), dtype)
    np.testing.assert_array_equal(lax.pad(x, v, ((1, 2, 0), (0, 3, 0))),
                                  np.pad(x, ((1, 2), (0, 3)), constant_values=v))
    np.testing.assert_array_equal(lax.pad(np.arange(3), 0, ((0, 0, 2),)), [0, 0, 0, 1, 0, 0, 2])


def test_pad_errors_and_python_scalars():
    x = np.ones((2, 3), np.float64)
    assert lax.pad(x, 0.0, ((1, 1, 0), (0, 0, 0))).dtype == np.float64
    with pytest.raises(TypeError, match="same dtype"):
        lax.pad(x, np.float32(0), ((1, 1, 0), (0, 0, 0)))
    with pytest.raises(TypeError, match="negative size"):
        lax.pad(x, 0.0, ((-3, 0, 0), (0, 0, 0)))
    with pytest.raises(TypeError, match="interior"):
        lax.pad(x, 0.0, ((0, 0, -1), (0, 0, 0)))
    with pytest.raises(TypeError, match="per dimension"):
        lax.pad(x, 0.0, ((0, 1, 0),))


# --- concatenate -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_concatenate_values(dtype):
    rng = np.random.default_rng(4)
    xs = [rand(rng, (2, n, 3), dtype) for n in (1, 0, 4)]
    np.testing.assert_array_equal(run(S.concatenate_p, *xs, dimension=1), np.concatenate(xs, 1))
    np.testing.assert_array_equal(lax.concatenate(xs, -2), np.concatenate(xs, 1))
    np.testing.assert_array_equal(lax.concatenate(xs[:1], 1), xs[0])


def test_concatenate_errors():
    a, b = np.zeros((2, 3), np.float32), np.zeros((3, 3), np.float32)
    with pytest.raises(TypeError, match="equal shapes except"):
        lax.concatenate([a, b], 1)
    with pytest.raises(TypeError, match="same dtype"):
        lax.concatenate([a, a.astype(np.float64)], 0)
    with pytest.raises(IndexError, match=r"\(2, 3\)"):
        lax.concatenate([a, a], 2)
    with pytest.raises(IndexError):
        lax.concatenate([np.float32(1), np.float32(2)], 0)


# --- slice -----------------------------------------------------------------------------

@st.composite
def slice_case(draw):
    shape = draw(st.lists(st.integers(0, 5), min_size=0, max_size=3).map(tuple))
    start, limit, strides = [], [], []
    for n in shape:
        s = draw(st.integers(0, n))
        lim = draw(st.integers(s, n))
        start.append(s)
        limit.append(lim)
        strides.append(draw(st.integers(1, 3)))
    return shape, tuple(start), tuple(limit), tuple(strides)


@SMALL
@given(case=slice_case(), dtype=st.sampled_from(DTYPES))
def test_slice_values_hypothesis(case, dtype):
    shape, start, limit, strides = case
    x = rand(np.random.default_rng(5), shape, dtype)
    got = run(S.slice_p, x, start_indices=start, limit_indices=limit, strides=strides)
    np.testing.assert_array_equal(got, x[tuple(slice(a, b, c) for a, b, c in zip(start, limit, strides))])


def test_slice_errors_and_helpers():
    x = np.arange(24.0).reshape(4, 6)
    with pytest.raises(IndexError, match=r"\(4, 6\)"):
        lax.slice(x, (0, 0), (5, 6))
    with pytest.raises(IndexError, match=r"\(4, 6\)"):
        lax.slice(x, (3, 0), (2, 6))
    with pytest.raises(TypeError, match="strides"):
        lax.slice(x, (0, 0), (4, 6), (0, 1))
    np.testing.assert_array_equal(lax.slice_in_dim(x, 1, -1, 2, axis=1), x[:, 1:-1:2])
    np.testing.assert_array_equal(lax.slice_in_dim(x, None, None, axis=0), x)
    np.testing.assert_array_equal(lax.index_in_dim(x, -1, 1), x[:, -1:])
    np.testing.assert_array_equal(lax.index_in_dim(x, 2, 0, keepdims=False), x[2])
    with pytest.raises(IndexError, match=r"\(4, 6\)"):
        lax.index_in_dim(x, 6, 1)
    with pytest.raises(IndexError, match=r"\(4, 6\)"):
        lax.slice_in_dim(x, 0, 1, axis=2)


# --- dynamic_slice / dynamic_update_slice ----------------------------------------------

def clamp_start(i, n, size):
    i = int(i)
    if i < 0:
        i += n
    return min(max(i, 0), n - size)


@st.composite
def dyn_case(draw):
    shape = draw(st.lists(st.integers(0, 5), min_size=0, max_size=3).map(tuple))
    sizes = tuple(draw(st.integers(0, n)) for n in shape)
    starts = tuple(draw(st.integers(-7, 7)) for _ in shape)
    return shape, sizes, starts


@SMALL
@given(case=dyn_case(), dtype=st.sampled_from(DTYPES),
       idx_dtype=st.sampled_from([np.int8, np.int32, np.int64]))
def test_dynamic_slice_and_update_values_hypothesis(case, dtype, idx_dtype):
    shape, sizes, starts = case
    rng = np.random.default_rng(6)
    x = rand(rng, shape, dtype)
    idx = [idx_dtype(s) for s in starts]
    cl = [clamp_start(s, n, m) for s, n, m in zip(starts, shape, sizes)]
    window = tuple(slice(c, c + m) for c, m in zip(cl, sizes))
    np.testing.assert_array_equal(lax.dynamic_slice(x, idx, sizes), x[window])
    norm = [S._start_index(i, n) for i, n in zip(idx, shape)]
    run(S.dynamic_slice_p, x, *norm, slice_sizes=sizes)
    u = rand(rng, sizes, dtype)
    want = x.copy()
    want[window] = u
    np.testing.assert_array_equal(lax.dynamic_update_slice(x, u, idx), want)
    run(S.dynamic_update_slice_p, x, u, *norm)
    # The primitive itself only clamps (the wrapper wraps negative starts first).
    raw = [np.int32(s) for s in starts]
    rcl = tuple(slice(min(max(s, 0), n - m), min(max(s, 0), n - m) + m)
                for s, n, m in zip(starts, shape, sizes))
    np.testing.assert_array_equal(S.dynamic_slice_p.bind(x, *raw, slice_sizes=sizes), x[rcl])


def test_dynamic_helpers_and_array_starts():
    x = np.arange(20.0).reshape(4, 5)
    np.testing.assert_array_equal(lax.dynamic_slice(x, np.array([1, -2]), (2, 2)), x[1:3, 3:5])
    np.testing.assert_array_equal(lax.dynamic_slice_in_dim(x, 3, 2, axis=1), x[:, 3:5])
    np.testing.assert_array_equal(lax.dynamic_index_in_dim(x, -1, 0, keepdims=False), x[-1])
    np.testing.assert_array_equal(lax.dynamic_index_in_dim(x, np.int32(9), 1), x[:, 4:5])
    want = x.copy()
    want[:, 2] = -1
    np.testing.assert_array_equal(lax.dynamic_update_index_in_dim(x, -np.ones(4), 2, 1), want)
    np.testing.assert_array_equal(lax.dynamic_update_index_in_dim(x, -np.ones((4, 1)), 2, 1), want)
    want = x.copy()
    want[2:4, :] = 0
    np.testing.assert_array_equal(lax.dynamic_update_slice_in_dim(x, np.zeros((2, 5)), 7, 0), want)


def test_dynamic_errors():
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(IndexError, match=r"\(3, 4\)"):
        lax.dynamic_slice(x, (0, 0), (4, 1))
    with pytest.raises(TypeError, match="2 start indices"):
        lax.dynamic_slice(x, (0,), (1, 1))
    with pytest.raises(TypeError, match="integers"):
        lax.dynamic_slice(x, (np.float32(0), 0), (1, 1))
    with pytest.raises(IndexError, match=r"\(3, 4\)"):
        lax.dynamic_update_slice(x, np.zeros((1, 5), np.float32), (0, 0))
    with pytest.raises(TypeError, match="dtype"):
        lax.dynamic_update_slice(x, np.zeros((1, 1), np.float64), (0, 0))


# --- iota ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, F16, BF16, np.float32, np.float64])
def test_iota(dtype):
    got = run(S.iota_p, dtype=np.dtype(dtype), shape=(2, 3, 4), dimension=1)
    want = np.broadcast_to(np.arange(3).reshape(1, 3, 1), (2, 3, 4)).astype(dtype)
    np.testing.assert_array_equal(got, want)
    assert lax.iota(dtype, 5, 0).tolist() == list(range(5))
    assert lax.iota(dtype, (0, 2), -1).shape == (0, 2)
    with pytest.raises(IndexError, match=r"\(2, 3\)"):
        lax.iota(dtype, (2, 3), 2)
    with pytest.raises(TypeError):
        lax.iota(np.bool_, (2,), 0)


def test_iota_under_transforms():
    f = lambda x: x * lax.iota(np.float64, (3,), 0)
    check_vmap(f, (np.ones((2, 3)),))
    check_grads(f, (np.ones(3),), order=2)
    out = ember.vmap(lambda x: lax.iota(np.int32, (3,), 0))(np.zeros(4))
    assert np.asarray(out).shape == (4, 3)


# --- staged graphs typecheck ---------------------------------------------------------------

def everything(x, i, u, p):
    y = lax.pad(x, p, ((1, -1, 1), (0, 2, 0)))
    y = lax.slice(y, (0, 1), (5, 6), (2, 2))
    y = lax.concatenate([y, lax.rev(y, (0,))], 0)
    y = lax.squeeze(lax.expand_dims(y, (0, 3)), (3,))
    z = lax.dynamic_slice(x, (i, 1), (2, 2))
    w = lax.dynamic_update_slice(x, u, (i, -1))
    return y, z, w, lax.iota(np.int32, (3,), 0)


def test_graphs_typecheck():
    x = np.random.default_rng(7).standard_normal((3, 4))
    args = (x, np.int32(1), np.ones((2, 2)), np.float64(0.5))
    typecheck(ember.make_graph(everything)(*args))
    typecheck(ember.make_graph(lambda *a: ember.jvp(lambda x, u, p: everything(x, a[1], u, p),
                                                    (a[0], a[2], a[3]), (a[0], a[2], a[3])))(*args))
    typecheck(ember.make_graph(lambda *a: ember.vjp(lambda x, u: everything(x, a[1], u, a[3])[:3],
                                                    a[0], a[2])[1](everything(*a)[:3]))(*args))
    typecheck(ember.make_graph(ember.vmap(everything, in_axes=(1, 0, None, 0)))(
        np.stack([x] * 2, 1), np.array([0, 5], np.int32), args[2], np.array([1.0, 2.0])))


# --- derivatives -----------------------------------------------------------------------

GRAD_CASES = {
    "squeeze": (lambda x: lax.squeeze(x, (1,)), (3, 1, 2)),
    "expand_dims": (lambda x: lax.expand_dims(x, (0, 2)), (3, 2)),
    "rev": (lambda x: lax.rev(x, (0, 1)), (3, 2)),
    "pad": (lambda x: lax.pad(x, 0.7, ((2, -1, 1), (-1, 1, 2))), (3, 4)),
    "slice": (lambda x: lax.slice(x, (1, 0), (4, 3), (2, 2)), (4, 3)),
    "concatenate": (lambda x: lax.concatenate([x, x * x, lax.slice_in_dim(x, 0, 1)], 0), (2, 3)),
    "dynamic_slice": (lambda x: lax.dynamic_slice(x, (np.int32(5), np.int32(-2)), (2, 2)), (3, 4)),
    "dynamic_update_slice": (lambda x: lax.dynamic_update_slice(x, lax.slice(x, (0, 0), (2, 2)) * 3.0, (1, 9)), (3, 4)),
    "helpers": (lambda x: lax.dynamic_update_index_in_dim(
        x, lax.integer_pow(lax.index_in_dim(x, 0, 0, False), 2), np.int32(2), 0), (3, 4)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_grads(name):
    f, shape = GRAD_CASES[name]
    x = np.random.default_rng(8).standard_normal(shape)
    check_grads(f, (x,), order=2)


def test_grads_in_padding_value_and_update():
    rng = np.random.default_rng(9)
    x, u = rng.standard_normal((3, 2)), rng.standard_normal((2, 2))
    check_grads(lambda x, p: lax.pad(x, p, ((1, -1, 1), (2, 0, 0))), (x, np.float64(0.3)), order=2)
    check_grads(lambda x, u: lax.dynamic_update_slice(x, u, (np.int32(-1), 0)), (x, u), order=2)


def test_integer_tangents_are_zero():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    _, t = ember.jvp(lambda v: lax.dynamic_slice(v, (1, 1), (1, 2)), (x,),
                     (np.zeros((2, 3), ember.dtypes.float0),))
    assert np.asarray(t).dtype == ember.dtypes.float0


# --- transposes: <ct, f(x)> == <f^T(ct), x> ----------------------------------------------

@SMALL
@given(case=pad_case())
def test_pad_transpose_dot_product(case):
    shape, config = case
    dot_product_test(lambda x, p: lax.pad(x, p, config), [shape, ()])


@SMALL
@given(case=slice_case())
def test_slice_transpose_dot_product(case):
    shape, start, limit, strides = case
    dot_product_test(lambda x: lax.slice(x, start, limit, strides), [shape])


@SMALL
@given(case=dyn_case())
def test_dynamic_transposes_dot_product(case):
    shape, sizes, starts = case
    idx = [np.int32(s) for s in starts]
    dot_product_test(lambda x: lax.dynamic_slice(x, idx, sizes), [shape])
    dot_product_test(lambda x, u: lax.dynamic_update_slice(x, u, idx), [shape, sizes])


def test_movement_transposes_dot_product():
    dot_product_test(lambda a, b, c: lax.concatenate([a, b, c], 1), [(2, 1), (2, 0), (2, 3)])
    dot_product_test(lambda x: lax.squeeze(x, (0, 2)), [(1, 3, 1)])
    dot_product_test(lambda x: lax.expand_dims(x, (1,)), [(3, 2)])
    dot_product_test(lambda x: lax.rev(x, (1,)), [(3, 2)])


def test_transpose_rules_directly():
    """The rules themselves, called with UndefinedPrimal, on concrete cotangents."""
    rng = np.random.default_rng(10)
    x = rng.standard_normal((4, 5))
    ct = rng.standard_normal((2, 3))
    ux = UndefinedPrimal(get_aval(x))
    (got, i0, i1) = S.dynamic_slice_p.transpose(ct, ux, np.int32(3), np.int32(1), slice_sizes=(2, 3))
    want = np.zeros((4, 5))
    want[2:4, 1:4] = ct
    np.testing.assert_array_equal(got, want)
    assert i0 is None and i1 is None
    (ct_x, ct_p) = S.pad_p.transpose(rng.standard_normal((8,)), UndefinedPrimal(get_aval(np.ones(3))),
                                     UndefinedPrimal(get_aval(np.float64(0))),
                                     padding_config=((1, 2, 1),))
    assert np.asarray(ct_x).shape == (3,) and np.asarray(ct_p).shape == ()


# --- vmap ------------------------------------------------------------------------------

@pytest.mark.parametrize("bdim", [0, 1, 2])
def test_vmap_static_ops(bdim):
    rng = np.random.default_rng(11)
    x = np.moveaxis(rng.standard_normal((3, 1, 4)), 0, bdim)
    check_vmap(lambda v: lax.squeeze(v, (0,)), (x,), in_axes=bdim)
    check_vmap(lambda v: lax.expand_dims(v, (0, 2, 4)), (x,), in_axes=bdim)
    check_vmap(lambda v: lax.rev(v, (1,)), (x,), in_axes=bdim)
    check_vmap(lambda v: lax.pad(v, 1.5, ((1, 0, 1), (-1, 2, 0))), (x,), in_axes=bdim)
    check_vmap(lambda v: lax.slice(v, (0, 1), (1, 4), (1, 2)), (x,), in_axes=bdim)
    check_vmap(lambda v, w: lax.concatenate([v, w, v], 1), (x, rng.standard_normal((1, 2))),
               in_axes=(bdim, None))
    check_vmap(lambda v: lax.dynamic_slice(v, (0, -1), (1, 2)), (x,), in_axes=bdim)
    check_vmap(lambda v, u: lax.dynamic_update_slice(v, u, (0, 2)), (x, np.ones((1, 3))),
               in_axes=(bdim, None))
    u = np.moveaxis(rng.standard_normal((3, 1, 2)), 0, bdim)
    check_vmap(lambda v, w: lax.dynamic_update_slice(v, w, (0, 1)), (x, u), in_axes=(bdim, bdim))
    check_vmap(lambda v, w: lax.dynamic_update_slice(v, w, (0, 1)), (x[(slice(None),) * bdim + (0,)], u),
               in_axes=(None, bdim))


def test_vmap_batched_padding_value():
    rng = np.random.default_rng(12)
    x, p = rng.standard_normal((2, 4, 3)), rng.standard_normal(4)
    cfg = ((1, -1, 1), (0, 2, 2))
    check_vmap(lambda v, q: lax.pad(v, q, cfg), (x, p), in_axes=(1, 0))
    check_vmap(lambda v, q: lax.pad(v, q, cfg), (x[:, 0], p), in_axes=(None, 0))
    check_grads(lambda v, q: ember.vmap(lambda a, b: lax.pad(a, b, cfg), in_axes=(1, 0))(v, q),
                (x, p), order=1)


@SMALL
@given(case=dyn_case(), data=st.data())
def test_vmap_batched_starts_hypothesis(case, data):
    shape, sizes, starts = case
    nd = len(shape)
    rng = np.random.default_rng(13)
    B = 3
    batched = data.draw(st.lists(st.booleans(), min_size=nd, max_size=nd))
    xb = data.draw(st.booleans())
    xdim = data.draw(st.integers(0, nd)) if xb else None
    x = rand(rng, shape, np.float64)
    if xb:
        x = np.stack([x + k for k in range(B)], xdim)
    idx = [np.array([s - k for k in range(B)], np.int32) if b else np.int32(s)
           for s, b in zip(starts, batched)]
    axes = (xdim,) + tuple(0 if b else None for b in batched)
    if all(a is None for a in axes):
        return
    check_vmap(lambda v, *i: lax.dynamic_slice(v, i, sizes), (x, *idx), in_axes=axes)
    u = rand(rng, (B,) + sizes, np.float64)
    check_vmap(lambda v, w, *i: lax.dynamic_update_slice(v, w, i), (x, u, *idx),
               in_axes=(xdim, 0) + axes[1:])


def test_grad_through_vmap_of_batched_starts():
    rng = np.random.default_rng(14)
    x = rng.standard_normal((4, 5))
    i = np.array([0, 3, -1, 9], np.int32)

    def f(x, u):
        def g(row, k, w):
            s = lax.reduce_sum(lax.dynamic_slice(row, (k,), (2,)), (0,))
            return lax.dynamic_update_slice(row, w, (k,)) * s
        return ember.vmap(g, in_axes=(0, 0, 0))(x, i, u)
    check_grads(f, (x, rng.standard_normal((4, 2))), order=2)
    check_grads(lambda x: ember.vmap(lambda k: lax.dynamic_slice(x, (k, 1), (2, 3)))(i), (x,), order=2)


def test_nested_vmap():
    rng = np.random.default_rng(15)
    x = rng.standard_normal((2, 3, 6))
    i = np.array([[0, 1, 4], [5, -1, 2]], np.int32)
    f = ember.vmap(ember.vmap(lambda r, k: lax.dynamic_slice(r, (k,), (2,))), in_axes=(0, 0))
    got = np.asarray(f(x, i))
    for a in range(2):
        for b in range(3):
            k = clamp_start(i[a, b], 6, 2)
            np.testing.assert_array_equal(got[a, b], x[a, b, k:k + 2])
