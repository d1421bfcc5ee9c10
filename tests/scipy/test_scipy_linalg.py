"""ember.scipy.linalg vs scipy.linalg: values in float64 and float32, batches vs a loop
over scipy, derivatives vs float64 finite differences (order 2 for the solves, det and
expm), vmap vs a Python loop, jit vs eager, dtype rules, edge cases (size 0, 1x1,
singular matrices) and shape errors that name the function and argument."""
import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given, settings, strategies as st

import ember
from ember.scipy import linalg as L
from ember.testing import check_grads, check_vmap

TOL = {np.float64: 1e-9, np.float32: 2e-4, np.complex128: 1e-9, np.complex64: 2e-4}
DTYPES = [np.float64, np.float32]


def _rng(seed=0):
    return np.random.default_rng(seed)


def _mat(shape, dt=np.float64, seed=0):
    x = _rng(seed).normal(size=shape)
    if np.issubdtype(dt, np.complexfloating):
        x = x + 1j * _rng(seed + 100).normal(size=shape)
    return x.astype(dt)


def _spd(n, dt=np.float64, seed=0, batch=()):
    a = _mat(batch + (n, n), np.float64, seed)
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dt)


def _tri(n, dt=np.float64, seed=0, batch=(), lower=True):
    """A well-conditioned triangular matrix (a dominant diagonal); the other triangle
    holds junk, which must not be read."""
    a = _mat(batch + (n, n), np.float64, seed)
    return (a + 3 * n * np.eye(n) * np.sign(np.diagonal(a, 0, -2, -1))[..., None]).astype(dt)


def _close(got, want, dt, scale=1.0):
    got = np.asarray(got)
    assert got.dtype == dt, (got.dtype, dt)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=TOL[dt] * scale, atol=TOL[dt] * scale)


def _allclose(got, want, dt, scale=1.0):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _close(g, w, dt, scale)


# --- values vs scipy ------------------------------------------------------------------------

@pytest.mark.parametrize("dt", DTYPES + [np.complex128])
@pytest.mark.parametrize("trans", [0, 1, 2, "N", "T", "C"])
@pytest.mark.parametrize("lower", [False, True])
def test_solve_triangular(dt, trans, lower):
    a, b = _tri(4, dt, lower=lower), _mat((4, 3), dt, 1)
    if np.issubdtype(dt, np.complexfloating):
        a = a + 1j * _mat((4, 4), np.float64, 5).astype(dt)
    for bb in (b, b[:, 0]):
        for unit in (False, True):
            want = sl.solve_triangular(a, bb, trans=trans, lower=lower, unit_diagonal=unit)
            got = L.solve_triangular(a, bb, trans=trans, lower=lower, unit_diagonal=unit,
                                     overwrite_b=True, check_finite=False)
            _close(got, want, dt, 10 if unit else 1)


@pytest.mark.parametrize("dt", DTYPES)
def test_cholesky_and_cho_solve(dt):
    a, b = _spd(4, dt), _mat((4, 2), dt, 1)
    _close(L.cholesky(a), sl.cholesky(a), dt)
    _close(L.cholesky(a, lower=True), sl.cholesky(a, lower=True), dt)
    # Only the named triangle is read, as in SciPy.
    junk = np.triu(a) + np.tril(_mat((4, 4), dt, 3), -1)
    _close(L.cholesky(junk), sl.cholesky(a), dt)
    for lower in (False, True):
        c, low = L.cho_factor(a, lower=lower)
        assert low is lower
        _close(c, sl.cholesky(a, lower=lower), dt)
        for bb in (b, b[:, 0]):
            _close(L.cho_solve((c, low), bb), sl.cho_solve(sl.cho_factor(a, lower=lower), bb), dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (1, 1)])
def test_lu(dt, shape):
    a = _mat(shape, dt)
    _allclose(L.lu(a), sl.lu(a), dt)
    _allclose(L.lu(a, permute_l=True), sl.lu(a, permute_l=True), dt)


