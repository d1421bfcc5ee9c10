"""CyclicLR and PolynomialLR against torch.optim.lr_scheduler step by step (lr and the
cycled momentum / beta1), plus SequentialLR / ChainedScheduler built from them."""
import pickle

import numpy as np
import pytest

import ember.numpy as enp
from ember import optim
from ember.optim import lr_scheduler as L

torch = pytest.importorskip("torch")

CYCLIC = [
    dict(base_lr=0.01, max_lr=0.1, step_size_up=3),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=2, step_size_down=5, mode="triangular2"),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=4, mode="exp_range", gamma=0.97),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=3, scale_fn=lambda x: 0.5 ** x,
         scale_mode="iterations"),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=3, cycle_momentum=False),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=2, base_momentum=0.7, max_momentum=0.95),
]


def _pair(cls_name, **hp):
    t = getattr(torch.optim, cls_name)([torch.zeros(1, requires_grad=True)], **hp)
    e = getattr(optim, cls_name)([enp.asarray(np.zeros(1))], **hp)
    return t, e


def _compare(topt, eopt, ts, es, steps, key):
    for _ in range(steps):
        np.testing.assert_allclose(es.get_last_lr(), ts.get_last_lr(), rtol=1e-13, atol=1e-16)
        if key is not None:
            got, want = eopt.param_groups[0][key], topt.param_groups[0][key]
            np.testing.assert_allclose(np.ravel(got), np.ravel(want), rtol=1e-13)
        topt.step()
        ts.step()
        es.step()


@pytest.mark.parametrize("kw", CYCLIC, ids=[f"cyclic-{i}" for i in range(len(CYCLIC))])
def test_cyclic_lr_matches_torch_with_momentum(kw):
    topt, eopt = _pair("SGD", lr=0.5, momentum=0.9)
    ts = torch.optim.lr_scheduler.CyclicLR(topt, **kw)
    es = L.CyclicLR(eopt, **kw)
    _compare(topt, eopt, ts, es, 25, "momentum")


def test_cyclic_lr_cycles_adams_beta1_like_torch():
    topt, eopt = _pair("Adam", lr=0.5)
    kw = dict(base_lr=0.001, max_lr=0.01, step_size_up=3, mode="triangular2")
    ts = torch.optim.lr_scheduler.CyclicLR(topt, **kw)
    es = L.CyclicLR(eopt, **kw)
    _compare(topt, eopt, ts, es, 20, "betas")


def test_cyclic_lr_errors_and_state_dict():
    _, eopt = _pair("SGD", lr=0.5)  # no momentum key in defaults? SGD has one
    with pytest.raises(ValueError, match="mode must be one of"):
        L.CyclicLR(eopt, 0.1, 1.0, mode="sawtooth")
    _, aopt = _pair("Adagrad", lr=0.5)
    with pytest.raises(ValueError, match="support momentum or beta1"):
        L.CyclicLR(aopt, 0.1, 1.0)
    s = L.CyclicLR(eopt, 0.1, 1.0, step_size_up=2)
    for _ in range(3):
        s.step()
    sd = pickle.loads(pickle.dumps(s.state_dict()))
    _, eopt2 = _pair("SGD", lr=0.5)
    s2 = L.CyclicLR(eopt2, 0.1, 1.0, step_size_up=2)
    s2.load_state_dict(sd)
    s.step()
    s2.step()
    assert s2.get_last_lr() == s.get_last_lr()


@pytest.mark.parametrize("kw", [dict(total_iters=4, power=1.0), dict(total_iters=6, power=2.5),
                                dict(total_iters=3, power=0.5)])
def test_polynomial_lr_matches_torch(kw):
    topt, eopt = _pair("SGD", lr=0.3)
    ts = torch.optim.lr_scheduler.PolynomialLR(topt, **kw)
    es = L.PolynomialLR(eopt, **kw)
    _compare(topt, eopt, ts, es, 10, None)
    # the closed form (step(epoch)) agrees with the chained rule
    es2 = L.PolynomialLR(_pair("SGD", lr=0.3)[1], **kw)
    with pytest.warns(UserWarning, match="deprecated"):
        es2.step(2)
    want = 0.3 * (1 - 2 / kw["total_iters"]) ** kw["power"]
    assert es2.get_last_lr()[0] == pytest.approx(want, rel=1e-13)
    with pytest.raises(ValueError, match="total_iters must be a positive int"):
        L.PolynomialLR(eopt, total_iters=0)


def _sequential(opt, mod):
    return mod.SequentialLR(opt, [mod.PolynomialLR(opt, total_iters=3, power=2.0),
                                  mod.ExponentialLR(opt, gamma=0.8)], milestones=[4])


def _chained(opt, mod):
    return mod.ChainedScheduler([mod.PolynomialLR(opt, total_iters=5),
                                 mod.ExponentialLR(opt, gamma=0.9)])


@pytest.mark.parametrize("build", [_sequential, _chained])
def test_sequential_and_chained_with_polynomial_match_torch(build):
    topt, eopt = _pair("SGD", lr=0.2)
    ts, es = build(topt, torch.optim.lr_scheduler), build(eopt, L)
    _compare(topt, eopt, ts, es, 12, None)
