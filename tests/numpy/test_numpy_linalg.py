"""Tests of `ember.numpy.linalg`: values vs numpy.linalg, named results, dtypes, shapes
(incl. size-0 batches), staging, derivatives vs finite differences and vmap."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.numpy as enp
from ember import dtypes as _dt
from ember import lax
from ember.fx.ir import typecheck
from ember.testing import check_grads, check_vmap

LA = enp.linalg
DTYPES = [_dt.float32, _dt.float64, _dt.complex64, _dt.complex128]


def _rand(rng, shape, dtype=np.float64):
    x = rng.standard_normal(shape)
    if _dt.kind(dtype) == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _spd(rng, batch, n, dtype=np.float64):
    a = _rand(rng, batch + (n, n), dtype)
    return (a @ _H(a) + n * np.eye(n)).astype(dtype)


def _well(rng, batch, m, n, dtype=np.float64):
    k = min(m, n)
    u = np.linalg.qr(_rand(rng, batch + (m, m), dtype))[0][..., :, :k]
    v = np.linalg.qr(_rand(rng, batch + (n, n), dtype))[0][..., :, :k]
    return ((u * np.linspace(3.0, 1.0, k)) @ _H(v)).astype(dtype)


def _close(got, want, dtype, scale=1.0):
    t = (3e-4 if np.dtype(dtype) in (_dt.float32, _dt.complex64) else 1e-9) * scale
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=t, atol=t)


# --- factorizations and solves -------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("batch", [(), (2,), (0,), (2, 3)], ids=str)
def test_square_functions_vs_numpy(dtype, batch):
    rng = np.random.default_rng(0)
    a = _rand(rng, batch + (4, 4), dtype) + 2 * np.eye(4, dtype=dtype)
    spd = _spd(rng, batch, 4, dtype)
    b = _rand(rng, batch + (4, 2), dtype)
    _close(LA.det(a), np.linalg.det(a), dtype, 10)
    sign, logdet = LA.slogdet(a)
    s_np, l_np = np.linalg.slogdet(a)
    _close(sign, s_np, dtype, 10)
    _close(logdet, l_np, dtype, 10)
    _close(LA.inv(a), np.linalg.inv(a), dtype, 10)
    _close(LA.solve(a, b), np.linalg.solve(a, b), dtype, 10)
    _close(LA.cholesky(spd), np.linalg.cholesky(spd), dtype, 10)
    _close(LA.cholesky(spd, upper=True), _H(np.linalg.cholesky(spd)), dtype, 10)
    w, v = LA.eigh(spd)
    _close(w, np.linalg.eigvalsh(spd), dtype, 10)
    _close(spd @ np.asarray(v), np.asarray(v) * np.asarray(w)[..., None, :], dtype, 50)
    _close(LA.eigvalsh(spd), np.linalg.eigvalsh(spd), dtype, 10)
    assert LA.det(a).dtype == dtype and LA.inv(a).dtype == dtype
    assert logdet.dtype == _dt.real_dtype(dtype) and sign.dtype == dtype


def test_eigh_uplo_without_symmetrization():
    a = np.array([[2.0, 5.0], [1.0, 3.0]])
    for uplo in ("L", "U"):
        _close(LA.eigvalsh(a, UPLO=uplo, symmetrize_input=False), np.linalg.eigvalsh(a, UPLO=uplo),
               np.float64)
    with pytest.raises(ValueError, match="UPLO"):
        LA.eigh(a, UPLO="X")


def test_named_results():
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    r = LA.eigh(a)
    assert r.eigenvalues is r[0] and r.eigenvectors is r[1]
    q = LA.qr(a)
    assert q.Q is q[0] and q.R is q[1]
    s = LA.slogdet(a)
    assert s.sign is s[0] and s.logabsdet is s[1]
    u = LA.svd(a)
    assert u.U is u[0] and u.S is u[1] and u.Vh is u[2]
    e = LA.eig(a)
    assert e.eigenvalues is e[0] and e.eigenvectors is e[1]


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
def test_det_slogdet_edge_cases():
    sing = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert abs(LA.det(sing).item()) < 1e-12
    sign, logdet = LA.slogdet(sing)
    assert sign.item() == 0 and logdet.item() == -np.inf
    sign, logdet = LA.slogdet(np.array([[0.0, 1j], [1.0, 0.0]]))
    np.testing.assert_allclose(sign.item(), -1j)
    assert LA.det(np.zeros((0, 0))).item() == 1.0
    assert LA.det(np.zeros((0, 3, 3))).shape == (0,)
    perm = np.eye(3)[[2, 0, 1]]
    np.testing.assert_allclose(LA.det(perm).item(), 1.0)
    np.testing.assert_allclose(LA.det(np.eye(3)[[1, 0, 2]]).item(), -1.0)


def test_solve_shapes_and_broadcasting():
    rng = np.random.default_rng(1)
    a = _rand(rng, (3, 4, 4)) + 3 * np.eye(4)
    v = _rand(rng, (4,))
    _close(LA.solve(a, v), np.linalg.solve(a, v), np.float64)
    b = _rand(rng, (2, 1, 4, 5))
    _close(LA.solve(a, b), np.linalg.solve(a, b), np.float64)
    _close(LA.solve(a[0], b), np.linalg.solve(a[0], b), np.float64)
    with pytest.raises(TypeError, match="solve"):
        LA.solve(a, _rand(rng, (3,)))
    with pytest.raises(TypeError, match="square"):
        LA.solve(np.ones((2, 3)), np.ones(2))
    with pytest.raises(TypeError, match="square"):
        LA.inv(np.ones((2, 3)))
    with pytest.raises(TypeError, match="rank >= 2"):
        LA.det(np.ones(3))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 5, 3), (0, 3, 2)], ids=str)
def test_svd_qr_pinv_rank_vs_numpy(dtype, shape):
    rng = np.random.default_rng(2)
    a = _rand(rng, shape, dtype)
    for full in (True, False):
        u, s, vh = LA.svd(a, full_matrices=full)
        u_np, _, vh_np = np.linalg.svd(a, full_matrices=full)
        assert np.shape(u) == u_np.shape and np.shape(vh) == vh_np.shape
        k = min(shape[-2:])
        _close((np.asarray(u)[..., :, :k] * np.asarray(s)[..., None, :]) @ np.asarray(vh)[..., :k, :],
               a, dtype, 10)
    _close(LA.svdvals(a), np.linalg.svd(a, compute_uv=False), dtype, 10)
    _close(LA.svd(a, compute_uv=False), np.linalg.svd(a, compute_uv=False), dtype, 10)
    for mode in ("reduced", "complete"):
        q, r = LA.qr(a, mode=mode)
        q_np, r_np = np.linalg.qr(a, mode=mode)
        assert np.shape(q) == q_np.shape and np.shape(r) == r_np.shape
        _close(np.asarray(q) @ np.asarray(r), a, dtype, 10)
    assert np.shape(LA.qr(a, mode="r")) == np.linalg.qr(a, mode="r").shape
    _close(LA.pinv(a), np.linalg.pinv(a), dtype, 50)
    np.testing.assert_array_equal(np.asarray(LA.matrix_rank(a)), np.linalg.matrix_rank(a))


def test_rank_deficient_pinv_rank_lstsq():
    rng = np.random.default_rng(3)
    a = _rand(rng, (5, 2)) @ _rand(rng, (2, 4))  # rank 2
    assert LA.matrix_rank(a).item() == 2
    assert LA.matrix_rank(a, tol=1e9).item() == 0
    assert LA.matrix_rank(a, rtol=0.0).item() >= 2
    _close(LA.pinv(a), np.linalg.pinv(a), np.float64, 100)
    b = _rand(rng, (5, 3))
    x, res, rank, s = LA.lstsq(a, b)
    x_np, _, rank_np, s_np = np.linalg.lstsq(a, b)
    _close(x, x_np, np.float64, 100)
    assert rank.item() == rank_np
    _close(s, s_np, np.float64, 10)
    assert np.shape(res) == (3,)  # returned even when rank-deficient (documented)


@pytest.mark.parametrize("shape_b", [(6,), (6, 2)], ids=str)
def test_lstsq_vs_numpy(shape_b):
    rng = np.random.default_rng(4)
    a, b = _rand(rng, (6, 3)), _rand(rng, shape_b)
    x, res, rank, s = LA.lstsq(a, b)
    x_np, res_np, rank_np, s_np = np.linalg.lstsq(a, b)
    _close(x, x_np, np.float64)
    _close(res, res_np, np.float64)
    _close(s, s_np, np.float64)
    assert rank.item() == rank_np and rank.dtype == np.int32
    x, res, _, _ = LA.lstsq(a.T, b[:3])
    _close(x, np.linalg.lstsq(a.T, b[:3])[0], np.float64)
    assert np.shape(res) == (0,)


def test_eig_eigvals():
    rng = np.random.default_rng(5)
    a = _rand(rng, (2, 4, 4))
    w, v = LA.eig(a)
    assert w.dtype == np.complex128 and v.dtype == np.complex128
    np.testing.assert_allclose(a @ np.asarray(v), np.asarray(v) * np.asarray(w)[..., None, :],
                               atol=1e-10)
    np.testing.assert_allclose(np.sort_complex(np.asarray(LA.eigvals(a))),
                               np.sort_complex(np.linalg.eigvals(a)), atol=1e-10)
    assert LA.eigvals(np.ones((3, 3), np.float32)).dtype == np.complex64
    # Reverse mode through complex eigenvalues of a real matrix.
    check_grads(lambda x: lax.real(lax.mul(LA.eigvals(x), LA.eigvals(x))), (a[0],), order=1)
    # A primitive with a reference implementation: it also works under tracing.
    np.testing.assert_allclose(np.asarray(ember.jit(LA.eigvals)(a)), np.asarray(LA.eigvals(a)))


# --- norms and condition numbers --------------------------------------------------------------

@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf])
@pytest.mark.parametrize("dtype", [_dt.float32, _dt.complex128], ids=str)
def test_matrix_norm_and_norm(ord, dtype):
    rng = np.random.default_rng(6)
    a = _rand(rng, (2, 3, 4), dtype)
    want = np.linalg.norm(a, ord=ord, axis=(-2, -1))
    _close(LA.matrix_norm(a, ord=ord), want, dtype, 10)
    _close(LA.matrix_norm(a, ord=ord, keepdims=True),
           np.linalg.norm(a, ord=ord, axis=(-2, -1), keepdims=True), dtype, 10)
    _close(LA.norm(a[0], ord=ord), np.linalg.norm(a[0], ord=ord), dtype, 10)
    _close(LA.norm(a, ord=ord, axis=(2, 0)), np.linalg.norm(a, ord=ord, axis=(2, 0)), dtype, 10)
    assert LA.matrix_norm(a, ord=ord).dtype == _dt.real_dtype(dtype)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
@pytest.mark.parametrize("ord", [2, 1, 0, 3, 0.5, -1, math.inf, -math.inf])
def test_vector_norm(ord):
    rng = np.random.default_rng(7)
    x = _rand(rng, (3, 4, 5))
    x[0, 0, 0] = 0.0
    for axis in (None, 1, (0, 2), -1):
        ref_axis = axis
        if axis is None:
            want = np.linalg.norm(x.ravel(), ord=ord)
        else:
            want = np.linalg.norm(x, ord=ord, axis=ref_axis) if not isinstance(axis, tuple) else \
                np.linalg.norm(np.moveaxis(x, axis, (-2, -1)).reshape(4, -1), ord=ord, axis=-1)
        _close(LA.vector_norm(x, axis=axis, ord=ord), want, np.float64, 10)
    _close(LA.vector_norm(x, axis=1, ord=ord, keepdims=True),
           np.linalg.norm(x, ord=ord, axis=1, keepdims=True), np.float64, 10)
    _close(LA.norm(x, ord=None if ord == 2 else ord, axis=2),
           np.linalg.norm(x, ord=ord, axis=2), np.float64, 10)


def test_norm_defaults_and_errors():
    x = np.arange(24.0).reshape(2, 3, 4)
    _close(LA.norm(x), np.linalg.norm(x), np.float64)
    _close(LA.norm(x, keepdims=True), np.linalg.norm(x, keepdims=True), np.float64)
    with pytest.raises(ValueError, match="dimensions"):
        LA.norm(x, ord=1)
    with pytest.raises(ValueError, match="invalid ord"):
        LA.matrix_norm(x, ord=3)
    assert LA.vector_norm(np.array([3, 4], np.int32)).dtype == np.float32
    assert LA.vector_norm(np.array([3.0, 4.0], np.float16)).dtype == np.float16


@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, "fro", math.inf])
def test_cond(p):
    rng = np.random.default_rng(8)
    a = _rand(rng, (2, 4, 4)) + 2 * np.eye(4)
    _close(LA.cond(a, p), np.linalg.cond(a, p), np.float64, 100)


# --- products and views ------------------------------------------------------------------------

def test_products():
    rng = np.random.default_rng(9)
    a, b = _rand(rng, (2, 1, 3, 4)), _rand(rng, (5, 4, 2))
    _close(LA.matmul(a, b), a @ b, np.float64)
    v = _rand(rng, (4,))
    _close(LA.matmul(a, v), a @ v, np.float64)
    _close(LA.matmul(v, b), v @ b, np.float64)
    _close(LA.matmul(v, v), v @ v, np.float64)
    _close(LA.matmul(a, b[0]), a @ b[0], np.float64)
    assert LA.matmul(np.ones((2, 2), np.int8), np.ones((2, 2), np.float32)).dtype == np.float32
    with pytest.raises(TypeError, match="contracted"):
        LA.matmul(a, a)
    x, y = _rand(rng, (2, 3, 4)), _rand(rng, (4, 3, 5))
    _close(LA.tensordot(x, y, axes=([1, 2], [1, 0])), np.tensordot(x, y, axes=([1, 2], [1, 0])),
           np.float64)
    z = _rand(rng, (3, 4, 2))
    _close(LA.tensordot(x, z, axes=2), np.tensordot(x, z, axes=2), np.float64)
    c1, c2 = _rand(rng, (3, 4), np.complex128), _rand(rng, (2, 1, 4), np.complex128)
    _close(LA.vecdot(c1, c2), np.sum(np.conj(c1) * c2, axis=-1), np.complex128)
    _close(LA.outer(v, v[:3]), np.outer(v, v[:3]), np.float64)
    p, q = _rand(rng, (2, 3)), _rand(rng, (4, 1, 3))
    _close(LA.cross(p, q), np.cross(p, q), np.float64)
    _close(LA.cross(p.T, q[0].T, axis=0), np.cross(p.T, q[0].T, axis=0), np.float64)
    with pytest.raises(TypeError, match="3 elements"):
        LA.cross(np.ones(4), np.ones(4))


def test_vecdot_axis():
    rng = np.random.default_rng(10)
    x, y = _rand(rng, (4, 3), np.complex128), _rand(rng, (4, 3), np.complex128)
    _close(LA.vecdot(x, y, axis=0), np.sum(np.conj(x) * y, axis=0), np.complex128)


@pytest.mark.parametrize("offset", [-3, -1, 0, 1, 2, 5])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 3), (0, 2, 5), (3, 0)], ids=str)
def test_diagonal_trace(offset, shape):
    x = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    want = np.diagonal(x, offset=offset, axis1=-2, axis2=-1)
    got = LA.diagonal(x, offset=offset)
    np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(LA.trace(x, offset=offset)),
                                  np.trace(x, offset=offset, axis1=-2, axis2=-1))
    assert LA.trace(x.astype(np.int32), dtype=np.float64).dtype == np.float64


def test_matrix_transpose_and_power():
    rng = np.random.default_rng(11)
    a = _rand(rng, (2, 3, 3))
    np.testing.assert_array_equal(np.asarray(LA.matrix_transpose(a)), np.swapaxes(a, -1, -2))
    for n in (0, 1, 2, 5, -1, -3):
        _close(LA.matrix_power(a, n), np.linalg.matrix_power(a, n), np.float64, 100)
    m = np.array([[1, 1], [0, 1]], np.int32)
    got = LA.matrix_power(m, 4)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), np.linalg.matrix_power(m, 4))
    with pytest.raises(TypeError, match="integer"):
        LA.matrix_power(a, 1.5)


def test_input_dtypes():
    a = np.array([[2, 1], [1, 3]], np.int32)
    assert LA.inv(a).dtype == np.float32
    assert LA.det(a).dtype == np.float32
    h = np.array([[2.0, 1.0], [1.0, 3.0]], np.float16)
    assert LA.inv(h).dtype == np.float16
    assert LA.eigh(h).eigenvalues.dtype == np.float16
    _close(np.asarray(LA.inv(h)).astype(np.float64), np.linalg.inv(h.astype(np.float64)),
           np.float32, 20)


# --- staging, derivatives and vmap --------------------------------------------------------------

def test_staged_graph_typechecks():
    rng = np.random.default_rng(12)
    a = _spd(rng, (2,), 3, np.float32)
    b = _rand(rng, (2, 3), np.float32)
    v = _rand(rng, (3,), np.float32)

    def f(a, b, v):
        return (LA.det(a), LA.slogdet(a), LA.inv(a), LA.solve(a, v), LA.cholesky(a),
                LA.eigh(a), LA.svd(a), LA.qr(a), LA.pinv(a), LA.matrix_rank(a), LA.norm(a),
                LA.cond(a), LA.trace(a), LA.diagonal(a), LA.cross(b, b), LA.matrix_power(a, 3),
                LA.vector_norm(b, ord=1), LA.matrix_norm(a, ord="nuc"))
    g = ember.make_graph(f)(a, b, v)
    typecheck(g)
    eager = ember.tree.tree_flatten(f(a, b, v))[0]
    staged = ember.tree.tree_flatten(ember.jit(f)(a, b, v))[0]
    for s, e in zip(staged, eager):
        np.testing.assert_allclose(np.asarray(s), np.asarray(e), rtol=1e-4, atol=1e-4)


def test_grads_square():
    rng = np.random.default_rng(13)
    a = _rand(rng, (2, 3, 3)) + 3 * np.eye(3)
    b = _rand(rng, (2, 3, 2))
    check_grads(LA.det, (a,), order=2)
    check_grads(lambda x: LA.slogdet(x).logabsdet, (a,), order=2)
    check_grads(LA.inv, (a,), order=2)
    check_grads(LA.solve, (a, b), order=1)
    check_grads(lambda x: LA.matrix_power(x, -2), (a,), order=1)


def test_grads_spectral():
    rng = np.random.default_rng(14)
    spd = _spd(rng, (), 3)
    w = _well(rng, (2,), 4, 3)
    check_grads(LA.cholesky, (spd,), order=2)
    check_grads(LA.eigvalsh, (spd,), order=2)
    check_grads(LA.svdvals, (w,), order=2)
    check_grads(LA.pinv, (w,), order=1)
    check_grads(lambda x, y: LA.lstsq(x, y)[0], (w[0], w[1, :, 0]), order=1)
    check_grads(lambda x: LA.matrix_norm(x, ord="nuc"), (w,), order=1)
    check_grads(lambda x: LA.matrix_norm(x, ord=2), (w,), order=1)
    check_grads(LA.cond, (w,), order=1)


def test_grads_norms_and_products():
    rng = np.random.default_rng(15)
    x = _rand(rng, (3, 4))
    check_grads(LA.norm, (x,), order=2)
    check_grads(lambda v: LA.vector_norm(v, ord=3, axis=0), (x,), order=2)
    check_grads(lambda v: LA.matrix_norm(v, ord=1), (x,), order=1)
    p, q = _rand(rng, (2, 3)), _rand(rng, (2, 3))
    check_grads(LA.cross, (p, q), order=2)
    check_grads(lambda v: LA.trace(v, offset=1), (x,), order=1)
    check_grads(LA.matmul, (x, x.T), order=2)



def test_norm_hessians_at_zero_elements():
    # ||x||**2 = sum x**2 has Hessian 2 I, zero elements included; through abs(x)**2
    # (abs's derivative sign(0) = 0) the zero element's row came out 0
    x = np.array([0.0, 1.0, 2.0])
    for f in (lambda v: LA.norm(v) ** 2, lambda v: LA.vector_norm(v) ** 2,
              lambda v: LA.norm(v.reshape(1, 3), "fro") ** 2):
        np.testing.assert_allclose(np.asarray(ember.hessian(f)(x)), 2 * np.eye(3), atol=1e-14)
        np.testing.assert_allclose(np.asarray(ember.jit(ember.hessian(f))(x)), 2 * np.eye(3), atol=1e-14)
    # d2 ||x|| = (I - x x^T / ||x||^2) / ||x||
    n = np.linalg.norm(x)
    want = (np.eye(3) - np.outer(x, x) / n ** 2) / n
    np.testing.assert_allclose(np.asarray(ember.hessian(LA.norm)(x)), want, rtol=1e-14, atol=1e-14)
    # complex: |z|**2 = re**2 + im**2
    h = ember.hessian(lambda v: LA.norm(v + 1j * v[::-1]) ** 2)(x)
    np.testing.assert_allclose(np.asarray(h), 4 * np.eye(3), atol=1e-14)
    # even ord p: sum x**p, derivatives of order p at a zero element (d4 x**4 = 24)
    d4 = ember.grad(ember.grad(ember.grad(ember.grad(lambda t: LA.vector_norm(x + t * np.eye(3)[0], ord=4) ** 4))))
    np.testing.assert_allclose(float(d4(0.0)), 24.0, rtol=1e-12)
    ember.testing.check_grads(lambda v: LA.vector_norm(v, ord=4), (x + 0.5,), order=2)



def test_lstsq_residual_hessian_at_a_zero_residual():
    # resid = sum r**2 with r = (I - P) b = [0, 0, b3]: Hessian in b is diag(0, 0, 2);
    # summed as abs(r) * abs(r), the exactly-zero component lost its curvature
    a = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    for b in (np.array([1.0, 2.0, 0.0]), np.array([1.0, 2.0, 0.5])):
        h = ember.hessian(lambda b: LA.lstsq(a, b)[1][0])(b)
        np.testing.assert_allclose(np.asarray(h), np.diag([0.0, 0.0, 2.0]), atol=1e-12)


def test_vmap():
    rng = np.random.default_rng(16)
    a = _rand(rng, (3, 4, 4)) + 3 * np.eye(4)
    b = _rand(rng, (4, 3))
    check_vmap(LA.det, (a,), atol=1e-10, rtol=1e-10)
    check_vmap(LA.inv, (np.moveaxis(a, 0, 2),), in_axes=2, atol=1e-10, rtol=1e-10)
    check_vmap(LA.solve, (a, b), in_axes=(0, 1), atol=1e-10, rtol=1e-10)
    check_vmap(lambda x: LA.slogdet(x), (a,), atol=1e-10, rtol=1e-10)
    check_vmap(lambda x: LA.norm(x, ord=2), (a,), atol=1e-10, rtol=1e-10)
    check_vmap(LA.pinv, (a,), atol=1e-10, rtol=1e-10)
    check_vmap(ember.grad(lambda x: LA.slogdet(x).logabsdet), (a,), atol=1e-8, rtol=1e-8)


@settings(max_examples=15, deadline=None)
@given(batch=st.lists(st.integers(0, 3), max_size=2).map(tuple), n=st.integers(1, 5),
       k=st.integers(1, 3), dtype=st.sampled_from([_dt.float32, _dt.float64, _dt.complex64]))
def test_hypothesis_solve_inv_det(batch, n, k, dtype):
    rng = np.random.default_rng(n * 10 + k)
    a = _rand(rng, batch + (n, n), dtype) + 3 * np.eye(n, dtype=dtype)
    b = _rand(rng, batch + (n, k), dtype)
    _close(LA.solve(a, b), np.linalg.solve(a, b), dtype, 30)
    _close(LA.inv(a), np.linalg.inv(a), dtype, 30)
    _close(LA.det(a), np.linalg.det(a), dtype, 30 * n)
    _close(LA.slogdet(a).logabsdet, np.linalg.slogdet(a)[1], dtype, 30)


# --- linalg.trace dtype (audit #12 item 4, array API 2024.12) ----------------------

@pytest.mark.parametrize("d,want", [("int8", "int32"), ("int16", "int32"), ("uint8", "uint32"),
                                    ("uint16", "uint32"), ("int64", "int64"),
                                    ("float16", "float16"), ("float32", "float32"),
                                    ("complex64", "complex64")])
def test_trace_dtype_follows_sum(d, want):
    x = np.arange(1, 10).reshape(3, 3).astype(d)
    got = enp.linalg.trace(enp.asarray(x), offset=1)
    assert got.dtype == np.dtype(want)
    assert got.item() == np.trace(x, offset=1)
    assert enp.linalg.trace(enp.asarray(x), dtype="int8").dtype == np.dtype("int8")
    with pytest.raises(TypeError, match="trace does not support dtype bool"):
        enp.linalg.trace(enp.ones((2, 2), dtype="bool"))
