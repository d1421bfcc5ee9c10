"""The torch.nn names added late (fold/Fold/Unfold, gumbel_softmax, pdist, rrelu,
channel_shuffle, feature_alpha_dropout, lp_pool3d, *_with_indices, upsample_*,
Softmax2d, Buffer, the Lazy layers, init's deprecated aliases) against numpy
references and closed forms; torch parity lives in test_torch_parity_more.py."""
import itertools
import warnings

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn, optim, random
from ember.nn import functional as F
from ember.nn import init
from ember.testing import check_grads, check_vmap

from _nn_helpers import np_


def f64(a):
    return enp.asarray(np.asarray(a, np.float64))


# --- fold / unfold ------------------------------------------------------------------

def _np_unfold(x, k, d, p, s):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    bh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    bw = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    cols = np.zeros((n, c, k[0], k[1], bh, bw), x.dtype)
    for i, j in itertools.product(range(k[0]), range(k[1])):
        cols[:, :, i, j] = xp[:, :, i * d[0]:i * d[0] + s[0] * bh:s[0], j * d[1]:j * d[1] + s[1] * bw:s[1]]
    return cols.reshape(n, c * k[0] * k[1], bh * bw), (bh, bw)


def _np_fold(cols, size, k, d, p, s):
    n, ck, _ = cols.shape
    c = ck // (k[0] * k[1])
    bh = (size[0] + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    bw = (size[1] + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c, size[0] + 2 * p[0], size[1] + 2 * p[1]), cols.dtype)
    cols = cols.reshape(n, c, k[0], k[1], bh, bw)
    for i, j in itertools.product(range(k[0]), range(k[1])):
        out[:, :, i * d[0]:i * d[0] + s[0] * bh:s[0], j * d[1]:j * d[1] + s[1] * bw:s[1]] += cols[:, :, i, j]
    return out[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]


FOLD_CASES = [((3, 3), (2, 2), (1, 1), (0, 0), (1, 1)),
              ((7, 6), (3, 3), (1, 1), (1, 1), (2, 2)),
              ((8, 9), (2, 3), (2, 1), (1, 2), (3, 2)),
              ((5, 5), (2, 2), (1, 1), (2, 2), (3, 3))]


@pytest.mark.parametrize("size,k,d,p,s", FOLD_CASES)
def test_fold_unfold_match_numpy(size, k, d, p, s):
    x = np.random.default_rng(0).standard_normal((2, 3) + size)
    cols, _ = _np_unfold(x, k, d, p, s)
    np.testing.assert_allclose(np_(F.unfold(f64(x), k, d, p, s)), cols, atol=1e-12)
    np.testing.assert_allclose(np_(F.fold(f64(cols), size, k, d, p, s)), _np_fold(cols, size, k, d, p, s),
                               atol=1e-12)
    m = nn.Fold(size, k, d, p, s)
    np.testing.assert_allclose(np_(m(f64(cols))), _np_fold(cols, size, k, d, p, s), atol=1e-12)
    np.testing.assert_allclose(np_(nn.Unfold(k, d, p, s)(f64(x))), cols, atol=1e-12)


def test_fold_is_unfolds_adjoint_and_differentiable():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 2, 5, 4))
    cols = rng.standard_normal((1, 8, 30))
    args = ((5, 4), 2, 1, 1, (1, 1))
    # <unfold(x), cols> == <x, fold(cols)>
    lhs = float(np.sum(np_(F.unfold(f64(x), 2, 1, 1, 1)) * cols))
    rhs = float(np.sum(x * np_(F.fold(f64(cols), *args))))
    assert abs(lhs - rhs) < 1e-10
    check_grads(lambda c: F.fold(c, *args), (f64(cols),), order=1)
    check_grads(lambda t: F.unfold(t, 2, 1, 1, 1), (f64(x),), order=1)


