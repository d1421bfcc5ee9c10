"""PyTorch-style LR schedulers against hand-computed tables of PyTorch's documented values."""
from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import ember.numpy as enp
from ember import optim
from ember.optim import lr_scheduler as L

C4 = (1 + math.cos(math.pi / 4)) / 2          # 0.8535533905932737
C8 = (1 + math.cos(math.pi / 8)) / 2          # 0.9619397662556434


def make_opt(lr=1.0, cls=optim.SGD, groups=1, **kw):
    if groups == 1:
        return cls([enp.asarray(np.ones(1))], lr=lr, **kw)
    return cls([{"params": [enp.asarray(np.ones(1))]} for _ in range(groups)], lr=lr, **kw)


def run(sched, n):
    """The lr of epochs 0 .. n-1 (what `get_last_lr` reports between `step`s)."""
    out = []
    for i in range(n):
        if i:
            sched.step()
        out.append(sched.get_last_lr()[0])
        assert sched.optimizer.param_groups[0]["lr"] == out[-1]
    return out


TABLES = [
    ("StepLR", lambda o: L.StepLR(o, step_size=3, gamma=0.1),
     [1, 1, 1, 0.1, 0.1, 0.1, 0.01, 0.01, 0.01, 0.001]),
    ("MultiStepLR", lambda o: L.MultiStepLR(o, milestones=[2, 5, 5], gamma=0.5),
     [1, 1, 0.5, 0.5, 0.5, 0.125, 0.125]),
    ("ExponentialLR", lambda o: L.ExponentialLR(o, gamma=0.9), [0.9 ** e for e in range(8)]),
    ("CosineAnnealingLR", lambda o: L.CosineAnnealingLR(o, T_max=4, eta_min=0.1),
     # eta_min + (1 - eta_min)(1 + cos(pi e / 4)) / 2, periodic past T_max as in PyTorch
     [1.0, 0.1 + 0.9 * C4, 0.55, 0.1 + 0.9 * (1 - C4), 0.1, 0.1 + 0.9 * (1 - C4), 0.55,
      0.1 + 0.9 * C4, 1.0, 0.1 + 0.9 * C4]),
    ("CosineAnnealingWarmRestarts", lambda o: L.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2),
     [1.0, 0.5, 1.0, C4, 0.5, 1 - C4, 1.0, C8]),
    ("LinearLR", lambda o: L.LinearLR(o, start_factor=0.25, total_iters=3),
     [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]),
    ("LambdaLR", lambda o: L.LambdaLR(o, lambda e: 1 / (e + 1)), [1, 0.5, 1 / 3, 0.25]),
    ("OneCycleLR", lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=10),
     [0.04, 0.52, 1.0] + [4e-6 + (1 - 4e-6) / 2 * (math.cos(math.pi * (s - 2) / 7) + 1)
                          for s in range(3, 10)]),
    ("OneCycleLR-linear-3phase",
     lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=12, pct_start=0.25,
                            anneal_strategy="linear", three_phase=True),
     [0.04, 0.52, 1.0, 0.52, 0.04] + [(4e-6 - 0.04) * (s - 4) / 7 + 0.04 for s in range(5, 12)]),
    ("SequentialLR", lambda o: L.SequentialLR(
        o, [L.LinearLR(o, start_factor=0.1, total_iters=2), L.ExponentialLR(o, gamma=0.5)],
        milestones=[2]),
     [0.1, 0.55, 1.0, 0.5, 0.25]),
    ("ChainedScheduler", lambda o: L.ChainedScheduler(
        [L.LinearLR(o, start_factor=0.5, total_iters=2), L.ExponentialLR(o, gamma=0.9)]),
     [0.5, 0.675, 0.81, 0.729, 0.6561]),
]


@pytest.mark.parametrize("name,make,table", TABLES, ids=[t[0] for t in TABLES])
def test_scheduler_values_match_pytorch_tables(name, make, table):
    opt = make_opt(momentum=0.9)
    sched = make(opt)
    np.testing.assert_allclose(run(sched, len(table)), table, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name,make", [
    ("StepLR", lambda o: L.StepLR(o, step_size=3, gamma=0.1)),
    ("MultiStepLR", lambda o: L.MultiStepLR(o, milestones=[2, 5, 5], gamma=0.5)),
    ("ExponentialLR", lambda o: L.ExponentialLR(o, gamma=0.9)),
    ("CosineAnnealingLR", lambda o: L.CosineAnnealingLR(o, T_max=4, eta_min=0.1)),
    ("LinearLR", lambda o: L.LinearLR(o, start_factor=0.25, total_iters=3)),
])
def test_recursive_rule_agrees_with_the_closed_form(name, make):
    rec = run(make(make_opt()), 12)
    closed = make(make_opt())
    with pytest.warns(UserWarning, match="deprecated"):
        for e in range(12):
            closed.step(e)
            np.testing.assert_allclose(closed.get_last_lr()[0], rec[e], rtol=1e-12, atol=1e-15)


