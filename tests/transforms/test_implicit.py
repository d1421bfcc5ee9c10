"""custom_linear_solve and custom_root: values, implicit gradients vs closed forms and float64
finite differences, every transform (jvp, grad, vmap, jit, higher order), JAX's documented
examples, and the errors."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember import lax
from ember.testing import check_grads, check_vmap

RNG = np.random.default_rng(0)
A_NP = RNG.normal(size=(4, 4)) + 4 * np.eye(4)
SPD_NP = A_NP @ A_NP.T + np.eye(4)
B_NP = RNG.normal(size=4)


def dense_solve(a):
    return lambda matvec, b: enp.linalg.solve(a, b)


def cg_while(matvec, b):
    """An iterative solve (conjugate gradients in a while_loop): not differentiable itself."""
    def cond(s):
        return (s[4] < 50) & (enp.sum(s[1] * s[1]) > 1e-28)

    def body(s):
        x, r, p, rs, k = s
        ap = matvec(p)
        alpha = rs / enp.sum(p * ap)
        x = x + alpha * p
        r = r - alpha * ap
        rs_new = enp.sum(r * r)
        return x, r, r + (rs_new / rs) * p, rs_new, k + 1
    x0 = enp.zeros_like(b)
    return ember.while_loop(cond, body, (x0, b, b, enp.sum(b * b), 0))[0]


def linsolve(a, b):
    return lax.custom_linear_solve(lambda x: a @ x, b, dense_solve(a),
                                   lambda vecmat, y: enp.linalg.solve(a.T, y))


def test_value_and_gradients_vs_closed_forms():
    a, b = enp.asarray(A_NP), enp.asarray(B_NP)
    x = np.linalg.solve(A_NP, B_NP)
    np.testing.assert_allclose(np.asarray(linsolve(a, b)), x, rtol=1e-12)
    w = RNG.normal(size=4)
    loss = lambda a, b: enp.sum(enp.asarray(w) * linsolve(a, b))  # noqa: E731
    ga, gb = ember.grad(loss, argnums=(0, 1))(a, b)
    lam = np.linalg.solve(A_NP.T, w)        # the adjoint
    np.testing.assert_allclose(np.asarray(gb), lam, rtol=1e-11)
    np.testing.assert_allclose(np.asarray(ga), -np.outer(lam, x), rtol=1e-11)
    # forward mode: dx = A^-1 (db - dA x)
    da, db = RNG.normal(size=(4, 4)), RNG.normal(size=4)
    _, t = ember.jvp(linsolve, (a, b), (enp.asarray(da), enp.asarray(db)))
    np.testing.assert_allclose(np.asarray(t), np.linalg.solve(A_NP, db - da @ x), rtol=1e-11)


def test_finite_differences_second_order():
    a, b = enp.asarray(A_NP), enp.asarray(B_NP)
    check_grads(linsolve, (a, b), order=2)
    spd = enp.asarray(SPD_NP)
    sym = lambda a, b: lax.custom_linear_solve(lambda x: a @ x, b, dense_solve(a),  # noqa: E731
                                               symmetric=True)
    check_grads(lambda b: sym(spd, b), (b,), order=2)


def test_iterative_solve_in_a_while_loop_gets_implicit_gradients():
    spd, b = enp.asarray(SPD_NP), enp.asarray(B_NP)
    f = lambda m, b: lax.custom_linear_solve(lambda x: m @ x, b, cg_while, symmetric=True)  # noqa: E731
    np.testing.assert_allclose(np.asarray(f(spd, b)), np.linalg.solve(SPD_NP, B_NP), rtol=1e-9)
    loss = lambda m, b: enp.sum(f(m, b) ** 2)  # noqa: E731
    gm, gb = ember.grad(loss, argnums=(0, 1))(spd, b)
    x = np.linalg.solve(SPD_NP, B_NP)
    lam = np.linalg.solve(SPD_NP, 2 * x)
    np.testing.assert_allclose(np.asarray(gb), lam, rtol=1e-8)
    np.testing.assert_allclose(np.asarray(gm), -np.outer(lam, x), rtol=1e-8)
    g_jit = ember.jit(ember.grad(loss, argnums=(0, 1)))(spd, b)
    np.testing.assert_allclose(np.asarray(g_jit[1]), lam, rtol=1e-8)


def test_vmap_jit_and_pytrees():
    a = enp.asarray(A_NP)
    bs = enp.asarray(RNG.normal(size=(3, 4)))
    check_vmap(lambda b: linsolve(a, b), (bs,))
    a_s = enp.asarray(A_NP[None] + 0.1 * RNG.normal(size=(3, 4, 4)))
    check_vmap(linsolve, (a_s, bs), in_axes=(0, 0))
    check_vmap(linsolve, (a_s, enp.asarray(B_NP)), in_axes=(0, None))
    # gradients of a vmapped solve
    g = ember.grad(lambda a_s: enp.sum(ember.vmap(linsolve)(a_s, bs)))(a_s)
    for i in range(3):
        gi = ember.grad(lambda a: enp.sum(linsolve(a, bs[i])))(a_s[i])
        np.testing.assert_allclose(np.asarray(g[i]), np.asarray(gi), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(ember.jit(linsolve)(a, bs[0])),
                               np.linalg.solve(A_NP, np.asarray(bs[0])), rtol=1e-12)
    # b a dict: matvec and solve see the same structure
    d = np.diag([2.0, 4.0])

    def mv(x):
        return {"u": x["u"] * 3.0, "v": enp.asarray(d) @ x["v"]}

    def solve(matvec, r):
        return {"u": r["u"] / 3.0, "v": r["v"] / enp.asarray(np.array([2.0, 4.0]))}
    b = {"u": enp.asarray(6.0), "v": enp.asarray(np.array([2.0, 8.0]))}
    x = lax.custom_linear_solve(mv, b, solve, symmetric=True)
    assert float(x["u"]) == 2.0 and x["v"].tolist() == [1.0, 2.0]
    g = ember.grad(lambda b: enp.sum(lax.custom_linear_solve(mv, b, solve, symmetric=True)["v"]))(b)
    assert float(g["u"]) == 0.0 and g["v"].tolist() == [0.5, 0.25]


def test_has_aux():
    a, b = enp.asarray(A_NP), enp.asarray(B_NP)

    def solve(matvec, r):
        x = enp.linalg.solve(a, r)
        return x, enp.linalg.norm(matvec(x) - r)

    def tsolve(vecmat, r):
        return enp.linalg.solve(a.T, r), enp.asarray(0.0)
    x, resid = lax.custom_linear_solve(lambda v: a @ v, b, solve, tsolve, has_aux=True)
    assert float(resid) < 1e-12
    g = ember.grad(lambda b: enp.sum(lax.custom_linear_solve(lambda v: a @ v, b, solve, tsolve,
                                                             has_aux=True)[0]))(b)
    np.testing.assert_allclose(np.asarray(g), np.linalg.solve(A_NP.T, np.ones(4)), rtol=1e-11)


def test_errors():
    a, b = enp.asarray(A_NP), enp.asarray(B_NP)
    f = lambda b: enp.sum(lax.custom_linear_solve(lambda x: a @ x, b, dense_solve(a)))  # noqa: E731
    with pytest.raises(TypeError, match="needs transpose_solve, or symmetric=True"):
        ember.grad(f)(b)
    # forward mode needs no transpose
    _, t = ember.jvp(lambda b: lax.custom_linear_solve(lambda x: a @ x, b, dense_solve(a)), (b,), (b,))
    np.testing.assert_allclose(np.asarray(t), np.linalg.solve(A_NP, B_NP), rtol=1e-12)
    with pytest.raises(TypeError, match=r"solve \(.*\) must return the structure, shapes and "
                                        r"dtypes of b: expected .* of \(float64\[4\]\), got .* "
                                        r"of \(float64\[3\]\)"):
        lax.custom_linear_solve(lambda x: a @ x, b, lambda mv, r: r[:3])
    with pytest.raises(TypeError, match="b must hold floating-point arrays, got int32"):
        lax.custom_linear_solve(lambda x: x, enp.arange(3), lambda mv, r: r)
    with pytest.raises(TypeError, match="has_aux=True, solve .* must return a pair"):
        lax.custom_linear_solve(lambda x: a @ x, b, dense_solve(a), has_aux=True)


# --- custom_root ------------------------------------------------------------------

def _newton(f, x0):
    step = lambda _, x: x - f(x) / ember.grad(f)(x)  # noqa: E731
    return ember.fori_loop(0, 30, step, x0)


def sqrt_root(a):
    """JAX's documented example: a Newton square root with an implicit derivative."""
    return lax.custom_root(lambda x: x ** 2 - a, enp.ones_like(a), _newton,
                           lambda g, y: y / g(1.0))