def test_fold_unbatched_jit_vmap_and_dtype():
    cols = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    y = F.fold(enp.asarray(cols), (3, 3), 2)
    assert y.shape == (1, 3, 3) and y.dtype == np.float32
    np.testing.assert_allclose(np_(y), _np_fold(cols[None], (3, 3), (2, 2), (1, 1), (0, 0), (1, 1))[0])
    jy = ember.jit(lambda c: F.fold(c, (3, 3), 2))(enp.asarray(cols))
    np.testing.assert_allclose(np_(jy), np_(y))
    check_vmap(lambda c: F.fold(c, (3, 3), 2), (enp.asarray(np.stack([cols, 2 * cols])),))
    assert F.unfold(enp.ones((3, 4, 4)), 2).shape == (12, 9)
    assert F.fold(enp.ones((1, 4, 4), dtype="float64"), 3, 2).dtype == np.float64


def test_fold_errors():
    with pytest.raises(ValueError, match=r"fold: expected size of input's dimension 1 to be divisible .*input.size\(1\)=7"):
        F.fold(enp.ones((1, 7, 4)), (3, 3), 2)
    with pytest.raises(ValueError, match=r"fold: .*number of sliding blocks 2 \* 2 = 4, but got input.size\(2\)=5"):
        F.fold(enp.ones((1, 8, 5)), (3, 3), 2)
    with pytest.raises(ValueError, match=r"fold: expected a 2-d .* got shape \(8,\)"):
        F.fold(enp.ones(8), (3, 3), 2)
    with pytest.raises(ValueError, match="fold: stride must be positive"):
        F.fold(enp.ones((1, 4, 4)), (3, 3), 2, stride=0)
    with pytest.raises(ValueError, match=r"unfold: expected a 3-d .* got shape \(2, 2\)"):
        F.unfold(enp.ones((2, 2)), 2)


# --- activations ----------------------------------------------------------------------

def test_rrelu_eval_training_and_grad():
    x = np.array([-2.0, -0.5, 0.0, 1.5, 3.0])
    np.testing.assert_allclose(np_(F.rrelu(f64(x), 0.1, 0.3)), np.where(x > 0, x, 0.2 * x))
    y = np_(F.rrelu(f64(x), 0.1, 0.3, training=True, key=random.key(3)))
    slope = y[:2] / x[:2]
    assert np.all((slope >= 0.1) & (slope <= 0.3)) and np.array_equal(y[3:], x[3:])
    # the same key gives the same slopes, another key other ones
    np.testing.assert_array_equal(y, np_(F.rrelu(f64(x), 0.1, 0.3, training=True, key=random.key(3))))
    assert not np.array_equal(y, np_(F.rrelu(f64(x), 0.1, 0.3, training=True, key=random.key(4))))
    xs = f64([-2.0, -0.5, 1.5, 3.0])
    check_grads(lambda t: F.rrelu(t, 0.1, 0.3), (xs,), order=2)
    check_grads(lambda t: F.rrelu(t, 0.1, 0.3, training=True, key=random.key(0)), (xs,), order=1)
    with pytest.raises(ValueError, match="rrelu: lower bound .* lower=0.5, upper=0.1"):
        F.rrelu(xs, 0.5, 0.1)
    with pytest.raises(TypeError, match="rrelu: input must be a floating-point array .* got int32"):
        F.rrelu(enp.asarray([1, 2]))


def test_rrelu_layer_uses_the_forward_rng_stream():
    m = nn.RReLU(0.1, 0.3)
    assert repr(m) == "RReLU(lower=0.1, upper=0.3)"
    x = -enp.ones(64)
    a = np_(nn.functional_call(m, {}, x, rng=random.key(0))[0])
    b = np_(nn.functional_call(m, {}, x, rng=random.key(0))[0])
    c = np_(nn.functional_call(m, {}, x, rng=random.key(1))[0])
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c) and len(set(a.tolist())) > 1
    assert np.all((-a >= 0.1) & (-a <= 0.3))
    np.testing.assert_allclose(np_(m.eval()(x)), -0.2 * np.ones(64), rtol=1e-6)
    with pytest.raises(ValueError, match="RReLU: lower bound"):
        nn.RReLU(0.5, 0.1)


