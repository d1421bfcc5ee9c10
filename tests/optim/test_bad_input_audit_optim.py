"""Regression tests from the bad-input / PyTorch-habit audit of ember.optim."""
import numpy as np
import pytest

import ember.numpy as enp
from ember import nn, optim


def _model():
    m = nn.Linear(3, 2)
    m.load_state_dict({"weight": enp.asarray([[1.0, -2.0, 0.5], [0.3, 0.0, -1.0]]),
                       "bias": enp.zeros(2)})
    return m


def _grads(m):
    x = enp.asarray([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    return nn.value_and_grad(m, lambda mm: (mm(x) ** 2).sum())()[1]


def test_groups_of_module_arrays_update_the_module():
    # PyTorch's habit: groups (or a list) of model.weight / model.bias.  The step used to
    # update only the optimizer's copies, leaving the model unchanged.
    m = _model()
    opt = optim.SGD([{"params": [m.weight]}, {"params": [m.bias], "lr": 0.1}], lr=0.01)
    for _ in range(2):
        g = _grads(m)
        opt.step([[g["weight"]], [g["bias"]]])
    # torch.optim.SGD on the same model and data
    np.testing.assert_allclose(np.asarray(m.weight),
                               [[1.002225, -1.74085, 0.443], [0.394877, 0.095645, -0.69184]], atol=1e-5)
    np.testing.assert_allclose(np.asarray(m.bias), [-0.6145, 1.18405], atol=1e-5)
    assert opt.params[0][0] is m.weight


def test_list_of_module_arrays_updates_the_module():
    m = _model()
    opt = optim.SGD([m.weight, m.bias], lr=0.01)
    g = _grads(m)
    w0 = np.asarray(m.weight)
    opt.step([g["weight"], g["bias"]])
    np.testing.assert_allclose(np.asarray(m.weight), w0 - 0.01 * np.asarray(g["weight"]), rtol=1e-6)


def test_plain_arrays_are_untouched_elsewhere():
    p = enp.asarray([1.0, 2.0])
    opt = optim.SGD([p], lr=0.5)
    new = opt.step([enp.asarray([1.0, 1.0])])
    assert new[0].tolist() == [0.5, 1.5] and p.tolist() == [1.0, 2.0]


def test_group_without_params_is_refused():
    with pytest.raises(ValueError, match=r"parameter group 0 \(\['lr'\]\) has no 'params' entry"):
        optim.Adam([{"lr": 0.1}], lr=0.1)       # was: optimised the number 0.1
    with pytest.raises(ValueError, match=r"parameter group 1"):
        optim.Adam([{"params": [enp.ones(2)]}, {"lr": 0.1}], lr=0.1)
    # a pytree that is a list of dicts of arrays is still fine
    optim.Adam([{"w": enp.ones(2)}], lr=0.1)


def test_same_array_in_two_groups_is_refused():
    p = enp.ones(3)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        optim.Adam([{"params": [p]}, {"params": [p]}], lr=0.1)
