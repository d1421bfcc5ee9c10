"""A custom_vjp's bwd output is checked against the primal inputs (as JAX does)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember.autograd import Function


def _mul(bwd, fwd=None):
    @ember.custom_vjp
    def mul(x, scale):
        return x * scale
    mul.defvjp(fwd or (lambda x, scale: (x * scale, (x, scale))), bwd)
    return mul


def _grad(f, n=3):
    x = np.ones(n, np.float32)
    return ember.grad(lambda a, s: f(a, s).sum(), argnums=(0, 1))(x, np.float32(2.0))


def _error(f, n=3):
    with pytest.raises(TypeError) as e:
        _grad(f, n)
    msg = str(e.value)
    assert "bwd = " in msg and "test_custom_vjp_checks.py" in msg
    return msg


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5))
def test_wrong_cotangent_shape_names_bwd_and_argument(n, m):
    if n == m:
        return
    msg = _error(_mul(lambda r, g: (enp.ones(m, np.float32), (g * r[0]).sum())), n)
    assert f"float32[{m}] for `x`, which is float32[{n}]" in msg


def test_wrong_cotangent_dtype():
    msg = _error(_mul(lambda r, g: (g.astype("float64"), (g * r[0]).sum())))
    assert "float64[3] for `x`, which is float32[3]" in msg


def test_wrong_number_of_cotangents():
    msg = _error(_mul(lambda r, g: (g,)))
    assert "returned a tuple of length 1 for 2 differentiable arguments (x, scale)" in msg
    assert "an array float32[3]" in _error(_mul(lambda r, g: g))


def test_non_array_cotangent():
    assert "a str as the cotangent of `scale`" in _error(_mul(lambda r, g: (g, "zero")))


def test_pytree_argument_structure_and_leaf_names():
    @ember.custom_vjp
    def f(p):
        return p["w"] * p["b"]
    f.defvjp(lambda p: (f(p), p), lambda r, g: ({"w": g, "b": enp.ones(2)},))
    with pytest.raises(TypeError, match=r"float32\[2\] for `p\['b'\]`, which is float32\[\]"):
        ember.grad(lambda p: f(p).sum())({"w": np.ones(3, np.float32), "b": np.float32(1)})
    f.defvjp(lambda p: (f(p), p), lambda r, g: ({"w": g},))
    with pytest.raises(TypeError, match="cotangent for `p` with structure"):
        ember.grad(lambda p: f(p).sum())({"w": np.ones(3, np.float32), "b": np.float32(1)})


def test_none_and_weak_cotangents_are_accepted_with_real_values():
    g = _grad(_mul(lambda r, g: (None, (g * r[0]).sum())))
    np.testing.assert_array_equal(np.asarray(g[0]), np.zeros(3, np.float32))
    assert float(g[1]) == 3.0
    g = _grad(_mul(lambda r, g: (g * r[1], 1.0)))
    np.testing.assert_array_equal(np.asarray(g[0]), np.full(3, 2.0, np.float32))
    assert g[1].dtype == np.float32 and float(g[1]) == 1.0


def test_checked_under_vmap_too():
    f = _mul(lambda r, g: (g[:1], (g * r[0]).sum()))
    with pytest.raises(TypeError, match="which is float32\\[3\\]"):
        ember.vmap(lambda x: ember.grad(lambda a: f(a, np.float32(2.0)).sum())(x))(
            np.ones((2, 3), np.float32))


def test_fwd_must_return_a_pair_matching_the_output():
    with pytest.raises(TypeError, match=r"fwd = lambda .* must return a pair \(output, residuals\)"):
        _grad(_mul(lambda r, g: (g, g), fwd=lambda x, s: x * s))
    with pytest.raises(TypeError, match=r"output is float32\[3\] in mul and float32\[2\] in fwd"):
        _grad(_mul(lambda r, g: (g, g), fwd=lambda x, s: ((x * s)[:2], None)))


@pytest.mark.parametrize("api", ["grad", "value_and_grad", "jacrev", "jacfwd", "hessian"])
def test_has_aux_without_a_pair_names_the_function(api):
    def loss(x):
        return (x * x).sum()
    with pytest.raises(TypeError, match=rf"{api}\(..., has_aux=True\): loss \(.*test_custom_vjp_checks"
                                        rf".py:\d+\) must return a pair \(output, aux\)") as e:
        getattr(ember, api)(loss, has_aux=True)(np.ones(2))
    assert "at " in str(e.value)


class BadShape(Function):
    @staticmethod
    def forward(ctx, x, y):
        return x * y

    @staticmethod
    def backward(ctx, g):
        return g[:1], g


class TooFew(Function):
    @staticmethod
    def forward(ctx, x, y):
        return x * y

    @staticmethod
    def backward(ctx, g):
        return g


def test_autograd_function_backward_is_checked_and_named():
    x = np.ones(3, np.float32)
    with pytest.raises(TypeError, match=r"bwd = BadShape.backward \(.*\) returned a cotangent "
                                        r"float32\[1\] for `x`"):
        ember.grad(lambda a: BadShape.apply(a, x).sum())(x)
    with pytest.raises(TypeError, match=r"bwd = TooFew.backward .* returned a tuple of length 1 for 2 "
                                        r"differentiable arguments \(x, y\)"):
        ember.grad(lambda a: TooFew.apply(a, x).sum())(x)
