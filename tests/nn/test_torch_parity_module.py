"""PyTorch parity of Module traversal, state_dict and nn.utils (expected values were
computed with torch 2.x and are written as literals)."""
import numpy as np
import pytest

import ember.numpy as enp
from ember import nn
from ember.nn import utils


class _Shared(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)
        self.b = self.a                      # one submodule under two names
        self.c = nn.Linear(2, 1)
        self.register_buffer("z", enp.zeros(1))
        self.d = nn.Linear(2, 1)
        self.d.weight = self.c.weight        # one array in two slots


def test_state_dict_lists_a_shared_submodule_under_every_name():
    m = _Shared()
    # torch: list(t.state_dict())
    assert list(m.state_dict()) == ["z", "a.weight", "a.bias", "b.weight", "b.bias",
                                    "c.weight", "c.bias", "d.weight", "d.bias"]
    assert m.state_dict()["b.weight"] is m.a.weight


def test_load_state_dict_accepts_the_shared_layout():
    src, dst = _Shared(), _Shared()
    sd = {k: np.asarray(v) + 1.0 for k, v in src.state_dict().items()}
    res = dst.load_state_dict(sd)
    assert res.missing_keys == [] and res.unexpected_keys == []
    np.testing.assert_allclose(np.asarray(dst.b.weight), np.asarray(src.a.weight) + 1.0, rtol=1e-6)
    assert dst.a is dst.b
    # strict loading wants both names, as torch does
    del sd["b.bias"]
    with pytest.raises(RuntimeError, match="b.bias"):
        _Shared().load_state_dict(sd)


def test_traversal_order_and_dedup_match_torch():
    m = _Shared()
    # torch: named_modules / named_children dedup modules
    assert [n for n, _ in m.named_modules()] == ["", "a", "c", "d"]
    assert [n for n, _ in m.named_children()] == ["a", "c", "d"]
    assert [n for n, _ in m.named_modules(remove_duplicate=False)] == ["", "a", "b", "c", "d"]
    # torch named_parameters() (remove_duplicate=True) drops the tied d.weight
    assert [n for n, _ in m.named_parameters(remove_duplicate=True)] == [
        "a.weight", "a.bias", "c.weight", "c.bias", "d.bias"]
    # torch's default too (the tied array is one parameter); remove_duplicate=False lists
    # every slot, a shared module still once
    assert [n for n, _ in m.named_parameters()] == [
        "a.weight", "a.bias", "c.weight", "c.bias", "d.bias"]
    assert [n for n, _ in m.named_parameters(remove_duplicate=False)] == [
        "a.weight", "a.bias", "c.weight", "c.bias", "d.weight", "d.bias"]
    assert [n for n, _ in m.named_buffers()] == ["z"]


def test_buffers_dedup_by_identity_when_asked():
    m = nn.Module()
    t = enp.zeros(2, dtype="int32")
    m.register_buffer("x", t)
    m.register_buffer("y", t)
    # torch: named_buffers() == ["x"], named_buffers(remove_duplicate=False) == ["x", "y"]
    assert [n for n, _ in m.named_buffers()] == ["x"]
    assert [n for n, _ in m.named_buffers(remove_duplicate=False)] == ["x", "y"]


def _seq():
    m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    m.load_state_dict({"0.weight": np.asarray([[1.0, 2.0], [3.0, 4.0]]), "0.bias": np.asarray([5.0, 6.0]),
                       "1.weight": np.asarray([[7.0, 8.0]]), "1.bias": np.asarray([9.0])})
    return m


@pytest.mark.parametrize("source", ["module", "parameters"])
def test_parameters_to_vector_is_in_registration_order(source):
    m = _seq()
    arg = m if source == "module" else m.parameters()
    # torch.nn.utils.parameters_to_vector(t.parameters()) for the same weights
    assert utils.parameters_to_vector(arg).tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]


def test_parameters_to_vector_of_a_dict_keeps_insertion_order():
    p = {"w": enp.asarray([1.0, 2.0]), "b": enp.asarray([3.0])}
    assert utils.parameters_to_vector(p).tolist() == [1.0, 2.0, 3.0]
    back = utils.vector_to_parameters(enp.asarray([4.0, 5.0, 6.0]), p)
    assert back["w"].tolist() == [4.0, 5.0] and back["b"].tolist() == [6.0]
    assert p["w"].tolist() == [1.0, 2.0]        # a plain pytree is not written


def test_vector_to_parameters_writes_the_module_like_torch():
    m = _seq()
    m.freeze("1.bias")
    out = utils.vector_to_parameters(enp.arange(9.0), m.parameters())
    assert m[0].weight.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    assert m[0].bias.tolist() == [4.0, 5.0]
    assert m[1].weight.tolist() == [[6.0, 7.0]]
    assert m[1].bias.tolist() == [8.0]          # torch writes every parameter
    assert out["1"]["bias"].tolist() == [8.0]
    with pytest.raises(ValueError, match="9 entries"):
        utils.vector_to_parameters(enp.arange(8.0), m)


@pytest.mark.parametrize("fn,args", [("clip_grad_norm_", (1.0,)), ("clip_grad_norm", (1.0,)),
                                     ("clip_grad_value_", (0.5,)), ("clip_grad_value", (0.5,))])
def test_clipping_parameters_raises_instead_of_doing_nothing(fn, args):
    m = _seq()
    for arg in (m.parameters(), m.named_parameters(), m):
        with pytest.raises(TypeError, match="value_and_grad"):
            getattr(utils, fn)(arg, *args)