@pytest.mark.parametrize("dt", DTYPES + [np.complex128])
def test_lu_factor_and_lu_solve(dt):
    a, b = _mat((4, 4), dt), _mat((4, 2), dt, 1)
    lu, piv = L.lu_factor(a)
    slu, spiv = sl.lu_factor(a)
    _close(lu, slu, dt)
    assert piv.dtype == np.int32 and piv.tolist() == spiv.tolist()
    for trans in (0, 1, 2):
        for bb in (b, b[:, 0]):
            _close(L.lu_solve((lu, piv), bb, trans=trans), sl.lu_solve((slu, spiv), bb, trans=trans),
                   dt, 10)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("assume_a", ["gen", "sym", "her", "pos", "positive definite",
                                      "lower triangular", "upper triangular"])
def test_solve(dt, assume_a):
    a = _spd(4, dt) if assume_a in ("sym", "her", "pos", "positive definite") else _tri(4, dt)
    b = _mat((4, 2), dt, 1)
    for bb in (b, b[:, 0]):
        for lower in (False, True):
            _close(L.solve(a, bb, lower=lower, assume_a=assume_a),
                   sl.solve(a, bb, lower=lower, assume_a=assume_a), dt, 10)


@pytest.mark.parametrize("dt", DTYPES)
def test_inv_det(dt):
    a = _mat((4, 4), dt)
    _close(L.inv(a), sl.inv(a), dt, 10)
    _close(L.det(a), sl.det(a), dt, 10)


@pytest.mark.parametrize("dt", DTYPES)
def test_eigh(dt):
    a, b = _spd(4, dt), _spd(4, dt, 7)
    w, v = L.eigh(a)
    _close(w, sl.eigh(a)[0], dt, 10)
    _close(np.abs(np.asarray(v)), np.abs(sl.eigh(a)[1]), dt, 10)
    _close(L.eigh(a, eigvals_only=True, lower=False), sl.eigh(a, eigvals_only=True), dt, 10)
    _close(L.eigh(a, eigvals=(1, 2), eigvals_only=True),
           sl.eigh(a, subset_by_index=(1, 2), eigvals_only=True), dt, 10)
    for kind in (1, 2, 3):
        w, v = L.eigh(a, b, type=kind)
        ws, vs = sl.eigh(a, b, type=kind)
        _close(w, ws, dt, 100)
        _close(np.abs(np.asarray(v)), np.abs(vs), dt, 100)


def test_eigh_tridiagonal():
    d, e = np.array([1.0, 3.0, 2.0, 5.0]), np.array([0.5, -1.0, 2.0])
    for dt in DTYPES:
        dd, ee = d.astype(dt), e.astype(dt)
        _close(L.eigh_tridiagonal(dd, ee, eigvals_only=True), sl.eigh_tridiagonal(d, e, eigvals_only=True),
               dt, 10)
        w, v = L.eigh_tridiagonal(dd, ee)
        _close(np.abs(np.asarray(v)), np.abs(sl.eigh_tridiagonal(d, e)[1]), dt, 10)
    _close(L.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 2)),
           sl.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 2)), np.float64)
    check_grads(lambda d, e: L.eigh_tridiagonal(d, e, eigvals_only=True), (d, e), order=2)
    check_vmap(lambda d, e: L.eigh_tridiagonal(d, e, eigvals_only=True),
               (np.stack([d, d + 1]), np.stack([e, e])), atol=1e-9)
    assert L.eigh_tridiagonal(np.zeros(0), np.zeros(0), eigvals_only=True).shape == (0,)
    with pytest.raises(ValueError, match="select='v' is not supported"):
        L.eigh_tridiagonal(d, e, select="v", select_range=(0.0, 1.0))
    with pytest.raises(TypeError, match="eigh_tridiagonal: e must have one element fewer"):
        L.eigh_tridiagonal(d, d)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_svd_qr_polar(dt, shape):
    a = _mat(shape, dt)
    # Signs of singular vectors and of q's columns follow LAPACK, as SciPy's do.
    _allclose(L.svd(a, full_matrices=False, lapack_driver="gesvd"), sl.svd(a, full_matrices=False),
              dt, 10)
    _close(L.svd(a, compute_uv=False), sl.svd(a, compute_uv=False), dt)
    assert [x.shape for x in L.svd(a)] == [x.shape for x in sl.svd(a)]
    _allclose(L.qr(a), sl.qr(a), dt, 10)
    _allclose(L.qr(a, mode="economic"), sl.qr(a, mode="economic"), dt, 10)
    r = L.qr(a, mode="r")
    assert isinstance(r, tuple) and len(r) == 1
    _close(r[0], sl.qr(a, mode="r")[0], dt, 10)
    for mode in ("full", "economic", "r"):
        *qr_, p = L.qr(a, mode=mode, pivoting=True)
        *sqr, sp = sl.qr(a, mode=mode, pivoting=True)
        assert p.dtype == np.int32 and p.tolist() == sp.tolist()
        _allclose(tuple(qr_), tuple(sqr), dt, 10)
    for side in ("right", "left"):
        _allclose(L.polar(a, side), sl.polar(a, side), dt, 10)


