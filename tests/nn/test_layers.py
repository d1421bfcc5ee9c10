"""Layer forwards against numpy references and (when installed) PyTorch with the
same weights copied through state_dict; default initialisation; train/eval."""
import math

import numpy as np
import pytest
import scipy.special as sp

import ember
import ember.numpy as enp
from ember import nn, random
from ember.testing import check_grads

from _nn_helpers import conv_nd_ref, copy_to_torch, np_, rnd, to_torch


def test_linear_and_bilinear_layers():
    m = nn.Linear(4, 3)
    x = rnd((2, 5, 4))
    np.testing.assert_allclose(np_(m(x)), np_(x) @ np_(m.weight).T + np_(m.bias), rtol=1e-5, atol=1e-6)
    bound = 1 / math.sqrt(4)
    assert np.abs(np_(m.weight)).max() <= bound and np.abs(np_(m.bias)).max() <= bound
    assert nn.Linear(4, 3, bias=False).bias is None
    assert nn.Linear(2, 2, dtype=enp.float64).weight.dtype == np.float64
    k = random.key(3)
    np.testing.assert_array_equal(np_(nn.Linear(4, 3, key=k).weight), np_(nn.Linear(4, 3, key=k).weight))
    b = nn.Bilinear(2, 3, 4)
    x1, x2 = rnd((5, 2)), rnd((5, 3), 1)
    ref = np.einsum("ni,kij,nj->nk", np_(x1), np_(b.weight), np_(x2)) + np_(b.bias)
    np.testing.assert_allclose(np_(b(x1, x2)), ref, rtol=1e-5, atol=1e-6)
    assert nn.Identity(3, foo=1)(x) is x
    assert nn.Flatten()(rnd((2, 3, 4))).shape == (2, 12)
    assert nn.Flatten(0, 1)(rnd((2, 3, 4))).shape == (6, 4)
    assert nn.Unflatten(1, (2, 6))(rnd((3, 12))).shape == (3, 2, 6)


def test_default_init_statistics():
    # kaiming_uniform(a=sqrt(5)) on (256, 64): U(-1/8, 1/8), variance 1/192
    w = np_(nn.Linear(64, 256, key=random.key(0)).weight)
    assert abs(w.var() - (1 / 8) ** 2 / 3) < 2e-4 and np.abs(w).max() <= 1 / 8
    c = np_(nn.Conv2d(4, 8, 3, key=random.key(1)).weight)
    assert np.abs(c).max() <= 1 / math.sqrt(36)
    e = np_(nn.Embedding(1000, 8, key=random.key(2)).weight)
    assert abs(e.std() - 1) < 0.05


@pytest.mark.parametrize("cls,nsp,kw", [
    (nn.Conv1d, 1, dict(stride=2, padding=1)), (nn.Conv2d, 2, dict(padding="same", dilation=2)),
    (nn.Conv2d, 2, dict(stride=(2, 1), groups=2, bias=False)), (nn.Conv3d, 3, dict(padding=1))])
