"""Tests of the linear-algebra primitives: values and reconstructions vs numpy/scipy,
abstract eval vs impl, staging, jvp/vjp vs finite differences, transposes and vmap."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember import dtypes as _dt
from ember import lax
from ember.fx.core import UndefinedPrimal, get_aval
from ember.fx.ir import eval_graph, typecheck
from ember.fx.prims import linalg as L
from ember.testing import check_grads, check_vmap

DTYPES = [_dt.float32, _dt.float64, _dt.complex64, _dt.complex128]
BATCHES = [(), (2,), (0,), (2, 3)]


def _tol(dtype):
    return 2e-4 if dtype in (_dt.float32, _dt.complex64) else 1e-10


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


def _well(rng, batch, m, n, dtype=np.float64, spread=(1.0, 3.0)):
    """U diag(s) V^H with distinct, well separated singular values."""
    k = min(m, n)
    u = np.linalg.qr(_rand(rng, batch + (m, m), dtype))[0][..., :, :k]
    v = np.linalg.qr(_rand(rng, batch + (n, n), dtype))[0][..., :, :k]
    s = np.linspace(spread[1], spread[0], k) if k > 1 else np.array([2.0])[:k]
    return ((u * s) @ _H(v)).astype(dtype)


def _sym_distinct(rng, batch, n, dtype=np.float64):
    """A Hermitian matrix with eigenvalues 1, 2, ..., n."""
    q = np.linalg.qr(_rand(rng, batch + (n, n), dtype))[0]
    return ((q * np.arange(1.0, n + 1)) @ _H(q)).astype(dtype)


def _close(got, want, dtype, scale=1.0):
    t = _tol(dtype) * scale
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=t, atol=t)


def _check_impl_vs_abstract(prim, args, params):
    avals = prim.abstract_eval(*[get_aval(a) for a in args], **params)
    outs = prim.impl(*args, **params)
    if not prim.multiple_results:
        avals, outs = [avals], [outs]
    assert len(avals) == len(outs)
    for a, o in zip(avals, outs):
        assert o.shape == a.shape and o.dtype == a.dtype, (prim, o.shape, o.dtype, a)


# --- values ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("batch", BATCHES, ids=str)
def test_cholesky_values(dtype, batch):
    rng = np.random.default_rng(0)
    a = _spd(rng, batch, 4, dtype)
    _check_impl_vs_abstract(L.cholesky_p, [a], {})
    got = np.asarray(lax.linalg.cholesky(a))
    assert got.dtype == dtype and got.shape == a.shape
    np.testing.assert_array_equal(np.triu(got, 1), 0)
    _close(got @ _H(got), a, dtype, scale=10)
    _close(got, np.linalg.cholesky(a), dtype, scale=10)


def test_cholesky_reads_lower_triangle_and_flags_failure():
    a = np.array([[4.0, 99.0], [2.0, 5.0]])
    np.testing.assert_allclose(np.asarray(lax.linalg.cholesky(a, symmetrize_input=False)),
                               [[2.0, 0.0], [1.0, 2.0]])
    bad = np.stack([np.eye(2), -np.eye(2)])
    out = np.asarray(lax.linalg.cholesky(bad))
    np.testing.assert_allclose(out[0], np.eye(2))
    assert np.isnan(out[1]).all()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("batch", [(), (3,), (0,)], ids=str)
@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower", [True, False])
def test_triangular_solve_values(dtype, batch, left_side, lower):
    rng = np.random.default_rng(1)
    m = 4
    a = _rand(rng, batch + (m, m), dtype) + 4 * np.eye(m, dtype=dtype)
    tri = np.tril(a) if lower else np.triu(a)
    b = _rand(rng, batch + ((m, 3) if left_side else (3, m)), dtype)
    for transpose_a, conjugate_a, unit in [(False, False, False), (True, False, False),
                                           (True, True, False), (False, True, True)]:
        params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
                      conjugate_a=conjugate_a, unit_diagonal=unit)
        _check_impl_vs_abstract(L.triangular_solve_p, [a, b], params)
        x = np.asarray(lax.linalg.triangular_solve(a, b, **params))
        op = tri.copy()
        if unit:
            op = op - np.eye(m) * np.diagonal(op, axis1=-2, axis2=-1)[..., None, :] + np.eye(m)
        if transpose_a:
            op = np.swapaxes(op, -1, -2)
        if conjugate_a:
            op = np.conj(op)
        _close(op @ x if left_side else x @ op, b, dtype, scale=10)


def test_triangular_solve_singular_gives_inf_not_error():
    a = np.array([[1.0, 0.0], [1.0, 0.0]])
    x = np.asarray(lax.linalg.triangular_solve(a, np.ones((2, 1)), left_side=True, lower=True))
    assert not np.isfinite(x).all()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("batch", BATCHES, ids=str)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (1, 1)], ids=str)
def test_lu_values(dtype, batch, shape):
    rng = np.random.default_rng(2)
    a = _rand(rng, batch + shape, dtype)
    _check_impl_vs_abstract(L.lu_p, [a], {})
    lu, piv, perm = (np.asarray(o) for o in lax.linalg.lu(a))
    m, n = shape
    k = min(m, n)
    assert piv.dtype == np.int32 and perm.dtype == np.int32
    assert piv.shape == batch + (k,) and perm.shape == batch + (m,)
    l_ = np.tril(lu, -1)[..., :, :k] + np.eye(m, k)
    u_ = np.triu(lu)[..., :k, :]
    permuted = np.take_along_axis(a, perm[..., :, None].astype(np.intp), axis=-2)
    _close(l_ @ u_, permuted, dtype, scale=10)
    # Pivoting picks the largest entry, so |L| <= 1 (complex LAPACK compares |re| + |im|).
    bound = np.sqrt(2) if _dt.kind(dtype) == "c" else 1.0
    assert (np.abs(l_) <= bound + 1e-5).all()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("batch", BATCHES, ids=str)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)], ids=str)
@pytest.mark.parametrize("full", [True, False])
def test_qr_values(dtype, batch, shape, full):
    rng = np.random.default_rng(3)
    a = _rand(rng, batch + shape, dtype)
    _check_impl_vs_abstract(L.qr_p, [a], dict(full_matrices=full))
    q, r = (np.asarray(o) for o in lax.linalg.qr(a, full_matrices=full))
    m, n = shape
    k = m if full else min(m, n)
    assert q.shape == batch + (m, k) and r.shape == batch + (k, n)
    _close(q @ r, a, dtype, scale=10)
    _close(_H(q) @ q, np.broadcast_to(np.eye(k), batch + (k, k)), dtype, scale=10)
    np.testing.assert_array_equal(np.tril(r, -1), 0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("batch", BATCHES, ids=str)
@pytest.mark.parametrize("lower", [True, False])
def test_eigh_values(dtype, batch, lower):
    rng = np.random.default_rng(4)
    a = _rand(rng, batch + (4, 4), dtype)
    a = a + _H(a)
    _check_impl_vs_abstract(L.eigh_p, [a], dict(lower=lower))
    v, w = (np.asarray(o) for o in lax.linalg.eigh(a, lower=lower))
    assert w.dtype == _dt.real_dtype(dtype) and v.dtype == dtype
    _close(a @ v, v * w[..., None, :], dtype, scale=20)
    _close(w, np.linalg.eigvalsh(a), dtype, scale=20)
    assert (np.diff(w, axis=-1) >= 0).all()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("batch", BATCHES, ids=str)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)], ids=str)
@pytest.mark.parametrize("full", [True, False])
def test_svd_values(dtype, batch, shape, full):
    rng = np.random.default_rng(5)
    a = _rand(rng, batch + shape, dtype)
    params = dict(full_matrices=full, compute_uv=True)
    _check_impl_vs_abstract(L.svd_p, [a], params)
    _check_impl_vs_abstract(L.svd_p, [a], dict(full_matrices=full, compute_uv=False))
    s, u, vh = (np.asarray(o) for o in lax.linalg.svd(a, full_matrices=full))
    k = min(shape)
    assert s.dtype == _dt.real_dtype(dtype)
    _close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, dtype, scale=10)
    _close(s, np.linalg.svd(a, compute_uv=False), dtype, scale=10)
    _close(lax.linalg.svd(a, compute_uv=False), s, dtype, scale=10)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("batch", [(), (3,), (0,)], ids=str)
def test_eig_values(dtype, batch):
    rng = np.random.default_rng(6)
    a = _rand(rng, batch + (4, 4), dtype)
    _check_impl_vs_abstract(L.eig_p, [a], dict(compute_eigenvectors=True))
    _check_impl_vs_abstract(L.eig_p, [a], dict(compute_eigenvectors=False))
    w, v = (np.asarray(o) for o in lax.linalg.eig(a))
    assert w.dtype == _dt.complex_dtype(dtype)
    _close(a @ v, v * w[..., None, :], dtype, scale=20)
    (w2,) = lax.linalg.eig(a, compute_eigenvectors=False)
    _close(w2, w, dtype, scale=20)


@pytest.mark.parametrize("dtype", [_dt.float32, _dt.complex128], ids=str)
def test_lu_solve(dtype):
    rng = np.random.default_rng(7)
    a = _rand(rng, (2, 4, 4), dtype)
    b = _rand(rng, (2, 4, 3), dtype)
    f, _, perm = lax.linalg.lu(a)
    for trans, op in [(0, a), (1, np.swapaxes(a, -1, -2)), (2, _H(a))]:
        x = np.asarray(lax.linalg.lu_solve(f, perm, b, trans=trans))
        _close(op @ x, b, dtype, scale=50)


# --- errors ------------------------------------------------------------------------------------

def test_clear_errors():
    sq = np.ones((2, 3))
    with pytest.raises(TypeError, match="cholesky.*square"):
        lax.linalg.cholesky(sq)
    with pytest.raises(TypeError, match="eigh.*square"):
        lax.linalg.eigh(sq)
    with pytest.raises(TypeError, match="rank >= 2"):
        lax.linalg.qr(np.ones(3))
    with pytest.raises(TypeError, match="float32, float64"):
        lax.linalg.svd(np.ones((2, 2), np.int32))
    with pytest.raises(TypeError, match="float32, float64"):
        lax.linalg.lu(np.ones((2, 2), np.float16))
    with pytest.raises(TypeError, match="triangular_solve.*rows"):
        lax.linalg.triangular_solve(np.eye(3), np.ones((2, 1)), left_side=True)
    with pytest.raises(TypeError, match="same dtype"):
        lax.linalg.triangular_solve(np.eye(2), np.ones((2, 1), np.float32), left_side=True)
    with pytest.raises(TypeError, match="batch dims"):
        lax.linalg.triangular_solve(np.eye(2), np.ones((3, 2, 1)), left_side=True)


def test_jvp_not_defined_cases_raise_clearly():
    a = np.random.default_rng(0).standard_normal((4, 2))
    with pytest.raises(ValueError, match="full_matrices"):
        ember.jvp(lambda x: lax.linalg.qr(x, full_matrices=True), (a,), (a,))
    with pytest.raises(ValueError, match="full_matrices"):
        ember.jvp(lambda x: lax.linalg.svd(x, full_matrices=True), (a,), (a,))
    for p in (L.cholesky_p, L.lu_p, L.qr_p, L.eigh_p, L.svd_p, L.eig_p):
        assert "transpose" in p.not_applicable
    with pytest.raises(TypeError, match="linear in b"):
        L.triangular_solve_p.transpose(np.ones((2, 1)), UndefinedPrimal(get_aval(np.eye(2))),
                                       np.ones((2, 1)), left_side=True, lower=True,
                                       transpose_a=False, conjugate_a=False, unit_diagonal=False)


# --- staging -------------------------------------------------------------------------------------

def test_staged_graph_typechecks_and_matches_eager():
    rng = np.random.default_rng(8)
    a = _spd(rng, (2,), 3, np.float32)
    b = _rand(rng, (2, 3, 2), np.float32)

    def f(a, b):
        c = lax.linalg.cholesky(a)
        x = lax.linalg.triangular_solve(c, b, left_side=True, lower=True)
        f_, piv, perm = lax.linalg.lu(a)
        q, r = lax.linalg.qr(b, full_matrices=False)
        v, w = lax.linalg.eigh(a)
        s, u, vh = lax.linalg.svd(b, full_matrices=False)
        ew, ev = lax.linalg.eig(a)
        return c, x, f_, piv, perm, q, r, v, w, s, u, vh, ew, ev, lax.linalg.lu_solve(f_, perm, b)

    g = ember.make_graph(f)(a, b)
    typecheck(g)
    names = {e.prim.name for e in g.equations}
    assert {"cholesky", "triangular_solve", "lu", "qr", "eigh", "svd", "eig"} <= names
    staged = eval_graph(g.graph, g.consts, a, b)
    eager = f(a, b)
    for s_, e_ in zip(staged, eager):
        np.testing.assert_allclose(np.asarray(s_), np.asarray(e_), rtol=1e-5, atol=1e-5)


# --- derivatives -------------------------------------------------------------------------------

def test_cholesky_grads():
    rng = np.random.default_rng(10)
    a = _spd(rng, (2,), 3)
    check_grads(lax.linalg.cholesky, (a,), order=2)
    # Without symmetrisation the rule differentiates the lower triangle exactly.
    check_grads(lambda x: lax.linalg.cholesky(x, symmetrize_input=False), (a,), order=1)


def test_cholesky_grads_complex():
    rng = np.random.default_rng(11)
    a = _spd(rng, (), 3, np.complex128)

    def f(re, im):
        c = lax.linalg.cholesky(lax.complex(re, im))
        return lax.real(c), lax.imag(c)
    check_grads(f, (a.real.copy(), a.imag.copy()), order=1)


@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a,unit", [(False, False), (True, False), (False, True)])
def test_triangular_solve_grads(left_side, lower, transpose_a, unit):
    rng = np.random.default_rng(12)
    a = _rand(rng, (3, 3)) + 3 * np.eye(3)
    b = _rand(rng, (3, 2) if left_side else (2, 3))
    f = lambda a, b: lax.linalg.triangular_solve(a, b, left_side=left_side, lower=lower,
                                                 transpose_a=transpose_a, unit_diagonal=unit)
    check_grads(f, (a, b), order=2)


def test_triangular_solve_grads_complex_conjugate():
    rng = np.random.default_rng(13)
    a = _rand(rng, (3, 3), np.complex128) + 3 * np.eye(3)
    b = _rand(rng, (3, 2), np.complex128)

    def f(ar, ai, br, bi):
        x = lax.linalg.triangular_solve(lax.complex(ar, ai), lax.complex(br, bi), left_side=True,
                                        lower=True, transpose_a=True, conjugate_a=True)
        return lax.real(x), lax.imag(x)
    check_grads(f, (a.real.copy(), a.imag.copy(), b.real.copy(), b.imag.copy()), order=1)


@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("transpose_a,conjugate_a", [(False, False), (True, False), (True, True)])
def test_triangular_solve_transpose_dot_product(left_side, transpose_a, conjugate_a):
    """Re<ct, T(b)> == Re<T^T(ct), b> (ember's bilinear pairing) for the rule called directly."""
    rng = np.random.default_rng(14)
    a = _rand(rng, (2, 3, 3), np.complex128) + 3 * np.eye(3)
    b = _rand(rng, (2, 3, 4) if left_side else (2, 4, 3), np.complex128)
    params = dict(left_side=left_side, lower=False, transpose_a=transpose_a,
                  conjugate_a=conjugate_a, unit_diagonal=False)
    out = np.asarray(lax.linalg.triangular_solve(a, b, **params))
    ct = _rand(rng, out.shape, np.complex128)
    none, tb = L.triangular_solve_p.transpose(ct, a, UndefinedPrimal(get_aval(b)), **params)
    assert none is None and np.shape(tb) == b.shape
    np.testing.assert_allclose(np.real(np.sum(np.asarray(tb) * b)), np.real(np.sum(ct * out)),
                               rtol=1e-10)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)], ids=str)
