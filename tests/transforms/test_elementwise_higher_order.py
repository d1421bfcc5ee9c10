"""Higher-order derivatives of elementwise functions at their special points (pow, sinc, remainder)."""
import math

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax


def _pow2(v):
    return lax.pow(v[0], v[1])


# ---- pow: d/dx x**y = y * x**(y-1), d/dy = x**y * log(x) -------------------------------------

@pytest.mark.parametrize("y,want", [(1.0, 1.0), (2.0, 0.0), (3.0, 0.0), (0.5, math.inf)])
def test_pow_grad_x_at_zero(y, want):
    # JAX: y * 0**(y-1)
    assert float(ember.grad(lambda x: lax.pow(x, enp.asarray(y, "float64")))(enp.asarray(0.0, "float64"))) == want


def test_pow_grad_x_at_zero_zero_is_zero():
    # x**0 is the constant 1 (torch gives 0 too; JAX 0.10 gives nan there)
    g = ember.grad(_pow2)(enp.asarray([0.0, 0.0], "float64"))
    np.testing.assert_array_equal(np.asarray(g), [0.0, 0.0])


@pytest.mark.parametrize("y", [2.0, 0.5, 0.0])
def test_pow_grad_y_at_zero_base(y):
    g = ember.grad(lambda y: lax.pow(enp.asarray(0.0, "float64"), y))(enp.asarray(y, "float64"))
    assert float(g) == 0.0


def _pow_hessian(x, y):
    p = x ** y
    lx = math.log(x)
    dxx = y * (y - 1) * x ** (y - 2)
    dxy = x ** (y - 1) * (1 + y * lx)
    dyy = p * lx * lx
    return np.array([[dxx, dxy], [dxy, dyy]])


@pytest.mark.parametrize("x,y", [(2.0, 0.0), (1.0, 1.0), (2.0, 1.0), (1.5, 2.5), (0.5, -1.0), (3.0, 2.0)])
@pytest.mark.parametrize("hess", ["fwd", "rev"])
def test_pow_hessian_symmetric_and_exact(x, y, hess):
    # the y == 0 / y == 1 points: the derivative of y*x**(y-1) w.r.t. y used to be dropped there
    h = ember.hessian(_pow2) if hess == "fwd" else ember.jacrev(ember.jacrev(_pow2))
    got = np.asarray(h(enp.asarray([x, y], "float64")))
    np.testing.assert_allclose(got, _pow_hessian(x, y), rtol=1e-12, atol=1e-14)


# third derivatives d^3 x**y / d v_i d v_j d v_k, v = (x, y), flattened (JAX 0.10 values)
THIRD = {
    (2.0, 0.0): [0.0, -0.25, -0.25, 0.6931471805599453, -0.25, 0.6931471805599453,
                 0.6931471805599453, 0.33302465198892944],
    (1.0, 1.0): [0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0],
    (2.0, 1.0): [0.0, 0.5, 0.5, 1.8667473750380918, 0.5, 1.8667473750380918, 1.8667473750380918,
                 0.6660493039778589],
    (1.5, 2.5): [1.5309310892394863, 6.76119690438027, 6.761196904380269, 2.2448381220914224,
                 6.76119690438027, 2.2448381220914224, 2.2448381220914224, 0.1836913093361368],
}


@pytest.mark.parametrize("point", sorted(THIRD))
def test_pow_third_derivatives(point):
    v = enp.asarray(point, "float64")
    fwd = np.asarray(ember.jacfwd(ember.hessian(_pow2))(v)).ravel()
    rev = np.asarray(ember.jacrev(ember.jacrev(ember.grad(_pow2)))(v)).ravel()
    np.testing.assert_allclose(fwd, THIRD[point], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(rev, THIRD[point], rtol=1e-12, atol=1e-14)


def test_pow_third_derivative_reverse_at_zero_base_is_finite():
    # d^3/dx^3 x**3 = 6 at 0; the log(0) of the exponent's derivative used to leak a nan
    f = lambda v: lax.pow(v[0], v[1])  # noqa: E731
    t = np.asarray(ember.jacrev(ember.jacrev(ember.grad(f)))(enp.asarray([0.0, 3.0], "float64")))
    assert t[0, 0, 0] == 6.0
    g3 = ember.grad(ember.grad(ember.grad(lambda x: lax.pow(x, enp.asarray(3.0, "float64")))))
    assert float(g3(enp.asarray(0.0, "float64"))) == 6.0