EXPM_CASES = {
    "general": _mat((4, 4)), "tiny": 1e-3 * _mat((4, 4)), "large": 8 * _mat((4, 4)),
    "nilpotent": np.triu(_mat((4, 4)), 1), "zeros": np.zeros((3, 3)),
    "rotation": np.array([[0.0, 2.0], [-2.0, 0.0]]),
}


@pytest.mark.parametrize("case", sorted(EXPM_CASES))
@pytest.mark.parametrize("dt", [np.float64, np.float32, np.complex128, np.complex64])
def test_expm(case, dt):
    a = EXPM_CASES[case]
    if np.issubdtype(dt, np.complexfloating):
        a = a + 0.5j * a.T
    a = a.astype(dt)
    want = sl.expm(a.astype(np.complex128 if np.iscomplexobj(a) else np.float64))
    scale = max(1.0, np.abs(want).max())
    _close(L.expm(a), want, dt, scale * (10 if dt in (np.float32, np.complex64) else 1))


def test_expm_too_many_squarings_is_nan_and_frechet():
    assert np.isnan(np.asarray(L.expm(1e6 * np.ones((2, 2))))).all()
    _close(L.expm(40 * np.eye(2), max_squarings=2), np.full((2, 2), np.nan), np.float64)
    a, e = _mat((3, 3)), _mat((3, 3), seed=2)
    ea, la = L.expm_frechet(a, e)
    sea, sla = sl.expm_frechet(a, e)
    _close(ea, sea, np.float64)
    _close(la, sla, np.float64, 10)
    _close(L.expm_frechet(a, e, compute_expm=False), sla, np.float64, 10)


SQRTM_CASES = {
    "spd": _spd(4), "general": _mat((4, 4)) + 4 * np.eye(4), "negative": np.diag([-4.0, 9.0]),
    "jordan": np.array([[1.0, 1.0], [0.0, 1.0]]), "one": np.array([[4.0]]),
}


@pytest.mark.parametrize("case", sorted(SQRTM_CASES))
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_sqrtm(case, dt):
    a = SQRTM_CASES[case].astype(dt)
    want = sl.sqrtm(a.astype(np.complex128))
    cdt = np.complex128 if dt == np.float64 else np.complex64
    _close(L.sqrtm(a), want, cdt, 10)   # always complex, as in JAX
    got = np.asarray(L.sqrtm(a)).astype(np.complex128)
    np.testing.assert_allclose(got @ got, a, atol=TOL[dt] * 100)


