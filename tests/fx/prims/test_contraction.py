"""Tests of dot_general and its wrappers: values vs numpy, abstract eval, staging,
derivatives, transposes and vmap."""
import string

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember import dtypes as _dt
from ember import lax
from ember.fx.core import UndefinedPrimal, get_aval
from ember.fx.ir import typecheck
from ember.fx.prims.contraction import dot_general_p
from ember.testing import check_grads, check_vmap

DTYPES = [_dt.bool_, _dt.int8, _dt.int32, _dt.uint8, _dt.int64, _dt.float16, _dt.bfloat16,
          _dt.float32, _dt.float64, _dt.complex64]

# (lhs shape, rhs shape, dimension_numbers)
CASES = [
    ((3, 4), (4, 5), (((1,), (0,)), ((), ()))),
    ((4, 3), (4, 5), (((0,), (0,)), ((), ()))),            # lhs transposed
    ((3, 4), (5, 4), (((1,), (1,)), ((), ()))),            # rhs transposed
    ((4,), (4,), (((0,), (0,)), ((), ()))),                # inner product
    ((3,), (5,), (((), ()), ((), ()))),                    # outer product
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),  # batch matmul
    ((3, 2, 4, 6), (6, 5, 2, 4), (((3, 2), (0, 3)), ((1,), (2,)))),  # scrambled
    ((2, 3, 4), (4, 3, 2), (((1,), (1,)), ((0, 2), (2, 0)))),  # two batch dims, reordered
    ((0, 4), (4, 5), (((1,), (0,)), ((), ()))),            # size-0 free dim
    ((3, 0), (0, 5), (((1,), (0,)), ((), ()))),            # size-0 contraction
    ((2, 0, 3), (2, 3, 4), (((2,), (1,)), ((0,), (0,)))),
]


def _rand(rng, shape, dtype):
    if dtype == _dt.bool_:
        return rng.random(shape) < 0.5
    if _dt.is_integer(dtype):
        lo = 0 if np.dtype(dtype).kind == "u" else -3
        return rng.integers(lo, 4, size=shape).astype(dtype)
    if _dt.kind(dtype) == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _einsum_ref(lhs, rhs, dn):
    """Reference via np.einsum with letters built from the dimension numbers."""
    (lc, rc), (lb, rb) = dn
    letters = iter(string.ascii_letters)
    ls = [next(letters) for _ in range(lhs.ndim)]
    rs = [None] * rhs.ndim
    for a, b in zip(lc + lb, rc + rb):
        rs[b] = ls[a]
    rs = [c if c is not None else next(letters) for c in rs]
    lf = [ls[d] for d in range(lhs.ndim) if d not in lc + lb]
    rf = [rs[d] for d in range(rhs.ndim) if d not in rc + rb]
    out = "".join([ls[d] for d in lb] + lf + rf)
    wide = lambda x: x.astype(np.float64) if x.dtype in (_dt.float16, _dt.bfloat16) else x  # noqa
    return np.einsum(f"{''.join(ls)},{''.join(rs)}->{out}", wide(lhs), wide(rhs))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("ls,rs,dn", CASES)
def test_values_vs_einsum(ls, rs, dn, dtype):
    rng = np.random.default_rng(0)
    x, y = _rand(rng, ls, dtype), _rand(rng, rs, dtype)
    got = lax.dot_general(x, y, dn)
    aval = dot_general_p.abstract_eval(get_aval(x), get_aval(y), dimension_numbers=dn)
    raw = dot_general_p.impl(x, y, dimension_numbers=dn)
    assert raw.shape == aval.shape and raw.dtype == aval.dtype
    assert got.shape == aval.shape and got.dtype == dtype
    if dtype == _dt.bool_:
        exp = _einsum_ref(x.astype(np.int64), y.astype(np.int64), dn) > 0
        np.testing.assert_array_equal(np.asarray(got), exp)
    elif _dt.is_integer(dtype):
        np.testing.assert_array_equal(np.asarray(got), _einsum_ref(x, y, dn).astype(dtype))
    else:
        tol = {_dt.float16: 1e-2, _dt.bfloat16: 3e-2}.get(dtype, 1e-5)
        exp = _einsum_ref(x, y, dn)
        np.testing.assert_allclose(np.asarray(got).astype(exp.dtype), exp, rtol=tol, atol=tol)


def test_half_precision_accumulates_in_float32():
    # 4096 ones summed in float16 stall at 2048; accumulating in float32 is exact.
    x = np.ones((1, 4096), np.float16)
    assert float(np.asarray(lax.dot(x, x.T))[0, 0]) == 4096.0
    xb = np.ones((1, 300), _dt.bfloat16)
    assert float(np.asarray(lax.dot(xb, xb.T))[0, 0]) == 300.0


