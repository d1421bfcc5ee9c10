"""PyTorch 2.x parity of ember.nn layers and functional ops (values computed with
torch offline and written here as literals, or computed with numpy in the test)."""
import warnings

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn
from ember.nn import functional as F


def f64(v):
    return enp.asarray(np.asarray(v, np.float64))


def grad_at(fn, points, **kw):
    return np.asarray(ember.grad(lambda t: enp.sum(fn(t, **kw)))(f64(points))).tolist()


# -- activation derivatives at kinks (torch.autograd values) -------------------------

@pytest.mark.parametrize("name, fn, points, kw, expected", [
    ("relu", F.relu, [0.0], {}, [0.0]),
    ("relu6", F.relu6, [0.0, 6.0], {}, [0.0, 0.0]),
    ("hardtanh", F.hardtanh, [-1.0, 1.0], {}, [0.0, 0.0]),
    ("hardtanh_bounds", F.hardtanh, [-2.0, 3.0], dict(min_val=-2.0, max_val=3.0), [0.0, 0.0]),
    ("hardsigmoid", F.hardsigmoid, [-3.0, 3.0], {}, [0.0, 0.0]),
    ("hardswish", F.hardswish, [-3.0, 3.0], {}, [0.0, 1.0]),
    ("leaky_relu", F.leaky_relu, [0.0], dict(negative_slope=0.2), [0.2]),
    ("elu", F.elu, [0.0], dict(alpha=2.0), [2.0]),
    ("celu", F.celu, [0.0], dict(alpha=2.0), [1.0]),
    ("selu", F.selu, [0.0], {}, [1.7580993408473766]),
    ("threshold", lambda t: F.threshold(t, 1.0, 5.0), [1.0], {}, [0.0]),
    ("softshrink", F.softshrink, [-0.5, 0.5], {}, [0.0, 0.0]),
    ("hardshrink", F.hardshrink, [-0.5, 0.5], {}, [0.0, 0.0]),
])
def test_activation_derivative_at_kink_matches_torch(name, fn, points, kw, expected):
    np.testing.assert_allclose(grad_at(fn, points, **kw), expected, rtol=1e-12)


def test_prelu_derivative_at_zero_is_the_weight():
    gx, gw = ember.grad(lambda x, w: enp.sum(F.prelu(x, w)), argnums=(0, 1))(f64([0.0]), f64([0.25]))
    assert np.asarray(gx).tolist() == [0.25] and np.asarray(gw).tolist() == [0.0]


def test_kink_fix_keeps_values_and_nan():
    x = f64([np.nan, -1.0, 0.0, 2.0, 7.0])
    np.testing.assert_array_equal(np.asarray(F.relu(x)), [np.nan, 0.0, 0.0, 2.0, 7.0])
    np.testing.assert_array_equal(np.asarray(F.relu6(x)), [np.nan, 0.0, 0.0, 2.0, 6.0])
    assert F.relu(enp.asarray([-1, 3])).tolist() == [0, 3]
    np.testing.assert_allclose(np.asarray(F.elu(f64([-1.0, 0.0, 800.0]))),
                               [np.expm1(-1.0), 0.0, 800.0])


def test_hardtanh_bounds_are_checked_like_torch():
    with pytest.raises(ValueError, match="max_val"):
        nn.Hardtanh(1.0, 1.0)
    with pytest.raises(ValueError, match="max_val"):
        nn.Hardtanh(2.0, 1.0)
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(enp.ones(2), 2.0, 1.0)
    # torch's functional form accepts min_val == max_val
    assert F.hardtanh(enp.asarray([3.0]), 1.0, 1.0).tolist() == [1.0]


# -- instance norm running statistics, functional norms and their running stats ------

def _inorm_running_ref(x, rm, rv, m):
    n = np.prod(x.shape[2:])
    axes = tuple(range(2, x.ndim))
    mean = x.mean(axis=axes).mean(axis=0)
    var = (x.var(axis=axes) * n / (n - 1)).mean(axis=0)
    return (1 - m) * rm + m * mean, (1 - m) * rv + m * var


@pytest.mark.parametrize("cls, shape", [(nn.InstanceNorm1d, (2, 3, 5)), (nn.InstanceNorm2d, (2, 3, 2, 3)),
                                        (nn.InstanceNorm3d, (2, 3, 2, 2, 2))])