def test_sqrtm_batches_and_transforms():
    a = np.stack([_spd(3), _spd(3, seed=1)])
    _close(L.sqrtm(a), _loop(lambda x: sl.sqrtm(x.astype(complex)), a), np.complex128)
    check_vmap(L.sqrtm, (a,), atol=1e-9)
    np.testing.assert_allclose(np.asarray(ember.jit(L.sqrtm)(a)), np.asarray(L.sqrtm(a)), atol=1e-12)
    check_grads(lambda x: L.sqrtm(x).real, (a[0],), order=2)
    check_grads(lambda x: L.sqrtm(x), (_mat((3, 3)) + 3 * np.eye(3),), order=1)
    # d sqrtm at the identity is dA / 2, even with its repeated eigenvalues.
    np.testing.assert_allclose(np.asarray(ember.grad(lambda x: L.sqrtm(x).real.sum())(np.eye(2))),
                               np.full((2, 2), 0.5), atol=1e-12)
    assert L.sqrtm(np.zeros((0, 0))).shape == (0, 0)
    assert L.sqrtm(np.eye(2, dtype=np.int32)).dtype == np.complex64


@pytest.mark.parametrize("dt", DTYPES + [np.complex128])
def test_hessenberg(dt):
    a = _mat((5, 5), dt)
    h, q = L.hessenberg(a, calc_q=True)
    sh, sq = sl.hessenberg(a, calc_q=True)
    _close(h, sh, dt, 10)
    _close(q, sq, dt, 10)
    _close(L.hessenberg(a), sh, dt, 10)
    _allclose(L.hessenberg(np.stack([a, 2 * a]), calc_q=True),
              _loop(lambda x: sl.hessenberg(x, calc_q=True), np.stack([a, 2 * a])), dt, 10)
    if dt == np.float64:
        check_grads(lambda x: L.hessenberg(x, calc_q=True), (a[:4, :4],), order=2)
        check_vmap(lambda x: L.hessenberg(x, calc_q=True), (np.stack([a, 2 * a]),), atol=1e-9)
        np.testing.assert_allclose(np.asarray(ember.jit(L.hessenberg)(a)), sh, atol=1e-12)
    if dt == np.complex128:
        check_grads(lambda x: L.hessenberg(x, calc_q=True), (a[:4, :4],), order=1)
    assert L.hessenberg(np.zeros((0, 0))).shape == (0, 0)
    _close(L.hessenberg(np.array([[3.0]]), calc_q=True)[1], [[1.0]], np.float64)


def test_structured_matrices():
    c, r = np.array([1.0, 2.0, 3.0]), np.array([9.0, 4.0, 5.0, 6.0])
    _close(L.toeplitz(c, r), sl.toeplitz(c, r), np.float64)
    _close(L.toeplitz(c + 1j), sl.toeplitz(c + 1j), np.complex128)
    _close(L.hankel(c, r), sl.hankel(c, r), np.float64)
    _close(L.hankel(c), sl.hankel(c), np.float64)
    _close(L.circulant(c), sl.circulant(c), np.float64)
    assert L.toeplitz(np.array([1, 2], np.int32)).dtype == np.int32
    assert L.toeplitz(np.ones((2, 3)), np.ones(4)).shape == (2, 3, 4)
    assert L.toeplitz(5.0).shape == (1, 1)
    blocks = (np.ones((2, 2)), 3.0, np.arange(3.0), np.zeros((0, 2)))
    _close(L.block_diag(*blocks), sl.block_diag(*blocks), np.float64)
    assert L.block_diag().shape == (1, 0)
    assert L.block_diag(np.ones(2, np.float32), 2.0).dtype == np.float32
    assert L.block_diag(np.ones(2, np.int32)).dtype == np.int32


# --- batches --------------------------------------------------------------------------------

