"""Tied weights (`dec.weight = enc.weight`) and a shared submodule train as ONE parameter,
as in PyTorch, through every training path: nn.value_and_grad + optimiser.step,
nn.TrainStep, ember.grad of nn.functional_call.  Expected values were computed with
torch 2.x (same initial values, 5 steps) and are written as literals."""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn, optim

W0 = [[0.1, -0.2, 0.3], [0.4, 0.5, -0.6], [-0.7, 0.8, 0.9], [0.2, 0.1, -0.3], [-0.5, 0.6, 0.05]]
B0 = [0.01, -0.02, 0.03, 0.0, 0.05]
IDX, Y = [0, 2, 4, 1], [1, 3, 0, 2]

TORCH = {
    "sgd": dict(
        losses=[2.1453473567962646, 2.0929758548736572, 2.0014400482177734, 1.8882242441177368,
                1.7714083194732666],
        W=[[0.12400969117879868, -0.04197792708873749, 0.09425967186689377],
           [0.24836362898349762, 0.4704444110393524, -0.27882078289985657],
           [-0.35788586735725403, 0.711418628692627, 0.5203942060470581],
           [0.022855274379253387, 0.24699702858924866, -0.08182016015052795],
           [-0.366396963596344, 0.3434024751186371, 0.03714736923575401]],
        B=[0.12816907465457916, 0.06724490225315094, -0.015118508599698544, 0.11017872393131256,
           -0.2204742282629013]),
    "adam": dict(
        losses=[2.1453473567962646, 2.0160176753997803, 1.904951810836792, 1.810549259185791,
                1.7306029796600342],
        W=[[0.23948250710964203, 0.04038315266370773, 0.052503883838653564],
           [0.15897667407989502, 0.31168216466903687, -0.3529682159423828],
           [-0.45837584137916565, 0.5688744783401489, 0.6549003720283508],
           [-0.047262515872716904, 0.3457818627357483, -0.051581792533397675],
           [-0.25193357467651367, 0.35412007570266724, -0.01982169970870018]],
        B=[0.25396427512168884, 0.2244463711977005, -0.09877574443817139, 0.24000045657157898,
           -0.19813285768032074]),
}


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Embedding(5, 3)
        self.dec = nn.Linear(3, 5)
        self.dec.weight = self.enc.weight      # PyTorch's weight tying

    def forward(self, i):
        return self.dec(enp.tanh(self.enc(i)))


def _loss(m, i, y):
    return nn.functional.cross_entropy(m(i), y)


def _model():
    m = Tied()
    # through load_state_dict, which must keep the tie (torch's copy_ into the one tensor)
    m.load_state_dict({"enc.weight": np.asarray(W0, np.float32), "dec.weight": np.asarray(W0, np.float32),
                       "dec.bias": np.asarray(B0, np.float32)})
    assert m.dec.weight is m.enc.weight
    return m


def _opt(kind, params):
    return optim.SGD(params, lr=0.1, momentum=0.9) if kind == "sgd" else optim.Adam(params, lr=0.05)


def _run_eager(kind):
    m = _model()
    opt = _opt(kind, m.parameters())
    vg = nn.value_and_grad(m, _loss)
    losses = []
    for _ in range(5):
        loss, g = vg(enp.asarray(IDX), enp.asarray(Y))
        assert sorted(nn.flatten_names(g)) == ["dec.bias", "enc.weight"]   # one gradient
        opt.step(g)
        losses.append(float(loss))
    return m, opt, losses


def _run_trainstep(kind):
    m = _model()
    opt = _opt(kind, m)
    step = nn.TrainStep(m, opt, _loss)
    losses = [float(step(enp.asarray(IDX), enp.asarray(Y))) for _ in range(5)]
    return m, opt, losses


def _run_functional(kind):
    m = _model()
    opt = _opt(kind, m.named_parameters())

    def f(p, i, y):
        out, _ = nn.functional_call(m, p, i)
        return nn.functional.cross_entropy(out, y)

    vg = ember.jit(ember.value_and_grad(f))
    losses = []
    for _ in range(5):
        loss, g = vg(dict(m.parameters()), enp.asarray(IDX), enp.asarray(Y))
        opt.step(g)
        losses.append(float(loss))
    return m, opt, losses