def test_instance_norm_running_stats_like_torch(cls, shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    m = cls(3, track_running_stats=True)
    # torch: ['running_mean', 'running_var', 'num_batches_tracked']
    assert list(m.state_dict()) == ["running_mean", "running_var", "num_batches_tracked"]
    m(enp.asarray(x))
    m(enp.asarray(2 * x))
    rm, rv = _inorm_running_ref(x, np.zeros(3), np.ones(3), 0.1)
    rm, rv = _inorm_running_ref(2 * x, rm, rv, 0.1)
    np.testing.assert_allclose(np.asarray(m.running_mean), rm, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(m.running_var), rv, rtol=1e-5)
    # torch's InstanceNorm never advances num_batches_tracked
    assert int(m.num_batches_tracked) == 0
    m.eval()
    y = np.asarray(m(enp.asarray(x)))
    cs = (1, 3) + (1,) * (len(shape) - 2)
    np.testing.assert_allclose(y, (x - rm.reshape(cs)) / np.sqrt(rv.reshape(cs) + 1e-5), rtol=1e-4, atol=1e-5)


def test_instance_norm_momentum_none_keeps_running_stats_like_torch():
    # torch passes momentum=None on to F.instance_norm as 0.0: nothing moves
    m = nn.InstanceNorm1d(3, track_running_stats=True, momentum=None)
    m(enp.asarray(np.random.default_rng(1).standard_normal((2, 3, 5)).astype(np.float32)))
    assert m.running_mean.tolist() == [0.0, 0.0, 0.0] and m.running_var.tolist() == [1.0, 1.0, 1.0]
    assert int(m.num_batches_tracked) == 0


def test_instance_norm3d_matches_numpy_and_torch_repr():
    x = np.random.default_rng(2).standard_normal((2, 2, 3, 2, 2))
    y = np.asarray(nn.InstanceNorm3d(2)(f64(x)))
    mu = x.mean(axis=(2, 3, 4), keepdims=True)
    np.testing.assert_allclose(y, (x - mu) / np.sqrt(x.var(axis=(2, 3, 4), keepdims=True) + 1e-5), rtol=1e-10)
    assert np.asarray(nn.InstanceNorm3d(2)(f64(x[0]))).shape == (2, 3, 2, 2)
    assert repr(nn.InstanceNorm3d(3)) == ("InstanceNorm3d(3, eps=1e-05, momentum=0.1, affine=False, "
                                          "bias=False, track_running_stats=False)")
    with pytest.raises(ValueError, match="5D"):
        nn.InstanceNorm3d(2)(f64(x[0, 0, 0]))
    with pytest.raises(ValueError, match="num_features"):
        nn.InstanceNorm3d(3)(f64(x))


def test_functional_norms_refuse_to_drop_the_running_update():
    x = enp.asarray(np.random.default_rng(3).standard_normal((4, 2, 3)).astype(np.float32))
    with pytest.raises(ValueError, match="return_stats=True"):
        F.batch_norm(x, enp.zeros(2), enp.ones(2), training=True)
    with pytest.raises(ValueError, match="return_stats=True"):
        F.instance_norm(x, enp.zeros(2), enp.ones(2))
    # evaluation with running stats, and training without them, stay as they were
    F.batch_norm(x, enp.zeros(2), enp.ones(2), training=False)
    F.batch_norm(x, None, None, training=True)
    out, rm, rv = F.instance_norm(x, enp.zeros(2), enp.ones(2), momentum=0.2, return_stats=True)
    erm, erv = _inorm_running_ref(np.asarray(x), np.zeros(2), np.ones(2), 0.2)
    np.testing.assert_allclose(np.asarray(rm), erm, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(rv), erv, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(out), np.asarray(F.instance_norm(x)), rtol=1e-6)
    out2, rm2, rv2 = F.instance_norm(x, rm, rv, use_input_stats=False, return_stats=True)
    assert rm2 is rm and rv2 is rv


@pytest.mark.parametrize("p", [2, 1, float("inf"), 3])
def test_normalize_zero_vector_has_torch_gradient(p):
    # torch.autograd: every entry of a zero row gets grad_out / eps = 1e12
    x = f64([[0.0, 0.0, 0.0], [1.0, 2.0, 2.0]])
    w = f64([[1.0, 2.0, 3.0]])
    g = np.asarray(ember.grad(lambda v: enp.sum(F.normalize(v, p=p) * w))(x))
    np.testing.assert_allclose(g[0], [1e12, 2e12, 3e12], rtol=1e-12)
    if p == 2:
        np.testing.assert_allclose(g[1], [-0.07407407407407413, -0.14814814814814825, 0.18518518518518512],
                                   rtol=1e-10)
    xr = np.array([1.0, 2.0, 2.0])
    np.testing.assert_allclose(np.asarray(F.normalize(x, p=p))[1], xr / np.linalg.norm(xr, p), rtol=1e-12)


# -- dropout2d layouts (torch 2.x) ------------------------------------------------

def test_dropout2d_on_3d_input_is_channelwise_over_n_c_l_with_a_warning():
    from ember import random
    with pytest.warns(UserWarning, match=r"3-d input, read as \(N, C, L\)"):
        y = np.asarray(F.dropout2d(enp.ones((8, 16, 5)), 0.5, key=random.key(0)))
    assert set(np.unique(y)) <= {0.0, 2.0}
    # whole (n, c) rows are kept or dropped ...
    assert (y == y[..., :1]).all()
    # ... drawn per sample: torch does not read (8, 16, 5) as one unbatched (C, H, W)
    assert not (y[:, :, 0] == y[:1, :, 0]).all()
    with pytest.warns(UserWarning, match="3-d input"):
        y = nn.Dropout2d(0.5)(enp.ones((8, 16, 5)))
    assert (np.asarray(y) == np.asarray(y)[..., :1]).all()


def test_dropout2d_3d_warns_in_eval_too_and_other_ranks_follow_torch():
    from ember import random
    with pytest.warns(UserWarning, match="3-d input"):
        assert F.dropout2d(enp.ones((2, 3, 4)), training=False).tolist() == np.ones((2, 3, 4)).tolist()
    with pytest.warns(UserWarning, match="2-d input, which is deprecated"):
        y = np.asarray(F.dropout2d(enp.ones((40, 50)), 0.5, key=random.key(1)))
    assert 0 < (y == 0).mean() < 1 and set(np.unique(y)) <= {0.0, 2.0}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = np.asarray(F.dropout3d(enp.ones((6, 3, 4, 5)), 0.5, key=random.key(2)))  # unbatched (C, D, H, W)
        assert (y == y[:, :1, :1, :1]).all()
        F.dropout2d(enp.ones((2, 3, 4, 5)), 0.5, key=random.key(3))
    with pytest.raises(ValueError, match="dropout1d: expected a 2-d"):
        F.dropout1d(enp.ones((2, 3, 4, 5)))


# -- attention with a fully masked row (torch 2.x: zeros, finite gradients) ---------

def _np_attention(q, k, v, allowed):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    s = np.where(allowed, s, -np.inf)
    out = np.zeros(q.shape[:-1] + (v.shape[-1],))
    for i in range(q.shape[-2]):
        if allowed[i].any():
            w = np.exp(s[..., i, :] - s[..., i, :].max(-1, keepdims=True))
            out[..., i, :] = (w / w.sum(-1, keepdims=True)) @ v
    return out


@pytest.mark.parametrize("float_mask", [False, True])
@pytest.mark.parametrize("chunked", [False, True])
def test_sdpa_fully_masked_row_is_zero_with_finite_grad(float_mask, chunked):
    rng = np.random.default_rng(4)
    q, k, v = rng.standard_normal((1, 3, 4)), rng.standard_normal((1, 5, 4)), rng.standard_normal((1, 5, 4))
    allowed = np.ones((3, 5), bool)
    allowed[1] = False
    allowed[2, 3:] = False
    mask = enp.asarray(np.where(allowed, 0.0, -np.inf)) if float_mask else enp.asarray(allowed)

    def attend(q_, k_, v_, m=mask):
        if chunked:
            return F.chunked_scaled_dot_product_attention(q_, k_, v_, attn_mask=m, chunk_size=2)
        return F.scaled_dot_product_attention(q_, k_, v_, attn_mask=m)

    out = np.asarray(attend(f64(q), f64(k), f64(v)))
    np.testing.assert_allclose(out, _np_attention(q, k, v, allowed), rtol=1e-10, atol=1e-12)
    assert (out[0, 1] == 0).all()
    gq, gk, gv = ember.grad(lambda a, b, c: enp.sum(attend(a, b, c)), argnums=(0, 1, 2))(f64(q), f64(k), f64(v))
    gq, gk, gv = np.asarray(gq), np.asarray(gk), np.asarray(gv)
    assert np.isfinite(gq).all() and np.isfinite(gk).all() and np.isfinite(gv).all()
    assert (gq[0, 1] == 0).all()
    # the other rows' gradients are those of the problem without the masked row
    keep = [0, 2]
    sub = mask[np.array(keep)]
    sq, sk, sv = ember.grad(lambda a, b, c: enp.sum(attend(a, b, c, sub)), argnums=(0, 1, 2))(
        f64(q[:, keep]), f64(k), f64(v))
    np.testing.assert_allclose(gq[:, keep], np.asarray(sq), rtol=1e-10)
    np.testing.assert_allclose(gk, np.asarray(sk), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(gv, np.asarray(sv), rtol=1e-10, atol=1e-14)


# -- pooling ties: the gradient goes to the first maximum (torch.autograd values) ----

_TIES = np.array([[[[1., 3., 3., 0., 2.], [3., 1., 0., 3., 3.], [2., 2., 1., 1., 2.], [0., 3., 3., 2., 2.]]]])


def test_adaptive_max_pool_ties_send_gradient_to_first_max_like_torch():
    g2 = np.asarray(ember.grad(lambda t: enp.sum(F.adaptive_max_pool2d(t, (2, 3))))(f64(_TIES)))
    np.testing.assert_array_equal(g2[0, 0], [[0, 2, 0, 0, 0], [0, 0, 0, 1, 0], [0, 0, 0, 0, 1], [0, 2, 0, 0, 0]])
    g1 = np.asarray(ember.grad(lambda t: enp.sum(F.adaptive_max_pool1d(t, 3)))(f64(_TIES[0])))
    np.testing.assert_array_equal(g1[0], [[0, 2, 0, 0, 1], [1, 0, 0, 2, 0], [1, 1, 0, 0, 1], [0, 2, 0, 1, 0]])


def test_adaptive_max_pool_values_match_numpy_boxes():
    x = np.random.default_rng(5).standard_normal((2, 3, 7, 5))
    y = np.asarray(F.adaptive_max_pool2d(f64(x), (3, 4)))
    for i in range(3):
        for j in range(4):
            h0, h1 = (i * 7) // 3, -(-((i + 1) * 7) // 3)
            w0, w1 = (j * 5) // 4, -(-((j + 1) * 5) // 4)
            np.testing.assert_array_equal(y[:, :, i, j], x[:, :, h0:h1, w0:w1].max(axis=(2, 3)))
    assert np.isnan(np.asarray(F.adaptive_max_pool1d(f64([[1.0, np.nan, 3.0]]), 2))).all()
    assert F.adaptive_max_pool2d(f64(x[0]), (None, 2)).shape == (3, 7, 2)


def test_max_pool_ties_already_match_torch():
    g = np.asarray(ember.grad(lambda t: enp.sum(F.max_pool2d(t, 2, 1)))(f64(_TIES)))
    np.testing.assert_array_equal(g[0, 0], [[0, 2, 1, 0, 0], [1, 0, 0, 3, 0], [0, 1, 0, 0, 1],
                                            [0, 2, 1, 0, 0]])


# -- embeddings ---------------------------------------------------------------------

_W = np.random.default_rng(6).standard_normal((5, 3))
_IDX = np.array([[0, 1, 1], [4, 1, 0]])
_G = np.arange(18.0).reshape(2, 3, 3)


def _scatter(idx, g, n, scale=None):
    out = np.zeros((n, g.shape[-1]))
    for pos in np.ndindex(*idx.shape):
        out[idx[pos]] += g[pos] * (1.0 if scale is None else scale[pos])
    return out


def _emb_grad(w, **kw):
    return np.asarray(ember.grad(lambda t: enp.sum(F.embedding(enp.asarray(_IDX), t, **kw) * f64(_G)))(f64(w)))


def test_embedding_scale_grad_by_freq_divides_by_index_frequency():
    counts = np.bincount(_IDX.ravel(), minlength=5)
    expected = _scatter(_IDX, _G, 5, 1.0 / counts[_IDX])
    np.testing.assert_allclose(_emb_grad(_W, scale_grad_by_freq=True), expected, rtol=1e-12)
    # torch: row 0 = ([0, 1, 2] + [15, 16, 17]) / 2, row 1 = three hits / 3
    np.testing.assert_allclose(expected[:2], [[7.5, 8.5, 9.5], [7.0, 8.0, 9.0]])
    expected[1] = 0.0
    np.testing.assert_allclose(_emb_grad(_W, scale_grad_by_freq=True, padding_idx=1), expected, rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(F.embedding(enp.asarray(_IDX), f64(_W), scale_grad_by_freq=True)),
                                  _W[_IDX])


def test_embedding_max_norm_output_and_gradient_like_torch():
    w = 3 * _W
    for norm_type in (2.0, 1.0):
        norms = np.linalg.norm(w, norm_type, axis=1, keepdims=True)
        renormed = np.where(norms > 1.0, w * (1.0 / (norms + 1e-7)), w)
        out = np.asarray(F.embedding(enp.asarray(_IDX), f64(w), max_norm=1.0, norm_type=norm_type))
        np.testing.assert_allclose(out, renormed[_IDX], rtol=1e-12)
        # torch renormalises the table without recording it: the gradient is unscaled
        np.testing.assert_allclose(_emb_grad(w, max_norm=1.0, norm_type=norm_type), _scatter(_IDX, _G, 5),
                                   rtol=1e-12)


def test_embedding_layer_renormalises_its_table_in_place_when_eager():
    w = 3 * _W
    m = nn.Embedding(5, 3, max_norm=1.0, _weight=f64(w))
    m(enp.asarray(np.array([[0, 4]])))
    norms = np.linalg.norm(w, axis=1, keepdims=True)
    expected = w.copy()
    expected[[0, 4]] = (w * (1.0 / (norms + 1e-7)))[[0, 4]]  # only the looked-up rows, as torch
    np.testing.assert_allclose(np.asarray(m.weight), expected, rtol=1e-12)
    # under a transform the table is a traced argument: the module keeps its own
    before = np.asarray(m.weight)
    g = ember.grad(lambda p: enp.sum(nn.functional_call(m, p, enp.asarray([1, 2]))[0]))(m.parameters())
    assert np.isfinite(np.asarray(g["weight"])).all()
    np.testing.assert_array_equal(np.asarray(m.weight), before)


def test_embedding_negative_padding_idx_and_out_of_range():
    assert nn.Embedding(5, 3, padding_idx=-2).padding_idx == 3
    assert nn.EmbeddingBag(5, 3, padding_idx=-1).padding_idx == 4
    assert np.asarray(nn.EmbeddingBag(5, 3, padding_idx=-1).weight)[4].tolist() == [0.0, 0.0, 0.0]
    g = _emb_grad(_W, padding_idx=-1)  # row 4
    assert (g[4] == 0).all() and (g[0] != 0).all()
    with pytest.raises(ValueError, match="padding_idx"):
        F.embedding(enp.asarray([0]), f64(_W), padding_idx=5)
    for bad in (5, -1):
        with pytest.raises(IndexError, match="index out of range in self"):
            F.embedding(enp.asarray([0, bad]), f64(_W))
        with pytest.raises(IndexError, match="index out of range in self"):
            F.embedding_bag(enp.asarray([[0, bad]]), f64(_W))


_BAG_IN = np.array([0, 2, 1, 4, 1, 3])
_BAG_OFF = np.array([0, 2, 5])


def test_embedding_bag_per_sample_weights_sum_only():
    psw = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    gw, gp = ember.grad(lambda w, p: enp.sum(F.embedding_bag(enp.asarray(_BAG_IN), w, enp.asarray(_BAG_OFF),
                                                             mode="sum", per_sample_weights=p)),
                        argnums=(0, 1))(f64(_W), f64(psw))
    out = np.asarray(F.embedding_bag(enp.asarray(_BAG_IN), f64(_W), enp.asarray(_BAG_OFF), mode="sum",
                                     per_sample_weights=f64(psw)))
    rows = _W[_BAG_IN] * psw[:, None]
    np.testing.assert_allclose(out, [rows[0:2].sum(0), rows[2:5].sum(0), rows[5:].sum(0)], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gp), _W[_BAG_IN].sum(1), rtol=1e-12)
    # torch: [[1]*3, [8]*3, [2]*3, [6]*3, [4]*3]
    np.testing.assert_allclose(np.asarray(gw), np.repeat([[1.0], [8.0], [2.0], [6.0], [4.0]], 3, axis=1))
    nn_out = nn.EmbeddingBag(5, 3, mode="sum", _weight=f64(_W))(enp.asarray(_BAG_IN), enp.asarray(_BAG_OFF),
                                                                per_sample_weights=f64(psw))
    np.testing.assert_allclose(np.asarray(nn_out), out, rtol=1e-12)
    for mode in ("mean", "max"):
        with pytest.raises(ValueError, match="only supported for mode='sum'"):
            F.embedding_bag(enp.asarray(_BAG_IN), f64(_W), enp.asarray(_BAG_OFF), mode=mode,
                            per_sample_weights=f64(psw))


def test_embedding_bag_max_leaves_padding_out():
    w = -np.abs(_W) - 0.5  # all negative: a zeroed padding row would win a naive max
    idx = np.array([[1, 1], [0, 1], [2, 3]])
    for mode in ("sum", "mean", "max"):
        out = np.asarray(F.embedding_bag(enp.asarray(idx), f64(w), mode=mode, padding_idx=1))
        red = {"sum": np.sum, "mean": np.mean, "max": np.max}[mode]
        np.testing.assert_allclose(out, [np.zeros(3), w[0], red(w[[2, 3]], axis=0)], rtol=1e-12)
    # the max's gradient goes to the winning row only (first on ties, as torch)
    ties = np.array([[1.0, 2.0], [1.0, 0.0], [3.0, 1.0]])
    g = np.asarray(ember.grad(lambda t: enp.sum(F.embedding_bag(enp.asarray([[0, 1, 2]]), t, mode="max",
                                                                padding_idx=2)))(f64(ties)))
    np.testing.assert_array_equal(g, [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]])


