"""Regression tests from the complex-differentiation audit against JAX's conventions.

No JAX here: every reference is a closed form or a float64 central finite difference.
Conventions (JAX's): for a real loss L of complex z = x + iy, grad L = dL/dx - i dL/dy, so
the derivative along t is Re(sum(grad * t)); vjp is the plain (bilinear) transpose, so
Re(sum(ct * jvp(t))) == Re(sum(vjp(ct) * t)) for every R-linear derivative.
"""
import numpy as np
import pytest

import ember
import ember.numpy as enp
import ember.scipy.linalg as esl

_RNG = np.random.default_rng(0)


def _crand(*shape):
    return _RNG.standard_normal(shape) + 1j * _RNG.standard_normal(shape)


def _closed_logistic(z):
    return 1 / (1 + np.exp(-z))


# ---------------------------------------------------------------------------------------
# lax.logistic on complex input: the impl was scipy's expit, which has no complex loop,
# so every complex call (and hence every derivative) raised a raw numpy TypeError.

@pytest.mark.parametrize("dtype, tol", [(np.complex128, 1e-12), (np.complex64, 1e-5)])
def test_logistic_complex_forward_matches_closed_form(dtype, tol):
    z = np.array([0.3 + 0.4j, -0.5 + 0.1j, 0.9 - 0.6j, 30 + 1j, -30 - 2j], dtype=dtype)
    out = ember.lax.logistic(enp.asarray(z))
    assert out.dtype == dtype
    np.testing.assert_allclose(np.asarray(out), _closed_logistic(z.astype(np.complex128)),
                               rtol=tol, atol=tol)
    jitted = ember.jit(ember.lax.logistic)(enp.asarray(z))
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(out), rtol=tol, atol=tol)


def test_logistic_real_input_keeps_expit():
    # real dtypes still take scipy's expit: no overflow warning or NaN at large |x|
    from scipy.special import expit
    x = np.array([-800.0, -3.0, 0.0, 2.5, 800.0])
    np.testing.assert_array_equal(np.asarray(ember.lax.logistic(enp.asarray(x))), expit(x))


