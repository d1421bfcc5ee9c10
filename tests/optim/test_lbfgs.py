"""LBFGS against torch.optim.LBFGS step by step (fixed step and strong-Wolfe line search,
small history, both closure forms), and its errors and state_dict."""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import optim

torch = pytest.importorskip("torch")


def rosen(x, lib):
    return lib.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def mlp_loss(ps, x, y, lib):
    w1, b1, w2, b2 = ps
    h = lib.tanh(x @ w1 + b1)
    return lib.mean((h @ w2 + b2 - y) ** 2)


CONFIGS = [
    dict(lr=1.0, max_iter=20, line_search_fn="strong_wolfe"),
    dict(lr=0.05, max_iter=10),
    dict(lr=1.0, max_iter=15, history_size=3, line_search_fn="strong_wolfe"),
    dict(lr=0.5, max_iter=7, max_eval=9, tolerance_change=1e-12),
]


@pytest.mark.parametrize("hp", CONFIGS, ids=[f"cfg{i}" for i in range(len(CONFIGS))])
def test_lbfgs_matches_torch_on_rosenbrock(hp):
    x0 = np.array([-1.2, 1.0, -0.5, 0.8])
    tx = torch.tensor(x0, requires_grad=True)
    topt = torch.optim.LBFGS([tx], **hp)

    def tclosure():
        topt.zero_grad()
        loss = rosen(tx, torch)
        loss.backward()
        return loss

    eopt = optim.LBFGS([enp.asarray(x0)], **hp)
    for _ in range(4):
        tl = topt.step(tclosure)
        el = eopt.step(lambda p: rosen(p[0], enp))
        assert float(el) == pytest.approx(float(tl.detach()), rel=1e-9, abs=1e-12)
        np.testing.assert_allclose(np.asarray(eopt.params[0]), tx.detach().numpy(), rtol=1e-8,
                                   atol=1e-10)
    sd, tsd = eopt.state_dict()["state"][0], topt.state_dict()["state"][0]
    assert sd["func_evals"] == tsd["func_evals"] and sd["n_iter"] == tsd["n_iter"]


def test_lbfgs_matches_torch_on_mlp_with_a_grads_closure():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(12, 3)), rng.normal(size=(12, 1))
    init = [rng.normal(size=(3, 5)) * 0.5, np.zeros(5), rng.normal(size=(5, 1)) * 0.5, np.zeros(1)]
    tps = [torch.tensor(p, requires_grad=True) for p in init]
    tx_, ty_ = torch.tensor(x), torch.tensor(y)
    topt = torch.optim.LBFGS(tps, lr=1.0, max_iter=10, line_search_fn="strong_wolfe")

    def tclosure():
        topt.zero_grad()
        loss = mlp_loss(tps, tx_, ty_, torch)
        loss.backward()
        return loss

    eopt = optim.LBFGS([enp.asarray(p) for p in init], lr=1.0, max_iter=10,
                       line_search_fn="strong_wolfe")
    vg = ember.jit(ember.value_and_grad(lambda ps: mlp_loss(ps, x, y, enp)))

    def eclosure():  # the torch habit: no arguments, here returning (loss, grads)
        return vg(eopt.params)

    for _ in range(3):
        topt.step(tclosure)
        eopt.step(eclosure)
    for a, b in zip(eopt.params, tps):
        np.testing.assert_allclose(np.asarray(a), b.detach().numpy(), rtol=1e-6, atol=1e-8)


def test_lbfgs_state_dict_round_trip_and_from_torch():
    x0 = np.array([-1.2, 1.0])
    tx = torch.tensor(x0, requires_grad=True)
    topt = torch.optim.LBFGS([tx], max_iter=5)

    def tclosure():
        topt.zero_grad()
        loss = rosen(tx, torch)
        loss.backward()
        return loss

    topt.step(tclosure)
    eopt = optim.LBFGS([enp.asarray(tx.detach().numpy())], max_iter=5)
    eopt.load_state_dict(topt.state_dict())
    topt.step(tclosure)
    eopt.step(lambda p: rosen(p[0], enp))
    np.testing.assert_allclose(np.asarray(eopt.params[0]), tx.detach().numpy(), rtol=1e-8)
    again = optim.LBFGS([enp.asarray(np.asarray(eopt.params[0]))], max_iter=5)
    again.load_state_dict(eopt.state_dict())
    assert again.state["n_iter"] == eopt.state["n_iter"]


def test_lbfgs_updates_a_module_and_reports_errors():
    class Quad:
        def __init__(self):
            self.w = enp.asarray([3.0, -1.0])

        def parameters(self):
            return {"w": self.w}

        def load_parameters(self, t):
            self.w = t["w"]

    m = Quad()
    opt = optim.LBFGS(m, line_search_fn="strong_wolfe")
    opt.step(lambda p: ((p["w"] - 2.0) ** 2).sum())
    np.testing.assert_allclose(np.asarray(m.w), [2.0, 2.0], atol=1e-6)
    with pytest.raises(TypeError, match="returned only the loss"):
        opt.step(lambda: (m.w ** 2).sum())
    with pytest.raises(TypeError, match="needs a closure"):
        opt.step(None)
    with pytest.raises(ValueError, match="line_search_fn must be None or 'strong_wolfe'"):
        optim.LBFGS([enp.ones(2)], line_search_fn="armijo")
    with pytest.raises(ValueError, match="parameter groups"):
        optim.LBFGS([{"params": [enp.ones(1)]}, {"params": [enp.ones(1)]}])
    with pytest.raises(TypeError, match="shaped like opt.params"):
        optim.LBFGS([enp.ones(2)]).step(lambda: (enp.asarray(1.0), [enp.ones(3)]))