@pytest.mark.parametrize("kind", ["sgd", "adam"])
@pytest.mark.parametrize("path", [_run_eager, _run_trainstep, _run_functional])
def test_tied_model_trains_like_torch(path, kind):
    m, opt, losses = path(kind)
    ref = TORCH[kind]
    np.testing.assert_allclose(losses, ref["losses"], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(m.enc.weight), ref["W"], rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(np.asarray(m.dec.bias), ref["B"], rtol=2e-5, atol=2e-6)
    assert m.dec.weight is m.enc.weight                      # the tie holds after every step
    assert len(opt.state_dict()["state"]) == 2               # one optimiser state, as torch


def test_listing_counts_a_tied_parameter_once_like_torch():
    m = _model()
    # torch: [n for n, _ in m.named_parameters()], list(m.state_dict())
    assert [n for n, _ in m.named_parameters()] == ["enc.weight", "dec.bias"]
    assert [n for n, _ in m.named_parameters(remove_duplicate=False)] == ["enc.weight", "dec.weight",
                                                                         "dec.bias"]
    assert list(m.state_dict()) == ["enc.weight", "dec.weight", "dec.bias"]
    assert sorted(nn.flatten_names(m.parameters())) == ["dec.bias", "enc.weight"]
    assert m.num_parameters() == 20                         # torch: sum(p.numel()) == 20
    assert sorted(nn.flatten_names(m.frozen_mask())) == ["dec.bias", "enc.weight"]


def test_cloned_layers_sharing_arrays_are_not_tied():
    # nn.TransformerEncoder's clones share arrays until replaced; in torch they are
    # independent parameters (deep copies), so they must not be deduplicated or tied
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8), 2)
    names = [n for n, _ in enc.named_parameters()]
    assert "layers.0.linear1.weight" in names and "layers.1.linear1.weight" in names
    assert len(names) == len(list(enc.named_parameters(remove_duplicate=False)))


def test_load_state_dict_and_to_keep_the_tie():
    m = _model()
    sd = {k: np.asarray(v) * 2.0 for k, v in m.state_dict().items()}
    m.load_state_dict(sd)
    assert m.dec.weight is m.enc.weight
    np.testing.assert_allclose(np.asarray(m.dec.weight), np.asarray(W0, np.float32) * 2.0)
    m.to("float64")
    assert m.dec.weight is m.enc.weight and m.enc.weight.dtype == np.float64


def test_freezing_one_slot_freezes_the_tied_parameter():
    m = _model().freeze("dec.weight")
    assert m.is_frozen("enc.weight") and m.is_frozen("dec.weight")
    opt = optim.SGD(m, lr=0.1)
    step = nn.TrainStep(m, opt, _loss)
    step(enp.asarray(IDX), enp.asarray(Y))
    np.testing.assert_array_equal(np.asarray(m.enc.weight), np.asarray(W0, np.float32))
    assert m.dec.weight is m.enc.weight
    assert not np.allclose(np.asarray(m.dec.bias), B0)


def test_functional_call_ties_like_torch_func():
    m = _model()
    w = enp.zeros((5, 3))
    # one name given: every slot of the tied parameter gets it (torch.func tie_weights=True)
    out, _ = nn.functional_call(m, {"enc.weight": w}, enp.asarray(IDX))
    np.testing.assert_allclose(np.asarray(out), np.tile(np.asarray(B0, np.float32), (4, 1)), atol=1e-7)
    assert m.dec.weight is m.enc.weight and float(m.enc.weight[0, 0]) == pytest.approx(0.1)
    # the same array under both names is fine; two different ones are a mistake
    nn.functional_call(m, {"enc.weight": w, "dec.weight": w}, enp.asarray(IDX))
    with pytest.raises(ValueError, match="'enc.weight' and 'dec.weight'.*tied"):
        nn.functional_call(m, {"enc.weight": w, "dec.weight": enp.ones((5, 3))}, enp.asarray(IDX))


def test_untying_by_assigning_a_new_array():
    m = _model()
    m.dec.weight = enp.zeros((5, 3))
    assert [n for n, _ in m.named_parameters()] == ["enc.weight", "dec.weight", "dec.bias"]