def test_lu_grads(shape):
    rng = np.random.default_rng(15)
    a = _rand(rng, (2,) + shape)
    check_grads(lambda x: lax.linalg.lu(x)[0], (a,), order=2 if shape == (3, 3) else 1)


def test_lu_grads_complex():
    rng = np.random.default_rng(16)
    a = _rand(rng, (3, 3), np.complex128)

    def f(re, im):
        lu = lax.linalg.lu(lax.complex(re, im))[0]
        return lax.real(lu), lax.imag(lu)
    check_grads(f, (a.real.copy(), a.imag.copy()), order=1)


@pytest.mark.parametrize("shape,full", [((3, 3), False), ((3, 3), True), ((4, 2), False),
                                        ((2, 4), False), ((2, 4), True)], ids=str)
def test_qr_grads(shape, full):
    rng = np.random.default_rng(17)
    a = _well(rng, (2,), *shape)
    check_grads(lambda x: lax.linalg.qr(x, full_matrices=full), (a,),
                order=2 if shape == (3, 3) else 1)


def test_qr_grads_complex():
    rng = np.random.default_rng(18)
    a = _well(rng, (), 4, 3, np.complex128)

    def f(re, im):
        q, r = lax.linalg.qr(lax.complex(re, im), full_matrices=False)
        return lax.real(q), lax.imag(q), lax.real(r), lax.imag(r)
    check_grads(f, (a.real.copy(), a.imag.copy()), order=1)


