"""ember.autograd.Function: PyTorch-style forward/backward composed with every transform."""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.autograd import Function


class ScaledTanh(Function):
    @staticmethod
    def forward(ctx, x, alpha):
        y = enp.tanh(x)
        ctx.save_for_backward(y)
        ctx.alpha = 3.0  # a Python value travels as static data
        return alpha * y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        # deliberately scaled by ctx.alpha so the custom rule is observable
        return ctx.alpha * g * (1 - y * y), None


def test_backward_is_used_and_composes():
    x = np.float64(0.4)
    g = ember.grad(lambda v: ScaledTanh.apply(v, 2.0))(x)
    assert np.isclose(float(g), 3.0 * (1 - np.tanh(0.4) ** 2))
    gg = ember.grad(ember.grad(lambda v: ScaledTanh.apply(v, 2.0)))(x)
    assert np.isclose(float(gg), 3.0 * -2 * np.tanh(0.4) * (1 - np.tanh(0.4) ** 2))
    xs = np.array([0.1, 0.5, -0.3])
    per = ember.vmap(ember.grad(lambda v: ScaledTanh.apply(v, 2.0)))(xs)
    np.testing.assert_allclose(per, 3.0 * (1 - np.tanh(xs) ** 2))
    np.testing.assert_allclose(ember.jit(ember.grad(lambda v: ScaledTanh.apply(v, 2.0)))(x), g)
    np.testing.assert_allclose(ScaledTanh.apply(enp.asarray(xs), 2.0), 2 * np.tanh(xs), rtol=1e-6)


def test_backward_must_match_inputs():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g  # one gradient for two inputs
    with pytest.raises(TypeError, match="2 differentiable"):
        ember.grad(lambda v: Bad.apply(v, 2.0))(1.0)