def test_conv_layers(cls, nsp, kw):
    m = cls(4, 6, 3, **kw)
    x = rnd((2, 4) + (6,) * nsp)
    t = lambda v: (v,) * nsp if isinstance(v, int) else v  # noqa: E731
    d = t(kw.get("dilation", 1))
    pad = kw.get("padding", 0)
    if pad == "same":
        pads = [(dd * 2 // 2, dd * 2 - dd * 2 // 2) for dd in d]
    else:
        pads = [(p, p) for p in t(pad)]
    ref = conv_nd_ref(np_(x), np_(m.weight), None if m.bias is None else np_(m.bias), t(kw.get("stride", 1)),
                      pads, d, kw.get("groups", 1))
    np.testing.assert_allclose(np_(m(x)), ref, rtol=1e-4, atol=1e-4)


def test_conv_transpose_output_size():
    m = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
    x = rnd((1, 3, 4, 4))
    assert m(x).shape == (1, 2, 7, 7)
    assert m(x, output_size=(8, 8)).shape == (1, 2, 8, 8)
    with pytest.raises(ValueError):
        m(x, output_size=(10, 10))
    with pytest.raises(ValueError):
        nn.ConvTranspose2d(3, 2, 3, padding="same")


def test_pooling_layers():
    x = rnd((2, 3, 8, 8))
    assert nn.MaxPool2d(2)(x).shape == (2, 3, 4, 4)
    assert nn.MaxPool2d(3, 2, 1, ceil_mode=True)(x).shape == (2, 3, 5, 5)
    assert nn.AvgPool2d(3, 2, 1, count_include_pad=False)(x).shape == (2, 3, 4, 4)
    np.testing.assert_allclose(np_(nn.AdaptiveAvgPool2d(1)(x))[..., 0, 0], np_(x).mean((2, 3)), rtol=1e-5)
    np.testing.assert_allclose(np_(nn.AdaptiveMaxPool2d((1, 1))(x))[..., 0, 0], np_(x).max((2, 3)), rtol=1e-6)
    assert nn.MaxPool1d(2)(rnd((2, 3, 8))).shape == (2, 3, 4)
    assert nn.AvgPool1d(2)(rnd((3, 8))).shape == (3, 4)  # unbatched


def test_normalization_layers_train_eval():
    bn = nn.BatchNorm2d(3)
    x = rnd((4, 3, 5, 5), scale=2.0) + 1.0
    xn = np_(x).astype(np.float64)
    y = np_(bn(x))
    ref = (xn - xn.mean((0, 2, 3), keepdims=True)) / np.sqrt(xn.var((0, 2, 3), keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    n = 4 * 25
    np.testing.assert_allclose(np_(bn.running_mean), 0.1 * xn.mean((0, 2, 3)), rtol=1e-5)
    np.testing.assert_allclose(np_(bn.running_var), 0.9 + 0.1 * xn.var((0, 2, 3)) * n / (n - 1), rtol=1e-5)
    assert int(bn.num_batches_tracked) == 1
    bn.eval()
    ye = np_(bn(x))
    ref_e = (xn - np_(bn.running_mean)[None, :, None, None]) / np.sqrt(np_(bn.running_var)[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(ye, ref_e, rtol=1e-4, atol=1e-4)
    assert int(bn.num_batches_tracked) == 1  # eval does not update
    # cumulative moving average with momentum=None
    cma = nn.BatchNorm1d(2, momentum=None)
    batches = [rnd((8, 2), i) for i in range(3)]
    for b in batches:
        cma(b)
    np.testing.assert_allclose(np_(cma.running_mean), np.mean([np_(b).mean(0) for b in batches], 0), rtol=1e-5,
                               atol=1e-6)
    nostats = nn.BatchNorm1d(2, track_running_stats=False).eval()
    np.testing.assert_allclose(np_(nostats(batches[0])).mean(0), 0, atol=1e-5)
    with pytest.raises(ValueError):
        nn.BatchNorm2d(3)(rnd((4, 3)))
    with pytest.raises(ValueError, match="more than 1 value"):
        nn.BatchNorm1d(3)(rnd((1, 3)))
    ln = nn.LayerNorm([5, 5])
    assert ln(x).shape == x.shape
    assert nn.GroupNorm(1, 3)(x).shape == x.shape
    assert nn.RMSNorm(5)(x).shape == x.shape
    assert nn.InstanceNorm2d(3)(x).shape == x.shape


def test_dropout_layer_train_eval():
    d = nn.Dropout(0.25).set_rng(random.key(0))
    x = enp.ones((4000,))
    y = np_(d(x))
    assert abs((y == 0).mean() - 0.25) < 0.03
    d.eval()
    assert (np_(d(x)) == 1).all()
    d.train()
    assert (np_(nn.Dropout(0.0)(x)) == 1).all()
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


def test_embedding_layer():
    e = nn.Embedding(10, 4, padding_idx=0)
    assert np_(e.weight)[0].tolist() == [0.0] * 4
    idx = enp.asarray([[0, 3], [9, 3]])
    np.testing.assert_array_equal(np_(e(idx)), np_(e.weight)[np_(idx)])
    pre = nn.Embedding.from_pretrained(enp.ones((3, 2)))
    assert pre.is_frozen("weight") and pre(enp.asarray([1])).shape == (1, 2)


def test_activation_layers():
    x = rnd((3, 4))
    xn = np_(x).astype(np.float64)
    pairs = [(nn.ReLU(), np.maximum(xn, 0)), (nn.GELU(), 0.5 * xn * (1 + sp.erf(xn / np.sqrt(2)))),
             (nn.SiLU(), xn * sp.expit(xn)), (nn.Sigmoid(), sp.expit(xn)), (nn.Tanh(), np.tanh(xn)),
             (nn.Softmax(dim=1), sp.softmax(xn, 1)), (nn.LogSoftmax(dim=-1), sp.log_softmax(xn, -1)),
             (nn.LeakyReLU(0.3), np.where(xn >= 0, xn, 0.3 * xn)),
             (nn.ELU(0.5), np.where(xn > 0, xn, 0.5 * np.expm1(xn))),
             (nn.Softplus(), np.log1p(np.exp(xn))), (nn.Mish(), xn * np.tanh(np.log1p(np.exp(xn)))),
             (nn.Hardswish(), xn * np.clip(xn + 3, 0, 6) / 6), (nn.PReLU(), np.where(xn >= 0, xn, 0.25 * xn))]
    for m, ref in pairs:
        np.testing.assert_allclose(np_(m(x)), ref, rtol=1e-5, atol=1e-6, err_msg=type(m).__name__)


def test_containers():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    seq.append(nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear)
    assert isinstance(seq[:2], nn.Sequential) and len(seq[:2]) == 2
    del seq[1]
    assert [n for n, _ in seq.named_children()] == ["0", "1"]
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    ml.insert(1, nn.Tanh())
    assert [type(m).__name__ for m in ml] == ["Linear", "Tanh", "Linear", "Linear"]
    assert [n for n, _ in ml.named_parameters()][:2] == ["0.weight", "0.bias"]
    md = nn.ModuleDict({"a": nn.Linear(1, 2)})
    md["b"] = nn.ReLU()
    assert list(md) == ["a", "b"] and "a" in md
    pl = nn.ParameterList([enp.ones(2)])
    pl.append(enp.zeros(3))
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]


def test_layer_gradients_float64():
    nn.manual_seed(0)
    for m, shape in ((nn.Conv1d(2, 3, 3, padding=1, dtype=enp.float64), (2, 2, 5)),
                     (nn.LayerNorm(4, dtype=enp.float64), (3, 4)),
                     (nn.Linear(3, 2, dtype=enp.float64), (4, 3)),
                     (nn.GroupNorm(2, 4, dtype=enp.float64), (2, 4, 3))):
        x = np.random.default_rng(0).standard_normal(shape)

        def f(p, x, m=m):
            return nn.functional_call(m, p, x)[0]
        check_grads(f, (m.parameters(), x), order=1)


# --- against PyTorch ---------------------------------------------------------------------------

def _torch_check(ember_m, torch_m, *inputs, rtol=1e-4, atol=1e-5, train=False):
    torch = pytest.importorskip("torch")
    copy_to_torch(ember_m, torch_m)
    ember_m.train(train)
    torch_m.train(train)
    got = ember_m(*inputs)
    with torch.no_grad():
        want = torch_m(*[to_torch(i) for i in inputs])
    if isinstance(want, tuple):
        got, want = got[0], want[0]
    np.testing.assert_allclose(np_(got), want.numpy(), rtol=rtol, atol=atol)
    return got, want


@pytest.mark.parametrize("make", [
    lambda tnn: (nn.Linear(5, 3), tnn.Linear(5, 3), (2, 5)),
    lambda tnn: (nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=1, groups=2),
                 tnn.Conv1d(4, 6, 3, stride=2, padding=1, groups=2), (2, 4, 9)),
    lambda tnn: (nn.Conv2d(3, 4, 3, padding="same", dilation=2), tnn.Conv2d(3, 4, 3, padding="same", dilation=2),
                 (2, 3, 7, 6)),
    lambda tnn: (nn.Conv2d(2, 4, 3, padding=1, padding_mode="reflect"),
                 tnn.Conv2d(2, 4, 3, padding=1, padding_mode="reflect"), (1, 2, 5, 5)),
    lambda tnn: (nn.Conv3d(2, 2, 2, stride=2), tnn.Conv3d(2, 2, 2, stride=2), (1, 2, 4, 4, 4)),
    lambda tnn: (nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1, output_padding=1, groups=2),
                 tnn.ConvTranspose1d(4, 2, 3, stride=2, padding=1, output_padding=1, groups=2), (2, 4, 5)),
    lambda tnn: (nn.ConvTranspose2d(3, 4, (3, 2), stride=(2, 3), padding=(1, 0), dilation=(1, 2)),
                 tnn.ConvTranspose2d(3, 4, (3, 2), stride=(2, 3), padding=(1, 0), dilation=(1, 2)), (1, 3, 4, 5)),
    lambda tnn: (nn.MaxPool2d(3, 2, 1, ceil_mode=True), tnn.MaxPool2d(3, 2, 1, ceil_mode=True), (2, 3, 8, 7)),
    lambda tnn: (nn.MaxPool1d(3, 2, 1, dilation=2), tnn.MaxPool1d(3, 2, 1, dilation=2), (2, 3, 11)),
    lambda tnn: (nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=True),
                 tnn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=True), (1, 2, 8, 8)),
    lambda tnn: (nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False),
                 tnn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False), (1, 2, 8, 8)),
    lambda tnn: (nn.AvgPool1d(4, 3, 2, ceil_mode=True), tnn.AvgPool1d(4, 3, 2, ceil_mode=True), (1, 2, 10)),
    lambda tnn: (nn.AdaptiveAvgPool2d((3, 5)), tnn.AdaptiveAvgPool2d((3, 5)), (2, 3, 7, 9)),
    lambda tnn: (nn.AdaptiveMaxPool2d((2, 3)), tnn.AdaptiveMaxPool2d((2, 3)), (2, 3, 7, 9)),
    lambda tnn: (nn.LayerNorm([4, 5]), tnn.LayerNorm([4, 5]), (3, 4, 5)),
    lambda tnn: (nn.GroupNorm(2, 4), tnn.GroupNorm(2, 4), (3, 4, 5)),
    lambda tnn: (nn.RMSNorm(5), tnn.RMSNorm(5), (3, 4, 5)),
    lambda tnn: (nn.InstanceNorm1d(4, affine=True), tnn.InstanceNorm1d(4, affine=True), (3, 4, 5)),
    lambda tnn: (nn.GELU("tanh"), tnn.GELU("tanh"), (3, 4)),
    lambda tnn: (nn.Hardswish(), tnn.Hardswish(), (3, 4)),
    lambda tnn: (nn.Softplus(2.0, 3.0), tnn.Softplus(2.0, 3.0), (3, 4)),
    lambda tnn: (nn.Flatten(1, 2), tnn.Flatten(1, 2), (2, 3, 4, 5)),
])
def test_layers_against_torch(make):
    torch = pytest.importorskip("torch")
    e, t, shape = make(torch.nn)
    x = rnd(shape, 3, scale=2.0)
    _torch_check(e, t, x)