def test_gumbel_softmax():
    logits = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]]))
    y = np_(F.gumbel_softmax(f64(logits), key=random.key(0)))
    np.testing.assert_allclose(y.sum(-1), 1.0)
    assert np.all(y > 0)
    # the soft sample is softmax((logits + g) / tau) for the key's Gumbel noise
    g = np_(random.gumbel(random.key(0), (2, 3), "float64"))
    z = (logits + g) / 0.5
    ref = np.exp(z - z.max(-1, keepdims=True))
    np.testing.assert_allclose(np_(F.gumbel_softmax(f64(logits), tau=0.5, key=random.key(0))),
                               ref / ref.sum(-1, keepdims=True), rtol=1e-12)
    h = np_(F.gumbel_softmax(f64(logits), hard=True, key=random.key(0)))
    np.testing.assert_array_equal(h, np.eye(3)[np.argmax(z, -1)])
    # along dim 0, and the sampling frequencies follow the probabilities
    assert np.allclose(np_(F.gumbel_softmax(f64(logits), dim=0, key=random.key(1))).sum(0), 1.0)
    keys = random.split(random.key(2), 4000)
    hs = ember.vmap(lambda k: F.gumbel_softmax(f64(logits[0]), hard=True, key=k))(keys)
    np.testing.assert_allclose(np_(hs).mean(0), [0.1, 0.2, 0.7], atol=0.03)


def test_gumbel_softmax_gradients():
    logits = f64([[0.3, -0.2, 0.5]])
    check_grads(lambda t: F.gumbel_softmax(t, tau=0.7, key=random.key(0)), (logits,), order=1)
    # hard: the straight-through gradient is the soft sample's
    w = f64([[1.0, 2.0, -1.0]])
    gh = ember.grad(lambda t: (F.gumbel_softmax(t, hard=True, key=random.key(0)) * w).sum())(logits)
    gs = ember.grad(lambda t: (F.gumbel_softmax(t, key=random.key(0)) * w).sum())(logits)
    np.testing.assert_allclose(np_(gh), np_(gs), rtol=1e-12)
    with pytest.raises(TypeError, match="gumbel_softmax: input must be a floating-point array"):
        F.gumbel_softmax(enp.asarray([1, 2]), key=random.key(0))


def test_softmax2d():
    x = np.random.default_rng(0).standard_normal((2, 3, 2, 2))
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(np_(nn.Softmax2d()(f64(x))), e / e.sum(1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(np_(F.softmax2d(f64(x[0]))), (e / e.sum(1, keepdims=True))[0], rtol=1e-12)
    check_grads(nn.Softmax2d(), (f64(x[:1]),), order=1)
    with pytest.raises(ValueError, match=r"Softmax2d: expected input to be 3D or 4D, got 2D instead \(shape \(3, 3\)\)"):
        nn.Softmax2d()(enp.ones((3, 3)))


# --- pdist ----------------------------------------------------------------------------

@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, 0.5, float("inf")])
def test_pdist_matches_numpy(p):
    x = np.random.default_rng(0).standard_normal((5, 3))
    x[3] = x[1]
    i, j = np.triu_indices(5, 1)
    d = np.abs(x[i] - x[j])
    ref = {0.0: (d != 0).sum(-1), float("inf"): d.max(-1)}.get(p)
    if ref is None:
        ref = (d ** p).sum(-1) ** (1 / p)
    np.testing.assert_allclose(np_(F.pdist(f64(x), p)), ref, rtol=1e-12)


