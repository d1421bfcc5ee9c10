"""Products vs numpy: matmul (batch broadcasting, 1-D operands), vecdot, tensordot, dot,
inner, outer, vdot, kron and einsum (including ellipsis, repeated labels, broadcasting)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import ember
import ember.dtypes as dt
import ember.numpy as enp
from ember.fx.ir import typecheck

from enp_strategies import arrays, assert_close

SET = settings(max_examples=20, deadline=None)
DT = st.sampled_from([dt.float32, dt.float64, dt.int32, dt.complex64, dt.int8])


def _tol(d):
    return {dt.float32: 1e-4, dt.complex64: 1e-4, dt.float64: 1e-10}.get(np.dtype(d))


def _ref(fn, *xs):
    with np.errstate(all="ignore"):
        return np.asarray(fn(*xs))


def _arr(data, d, shape):
    return data.draw(arrays(d, shape, special=False, lo=-5, hi=5))


@SET
@given(data=st.data())
def test_matmul(data):
    d1, d2 = data.draw(DT), data.draw(DT)
    m, k, n = (data.draw(st.integers(0, 3)) for _ in range(3))
    batch = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2,
                                                        max_side=3))
    sa = batch.input_shapes[0] + (m, k)
    sb = batch.input_shapes[1] + (k, n)
    if data.draw(st.booleans()):
        sa = (k,)
    elif data.draw(st.booleans()):
        sb = (k,)
    a, b = _arr(data, d1, sa), _arr(data, d2, sb)
    rd = dt.result_type(d1, d2)
    got = enp.matmul(enp.asarray(a), enp.asarray(b))
    assert_close(got, _ref(np.matmul, a.astype(rd), b.astype(rd)), rd, rtol=_tol(rd), atol=_tol(rd))
    assert_close(enp.asarray(a) @ enp.asarray(b), _ref(np.matmul, a.astype(rd), b.astype(rd)), rd,
                 rtol=_tol(rd), atol=_tol(rd))


def test_matmul_errors():
    with pytest.raises(TypeError, match=r"matmul.*\(2, 3\).*\(4, 5\)"):
        enp.matmul(enp.ones((2, 3)), enp.ones((4, 5)))
    with pytest.raises(ValueError, match="1-D"):
        enp.matmul(enp.ones(()), enp.ones(3))
    with pytest.raises(TypeError, match="matmul"):
        enp.matmul(enp.ones((2, 2, 3)), enp.ones((3, 3, 4)))


@SET
@given(data=st.data())
def test_vecdot_tensordot_dot(data):
    d = data.draw(DT)
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3))
    a = _arr(data, d, shape)
    k = data.draw(st.integers(1, len(shape)))
    bshape = tuple(1 if data.draw(st.booleans()) else s for s in shape[len(shape) - k:-1])
    b = _arr(data, d, bshape + shape[-1:])
    try:
        want = np.vecdot(a, b)
    except ValueError:
        want = None
    if want is not None:
        assert_close(enp.vecdot(enp.asarray(a), enp.asarray(b)), np.asarray(want), d,
                     rtol=_tol(d), atol=_tol(d))
    # tensordot: last axis of a with first of a compatible b
    c = _arr(data, d, (shape[-1], 2))
    assert_close(enp.tensordot(enp.asarray(a), enp.asarray(c), axes=1),
                 _ref(np.tensordot, a, c, 1), d, rtol=_tol(d), atol=_tol(d))
    assert_close(enp.tensordot(enp.asarray(a), enp.asarray(a), axes=a.ndim),
                 _ref(np.tensordot, a, a, a.ndim), d, rtol=_tol(d), atol=_tol(d))
    assert_close(enp.tensordot(enp.asarray(c), enp.asarray(c), axes=([0], [0])),
                 _ref(np.tensordot, c, c, ([0], [0])), d, rtol=_tol(d), atol=_tol(d))
    assert_close(enp.dot(enp.asarray(a), enp.asarray(c)), _ref(np.dot, a, c), d,
                 rtol=_tol(d), atol=_tol(d))
    assert_close(enp.inner(enp.asarray(a), enp.asarray(a)), _ref(np.inner, a, a), d,
                 rtol=_tol(d), atol=_tol(d))
    assert_close(enp.outer(enp.asarray(a), enp.asarray(c)), _ref(np.outer, a, c), d,
                 rtol=_tol(d), atol=_tol(d))
    assert_close(enp.vdot(enp.asarray(a), enp.asarray(a)), _ref(np.vdot, a, a), d,
                 rtol=_tol(d), atol=_tol(d))
    assert_close(enp.kron(enp.asarray(a), enp.asarray(c)), _ref(np.kron, a, c), d,
                 rtol=_tol(d), atol=_tol(d))


def test_vecdot_conjugates_and_axis():
    a = np.array([[1 + 2j, 3j], [1, 1]], np.complex64)
    np.testing.assert_allclose(np.asarray(enp.vecdot(enp.asarray(a), enp.asarray(a), axis=0)),
                               np.vecdot(a, a, axis=0))
    assert enp.dot(enp.asarray(2.0), enp.asarray([1.0, 2.0])).tolist() == [2.0, 4.0]


_EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("bij,bjk->bik", [(5, 2, 3), (5, 3, 2)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (4, 3, 2)]),
    ("...i,...i", [(2, 3), (3,)]),
    ("ijk,kji->", [(2, 3, 4), (4, 3, 2)]),
    ("iij->j", [(3, 3, 2)]),
    ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 5)]),
    ("ab,cd,bd->ac", [(2, 3), (4, 5), (3, 5)]),
    ("i,i,i->i", [(3,), (3,), (3,)]),
    ("ij,ij->ij", [(1, 3), (2, 3)]),
    ("...", [(2, 3)]),
    ("i...->...", [(2, 3, 4)]),
    ("j,ij->i", [(0,), (2, 0)]),
]


@pytest.mark.parametrize("spec,shapes", _EINSUM, ids=[e[0] for e in _EINSUM])
def test_einsum(spec, shapes):
    rng = np.random.default_rng(0)
    ops = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    got = enp.einsum(spec, *[enp.asarray(o) for o in ops])
    want = np.einsum(spec, *ops)
    assert_close(got, np.asarray(want).astype(np.float32), dt.float32, rtol=1e-4, atol=1e-4)


def test_einsum_dtypes_and_errors():
    a = enp.asarray(np.arange(6, dtype=np.int8).reshape(2, 3))
    b = enp.asarray(np.ones((3, 2), np.float32))
    assert enp.einsum("ij,jk->ik", a, b).dtype == dt.float32
    assert enp.einsum("ij,jk->ik", a, a.T, preferred_element_type="int32").dtype == dt.int32
    with pytest.raises(ValueError, match="subscripts"):
        enp.einsum("ij,jk->ik", a)
    with pytest.raises(TypeError, match="label 'j'"):
        enp.einsum("ij,jk->ik", a, a)
    with pytest.raises(ValueError, match="output label"):
        enp.einsum("ij->k", a)


def test_products_under_make_graph_and_grad():
    x = enp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    w = enp.asarray(np.ones((3, 2), np.float32))

    def f(x, w):
        return (enp.einsum("ij,jk->ik", x, w) + x @ w + enp.tensordot(x, w, 1)).sum() \
            + enp.vecdot(x, x).sum()
    typecheck(ember.make_graph(f)(x, w))
    gx = ember.grad(f)(x, w)
    want = 3 * np.ones((2, 3)) * 2 + 2 * np.asarray(x)
    np.testing.assert_allclose(np.asarray(gx), want, rtol=1e-6)
    out = ember.vmap(lambda r: enp.matmul(r, w))(x)
    np.testing.assert_allclose(np.asarray(out), np.asarray(x) @ np.ones((3, 2)))
