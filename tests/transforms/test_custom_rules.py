"""custom_jvp, custom_vjp and checkpoint composed with every transform."""
import numpy as np
import pytest

import ember
from ember import lax


@ember.custom_jvp
def f_jvp(x):
    return lax.sin(x)


@f_jvp.defjvp
def _f_jvp_rule(primals, tangents):
    (x,), (t,) = primals, tangents
    return f_jvp(x), lax.mul(lax.mul(np.float64(2.0), lax.cos(x)), t)


@ember.custom_vjp
def f_vjp(x):
    return lax.sin(x)


f_vjp.defvjp(lambda x: (lax.sin(x), lax.cos(x)), lambda c, ct: (lax.mul(lax.mul(np.float64(3.0), c), ct),))


def test_custom_jvp_grad_orders_vmap_jit():
    x = np.float64(0.5)
    assert np.isclose(float(ember.grad(f_jvp)(x)), 2 * np.cos(x))
    assert np.isclose(float(ember.grad(ember.grad(f_jvp))(x)), -2 * np.sin(x))
    np.testing.assert_allclose(ember.vmap(ember.grad(f_jvp))(np.array([0.0, 1.0])), 2 * np.cos([0.0, 1.0]))
    assert np.isclose(float(ember.jit(ember.grad(f_jvp))(x)), 2 * np.cos(x))
    _, t = ember.jvp(ember.vmap(f_jvp), (np.array([0.0, 1.0]),), (np.array([1.0, 1.0]),))
    np.testing.assert_allclose(t, 2 * np.cos([0.0, 1.0]))


def test_custom_vjp_grad_orders_vmap_jit():
    x = np.float64(0.5)
    assert np.isclose(float(ember.grad(f_vjp)(x)), 3 * np.cos(x))
    assert np.isclose(float(ember.grad(ember.grad(f_vjp))(x)), -3 * np.sin(x))
    np.testing.assert_allclose(ember.vmap(ember.grad(f_vjp))(np.array([0.0, 1.0])), 3 * np.cos([0.0, 1.0]))
    assert np.isclose(float(ember.jit(ember.grad(f_vjp))(x)), 3 * np.cos(x))


def test_custom_vjp_forward_mode_is_a_clear_error():
    with pytest.raises(TypeError, match="custom_vjp"):
        ember.jvp(f_vjp, (np.float64(0.5),), (np.float64(1.0),))


def test_custom_vjp_bad_bwd_arity():
    @ember.custom_vjp
    def g(x, y):
        return lax.mul(x, y)
    g.defvjp(lambda x, y: (lax.mul(x, y), (x, y)), lambda r, ct: (ct,))
    with pytest.raises(TypeError, match="2 differentiable"):
        ember.grad(g)(np.float64(1.0), np.float64(2.0))


@pytest.mark.parametrize("policy", [None, ember.dots_saveable, ember.everything_saveable])
def test_checkpoint_same_gradients(policy):
    f = lambda x: lax.mul(lax.sin(lax.sin(x)), x)
    cf = ember.checkpoint(f, policy=policy)
    x = np.float64(0.5)
    np.testing.assert_allclose(ember.grad(cf)(x), ember.grad(f)(x), rtol=1e-12)
    np.testing.assert_allclose(ember.grad(ember.grad(cf))(x), ember.grad(ember.grad(f))(x), rtol=1e-12)
    np.testing.assert_allclose(ember.jit(ember.grad(cf))(x), ember.grad(f)(x), rtol=1e-12)
    np.testing.assert_allclose(ember.vmap(ember.grad(cf))(np.array([0.5, 1.0])),
                               ember.vmap(ember.grad(f))(np.array([0.5, 1.0])), rtol=1e-12)


def test_checkpoint_saves_fewer_residuals():
    x = np.linspace(0.1, 1.0, 5)
    f = lambda v: lax.reduce_sum(lax.sin(lax.sin(lax.sin(v))), (0,))
    assert len(ember.saved_residuals(ember.checkpoint(f), x)) < len(ember.saved_residuals(f, x))


@pytest.mark.parametrize("policy", [None, ember.dots_saveable, ember.everything_saveable])
def test_checkpoint_of_a_function_containing_scan(policy):
    def g(x):
        return ember.scan(lambda c, _: (lax.mul(lax.sin(c), c), None), x, None, length=3)[0]
    f = ember.checkpoint(g, policy=policy)
    x = np.float64(1.0)
    np.testing.assert_allclose(ember.grad(f)(x), ember.grad(g)(x), rtol=1e-12)
    np.testing.assert_allclose(ember.grad(ember.grad(f))(x), ember.grad(ember.grad(g))(x), rtol=1e-12)
    np.testing.assert_allclose(ember.jit(ember.grad(f))(x), ember.grad(g)(x), rtol=1e-12)


def test_custom_jvp_tangent_of_the_wrong_dtype_is_a_clear_error():
    # a float64 tangent for a float32 output used to pass jvp silently and then fail inside
    # transposition with an internal mul dtype error
    import numpy as np
    import pytest

    import ember

    @ember.custom_jvp
    def f(x):
        return ember.numpy.sin(x)

    @f.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), ember.numpy.cos(x) * t * np.float64(2.0)

    x = np.ones(3, np.float32)
    for run in (lambda: ember.jvp(f, (x,), (x,)), lambda: ember.grad(lambda v: f(v).sum())(x)):
        with pytest.raises(TypeError, match=r"custom_jvp rule of f: tangent output 0 is float64\[3\], "
                                            r"but the function's output 0 is float32\[3\].*astype\(float32\)"):
            run()

    @ember.custom_jvp
    def g(x):
        return x * 2.0

    @g.defjvp
    def _(primals, tangents):  # a Python scalar tangent of the right shape is cast
        return g(primals[0]), 2.0

    assert ember.jvp(g, (np.float64(1.0),), (np.float64(1.0),))[1].dtype == np.float64