@pytest.mark.parametrize("lower", [True, False])
def test_eigh_grads(lower):
    rng = np.random.default_rng(19)
    a = _sym_distinct(rng, (2,), 4)
    check_grads(lambda x: lax.linalg.eigh(x, lower=lower), (a,), order=2)
    check_grads(lambda x: lax.linalg.eigh(x, lower=lower, symmetrize_input=False), (a,), order=1)


def test_eigh_grads_complex_gauge_invariant():
    rng = np.random.default_rng(20)
    a = _sym_distinct(rng, (), 3, np.complex128)

    def f(re, im):
        v, w = lax.linalg.eigh(lax.complex(re, im))
        return w, lax.real(lax.mul(v, lax.conj(v)))  # |v|^2 does not depend on the phase
    check_grads(f, (a.real.copy(), a.imag.copy()), order=1)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)], ids=str)
def test_svd_grads(shape):
    rng = np.random.default_rng(21)
    a = _well(rng, (2,), *shape)
    check_grads(lambda x: lax.linalg.svd(x, full_matrices=False), (a,),
                order=2 if shape == (3, 3) else 1)
    check_grads(lambda x: lax.linalg.svd(x, compute_uv=False), (a,), order=2)
    if shape == (3, 3):
        check_grads(lambda x: lax.linalg.svd(x, full_matrices=True), (a,), order=1)


