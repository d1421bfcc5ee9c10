"""convolve, correlate, polyval, polyfit, gradient and linalg.multi_dot against numpy, under
jit / vmap, and their derivatives against finite differences."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember.testing import check_grads, check_vmap


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.sampled_from(["full", "same", "valid"]),
       st.sampled_from(["float64", "complex128", "int32"]))
def test_convolve_correlate_match_numpy(n, m, mode, dtype):
    r = np.random.default_rng(n * 16 + m)
    if dtype == "int32":
        a, v = r.integers(-5, 5, size=n).astype(dtype), r.integers(-5, 5, size=m).astype(dtype)
    else:
        a, v = r.normal(size=n), r.normal(size=m)
        if dtype == "complex128":
            a, v = a + 1j * r.normal(size=n), v + 1j * r.normal(size=m)
    for ours, ref in ((enp.convolve, np.convolve), (enp.correlate, np.correlate)):
        got = ours(a, v, mode)
        want = ref(a, v, mode)
        assert got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
        if dtype == "int32":
            assert got.dtype == enp.int32
    assert enp.correlate(a, v).shape == np.correlate(a, v).shape  # numpy's default: "valid"


def test_convolve_transforms_and_errors():
    r = np.random.default_rng(0)
    a, v = r.normal(size=6), r.normal(size=3)
    np.testing.assert_allclose(np.asarray(ember.jit(enp.convolve)(a, v)), np.convolve(a, v))
    check_grads(lambda a, v: enp.convolve(a, v, "same"), (a, v), order=2)
    check_grads(lambda a, v: enp.correlate(a, v, "full"), (a, v), order=1)
    check_vmap(lambda a: enp.convolve(a, v), (r.normal(size=(3, 6)),))
    with pytest.raises(ValueError, match="mode must be one of"):
        enp.convolve(a, v, "wide")
    with pytest.raises(ValueError, match="must be 1-D"):
        enp.convolve(np.ones((2, 2)), v)
    with pytest.raises(ValueError, match="cannot be empty"):
        enp.correlate(a, np.ones(0))


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(0, 3))
def test_polyval_matches_numpy(deg, xdim):
    r = np.random.default_rng(deg * 4 + xdim)
    p = r.normal(size=deg)
    x = r.normal(size=(3,) * xdim)
    np.testing.assert_allclose(np.asarray(enp.polyval(p, x)), np.polyval(p, x), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(ember.jit(enp.polyval)(p, x)), np.polyval(p, x),
                               rtol=1e-12)


def test_polyval_grads_vmap():
    r = np.random.default_rng(3)
    p, x = r.normal(size=4), r.normal(size=5)
    check_grads(enp.polyval, (p, x), order=2)
    check_vmap(lambda p: enp.polyval(p, x), (r.normal(size=(3, 4)),))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 4), st.integers(6, 12), st.booleans(), st.booleans())
def test_polyfit_matches_numpy(deg, n, weighted, two_d):
    r = np.random.default_rng(deg * 100 + n)
    x = np.sort(r.uniform(-2, 2, size=n))
    y = r.normal(size=(n, 2)) if two_d else r.normal(size=n)
    w = r.uniform(0.5, 1.5, size=n) if weighted else None
    np.testing.assert_allclose(np.asarray(enp.polyfit(x, y, deg, w=w)),
                               np.polyfit(x, y, deg, w=w), rtol=1e-8, atol=1e-10)
    c, C = enp.polyfit(x, y, deg, w=w, cov=True)
    cr, Cr = np.polyfit(x, y, deg, w=w, cov=True)
    np.testing.assert_allclose(np.asarray(C), Cr, rtol=1e-7, atol=1e-10)
    got, want = enp.polyfit(x, y, deg, full=True), np.polyfit(x, y, deg, full=True)
    for g, wv in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), wv, rtol=1e-7, atol=1e-10)


def test_polyfit_grads_and_errors():
    x = np.linspace(-1, 1, 8)
    y = np.cos(x)
    check_grads(lambda y: enp.polyfit(x, y, 2), (y,), order=1)
    assert np.allclose(np.asarray(ember.jit(lambda y: enp.polyfit(x, y, 2))(y)),
                       np.polyfit(x, y, 2))
    with pytest.raises(ValueError, match="non-negative"):
        enp.polyfit(x, y, -1)
    with pytest.raises(TypeError, match="len\\(x\\)"):
        enp.polyfit(x, y[:3], 1)


@settings(max_examples=25, deadline=None)
@given(st.integers(3, 7), st.integers(3, 6), st.sampled_from([1, 2]),
       st.sampled_from(["none", "scalar", "coords"]))
def test_gradient_matches_numpy(n0, n1, edge_order, spacing):
    r = np.random.default_rng(n0 * 10 + n1)
    f = r.normal(size=(n0, n1))
    if spacing == "none":
        args = ()
    elif spacing == "scalar":
        args = (0.5,)
    else:
        args = (np.cumsum(r.uniform(0.1, 1, size=n0)), np.cumsum(r.uniform(0.1, 1, size=n1)))
    got = enp.gradient(f, *args, edge_order=edge_order)
    want = np.gradient(f, *args, edge_order=edge_order)
    assert isinstance(got, tuple) and len(got) == 2
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-12)
    one = enp.gradient(f, *args[1:], axis=-1, edge_order=edge_order)
    np.testing.assert_allclose(np.asarray(one), np.gradient(f, *args[1:], axis=-1,
                                                            edge_order=edge_order), rtol=1e-10)


def test_gradient_transforms_and_errors():
    f = np.sin(np.linspace(0, 3, 9))
    np.testing.assert_allclose(np.asarray(ember.jit(enp.gradient)(f)), np.gradient(f))
    check_grads(lambda f: enp.gradient(f, 0.3, edge_order=2), (f,), order=1)
    check_vmap(enp.gradient, (np.ones((3, 5)) * np.arange(5.0) ** 2,))
    assert enp.gradient(enp.arange(4) ** 2).dtype == enp.float32  # int32 -> float32
    with pytest.raises(ValueError, match="edge_order=2 needs at least 3"):
        enp.gradient(np.ones(2), edge_order=2)
    with pytest.raises(TypeError, match="spacings"):
        enp.gradient(np.ones((3, 3)), 1.0, 2.0, 3.0)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=3, max_size=6), st.booleans(), st.booleans())
def test_multi_dot_matches_numpy(dims, first_vec, last_vec):
    r = np.random.default_rng(sum(dims))
    mats = [r.normal(size=(dims[i], dims[i + 1])) for i in range(len(dims) - 1)]
    if first_vec:
        mats = [r.normal(size=dims[0])] + mats
    if last_vec:
        mats = mats + [r.normal(size=dims[-1])]
    got = enp.linalg.multi_dot(mats)
    want = np.linalg.multi_dot(mats)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-10)


def test_multi_dot_grads_and_errors():
    r = np.random.default_rng(0)
    a, b, c = r.normal(size=(2, 3)), r.normal(size=(3, 4)), r.normal(size=4)
    check_grads(lambda a, b, c: enp.linalg.multi_dot([a, b, c]), (a, b, c), order=1)
    with pytest.raises(ValueError, match="do not chain"):
        enp.linalg.multi_dot([a, a, b])
    with pytest.raises(ValueError, match="at least two"):
        enp.linalg.multi_dot([a])
