"""PyTorch parity of ember.optim: LR scheduler trajectories (fresh and resumed with
last_epoch=N), the schedulers PyTorch has, and optimiser steps.  Expected values were
computed with torch 2.13 and are written as literals."""
import copy

import numpy as np
import pytest

import ember.numpy as enp
from ember import optim

S = optim.lr_scheduler


def _opt(groups=1):
    ps = [{"params": [enp.zeros(1)], "lr": 0.1 * (i + 1)} for i in range(groups)]
    return optim.SGD(ps, lr=0.1, momentum=0.9)


_FACTORIES = {
    "StepLR": lambda o, le=-1: S.StepLR(o, 4, 0.5, last_epoch=le),
    "MultiStepLR": lambda o, le=-1: S.MultiStepLR(o, [3, 7, 7, 15], 0.5, last_epoch=le),
    "ExponentialLR": lambda o, le=-1: S.ExponentialLR(o, 0.9, last_epoch=le),
    "CosineAnnealingLR": lambda o, le=-1: S.CosineAnnealingLR(o, 7, 0.01, last_epoch=le),
    "LambdaLR": lambda o, le=-1: S.LambdaLR(o, lambda e: 1.0 / (1 + e), last_epoch=le),
    "OneCycleLR": lambda o, le=-1: S.OneCycleLR(o, 1.0, total_steps=40, last_epoch=le),
    "CosineAnnealingWarmRestarts": lambda o, le=-1: S.CosineAnnealingWarmRestarts(
        o, 3, 2, 0.01, last_epoch=le),
    "LinearLR": lambda o, le=-1: S.LinearLR(o, 0.25, 1.0, 8, last_epoch=le),
    "PolynomialLR": lambda o, le=-1: S.PolynomialLR(o, 12, 2.0, last_epoch=le),
    "CyclicLR": lambda o, le=-1: S.CyclicLR(o, 0.01, 0.2, 3, last_epoch=le),
    "ConstantLR": lambda o, le=-1: S.ConstantLR(o, 0.3, 5, last_epoch=le),
    "MultiplicativeLR": lambda o, le=-1: S.MultiplicativeLR(o, lambda e: 0.9, last_epoch=le),
    "SequentialLR": lambda o, le=-1: S.SequentialLR(
        o, [S.LinearLR(o, 0.5, total_iters=3), S.ExponentialLR(o, 0.8)], [4], last_epoch=le),
    "ChainedScheduler": lambda o, le=-1: S.ChainedScheduler([S.ExponentialLR(o, 0.9),
                                                             S.StepLR(o, 3, 0.5)]),
}