def _loop(fn, *args):
    """scipy's fn over the leading (batch) dim of every argument."""
    outs = [fn(*xs) for xs in zip(*args)]
    if isinstance(outs[0], tuple):
        return tuple(np.stack(o) for o in zip(*outs))
    return np.stack(outs)


def test_batched_against_a_scipy_loop():
    dt = np.float64
    a, spd, b = _tri(4, batch=(3,)), _spd(4, batch=(3,)), _mat((3, 4, 2), seed=1)
    _close(L.solve_triangular(a, b, trans=1),
           _loop(lambda x, y: sl.solve_triangular(x, y, trans=1), a, b), dt)
    _close(L.solve_triangular(a, b[..., 0], lower=True),
           _loop(lambda x, y: sl.solve_triangular(x, y, lower=True), a, b[..., 0]), dt)
    # Batch dims broadcast: one right-hand side for every matrix.
    _close(L.solve_triangular(a, b[:1]), _loop(lambda x: sl.solve_triangular(x, b[0]), a), dt)
    _close(L.cholesky(spd), _loop(sl.cholesky, spd), dt)
    _close(L.cho_solve(L.cho_factor(spd), b),
           _loop(lambda x, y: sl.cho_solve(sl.cho_factor(x), y), spd, b), dt)
    _allclose(L.lu(a), _loop(sl.lu, a), dt)
    lu, piv = L.lu_factor(a)
    _close(L.lu_solve((lu, piv), b, trans=1),
           _loop(lambda x, y: sl.lu_solve(sl.lu_factor(x), y, trans=1), a, b), dt)
    _close(L.solve(a, b), _loop(sl.solve, a, b), dt)
    _close(L.solve(spd, b, assume_a="pos"),
           _loop(lambda x, y: sl.solve(x, y, assume_a="pos"), spd, b), dt)
    _close(L.inv(a), _loop(sl.inv, a), dt)
    _close(L.det(a), _loop(sl.det, a), dt)
    _close(L.eigh(spd, eigvals_only=True), _loop(lambda x: sl.eigh(x, eigvals_only=True), spd), dt)
    _close(L.svd(a, compute_uv=False), _loop(lambda x: sl.svd(x, compute_uv=False), a), dt)
    _allclose(L.qr(a), _loop(sl.qr, a), dt)
    _close(L.expm(0.3 * a), _loop(sl.expm, 0.3 * a), dt, 100)
    _close(L.expm(np.stack([np.zeros((4, 4)), 20 * np.eye(4)])),
           np.stack([np.eye(4), sl.expm(20 * np.eye(4))]), dt, sl.expm(20 * np.eye(4)).max())


# --- derivatives ------------------------------------------------------------------------------

def test_grads_order_two():
    a, b, spd = _tri(3), _mat((3, 2), seed=1), _spd(3)
    for trans, order in ((0, 1), (1, 2)):
        check_grads(lambda x, y: L.solve_triangular(x, y, trans=trans, lower=True), (a, b), order=order)
    check_grads(lambda y: L.solve_triangular(a, y[:, 0], unit_diagonal=True), (b,), order=2)
    for lower, order in ((False, 1), (True, 2)):
        check_grads(lambda x, y: L.cho_solve(L.cho_factor(x, lower=lower), y), (spd, b), order=order)
    check_grads(L.det, (_mat((3, 3)),), order=2)
    check_grads(L.expm, (0.5 * _mat((3, 3)),), order=2)
    check_grads(L.expm, (4.0 * _mat((3, 3)),), order=1)  # with squarings


