"""Adafactor against torch.optim.Adafactor step by step (float64 and float32, factored
matrices, a 3-D stack, vectors, scalars), the functional form under jit, and state_dict."""
import numpy as np
import pytest
from _optim_reference import mlp_problem

import ember
import ember.numpy as enp
from ember import optim, tree

torch = pytest.importorskip("torch")

CASES = [
    dict(),
    dict(lr=0.05, weight_decay=0.1),
    dict(lr=0.02, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=1.5),
    dict(lr=0.05, maximize=True),
    dict(lr=0.3, d=1.0),  # update clipping active
]


def _run(hp, leaves, grad_of, steps, dtype, jit):
    tparams = [torch.tensor(x.astype(dtype), requires_grad=True) for x in leaves]
    topt = torch.optim.Adafactor(tparams, **hp)
    eopt = optim.Adafactor([enp.asarray(x.astype(dtype)) for x in leaves], jit=jit, **hp)
    for _ in range(steps):
        g = grad_of([p.detach().numpy().astype(np.float64) for p in tparams])
        for p, gi in zip(tparams, g):
            p.grad = torch.tensor(gi.astype(dtype))
        topt.step()
        eg = grad_of([np.asarray(p).astype(np.float64) for p in eopt.params])
        eopt.step([enp.asarray(gi.astype(dtype)) for gi in eg])
    return eopt, topt, tparams


@pytest.mark.parametrize("hp", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_adafactor_matches_torch_on_mlp(hp):
    params, grad_fn, _ = mlp_problem()
    leaves, td = tree.flatten(params)

    def grad_of(ls):
        return tree.leaves(grad_fn(tree.unflatten(td, ls)))

    eopt, topt, tparams = _run(hp, leaves, grad_of, 20, np.float64, jit=False)
    for x, y in zip(eopt.params, tparams):
        np.testing.assert_allclose(np.asarray(x), y.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_adafactor_matches_torch_float32_jit_stack_and_scalar():
    rng = np.random.default_rng(0)
    leaves = [rng.normal(size=(2, 3, 4)), rng.normal(size=(5,)), np.array(0.7)]
    target = [rng.normal(size=l.shape) for l in leaves]

    def grad_of(ls):
        return [2 * (p - t) for p, t in zip(ls, target)]

    eopt, topt, tparams = _run(dict(lr=0.05, weight_decay=0.01), leaves, grad_of, 15,
                               np.float32, jit=True)
    for x, y in zip(eopt.params, tparams):
        assert x.dtype == enp.float32
        np.testing.assert_allclose(np.asarray(x), y.detach().numpy(), rtol=2e-5, atol=2e-6)
    # the state_dict has PyTorch's keys and shapes per parameter
    sd, tsd = eopt.state_dict(), topt.state_dict()
    for i in range(3):
        assert sorted(sd["state"][i]) == sorted(tsd["state"][i])
        for k, v in tsd["state"][i].items():
            np.testing.assert_allclose(np.asarray(sd["state"][i][k]), v.numpy(), rtol=2e-5,
                                       atol=1e-7)
    assert sd["param_groups"][0]["eps"] == (None, 1e-3)


def test_adafactor_load_state_dict_from_torch_continues_identically():
    rng = np.random.default_rng(1)
    leaves = [rng.normal(size=(3, 4)), rng.normal(size=(4,))]
    grads = [[rng.normal(size=l.shape) for l in leaves] for _ in range(6)]
    tparams = [torch.tensor(x, requires_grad=True) for x in leaves]
    topt = torch.optim.Adafactor(tparams, lr=0.05)
    for g in grads[:3]:
        for p, gi in zip(tparams, g):
            p.grad = torch.tensor(gi)
        topt.step()
    eopt = optim.Adafactor([enp.asarray(p.detach().numpy()) for p in tparams], lr=0.05,
                           jit=False)
    eopt.load_state_dict(topt.state_dict())
    for g in grads[3:]:
        for p, gi in zip(tparams, g):
            p.grad = torch.tensor(gi)
        topt.step()
        eopt.step([enp.asarray(gi) for gi in g])
    for x, y in zip(eopt.params, tparams):
        np.testing.assert_allclose(np.asarray(x), y.detach().numpy(), rtol=1e-10)


def test_functional_adafactor_under_jit_and_errors():
    tx = optim.adafactor(lr=0.1)
    p = {"w": enp.ones((2, 3)), "b": enp.ones(3)}
    g = {"w": enp.full((2, 3), 0.5), "b": enp.full((3,), -0.5)}
    s = tx.init(p)
    u1, s1 = tx.update(g, s, p)
    u2, s2 = ember.jit(tx.update)(g, s, p)
    for a, b in zip(tree.leaves(u1), tree.leaves(u2)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
    # a changed lr reaches the next step without rebuilding
    opt = optim.Adafactor([enp.ones(2)], lr=0.1)
    opt.param_groups[0]["lr"] = 0.0
    assert opt.step([enp.ones(2)])[0].tolist() == [1.0, 1.0]
    opt.param_groups[0]["eps"] = (1e-30, 1e-3)
    with pytest.raises(ValueError, match="d should be >= 1"):
        optim.Adafactor([enp.ones(2)], d=0.5)
    with pytest.raises(ValueError, match="beta2_decay should be <= 0"):
        optim.adafactor(beta2_decay=0.5)
    with pytest.raises(ValueError, match="eps must be a pair"):
        optim.Adafactor([enp.ones(2)], eps=1e-3)
