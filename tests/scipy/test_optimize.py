"""minimize(BFGS) vs scipy.optimize.minimize: Rosenbrock, quadratic forms, under jit and
vmap, the result fields, and the errors."""
import numpy as np
import pytest
import scipy.optimize as so

import ember
import ember.numpy as enp
from ember.scipy.optimize import OptimizeResults, minimize


def rosen(x):
    return enp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


@pytest.mark.parametrize("x0", [[-1.2, 1.0], [0.0, 0.0, 0.0, 0.0], [2.0, -1.0, 0.5]])
def test_rosenbrock_vs_scipy(x0):
    x0 = np.array(x0)
    want = so.minimize(so.rosen, x0, method="BFGS", jac=so.rosen_der, options={"gtol": 1e-8})
    r = minimize(rosen, enp.asarray(x0), method="BFGS", options={"gtol": 1e-8})
    assert isinstance(r, OptimizeResults)
    assert bool(r.success) and int(r.status) == 0
    np.testing.assert_allclose(np.asarray(r.x), want.x, atol=1e-6)
    np.testing.assert_allclose(np.asarray(r.x), np.ones_like(x0), atol=1e-6)
    assert float(r.fun) < 1e-12
    np.testing.assert_allclose(np.asarray(r.jac), so.rosen_der(np.asarray(r.x)), rtol=1e-9, atol=1e-12)
    assert int(r.nit) > 0 and int(r.nfev) >= int(r.nit) and int(r.njev) == int(r.nfev)


def test_quadratic_form_and_hess_inv():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(5, 5))
    a = q @ q.T + 5 * np.eye(5)
    c = rng.normal(size=5)
    f = lambda x, a_, c_: 0.5 * x @ a_ @ x - c_ @ x  # noqa: E731
    r = minimize(f, enp.zeros(5, dtype="float64"), args=(enp.asarray(a), enp.asarray(c)),
                 method="BFGS", tol=1e-10)
    np.testing.assert_allclose(np.asarray(r.x), np.linalg.solve(a, c), rtol=1e-8)
    # BFGS's inverse-Hessian estimate of an exact quadratic approaches A^-1 (the line search is inexact, so not exactly)
    np.testing.assert_allclose(np.asarray(r.hess_inv) @ a, np.eye(5), atol=2e-2)
    want = so.minimize(lambda x: 0.5 * x @ a @ x - c @ x, np.zeros(5), method="BFGS", tol=1e-10)
    np.testing.assert_allclose(float(r.fun), want.fun, rtol=1e-10)


def test_under_jit_and_vmap():
    x0s = enp.asarray(np.array([[-1.2, 1.0], [0.5, 0.5], [2.0, 2.0]]))
    solve = lambda x0: minimize(rosen, x0, method="BFGS").x  # noqa: E731
    got = ember.jit(ember.vmap(solve))(x0s)
    np.testing.assert_allclose(np.asarray(got), np.ones((3, 2)), atol=1e-4)
    for i in range(3):
        np.testing.assert_allclose(np.asarray(got[i]), np.asarray(solve(x0s[i])), atol=1e-9)
    # the target passed through args under jit
    r = ember.jit(lambda t: minimize(lambda x, t: enp.sum((x - t) ** 2), enp.zeros(3), (t,),
                                     method="BFGS"))(enp.asarray([1.0, -2.0, 3.0]))
    np.testing.assert_allclose(np.asarray(r.x), [1.0, -2.0, 3.0], atol=1e-5)


def test_iteration_limit_status():
    r = minimize(rosen, enp.asarray([-1.2, 1.0], dtype="float64"), method="BFGS",
                 options={"maxiter": 3})
    assert int(r.nit) == 3 and int(r.status) == 1 and not bool(r.success)


def test_errors():
    with pytest.raises(ValueError, match="method must be 'BFGS'"):
        minimize(rosen, enp.zeros(2), method="Nelder-Mead")
    with pytest.raises(TypeError, match=r"x0 must be 1-D .* got float32\[2,2\]"):
        minimize(rosen, enp.zeros((2, 2)), method="BFGS")
    with pytest.raises(TypeError, match=r"unknown BFGS option\(s\) \['xtol'\]"):
        minimize(rosen, enp.zeros(2), method="BFGS", options={"xtol": 1e-3})
    with pytest.raises(TypeError, match="`args` must be a tuple"):
        minimize(rosen, enp.zeros(2), args=[1.0], method="BFGS")