def test_pdist_gradient_shapes_and_errors():
    x = np.random.default_rng(1).standard_normal((4, 3))
    check_grads(lambda t: F.pdist(t), (f64(x),), order=1)
    check_grads(lambda t: F.pdist(t, 3.0), (f64(x),), order=1)
    # a repeated row: zero distance, zero gradient (not nan)
    x[2] = x[0]
    g = np_(ember.grad(lambda t: F.pdist(t).sum())(f64(x)))
    assert np.all(np.isfinite(g))
    assert F.pdist(enp.ones((1, 3))).shape == (0,)
    assert F.pdist(enp.ones((3, 0))).tolist() == [0.0, 0.0, 0.0]
    assert F.pdist(enp.ones((4, 2), dtype="float64")).dtype == np.float64
    np.testing.assert_allclose(np_(ember.jit(F.pdist)(f64(x))), np_(F.pdist(f64(x))))
    check_vmap(F.pdist, (f64(np.stack([x, 2 * x])),))
    with pytest.raises(ValueError, match=r"pdist: expected a 2-d \(N, M\) input, got shape \(3,\)"):
        F.pdist(enp.ones(3))
    with pytest.raises(ValueError, match="pdist: p must be non-negative, got p=-1.0"):
        F.pdist(enp.ones((2, 2)), -1)
    with pytest.raises(TypeError, match="pdist: input must be a floating-point array"):
        F.pdist(enp.ones((2, 2), dtype="int32"))


# --- channel shuffle, feature alpha dropout ----------------------------------------------

def test_channel_shuffle():
    x = np.arange(2 * 6 * 2, dtype=np.float32).reshape(2, 6, 2)
    ref = x.reshape(2, 3, 2, 2).transpose(0, 2, 1, 3).reshape(2, 6, 2)
    np.testing.assert_array_equal(np_(F.channel_shuffle(enp.asarray(x), 3)), ref)
    np.testing.assert_array_equal(np_(nn.ChannelShuffle(3)(enp.asarray(x))), ref)
    assert repr(nn.ChannelShuffle(3)) == "ChannelShuffle(groups=3)"
    assert F.channel_shuffle(enp.ones((1, 4, 2, 2), dtype="int32"), 2).dtype == np.int32
    check_grads(lambda t: F.channel_shuffle(t, 2), (f64(np.ones((1, 4, 3))),), order=1)
    with pytest.raises(ValueError, match=r"channel_shuffle: number of channels must be divisible by groups, got 5 channels and groups=2"):
        F.channel_shuffle(enp.ones((2, 5, 3)), 2)
    with pytest.raises(ValueError, match=r"channel_shuffle: expected an input with more than 2 dims .* \(6, 3\)"):
        F.channel_shuffle(enp.ones((6, 3)), 2)


def test_feature_alpha_dropout():
    x = np.random.default_rng(0).standard_normal((8, 16, 5))
    np.testing.assert_array_equal(np_(F.feature_alpha_dropout(f64(x), 0.5)), x)  # training=False default
    y = np_(F.feature_alpha_dropout(f64(x), 0.5, True, key=random.key(0)))
    alpha = 1.7580993408473766
    a = ((1 - 0.5) * (1 + 0.5 * alpha ** 2)) ** -0.5
    kept = np.isclose(y, a * x + a * alpha * 0.5)
    dropped = np.isclose(y, a * -alpha + a * alpha * 0.5)
    assert np.all(kept | dropped)
    # whole (sample, channel) slices are kept or dropped together
    assert np.all(kept.all(-1) | dropped.all(-1)) and 0 < kept.all(-1).mean() < 1
    m = nn.FeatureAlphaDropout(0.5)
    assert repr(m) == "FeatureAlphaDropout(p=0.5, inplace=False)"
    z = np_(nn.functional_call(m, {}, f64(x), rng=random.key(0))[0])
    assert z.shape == x.shape
    np.testing.assert_array_equal(np_(m.eval()(f64(x))), x)
    check_grads(lambda t: F.feature_alpha_dropout(t, 0.3, True, key=random.key(1)), (f64(x[:2, :3]),), order=1)
    with pytest.raises(ValueError, match=r"feature_alpha_dropout: feature dropout requires at least 2 dimensions .* \(3,\)"):
        F.feature_alpha_dropout(enp.ones(3), 0.5, True, key=random.key(0))


