"""PyTorch 2.x parity of ember.nn layers and functional ops (values computed with
torch offline and written here as literals, or computed with numpy in the test)."""
import warnings

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn
from ember.nn import functional as F


def f64(v):
    return enp.asarray(np.asarray(v, np.float64))


def grad_at(fn, points, **kw):
    return np.asarray(ember.grad(lambda t: enp.sum(fn(t, **kw)))(f64(points))).tolist()


# -- activation derivatives at kinks (torch.autograd values) -------------------------

@pytest.mark.parametrize("name, fn, points, kw, expected", [
    ("relu", F.relu, [0.0], {}, [0.0]),
    ("relu6", F.relu6, [0.0, 6.0], {}, [0.0, 0.0]),
    ("hardtanh", F.hardtanh, [-1.0, 1.0], {}, [0.0, 0.0]),
    ("hardtanh_bounds", F.hardtanh, [-2.0, 3.0], dict(min_val=-2.0, max_val=3.0), [0.0, 0.0]),
    ("hardsigmoid", F.hardsigmoid, [-3.0, 3.0], {}, [0.0, 0.0]),
    ("hardswish", F.hardswish, [-3.0, 3.0], {}, [0.0, 1.0]),
    ("leaky_relu", F.leaky_relu, [0.0], dict(negative_slope=0.2), [0.2]),
    ("elu", F.elu, [0.0], dict(alpha=2.0), [2.0]),
    ("celu", F.celu, [0.0], dict(alpha=2.0), [1.0]),
    ("selu", F.selu, [0.0], {}, [1.7580993408473766]),
    ("threshold", lambda t: F.threshold(t, 1.0, 5.0), [1.0], {}, [0.0]),
    ("softshrink", F.softshrink, [-0.5, 0.5], {}, [0.0, 0.0]),
    ("hardshrink", F.hardshrink, [-0.5, 0.5], {}, [0.0, 0.0]),
])
def test_activation_derivative_at_kink_matches_torch(name, fn, points, kw, expected):
    np.testing.assert_allclose(grad_at(fn, points, **kw), expected, rtol=1e-12)


def test_prelu_derivative_at_zero_is_the_weight():
    gx, gw = ember.grad(lambda x, w: enp.sum(F.prelu(x, w)), argnums=(0, 1))(f64([0.0]), f64([0.25]))
    assert np.asarray(gx).tolist() == [0.25] and np.asarray(gw).tolist() == [0.0]


def test_kink_fix_keeps_values_and_nan():
    x = f64([np.nan, -1.0, 0.0, 2.0, 7.0])
    np.testing.assert_array_equal(np.asarray(F.relu(x)), [np.nan, 0.0, 0.0, 2.0, 7.0])
    np.testing.assert_array_equal(np.asarray(F.relu6(x)), [np.nan, 0.0, 0.0, 2.0, 6.0])
    assert F.relu(enp.asarray([-1, 3])).tolist() == [0, 3]
    np.testing.assert_allclose(np.asarray(F.elu(f64([-1.0, 0.0, 800.0]))),
                               [np.expm1(-1.0), 0.0, 800.0])


def test_hardtanh_bounds_are_checked_like_torch():
    with pytest.raises(ValueError, match="max_val"):
        nn.Hardtanh(1.0, 1.0)
    with pytest.raises(ValueError, match="max_val"):
        nn.Hardtanh(2.0, 1.0)
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(enp.ones(2), 2.0, 1.0)
    # torch's functional form accepts min_val == max_val
    assert F.hardtanh(enp.asarray([3.0]), 1.0, 1.0).tolist() == [1.0]
