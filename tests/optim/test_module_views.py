"""PyTorch's habit `optim.SGD(model.parameters(), lr=...)` trains the model:
`parameters()`, `model.layer.parameters()` (parameter groups),
`trainable_parameters()` and `named_parameters()` remember their module, and
`step` writes the new values back into it."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn, optim, random


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(3, 8, key=random.key(1))
        self.head = nn.Linear(8, 1, key=random.key(2))

    def forward(self, x):
        return self.head(nn.functional.relu(self.body(x)))


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)
    return enp.asarray(x), enp.asarray(y)


def _loss(m, x, y):
    return ((m(x) - y) ** 2).mean()


def _np(t):
    return {k: np.asarray(v) for k, v in nn.module.flatten_names(dict(t)).items()}


@pytest.mark.parametrize("cls,lr", [(optim.SGD, 0.05), (optim.Adam, 0.02), (optim.AdamW, 0.02)])
@pytest.mark.parametrize("how", ["parameters", "named_parameters"])
def test_optimizer_on_parameters_view_trains_the_module(cls, lr, how):
    model = Net()
    x, y = _data()
    before = _np(model.parameters())
    opt = cls(getattr(model, how)(), lr=lr)
    vg = nn.value_and_grad(model, _loss)
    losses = []
    for _ in range(30):
        loss, grads = vg(x, y)
        losses.append(float(loss))
        opt.step(grads)
    after = _np(model.parameters())
    assert losses[-1] < 0.5 * losses[0], losses
    for name in before:
        assert not np.array_equal(before[name], after[name]), name
    # the optimiser's values are the module's
    for name, v in _np(opt.params).items():
        np.testing.assert_array_equal(v, after[name])


def test_parameter_groups_from_submodule_views_use_their_own_lr():
    model = Net()
    x, y = _data()
    opt = optim.SGD([{"params": model.body.parameters(), "lr": 0.1},
                     {"params": model.head.parameters()}], lr=0.01)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.01]
    before = _np(model.parameters())
    _, grads = nn.value_and_grad(model, _loss)(x, y)
    opt.step([grads["body"], grads["head"]])
    after = _np(model.parameters())
    g = _np(grads)
    for name in before:
        lr = 0.1 if name.startswith("body.") else 0.01
        np.testing.assert_allclose(after[name], before[name] - lr * g[name], rtol=1e-6, atol=1e-7)
    # and training with groups reduces the loss
    vg = nn.value_and_grad(model, _loss)
    l0 = float(vg(x, y)[0])
    for _ in range(30):
        loss, grads = vg(x, y)
        opt.step([grads["body"], grads["head"]])
    assert float(loss) < 0.5 * l0


def test_trainable_parameters_view_and_frozen_parameters():
    model = Net()
    model.freeze("head.bias")
    x, y = _data()
    bias = np.asarray(model.head.bias)
    opt = optim.Adam(model.trainable_parameters(), lr=0.05)
    vg = nn.value_and_grad(model, _loss)
    l0 = float(vg(x, y)[0])
    for _ in range(20):
        _, grads = vg(x, y)
        del grads["head"]["bias"]
        opt.step(grads)
    assert float(vg(x, y)[0]) < l0
    np.testing.assert_array_equal(np.asarray(model.head.bias), bias)


def test_views_are_plain_dicts_to_transforms_and_copies():
    import copy
    import pickle
    model = Net()
    p = model.parameters()
    assert isinstance(p, dict) and sorted(p) == ["body", "head"]
    g = ember.grad(lambda q, x: nn.functional_call(model, q, x)[0].sum())(p, enp.ones((2, 3)))
    assert type(g) is dict and g["head"]["weight"].shape == (1, 8)
    out = ember.tree.map(lambda a: a * 2, p)
    assert type(out) is dict
    np.testing.assert_array_equal(np.asarray(out["head"]["bias"]), 2 * np.asarray(model.head.bias))
    assert type(copy.copy(p)) is dict and type(pickle.loads(pickle.dumps(p))) is dict
    assert ember.tree.structure(p).num_leaves == 4


def test_detached_listings_are_clear_errors():
    model = Net()
    with pytest.raises(TypeError, match="iterating model.parameters"):
        optim.SGD(list(model.parameters()), lr=0.1)
    with pytest.raises(TypeError, match="pass the module"):
        optim.SGD(list(model.named_parameters()), lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": model.parameters()}, {"params": model.head.parameters()}], lr=0.1)


def test_wrong_gradient_shape_names_the_parameter():
    model = Net()
    opt = optim.SGD(model, lr=0.1)
    _, grads = nn.value_and_grad(model, _loss)(*_data())
    grads["head"]["weight"] = enp.zeros((8, 1))
    with pytest.raises(ValueError, match=r"SGD.step: the gradient for parameter head.weight has shape "
                                         r"\(8, 1\) but the parameter has shape \(1, 8\)"):
        opt.step(grads)
    groups = optim.Adam([{"params": model.body.parameters()}, {"params": model.head.parameters()}], lr=0.1)
    with pytest.raises(ValueError, match=r"parameter weight in parameter group 1 has shape \(8, 1\)"):
        groups.step([grads["body"], grads["head"]])
    # the model is untouched by the failed steps
    np.testing.assert_array_equal(np.asarray(model.head.weight), np.asarray(Net().head.weight))


@pytest.mark.parametrize("make", [
    lambda m: optim.Adam(m.trainable_parameters(), lr=0.02),
    lambda m: optim.Adam([{"params": m.body.parameters(), "lr": 0.05}, {"params": m.head.trainable_parameters()}],
                         lr=0.02),
])
def test_train_step_with_views(make):
    model = Net()
    model.freeze("head.bias")
    bias = np.asarray(model.head.bias)
    x, y = _data()
    step = nn.TrainStep(model, make(model), _loss)
    l0 = float(step(x, y))
    for _ in range(20):
        loss = step(x, y)
    assert float(loss) < l0
    np.testing.assert_array_equal(np.asarray(model.head.bias), bias)
