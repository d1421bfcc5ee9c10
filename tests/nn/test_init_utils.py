"""nn.init (functional initialisers) and nn.utils."""
import math

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn, random
from ember.nn import init, utils

from _nn_helpers import np_


def test_fans_and_gains():
    assert init.fan_in_and_fan_out((8, 3, 5, 5)) == (75, 200)
    assert init.calculate_gain("relu") == math.sqrt(2)
    assert init.calculate_gain("leaky_relu", math.sqrt(5)) == pytest.approx(math.sqrt(2 / 6))
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    with pytest.raises(ValueError):
        init.calculate_gain("swishy")
    with pytest.raises(ValueError):
        init.fan_in_and_fan_out((3,))


@pytest.mark.parametrize("name,kw,var", [
    ("kaiming_uniform_", dict(a=0.0, nonlinearity="relu"), 2 / 200),
    ("kaiming_normal_", dict(mode="fan_out", nonlinearity="relu"), 2 / 400),
    ("xavier_uniform_", dict(), 2 / 600),
    ("xavier_normal_", dict(gain=2.0), 4 * 2 / 600),
    ("normal_", dict(std=0.3), 0.09),
    ("uniform_", dict(a=-1.0, b=1.0), 1 / 3),
])
def test_random_initialisers_have_the_right_variance(name, kw, var):
    w = np_(getattr(init, name)((400, 200), key=random.key(0), **kw))
    assert w.shape == (400, 200) and w.dtype == np.float32
    w = w.astype(np.float64)
    assert abs(w.var() / var - 1) < 0.03
    assert abs(w.mean()) < 0.05 * math.sqrt(var) * 10


def test_initialisers_take_arrays_keys_and_dtypes():
    x = enp.zeros((3, 4), dtype=enp.float64)
    a = init.kaiming_uniform_(x, a=math.sqrt(5), key=random.key(1))
    assert a.dtype == np.float64 and a.shape == (3, 4) and np.abs(np_(a)).max() <= 0.5
    np.testing.assert_array_equal(np_(a), np_(init.kaiming_uniform_(x, a=math.sqrt(5), key=random.key(1))))
    assert init.normal_((2,), dtype=enp.bfloat16, key=random.key(0)).dtype.name == "bfloat16"
    assert np_(init.zeros_(x)).sum() == 0 and np_(init.ones_((2, 2))).sum() == 4
    assert np_(init.constant_((2,), 0.5)).tolist() == [0.5, 0.5]
    np.testing.assert_array_equal(np_(init.eye_((2, 3))), np.eye(2, 3))
    d = np_(init.dirac_((4, 2, 3, 3), groups=2))
    assert d[0, 0, 1, 1] == 1 and d[2, 0, 1, 1] == 1 and d.sum() == 4
    t = np_(init.trunc_normal_((5000,), mean=1.0, std=0.5, a=0.5, b=2.0, key=random.key(2)))
    assert t.min() >= 0.5 and t.max() <= 2.0
    with pytest.raises(TypeError):
        init.zeros_((2,), dtype=enp.int32)


def test_orthogonal_and_sparse():
    for shape in ((4, 4), (3, 6), (6, 3), (4, 2, 2)):
        q = np_(init.orthogonal_(shape, gain=2.0, key=random.key(0))).reshape(shape[0], -1).astype(np.float64)
        if q.shape[0] <= q.shape[1]:
            np.testing.assert_allclose(q @ q.T, 4 * np.eye(q.shape[0]), atol=1e-4)
        else:
            np.testing.assert_allclose(q.T @ q, 4 * np.eye(q.shape[1]), atol=1e-4)
    s = np_(init.sparse_((10, 4), 0.3, key=random.key(0)))
    assert ((s == 0).sum(0) == 3).all()


def test_jitted_initialiser():
    f = ember.jit(lambda k: init.xavier_uniform_((3, 3), key=k))
    np.testing.assert_array_equal(np_(f(random.key(0))), np_(init.xavier_uniform_((3, 3), key=random.key(0))))


def test_clip_grad_norm_and_value():
    g = {"a": enp.asarray([3.0, 0.0]), "b": [enp.asarray([[4.0]])]}
    c, n = utils.clip_grad_norm(g, 1.0)
    assert float(n) == pytest.approx(5.0)
    np.testing.assert_allclose(np_(c["a"]), [0.6, 0.0], rtol=1e-5)
    np.testing.assert_allclose(np_(c["b"][0]), [[0.8]], rtol=1e-5)
    c, n = utils.clip_grad_norm(g, 10.0)
    np.testing.assert_allclose(np_(c["a"]), [3.0, 0.0])
    c, n = utils.clip_grad_norm(g, 1.0, norm_type=float("inf"))
    assert float(n) == 4.0
    c, n = utils.clip_grad_norm(g, 1.0, norm_type=1)
    assert float(n) == 7.0
    with pytest.raises(RuntimeError):
        utils.clip_grad_norm({"a": enp.asarray([np.nan])}, 1.0, error_if_nonfinite=True)
    cj, nj = ember.jit(lambda g: utils.clip_grad_norm(g, 1.0))(g)
    np.testing.assert_allclose(np_(cj["a"]), [0.6, 0.0], rtol=1e-5)
    v = utils.clip_grad_value({"a": enp.asarray([-3.0, 0.2, 5.0])}, 1.0)
    assert np_(v["a"]).tolist() == [-1.0, pytest.approx(0.2), 1.0]


def test_parameter_vectors_and_stacking():
    m = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    v = utils.parameters_to_vector(m)
    assert v.shape == (m.num_parameters(),)
    back = utils.vector_to_parameters(v, m)
    for a, b in zip(ember.tree.leaves(back), ember.tree.leaves(m.parameters())):
        np.testing.assert_array_equal(np_(a), np_(b))
    m.load_parameters(utils.vector_to_parameters(enp.zeros_like(v), m))
    assert float(np_(utils.parameters_to_vector(m)).sum()) == 0.0
    with pytest.raises(ValueError):
        utils.vector_to_parameters(enp.zeros(3), m)
    p, b = utils.stack_module_state([nn.BatchNorm1d(3) for _ in range(2)])
    assert p["weight"].shape == (2, 3) and b["running_var"].shape == (2, 3)
