"""nn.utils.parametrize / parametrizations (weight_norm, spectral_norm) against
PyTorch 2's parametrizations on the same state: names, values, buffer updates
and gradients, eagerly, under jit and in TrainStep."""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn, optim
from ember.nn.utils import parametrizations, parametrize

from _nn_helpers import copy_to_torch, np_, rnd, to_torch


def _grads(e, x):
    def loss(p):
        out, _ = nn.functional_call(e, p, x)
        return (out ** 2).sum()
    params = dict(e.parameters())
    return nn.flatten_names(ember.grad(loss)(params)), nn.flatten_names(ember.jit(ember.grad(loss))(params))


@pytest.mark.parametrize("make,dim", [(lambda m: m.Linear(4, 3), 0), (lambda m: m.Linear(4, 3), None),
                                      (lambda m: m.Conv2d(2, 3, 3), 1)])
def test_weight_norm_matches_torch(make, dim):
    torch = pytest.importorskip("torch")
    nn.manual_seed(0)
    e = parametrizations.weight_norm(make(nn), dim=dim)
    t = torch.nn.utils.parametrizations.weight_norm(make(torch.nn), dim=dim)
    assert list(e.state_dict()) == list(t.state_dict())
    assert type(e).__name__ == type(t).__name__
    copy_to_torch(e, t)
    x = rnd((2, 4)) if isinstance(e, nn.Linear) else rnd((1, 2, 5, 5))
    np.testing.assert_allclose(np_(e.weight), t.weight.detach().numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np_(e(x)), t(to_torch(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    (t(to_torch(x)) ** 2).sum().backward()
    for g in _grads(e, x):
        for name, p in t.named_parameters():
            np.testing.assert_allclose(np_(g[name]), p.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def test_weight_norm_assignment_removal_and_train_step():
    nn.manual_seed(1)
    m = parametrizations.weight_norm(nn.Linear(3, 2))
    w = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 2.0]], np.float32)
    m.weight = enp.asarray(w)  # stored through right_inverse
    np.testing.assert_allclose(np_(m.parametrizations.weight.original0), [[5.0], [2.0]])
    np.testing.assert_allclose(np_(m.weight), w, rtol=1e-6)
    x, y = rnd((8, 3), seed=2), rnd((8, 2), seed=3)
    step = nn.TrainStep(m, optim.SGD(m.parameters(), lr=0.1), lambda mod, x, y: nn.functional.mse_loss(mod(x), y))
    l0 = float(step(x, y))
    for _ in range(5):
        last = float(step(x, y))
    assert last < l0
    g_before = np_(m.parametrizations.weight.original0)
    assert not np.allclose(g_before, [[5.0], [2.0]])
    value = np_(m.weight)
    parametrize.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and not parametrize.is_parametrized(m)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight"]
    np.testing.assert_allclose(np_(m.weight), value, rtol=1e-6)


@pytest.mark.parametrize("make", [lambda m: m.Linear(5, 4), lambda m: m.ConvTranspose2d(3, 2, 3)])
def test_spectral_norm_matches_torch_in_train_and_eval(make):
    torch = pytest.importorskip("torch")
    nn.manual_seed(2)
    e = parametrizations.spectral_norm(make(nn), n_power_iterations=2)
    t = torch.nn.utils.parametrizations.spectral_norm(make(torch.nn), n_power_iterations=2)
    assert list(e.state_dict()) == list(t.state_dict())
    copy_to_torch(e, t)
    x = rnd((3, 5)) if isinstance(e, nn.Linear) else rnd((1, 3, 4, 4))
    # training mode: one access = two power-iteration steps, buffers updated in place
    out_t = t(to_torch(x))
    out_e = e(x)
    np.testing.assert_allclose(np_(out_e), out_t.detach().numpy(), rtol=1e-4, atol=1e-5)
    for k in ("parametrizations.weight.0._u", "parametrizations.weight.0._v"):
        np.testing.assert_allclose(np_(e.state_dict()[k]), t.state_dict()[k].numpy(), rtol=1e-4, atol=1e-5)
    # gradients in eval mode (fixed u, v) vs torch
    e.eval()
    t.eval()
    t.zero_grad()
    (t(to_torch(x)) ** 2).sum().backward()
    for g in _grads(e, x):
        for name, p in t.named_parameters():
            np.testing.assert_allclose(np_(g[name]), p.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    wm = np.asarray(e.weight)
    wm = np.moveaxis(wm, 1, 0) if not isinstance(e, nn.Linear) else wm
    sigma = np.linalg.svd(wm.reshape(wm.shape[0], -1), compute_uv=False)[0]
    assert abs(sigma - 1.0) < 1e-3


def test_spectral_norm_buffers_through_functional_call_and_jit():
    nn.manual_seed(3)
    m = parametrizations.spectral_norm(nn.Linear(4, 4))
    x = rnd((2, 4), seed=5)
    state = (dict(m.parameters()), dict(m.buffers()))
    out, bufs = ember.jit(lambda s, x: nn.functional_call(m, s, x))(state, x)
    out2, bufs2 = nn.functional_call(m, state, x)
    np.testing.assert_allclose(np_(out), np_(out2), rtol=1e-5, atol=1e-6)
    u = nn.flatten_names(bufs)["parametrizations.weight.0._u"]
    np.testing.assert_allclose(np_(u), np_(nn.flatten_names(bufs2)["parametrizations.weight.0._u"]), rtol=1e-5)
    assert not np.allclose(np_(u), np_(m.parametrizations.weight[0]._u))  # the module itself is untouched


def test_register_parametrization_chains_cache_and_errors():
    class Double(nn.Module):
        def forward(self, X):
            return X * 2

    class Shape(nn.Module):
        def forward(self, X):
            return X[:1]

    m = nn.Linear(2, 2)
    w = np_(m.weight)
    parametrize.register_parametrization(m, "weight", Double())
    parametrize.register_parametrization(m, "weight", Double())
    np.testing.assert_allclose(np_(m.weight), 4 * w)
    np.testing.assert_allclose(np_(m(enp.ones((1, 2)))), (4 * w).sum(1)[None] + np_(m.bias), rtol=1e-6)
    with parametrize.cached():
        assert m.weight is m.weight
    assert m.weight is not m.weight
    with pytest.raises(ValueError, match="shape"):
        parametrize.register_parametrization(nn.Linear(2, 2), "weight", Shape())
    with pytest.raises(ValueError, match="no parameter or buffer named 'kernel'"):
        parametrize.register_parametrization(nn.Linear(2, 2), "kernel", Double())
    with pytest.raises(TypeError, match="must be an nn.Module"):
        parametrize.register_parametrization(nn.Linear(2, 2), "weight", lambda X: X)
    parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    np.testing.assert_allclose(np_(m.weight), w)