TORCH_SHARED = dict(
    losses=[0.06286871433258057, 0.037997446954250336, 0.025617234408855438, 0.017505982890725136,
            0.01257553044706583],
    A=[[0.1534506231546402, 0.10855505615472794, 0.4199903607368469],
       [0.737664520740509, 0.1785532683134079, -0.07856427133083344],
       [-0.08844982832670212, 0.21045270562171936, -0.14528006315231323]],
    AB=[-0.0184345580637455, 0.06729184836149216, 0.04993904381990433])


class SharedLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.b = self.a                                  # one layer under two names

    def forward(self, x):
        return self.b(enp.tanh(self.a(x)))


@pytest.mark.parametrize("jit", [True, False])
def test_shared_submodule_trains_as_one_like_torch(jit):
    s = SharedLayer()
    s.load_state_dict({"a.weight": np.asarray([[0.3, -0.1, 0.2], [0.5, 0.4, -0.2], [-0.3, 0.2, 0.1]], np.float32),
                       "a.bias": np.asarray([0.1, 0.0, -0.1], np.float32),
                       "b.weight": np.asarray([[0.3, -0.1, 0.2], [0.5, 0.4, -0.2], [-0.3, 0.2, 0.1]], np.float32),
                       "b.bias": np.asarray([0.1, 0.0, -0.1], np.float32)})
    x = enp.asarray([[1.0, 2.0, -1.0], [0.5, -0.5, 0.25]])
    t = enp.asarray([[0.2, 0.1, 0.0], [-0.1, 0.3, 0.2]])
    opt = optim.Adam(s, lr=0.05)
    step = nn.TrainStep(s, opt, lambda m, x, t: ((m(x) - t) ** 2).mean(), jit=jit)
    losses = [float(step(x, t)) for _ in range(5)]
    np.testing.assert_allclose(losses, TORCH_SHARED["losses"], rtol=2e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(s.a.weight), TORCH_SHARED["A"], rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(np.asarray(s.b.bias), TORCH_SHARED["AB"], rtol=2e-5, atol=2e-6)
    assert s.a is s.b and len(opt.state_dict()["state"]) == 2


def test_trainstep_group_reaching_the_tied_parameter_through_its_other_slot():
    # the group holds dec.weight (= enc.weight) and dec.bias: every parameter, as torch's
    # SGD([{"params": m.dec.parameters()}]) would, so torch's values for the full model apply
    m = _model()
    opt = optim.SGD([{"params": m.dec}], lr=0.1, momentum=0.9)
    step = nn.TrainStep(m, opt, _loss)
    losses = [float(step(enp.asarray(IDX), enp.asarray(Y))) for _ in range(5)]
    np.testing.assert_allclose(losses, TORCH["sgd"]["losses"], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(m.enc.weight), TORCH["sgd"]["W"], rtol=2e-5, atol=2e-6)
    assert m.dec.weight is m.enc.weight


def test_a_tied_parameter_in_two_groups_is_rejected_like_torch():
    m = _model()
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": m.enc}, {"params": m.dec}], lr=0.1)


def test_inplace_init_reinitialises_the_tied_parameter_in_every_slot():
    m = _model()
    nn.init.zeros_(m.dec.weight)          # torch: zeroes the one shared tensor
    assert m.dec.weight is m.enc.weight
    np.testing.assert_array_equal(np.asarray(m.enc.weight), np.zeros((5, 3), np.float32))


def test_deepcopy_keeps_ties_and_clones_of_a_tied_layer_are_not_tied_together():
    import copy
    m = copy.deepcopy(_model())
    assert m.dec.weight is m.enc.weight and [n for n, _ in m.named_parameters()] == ["enc.weight", "dec.bias"]
    opt = optim.SGD(m, lr=0.1, momentum=0.9)
    step = nn.TrainStep(m, opt, _loss)
    losses = [float(step(enp.asarray(IDX), enp.asarray(Y))) for _ in range(5)]
    np.testing.assert_allclose(losses, TORCH["sgd"]["losses"], rtol=2e-5, atol=1e-6)
    # two clones sharing the arrays (as TransformerEncoder builds its layers): each keeps
    # its own tie, and the clones are two models' worth of parameters
    seq = nn.Sequential(*nn.layers.transformer._clone(_model(), 2))
    assert [n for n, _ in seq.named_parameters()] == ["0.enc.weight", "0.dec.bias", "1.enc.weight", "1.dec.bias"]
