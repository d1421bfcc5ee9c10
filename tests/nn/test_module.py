"""nn.Module mechanics: registration, traversal, state_dict, modes, freezing,
functional_call and the leaked-tracer guard."""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn, random
from ember.fx.core import Tracer

from _nn_helpers import np_, rnd


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = enp.ones((2, 3))                       # float array -> parameter
        self.explicit = nn.Parameter(enp.zeros(2))      # explicit parameter
        self.steps = enp.asarray(0)                     # int array -> buffer
        self.register_buffer("stat", enp.ones(3))
        self.register_buffer("scratch", enp.zeros(1), persistent=False)
        self.scale = 2.0                                # config
        self.table = np.ones(3)                         # numpy -> config
        self.inner = nn.Linear(3, 2)

    def forward(self, x):
        return self.inner(x) * self.scale + self.explicit


def test_registration_convention():
    b = Block()
    assert [n for n, _ in b.named_parameters()] == ["w", "explicit", "inner.weight", "inner.bias"]
    assert [n for n, _ in b.named_buffers()] == ["steps", "stat", "scratch"]
    # PyTorch order: own parameters, own persistent buffers, then each child
    assert list(b.state_dict()) == ["w", "explicit", "steps", "stat", "inner.weight", "inner.bias"]
    assert b.scale == 2.0 and isinstance(b.table, np.ndarray)
    p = b.parameters()
    assert set(p) == {"w", "explicit", "inner"} and set(p["inner"]) == {"weight", "bias"}
    assert set(b.buffers()) == {"steps", "stat", "scratch"}
    assert b.num_parameters() == 6 + 2 + 6 + 2
    # re-assigning keeps the kind; None keeps the slot; a plain value replaces it
    b.stat = enp.zeros(3)
    assert "stat" in dict(b.named_buffers())
    b.inner.bias = None
    assert "inner.bias" not in dict(b.named_parameters()) and b.inner.bias is None
    b.w = 5
    assert "w" not in dict(b.named_parameters()) and b.w == 5
    del b.explicit
    assert "explicit" not in dict(b.named_parameters())
    with pytest.raises(AttributeError):
        b.explicit  # noqa: B018
    with pytest.raises(TypeError):
        nn.Parameter(enp.asarray([1, 2]))


def test_missing_super_init_is_explained():
    class Bad(nn.Module):
        def __init__(self):
            self.w = enp.ones(2)

    with pytest.raises(AttributeError, match="super\\(\\).__init__"):
        Bad()

    class Bad2(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(1, 1)

    with pytest.raises(nn.ModuleInitError, match=r"Bad2: cannot assign the submodule 'fc'.*super\(\).__init__\(\) at the "
                                                 r"start of Bad2.__init__") as err:
        Bad2()
    assert isinstance(err.value, TypeError)
    assert not hasattr(Bad2.__new__(Bad2), "fc")  # still an AttributeError for hasattr

    class Bad3(nn.Module):
        def __init__(self):
            self.n = 3  # config before super().__init__() is allowed

        def forward(self):
            return self.missing

    m = Bad3()
    with pytest.raises(nn.ModuleInitError, match="Bad3"):
        m.parameters()
    with pytest.raises(TypeError, match="Bad3"):
        m.named_parameters().__next__()


def test_traversal_and_shared_modules():
    shared = nn.Linear(2, 2)
    m = nn.Sequential(shared, nn.ReLU(), shared)
    assert [n for n, _ in m.named_modules()] == ["", "0", "1"]
    assert len(list(m.children())) == 2
    assert [n for n, _ in m.named_parameters()] == ["0.weight", "0.bias"]
    assert m.get_submodule("1").__class__.__name__ == "ReLU"
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "ReLU", "Sequential"]


def test_repr_tree():
    m = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU(), nn.Dropout(0.1)))
    text = repr(m)
    assert text.splitlines()[0] == "Sequential("
    assert "  (0): Linear(in_features=2, out_features=3, bias=True)" in text
    assert "    (0): ReLU()" in text and "    (1): Dropout(p=0.1, inplace=False)" in text
    assert repr(nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)) == \
        "Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)"


