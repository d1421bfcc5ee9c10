"""The training shim: BatchNorm statistics under jit/grad/vmap, dropout keys,
nn.value_and_grad, TrainStep (compiled and eager) and end-to-end loops."""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn, optim, random

from _nn_helpers import np_, rnd


def _bn_model(seed=0):
    return nn.Sequential(nn.Linear(3, 4, key=random.key(seed)), nn.BatchNorm1d(4), nn.ReLU(),
                         nn.Linear(4, 1, key=random.key(seed + 1)))


def test_batchnorm_statistics_agree_eager_grad_jit():
    x = rnd((8, 3))
    eager = _bn_model()
    eager(x)
    ref_mean, ref_var = np_(eager[1].running_mean), np_(eager[1].running_var)

    m = _bn_model()

    def loss(p, b):
        out, nb = nn.functional_call(m, (p, b), x)
        return out.sum(), nb

    (_, nb_grad), _ = ember.value_and_grad(loss, has_aux=True)(m.parameters(), m.buffers())
    _, nb_jit = ember.jit(loss)(m.parameters(), m.buffers())
    (_, nb_both), _ = ember.jit(ember.value_and_grad(loss, has_aux=True))(m.parameters(), m.buffers())
    for nb in (nb_grad, nb_jit, nb_both):
        np.testing.assert_allclose(np_(nb["1"]["running_mean"]), ref_mean, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(np_(nb["1"]["running_var"]), ref_var, rtol=1e-5)
        assert int(nb["1"]["num_batches_tracked"]) == 1
    # nn.value_and_grad writes the statistics back, as the eager call does
    vg = nn.value_and_grad(m, lambda m, x: m(x).sum())
    vg(x)
    np.testing.assert_allclose(np_(m[1].running_mean), ref_mean, rtol=1e-5, atol=1e-7)
    assert int(m[1].num_batches_tracked) == 1


def test_batchnorm_ensemble_under_vmap():
    models = [_bn_model(2 * i) for i in range(3)]
    params, buffers = nn.utils.stack_module_state(models)
    xs = rnd((3, 8, 3))

    def run(p, b, x):
        return nn.functional_call(models[0], (p, b), x)

    out, nb = ember.vmap(run)(params, buffers, xs)
    for i, m in enumerate(models):
        o = m(xs[i])
        np.testing.assert_allclose(np_(out)[i], np_(o), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np_(nb["1"]["running_mean"])[i], np_(m[1].running_mean), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(np_(nb["1"]["running_var"])[i], np_(m[1].running_var), rtol=1e-5)
    # per-member gradients under vmap(grad) and jit(vmap(grad))
    g = ember.vmap(ember.grad(lambda p, b, x: run(p, b, x)[0].sum()))(params, buffers, xs)
    gj = ember.jit(ember.vmap(ember.grad(lambda p, b, x: run(p, b, x)[0].sum())))(params, buffers, xs)
    np.testing.assert_allclose(np_(g["0"]["weight"]), np_(gj["0"]["weight"]), rtol=1e-4, atol=1e-6)
    assert g["0"]["weight"].shape == (3, 4, 3)


def test_eval_mode_uses_running_statistics_under_transforms():
    m = _bn_model()
    for i in range(3):
        m(rnd((8, 3), i))
    m.eval()
    x = rnd((5, 3), 9)
    want = np_(m(x))
    out, nb = nn.functional_call(m, {}, x)
    np.testing.assert_allclose(np_(ember.jit(lambda x: nn.functional_call(m, {}, x)[0])(x)), want, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_array_equal(np_(nb["1"]["running_mean"]), np_(m[1].running_mean))


def test_value_and_grad_matches_manual_and_has_aux():
    m = nn.Linear(3, 2)
    x, y = rnd((4, 3)), rnd((4, 2), 1)
    vg = nn.value_and_grad(m, lambda m, x, y: ((m(x) - y) ** 2).mean())
    loss, g = vg(x, y)
    want = ember.grad(lambda p: ((nn.functional_call(m, p, x)[0] - y) ** 2).mean())(m.parameters())
    np.testing.assert_allclose(np_(g["weight"]), np_(want["weight"]), rtol=1e-6)
    (loss2, aux), _ = nn.value_and_grad(m, lambda m, x: (m(x).sum(), {"n": x.shape[0]}), has_aux=True)(x)
    assert aux == {"n": 4}
    with pytest.raises(TypeError, match="scalar"):
        nn.value_and_grad(m, lambda m, x: m(x))(x)
    with pytest.raises(RuntimeError):
        ember.jit(lambda x: nn.value_and_grad(m, lambda m, x: m(x).sum())(x)[0])(x)


def _mlp_data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    w = rng.standard_normal((4, 1)).astype(np.float32)
    y = np.tanh(x @ w) + 0.05 * rng.standard_normal((64, 1)).astype(np.float32)
    return enp.asarray(x), enp.asarray(y)


def _mlp(seed):
    nn.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Dropout(0.1), nn.Linear(32, 1)).set_rng(random.key(seed))


def _loss(m, x, y):
    return nn.functional.mse_loss(m(x), y)


def test_end_to_end_eager_training_loop():
    x, y = _mlp_data()
    model = _mlp(0)
    opt = optim.SGD(model, lr=0.1, momentum=0.9)
    vg = nn.value_and_grad(model, _loss)
    losses = []
    for _ in range(40):
        loss, grads = vg(x, y)
        opt.zero_grad()
        opt.step(grads)
        losses.append(float(loss))
    assert losses[-1] < 0.3 * losses[0]
    model.eval()
    assert float(_loss(model, x, y)) < 0.3 * losses[0]


def test_end_to_end_compiled_training_step():
    x, y = _mlp_data()
    model = _mlp(0)
    opt = optim.Adam(model, lr=1e-2)
    step = nn.TrainStep(model, opt, _loss)
    losses = [float(step(x, y)) for _ in range(60)]
    assert losses[-1] < 0.3 * losses[0]
    fn = step._fn
    assert getattr(fn, "compile_count", 1) == 1  # one trace for the whole loop
    # changing the learning rate does not recompile; switching to eval mode does
    opt.param_groups[0]["lr"] = 5e-3
    step(x, y)
    assert getattr(fn, "compile_count", 1) == 1
    model.eval()
    step(x, y)
    assert getattr(fn, "compile_count", 2) == 2


def test_compiled_step_equals_eager_step():
    x, y = _mlp_data()
    a, b = _mlp(3), _mlp(3)
    sa = nn.TrainStep(a, optim.SGD(a, lr=0.05), _loss)
    sb = nn.TrainStep(b, optim.SGD(b, lr=0.05), _loss, jit=False)
    for _ in range(3):
        la, lb = sa(x, y), sb(x, y)
        np.testing.assert_allclose(float(la), float(lb), rtol=1e-5)
    for (n, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_allclose(np_(pa), np_(pb), rtol=1e-5, atol=1e-6, err_msg=n)
    np.testing.assert_array_equal(np_(a.get_rng()), np_(b.get_rng()))


def test_train_step_threads_state_explicitly():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Dropout(0.5), nn.Linear(4, 1))
    model.set_rng(random.key(7))
    opt = optim.AdamW(model, lr=1e-2)
    step = nn.TrainStep(model, opt, lambda m, x: (m(x) ** 2).mean())
    x = rnd((8, 3))
    k0 = np_(model.get_rng()).copy()
    step(x)
    assert int(model[1].num_batches_tracked) == 1
    assert np_(model.get_rng()).tolist() != k0.tolist()  # the key advanced
    assert int(opt.functional_state()[0].count) == 1
    # the graph of the step has the state as inputs and outputs, not as constants
    sig = step._signature()
    g = step._fn.lower(sig, dict(model.named_parameters()), dict(model.named_buffers()), opt.functional_state(),
                       model.get_rng(), None, (x,), {})
    n_state = len(list(model.named_parameters())) + len(list(model.named_buffers()))
    assert len(g.graph.inputs) >= n_state + 1
    assert not g.consts or all(np.size(np_(c)) <= 1 for c in g.consts)


def test_train_step_respects_frozen_and_groups():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    model[0].freeze()
    opt = optim.SGD(model, lr=0.1, weight_decay=0.1)
    step = nn.TrainStep(model, opt, lambda m, x: (m(x) ** 2).mean())
    w0 = np_(model[0].weight).copy()
    w2 = np_(model[2].weight).copy()
    step(rnd((5, 3)))
    np.testing.assert_array_equal(np_(model[0].weight), w0)
    assert not np.allclose(np_(model[2].weight), w2)
    # parameter groups over submodules, with different learning rates
    model.unfreeze()
    opt2 = optim.SGD([{"params": model[0], "lr": 0.0}, {"params": model[2], "lr": 0.1}], lr=0.1)
    step2 = nn.TrainStep(model, opt2, lambda m, x: (m(x) ** 2).mean())
    w0 = np_(model[0].weight).copy()
    step2(rnd((5, 3)))
    np.testing.assert_array_equal(np_(model[0].weight), w0)
    bad = optim.SGD({"w": enp.ones(2)}, lr=0.1)
    with pytest.raises(ValueError):
        nn.TrainStep(model, bad, lambda m, x: m(x).sum())


def test_compile_forward():
    m = _bn_model()
    f = nn.compile_forward(m)
    x = rnd((6, 3))
    out = f(x)
    ref = _bn_model()
    np.testing.assert_allclose(np_(out), np_(ref(x)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np_(m[1].running_mean), np_(ref[1].running_mean), rtol=1e-5, atol=1e-7)
    # new parameter values are used on the next call (they are inputs, not constants)
    m[3].bias = m[3].bias + 1.0
    np.testing.assert_allclose(np_(f(x)) - np_(nn.functional_call(m, {}, x)[0]), 0.0, atol=1e-5)