def test_clip_grad_norm_of_grads_matches_torch():
    g = {"w": enp.asarray([[3.0, 0.0], [0.0, 4.0]]), "b": enp.asarray([12.0])}
    clipped, norm = utils.clip_grad_norm_(g, 1.0)
    # torch: total norm 13, coefficient 1 / (13 + 1e-6)
    assert abs(norm.item() - 13.0) < 1e-5
    np.testing.assert_allclose(np.asarray(clipped["b"]), [12.0 / (13.0 + 1e-6)], rtol=1e-6)
    assert utils.clip_grad_value_(g, 2.0)["b"].tolist() == [2.0]


# --- nn.init's in-place spelling updates the module -------------------------------------

from ember import random  # noqa: E402
from ember.nn import init  # noqa: E402

_INITS = {
    "uniform_": lambda w: init.uniform_(w, -0.1, 0.1, key=random.key(0)),
    "normal_": lambda w: init.normal_(w, 0.0, 0.1, key=random.key(0)),
    "trunc_normal_": lambda w: init.trunc_normal_(w, std=0.1, key=random.key(0)),
    "constant_": lambda w: init.constant_(w, 0.25),
    "ones_": lambda w: init.ones_(w),
    "zeros_": lambda w: init.zeros_(w),
    "eye_": lambda w: init.eye_(w),
    "xavier_uniform_": lambda w: init.xavier_uniform_(w, key=random.key(0)),
    "xavier_normal_": lambda w: init.xavier_normal_(w, key=random.key(0)),
    "kaiming_uniform_": lambda w: init.kaiming_uniform_(w, key=random.key(0)),
    "kaiming_normal_": lambda w: init.kaiming_normal_(w, key=random.key(0)),
    "orthogonal_": lambda w: init.orthogonal_(w, key=random.key(0)),
    "sparse_": lambda w: init.sparse_(w, 0.5, key=random.key(0)),
}


@pytest.mark.parametrize("name", sorted(_INITS))
def test_init_called_like_torch_updates_the_layer(name):
    layer = nn.Linear(4, 3)
    old = np.asarray(layer.weight).copy()
    out = _INITS[name](layer.weight)          # the result is not assigned, as in PyTorch
    assert layer.weight is out
    assert layer.weight.shape == (3, 4) and layer.weight.dtype == np.float32
    assert not np.array_equal(np.asarray(layer.weight), old)


def test_init_values_match_torch():
    m = nn.Linear(3, 2)
    init.eye_(m.weight)
    assert m.weight.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]    # torch.nn.init.eye_
    init.constant_(m.bias, 0.3)
    np.testing.assert_allclose(np.asarray(m.bias), [0.3, 0.3], rtol=1e-7)
    conv = nn.Conv1d(2, 2, 3)
    init.dirac_(conv.weight)
    # torch.nn.init.dirac_ on a (2, 2, 3) weight
    assert conv.weight.tolist() == [[[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]],
                                    [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]]]
    big = nn.Linear(100, 50)
    init.kaiming_uniform_(big.weight, key=random.key(1))  # bound sqrt(6 / fan_in), a=0
    w = np.abs(np.asarray(big.weight))
    assert w.max() <= np.sqrt(6 / 100) and w.max() > 0.95 * np.sqrt(6 / 100)


def test_init_after_an_optimizer_step_and_on_shared_slots():
    from ember import optim
    m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    opt = optim.SGD(m.parameters(), lr=0.1)
    opt.step({k: {n: enp.ones_like(v) for n, v in sub.items()} for k, sub in m.parameters().items()})
    init.zeros_(m[1].bias)                    # a slot written by the optimiser
    assert m[1].bias.tolist() == [0.0, 0.0]
    # one array assigned to two slots is one tied parameter: torch's init.ones_ fills the
    # shared tensor, so both slots get the new array (cloned layers, which share arrays
    # without an assignment, stay ambiguous: the next test)
    m[1].weight = m[0].weight
    out = init.ones_(m[0].weight)
    assert m[0].weight is out and m[1].weight is out
    assert out.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_cloned_layers_share_arrays_so_the_bare_call_raises_and_assignment_works():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8), num_layers=2)
    a, b = enc.layers[0].linear1, enc.layers[1].linear1
    with pytest.raises(ValueError, match="layer.weight = nn.init.zeros_"):
        init.zeros_(a.weight)
    a.weight = init.zeros_(a.weight)
    assert a.weight.tolist() == [[0.0] * 4] * 8
    assert np.abs(np.asarray(b.weight)).sum() > 0
    init.ones_(a.weight)                      # no longer shared: the bare call works
    assert a.weight.tolist() == [[1.0] * 4] * 8


def test_init_of_a_free_array_returns_and_a_traced_one_rebinds_nothing():
    import ember
    w = enp.zeros((2, 2))
    out = init.ones_(w)
    assert w.tolist() == [[0.0, 0.0], [0.0, 0.0]] and out.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    m = nn.Linear(2, 2)
    before = m.weight
    ember.jit(lambda x: init.zeros_(x) + x)(m.weight)
    assert m.weight is before


def test_init_through_module_apply_like_torch():
    def reset(m):
        if isinstance(m, nn.Linear):
            init.ones_(m.weight)
            init.zeros_(m.bias)

    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    model.apply(reset)
    assert model[0].weight.tolist() == [[1.0, 1.0]] * 3 and model[2].bias.tolist() == [0.0]
    out = model(enp.ones((1, 2)))
    assert out.tolist() == [[6.0]]
