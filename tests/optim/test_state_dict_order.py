"""Optimiser state_dict numbers parameters in registration order, as PyTorch does
(not in sorted-key pytree order), so moments land on the right parameters when
shapes match; loading checks shapes."""
from __future__ import annotations

import numpy as np
import pytest

import ember.numpy as enp
from ember import nn, optim, random


class Twin(nn.Module):
    """Registration order (zeta, alpha) differs from sorted order (alpha, zeta);
    both layers have equal shapes, so a wrong numbering would go unnoticed."""

    def __init__(self):
        super().__init__()
        self.zeta = nn.Linear(3, 3, key=random.key(1))
        self.alpha = nn.Linear(3, 3, key=random.key(2))

    def forward(self, x):
        return self.alpha(self.zeta(x))


def _grads(scale):
    # distinct gradients per parameter, so every moment is recognisable
    return {"zeta": {"weight": enp.full((3, 3), 1.0 * scale), "bias": enp.full((3,), 2.0 * scale)},
            "alpha": {"weight": enp.full((3, 3), 3.0 * scale), "bias": enp.full((3,), 4.0 * scale)}}


def test_state_dict_numbers_parameters_in_registration_order():
    m = Twin()
    order = [n for n, _ in m.named_parameters()]
    assert order == ["zeta.weight", "zeta.bias", "alpha.weight", "alpha.bias"]
    opt = optim.Adam(m, lr=0.1)
    opt.step(_grads(1.0))
    sd = opt.state_dict()
    assert sd["param_groups"][0]["params"] == [0, 1, 2, 3]
    # exp_avg after one step is (1 - beta1) * g
    for i, g in enumerate([1.0, 2.0, 3.0, 4.0]):
        np.testing.assert_allclose(np.asarray(sd["state"][i]["exp_avg"]), 0.1 * g, rtol=1e-6)
    assert np.asarray(sd["state"][0]["exp_avg"]).shape == (3, 3)
    assert np.asarray(sd["state"][1]["exp_avg"]).shape == (3,)


def test_round_trip_and_plain_dict_insertion_order():
    m = Twin()
    opt = optim.Adam(m, lr=0.1)
    opt.step(_grads(1.0))
    other = optim.Adam(Twin(), lr=0.1)
    other.load_state_dict(opt.state_dict())
    for a, b in zip(opt.functional_state(), other.functional_state()):
        np.testing.assert_array_equal(np.asarray(a.inner_state.exp_avg["zeta"]["bias"]),
                                      np.asarray(b.inner_state.exp_avg["zeta"]["bias"]))
    # a plain dict is numbered in insertion order too
    p = {"z": enp.zeros(2), "a": enp.zeros(2)}
    o = optim.SGD(p, lr=0.1, momentum=0.9)
    o.step({"z": enp.full((2,), 1.0), "a": enp.full((2,), 5.0)})
    st = o.state_dict()["state"]
    np.testing.assert_array_equal(np.asarray(st[0]["momentum_buffer"]), [1.0, 1.0])
    np.testing.assert_array_equal(np.asarray(st[1]["momentum_buffer"]), [5.0, 5.0])


def test_load_checks_shapes():
    m = Twin()
    opt = optim.Adam(m, lr=0.1)
    opt.step(_grads(1.0))
    sd = opt.state_dict()
    sd["state"][1]["exp_avg"] = enp.zeros((3, 3))  # zeta.bias has shape (3,)
    with pytest.raises(ValueError, match=r"exp_avg.*\['zeta'\]\['bias'\].*\(3, 3\), expected \(3,\)"):
        optim.Adam(Twin(), lr=0.1).load_state_dict(sd)


def test_layout_matches_a_torch_optimizer():
    torch = pytest.importorskip("torch")

    class TTwin(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.zeta = torch.nn.Linear(3, 3)
            self.alpha = torch.nn.Linear(3, 3)

    em, tm = Twin(), TTwin()
    with torch.no_grad():
        for name, p in tm.named_parameters():
            p.copy_(torch.tensor(np.asarray(em.state_dict()[name]), dtype=torch.float32))
    topt = torch.optim.Adam(tm.parameters(), lr=0.1)
    eopt = optim.Adam(em, lr=0.1)
    names = [n for n, _ in tm.named_parameters()]
    assert names == [n for n, _ in em.named_parameters()]
    for scale in (1.0, -0.5):
        g = _grads(scale)
        for name, p in tm.named_parameters():
            mod, leaf = name.split(".")
            p.grad = torch.tensor(np.asarray(g[mod][leaf]))
        topt.step()
        eopt.step(g)
    tsd, esd = topt.state_dict(), eopt.state_dict()
    assert tsd["param_groups"][0]["params"] == esd["param_groups"][0]["params"]
    for i in range(4):
        for k in ("exp_avg", "exp_avg_sq"):
            np.testing.assert_allclose(np.asarray(esd["state"][i][k]), tsd["state"][i][k].numpy(),
                                       rtol=1e-6, err_msg=f"{i} {k}")
    # torch's state dict loads onto the right parameters, and the next steps agree
    fresh = Twin()
    fresh.load_state_dict({n: p.detach().numpy() for n, p in tm.named_parameters()})
    fopt = optim.Adam(fresh, lr=0.1)
    fopt.load_state_dict(tsd)
    g = _grads(2.0)
    for name, p in tm.named_parameters():
        mod, leaf = name.split(".")
        p.grad = torch.tensor(np.asarray(g[mod][leaf]))
    topt.step()
    fopt.step(g)
    for name, p in tm.named_parameters():
        np.testing.assert_allclose(np.asarray(fresh.state_dict()[name]), p.detach().numpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=name)