# --- pooling -------------------------------------------------------------------------------

def test_lp_pool3d():
    x = np.abs(np.random.default_rng(0).standard_normal((1, 2, 4, 4, 4))) + 0.1
    ref = (x ** 2).reshape(1, 2, 2, 2, 2, 2, 2, 2).transpose(0, 1, 2, 4, 6, 3, 5, 7).reshape(1, 2, 2, 2, 2, 8)
    ref = ref.sum(-1) ** 0.5
    np.testing.assert_allclose(np_(F.lp_pool3d(f64(x), 2, 2)), ref, rtol=1e-12)
    m = nn.LPPool3d(2, 2)
    np.testing.assert_allclose(np_(m(f64(x))), ref, rtol=1e-12)
    assert repr(m) == "LPPool3d(norm_type=2, kernel_size=2, stride=None, ceil_mode=False)"
    check_grads(lambda t: F.lp_pool3d(t, 3, (2, 2, 1), stride=1), (f64(x[:, :1, :3, :3, :2]),), order=1)


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_with_indices_spellings(nsp):
    x = enp.asarray(np.random.default_rng(nsp).standard_normal((2, 3) + (4,) * nsp).astype(np.float32))
    mp = getattr(F, f"max_pool{nsp}d")
    v, i = getattr(F, f"max_pool{nsp}d_with_indices")(x, 2, return_indices=False)
    v2, i2 = mp(x, 2, return_indices=True)
    np.testing.assert_array_equal(np_(v), np_(v2))
    np.testing.assert_array_equal(np_(i), np_(i2))
    v, i = getattr(F, f"adaptive_max_pool{nsp}d_with_indices")(x, 3)
    v2, i2 = getattr(F, f"adaptive_max_pool{nsp}d")(x, 3, return_indices=True)
    np.testing.assert_array_equal(np_(v), np_(v2))
    np.testing.assert_array_equal(np_(i), np_(i2))
    # the indices point at the maxima within each (N, C) plane
    flat = np_(x).reshape(2, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, np_(i).reshape(2, 3, -1), -1),
                                  np_(v).reshape(2, 3, -1))


def test_upsample_deprecated_spellings():
    x = enp.asarray(np.arange(4.0, dtype=np.float32).reshape(1, 1, 2, 2))
    with pytest.warns(UserWarning, match="upsample_nearest` is deprecated"):
        y = F.upsample_nearest(x, scale_factor=2)
    np.testing.assert_array_equal(np_(y), np.repeat(np.repeat(np_(x), 2, 2), 2, 3))
    with pytest.warns(UserWarning, match="upsample_bilinear` is deprecated"):
        z = F.upsample_bilinear(x, size=(3, 3))
    # align_corners=True: corners kept, midpoints averaged
    np.testing.assert_allclose(np_(z)[0, 0], [[0, 0.5, 1], [1, 1.5, 2], [2, 2.5, 3]])


# --- Buffer, init aliases --------------------------------------------------------------------

def test_buffer_registers_a_buffer():
    m = nn.Module()
    m.scale = nn.Buffer(enp.ones(2))
    m.tmp = nn.Buffer(enp.zeros(2), persistent=False)
    assert list(m.buffers()) == ["scale", "tmp"] and list(m.parameters()) == []
    assert list(m.state_dict()) == ["scale"]
    m.scale = enp.full(2, 3.0)  # a plain array then rebinds the buffer
    assert list(m.buffers()) == ["scale", "tmp"] and np_(m.scale).tolist() == [3.0, 3.0]
    m.p = nn.Parameter(enp.ones(1))
    m.p = nn.Buffer(enp.ones(1))  # re-registered as a buffer, as torch
    assert "p" in m.buffers() and "p" not in m.parameters()

    class Net(nn.Module):
        def __init__(self):
            self.b = nn.Buffer(enp.ones(1))

    with pytest.raises(nn.ModuleInitError, match="Net: cannot assign the buffer 'b' before Module.__init__"):
        Net()


