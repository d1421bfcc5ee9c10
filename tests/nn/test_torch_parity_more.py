"""PyTorch parity of the late-added nn names (skipped where torch is not installed;
test_layers_more.py checks the same functions against numpy on its own)."""
import warnings

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn
from ember.nn import functional as F
from ember.nn import init

from _nn_helpers import np_

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _t(a):
    return torch.tensor(np.asarray(a))


@pytest.mark.parametrize("size,k,d,p,s", [((3, 3), 2, 1, 0, 1), ((7, 6), 3, 1, 1, 2),
                                          ((8, 9), (2, 3), (2, 1), (1, 2), (3, 2)), ((5, 5), 2, 1, 2, 3)])
def test_fold_unfold_vs_torch(size, k, d, p, s):
    x = np.random.default_rng(0).standard_normal((2, 3) + size)
    cols = TF.unfold(_t(x), k, d, p, s)
    np.testing.assert_allclose(np_(F.unfold(enp.asarray(x), k, d, p, s)), cols.numpy(), atol=1e-12)
    np.testing.assert_allclose(np_(F.fold(enp.asarray(cols.numpy()), size, k, d, p, s)),
                               TF.fold(cols, size, k, d, p, s).numpy(), atol=1e-12)
    tc = cols.clone().requires_grad_(True)
    w = np.random.default_rng(1).standard_normal((2, 3) + size)
    (TF.fold(tc, size, k, d, p, s) * _t(w)).sum().backward()
    g = ember.grad(lambda c: (F.fold(c, size, k, d, p, s) * enp.asarray(w)).sum())(enp.asarray(cols.numpy()))
    np.testing.assert_allclose(np_(g), tc.grad.numpy(), atol=1e-12)
    assert repr(nn.Fold(size, k, d, p, s)) == repr(torch.nn.Fold(size, k, d, p, s))
    assert repr(nn.Unfold(k, d, p, s)) == repr(torch.nn.Unfold(k, d, p, s))


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, 0.5, float("inf")])
def test_pdist_vs_torch(p):
    x = np.random.default_rng(0).standard_normal((5, 3))
    x[3] = x[1]
    np.testing.assert_allclose(np_(F.pdist(enp.asarray(x), p)), TF.pdist(_t(x), p).numpy(), rtol=1e-12)
    if p in (1.0, 2.0, 3.0):
        tx = _t(x).requires_grad_(True)
        TF.pdist(tx, p).sum().backward()
        g = ember.grad(lambda a: F.pdist(a, p).sum())(enp.asarray(x))
        np.testing.assert_allclose(np_(g), tx.grad.numpy(), atol=1e-10)


def test_channel_shuffle_softmax2d_lp_pool3d_vs_torch():
    x = np.random.default_rng(0).standard_normal((2, 6, 4, 4, 4))
    np.testing.assert_array_equal(np_(F.channel_shuffle(enp.asarray(x), 3)), TF.channel_shuffle(_t(x), 3).numpy())
    assert repr(nn.ChannelShuffle(3)) == repr(torch.nn.ChannelShuffle(3))
    y = x[:, :, 0]
    np.testing.assert_allclose(np_(nn.Softmax2d()(enp.asarray(y))), torch.nn.Softmax2d()(_t(y)).numpy(), rtol=1e-12)
    for norm, k, s in ((2, 2, None), (3, (2, 1, 2), 1), (1.5, 3, 2)):
        ax = np.abs(x) + 0.1
        np.testing.assert_allclose(np_(F.lp_pool3d(enp.asarray(ax), norm, k, s)),
                                   TF.lp_pool3d(_t(ax), norm, k, s).numpy(), rtol=1e-10)
    assert repr(nn.LPPool3d(2, 3)) == repr(torch.nn.LPPool3d(2, 3))