def test_svd_grads_complex_gauge_invariant():
    rng = np.random.default_rng(22)
    a = _well(rng, (), 4, 3, np.complex128)

    def f(re, im):
        s, u, vh = lax.linalg.svd(lax.complex(re, im), full_matrices=False)
        us = lax.mul(u, lax.broadcast_in_dim(lax.complex(s, np.float64(0)), u.shape, (1,)))
        rebuilt = lax.dot_general(us, vh, (((1,), (0,)), ((), ())))
        # |u|^2, |vh|^2 and U S Vh do not depend on the phase gauge.
        return (s, lax.real(lax.mul(u, lax.conj(u))), lax.real(lax.mul(vh, lax.conj(vh))),
                lax.real(rebuilt), lax.imag(rebuilt))
    check_grads(f, (a.real.copy(), a.imag.copy()), order=1)


def test_eig_jvp():
    """Eigenvalue tangents vs finite differences; eigenvector tangents satisfy the
    differentiated eigen-equation dA v + A dv = dw v + w dv and keep unit norm."""
    rng = np.random.default_rng(23)
    a = _rand(rng, (2, 4, 4))
    da = _rand(rng, (2, 4, 4))
    (w, v), (dw, dv) = ember.jvp(lambda x: lax.linalg.eig(x), (a,), (da,))
    w, v, dw, dv = (np.asarray(t) for t in (w, v, dw, dv))
    eps = 1e-6
    wp = np.linalg.eigvals(a + eps * da)
    wm = np.linalg.eigvals(a - eps * da)
    # Match eigenvalues by proximity (LAPACK's order can change between calls).
    for b in range(2):
        for j in range(4):
            ip = np.argmin(np.abs(wp[b] - w[b, j]))
            im = np.argmin(np.abs(wm[b] - w[b, j]))
            np.testing.assert_allclose(dw[b, j], (wp[b, ip] - wm[b, im]) / (2 * eps),
                                       rtol=1e-5, atol=1e-6)
    lhs = da @ v + a @ dv
    rhs = v * dw[..., None, :] + dv * w[..., None, :]
    np.testing.assert_allclose(lhs, rhs, atol=1e-9)
    np.testing.assert_allclose(np.real(np.sum(np.conj(v) * dv, axis=-2)), 0, atol=1e-9)
    _, (dw2,) = ember.jvp(lambda x: lax.linalg.eig(x, compute_eigenvectors=False), (a,), (da,))
    np.testing.assert_allclose(np.asarray(dw2), dw, atol=1e-9)