def test_grads_order_one():
    a, b, spd = _mat((3, 3)), _mat((3, 2), seed=1), _spd(3)
    check_grads(L.cholesky, (spd,), order=1)
    check_grads(lambda x: L.cholesky(x, lower=True), (spd,), order=1)
    check_grads(lambda x: L.lu(x)[1:], (a,), order=1)
    check_grads(lambda x: L.lu(x, permute_l=True), (_mat((4, 3)),), order=1)
    check_grads(lambda x, y: L.lu_solve(L.lu_factor(x), y, trans=1), (a, b), order=1)
    check_grads(lambda x, y: L.solve(x, y), (a, b), order=1)
    check_grads(lambda x, y: L.solve(x, y[:, 0], assume_a="pos"), (spd, b), order=1)
    check_grads(L.inv, (a,), order=1)
    check_grads(lambda x: L.eigh(x, eigvals_only=True), (spd,), order=1)
    # Gauge-free functions of the eigen/singular vectors.
    check_grads(lambda x: (lambda w, v: (v * w) @ v.T)(*L.eigh(x)), (spd,), order=1)
    check_grads(lambda x, y: L.eigh(x, y, eigvals_only=True), (spd, _spd(3, seed=4)), order=1)
    check_grads(lambda x: (lambda u, s, vh: (u @ vh, s))(*L.svd(x, full_matrices=False)),
                (_mat((4, 3)),), order=1)
    check_grads(lambda x: L.qr(x), (a,), order=1)
    check_grads(lambda x: L.qr(x, mode="r"), (_mat((4, 3)),), order=1)
    check_grads(lambda x: L.qr(x, mode="economic", pivoting=True)[:2], (_mat((4, 3)),), order=1)
    check_grads(lambda x: L.polar(x), (_mat((4, 3)),), order=1)
    check_grads(lambda x, e: L.expm_frechet(x, e, compute_expm=False), (0.5 * a, b @ b.T), order=1)
    check_grads(lambda c, r: L.toeplitz(c, r), (np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0])), order=1)
    check_grads(lambda x, y: L.block_diag(x, y), (a, b), order=1)


def test_complex_grads():
    c, b = _mat((3, 3), np.complex128), _mat((3, 2), np.complex128, 1)
    t, h = c + 6 * np.eye(3), c @ c.conj().T + 3 * np.eye(3)
    check_grads(lambda x, y: L.solve_triangular(x, y, trans=2, lower=True), (t, b), order=1)
    check_grads(lambda x, y: L.lu_solve(L.lu_factor(x), y, trans=2), (t, b), order=1)
    check_grads(lambda x, y: L.cho_solve(L.cho_factor(x), y), (h, b), order=1)
    check_grads(L.expm, (0.5 * c,), order=1)
    check_grads(L.sqrtm, (t,), order=1)


# --- vmap and jit -----------------------------------------------------------------------------

def test_vmap_matches_a_loop():
    a, spd, b = _tri(3, batch=(4,)), _spd(3, batch=(4,)), _mat((4, 3, 2), seed=1)
    check_vmap(lambda x, y: L.solve_triangular(x, y, lower=True), (a, b))
    check_vmap(lambda x, y: L.solve_triangular(x, y, trans=2), (a, b[0]), in_axes=(0, None))
    check_vmap(lambda y: L.solve_triangular(a[0], y), (np.swapaxes(b, 0, 1),), in_axes=1,
               out_axes=1)
    check_vmap(lambda x, y: L.cho_solve(L.cho_factor(x), y), (spd, b))
    check_vmap(lambda x, y: L.lu_solve(L.lu_factor(x), y), (a, b))
    check_vmap(lambda x: L.lu(x), (a,))
    check_vmap(lambda x: L.qr(x, pivoting=True), (a,), atol=1e-9)
    check_vmap(L.det, (a,), atol=1e-9)
    check_vmap(L.expm, (0.5 * a,), atol=1e-9)
    check_vmap(lambda x: L.eigh(x, eigvals_only=True), (spd,), atol=1e-9)
    check_vmap(lambda c: L.toeplitz(c), (b[:, :, 0],))