def test_state_dict_round_trip_and_strict_errors():
    a, b = Block(), Block()
    b.inner.reset_parameters(random.key(5))
    assert b.load_state_dict(a.state_dict()) == ([], [])
    np.testing.assert_array_equal(np_(b.inner.weight), np_(a.inner.weight))
    sd = dict(a.state_dict())
    sd.pop("stat")
    sd["bogus"] = enp.ones(1)
    with pytest.raises(RuntimeError) as err:
        b.load_state_dict(sd)
    assert '"bogus"' in str(err.value) and '"stat"' in str(err.value)
    res = b.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["stat"] and res.unexpected_keys == ["bogus"]
    sd = dict(a.state_dict())
    sd["inner.weight"] = enp.ones((3, 3))
    sd["w"] = enp.ones((1,))
    with pytest.raises(RuntimeError) as err:
        b.load_state_dict(sd, strict=False)
    msg = str(err.value)
    assert "size mismatch for inner.weight" in msg and "size mismatch for w" in msg
    # numpy values and nested dicts load too, cast to the existing dtype
    b.load_state_dict({"inner": {"weight": np.zeros((2, 3)), "bias": np.zeros(2)}}, strict=False)
    assert b.inner.weight.dtype == np.float32 and float(np_(b.inner.weight).sum()) == 0.0


def test_train_eval_freeze_to():
    m = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    assert m.training and m[1].training
    m.eval()
    assert not m.training and not m[1].training
    m.train()
    assert m[1].training
    m.freeze("0.bias")
    assert m.is_frozen("0.bias") and not m.is_frozen("0.weight")
    assert m.num_parameters(trainable_only=True) == 4
    assert m.frozen_mask() == {"0": {"weight": False, "bias": True}}
    m.freeze()
    assert m.num_parameters(trainable_only=True) == 0
    m.unfreeze("0")
    assert m.num_parameters(trainable_only=True) == 6
    m.to(enp.float64)
    assert m[0].weight.dtype == np.float64
    m.to("cpu").float()
    assert m[0].weight.dtype == np.float32
    with pytest.raises(TypeError):
        m.to(enp.int32)


def test_load_parameters_skips_frozen():
    m = nn.Linear(2, 2).freeze("bias")
    old_bias = np_(m.bias).copy()
    m.load_parameters({"weight": enp.zeros((2, 2)), "bias": enp.zeros(2)})
    assert float(np_(m.weight).sum()) == 0.0
    np.testing.assert_array_equal(np_(m.bias), old_bias)
    m.load_parameters({"bias": enp.zeros(2)}, include_frozen=True)
    assert float(np_(m.bias).sum()) == 0.0
    with pytest.raises(KeyError):
        m.load_parameters({"nope": enp.zeros(2)})
    with pytest.raises(ValueError):
        m.load_parameters({"weight": enp.zeros(3)})


def test_optimizer_protocol_with_frozen_parameters():
    optim = pytest.importorskip("ember.optim")
    m = nn.Linear(2, 1).freeze("bias")
    opt = optim.SGD(m, lr=0.5, weight_decay=0.1)
    b0, w0 = np_(m.bias).copy(), np_(m.weight).copy()
    vg = nn.value_and_grad(m, lambda m, x: m(x).sum())
    _, g = vg(enp.ones((3, 2)))
    assert float(np_(g["bias"]).sum()) == 0.0
    opt.step(g)
    # weight decay would move the frozen bias if the optimiser could write it
    np.testing.assert_array_equal(np_(m.bias), b0)
    np.testing.assert_allclose(np_(m.weight), w0 - 0.5 * (3.0 + 0.1 * w0), rtol=1e-6)


def test_functional_call_swaps_and_restores():
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    w0 = m[0].weight
    x = rnd((5, 3))
    p = {"0": {"weight": enp.zeros((2, 3)), "bias": enp.ones(2)}}
    out, bufs = nn.functional_call(m.eval(), p, x)
    assert m[0].weight is w0
    np.testing.assert_allclose(np_(out), np.ones((5, 2)) / np.sqrt(1 + 1e-5), rtol=1e-6)
    assert set(bufs["1"]) == {"running_mean", "running_var", "num_batches_tracked"}
    # dotted names and (params, buffers) tuples work too
    out2, _ = nn.functional_call(m, {"0.weight": enp.zeros((2, 3)), "0.bias": enp.ones(2)}, x)
    np.testing.assert_array_equal(np_(out), np_(out2))
    out3, _ = nn.functional_call(m, (p, m.buffers()), x)
    np.testing.assert_array_equal(np_(out), np_(out3))
    with pytest.raises(KeyError, match="nope"):
        nn.functional_call(m, {"nope": enp.ones(1)}, x)
    with pytest.raises(ValueError):
        nn.functional_call(m, ({"0.bias": enp.ones(2)}, {"0": {"bias": enp.ones(2)}}), x)
    # restored even when the forward pass raises
    with pytest.raises(Exception):
        nn.functional_call(m, p, enp.ones((5, 7)))
    assert m[0].weight is w0