def test_grad_through_composites():
    """Reverse mode through a chain of the primitives (lu_solve, cholesky, svd)."""
    rng = np.random.default_rng(24)
    a = _spd(rng, (), 3)
    b = _rand(rng, (3, 2))

    def f(a, b):
        f_, _, perm = lax.linalg.lu(a)
        x = lax.linalg.lu_solve(f_, perm, b)
        c = lax.linalg.cholesky(a)
        return lax.reduce_sum(lax.mul(x, x), (0, 1)), lax.reduce_sum(c, (0, 1))
    check_grads(f, (a, b), order=2)


# --- vmap ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, 2])
def test_vmap_unary_prims(axis):
    rng = np.random.default_rng(25)
    base_spd = _spd(rng, (3,), 3)
    spd = np.moveaxis(base_spd, 0, axis)
    gen = np.moveaxis(_rand(rng, (3, 3, 3)), 0, axis)
    check_vmap(lax.linalg.cholesky, (spd,), in_axes=axis, atol=1e-10, rtol=1e-10)
    check_vmap(lambda x: lax.linalg.lu(x), (gen,), in_axes=axis, atol=1e-10, rtol=1e-10)
    check_vmap(lambda x: lax.linalg.qr(x, full_matrices=False), (gen,), in_axes=axis,
               atol=1e-10, rtol=1e-10)
    check_vmap(lambda x: lax.linalg.eigh(x), (spd,), in_axes=axis, atol=1e-10, rtol=1e-10)
    check_vmap(lambda x: lax.linalg.svd(x), (gen,), in_axes=axis, atol=1e-10, rtol=1e-10)
    check_vmap(lambda x: lax.linalg.eig(x), (gen,), in_axes=axis, atol=1e-10, rtol=1e-10)