@pytest.mark.parametrize("ind,outd", [(_dt.int8, _dt.int32), (_dt.float16, _dt.float32),
                                       (_dt.bfloat16, _dt.float32), (_dt.float32, _dt.float64),
                                       (_dt.bool_, _dt.int32)])
def test_preferred_element_type(ind, outd):
    rng = np.random.default_rng(1)
    x, y = _rand(rng, (3, 5), ind), _rand(rng, (5, 2), ind)
    if ind == _dt.int8:
        x = np.full((3, 5), 100, np.int8)  # would overflow int8
    got = lax.dot(x, y, preferred_element_type=outd)
    assert got.dtype == outd
    exp = x.astype(np.float64) @ y.astype(np.float64)
    np.testing.assert_allclose(np.asarray(got, np.float64), exp, rtol=1e-2)
    g = ember.make_graph(lambda a, b: lax.dot(a, b, preferred_element_type=outd))(x, y)
    typecheck(g)
    assert g.out_avals[0].dtype == outd


def test_mixed_dtypes_need_preferred_element_type():
    x, y = np.ones((2, 3), np.float32), np.ones((3, 2), np.float64)
    with pytest.raises(TypeError, match="same dtype"):
        lax.dot(x, y)
    assert lax.dot(x, y, preferred_element_type=np.float64).dtype == np.float64


def test_shape_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match="dot_general"):
        lax.dot_general(x, x, (((1,), (1,)), ((0,), (1,))))
    with pytest.raises(TypeError, match="different sizes"):
        lax.dot_general(x, x, (((1,), (0,)), ((), ())))
    with pytest.raises(TypeError, match="out of range"):
        lax.dot_general(x, x, (((2,), (1,)), ((), ())))
    with pytest.raises(TypeError, match="dot"):
        lax.dot(np.ones((2, 2, 2), np.float32), x)


def test_negative_dims_and_wrappers():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    np.testing.assert_allclose(np.asarray(lax.dot_general(a, b, (((-1,), (0,)), ((), ())))), a @ b)
    np.testing.assert_allclose(np.asarray(lax.dot(a, b)), a @ b)
    np.testing.assert_allclose(np.asarray(lax.dot(a[0], b)), a[0] @ b)
    np.testing.assert_allclose(np.asarray(lax.dot(a, b[:, 0])), a @ b[:, 0])
    np.testing.assert_allclose(np.asarray(lax.dot(a[0], b[:, 0])), a[0] @ b[:, 0])
    p, q = rng.standard_normal((2, 6, 3, 4)), rng.standard_normal((2, 6, 4, 5))
    np.testing.assert_allclose(np.asarray(lax.batch_matmul(p, q)), p @ q)
    with pytest.raises(TypeError, match="batch_matmul"):
        lax.batch_matmul(p, q[0])


@pytest.mark.parametrize("ls,rs,dn", [c for c in CASES if 0 not in c[0] + c[1]])
def test_staged_graph_typechecks(ls, rs, dn):
    x, y = np.ones(ls, np.float32), np.ones(rs, np.float32)
    g = ember.make_graph(lambda a, b: lax.dot_general(a, b, dn))(x, y)
    typecheck(g)
    assert [e.prim.name for e in g.equations] == ["dot_general"]
    # The derivative graphs typecheck too.
    gv = ember.make_graph(lambda a, b: ember.vjp(lambda u, v: lax.dot_general(u, v, dn), a, b)[1](
        lax.dot_general(a, b, dn)))(x, y)
    typecheck(gv)


@pytest.mark.parametrize("ls,rs,dn", CASES[:8])
def test_grads(ls, rs, dn):
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(ls), rng.standard_normal(rs)
    check_grads(lambda a, b: lax.dot_general(a, b, dn), (x, y), order=2)


def test_grads_preferred_element_type():
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)
    out, f_vjp = ember.vjp(lambda a, b: lax.dot(a, b, preferred_element_type=np.float64), x, y)
    assert out.dtype == np.float64
    ga, gb = f_vjp(np.ones((3, 2)))
    assert ga.dtype == np.float32 and gb.dtype == np.float32
    np.testing.assert_allclose(np.asarray(ga), np.ones((3, 2)) @ y.T, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(gb), x.T @ np.ones((3, 2)), rtol=1e-5)


def test_integer_dot_has_zero_tangent():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    dn = (((1,), (1,)), ((), ()))
    out, t = ember.jvp(lambda a: lax.dot_general(a, a, dn), (x,), (np.zeros((2, 3), _dt.float0),))
    assert np.asarray(t).dtype == _dt.float0


