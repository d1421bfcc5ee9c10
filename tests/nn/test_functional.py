"""ember.nn.functional: values against numpy/scipy references, gradients in float64."""
import math

import numpy as np
import pytest
import scipy.special as sp

import ember
import ember.numpy as enp
from ember import random
from ember.nn import functional as F
from ember.testing import check_grads

from _nn_helpers import conv_nd_ref, np_, rnd


X = np.array([[-3.0, -0.5, 0.0, 0.7, 25.0], [1.5, -2.0, 0.3, -0.01, 4.0]], np.float32)

ACTIVATIONS = {
    "relu": (F.relu, lambda x: np.maximum(x, 0)),
    "relu6": (F.relu6, lambda x: np.clip(x, 0, 6)),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x >= 0, x, 0.2 * x)),
    "elu": (F.elu, lambda x: np.where(x > 0, x, np.expm1(x))),
    "selu": (F.selu, lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x))),
    "celu": (lambda x: F.celu(x, 2.0), lambda x: np.where(x > 0, x, 2.0 * np.expm1(x / 2.0))),
    "gelu": (F.gelu, lambda x: 0.5 * x * (1 + sp.erf(x / np.sqrt(2)))),
    "gelu_tanh": (lambda x: F.gelu(x, "tanh"),
                  lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    "silu": (F.silu, lambda x: x * sp.expit(x)),
    "sigmoid": (F.sigmoid, sp.expit),
    "tanh": (F.tanh, np.tanh),
    "softplus": (F.softplus, lambda x: np.where(x > 20, x, np.log1p(np.exp(x)))),
    "softplus_beta": (lambda x: F.softplus(x, 2.0, 5.0), lambda x: np.where(2 * x > 5, x, np.log1p(np.exp(2 * x)) / 2)),
    "softsign": (F.softsign, lambda x: x / (1 + np.abs(x))),
    "mish": (F.mish, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    "hardswish": (F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "hardsigmoid": (F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    "hardtanh": (F.hardtanh, lambda x: np.clip(x, -1, 1)),
    "logsigmoid": (F.logsigmoid, lambda x: -np.logaddexp(0, -x)),
    "tanhshrink": (F.tanhshrink, lambda x: x - np.tanh(x)),
    "softshrink": (F.softshrink, lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0))),
    "hardshrink": (F.hardshrink, lambda x: np.where(np.abs(x) > 0.5, x, 0)),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activations_match_numpy(name):
    f, ref = ACTIVATIONS[name]
    np.testing.assert_allclose(np_(f(enp.asarray(X))), ref(X.astype(np.float64)), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["gelu", "silu", "softplus", "mish", "elu", "logsigmoid", "gelu_tanh"])
def test_activation_grads(name):
    f, _ = ACTIVATIONS[name]
    check_grads(f, (np.array([-1.3, -0.2, 0.4, 2.1]),), order=2)


def test_softmax_family():
    x = enp.asarray(X)
    for dim in (0, 1, -1):
        ref = sp.softmax(X.astype(np.float64), axis=dim)
        np.testing.assert_allclose(np_(F.softmax(x, dim)), ref, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(np_(F.log_softmax(x, dim)), np.log(ref), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np_(F.softmin(x, dim)), sp.softmax(-X.astype(np.float64), axis=dim),
                                   rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np_(F.logsumexp(x, 1)), sp.logsumexp(X, 1), rtol=1e-6)
    np.testing.assert_allclose(np_(F.logsumexp(x, (0, 1), keepdim=True)), sp.logsumexp(X, keepdims=True),
                               rtol=1e-6)
    # huge logits stay finite, -inf entries get probability 0
    big = enp.asarray([1000.0, 1000.0, -np.inf])
    np.testing.assert_allclose(np_(F.softmax(big, 0)), [0.5, 0.5, 0.0])
    np.testing.assert_allclose(np_(F.log_softmax(big, 0))[:2], [-math.log(2)] * 2, rtol=1e-6)
    check_grads(lambda v: F.log_softmax(v, -1), (np.array([[0.1, -0.3, 2.0]]),), order=2)
    check_grads(lambda v: F.softmax(v, 0), (np.array([0.1, -0.3, 2.0]),), order=1)


def test_glu_prelu_threshold():
    x = rnd((2, 4))
    a, b = np_(x)[:, :2], np_(x)[:, 2:]
    np.testing.assert_allclose(np_(F.glu(x)), a * sp.expit(b), rtol=1e-5)
    w = enp.asarray([0.1, 0.2, 0.3, 0.4])
    np.testing.assert_allclose(np_(F.prelu(x, w)), np.where(np_(x) >= 0, np_(x), np_(x) * np_(w)), rtol=1e-6)
    np.testing.assert_allclose(np_(F.threshold(x, 0.1, -5.0)), np.where(np_(x) > 0.1, np_(x), -5.0))


def test_linear_and_bilinear():
    x, w, b = rnd((3, 4)), rnd((5, 4), 1), rnd((5,), 2)
    np.testing.assert_allclose(np_(F.linear(x, w, b)), np_(x) @ np_(w).T + np_(b), rtol=1e-5, atol=1e-6)
    x2, wb = rnd((3, 2), 3), rnd((5, 4, 2), 4)
    ref = np.einsum("ni,kij,nj->nk", np_(x), np_(wb), np_(x2)) + np_(b)
    np.testing.assert_allclose(np_(F.bilinear(x, x2, wb, b)), ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):
        F.linear(x, rnd((5, 3)))
    check_grads(F.linear, (np_(x).astype(np.float64), np_(w).astype(np.float64), np_(b).astype(np.float64)),
                order=1)


@pytest.mark.parametrize("nsp,stride,padding,dilation,groups", [
    (1, 1, 0, 1, 1), (1, 2, 1, 2, 2), (2, 1, "same", 2, 1), (2, 2, (1, 0), 1, 2), (2, 1, "valid", 1, 4),
    (3, 1, 1, 1, 1)])
def test_conv_matches_reference(nsp, stride, padding, dilation, groups):
    C, O = 4, 4
    x = rnd((2, C) + (7,) * nsp)
    w = rnd((O, C // groups) + (3,) * nsp, 1)
    b = rnd((O,), 2)
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nsp]
    got = fn(x, w, b, stride, padding, dilation, groups)
    s = (stride,) * nsp
    d = (dilation,) * nsp
    if padding == "same":
        pads = [((dd * 2) // 2, dd * 2 - (dd * 2) // 2) for dd in d]
    elif padding == "valid":
        pads = [(0, 0)] * nsp
    else:
        p = (padding,) * nsp if isinstance(padding, int) else padding
        pads = [(pp, pp) for pp in p]
    ref = conv_nd_ref(np_(x), np_(w), np_(b), s, pads, d, groups)
    np.testing.assert_allclose(np_(got), ref, rtol=1e-4, atol=1e-4)
    if padding == "same":
        assert got.shape[2:] == x.shape[2:]


def test_conv_unbatched_and_padding_modes():
    x = rnd((3, 6))
    w = rnd((2, 3, 3), 1)
    np.testing.assert_allclose(np_(F.conv1d(x, w)), np_(F.conv1d(x[None], w))[0], rtol=1e-6)
    from ember.nn.functional.conv import _conv
    for mode, npm in (("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")):
        got = _conv(x[None], w, None, 1, 1, 1, 1, 1, "conv1d", mode)
        ref = conv_nd_ref(np.pad(np_(x)[None], [(0, 0), (0, 0), (1, 1)], mode=npm), np_(w), None, (1,),
                          [(0, 0)], (1,), 1)
        np.testing.assert_allclose(np_(got), ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="strided"):
        F.conv1d(x, w, stride=2, padding="same")


def _conv_transpose_ref(x, w, b, stride, pad, out_pad, groups, dil):
    """Scatter form of the transposed convolution (float64), 1-d or 2-d."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    nsp = x.ndim - 2
    N, Cin = x.shape[:2]
    cog = w.shape[1]
    k = w.shape[2:]
    full = [(x.shape[2 + i] - 1) * stride[i] + dil[i] * (k[i] - 1) + 1 + out_pad[i] for i in range(nsp)]
    y = np.zeros((N, cog * groups) + tuple(full))
    cig = Cin // groups
    for n in range(N):
        for ci in range(Cin):
            g = ci // cig
            for idx in np.ndindex(*x.shape[2:]):
                for kk in np.ndindex(*k):
                    pos = tuple(idx[i] * stride[i] + kk[i] * dil[i] for i in range(nsp))
                    for co in range(cog):
                        y[(n, g * cog + co) + pos] += x[(n, ci) + idx] * w[(ci, co) + kk]
    sl = tuple(slice(pad[i], full[i] - pad[i]) for i in range(nsp))
    y = y[(slice(None), slice(None)) + sl]
    if b is not None:
        y += np.asarray(b, np.float64).reshape((1, -1) + (1,) * nsp)
    return y


@pytest.mark.parametrize("nsp,stride,padding,output_padding,groups,dilation", [
    (1, 2, 0, 1, 1, 1), (1, 3, 1, 2, 2, 1), (2, 2, 1, 1, 1, 1), (2, 1, 0, 0, 2, 2), (2, (2, 1), (1, 0), (1, 0), 1, 1)])
def test_conv_transpose_matches_reference(nsp, stride, padding, output_padding, groups, dilation):
    Cin, Cout = 4, 6
    x = rnd((2, Cin) + (4,) * nsp)
    w = rnd((Cin, Cout // groups) + (3,) * nsp, 1)
    b = rnd((Cout,), 2)
    fn = F.conv_transpose1d if nsp == 1 else F.conv_transpose2d
    got = fn(x, w, b, stride, padding, output_padding, groups, dilation)
    t = lambda v: (v,) * nsp if isinstance(v, int) else v  # noqa: E731
    ref = _conv_transpose_ref(np_(x), np_(w), np_(b), t(stride), t(padding), t(output_padding), groups,
                              t(dilation))
    np.testing.assert_allclose(np_(got), ref, rtol=1e-4, atol=1e-4)


def test_conv_grads():
    x = np.random.default_rng(0).standard_normal((1, 2, 5, 5))
    w = np.random.default_rng(1).standard_normal((2, 1, 3, 3))
    check_grads(lambda x, w: F.conv2d(x, w, None, 2, 1, 1, 2), (x, w), order=1)
    wt = np.random.default_rng(2).standard_normal((2, 3, 2, 2))
    check_grads(lambda x, w: F.conv_transpose2d(x, w, None, 2, 0, 1), (x, wt), order=1)


def _pool_ref(x, k, s, p, d, ceil_mode, op, count_include_pad=True):
    x = np.asarray(x, np.float64)
    nsp = x.ndim - 2
    outs = []
    for i in range(nsp):
        n = x.shape[2 + i]
        num = n + 2 * p[i] - d[i] * (k[i] - 1) - 1
        o = (-(-num // s[i]) if ceil_mode else num // s[i]) + 1
        if ceil_mode and (o - 1) * s[i] >= n + p[i]:
            o -= 1
        outs.append(o)
    y = np.zeros(x.shape[:2] + tuple(outs))
    for idx in np.ndindex(*outs):
        vals, cnt_pad = [], 0
        for kk in np.ndindex(*k):
            pos = [idx[i] * s[i] - p[i] + kk[i] * d[i] for i in range(nsp)]
            inside = all(0 <= pos[i] < x.shape[2 + i] for i in range(nsp))
            in_padded = all(-p[i] <= pos[i] < x.shape[2 + i] + p[i] for i in range(nsp))
            if inside:
                vals.append(x[(slice(None), slice(None)) + tuple(pos)])
            if in_padded:
                cnt_pad += 1
        if op == "max":
            y[(slice(None), slice(None)) + idx] = np.max(vals, axis=0)
        else:
            div = cnt_pad if count_include_pad else len(vals)
            y[(slice(None), slice(None)) + idx] = np.sum(vals, axis=0) / div
    return y


@pytest.mark.parametrize("nsp,k,s,p,d,ceil", [
    (1, 3, 2, 1, 1, False), (1, 2, 2, 0, 2, True), (2, 3, 2, 1, 1, True), (2, (2, 3), (1, 2), (1, 1), 1, False),
    (2, 2, 3, 0, 1, True)])
def test_pooling_matches_reference(nsp, k, s, p, d, ceil):
    x = rnd((2, 3) + (7,) * nsp)
    t = lambda v: (v,) * nsp if isinstance(v, int) else v  # noqa: E731
    mp = {1: F.max_pool1d, 2: F.max_pool2d}[nsp]
    np.testing.assert_allclose(np_(mp(x, k, s, p, d, ceil)),
                               _pool_ref(np_(x), t(k), t(s), t(p), t(d), ceil, "max"), rtol=1e-6)
    if d == 1:
        ap = {1: F.avg_pool1d, 2: F.avg_pool2d}[nsp]
        for cip in (True, False):
            np.testing.assert_allclose(np_(ap(x, k, s, p, ceil, cip)),
                                       _pool_ref(np_(x), t(k), t(s), t(p), (1,) * nsp, ceil, "avg", cip),
                                       rtol=1e-5, atol=1e-6)


def test_avg_pool_divisor_override_and_grads():
    x = rnd((1, 1, 4, 4))
    np.testing.assert_allclose(np_(F.avg_pool2d(x, 2, divisor_override=1)),
                               _pool_ref(np_(x), (2, 2), (2, 2), (0, 0), (1, 1), False, "avg") * 4, rtol=1e-5)
    xs = np.random.default_rng(0).standard_normal((1, 2, 5, 5))
    check_grads(lambda v: F.max_pool2d(v, 3, 2, 1), (xs,), order=1)
    check_grads(lambda v: F.avg_pool2d(v, 3, 2, 1, True, False), (xs,), order=1)


def _adaptive_ref(x, outs, op):
    x = np.asarray(x, np.float64)
    nsp = len(outs)
    y = np.zeros(x.shape[:2] + tuple(outs))
    for idx in np.ndindex(*outs):
        sl = []
        for i in range(nsp):
            n = x.shape[2 + i]
            a = (idx[i] * n) // outs[i]
            b = -(-((idx[i] + 1) * n) // outs[i])
            sl.append(slice(a, b))
        win = x[(slice(None), slice(None)) + tuple(sl)]
        axes = tuple(range(2, 2 + nsp))
        y[(slice(None), slice(None)) + idx] = win.mean(axes) if op == "avg" else win.max(axes)
    return y


@pytest.mark.parametrize("shape,out", [((2, 3, 7, 5), (3, 2)), ((1, 2, 4, 4), (4, 4)), ((1, 1, 10, 3), (4, 5))])
def test_adaptive_pooling(shape, out):
    x = rnd(shape)
    np.testing.assert_allclose(np_(F.adaptive_avg_pool2d(x, out)), _adaptive_ref(np_(x), out, "avg"), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(np_(F.adaptive_max_pool2d(x, out)), _adaptive_ref(np_(x), out, "max"), rtol=1e-6)
    np.testing.assert_allclose(np_(F.adaptive_avg_pool1d(x[:, :, 0], out[0])),
                               _adaptive_ref(np_(x)[:, :, 0], out[:1], "avg"), rtol=1e-5, atol=1e-6)
    assert F.adaptive_avg_pool2d(x, (None, 1)).shape == shape[:3] + (1,)


def test_normalization_functions():
    x = rnd((4, 6, 5))
    xn = np_(x).astype(np.float64)
    w, b = rnd((6,), 1), rnd((6,), 2)
    # batch norm (training statistics) and the running update
    mean = xn.mean((0, 2))
    var = xn.var((0, 2))
    out, rm, rv = F.batch_norm(x, enp.zeros(6), enp.ones(6), w, b, True, 0.1, 1e-5, return_stats=True)
    ref = (xn - mean[None, :, None]) / np.sqrt(var[None, :, None] + 1e-5)
    ref = ref * np_(w)[None, :, None] + np_(b)[None, :, None]
    np.testing.assert_allclose(np_(out), ref, rtol=1e-4, atol=1e-5)
    n = 4 * 5
    np.testing.assert_allclose(np_(rm), 0.1 * mean, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np_(rv), 0.9 + 0.1 * var * n / (n - 1), rtol=1e-5)
    # eval with running statistics
    ev = F.batch_norm(x, rm, rv, w, b, False)
    ref_ev = (xn - np_(rm)[None, :, None]) / np.sqrt(np_(rv)[None, :, None] + 1e-5) * np_(w)[None, :, None] \
        + np_(b)[None, :, None]
    np.testing.assert_allclose(np_(ev), ref_ev, rtol=1e-4, atol=1e-5)
    # layer norm
    ln = F.layer_norm(x, (6, 5), rnd((6, 5), 3), rnd((6, 5), 4))
    mu = xn.mean((1, 2), keepdims=True)
    sd = np.sqrt(xn.var((1, 2), keepdims=True) + 1e-5)
    np.testing.assert_allclose(np_(ln), (xn - mu) / sd * np_(rnd((6, 5), 3)) + np_(rnd((6, 5), 4)), rtol=1e-4,
                               atol=1e-5)
    # group norm
    gn = F.group_norm(x, 3, w, b)
    g = xn.reshape(4, 3, -1)
    gr = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(xn.shape)
    np.testing.assert_allclose(np_(gn), gr * np_(w)[None, :, None] + np_(b)[None, :, None], rtol=1e-4, atol=1e-5)
    # rms norm
    rn = F.rms_norm(x, (5,), rnd((5,), 5), eps=1e-6)
    np.testing.assert_allclose(np_(rn), xn / np.sqrt((xn ** 2).mean(-1, keepdims=True) + 1e-6) * np_(rnd((5,), 5)),
                               rtol=1e-4, atol=1e-5)
    # instance norm and normalize
    inn = F.instance_norm(x)
    ir = (xn - xn.mean(2, keepdims=True)) / np.sqrt(xn.var(2, keepdims=True) + 1e-5)
    np.testing.assert_allclose(np_(inn), ir, rtol=1e-4, atol=1e-5)
    nz = F.normalize(x, 2, 1)
    np.testing.assert_allclose(np_(nz), xn / np.linalg.norm(xn, axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(np_(F.normalize(x, 1, -1)), xn / np.abs(xn).sum(-1, keepdims=True), rtol=1e-5)
    check_grads(lambda v, w, b: F.layer_norm(v, (3,), w, b), (np.random.default_rng(0).standard_normal((2, 3)),
                                                              np.ones(3), np.zeros(3)), order=2)
    check_grads(lambda v: F.batch_norm(v, None, None, training=True),
                (np.random.default_rng(1).standard_normal((4, 2)),), order=1)
    check_grads(lambda v: F.group_norm(v, 2), (np.random.default_rng(2).standard_normal((2, 4, 3)),), order=1)


def test_dropout_functional():
    x = enp.ones((2000,))
    y = np_(F.dropout(x, 0.3, key=random.key(0)))
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.04
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    assert (np_(F.dropout(x, 0.3, training=False)) == 1).all()
    assert (np_(F.dropout(x, 1.0, key=random.key(0))) == 0).all()
    # same key, same mask; different keys, different masks
    assert (np_(F.dropout(x, 0.5, key=random.key(1))) == np_(F.dropout(x, 0.5, key=random.key(1)))).all()
    assert (np_(F.dropout(x, 0.5, key=random.key(1))) != np_(F.dropout(x, 0.5, key=random.key(2)))).any()
    z = np_(F.dropout2d(enp.ones((4, 8, 3, 3)), 0.5, key=random.key(0)))
    assert (z.min((2, 3)) == z.max((2, 3))).all()  # whole channels
    with pytest.raises(ValueError):
        F.dropout(x, 1.5)
    a = np_(F.alpha_dropout(rnd((20000,)), 0.2, True, key=random.key(0)))
    assert abs(a.mean()) < 0.05 and abs(a.std() - 1) < 0.05


def test_embedding_and_one_hot():
    w = rnd((5, 3))
    idx = enp.asarray([[0, 2], [4, 2]])
    np.testing.assert_allclose(np_(F.embedding(idx, w)), np_(w)[np_(idx)])
    # the padding row gets no gradient
    g = ember.grad(lambda w: F.embedding(idx, w, padding_idx=2).sum())(w)
    assert np_(g)[2].tolist() == [0.0] * 3 and np_(g)[0].tolist() == [1.0] * 3
    out = np_(F.embedding(idx, w * 10, max_norm=1.0))
    assert (np.linalg.norm(out, axis=-1) <= 1.0 + 1e-5).all()
    oh = np_(F.one_hot(enp.asarray([0, 3, 1]), 4))
    np.testing.assert_array_equal(oh, np.eye(4, dtype=np.int32)[[0, 3, 1]])
    assert F.one_hot(enp.asarray([[1, 2]])).shape == (1, 2, 3)
    bag = F.embedding_bag(idx, w, mode="sum")
    np.testing.assert_allclose(np_(bag), np_(w)[np_(idx)].sum(1), rtol=1e-6)
    with pytest.raises(TypeError):
        F.embedding(enp.asarray([0.5]), w)


def test_pad_modes():
    x = rnd((2, 3, 4))
    xn = np_(x)
    np.testing.assert_array_equal(np_(F.pad(x, (1, 2))), np.pad(xn, [(0, 0), (0, 0), (1, 2)]))
    np.testing.assert_array_equal(np_(F.pad(x, (1, 0, 0, 2), value=7.0)),
                                  np.pad(xn, [(0, 0), (0, 2), (1, 0)], constant_values=7.0))
    np.testing.assert_array_equal(np_(F.pad(x, (-1, 1))), np.pad(xn, [(0, 0), (0, 0), (0, 1)])[..., 1:])
    for mode, npm in (("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")):
        np.testing.assert_array_equal(np_(F.pad(x, (2, 1, 1, 1), mode=mode)),
                                      np.pad(xn, [(0, 0), (1, 1), (2, 1)], mode=npm))
    with pytest.raises(ValueError):
        F.pad(x, (1,))


def _interp_ref_1d(x, out, mode, align, scale=None):
    """Per-axis reference written from PyTorch's documented coordinate formulas."""
    n = x.shape[-1]
    s = (n / out) if scale is None else 1.0 / scale
    y = np.zeros(x.shape[:-1] + (out,))
    for o in range(out):
        if mode == "nearest":
            y[..., o] = x[..., min(int(math.floor(o * s)), n - 1)]
        elif mode == "nearest-exact":
            y[..., o] = x[..., min(int(math.floor((o + 0.5) * s)), n - 1)]
        else:
            if align:
                src = o * (n - 1) / (out - 1) if out > 1 else 0.0
            else:
                src = max((o + 0.5) * s - 0.5, 0.0)
            i0 = min(int(math.floor(src)), n - 1)
            i1 = min(i0 + 1, n - 1)
            lam = src - i0
            y[..., o] = x[..., i0] * (1 - lam) + x[..., i1] * lam
    return y


@pytest.mark.parametrize("mode,align", [("nearest", None), ("nearest-exact", None), ("bilinear", False),
                                        ("bilinear", True)])
@pytest.mark.parametrize("size", [(7, 3), (2, 8)])
def test_interpolate(mode, align, size):
    x = rnd((2, 3, 4, 5))
    got = F.interpolate(x, size=size, mode=mode, align_corners=align)
    m = "linear" if mode == "bilinear" else mode
    ref = np_(x).astype(np.float64)
    ref = np.swapaxes(_interp_ref_1d(np.swapaxes(ref, 2, 3), size[0], m, align), 2, 3)
    ref = _interp_ref_1d(ref, size[1], m, align)
    np.testing.assert_allclose(np_(got), ref, rtol=1e-5, atol=1e-5)


def test_interpolate_scale_factor_and_linear():
    x = rnd((1, 2, 5))
    got = F.interpolate(x, scale_factor=1.5, mode="linear")
    np.testing.assert_allclose(np_(got), _interp_ref_1d(np_(x).astype(np.float64), 7, "linear", False, 1.5),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError):
        F.interpolate(x, size=3, mode="bilinear")
    check_grads(lambda v: F.interpolate(v, size=(3, 4), mode="bilinear", align_corners=True),
                (np.random.default_rng(0).standard_normal((1, 1, 2, 3)),), order=1)


def test_pixel_shuffle_roundtrip():
    x = rnd((2, 8, 3, 3))
    y = F.pixel_shuffle(x, 2)
    ref = np_(x).reshape(2, 2, 2, 2, 3, 3).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 6)
    np.testing.assert_array_equal(np_(y), ref)
    np.testing.assert_array_equal(np_(F.pixel_unshuffle(y, 2)), np_(x))


def test_unfold_matches_patches():
    x = rnd((1, 2, 4, 4))
    u = np_(F.unfold(x, 2, stride=2))
    xn = np_(x)
    cols = []
    for i in range(2):
        for j in range(2):
            cols.append(xn[0, :, 2 * i:2 * i + 2, 2 * j:2 * j + 2].reshape(-1))
    np.testing.assert_allclose(u[0], np.stack(cols, 1), rtol=1e-6)


def test_functional_ops_compose_with_transforms():
    x = rnd((3, 4, 6))

    def f(v):
        return F.gelu(F.layer_norm(F.conv1d(v, enp.ones((2, 4, 3)) * 0.1, padding=1), (6,))).sum()
    g = ember.grad(f)(x)
    gj = ember.jit(ember.grad(f))(x)
    np.testing.assert_allclose(np_(g), np_(gj), rtol=1e-4, atol=1e-5)
    gv = ember.vmap(ember.grad(f))(x[:, None])
    np.testing.assert_allclose(np_(gv)[:, 0], np_(ember.vmap(ember.grad(lambda v: f(v[None])))(x)), rtol=1e-4,
                               atol=1e-5)