def test_batch_rule_keeps_leading_batch_dim():
    x = _spd(np.random.default_rng(26), (2, 3), 3)
    # The mapped axis 1 is a batch dim already: it stays where it is.
    out, d = L.cholesky_p.batch(3, [x], [1])
    assert d == 1
    np.testing.assert_allclose(np.asarray(out), np.linalg.cholesky(x), atol=1e-10)
    outs, ds = L.svd_p.batch(3, [x], [1], full_matrices=False, compute_uv=True)
    assert list(ds) == [1, 1, 1]
    np.testing.assert_allclose(np.asarray(outs[0]), np.linalg.svd(x, compute_uv=False), atol=1e-10)
    # A mapped axis among the matrix dims moves to the front.
    out, d = L.cholesky_p.batch(3, [np.moveaxis(x, 1, 3)], [3])
    assert d == 0
    np.testing.assert_allclose(np.asarray(out), np.linalg.cholesky(np.moveaxis(x, 1, 0)), atol=1e-10)


@pytest.mark.parametrize("in_axes", [(0, 0), (None, 0), (0, None), (2, 1)])
def test_vmap_triangular_solve(in_axes):
    rng = np.random.default_rng(27)
    a = _rand(rng, (3, 3, 3)) + 3 * np.eye(3)
    b = _rand(rng, (3, 3, 2))
    a = a[0] if in_axes[0] is None else np.moveaxis(a, 0, in_axes[0])
    b = b[0] if in_axes[1] is None else np.moveaxis(b, 0, in_axes[1])
    f = lambda a, b: lax.linalg.triangular_solve(a, b, left_side=True, lower=True)
    check_vmap(f, (a, b), in_axes=in_axes, atol=1e-10, rtol=1e-10)