def test_logistic_complex_holomorphic_derivative():
    # d/dz sigma(z) = sigma(z) (1 - sigma(z)); jacfwd/jacrev/grad(holomorphic) all give it
    z = np.array([0.3 + 0.4j, -0.5 + 0.1j, 0.9 - 0.6j])
    s = _closed_logistic(z)
    want = s * (1 - s)
    g = ember.grad(lambda v: enp.sum(ember.lax.logistic(v)), holomorphic=True)(enp.asarray(z))
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-12)
    jf = ember.jacfwd(ember.lax.logistic, holomorphic=True)(enp.asarray(z))
    jr = ember.jacrev(ember.lax.logistic, holomorphic=True)(enp.asarray(z))
    np.testing.assert_allclose(np.asarray(jf), np.diag(want), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(np.asarray(jr), np.diag(want), rtol=1e-12, atol=1e-15)


def test_logistic_complex_real_loss_grad_and_hessian_vs_finite_differences():
    z = np.array([0.3 + 0.4j, -0.5 + 0.1j, 0.9 - 0.6j])
    w = _crand(3)

    def loss_np(z):
        return np.sum(np.abs(_closed_logistic(z) - w) ** 2)

    def loss(z):
        return enp.sum(enp.abs(ember.lax.logistic(z) - enp.asarray(w)) ** 2)

    g = np.asarray(ember.grad(loss)(enp.asarray(z)))
    eps = 1e-6
    for k in range(3):
        e = np.zeros(3)
        e[k] = eps
        dx = (loss_np(z + e) - loss_np(z - e)) / (2 * eps)
        dy = (loss_np(z + 1j * e) - loss_np(z - 1j * e)) / (2 * eps)
        np.testing.assert_allclose(g[k], dx - 1j * dy, rtol=1e-7, atol=1e-9)

    # second order through the real parametrisation z = a + i b
    def loss_r(v):
        return loss(v[:3] + 1j * v[3:])

    v0 = np.concatenate([z.real, z.imag])
    h = np.asarray(ember.hessian(loss_r)(enp.asarray(v0)))
    grad_r = ember.grad(loss_r)
    fd = np.stack([(np.asarray(grad_r(enp.asarray(v0 + eps * e))) -
                    np.asarray(grad_r(enp.asarray(v0 - eps * e)))) / (2 * eps)
                   for e in np.eye(6)])
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(h, h.T, rtol=1e-10, atol=1e-12)


def test_logistic_complex_vmap_of_grad():
    zs = np.stack([np.array([0.3 + 0.4j, -0.5 + 0.1j]), np.array([0.1 - 0.2j, 0.7 + 0.3j])])
    loss = lambda z: enp.sum(enp.abs(ember.lax.logistic(z)) ** 2)
    batched = np.asarray(ember.vmap(ember.grad(loss))(enp.asarray(zs)))
    looped = np.stack([np.asarray(ember.grad(loss)(enp.asarray(z))) for z in zs])
    np.testing.assert_allclose(batched, looped, rtol=1e-12)


# ---------------------------------------------------------------------------------------
# Places where ember deliberately differs from JAX 0.10.2 because JAX is mathematically
# wrong; these pin ember's (correct) answers.

def test_solve_assume_pos_complex_vjp_is_the_transpose_of_its_jvp():
    # jax.scipy.linalg.solve(assume_a="pos") gives a VJP that fails its own dot-product
    # test on complex Hermitian matrices (jax.test_util.check_grads fails); ember's passes
    # and its gradient matches finite differences of the real loss.
    a0 = _crand(3, 3)
    b = _crand(3)
    w = _crand(3)

    def f(a):
        p = a @ enp.conj(a.T) + enp.eye(3, dtype=a.dtype)
        return esl.solve(p, enp.asarray(b), assume_a="pos")

    def f_np(a):
        return np.linalg.solve(a @ a.conj().T + np.eye(3), b)

    def loss_np(a):
        return np.sum(np.real(f_np(a) * np.conj(w)))

    t = _crand(3, 3)
    ct = _crand(3)
    eps = 1e-6
    fd = (f_np(a0 + eps * t) - f_np(a0 - eps * t)) / (2 * eps)
    _, jt = ember.jvp(f, (enp.asarray(a0),), (enp.asarray(t),))
    np.testing.assert_allclose(np.asarray(jt), fd, rtol=1e-6, atol=1e-8)
    _, vjp_fn = ember.vjp(f, enp.asarray(a0))
    (g,) = vjp_fn(enp.asarray(ct))
    np.testing.assert_allclose(np.real(np.sum(np.asarray(g) * t)), np.real(np.sum(ct * fd)),
                               rtol=1e-6, atol=1e-8)
    gl = np.asarray(ember.grad(lambda a: enp.sum(enp.real(f(a) * enp.conj(enp.asarray(w)))))(
        enp.asarray(a0)))
    dl = (loss_np(a0 + eps * t) - loss_np(a0 - eps * t)) / (2 * eps)
    np.testing.assert_allclose(np.real(np.sum(gl * t)), dl, rtol=1e-6, atol=1e-8)


def test_power_complex_zero_exponent_has_zero_derivative_at_zero():
    # z ** 0 == 1 everywhere (0 ** 0 == 1), so its derivative is 0 at z = 0 too; JAX
    # returns NaN there for a complex exponent 0.
    z = np.array([0j, 1 + 1j, -2 + 0j])
    g = ember.grad(lambda v: enp.sum(enp.real(enp.power(v, 0.0 + 0j))))(enp.asarray(z))
    np.testing.assert_array_equal(np.asarray(g), np.zeros(3, np.complex128))
    _, t = ember.jvp(lambda v: enp.power(v, 0.0 + 0j), (enp.asarray(z),),
                     (enp.asarray(np.ones(3, np.complex128)),))
    np.testing.assert_array_equal(np.asarray(t), np.zeros(3, np.complex128))


def test_power_of_complex_zero_with_positive_real_part_exponent():
    # |0 ** w| = 0 ** Re(w) = 0 for Re(w) > 0, whatever Im(w); JAX gives NaN for
    # 0 ** (1.5 + 1j).  The derivative in z, w z ** (w - 1), is 0 there too (Re(w) > 1).
    w = np.array([1.5 + 1j, 2.0 - 3j])
    z = np.zeros(2, np.complex128)
    out = enp.power(enp.asarray(z), enp.asarray(w))
    np.testing.assert_array_equal(np.asarray(out), np.zeros(2, np.complex128))
    g = ember.grad(lambda v: enp.sum(enp.real(enp.power(v, enp.asarray(w)))))(enp.asarray(z))
    np.testing.assert_array_equal(np.asarray(g), np.zeros(2, np.complex128))