def test_jit_matches_eager():
    a, spd, b = _tri(3), _spd(3), _mat((3, 2), seed=1)
    fns = [
        lambda x, y: L.solve_triangular(x, y, trans="T"),
        lambda x, y: L.cho_solve(L.cho_factor(x, lower=True), y),
        lambda x, y: L.lu_solve(L.lu_factor(x), y, trans=2),
        lambda x, y: L.solve(x, y, assume_a="pos"),
        lambda x, y: L.lu(x) + L.qr(x) + L.svd(x) + L.eigh(x) + L.polar(x),
        lambda x, y: (L.inv(x), L.det(x), L.expm(x), L.cholesky(x), L.toeplitz(y[:, 0], y[:, 1])),
    ]
    for fn in fns:
        eager, jitted = ember.tree.leaves(fn(spd, b)), ember.tree.leaves(ember.jit(fn)(spd, b))
        assert len(eager) == len(jitted)
        for e, j in zip(eager, jitted):
            np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=1e-10, atol=1e-12)


# --- dtypes, edge cases, errors -------------------------------------------------------------

def test_dtypes():
    ai = np.array([[2, 1], [1, 3]], np.int32)
    for fn in (L.inv, L.det, L.expm, L.cholesky, lambda x: L.solve(x, np.array([1, 2], np.int32)),
               lambda x: L.solve_triangular(x, np.array([1, 2], np.int32)), lambda x: L.lu(x)[2],
               lambda x: L.eigh(x)[0], lambda x: L.svd(x)[1], lambda x: L.qr(x)[1]):
        assert fn(ai).dtype == np.float32
        assert fn(ai.astype(np.float32)).dtype == np.float32
        assert fn(ai.astype(np.float64)).dtype == np.float64
    with ember.default_float("float64"):
        assert L.inv(ai).dtype == np.float64
    assert L.expm(ai.astype(np.complex64)).dtype == np.complex64
    assert L.lu(ai.astype(np.complex64))[0].dtype == np.float32  # p is real, as in SciPy
    assert L.solve_triangular(ai.astype(np.float32), np.ones(2)).dtype == np.float64


def test_size_zero_and_one_by_one():
    z, zb = np.zeros((0, 0)), np.zeros((0, 2))
    assert L.solve_triangular(z, zb).shape == (0, 2)
    assert L.cho_solve(L.cho_factor(z), zb).shape == (0, 2)
    assert L.cholesky(z).shape == (0, 0)
    assert [x.shape for x in L.lu(z)] == [(0, 0)] * 3
    assert [x.shape for x in L.lu(np.zeros((0, 3)))] == [x.shape for x in sl.lu(np.zeros((0, 3)))]
    assert L.lu_solve(L.lu_factor(z), zb).shape == (0, 2)
    assert L.solve(z, zb).shape == (0, 2)
    assert L.inv(z).shape == (0, 0)
    assert float(L.det(z)) == sl.det(z) == 1.0
    assert L.eigh(z, eigvals_only=True).shape == (0,)
    assert L.expm(z).shape == (0, 0)
    assert L.toeplitz(np.zeros(0)).shape == (0, 0)
    one = np.array([[4.0]])
    for fn in (L.inv, L.det, L.expm, L.cholesky):
        _close(fn(one), getattr(sl, fn.__name__)(one), np.float64)
    _allclose(L.lu(one), sl.lu(one), np.float64)
    _close(L.solve_triangular(one, np.array([2.0])), [0.5], np.float64)


@pytest.mark.filterwarnings("ignore::scipy.linalg.LinAlgWarning")
def test_singular_matrices_do_not_raise():
    s = np.array([[1.0, 2.0], [2.0, 4.0]])
    _allclose(L.lu(s), sl.lu(s), np.float64)
    lu, piv = L.lu_factor(s)
    _close(lu, sl.lu_factor(s)[0], np.float64)
    assert float(L.det(s)) == 0.0
    assert not np.isfinite(np.asarray(L.solve(s, np.ones(2)))).all()
    assert not np.isfinite(np.asarray(L.inv(s))).all()
    assert np.isnan(np.asarray(L.cholesky(-np.eye(2)))).all()


