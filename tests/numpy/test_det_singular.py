"""Derivatives of `enp.linalg.det` at singular matrices (the adjugate, which the LU
derivative turned into NaN), against exact integer cofactors and the written-out
polynomial, and the SVD derivative of square singular matrices it relies on."""
import itertools

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.testing import check_vmap

det = enp.linalg.det
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _exact_det(a):
    """Leibniz expansion in Python integers (exact for integer matrices)."""
    n = len(a)
    total = 0
    for p in itertools.permutations(range(n)):
        sign = (-1) ** sum(p[i] > p[j] for i in range(n) for j in range(i + 1, n))
        term = sign
        for i in range(n):
            term *= int(a[i][p[i]])
        total += term
    return total


def _exact_cofactors(a):
    n = a.shape[0]
    c = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, 0), j, 1)
            c[i, j] = (-1) ** (i + j) * (_exact_det(minor) if n > 1 else 1)
    return c


def _written_out(a):
    """det as the Leibniz polynomial in ember ops: every derivative is exact."""
    n = a.shape[0]
    total = 0.0
    for p in itertools.permutations(range(n)):
        sign = (-1) ** sum(p[i] > p[j] for i in range(n) for j in range(i + 1, n))
        term = sign
        for i in range(n):
            term = term * a[i, p[i]]
        total = total + term
    return total


SINGULAR = {
    "rank2-zero-last-pivot": [[1, 2, 3], [4, 5, 6], [7, 8, 9]],
    "zero-first-column": [[0, 1, 2], [0, 3, 4], [0, 5, 7]],
    "rank2-dup-rows": [[1, 2, 0], [2, 4, 0], [0, 0, 1]],
    "rank1-outer": [[4, 5, 6], [8, 10, 12], [12, 15, 18]],
    "zeros": [[0, 0, 0], [0, 0, 0], [0, 0, 0]],
    "strictly-upper": [[0, 1, 0], [0, 0, 1], [0, 0, 0]],
    "2x2": [[1, 2], [2, 4]],
    "4x4": [[1, 2, 3, 4], [2, 1, 0, 1], [3, 3, 3, 5], [0, 1, 1, 1]],
}


@pytest.mark.parametrize("name", SINGULAR)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128], ids=str)
def test_det_gradient_at_singular_matrices_is_the_cofactor_matrix(name, dtype):
    a = np.array(SINGULAR[name], dtype)
    want = _exact_cofactors(np.array(SINGULAR[name]))
    assert _exact_det(SINGULAR[name]) == 0
    tol = 1e-4 if dtype == np.float32 else 1e-10
    scale = max(1.0, np.abs(want).max())
    if dtype == np.complex128:
        got = ember.jacfwd(det, holomorphic=True)(a)   # d det / d a_ij
    else:
        got = ember.grad(det)(a)
        np.testing.assert_allclose(np.asarray(ember.jit(ember.grad(det))(a)), want, atol=tol * scale)
        np.testing.assert_allclose(np.asarray(ember.jacfwd(det)(a)), want, atol=tol * scale)
    assert np.all(np.isfinite(np.asarray(got)))
    np.testing.assert_allclose(np.asarray(got), want, atol=tol * scale)


@pytest.mark.parametrize("name", ["rank2-zero-last-pivot", "zero-first-column", "4x4"])
def test_det_higher_derivatives_at_rank_deficient_by_one(name):
    # rank n-1 with distinct singular values: second and third derivatives exact
    a = np.array(SINGULAR[name], np.float64)
    for d in (ember.hessian, lambda f: ember.jacfwd(ember.jacrev(f)),
              lambda f: ember.jacfwd(ember.hessian(f))):
        want = np.asarray(d(_written_out)(a))
        got = np.asarray(d(det)(a))
        np.testing.assert_allclose(got, want, atol=1e-9 * max(1.0, np.abs(want).max()))
    np.testing.assert_allclose(np.asarray(ember.jit(ember.hessian(det))(a)),
                               np.asarray(ember.hessian(_written_out)(a)), atol=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_det_derivatives_at_nonsingular_matrices_unchanged(seed):
    a = np.random.default_rng(seed).standard_normal((3, 3))
    for d in (ember.grad, ember.hessian, lambda f: ember.jacfwd(ember.hessian(f))):
        np.testing.assert_allclose(np.asarray(d(det)(a)), np.asarray(d(_written_out)(a)),
                                   atol=1e-11)


def test_det_gradient_vmap_over_singular_and_regular_matrices():
    rng = np.random.default_rng(3)
    xs = np.stack([np.array(SINGULAR["rank2-zero-last-pivot"], float), rng.standard_normal((3, 3)),
                   np.zeros((3, 3)), np.array(SINGULAR["rank1-outer"], float)])
    check_vmap(ember.grad(det), (xs,))
    got = np.asarray(ember.vmap(ember.grad(det))(xs))
    want = np.stack([np.asarray(ember.grad(_written_out)(x)) for x in xs])
    np.testing.assert_allclose(got, want, atol=1e-10)
    # a batch of matrices in one call (the leading dims of det's input)
    np.testing.assert_allclose(np.asarray(ember.grad(lambda x: det(x).sum())(xs)), want, atol=1e-10)


def test_det_gradient_of_empty_and_half_precision_inputs():
    assert np.asarray(ember.grad(det)(np.zeros((0, 0)))).shape == (0, 0)
    g = ember.grad(det)(np.array([[1.0, 2.0], [2.0, 4.0]], np.float16))
    assert g.dtype == np.float16
    np.testing.assert_array_equal(np.asarray(g, np.float64), [[4.0, -2.0], [-2.0, 1.0]])


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=str)
def test_svd_jvp_of_a_square_singular_matrix(dtype):
    # U diag(s^3) Vh = A A^H A is gauge-invariant: its jvp through the SVD must
    # match the product's, also where a singular value is exactly 0
    a = np.array(SINGULAR["rank2-zero-last-pivot"], dtype)
    t = np.random.default_rng(0).standard_normal((3, 3)).astype(dtype)
    if dtype == np.complex128:
        t = t + 1j * np.random.default_rng(1).standard_normal((3, 3))

    def via_svd(x):
        u, s, vh = enp.linalg.svd(x)
        return (u * (s ** 3).astype(x.dtype)) @ vh

    def direct(x):
        return x @ enp.conj(x.T) @ x
    _, got = ember.jvp(via_svd, (a,), (t,))
    _, want = ember.jvp(direct, (a,), (t,))
    assert np.all(np.isfinite(np.asarray(got)))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=1e-9)
