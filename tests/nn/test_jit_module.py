"""`ember.jit(model)` reads the module's current parameters on every call (no stale
weights after `opt.step`, no recompile); a jitted closure that called a module
warns once that module's state has changed since it was traced."""
import warnings

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn, optim, random
from ember.transforms.captured_state import StaleCaptureWarning


def _model():
    return nn.Sequential(nn.Linear(3, 4, key=random.key(0)), nn.Tanh(), nn.Linear(4, 2, key=random.key(1)))


X = enp.asarray(np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3))


def _train_once(model):
    opt = optim.SGD(model, lr=0.5)
    _, g = nn.value_and_grad(model, lambda m, x: (m(x) ** 2).sum())(X)
    opt.step(g)


def test_jit_model_reads_current_parameters_without_recompiling():
    model = _model()
    f = ember.jit(model)
    first = np.asarray(f(X))
    np.testing.assert_allclose(first, np.asarray(model(X)), rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            _train_once(model)
            got = np.asarray(f(X))
            np.testing.assert_allclose(got, np.asarray(model(X)), rtol=1e-5, atol=1e-6)
    assert not np.allclose(got, first)
    assert f.compile_count == 1


def test_jit_model_writes_buffers_back():
    bn = nn.BatchNorm1d(3)
    f = ember.jit(bn)
    f(X)
    np.testing.assert_allclose(np.asarray(bn.running_mean), 0.1 * np.asarray(X).mean(0), rtol=1e-5)
    with pytest.raises(TypeError, match="static arguments are not supported"):
        ember.jit(bn, static_argnums=1)


def test_closure_over_a_module_warns_when_its_parameters_change():
    model = _model()
    f = ember.jit(lambda x: model(x) * 2.0)
    old = np.asarray(f(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(X)  # unchanged state: no warning
    _train_once(model)
    with pytest.warns(StaleCaptureWarning, match=r"Sequential \(0.weight, 0.bias, 2.weight and 1 more\)"):
        stale = np.asarray(f(X))
    # the warning tells the truth: the compiled program still has the old weights
    np.testing.assert_array_equal(stale, old)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(X)  # once per compiled entry


def test_explicit_state_never_warns():
    model = _model()
    g = ember.jit(lambda p, x: nn.functional_call(model, p, x)[0])
    g(dict(model.parameters()), X)
    step = nn.TrainStep(model, optim.Adam(model, lr=0.01), lambda m, x: (m(x) ** 2).mean())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            step(X)
            out = g(dict(model.parameters()), X)
    np.testing.assert_allclose(np.asarray(out), np.asarray(model(X)), rtol=1e-5, atol=1e-6)