# torch 2.13: [get_last_lr()[0] after construction and after each step]
_SCHED_REF = {
    "StepLR/g1": [0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.025, 0.0125, 0.0125, 0.0125, 0.0125, 0.00625, 0.00625, 0.00625, 0.00625, 0.003125, 0.003125, 0.003125, 0.003125, 0.0015625, 0.0015625, 0.0015625, 0.0015625, 0.00078125, 0.00078125, 0.00078125],
    "StepLR/resume": [0.025, 0.0125, 0.0125, 0.0125, 0.0125, 0.00625, 0.00625, 0.00625, 0.00625, 0.003125, 0.003125, 0.003125, 0.003125, 0.0015625, 0.0015625, 0.0015625, 0.0015625, 0.00078125, 0.00078125, 0.00078125, 0.00078125],
    "MultiStepLR/g1": [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.0125, 0.0125, 0.0125, 0.0125, 0.0125, 0.0125, 0.0125, 0.0125, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625],
    "MultiStepLR/resume": [0.0125, 0.0125, 0.0125, 0.0125, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625, 0.00625],
    "ExponentialLR/g1": [0.1, 0.09, 0.081, 0.0729, 0.06561, 0.059049, 0.0531441, 0.04782969, 0.043046721, 0.0387420489, 0.03486784401, 0.031381059609, 0.0282429536481, 0.0254186582833, 0.022876792455, 0.0205891132095, 0.0185302018885, 0.0166771816997, 0.0150094635297, 0.0135085171767, 0.0121576654591, 0.0109418989132, 0.00984770902184, 0.00886293811965, 0.00797664430769, 0.00717897987692, 0.00646108188923, 0.0058149737003, 0.00523347633027, 0.00471012869725, 0.00423911582752],
    "ExponentialLR/resume": [0.03486784401, 0.031381059609, 0.0282429536481, 0.0254186582833, 0.022876792455, 0.0205891132095, 0.0185302018885, 0.0166771816997, 0.0150094635297, 0.0135085171767, 0.0121576654591, 0.0109418989132, 0.00984770902184, 0.00886293811965, 0.00797664430769, 0.00717897987692, 0.00646108188923, 0.0058149737003, 0.00523347633027, 0.00471012869725, 0.00423911582752],
    "CosineAnnealingLR/g1": [0.1, 0.0955435990556, 0.0830570410836, 0.065013442028, 0.044986557972, 0.0269429589164, 0.0144564009444, 0.01, 0.0144564009444, 0.0269429589164, 0.044986557972, 0.065013442028, 0.0830570410836, 0.0955435990556, 0.1, 0.0955435990556, 0.0830570410836, 0.065013442028, 0.044986557972, 0.0269429589164, 0.0144564009444, 0.01, 0.0144564009444, 0.0269429589164, 0.044986557972, 0.065013442028, 0.0830570410836, 0.0955435990556, 0.1, 0.0955435990556, 0.0830570410836],
    "CosineAnnealingLR/resume": [0.044986557972, 0.0564616339009, 0.0644026328323, 0.0672367425378, 0.0644026328323, 0.0564616339009, 0.044986557972, 0.0322501845658, 0.0207751086369, 0.0128341097055, 0.01, 0.0144564009444, 0.0269429589164, 0.044986557972, 0.065013442028, 0.0830570410836, 0.0955435990556, 0.1, 0.0955435990556, 0.0830570410836, 0.065013442028],
    "LambdaLR/g1": [0.1, 0.05, 0.0333333333333, 0.025, 0.02, 0.0166666666667, 0.0142857142857, 0.0125, 0.0111111111111, 0.01, 0.00909090909091, 0.00833333333333, 0.00769230769231, 0.00714285714286, 0.00666666666667, 0.00625, 0.00588235294118, 0.00555555555556, 0.00526315789474, 0.005, 0.0047619047619, 0.00454545454545, 0.00434782608696, 0.00416666666667, 0.004, 0.00384615384615, 0.0037037037037, 0.00357142857143, 0.00344827586207, 0.00333333333333, 0.00322580645161],
    "LambdaLR/resume": [0.00833333333333, 0.00769230769231, 0.00714285714286, 0.00666666666667, 0.00625, 0.00588235294118, 0.00555555555556, 0.00526315789474, 0.005, 0.0047619047619, 0.00454545454545, 0.00434782608696, 0.00416666666667, 0.004, 0.00384615384615, 0.0037037037037, 0.00357142857143, 0.00344827586207, 0.00333333333333, 0.00322580645161, 0.003125],
    "OneCycleLR/g1": [0.04, 0.059443372665, 0.116198304241, 0.205666847706, 0.320600793759, 0.451688877629, 0.588311122371, 0.719399206241, 0.834333152294, 0.923801695759, 0.980556627335, 1, 0.996856117522, 0.987464006235, 0.971941777388, 0.950484632013, 0.923362406166, 0.890916177571, 0.85355397638, 0.81174565395, 0.766016974194, 0.716943001791, 0.665140870419, 0.611262021936, 0.555984014123, 0.500002, 0.444019985877, 0.388741978064, 0.334863129581, 0.283060998209, 0.233987025806],
    "OneCycleLR/resume": [1, 0.996856117522, 0.987464006235, 0.971941777388, 0.950484632013, 0.923362406166, 0.890916177571, 0.85355397638, 0.81174565395, 0.766016974194, 0.716943001791, 0.665140870419, 0.611262021936, 0.555984014123, 0.500002, 0.444019985877, 0.388741978064, 0.334863129581, 0.283060998209, 0.233987025806, 0.18825834605],
    "CosineAnnealingWarmRestarts/g1": [0.1, 0.0775, 0.0325, 0.1, 0.0939711431703, 0.0775, 0.055, 0.0325, 0.0160288568297, 0.1, 0.098466662183, 0.0939711431703, 0.0868198051534, 0.0775, 0.0666468570296, 0.055, 0.0433531429704, 0.0325, 0.0231801948466, 0.0160288568297, 0.011533337817, 0.1, 0.0996150187618, 0.098466662183, 0.096574578963, 0.0939711431703, 0.0907009003131, 0.0868198051534, 0.0823942643054, 0.0775, 0.0722207544564],
    "CosineAnnealingWarmRestarts/resume": [0.0775, 0.055, 0.0325, 0.0160288568297, 0.1, 0.098466662183, 0.0939711431703, 0.0868198051534, 0.0775, 0.0666468570296, 0.055, 0.0433531429704, 0.0325, 0.0231801948466, 0.0160288568297, 0.011533337817, 0.1, 0.0996150187618, 0.098466662183, 0.096574578963, 0.0939711431703],
    "LinearLR/g1": [0.025, 0.034375, 0.04375, 0.053125, 0.0625, 0.071875, 0.08125, 0.090625, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1],
    "LinearLR/resume": [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1],
    "PolynomialLR/g1": [0.1, 0.0840277777778, 0.0694444444444, 0.05625, 0.0444444444444, 0.0340277777778, 0.025, 0.0173611111111, 0.0111111111111, 0.00625, 0.00277777777778, 0.000694444444444, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    "PolynomialLR/resume": [0.00277777777778, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    "CyclicLR/g1": [0.01, 0.0733333333333, 0.136666666667, 0.2, 0.136666666667, 0.0733333333333, 0.01, 0.0733333333333, 0.136666666667, 0.2, 0.136666666667, 0.0733333333333, 0.01, 0.0733333333333, 0.136666666667, 0.2, 0.136666666667, 0.0733333333333, 0.01, 0.0733333333333, 0.136666666667, 0.2, 0.136666666667, 0.0733333333333, 0.01, 0.0733333333333, 0.136666666667, 0.2, 0.136666666667, 0.0733333333333, 0.01],
    "CyclicLR/resume": [0.0733333333333, 0.01, 0.0733333333333, 0.136666666667, 0.2, 0.136666666667, 0.0733333333333, 0.01, 0.0733333333333, 0.136666666667, 0.2, 0.136666666667, 0.0733333333333, 0.01, 0.0733333333333, 0.136666666667, 0.2, 0.136666666667, 0.0733333333333, 0.01, 0.0733333333333],
    "ConstantLR/g1": [0.03, 0.03, 0.03, 0.03, 0.03, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1],
    "ConstantLR/resume": [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1],
    "MultiplicativeLR/g1": [0.1, 0.09, 0.081, 0.0729, 0.06561, 0.059049, 0.0531441, 0.04782969, 0.043046721, 0.0387420489, 0.03486784401, 0.031381059609, 0.0282429536481, 0.0254186582833, 0.022876792455, 0.0205891132095, 0.0185302018885, 0.0166771816997, 0.0150094635297, 0.0135085171767, 0.0121576654591, 0.0109418989132, 0.00984770902184, 0.00886293811965, 0.00797664430769, 0.00717897987692, 0.00646108188923, 0.0058149737003, 0.00523347633027, 0.00471012869725, 0.00423911582752],
    "MultiplicativeLR/resume": [0.03486784401, 0.031381059609, 0.0282429536481, 0.0254186582833, 0.022876792455, 0.0205891132095, 0.0185302018885, 0.0166771816997, 0.0150094635297, 0.0135085171767, 0.0121576654591, 0.0109418989132, 0.00984770902184, 0.00886293811965, 0.00797664430769, 0.00717897987692, 0.00646108188923, 0.0058149737003, 0.00523347633027, 0.00471012869725, 0.00423911582752],
    "SequentialLR/g1": [0.05, 0.0666666666667, 0.0833333333333, 0.1, 0.1, 0.08, 0.064, 0.0512, 0.04096, 0.032768, 0.0262144, 0.02097152, 0.016777216, 0.0134217728, 0.01073741824, 0.008589934592, 0.0068719476736, 0.00549755813888, 0.0043980465111, 0.00351843720888, 0.00281474976711, 0.00225179981369, 0.00180143985095, 0.00144115188076, 0.00115292150461, 0.000922337203685, 0.000737869762948, 0.000590295810359, 0.000472236648287, 0.00037778931863, 0.000302231454904],
    "SequentialLR/resume": [0.05, 0.04, 0.032, 0.0256, 0.02048, 0.016384, 0.0131072, 0.01048576, 0.008388608, 0.0067108864, 0.00536870912, 0.004294967296, 0.0034359738368, 0.00274877906944, 0.00219902325555, 0.00175921860444, 0.00140737488355, 0.00112589990684, 0.000900719925474, 0.000720575940379, 0.000576460752303],
    "ChainedScheduler/g1": [0.1, 0.09, 0.081, 0.03645, 0.032805, 0.0295245, 0.013286025, 0.0119574225, 0.01076168025, 0.0048427561125, 0.00435848050125, 0.00392263245113, 0.00176518460301, 0.00158866614271, 0.00142979952844, 0.000643409787796, 0.000579068809016, 0.000521161928115, 0.000234522867652, 0.000211070580886, 0.000189963522798, 8.5483585259e-05, 7.69352267331e-05, 6.92417040598e-05, 3.11587668269e-05, 2.80428901442e-05, 2.52386011298e-05, 1.13573705084e-05, 1.02216334576e-05, 9.19947011181e-06, 4.13976155031e-06],
}
# the second group (lr 0.2) of the two-group runs, last value
_SCHED_REF_G2_LAST = {"StepLR": 0.0015625, "MultiStepLR": 0.0125, "ExponentialLR": 0.00847823165504, "CosineAnnealingLR": 0.164231531177, "LambdaLR": 0.00645161290323, "OneCycleLR": 0.233987025806, "CosineAnnealingWarmRestarts": 0.141354926075, "LinearLR": 0.2, "PolynomialLR": 0, "CyclicLR": 0.01, "ConstantLR": 0.2, "MultiplicativeLR": 0.00847823165504, "SequentialLR": 0.000604462909807, "ChainedScheduler": 8.27952310063e-06}


def _run(sched, opt, steps, group=0):
    traj = [sched.get_last_lr()[group]]
    for _ in range(steps):
        sched.step()
        traj.append(sched.get_last_lr()[group])
    return traj


@pytest.mark.parametrize("name", sorted(_FACTORIES))
def test_fresh_trajectory_matches_torch(name):
    opt = _opt()
    got = _run(_FACTORIES[name](opt), opt, 30)
    np.testing.assert_allclose(got, _SCHED_REF[f"{name}/g1"], rtol=1e-9, atol=1e-15)
    opt2 = _opt(groups=2)
    got2 = _run(_FACTORIES[name](opt2), opt2, 30, group=1)
    np.testing.assert_allclose(got2[-1], _SCHED_REF_G2_LAST[name], rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("name", sorted(set(_FACTORIES) - {"ChainedScheduler"}))
def test_resume_with_last_epoch_matches_torch(name):
    # 10 steps, then a new optimizer whose param_groups are the saved ones (lr and
    # initial_lr, as optimizer.load_state_dict restores them) and a scheduler built with
    # last_epoch=N: torch keeps the restored lr at construction
    opt = _opt()
    sched = _FACTORIES[name](opt)
    for _ in range(10):
        sched.step()
    saved = [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]
    opt2 = _opt()
    for g, s in zip(opt2.param_groups, saved):
        g.update(s)
    got = _run(_FACTORIES[name](opt2, sched.last_epoch), opt2, 20)
    np.testing.assert_allclose(got, _SCHED_REF[f"{name}/resume"], rtol=1e-9, atol=1e-15)


def test_resume_without_initial_lr_raises():
    with pytest.raises(KeyError, match="initial_lr"):
        S.ExponentialLR(_opt(), 0.9, last_epoch=3)


def test_warm_restarts_resumed_past_a_period_wraps_t_cur():
    opt = _opt()
    opt.param_groups[0]["initial_lr"] = 0.1
    s = S.CosineAnnealingWarmRestarts(opt, T_0=3, last_epoch=7)
    # torch: T_cur = 8 % 3 = 2 after the constructor's step
    assert s.T_cur == 2 and s.T_i == 3
    np.testing.assert_allclose(s.get_last_lr()[0], 0.025, rtol=1e-12)


def test_constant_lr_closed_form_matches_torch():
    s = S.ConstantLR(_opt(), factor=0.5, total_iters=3)
    with pytest.warns(UserWarning):
        s.step(2)
    assert s.get_last_lr() == [0.05]
    with pytest.warns(UserWarning):
        s.step(4)
    assert s.get_last_lr() == [0.1]


def test_new_schedulers_validate_like_torch():
    with pytest.raises(ValueError, match="factor"):
        S.ConstantLR(_opt(), factor=1.5)
    with pytest.raises(TypeError, match="lr_lambda"):
        S.MultiplicativeLR(_opt(), 0.9)
    assert S._LRScheduler is S.LRScheduler


def test_reduce_lr_on_plateau_state_dict_round_trip_matches_torch():
    metrics = [1.0, 0.95, 0.9, 0.91, 0.92, 0.5, 0.6, 0.6, 0.6, 0.4, 0.45, 0.45, 0.45, 0.45, 0.3,
               0.31, 0.31, 0.31, 0.31, 0.31] + [0.2] * 10
    opt = optim.SGD([enp.zeros(1)], lr=1.0)
    s = S.ReduceLROnPlateau(opt, factor=0.5, patience=1, cooldown=1, threshold=0.1, min_lr=0.05)
    traj = []
    for m in metrics[:12]:
        s.step(m)
        traj.append(s.get_last_lr()[0])
    sd = copy.deepcopy(s.state_dict())
    opt2 = optim.SGD([enp.zeros(1)], lr=1.0)
    opt2.param_groups[0]["lr"] = opt.param_groups[0]["lr"]
    s2 = S.ReduceLROnPlateau(opt2)
    s2.load_state_dict(sd)
    for m in metrics[12:]:
        s2.step(m)
        traj.append(s2.get_last_lr()[0])
    assert traj == [1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25, 0.125, 0.125,
                    0.125, 0.125, 0.125, 0.0625, 0.0625, 0.0625] + [0.05] * 11
    assert sorted(sd) == ["_last_lr", "best", "cooldown", "cooldown_counter", "default_min_lr",
                          "eps", "factor", "last_epoch", "min_lrs", "mode", "mode_worse",
                          "num_bad_epochs", "patience", "threshold", "threshold_mode"]


# --- optimisers vs torch on a small problem ---------------------------------------------

# torch 2.13 (default dtype float64), 20 steps: x (3), y (2) and for ASGD the averages ax (5)
_OPT_REF = [
    ("SGD", {'lr': 0.05},
     [-0.459460442754155, 1.16970009030822, -0.886726926884986, -0.503609736711803, -0.917224076864722]),
    ("SGD", {'lr': 0.05, 'momentum': 0.9, 'dampening': 0.2, 'weight_decay': 0.05},
     [-0.299589367296363, 1.07716929052573, -0.891367894265261, -0.634498720183787, -0.768329131759139]),
    ("SGD", {'lr': 0.05, 'momentum': 0.9, 'nesterov': True, 'weight_decay': 0.05},
     [-0.534084308459915, 1.11215443860428, -0.861678812461285, -0.898892847607169, -0.968270183586022]),
    ("SGD", {'lr': 0.05, 'momentum': 0.5, 'maximize': True},
     [-0.542102325185658, 1.26467723693411, -0.871417740075538, -0.994631543998768, -1.00210651284826]),
    ("Adam", {'lr': 0.05, 'amsgrad': True, 'weight_decay': 0.1},
     [0.0614819015888787, 1.03982580375794, -0.695180138450349, -0.483600225026358, -1.08704047284358]),
    ("Adam", {'lr': 0.05, 'maximize': True},
     [0.0585962856948955, 1.09455572257288, -0.869123431228801, -0.489601988337494, -1.10982949223884]),
    ("AdamW", {'lr': 0.05, 'weight_decay': 0.2, 'amsgrad': True},
     [-0.0255047111446757, 1.11700651987318, -0.850486507671884, -0.491718988415943, -1.02242425793742]),
    ("AdamW", {'lr': 0.05, 'maximize': True},
     [0.0538225223205609, 1.09574987284606, -0.868617817587712, -0.489873070771337, -1.10550217567679]),
    ("RMSprop", {'lr': 0.01, 'momentum': 0.5},
     [-0.150847986458999, 1.16119634093151, -0.846419714498328, -0.852422734645962, -1.00041869116641]),
    ("RMSprop", {'lr': 0.01, 'centered': True},
     [0.289532388677324, 1.04405280149318, -0.80936101058205, -0.285958912672732, -0.902874719357757]),
    ("RMSprop", {'lr': 0.01, 'momentum': 0.5, 'centered': True, 'weight_decay': 0.1, 'maximize': True},
     [-0.166304252288884, 1.0946875012333, -0.749947087220144, -0.851813835016424, -0.966451398802388]),
    ("Adagrad", {'lr': 0.1, 'lr_decay': 0.05},
     [0.461160837855075, 0.998596001370212, -0.795319248663987, -0.0715270821078871, -0.780730904320849]),
    ("Adagrad", {'lr': 0.1, 'maximize': True, 'eps': 1e-06},
     [0.325135163198368, 1.03490376342893, -0.806634920197871, -0.24059941956097, -0.881665683241007]),
    ("Adadelta", {'lr': 0.5},
     [0.965393409662164, 0.969698711451295, -0.966602380508294, 0.465335821519777, -0.284846688385069]),
    ("Adadelta", {'lr': 0.5, 'maximize': True, 'weight_decay': 0.1},
     [0.965396873310454, 0.968318308919625, -0.966224630505681, 0.465360816437809, -0.284799386247494]),
    ("Adamax", {'lr': 0.05},
     [0.180741611721676, 1.0668301850646, -0.769573098919853, -0.431654983308589, -1.03761738222289]),
    ("Adamax", {'lr': 0.05, 'maximize': True, 'weight_decay': 0.1},
     [0.186491038773021, 0.984998364178259, -0.63106951904579, -0.410984070582918, -1.01173262713369]),
    ("NAdam", {'lr': 0.05, 'momentum_decay': 0.01},
     [0.238118077430263, 1.05608038678642, -0.804962377547169, -0.336882292631419, -0.953117326720426]),
    ("NAdam", {'lr': 0.05, 'maximize': True},
     [0.238077274613516, 1.05609969506608, -0.805011485244211, -0.337076672240332, -0.953013593333741]),
    ("RAdam", {'lr': 0.05, 'weight_decay': 0.1},
     [-0.0013080697211472, 0.99512515130152, -0.886104918756447, 0.172705687942134, -0.528532464161972]),
    ("RAdam", {'lr': 0.05, 'maximize': True},
     [0.0130235736842572, 1.0230296574194, -0.910164339969483, 0.18323709954959, -0.536072814561017]),
    ("ASGD", {'lr': 0.05},
     [-0.459435616641374, 1.16963873510067, -0.886662400109611, -0.503577693744526, -0.917182314387613, -0.459435616641374, 1.16963873510067, -0.886662400109611, -0.503577693744526, -0.917182314387613]),
    ("ASGD", {'lr': 0.05, 'lambd': 0.001, 'alpha': 0.5, 't0': 5, 'weight_decay': 0.1},
     [-0.443319440924525, 1.11567002111466, -0.822952991575857, -0.502492578182524, -0.884548099621583, -0.296621782508154, 1.05992749289503, -0.859260478393056, -0.198516037626297, -0.752098645527076]),
    ("Rprop", {'lr': 0.05},
     [-0.5208366168064, 1.281362318336, -0.8985068288, -1.01077504512, -1.0023948288]),
    ("Rprop", {'lr': 0.05, 'etas': (0.3, 1.5), 'step_sizes': (0.0001, 1.0), 'maximize': True},
     [-0.557517475585938, 1.25082023339844, -0.876581275390625, -1.03027074462891, -1.00682772949219]),
]
# SGD(momentum=0.9) on x; after 5 steps add_param_group(y, lr=0.1, nesterov=True); 15 steps
_GROUP_REF = [-0.00838981645092191, 1.52817134632689, -0.87496754945608, -0.950525725961936, -0.938348916099518]

_A = np.array([[3.0, 0.5, 0.0], [0.5, 2.0, 0.3], [0.0, 0.3, 1.0]])
_B = np.array([1.0, -2.0, 0.5])


def _grads(x, y, neg=False):
    # f = x'Ax/2 + b'x + sum(y^4)/4 + sum(y); the maximize cases climb -f
    s = -1.0 if neg else 1.0
    return s * (_A @ x + _B), s * (y ** 3 + 1.0)


def _run_opt(cls, hp, steps=20, dtype="float64", jit=True, opt=None):
    if opt is None:
        opt = getattr(optim, cls)([enp.asarray([1.0, 1.0, -1.0], dtype=dtype),
                                   enp.asarray([[0.5, -0.25]], dtype=dtype)], jit=jit, **hp)
    for _ in range(steps):
        x, y = (np.asarray(p).astype(np.float64) for p in opt.params)
        gx, gy = _grads(x, y, hp.get("maximize", False))
        opt.step([enp.asarray(gx, dtype=dtype), enp.asarray(gy, dtype=dtype)])
    return opt


def _flat(opt, cls):
    out = [v for p in opt.params for v in np.asarray(p).astype(np.float64).ravel()]
    if cls == "ASGD":
        st = opt.state_dict()["state"]
        out += [v for i in (0, 1) for v in np.asarray(st[i]["ax"]).astype(np.float64).ravel()]
    return np.asarray(out)


_IDS = [f"{c}-{i}" for i, (c, _, _) in enumerate(_OPT_REF)]


@pytest.mark.parametrize("cls,hp,expected", _OPT_REF, ids=_IDS)
def test_20_steps_match_torch(cls, hp, expected):
    np.testing.assert_allclose(_flat(_run_opt(cls, hp), cls), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cls,hp,expected", [r for r in _OPT_REF if r[0] in ("ASGD", "Rprop")],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_new_optimizers_float32_and_eager(cls, hp, expected):
    np.testing.assert_allclose(_flat(_run_opt(cls, hp, jit=False), cls), expected, rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(_flat(_run_opt(cls, hp, dtype="float32"), cls), expected,
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cls,hp,expected", _OPT_REF, ids=_IDS)
def test_state_dict_round_trip_continues_identically(cls, hp, expected):
    first = _run_opt(cls, hp, steps=10)
    sd = copy.deepcopy(first.state_dict())
    fresh = getattr(optim, cls)([enp.asarray(p) for p in first.params], **hp)
    fresh.load_state_dict(sd)
    np.testing.assert_allclose(_flat(_run_opt(cls, hp, steps=10, opt=fresh), cls), expected,
                               rtol=1e-10, atol=1e-12)


def test_torch_state_dict_keys_of_the_new_optimizers():
    for cls, keys in (("ASGD", ["step", "eta", "mu", "ax"]), ("Rprop", ["step", "prev", "step_size"])):
        opt = _run_opt(cls, {}, steps=2)
        assert list(opt.state_dict()["state"][0]) == keys


def test_add_param_group_mid_training_matches_torch():
    x0 = enp.asarray([1.0, 1.0, -1.0], dtype="float64")
    y0 = enp.asarray([[0.5, -0.25]], dtype="float64")
    opt = optim.SGD([x0], lr=0.05, momentum=0.9)
    for s in range(15):
        if s == 5:
            opt.add_param_group({"params": [y0], "lr": 0.1, "nesterov": True})
            assert opt.param_groups[1]["momentum"] == 0.9     # filled from the defaults
        x = np.asarray(opt.params[0] if s < 5 else opt.params[0][0])
        gx = enp.asarray(_A @ x + _B)
        if s < 5:
            opt.step([gx])
        else:
            y = np.asarray(opt.params[1][0])
            opt.step([[gx], [enp.asarray(y ** 3 + 1.0)]])
    got = [v for t in opt.params for p in t for v in np.asarray(p).ravel()]
    np.testing.assert_allclose(got, _GROUP_REF, rtol=1e-12)


def test_zero_grad_accepts_set_to_none_and_changes_nothing():
    opt = _run_opt("Adam", {"lr": 0.1}, steps=2)
    before = [np.asarray(p).copy() for p in opt.params]
    for flag in (True, False):
        assert opt.zero_grad(set_to_none=flag) is None
    assert all(np.array_equal(a, np.asarray(b)) for a, b in zip(before, opt.params))


def test_rprop_rejects_invalid_etas_like_torch():
    with pytest.raises(ValueError, match="eta"):
        optim.Rprop([enp.zeros(1)], etas=(1.5, 1.2))
    with pytest.raises(ValueError, match="step_sizes"):
        optim.Rprop([enp.zeros(1)], step_sizes=1.0)


def test_lbfgs_strong_wolfe_matches_torch():
    opt = optim.LBFGS([enp.asarray(np.array([1.0, 1.0, -1.0])), enp.asarray(np.array([[0.5, -0.25]]))],
                      line_search_fn="strong_wolfe", max_iter=7, history_size=3)
    a, b = enp.asarray(_A), enp.asarray(_B)

    def loss(p):
        return 0.5 * p[0] @ a @ p[0] + b @ p[0] + (p[1] ** 4).sum() / 4 + p[1].sum()

    losses = [float(opt.step(loss)) for _ in range(2)]
    np.testing.assert_allclose(losses, [1.9666015625000002, -3.2606142882016207], rtol=1e-12)
    got = [v for p in opt.params for v in np.asarray(p).ravel()]
    np.testing.assert_allclose(got, [-0.544708353426523, 1.26824902060044, -0.880474201408587,
                                     -0.999999971192513, -1.00000014089114], rtol=1e-9)