@pytest.mark.parametrize("ls,rs,dn", CASES)
def test_transpose_dot_product(ls, rs, dn):
    """<ct, dot(x, y)> == <T_x(ct), x> == <T_y(ct), y> for the rule called directly."""
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal(ls), rng.standard_normal(rs)
    out = np.asarray(lax.dot_general(x, y, dn))
    ct = rng.standard_normal(out.shape)
    params = dict(dimension_numbers=dn, preferred_element_type=None)
    tx, _ = dot_general_p.transpose(ct, UndefinedPrimal(get_aval(x)), y, **params)
    _, ty = dot_general_p.transpose(ct, x, UndefinedPrimal(get_aval(y)), **params)
    assert np.shape(tx) == x.shape and np.shape(ty) == y.shape
    ref = np.sum(ct * out)
    np.testing.assert_allclose(np.sum(np.asarray(tx) * x), ref, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.sum(np.asarray(ty) * y), ref, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("ls,rs,dn", [CASES[0], CASES[2], CASES[5], CASES[6], CASES[7]])
@pytest.mark.parametrize("axes", [(0, None), (None, 0), (0, 0), (-1, 1), (1, -1)])
def test_vmap(ls, rs, dn, axes):
    rng = np.random.default_rng(6)
    la, ra = axes

    def batched(shape, ax):
        if ax is None:
            return rng.standard_normal(shape)
        s = list(shape)
        s.insert(ax if ax >= 0 else len(s) + 1 + ax, 3)
        return rng.standard_normal(s)
    x, y = batched(ls, la), batched(rs, ra)
    check_vmap(lambda a, b: lax.dot_general(a, b, dn), (x, y), in_axes=axes, atol=1e-10)


def test_vmap_of_grad():
    rng = np.random.default_rng(7)
    w = rng.standard_normal((4, 3))
    xs = rng.standard_normal((5, 2, 4))
    f = ember.vmap(ember.grad(lambda w, x: lax.reduce_sum(lax.square(lax.dot(x, w)), (0, 1))),
                   in_axes=(None, 0))
    got = np.asarray(f(w, xs))
    exp = np.stack([2 * x.T @ (x @ w) for x in xs])
    np.testing.assert_allclose(got, exp, rtol=1e-10)


@st.composite
def _dot_problems(draw):
    nb = draw(st.integers(0, 2))
    nc = draw(st.integers(0, 2))
    nlf = draw(st.integers(0, 2))
    nrf = draw(st.integers(0, 2))
    size = st.integers(0, 3)
    bs = [draw(size) for _ in range(nb)]
    cs = [draw(size) for _ in range(nc)]
    lfs = [draw(size) for _ in range(nlf)]
    rfs = [draw(size) for _ in range(nrf)]
    lroles = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("f", i) for i in range(nlf)]
    rroles = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("f", i) for i in range(nrf)]
    lroles = draw(st.permutations(lroles))
    rroles = draw(st.permutations(rroles))

    def shape_of(roles, fs):
        return tuple(bs[i] if r == "b" else cs[i] if r == "c" else fs[i] for r, i in roles)
    lb = tuple(lroles.index(("b", i)) for i in range(nb))
    rb = tuple(rroles.index(("b", i)) for i in range(nb))
    lc = tuple(lroles.index(("c", i)) for i in range(nc))
    rc = tuple(rroles.index(("c", i)) for i in range(nc))
    return shape_of(lroles, lfs), shape_of(rroles, rfs), ((lc, rc), (lb, rb))


@settings(max_examples=20, deadline=None)
@given(_dot_problems(), st.sampled_from([_dt.int32, _dt.float32, _dt.float64]))
def test_hypothesis_values_and_transposes(problem, dtype):
    ls, rs, dn = problem
    rng = np.random.default_rng(8)
    x, y = _rand(rng, ls, dtype), _rand(rng, rs, dtype)
    got = lax.dot_general(x, y, dn)
    exp = _einsum_ref(x, y, dn)
    assert got.shape == exp.shape and got.dtype == dtype
    np.testing.assert_allclose(np.asarray(got), exp, rtol=1e-4, atol=1e-4)
    if dtype == _dt.float64:
        ct = rng.standard_normal(exp.shape)
        params = dict(dimension_numbers=dn, preferred_element_type=None)
        tx, _ = dot_general_p.transpose(ct, UndefinedPrimal(get_aval(x)), y, **params)
        _, ty = dot_general_p.transpose(ct, x, UndefinedPrimal(get_aval(y)), **params)
        np.testing.assert_allclose(np.sum(np.asarray(tx) * x), np.sum(ct * exp), atol=1e-8)
        np.testing.assert_allclose(np.sum(np.asarray(ty) * y), np.sum(ct * exp), atol=1e-8)
        if x.ndim:
            xs = np.stack([x, 2 * x], axis=x.ndim)
            check_vmap(lambda a, b: lax.dot_general(a, b, dn), (xs, y), in_axes=(x.ndim, None),
                       atol=1e-10)