def test_functional_call_under_transforms_leaves_no_tracer():
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Tanh(), nn.Linear(4, 1))
    x = rnd((6, 3))

    def loss(p, b):
        out, nb = nn.functional_call(m, (p, b), x)
        return (out ** 2).mean(), nb

    (l, nb), g = ember.value_and_grad(loss, has_aux=True)(m.parameters(), m.buffers())
    (lj, nbj), gj = ember.jit(ember.value_and_grad(loss, has_aux=True))(m.parameters(), m.buffers())
    np.testing.assert_allclose(np_(l), np_(lj), rtol=1e-5)
    np.testing.assert_allclose(np_(g["0"]["weight"]), np_(gj["0"]["weight"]), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(np_(nb["1"]["running_mean"]), np_(nbj["1"]["running_mean"]), rtol=1e-5, atol=1e-7)
    for _, v in list(m.named_parameters()) + list(m.named_buffers()):
        assert not isinstance(v, Tracer)
    assert int(m[1].num_batches_tracked) == 0  # functional_call never writes the module


def test_plain_call_under_transform_raises_instead_of_leaking():
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    x = rnd((4, 3))
    rm = m[1].running_mean
    with pytest.raises(RuntimeError, match="functional_call"):
        ember.jit(lambda x: m(x))(x)
    assert m[1].running_mean is rm
    with pytest.raises(RuntimeError):
        ember.grad(lambda x: m(x).sum())(x)
    assert m[1].running_mean is rm and int(m[1].num_batches_tracked) == 0
    # in eval mode nothing is written, so transforms of a plain call are fine
    m.eval()
    g = ember.grad(lambda x: m(x).sum())(x)
    assert g.shape == (4, 3)
    y = ember.jit(lambda x: m(x))(x)
    np.testing.assert_allclose(np_(y), np_(m(x)), rtol=1e-5, atol=1e-6)


def test_rng_streams():
    drop = nn.Dropout(0.5)
    x = enp.ones((64,))
    drop.set_rng(random.key(0))
    a = np_(drop(x))
    b = np_(drop(x))
    assert (a != b).any()  # the key advances between eager calls
    drop.set_rng(random.key(0))
    np.testing.assert_array_equal(np_(drop(x)), a)  # reproducible from the same key
    out1, _ = nn.functional_call(drop, {}, x, rng=random.key(3))
    out2, _ = nn.functional_call(drop, {}, x, rng=random.key(3))
    np.testing.assert_array_equal(np_(out1), np_(out2))
    with pytest.raises(RuntimeError, match="rng"):
        ember.jit(lambda x: nn.functional_call(drop, {}, x)[0])(x)
    f = ember.jit(lambda x, k: nn.functional_call(drop, {}, x, rng=k)[0])
    np.testing.assert_array_equal(np_(f(x, random.key(3))), np_(out1))
    assert (np_(f(x, random.key(4))) != np_(out1)).any()
    with nn.rng_scope(random.key(3)):
        k1, k2 = nn.next_rng_key(), nn.next_rng_key()
    assert np_(k1).tolist() != np_(k2).tolist()
    nn.manual_seed(11)
    a = np_(nn.Linear(3, 3).weight)
    nn.manual_seed(11)
    assert (np_(nn.Linear(3, 3).weight) == a).all()


def test_unregistered_module_called_inside_a_forward_is_guarded_too():
    teacher = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))

    class Student(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)
            self.helpers = [teacher]  # a plain list: not registered

        def forward(self, x):
            return self.fc(x) + self.helpers[0](x)

    s = Student()
    x = rnd((4, 3))
    rm = teacher[1].running_mean
    with pytest.raises(RuntimeError, match="traced"):
        ember.jit(lambda p, x: nn.functional_call(s, p, x)[0])(s.parameters(), x)
    assert teacher[1].running_mean is rm
    teacher.eval()
    g = ember.grad(lambda p: nn.functional_call(s, p, x)[0].sum())(s.parameters())
    assert g["fc"]["weight"].shape == (2, 3)