def test_embedding_bag_offsets_layouts():
    w = _W.astype(np.float32)
    for offs, last in (([0, 2, 5], False), ([0, 2, 2, 6], False), ([0, 2, 5], True)):
        out = np.asarray(F.embedding_bag(enp.asarray(_BAG_IN), enp.asarray(w), enp.asarray(offs), mode="mean",
                                         include_last_offset=last))
        bounds = list(zip(offs[:-1], offs[1:])) if last else list(zip(offs, offs[1:] + [len(_BAG_IN)]))
        ref = [w[_BAG_IN[a:b]].mean(0) if b > a else np.zeros(3) for a, b in bounds]
        np.testing.assert_allclose(out, ref, rtol=1e-6)


def test_embedding_bag_scale_grad_by_freq_and_max_norm():
    g = np.asarray(ember.grad(lambda t: enp.sum(F.embedding_bag(enp.asarray(_BAG_IN), t, enp.asarray(_BAG_OFF),
                                                                mode="sum", scale_grad_by_freq=True)))(f64(_W)))
    # every row gets (hits / frequency) = 1: the documented rule; torch 2.13's CPU
    # kernel divides row 2 by the wrong count (pytorch/pytorch#190063), so not its value
    np.testing.assert_allclose(g, np.ones((5, 3)), rtol=1e-12)
    w = 3 * _W
    norms = np.linalg.norm(w, axis=1, keepdims=True)
    rows = np.where(norms > 1.0, w / (norms + 1e-7), w)[_BAG_IN]
    out = np.asarray(F.embedding_bag(enp.asarray(_BAG_IN), f64(w), enp.asarray(_BAG_OFF), mode="sum", max_norm=1.0))
    np.testing.assert_allclose(out, [rows[0:2].sum(0), rows[2:5].sum(0), rows[5:].sum(0)], rtol=1e-12)