def test_rrelu_and_feature_alpha_dropout_vs_torch():
    x = np.random.default_rng(0).standard_normal((3, 4, 5))
    np.testing.assert_allclose(np_(F.rrelu(enp.asarray(x))), TF.rrelu(_t(x)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(np_(nn.RReLU(0.2, 0.4).eval()(enp.asarray(x))),
                               torch.nn.RReLU(0.2, 0.4).eval()(_t(x)).numpy(), rtol=1e-12)
    assert repr(nn.RReLU()) == repr(torch.nn.RReLU())
    assert repr(nn.FeatureAlphaDropout(0.3)) == repr(torch.nn.FeatureAlphaDropout(0.3))
    # the two values a kept / dropped element can take are torch's
    torch.manual_seed(0)
    t = TF.feature_alpha_dropout(_t(x), 0.4, True).numpy()
    e = np_(F.feature_alpha_dropout(enp.asarray(x), 0.4, True, key=ember.random.key(0)))
    dropped_t = np.unique(np.round(t[np.all(t == t[:, :, :1], -1)], 10))
    dropped_e = np.unique(np.round(e[np.all(e == e[:, :, :1], -1)], 10))
    np.testing.assert_allclose(dropped_t, dropped_e)


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_with_indices_vs_torch(nsp):
    x = np.random.default_rng(nsp).standard_normal((2, 3) + (5,) * nsp)
    v, i = getattr(F, f"max_pool{nsp}d_with_indices")(enp.asarray(x), 2, 1, 1)
    tv, ti = getattr(TF, f"max_pool{nsp}d_with_indices")(_t(x), 2, 1, 1)
    np.testing.assert_array_equal(np_(v), tv.numpy())
    np.testing.assert_array_equal(np_(i), ti.numpy())
    v, i = getattr(F, f"adaptive_max_pool{nsp}d_with_indices")(enp.asarray(x), 3)
    tv, ti = getattr(TF, f"adaptive_max_pool{nsp}d_with_indices")(_t(x), 3)
    np.testing.assert_array_equal(np_(v), tv.numpy())
    np.testing.assert_array_equal(np_(i), ti.numpy())


def test_upsample_spellings_vs_torch():
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(np_(F.upsample_nearest(enp.asarray(x), scale_factor=2)),
                                   TF.upsample_nearest(_t(x), scale_factor=2).numpy())
        np.testing.assert_allclose(np_(F.upsample_bilinear(enp.asarray(x), size=(5, 7))),
                                   TF.upsample_bilinear(_t(x), size=(5, 7)).numpy(), rtol=1e-10)


def test_gumbel_softmax_distribution_vs_torch():
    logits = np.log(np.array([0.1, 0.2, 0.7]))
    torch.manual_seed(0)
    th = np.stack([TF.gumbel_softmax(_t(logits), hard=True).numpy() for _ in range(2000)]).mean(0)
    keys = ember.random.split(ember.random.key(0), 2000)
    eh = np_(ember.vmap(lambda k: F.gumbel_softmax(enp.asarray(logits), hard=True, key=k))(keys)).mean(0)
    np.testing.assert_allclose(eh, th, atol=0.05)


def test_lazy_reprs_and_buffer_vs_torch():
    pairs = [(nn.LazyLinear(3), torch.nn.LazyLinear(3)),
             (nn.LazyConv2d(3, 2), torch.nn.LazyConv2d(3, 2)),
             (nn.LazyConvTranspose1d(3, 2, stride=2), torch.nn.LazyConvTranspose1d(3, 2, stride=2)),
             (nn.LazyBatchNorm1d(), torch.nn.LazyBatchNorm1d()),
             (nn.LazyInstanceNorm2d(), torch.nn.LazyInstanceNorm2d())]
    for e, t in pairs:
        assert repr(e) == repr(t)
    e, t = nn.LazyConv2d(4, 3), torch.nn.LazyConv2d(4, 3)
    x = np.ones((1, 2, 5, 5), np.float32)
    assert e(enp.asarray(x)).shape == tuple(t(_t(x)).shape)
    assert repr(e) == repr(t) and e.weight.shape == tuple(t.weight.shape)
    m, tm = nn.Module(), torch.nn.Module()
    m.b, tm.b = nn.Buffer(enp.ones(2), persistent=False), torch.nn.Buffer(torch.ones(2), persistent=False)
    m.c, tm.c = nn.Buffer(enp.ones(2)), torch.nn.Buffer(torch.ones(2))
    assert list(m.state_dict()) == list(tm.state_dict()) == ["c"]
    assert list(m.buffers()) == [n for n, _ in tm.named_buffers()]


def test_init_alias_names_vs_torch():
    names = [n for n in dir(torch.nn.init) if not n.startswith("_") and hasattr(torch.nn.init, n + "_")]
    assert names and all(callable(getattr(init, n, None)) for n in names), names
    with pytest.warns(FutureWarning):
        torch.nn.init.normal(torch.empty(2, 2))