def test_chaining_composes_multiplicatively_and_respects_manual_edits():
    opt = make_opt()
    s = L.StepLR(opt, step_size=1, gamma=0.5)
    opt.param_groups[0]["lr"] = 10.0              # the recursive rule starts from the edit
    s.step()
    assert s.get_last_lr() == [5.0]


def test_warm_restarts_fractional_epochs():
    opt = make_opt()
    s = L.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2)
    s.step(2.5)                                    # T_i = 4, T_cur = 0.5
    assert s.get_last_lr()[0] == pytest.approx(C8)
    s.step(0.5)
    assert s.get_last_lr()[0] == pytest.approx((1 + math.cos(math.pi / 4)) / 2)
    with pytest.raises(ValueError, match="non-negative epoch"):
        s.step(-1)


def test_one_cycle_cycles_momentum_and_beta1():
    opt = make_opt(momentum=0.9)
    s = L.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    moms = [opt.param_groups[0]["momentum"]]
    for _ in range(9):
        s.step()
        moms.append(opt.param_groups[0]["momentum"])
    np.testing.assert_allclose(moms[:3], [0.95, 0.9, 0.85])
    np.testing.assert_allclose(moms[-1], 0.95)
    adam = make_opt(cls=optim.Adam)
    L.OneCycleLR(adam, max_lr=0.1, total_steps=4, pct_start=0.5)
    assert adam.param_groups[0]["betas"] == (0.95, 0.999)
    assert adam.param_groups[0]["max_lr"] == 0.1 and adam.param_groups[0]["initial_lr"] == 0.004
    s.step()                                       # step 10 == total_steps is still allowed
    with pytest.raises(ValueError, match="Tried to step 11 times"):
        s.step()


def test_one_cycle_per_group_max_lr_and_errors():
    opt = make_opt(groups=2, momentum=0.9)
    s = L.OneCycleLR(opt, max_lr=[1.0, 2.0], total_steps=10, pct_start=0.3)
    assert s.get_last_lr() == pytest.approx([0.04, 0.08])
    with pytest.raises(ValueError, match="You must define either total_steps"):
        L.OneCycleLR(make_opt(momentum=0.9), max_lr=1.0)
    with pytest.raises(ValueError, match="pct_start"):
        L.OneCycleLR(make_opt(momentum=0.9), max_lr=1.0, total_steps=10, pct_start=1)
    with pytest.raises(ValueError, match="must support momentum or beta1"):
        L.OneCycleLR(make_opt(cls=optim.Adagrad), max_lr=1.0, total_steps=10)
    s = L.OneCycleLR(make_opt(cls=optim.Adagrad), max_lr=1.0, epochs=2, steps_per_epoch=5,
                     cycle_momentum=False)
    assert s.total_steps == 10


def test_reduce_lr_on_plateau_min_rel_with_cooldown_and_min_lr():
    opt = make_opt()
    s = L.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=2, threshold=0.1,
                            threshold_mode="rel", cooldown=1, min_lr=0.2)
    metrics = [10, 9.5, 9.2, 9.1, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0]
    lrs = []
    for m in metrics:
        s.step(m)
        lrs.append(s.get_last_lr()[0])
    assert lrs == [1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25, 0.2, 0.2, 0.2, 0.2, 0.2]
    assert s.best == 8.0 and s.last_epoch == len(metrics)


def test_reduce_lr_on_plateau_max_abs_and_eps():
    opt = make_opt()
    s = L.ReduceLROnPlateau(opt, mode="max", factor=0.1, patience=0, threshold=1.0,
                            threshold_mode="abs")
    lrs = []
    for m in [1.0, 1.5, 3.0, 3.5]:
        s.step(enp.asarray(m))                    # scalar arrays work as metrics
        lrs.append(s.get_last_lr()[0])
    np.testing.assert_allclose(lrs, [1.0, 0.1, 0.1, 0.01])
    opt = make_opt(lr=1e-9)
    s = L.ReduceLROnPlateau(opt, patience=0, eps=1e-8)
    s.step(1.0)
    s.step(2.0)
    assert s.get_last_lr() == [1e-9]              # a change below eps is skipped


