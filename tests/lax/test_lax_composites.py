"""The jax.lax names that compose other primitives (ember/lax_composites.py): values
against numpy, shapes and dtypes as JAX gives them, derivatives where they have
any, and clear errors."""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.testing import check_grads

RNG = np.random.default_rng(0)


def test_creation():
    assert lax.full((2, 3), 2.5).dtype == np.float32
    np.testing.assert_array_equal(lax.full(3, 7, dtype=np.int8), np.full(3, 7, np.int8))
    assert lax.full((), True).dtype == np.bool_
    z = lax.full_like(np.zeros((2, 2), np.float16), 3)
    assert z.dtype == np.float16 and z.shape == (2, 2)
    assert lax.full_like(np.zeros(2), 1, dtype=np.int32, shape=(4,)).tolist() == [1, 1, 1, 1]
    np.testing.assert_array_equal(lax.empty((2, 1), np.int32), np.zeros((2, 1), np.int32))
    np.testing.assert_array_equal(lax.broadcasted_iota(np.int32, (2, 3), 1), np.indices((2, 3))[1])
    np.testing.assert_array_equal(lax.iota(np.int32, 4), np.arange(4))  # JAX's lax.iota(dtype, size)
    with pytest.raises(TypeError, match="fill_value must be a scalar, got an array of shape"):
        lax.full((2,), np.ones(2))


def test_shape_functions_match_numpy():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(lax.broadcast(x, (5,)), np.broadcast_to(x, (5, 2, 3, 4)))
    assert lax.broadcast_to_rank(x, 5).shape == (1, 1, 2, 3, 4)
    assert lax.broadcast_to_rank(x, 2).shape == x.shape
    np.testing.assert_array_equal(lax.collapse(x, 1), x.reshape(2, 12))
    np.testing.assert_array_equal(lax.collapse(x, 0, 2), x.reshape(6, 4))
    parts = lax.split(x, (1, 0, 3), axis=2)
    for got, want in zip(parts, np.split(x, [1, 1], axis=2)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(lax.stack([x, x + 1], axis=-1), np.stack([x, x + 1], -1))
    for got, want in zip(lax.unstack(x, 1), [x[:, i] for i in range(3)]):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(lax.tile(x, (2, 1, 3)), np.tile(x, (2, 1, 3)))
    with pytest.raises(ValueError, match=r"split: sizes \(1, 1\) must be non-negative and add up to 4"):
        lax.split(x, (1, 1), axis=2)
    with pytest.raises(ValueError, match="tile: reps"):
        lax.tile(x, (2,))


def test_select_reciprocal_and_barrier():
    p = np.array([True, False, True])
    a, b = np.arange(3.0, dtype=np.float32), -np.ones(3, np.float32)
    np.testing.assert_array_equal(lax.select(p, a, b), np.where(p, a, b))
    with pytest.raises(TypeError, match="select: pred must be bool, got int32"):
        lax.select(np.array([1, 0, 1], np.int32), a, b)
    np.testing.assert_array_equal(lax.reciprocal(np.array([2.0, 4.0], np.float32)), [0.5, 0.25])
    tree = {"w": enp.ones(2)}
    assert lax.optimization_barrier(tree) is tree
    # jax.lax.stop_gradient, under every transform
    assert float(ember.grad(lambda v: v * lax.stop_gradient(v))(3.0)) == 3.0


def test_conv_shorthands_equal_conv_general_dilated():
    x = RNG.standard_normal((2, 3, 7, 6)).astype(np.float32)
    w = RNG.standard_normal((4, 3, 3, 2)).astype(np.float32)
    np.testing.assert_allclose(lax.conv(x, w, (2, 1), "SAME"),
                               lax.conv_general_dilated(x, w, (2, 1), "SAME"), rtol=1e-6)
    np.testing.assert_allclose(
        lax.conv_with_general_padding(x, w, (1, 1), [(1, 0), (2, 2)], (2, 1), (1, 2)),
        lax.conv_general_dilated(x, w, (1, 1), [(1, 0), (2, 2)], (2, 1), (1, 2)), rtol=1e-6)


def test_scatter_sub_and_its_gradient():
    dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    idx = np.array([[0], [2], [0]], np.int32)
    x, u = np.arange(4.0), np.array([1.0, 2.0, 3.0])
    want = x.copy()
    np.subtract.at(want, idx[:, 0], u)
    np.testing.assert_array_equal(lax.scatter_sub(x, idx, u, dn), want)
    check_grads(lambda x, u: lax.scatter_sub(x, idx, u, dn) ** 2, (x, u), order=2)
    # unsigned integers wrap as a subtraction would
    got = lax.scatter_sub(np.zeros(3, np.uint8), idx, np.array([1, 2, 3], np.uint8), dn)
    assert got.tolist() == [252, 0, 254]


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_top_k_and_approx_k_along_an_axis(axis):
    x = RNG.standard_normal((4, 5, 6)).astype(np.float32)
    x[1, 2, 3] = x[1, 2, 4] = x[1, 1, 3]  # ties
    k = 3
    order = np.argsort(-x, axis=axis, kind="stable")
    want_i = np.take(order, np.arange(k), axis=axis)
    v, i = lax.top_k(x, k, axis=axis)
    np.testing.assert_array_equal(i, want_i)
    np.testing.assert_array_equal(v, np.take_along_axis(x, want_i, axis))
    v2, i2 = lax.approx_max_k(x, k, reduction_dimension=axis)
    np.testing.assert_array_equal(i2, i)
    asc = np.take(np.argsort(x, axis=axis, kind="stable"), np.arange(k), axis=axis)
    v3, i3 = lax.approx_min_k(x, k, reduction_dimension=axis)
    np.testing.assert_array_equal(i3, asc)
    np.testing.assert_array_equal(v3, np.take_along_axis(x, asc, axis))
    assert i3.dtype == np.int32


def test_top_k_axis_under_grad_and_vmap():
    x = RNG.standard_normal((3, 5))
    check_grads(lambda v: lax.top_k(v, 2, axis=0)[0], (x,), order=2)
    got = ember.vmap(lambda v: lax.top_k(v, 2, axis=0)[1], in_axes=1)(x)
    np.testing.assert_array_equal(got, np.argsort(-x, axis=0, kind="stable")[:2].T)
    with pytest.raises(ValueError, match="top_k: axis 2 is out of range"):
        lax.top_k(x, 1, axis=2)


def test_special_function_names():
    import scipy.special as sp
    x = np.array([0.5, 2.0, 30.0])
    np.testing.assert_allclose(lax.bessel_i0e(x), sp.i0e(x), rtol=1e-12)
    np.testing.assert_allclose(lax.bessel_i1e(x), sp.i1e(x), rtol=1e-12)
    np.testing.assert_allclose(lax.zeta(np.array([2.0, 3.5]), np.array([1.0, 2.0])),
                               sp.zeta([2.0, 3.5], [1.0, 2.0]), rtol=1e-12)
    a, z = np.array([0.5, 2.0, 7.0]), np.array([0.3, 2.5, 4.0])
    np.testing.assert_allclose(lax.igamma(a, z), sp.gammainc(a, z), rtol=1e-12)
    np.testing.assert_allclose(lax.igammac(a, z), sp.gammaincc(a, z), rtol=1e-12)
    np.testing.assert_allclose(lax.betainc(a, a + 1, z / 5), sp.betainc(a, a + 1, z / 5), rtol=1e-12)