@pytest.mark.parametrize("call,message", [
    (lambda: L.solve_triangular(np.ones((3, 4)), np.ones(3)), "solve_triangular: a must be square"),
    (lambda: L.solve_triangular(np.eye(3), np.ones(4)), "solve_triangular: b must have 3 rows"),
    (lambda: L.solve_triangular(np.eye(3), np.ones(3), trans=3), "trans must be 0, 1, 2"),
    (lambda: L.cholesky(np.ones(3)), "cholesky: a must be square"),
    (lambda: L.cho_solve(np.eye(3), np.ones(3)), "cho_solve: c_and_lower"),
    (lambda: L.lu(np.ones(3)), "lu: a must be a matrix"),
    (lambda: L.lu_solve(L.lu_factor(np.eye(2)), np.ones(3)), "lu_solve: b must have 2 rows"),
    (lambda: L.solve(np.ones((2, 3)), np.ones(2)),
     r"solve: a must be square .* got shape \(2, 3\)"),
    (lambda: L.solve(np.eye(2), np.ones(2), assume_a="banded"), "assume_a must be one of"),
    (lambda: L.inv(np.ones((2, 3))), "inv: a must be square"),
    (lambda: L.det(np.ones(2)), "det: a must be square"),
    (lambda: L.eigh(np.eye(2), np.eye(3)), "eigh: b must have the shape of a"),
    (lambda: L.expm(np.ones((2, 3))), "expm: A must be square"),
    (lambda: L.sqrtm(np.ones((2, 3))), "sqrtm: A must be square"),
    (lambda: L.hessenberg(np.ones((2, 3))), "hessenberg: a must be square"),
    (lambda: L.qr(np.eye(2), mode="banana"), "qr: mode must be"),
    (lambda: L.qr(np.eye(2), mode="raw"), "mode='raw' .* is not available"),
    (lambda: L.block_diag(np.ones((1, 1, 1))), "block_diag: blocks must have at most 2 dims"),
])
def test_errors(call, message):
    with pytest.raises((TypeError, ValueError), match=message):
        call()


# --- hypothesis: shapes ---------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(m=st.integers(0, 4), n=st.integers(0, 4), batch=st.integers(0, 2), seed=st.integers(0, 99))
def test_lu_shapes_property(m, n, batch, seed):
    a = _mat((batch,) * min(batch, 1) + (m, n), seed=seed)
    p, l, u = (np.asarray(x) for x in L.lu(a))
    np.testing.assert_allclose(p @ l @ u, a, atol=1e-12)
    if batch == 0 and m and n:
        _allclose(L.lu(a), sl.lu(a), np.float64)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 4), k=st.integers(0, 3), trans=st.sampled_from([0, 1, 2]),
       lower=st.booleans(), unit=st.booleans(), seed=st.integers(0, 99))
def test_solve_triangular_property(n, k, trans, lower, unit, seed):
    a, b = _tri(n, seed=seed), _mat((n, k), seed=seed + 1)
    _close(L.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit),
           sl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit), np.float64, 100)


@settings(max_examples=20, deadline=None)
@given(m=st.integers(1, 5), batch=st.sampled_from([(), (2,), (2, 3)]), data=st.data())
def test_pivots_to_permutation_traced_matches_the_host_loop(m, batch, data):
    from ember.scipy.linalg.solves import pivots_to_permutation
    k = data.draw(st.integers(0, m))
    piv = np.array(data.draw(st.lists(st.integers(0, m - 1), min_size=k * int(np.prod(batch)),
                                      max_size=k * int(np.prod(batch)))), np.int32).reshape(batch + (k,))
    host = np.asarray(pivots_to_permutation(piv, m))
    traced = np.asarray(ember.jit(lambda p: pivots_to_permutation(p, m))(piv))
    assert host.dtype == traced.dtype == np.int32
    np.testing.assert_array_equal(traced, host)
