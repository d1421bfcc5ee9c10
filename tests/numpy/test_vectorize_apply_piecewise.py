"""vectorize (signature / excluded), apply_along_axis and piecewise against numpy, under
jit and grad."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember.testing import check_grads


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 3), max_size=3), st.lists(st.integers(1, 3), max_size=3))
def test_vectorize_broadcasts_like_numpy(s1, s2):
    r = np.random.default_rng(len(s1) * 7 + len(s2))
    try:
        np.broadcast_shapes(tuple(s1), tuple(s2))
    except ValueError:
        return
    a, b = r.normal(size=s1), r.normal(size=s2)
    f = lambda x, y: x * y + enp.sin(x)  # noqa: E731
    ref = np.vectorize(lambda x, y: x * y + np.sin(x))(a, b)
    got = enp.vectorize(f)(a, b)
    assert got.shape == np.shape(ref)
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-12)


def test_vectorize_signature_excluded_and_outputs():
    r = np.random.default_rng(0)
    A, v = r.normal(size=(2, 3, 4)), r.normal(size=4)
    mv = enp.vectorize(lambda M, x: M @ x, signature="(m,n),(n)->(m)")
    np.testing.assert_allclose(np.asarray(mv(A, v)), A @ v, rtol=1e-12)
    ref = np.vectorize(lambda M, x: M @ x, signature="(m,n),(n)->(m)")(A, v)
    np.testing.assert_allclose(np.asarray(mv(A, v)), ref, rtol=1e-12)
    # excluded positional and keyword arguments pass through unvectorised
    g = enp.vectorize(lambda x, p, scale=1.0: scale * x ** p, excluded={1, "scale"})
    np.testing.assert_allclose(np.asarray(g(A, 2, scale=3.0)), 3.0 * A ** 2, rtol=1e-12)
    # non-excluded keyword arguments are vectorised, as in numpy
    h = enp.vectorize(lambda x, y=0.0: x + y)
    np.testing.assert_allclose(np.asarray(h(v, y=A)), v + A)
    two = enp.vectorize(lambda x: (x, 2 * x), signature="()->(),()")
    a, b = two(v)
    np.testing.assert_allclose(np.asarray(b), 2 * v)
    norm = enp.vectorize(lambda x: enp.sqrt((x * x).sum()), signature="(n)->()")
    np.testing.assert_allclose(np.asarray(ember.jit(norm)(A)), np.linalg.norm(A, axis=-1))
    check_grads(norm, (A,), order=2)
    with pytest.raises(ValueError, match="core dimension 'n'"):
        mv(A, np.ones(3))
    with pytest.raises(ValueError, match="not a valid gufunc signature"):
        enp.vectorize(lambda x: x, signature="(n)->")
    with pytest.raises(ValueError, match="output 0 has core shape"):
        enp.vectorize(lambda x: x, signature="(n)->()")(A)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3), st.integers(-3, 2))
def test_apply_along_axis_matches_numpy(ndim, axis):
    axis = axis % ndim - ndim if axis < 0 else axis % ndim
    r = np.random.default_rng(ndim * 10 + axis)
    x = r.normal(size=(2, 3, 4)[:ndim])
    for fe, fn in ((lambda v: v.sum(), lambda v: v.sum()),
                   (lambda v: v[::-1] * 2, lambda v: v[::-1] * 2),
                   (lambda v: enp.outer(v, v), lambda v: np.outer(v, v))):
        got = enp.apply_along_axis(fe, axis, x)
        want = np.apply_along_axis(fn, axis, x)
        assert got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


def test_apply_along_axis_args_and_grad():
    x = np.arange(6.0).reshape(2, 3)
    got = enp.apply_along_axis(lambda v, p, q=0: (v ** p).sum() + q, 1, x, 2, q=1.0)
    np.testing.assert_allclose(np.asarray(got), (x ** 2).sum(1) + 1)
    check_grads(lambda x: enp.apply_along_axis(lambda v: (v * v).sum(), 0, x), (x,), order=2)


def test_piecewise_matches_numpy():
    x = np.linspace(-3, 3, 13)
    cases = [
        ([x < 0, x > 1], [lambda v: -v, lambda v: 10 * v, 5.0]),
        ([x < 0, x > 1], [lambda v: -v, lambda v: 10 * v]),
        (x < 0, [lambda v: -v, lambda v: v * 2]),
        ([x < 1, x < 0], [1.0, 2.0]),  # later conditions win
    ]
    for cond, funcs in cases:
        np.testing.assert_allclose(np.asarray(enp.piecewise(x, cond, funcs)),
                                   np.piecewise(x, cond, funcs))
    xi = np.arange(-3, 4, dtype=np.int32)
    got = enp.piecewise(xi, [xi < 0], [lambda v: v * 1.5])
    assert got.dtype == enp.int32
    assert got.tolist() == np.piecewise(xi, [xi < 0], [lambda v: v * 1.5]).tolist()
    f = lambda x: enp.piecewise(x, [x < 0], [lambda v: v * v, lambda v: 3 * v])  # noqa: E731
    check_grads(f, (np.array([-1.5, 0.5, 2.0]),), order=2)
    np.testing.assert_allclose(np.asarray(ember.jit(f)(x)), np.where(x < 0, x * x, 3 * x))
    with pytest.raises(ValueError, match="funclist has 3 entries"):
        enp.piecewise(x, [x < 0], [1.0, 2.0, 3.0])


def test_vectorize_otypes_cast_outputs():
    f = enp.vectorize(lambda x: x * 2, otypes="d")
    assert f(np.arange(3, dtype=np.int32)).dtype == enp.float64
    g = enp.vectorize(lambda x: (x, x > 0), otypes=[np.float32, np.int8], signature="()->(),()")
    a, b = g(np.array([-1.0, 2.0]))
    assert a.dtype == enp.float32 and b.dtype == enp.int8 and b.tolist() == [0, 1]
    with pytest.raises(ValueError, match="otypes has 2 entries for 1 outputs"):
        enp.vectorize(lambda x: x, otypes="dd")(np.ones(2))