def test_embedding_reprs_match_torch():
    assert repr(nn.EmbeddingBag(5, 3, padding_idx=-1, mode="max")) == "EmbeddingBag(5, 3, mode='max', padding_idx=4)"
    assert repr(nn.EmbeddingBag(5, 3)) == "EmbeddingBag(5, 3, mode='mean')"
    assert repr(nn.Embedding(5, 3, max_norm=1.0, scale_grad_by_freq=True)) == \
        "Embedding(5, 3, max_norm=1.0, scale_grad_by_freq=True)"
    kw = dict(max_norm=2.0, norm_type=1.0, scale_grad_by_freq=True, sparse=True, padding_idx=1)
    assert repr(nn.Embedding(5, 3, **kw)) == \
        "Embedding(5, 3, padding_idx=1, max_norm=2.0, norm_type=1.0, scale_grad_by_freq=True, sparse=True)"
    assert repr(nn.EmbeddingBag(5, 3, **kw)) == \
        "EmbeddingBag(5, 3, max_norm=2.0, norm_type=1.0, scale_grad_by_freq=True, mode='mean', padding_idx=1)"


# -- padding layers (torch reprs; values vs numpy.pad, which torch agrees with) -----

_PAD_X = np.random.default_rng(7).standard_normal((2, 3, 4, 5, 6))


