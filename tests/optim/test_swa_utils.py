"""optim.swa_utils against torch.optim.swa_utils: AveragedModel (SWA, EMA via
get_ema_multi_avg_fn / get_ema_avg_fn, use_buffers), SWALR and update_bn, step by step."""
import numpy as np
import pytest

import ember.numpy as enp
from ember import nn, optim
from ember.optim import swa_utils as S

torch = pytest.importorskip("torch")


def _models(seed=0):
    torch.manual_seed(seed)
    t = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                            torch.nn.Linear(4, 2)).double()
    e = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2)).double()
    _sync(t, e)
    return t, e


def _sync(t, e):
    sd = {k: enp.asarray(v.detach().numpy()) for k, v in t.state_dict().items()}
    e.load_state_dict(sd)


def _perturb(t, e, rng):
    with torch.no_grad():
        for p in t.parameters():
            p.add_(torch.tensor(rng.normal(size=tuple(p.shape))))
        t[1].running_mean.add_(torch.tensor(rng.normal(size=4)))
        t[1].num_batches_tracked.add_(3)
    _sync(t, e)


def _assert_same(tavg, eavg, rtol=1e-12):
    tsd = tavg.state_dict()
    esd = eavg.state_dict()
    assert sorted(tsd) == sorted(esd)
    for k, v in tsd.items():
        np.testing.assert_allclose(np.asarray(esd[k]), v.detach().numpy(), rtol=rtol,
                                   atol=1e-14, err_msg=k)


@pytest.mark.parametrize("kind", ["swa", "ema_multi", "ema_avg", "swa_buffers",
                                  "ema_multi_buffers"])
def test_averaged_model_matches_torch(kind):
    t, e = _models()
    tm = torch.optim.swa_utils
    kw_t, kw_e = {}, {}
    if kind.startswith("ema_multi"):
        kw_t["multi_avg_fn"], kw_e["multi_avg_fn"] = tm.get_ema_multi_avg_fn(0.9), \
            S.get_ema_multi_avg_fn(0.9)
    elif kind == "ema_avg":
        kw_t["avg_fn"], kw_e["avg_fn"] = tm.get_ema_avg_fn(0.8), S.get_ema_avg_fn(0.8)
    if kind.endswith("buffers"):
        kw_t["use_buffers"] = kw_e["use_buffers"] = True
    tavg, eavg = tm.AveragedModel(t, **kw_t), S.AveragedModel(e, **kw_e)
    rng = np.random.default_rng(1)
    for _ in range(5):
        tavg.update_parameters(t)
        eavg.update_parameters(e)
        _assert_same(tavg, eavg)
        _perturb(t, e, rng)
    x = np.random.default_rng(2).normal(size=(5, 3))
    tavg.eval()
    eavg.eval()
    np.testing.assert_allclose(np.asarray(eavg(enp.asarray(x))),
                               tavg(torch.tensor(x)).detach().numpy(), rtol=1e-10)


def test_multi_avg_fn_returning_none_is_a_clear_error():
    _, e = _models()
    avg = S.AveragedModel(e, multi_avg_fn=lambda a, c, n: None)
    avg.update_parameters(e)
    with pytest.raises(TypeError, match="must return the list of new averages"):
        avg.update_parameters(e)
    with pytest.raises(TypeError, match="needs an ember.nn.Module"):
        S.AveragedModel({"w": enp.ones(2)})


def test_update_bn_matches_torch():
    t, e = _models(3)
    rng = np.random.default_rng(4)
    batches = [rng.normal(size=(6, 3)) for _ in range(4)]
    t[1].momentum = 0.3
    e[1].momentum = 0.3
    torch.optim.swa_utils.update_bn([(torch.tensor(b), 0) for b in batches], t)
    S.update_bn([(enp.asarray(b), 0) for b in batches], e)
    # ember's BatchNorm forms the cumulative-average factor 1/n in float32 even for float64
    # statistics (PyTorch uses a Python float), hence 1e-6 rather than 1e-10
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(np.asarray(getattr(e[1], name)),
                                   getattr(t[1], name).numpy(), rtol=1e-6)
    assert e[1].momentum == 0.3 and e.training


@pytest.mark.parametrize("kw", [dict(swa_lr=0.05, anneal_epochs=4),
                                dict(swa_lr=0.05, anneal_epochs=3, anneal_strategy="linear"),
                                dict(swa_lr=0.2, anneal_epochs=0)])
def test_swalr_matches_torch(kw):
    topt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.5)
    eopt = optim.SGD([enp.asarray(np.zeros(1))], lr=0.5)
    ts = torch.optim.swa_utils.SWALR(topt, **kw)
    es = S.SWALR(eopt, **kw)
    for _ in range(8):
        np.testing.assert_allclose(es.get_last_lr(), ts.get_last_lr(), rtol=1e-13)
        topt.step()
        ts.step()
        es.step()
    with pytest.raises(ValueError, match="anneal_strategy must be one of"):
        S.SWALR(eopt, 0.1, anneal_strategy="step")


def test_swa_training_loop_with_cosine_then_swalr():
    _, e = _models(5)
    opt = optim.SGD(e, lr=0.1)
    swa = S.AveragedModel(e)
    sched = S.SWALR(opt, swa_lr=0.01, anneal_epochs=2)
    seen = []
    for _ in range(4):
        grads = {k: enp.ones_like(v) * 0.1 for k, v in _flat(e.parameters()).items()}
        opt.step(_nest(grads))
        swa.update_parameters(e)
        sched.step()
        seen.append(np.asarray(e[0].bias).copy())
    np.testing.assert_allclose(np.asarray(swa.module[0].bias), np.mean(seen, axis=0),
                               rtol=1e-5)


def _flat(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _nest(flat):
    out = {}
    for k, v in flat.items():
        node = out
        *head, last = k.split(".")
        for h in head:
            node = node.setdefault(h, {})
        node[last] = v
    return out