def test_bilinear_against_torch():
    torch = pytest.importorskip("torch")
    e, t = nn.Bilinear(3, 4, 2), torch.nn.Bilinear(3, 4, 2)
    _torch_check(e, t, rnd((5, 3)), rnd((5, 4), 1))


def test_batchnorm_against_torch_train_and_eval():
    torch = pytest.importorskip("torch")
    e, t = nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
    copy_to_torch(e, t)
    for i in range(3):
        x = rnd((4, 3, 5, 5), i, scale=2.0) + 0.5
        out = e(x)
        with torch.no_grad():
            want = t(to_torch(x))
        np.testing.assert_allclose(np_(out), want.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np_(e.running_mean), t.running_mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np_(e.running_var), t.running_var.numpy(), rtol=1e-5, atol=1e-6)
    assert int(e.num_batches_tracked) == int(t.num_batches_tracked)
    e.eval()
    t.eval()
    x = rnd((2, 3, 5, 5), 9)
    with torch.no_grad():
        np.testing.assert_allclose(np_(e(x)), t(to_torch(x)).numpy(), rtol=1e-4, atol=1e-4)


def test_embedding_against_torch():
    torch = pytest.importorskip("torch")
    e, t = nn.Embedding(7, 3, padding_idx=2), torch.nn.Embedding(7, 3, padding_idx=2)
    copy_to_torch(e, t)
    idx = np.array([[1, 2, 6], [2, 0, 5]])
    np.testing.assert_allclose(np_(e(enp.asarray(idx))), t(torch.from_numpy(idx)).detach().numpy())
    # same gradient, including the zero gradient of the padding row
    g = ember.grad(lambda p: nn.functional_call(e, p, enp.asarray(idx))[0].sum())(e.parameters())
    out = t(torch.from_numpy(idx)).sum()
    out.backward()
    np.testing.assert_allclose(np_(g["weight"]), t.weight.grad.numpy())


def test_torch_names_round_trip():
    torch = pytest.importorskip("torch")
    pairs = [(nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(), nn.Linear(8, 3)),
              torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.ReLU(),
                                  torch.nn.Flatten(), torch.nn.Linear(8, 3))),
             (nn.LSTM(3, 4, 2, bidirectional=True), torch.nn.LSTM(3, 4, 2, bidirectional=True)),
             (nn.TransformerDecoderLayer(8, 2, 16), torch.nn.TransformerDecoderLayer(8, 2, 16)),
             (nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True),
              torch.nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True))]
    for e, t in pairs:
        assert list(e.state_dict()) == list(t.state_dict()), type(e).__name__
        for k, v in t.state_dict().items():
            assert tuple(e.state_dict()[k].shape) == tuple(v.shape), k
        # torch tensors load directly
        e.load_state_dict(t.state_dict())
        np.testing.assert_allclose(np_(next(iter(e.state_dict().values()))),
                                   next(iter(t.state_dict().values())).numpy())