@settings(max_examples=25, deadline=None)
@given(st.floats(0.1, 100.0))
def test_custom_root_newton_sqrt(a):
    a64 = enp.asarray(a, dtype="float64")
    assert abs(float(sqrt_root(a64)) - np.sqrt(a)) <= 1e-12 * np.sqrt(a)
    assert abs(float(ember.grad(sqrt_root)(a64)) - 0.5 / np.sqrt(a)) <= 1e-11 / np.sqrt(a)
    d2 = float(ember.grad(ember.grad(sqrt_root))(a64))
    assert abs(d2 + 0.25 * a ** -1.5) <= 1e-10 * a ** -1.5


def test_custom_root_transforms():
    a = enp.asarray([0.5, 2.0, 9.0])
    check_grads(sqrt_root, (enp.asarray(2.0, dtype="float64"),), order=2)
    check_vmap(sqrt_root, (a,))
    g = ember.jit(ember.vmap(ember.grad(sqrt_root)))(a)
    np.testing.assert_allclose(np.asarray(g), 0.5 / np.sqrt(np.asarray(a)), rtol=1e-6)
    _, t = ember.jvp(sqrt_root, (enp.asarray(4.0, dtype="float64"),), (enp.asarray(1.0, dtype="float64"),))
    assert abs(float(t) - 0.25) < 1e-14


