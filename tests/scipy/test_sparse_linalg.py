"""cg and gmres vs numpy.linalg.solve: matrices, functions and pytrees, preconditioners,
implicit gradients vs closed forms and finite differences, jit and vmap."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember.scipy.sparse.linalg import cg, gmres
from ember.testing import check_grads, check_vmap


def _spd(n, seed):
    r = np.random.default_rng(seed).normal(size=(n, n))
    return r @ r.T + n * np.eye(n)


def _general(n, seed):
    return np.random.default_rng(seed).normal(size=(n, n)) + 2 * n ** 0.5 * np.eye(n)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 12), st.integers(0, 1000))
def test_cg_spd_solves(n, seed):
    a, b = _spd(n, seed), np.random.default_rng(seed + 1).normal(size=n)
    x, info = cg(enp.asarray(a), enp.asarray(b), tol=1e-12)
    assert info is None
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, b), rtol=1e-8, atol=1e-10)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 12), st.integers(0, 1000), st.sampled_from([3, 20]))
def test_gmres_general_solves(n, seed, restart):
    a, b = _general(n, seed), np.random.default_rng(seed + 1).normal(size=n)
    x, info = gmres(enp.asarray(a), enp.asarray(b), tol=1e-12, restart=restart)
    assert info is None
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, b), rtol=1e-8, atol=1e-10)


def test_functions_pytrees_x0_and_preconditioner():
    a = _spd(5, 0)
    d = np.diag(a)
    b = np.arange(5.0)
    mv = lambda x: {"u": enp.asarray(a[:2, :2]) @ x["u"] + enp.asarray(a[:2, 2:]) @ x["v"],  # noqa: E731
                    "v": enp.asarray(a[2:, :2]) @ x["u"] + enp.asarray(a[2:, 2:]) @ x["v"]}
    bt = {"u": enp.asarray(b[:2]), "v": enp.asarray(b[2:])}
    want = np.linalg.solve(a, b)
    for solver in (cg, gmres):
        x, _ = solver(mv, bt, tol=1e-12)
        np.testing.assert_allclose(np.concatenate([np.asarray(x["u"]), np.asarray(x["v"])]),
                                   want, rtol=1e-9)
        x, _ = solver(enp.asarray(a), enp.asarray(b), x0=enp.asarray(want + 0.1), tol=1e-12,
                      M=enp.asarray(np.diag(1 / d)))
        np.testing.assert_allclose(np.asarray(x), want, rtol=1e-9)
    # maxiter bounds the work: one CG step is not the solution
    x1, _ = cg(enp.asarray(a), enp.asarray(b), maxiter=1)
    assert np.linalg.norm(np.asarray(x1) - want) > 1e-6


def test_implicit_gradients():
    a, b = _spd(4, 3), np.random.default_rng(9).normal(size=4)
    g = _general(4, 4)
    w = np.random.default_rng(5).normal(size=4)
    for solver, m in ((cg, a), (gmres, g)):
        loss = lambda m_, b_: enp.sum(enp.asarray(w) * solver(m_, b_, tol=1e-13)[0])  # noqa: E731
        gm, gb = ember.grad(loss, argnums=(0, 1))(enp.asarray(m), enp.asarray(b))
        x = np.linalg.solve(m, b)
        lam = np.linalg.solve(m.T, w)
        np.testing.assert_allclose(np.asarray(gb), lam, rtol=1e-8)
        np.testing.assert_allclose(np.asarray(gm), -np.outer(lam, x), rtol=1e-8, atol=1e-12)
        gj = ember.jit(ember.grad(loss, argnums=1))(enp.asarray(m), enp.asarray(b))
        np.testing.assert_allclose(np.asarray(gj), lam, rtol=1e-8)
    check_grads(lambda b_: cg(enp.asarray(a), b_, tol=1e-13)[0], (enp.asarray(b),), order=2)
    check_grads(lambda b_: gmres(enp.asarray(g), b_, tol=1e-13)[0], (enp.asarray(b),), order=1)


def test_vmap_over_right_hand_sides_and_matrices():
    a = enp.asarray(_spd(4, 1))
    bs = enp.asarray(np.random.default_rng(2).normal(size=(3, 4)))
    check_vmap(lambda b: cg(a, b, tol=1e-12)[0], (bs,), atol=1e-9, rtol=1e-9)
    gs = enp.asarray(np.stack([_general(4, s) for s in range(3)]))
    check_vmap(lambda m, b: gmres(m, b, tol=1e-12)[0], (gs, bs), atol=1e-9, rtol=1e-9)


def test_errors():
    with pytest.raises(TypeError, match=r"cg: `A` must be a square matrix or a function, got "
                                        r"float32\[2,3\]"):
        cg(enp.ones((2, 3)), enp.ones(2))
    with pytest.raises(TypeError, match="x0 must have the structure, shapes and dtype of b"):
        gmres(enp.eye(2), enp.ones(2), x0=enp.ones(3))
    with pytest.raises(ValueError, match="solve_method must be"):
        gmres(enp.eye(2), enp.ones(2), solve_method="qr")