@pytest.mark.parametrize("name", ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform",
                                  "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal",
                                  "sparse"])
def test_init_deprecated_aliases(name):
    shape = {"eye": (3, 4), "dirac": (2, 2, 3)}.get(name, (4, 3))
    args = {"constant": (0.5,), "sparse": (0.5,)}.get(name, ())
    keyed = name not in ("constant", "eye", "dirac")
    kw = {"key": random.key(0)} if keyed else {}
    with pytest.warns(FutureWarning, match=rf"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`"):
        a = getattr(init, name)(shape, *args, **kw)
    b = getattr(init, name + "_")(shape, *args, **kw)
    np.testing.assert_array_equal(np_(a), np_(b))
    # the PyTorch statement form rebinds the layer's slot
    lin = nn.Conv1d(2, 2, 3) if name == "dirac" else nn.Linear(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        getattr(init, name)(lin.weight, *args, **kw)
    np.testing.assert_array_equal(np_(lin.weight),
                                  np_(getattr(init, name + "_")(tuple(lin.weight.shape), *args, **kw)))


# --- Lazy layers -----------------------------------------------------------------------------

def test_lazy_linear_matches_the_eager_layer():
    nn.manual_seed(7)
    ref = nn.Linear(5, 3)
    nn.manual_seed(7)
    m = nn.LazyLinear(3)
    assert repr(m) == "LazyLinear(in_features=0, out_features=3, bias=True)"
    assert m.has_uninitialized_params() and list(m.parameters()) == []
    assert isinstance(m, nn.Linear)
    x = enp.ones((2, 5))
    np.testing.assert_array_equal(np_(m(x)), np_(ref(x)))
    assert type(m) is nn.Linear and repr(m) == "Linear(in_features=5, out_features=3, bias=True)"
    assert list(m.state_dict()) == ["weight", "bias"]
    np.testing.assert_array_equal(np_(m.weight), np_(ref.weight))
    k = random.key(3)
    np.testing.assert_array_equal(np_(nn.LazyLinear(3, key=k)(x)), np_(nn.Linear(5, 3, key=k)(x)))
    assert nn.LazyLinear(2, bias=False, dtype="float64")(enp.ones(4)).dtype == np.float64


@pytest.mark.parametrize("lazy,real,x,kw", [
    (nn.LazyConv1d, nn.Conv1d, (2, 4, 9), dict(stride=2, groups=2)),
    (nn.LazyConv2d, nn.Conv2d, (1, 3, 5, 5), dict(padding=1)),
    (nn.LazyConv3d, nn.Conv3d, (3, 4, 4, 4), {}),  # unbatched (C, D, H, W)
    (nn.LazyConvTranspose1d, nn.ConvTranspose1d, (2, 4, 5), dict(output_padding=1, stride=2)),
    (nn.LazyConvTranspose2d, nn.ConvTranspose2d, (1, 2, 3, 3), dict(stride=2)),
    (nn.LazyConvTranspose3d, nn.ConvTranspose3d, (1, 2, 2, 2, 2), {}),
])
def test_lazy_convs(lazy, real, x, kw):
    k = random.key(1)
    m = lazy(4, 3, key=k, **kw)
    assert repr(m).startswith(f"{lazy.__name__}(0, 4")
    xs = enp.asarray(np.random.default_rng(0).standard_normal(x).astype(np.float32))
    cin = x[1] if len(x) == real._nsp + 2 else x[0]
    ref = real(cin, 4, 3, key=k, **kw)
    np.testing.assert_array_equal(np_(m(xs)), np_(ref(xs)))
    assert type(m) is real and m.in_channels == cin and repr(m) == repr(ref)
    with pytest.raises(ValueError, match=rf"{lazy.__name__}: expected a .* input, got an input of shape \(2,\)"):
        lazy(4, 3)(enp.ones(2))


@pytest.mark.parametrize("lazy,real,x", [
    (nn.LazyBatchNorm1d, nn.BatchNorm1d, (4, 3)), (nn.LazyBatchNorm2d, nn.BatchNorm2d, (2, 3, 2, 2)),
    (nn.LazyBatchNorm3d, nn.BatchNorm3d, (2, 3, 1, 2, 2)),
    (nn.LazyInstanceNorm1d, nn.InstanceNorm1d, (3, 5)), (nn.LazyInstanceNorm2d, nn.InstanceNorm2d, (2, 3, 2, 2)),
    (nn.LazyInstanceNorm3d, nn.InstanceNorm3d, (2, 3, 2, 2, 2)),
])
def test_lazy_norms(lazy, real, x):
    xs = enp.asarray(np.random.default_rng(0).standard_normal(x).astype(np.float32))
    m, ref = lazy(), real(3, affine=True, track_running_stats=True)  # torch's lazy defaults
    assert repr(m) == repr(ref).replace(f"{real.__name__}(3,", f"{lazy.__name__}(0,")
    np.testing.assert_allclose(np_(m(xs)), np_(ref(xs)), rtol=1e-6)
    assert type(m) is real and m.num_features == 3
    assert list(m.state_dict()) == list(ref.state_dict())
    for name in ref.buffers():
        if ref.buffers()[name] is not None:
            np.testing.assert_allclose(np_(m.buffers()[name]), np_(ref.buffers()[name]), rtol=1e-6)
    m2 = lazy(affine=False, track_running_stats=False, momentum=0.3)
    m2(xs)
    assert m2.weight is None and m2.running_mean is None and m2.momentum == 0.3


def test_lazy_layers_under_traces_raise_until_run_once():
    m = nn.Sequential(nn.Linear(4, 4), nn.LazyLinear(2))
    x = enp.ones((3, 4))
    with pytest.raises(RuntimeError, match=r"LazyLinear: its parameters are created from the shape .* run one forward on a concrete input first"):
        ember.jit(lambda t: m(t))(x)
    assert repr(m[1]).startswith("LazyLinear")  # nothing half-built is left behind
    with pytest.raises(RuntimeError, match=r"functional_call: LazyLinear \(at '1'\) has not created its parameters yet"):
        nn.functional_call(m, {}, x)
    with pytest.raises(RuntimeError, match="LazyLinear"):
        nn.compile_forward(m)(x)
    loss = lambda model, a, b: ((model(a) - b) ** 2).mean()  # noqa: E731
    with pytest.raises(RuntimeError, match="LazyLinear: its parameters are created"):
        nn.TrainStep(m, optim.SGD(m.parameters(), lr=0.1), loss)(x, enp.zeros((3, 2)))
    y = m(x)  # one eager forward: afterwards everything traces
    np.testing.assert_allclose(np_(ember.jit(lambda t: m(t))(x)), np_(y), rtol=1e-6)
    step = nn.TrainStep(m, optim.SGD(m.parameters(), lr=0.1), loss)
    l0 = float(step(x, enp.zeros((3, 2))))
    assert float(step(x, enp.zeros((3, 2)))) < l0
    assert set(m.parameters()["1"]) == {"weight", "bias"}


def test_lazy_argument_errors_are_checked_at_construction():
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.LazyConv2d(3, 2, groups=2)
    with pytest.raises(ValueError, match="LazyLinear: expected an input with at least 1 dimension"):
        nn.LazyLinear(2)(enp.asarray(1.0))
    m = nn.LazyLinear(2)
    m.reset_parameters()  # a no-op before the parameters exist, as torch
    assert m.has_uninitialized_params()