def test_custom_root_vector_system_and_aux():
    """x solves tanh(W x) + x = c; dx/dc and dx/dW by the implicit function theorem vs
    float64 finite differences."""
    w0 = enp.asarray(0.3 * RNG.normal(size=(3, 3)))
    c0 = enp.asarray(RNG.normal(size=3))

    def solve(f, x0):
        def step(_, x):
            return x - enp.linalg.solve(ember.jacfwd(f)(x), f(x))
        x = ember.fori_loop(0, 25, step, x0)
        return x, enp.linalg.norm(f(x))

    def tangent_solve(g, y):
        return enp.linalg.solve(ember.jacfwd(g)(y), y)

    def root(w, c):
        x, resid = lax.custom_root(lambda x: enp.tanh(w @ x) + x - c, enp.zeros(3, dtype="float64"),
                                   solve, tangent_solve, has_aux=True)
        return x

    x = root(w0, c0)
    np.testing.assert_allclose(np.tanh(np.asarray(w0) @ np.asarray(x)) + np.asarray(x), np.asarray(c0),
                               atol=1e-13)
    check_grads(root, (w0, c0), order=1)
    # initial guesses get no derivative
    gg = ember.grad(lambda g: enp.sum(lax.custom_root(lambda x: x ** 3 - 8.0, g, _newton,
                                                        lambda g_, y: y / g_(1.0))))(enp.asarray(3.0))
    assert float(gg) == 0.0