def test_vmap_of_grad():
    rng = np.random.default_rng(28)
    a = _sym_distinct(rng, (3,), 3)

    def loss(x):
        v, w = lax.linalg.eigh(x)
        return lax.reduce_sum(lax.mul(w, w), (0,)) + lax.reduce_sum(lax.mul(v, v), (0, 1))
    check_vmap(ember.grad(loss), (a,), atol=1e-8, rtol=1e-8)


# --- properties ------------------------------------------------------------------------------------

@settings(max_examples=15, deadline=None)
@given(batch=st.lists(st.integers(0, 2), max_size=2).map(tuple),
       m=st.integers(1, 5), n=st.integers(1, 5),
       dtype=st.sampled_from([_dt.float32, _dt.float64, _dt.complex64]))
def test_hypothesis_reconstructions(batch, m, n, dtype):
    rng = np.random.default_rng(m * 7 + n)
    a = _rand(rng, batch + (m, n), dtype)
    scale = 50
    q, r = (np.asarray(o) for o in lax.linalg.qr(a, full_matrices=False))
    _close(q @ r, a, dtype, scale)
    s, u, vh = (np.asarray(o) for o in lax.linalg.svd(a, full_matrices=False))
    _close((u * s[..., None, :]) @ vh, a, dtype, scale)
    lu, _, perm = (np.asarray(o) for o in lax.linalg.lu(a))
    k = min(m, n)
    rebuilt = (np.tril(lu, -1)[..., :, :k] + np.eye(m, k)) @ np.triu(lu)[..., :k, :]
    _close(rebuilt, np.take_along_axis(a, perm[..., :, None].astype(np.intp), axis=-2), dtype, scale)
    for prim, params in [(L.qr_p, dict(full_matrices=True)), (L.lu_p, {}),
                         (L.svd_p, dict(full_matrices=True, compute_uv=True))]:
        _check_impl_vs_abstract(prim, [a], params)
