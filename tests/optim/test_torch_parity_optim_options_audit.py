"""PyTorch parity of less-travelled optimiser and scheduler options (float64, against
torch itself; skipped where torch is not installed)."""
from __future__ import annotations

import numpy as np
import pytest
from _optim_reference import mlp_problem

import ember.numpy as enp
from ember import optim, tree

torch = pytest.importorskip("torch")

# options the broader parity tests (test_torch_parity.py) leave out
CASES = [
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.05, maximize=True)),
    ("Adam", dict(lr=0.05, amsgrad=True, maximize=True, weight_decay=0.05)),
    ("NAdam", dict(lr=0.05, momentum_decay=0.1, decoupled_weight_decay=True, weight_decay=0.2,
                   maximize=True)),
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.9))),  # rho_inf < 5: never rectified
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, initial_accumulator_value=0.5, eps=1e-3, maximize=True)),
    ("Adadelta", dict(lr=0.5, rho=0.5, eps=1e-3, maximize=True)),
    ("Adamax", dict(lr=0.05, betas=(0.5, 0.8), eps=1e-2, maximize=True)),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=5, weight_decay=0.1)),
    ("Rprop", dict(lr=0.02, etas=(0.3, 1.5), step_sizes=(1e-3, 0.05), maximize=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.1, maximize=True)),
]


@pytest.mark.parametrize("cls,hp", CASES, ids=[c for c, _ in CASES])
def test_option_trajectories_and_groups_match_torch(cls, hp):
    params, grad_fn, _ = mlp_problem()
    leaves, td = tree.flatten(params)
    tparams = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in leaves]
    over = {"lr": hp["lr"] * 0.5}  # a second group with its own lr
    # NAdam's mu_product and ASGD's eta/mu are scalars of torch's default dtype,
    # made at the first step
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        topt = getattr(torch.optim, cls)([{"params": tparams[:2]}, dict(params=tparams[2:], **over)], **hp)
        eopt = getattr(optim, cls)([{"params": [enp.asarray(x) for x in leaves[:2]]},
                                    dict(params=[enp.asarray(x) for x in leaves[2:]], **over)], jit=False,
                                   **hp)
        for _ in range(15):
            g = tree.leaves(grad_fn(tree.unflatten(td, [p.detach().numpy() for p in tparams])))
            for p, gi in zip(tparams, g):
                p.grad = torch.tensor(gi)
            topt.step()
            cur = [np.asarray(a) for a in eopt.params[0]] + [np.asarray(a) for a in eopt.params[1]]
            eg = [enp.asarray(a) for a in tree.leaves(grad_fn(tree.unflatten(td, cur)))]
            eopt.step([eg[:2], eg[2:]])
    finally:
        torch.set_default_dtype(old)
    got = [np.asarray(a) for a in eopt.params[0]] + [np.asarray(a) for a in eopt.params[1]]
    for x, y in zip(got, tparams):
        np.testing.assert_allclose(x, y.detach().numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("opt_cls", ["SGD", "Adam"])
@pytest.mark.parametrize("three_phase", [False, True])
@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_one_cycle_survives_the_documented_loops_last_step(opt_cls, three_phase, strategy):
    # optimizer.step(); scheduler.step() per batch ends on step == total_steps, one past
    # the cycle: PyTorch extrapolates the last phase there ('linear': lr -0.071 and
    # momentum 0.964), which ember's group checks refused, raising on the loop's last
    # line.  That step now stays within the last phase's endpoints; 'cos' is unchanged.
    t = getattr(torch.optim, opt_cls)([torch.zeros(1, requires_grad=True)], lr=0.1)
    e = getattr(optim, opt_cls)([enp.zeros(1)], lr=0.1)
    kw = dict(max_lr=0.5, total_steps=10, anneal_strategy=strategy, three_phase=three_phase)
    ts = torch.optim.lr_scheduler.OneCycleLR(t, **kw)
    es = optim.lr_scheduler.OneCycleLR(e, **kw)
    key = "momentum" if opt_cls == "SGD" else "betas"
    mom = (lambda g: g[key]) if opt_cls == "SGD" else (lambda g: g[key][0])
    for i in range(10):
        np.testing.assert_allclose(es.get_last_lr(), ts.get_last_lr(), rtol=1e-12)
        np.testing.assert_allclose(mom(e.param_groups[0]), mom(t.param_groups[0]), rtol=1e-12)
        t.step()
        ts.step()
        e.step([enp.zeros(1)])
        es.step()
    lr, m = es.get_last_lr()[0], mom(e.param_groups[0])
    if strategy == "cos":
        np.testing.assert_allclose([lr, m], [ts.get_last_lr()[0], mom(t.param_groups[0])], rtol=1e-12)
    else:
        assert ts.get_last_lr()[0] < 0  # what PyTorch extrapolates to
        np.testing.assert_allclose([lr, m], [0.5 / 25 / 1e4, 0.95], rtol=1e-12)
    with pytest.raises(ValueError, match="Tried to step 11 times"):
        es.step()
