"""Forward mode of a custom_vjp function: JAX's clear TypeError, never an internal error;
forward-over-reverse (hessian) works and uses the bwd rule."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp


@ember.custom_vjp
def scaled_sin(x):
    return enp.sin(x)


# bwd deliberately scales by 3 so the custom rule is observable in the results
scaled_sin.defvjp(lambda x: (enp.sin(x), enp.cos(x)), lambda c, g: (3.0 * c * g,))

X = np.array([0.5, 1.0, -2.0])

_FORWARD = {
    "jvp": lambda: ember.jvp(scaled_sin, (X,), (X,)),
    "jacfwd": lambda: ember.jacfwd(scaled_sin)(X),
    "jit(jvp)": lambda: ember.jit(lambda v: ember.jvp(scaled_sin, (v,), (v,)))(X),
    "jvp(jit)": lambda: ember.jvp(ember.jit(scaled_sin), (X,), (X,)),
    "vmap(jvp)": lambda: ember.vmap(lambda v: ember.jvp(scaled_sin, (v,), (v,)))(X),
    "jvp(jvp)": lambda: ember.jvp(lambda v: ember.jvp(scaled_sin, (v,), (v,))[1], (X,), (X,)),
    "linearize f_jvp": lambda: ember.linearize(scaled_sin, X)[1](X),
    "jacfwd(jit)": lambda: ember.jacfwd(ember.jit(scaled_sin))(X),
}


@pytest.mark.parametrize("case", list(_FORWARD))
def test_forward_mode_raises_jax_type_error(case):
    with pytest.raises(TypeError) as e:
        _FORWARD[case]()
    msg = str(e.value)
    assert "can't apply forward-mode autodiff (jvp) to a custom_vjp function" in msg
    assert "scaled_sin (" in msg and "custom_jvp" in msg and "jacrev" in msg


@settings(max_examples=20, deadline=None)
@given(st.lists(st.floats(-3, 3), min_size=1, max_size=4))
def test_hessian_uses_the_bwd_rule(xs):
    x = np.array(xs)
    h = ember.hessian(lambda v: scaled_sin(v).sum())(x)
    np.testing.assert_allclose(h, np.diag(-3.0 * np.sin(x)), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ember.jacfwd(ember.grad(lambda v: scaled_sin(v).sum()))(x), h,
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ember.jacrev(ember.jacrev(lambda v: scaled_sin(v).sum()))(x), h,
                               rtol=1e-12, atol=1e-12)


def test_reverse_mode_through_staged_calls_still_works():
    g = lambda v: scaled_sin(v).sum()
    ref = 3.0 * np.cos(X)
    np.testing.assert_allclose(ember.grad(ember.jit(g))(X), ref, rtol=1e-12)
    np.testing.assert_allclose(ember.jit(ember.grad(g))(X), ref, rtol=1e-12)
    np.testing.assert_allclose(ember.vmap(ember.grad(ember.jit(lambda v: scaled_sin(v))))(X), ref,
                               rtol=1e-12)
    c = lambda v: ember.cond(True, lambda u: scaled_sin(u), lambda u: u, v).sum()
    np.testing.assert_allclose(ember.grad(c)(X), ref, rtol=1e-12)
    s = lambda v: ember.scan(lambda carry, x: (carry + scaled_sin(x), None), np.float64(0.0), v)[0]
    np.testing.assert_allclose(ember.grad(s)(X), ref, rtol=1e-12)
    np.testing.assert_allclose(ember.grad(ember.checkpoint(g))(X), ref, rtol=1e-12)


def test_hessian_when_fwd_calls_the_function_is_the_clear_error_as_in_jax():
    @ember.custom_vjp
    def f(x):
        return enp.sin(x)
    f.defvjp(lambda x: (f(x), enp.cos(x)), lambda c, g: (c * g,))
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff .* f \\("):
        ember.hessian(lambda v: f(v).sum())(X)
    np.testing.assert_allclose(ember.jacrev(ember.jacrev(lambda v: f(v).sum()))(X),
                               np.diag(-np.sin(X)), rtol=1e-12, atol=1e-12)