@pytest.mark.parametrize("name, args, ndim, np_mode, kw, expected_repr", [
    ("ZeroPad1d", (2,), 4, "constant", {}, "ZeroPad1d((2, 2))"),
    ("ZeroPad2d", ((1, 1, 2, 0),), 4, "constant", {}, "ZeroPad2d((1, 1, 2, 0))"),
    ("ZeroPad3d", (1,), 5, "constant", {}, "ZeroPad3d((1, 1, 1, 1, 1, 1))"),
    ("ConstantPad1d", (2, 3.5), 3, "constant", dict(constant_values=3.5), "ConstantPad1d(padding=(2, 2), value=3.5)"),
    ("ConstantPad2d", ((1, 2, 3, 4), 1.0), 4, "constant", dict(constant_values=1.0),
     "ConstantPad2d(padding=(1, 2, 3, 4), value=1.0)"),
    ("ConstantPad3d", (1, -2.0), 5, "constant", dict(constant_values=-2.0),
     "ConstantPad3d(padding=(1, 1, 1, 1, 1, 1), value=-2.0)"),
    ("ReflectionPad1d", ((1, 2),), 3, "reflect", {}, "ReflectionPad1d((1, 2))"),
    ("ReflectionPad2d", ((1, 1, 2, 0),), 4, "reflect", {}, "ReflectionPad2d((1, 1, 2, 0))"),
    ("ReflectionPad3d", (1,), 5, "reflect", {}, "ReflectionPad3d((1, 1, 1, 1, 1, 1))"),
    ("ReplicationPad1d", ((3, 0),), 3, "edge", {}, "ReplicationPad1d((3, 0))"),
    ("ReplicationPad2d", (2,), 4, "edge", {}, "ReplicationPad2d((2, 2, 2, 2))"),
    ("ReplicationPad3d", ((1, 0, 2, 1, 0, 3),), 5, "edge", {}, "ReplicationPad3d((1, 0, 2, 1, 0, 3))"),
    ("CircularPad1d", (3,), 3, "wrap", {}, "CircularPad1d((3, 3))"),
    ("CircularPad2d", ((1, 2, 0, 3),), 4, "wrap", {}, "CircularPad2d((1, 2, 0, 3))"),
    ("CircularPad3d", ((1, 0, 1, 0, 1, 0),), 5, "wrap", {}, "CircularPad3d((1, 0, 1, 0, 1, 0))"),
])
def test_padding_layers_match_torch(name, args, ndim, np_mode, kw, expected_repr):
    m = getattr(nn, name)(*args)
    assert repr(m) == expected_repr
    p = m.padding
    n = len(p) // 2
    for d in (ndim, ndim - 1):  # batched and unbatched
        x = _PAD_X[(0,) * (5 - d)]
        widths = [(0, 0)] * (d - n) + [(p[2 * i], p[2 * i + 1]) for i in reversed(range(n))]
        np.testing.assert_array_equal(np.asarray(m(f64(x))), np.pad(x, widths, mode=np_mode, **kw))


def test_padding_layers_negative_widths_and_errors_like_torch():
    x = f64([[[0.0, 1.0, 2.0]]])
    assert nn.CircularPad1d((-1, 2))(x).tolist() == [[[1.0, 2.0, 1.0, 2.0]]]  # torch's value
    assert nn.ZeroPad1d((-1, 2))(x).tolist() == [[[1.0, 2.0, 0.0, 0.0]]]
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        nn.CircularPad2d(1)(f64(np.ones((2, 3))))
    with pytest.raises(ValueError, match="wraps around more than once"):
        nn.CircularPad1d(4)(x)
    with pytest.raises(ValueError, match="smaller than the dimension"):
        nn.ReflectionPad1d(3)(x)
    with pytest.raises(ValueError, match="tuple of 4 ints"):
        nn.ZeroPad2d((1, 2, 3))
    g = ember.grad(lambda t: enp.sum(nn.ReflectionPad1d(2)(t) * f64(np.arange(7.0))))(x)
    # reflect: [2 1 0 1 2 1 0] taps -> x0 gets 2+6, x1 1+3+5, x2 0+4
    assert np.asarray(g).tolist() == [[[8.0, 9.0, 4.0]]]