@pytest.mark.parametrize("make,msg", [
    (lambda o: L.ReduceLROnPlateau(o, factor=1.0), "Factor should be < 1.0"),
    (lambda o: L.ReduceLROnPlateau(o, mode="middle"), "mode middle is unknown"),
    (lambda o: L.ReduceLROnPlateau(o, threshold_mode="x"), "threshold mode x is unknown"),
    (lambda o: L.ReduceLROnPlateau(o, min_lr=[0.1, 0.2]), "expected 1 min_lrs"),
    (lambda o: L.LinearLR(o, start_factor=0.0), "Starting multiplicative factor"),
    (lambda o: L.LinearLR(o, end_factor=2.0), "Ending multiplicative factor"),
    (lambda o: L.CosineAnnealingWarmRestarts(o, T_0=0), "Expected positive integer T_0"),
    (lambda o: L.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0), "T_mult >= 1"),
    (lambda o: L.StepLR(o, step_size=0), "step_size must be a positive int"),
    (lambda o: L.LambdaLR(o, [lambda e: 1, lambda e: 2]), "Expected 1 lr_lambdas"),
    (lambda o: L.SequentialLR(o, [L.StepLR(o, 1)], milestones=[1]), "one more than the number"),
    (lambda o: L.SequentialLR(o, [L.ReduceLROnPlateau(o), L.StepLR(o, 1)], [1]),
     "does not support `ReduceLROnPlateau`"),
    (lambda o: L.ChainedScheduler([L.StepLR(o, 1), L.StepLR(make_opt(), 1)]),
     "belong to the same optimizer|same optimizer"),
])
def test_scheduler_argument_errors(make, msg):
    with pytest.raises(ValueError, match=msg):
        make(make_opt())


def test_resuming_needs_initial_lr():
    with pytest.raises(KeyError, match="initial_lr"):
        L.StepLR(make_opt(), step_size=1, last_epoch=3)


@pytest.mark.parametrize("make", [
    lambda o: L.StepLR(o, step_size=2, gamma=0.5),
    lambda o: L.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
    lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=12),
    lambda o: L.SequentialLR(o, [L.LinearLR(o, 0.5, total_iters=2), L.ExponentialLR(o, 0.8)], [3]),
])
def test_scheduler_state_dict_round_trip(make):
    a_opt, b_opt = make_opt(momentum=0.9), make_opt(momentum=0.9)
    a = make(a_opt)
    for _ in range(5):
        a.step()
    b = make(b_opt)
    b.load_state_dict(pickle.loads(pickle.dumps(a.state_dict())))
    b_opt.load_state_dict(a_opt.state_dict())
    for _ in range(5):
        a.step()
        b.step()
        assert a.get_last_lr() == b.get_last_lr()
    assert "optimizer" not in a.state_dict()


def test_lambda_lr_state_dict_skips_plain_functions_keeps_callable_objects():
    class Halve:
        def __init__(self):
            self.factor = 0.5

        def __call__(self, e):
            return self.factor ** e
    obj = Halve()
    s = L.LambdaLR(make_opt(groups=2), [lambda e: 1.0, obj])
    sd = s.state_dict()
    assert sd["lr_lambdas"] == [None, {"factor": 0.5}]
    obj.factor = 0.1
    s.load_state_dict(sd)
    assert obj.factor == 0.5


def test_schedulers_drive_the_compiled_step_without_recompiling():
    opt = optim.SGD([enp.asarray(np.zeros(1))], lr=1.0, momentum=0.9)
    s = L.OneCycleLR(opt, max_lr=1.0, total_steps=8)
    lrs, moms = [], []
    for i in range(8):
        if i:
            s.step()
        lrs.append(opt.param_groups[0]["lr"])
        moms.append(opt.param_groups[0]["momentum"])
        opt.step([enp.asarray(np.ones(1))])
    buf, p = 0.0, 0.0
    for i, (lr, m) in enumerate(zip(lrs, moms)):
        buf = 1.0 if i == 0 else m * buf + 1.0
        p -= lr * buf
    np.testing.assert_allclose(np.asarray(opt.params[0]), [p], rtol=1e-6)
    assert opt._compiled._cache_size() == 1
