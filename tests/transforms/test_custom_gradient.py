"""ember.custom_gradient (jax.custom_gradient): the returned vjp drives reverse mode,
under jit and vmap, to second order, with closed-over forward values, and bad rules
are clear errors."""
import numpy as np
import pytest

import ember
import ember.numpy as enp


@ember.custom_gradient
def _sin_mul(x, y):
    z = enp.sin(x) * y
    return z, lambda g: (g * enp.cos(x) * y, g * enp.sin(x))


X, Y = np.array([0.3, 1.2, -0.7]), np.array([2.0, -1.0, 0.5])


def test_gradients_are_the_rule_and_match_the_closed_form():
    gx, gy = ember.grad(lambda a, b: _sin_mul(a, b).sum(), argnums=(0, 1))(X, Y)
    np.testing.assert_allclose(gx, np.cos(X) * Y, rtol=1e-14)
    np.testing.assert_allclose(gy, np.sin(X), rtol=1e-14)
    np.testing.assert_allclose(_sin_mul(X, Y), np.sin(X) * Y)


def test_jit_vmap_and_second_order():
    f = lambda a, b: _sin_mul(a, b)  # noqa: E731
    np.testing.assert_allclose(ember.jit(ember.grad(lambda a: f(a, Y).sum()))(X), np.cos(X) * Y, rtol=1e-14)
    np.testing.assert_allclose(ember.vmap(ember.grad(f))(X, Y), np.cos(X) * Y, rtol=1e-14)
    h = ember.hessian(lambda a: f(a, Y).sum())(X)
    np.testing.assert_allclose(h, np.diag(-np.sin(X) * Y), atol=1e-14)


def test_the_rule_is_what_reverse_mode_uses():
    @ember.custom_gradient
    def clip_gradient(x):
        return x, lambda g: enp.clip(g, -1.0, 1.0)   # one argument: a bare cotangent is fine

    g = ember.grad(lambda x: (5.0 * clip_gradient(x)).sum())(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(g, [1.0, 1.0])


def test_bad_rules_are_clear_errors():
    @ember.custom_gradient
    def no_pair(x):
        return x * 2

    with pytest.raises(TypeError, match="custom_gradient no_pair: the function must return a pair"):
        ember.grad(no_pair)(1.0)

    @ember.custom_gradient
    def too_few(x, y):
        return x * y, lambda g: (g,)

    with pytest.raises(TypeError, match="must return 2 cotangents"):
        ember.grad(too_few)(1.0, 2.0)
