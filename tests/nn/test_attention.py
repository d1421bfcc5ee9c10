"""Attention: SDPA against numpy (masks, causal, scale, GQA, dropout), the chunked
variant against the dense one (values and gradients), MultiheadAttention and the
transformer layers against PyTorch."""
import numpy as np
import pytest
import scipy.special as sp

import ember
import ember.numpy as enp
from ember import nn, random
from ember.nn import functional as F

from _nn_helpers import copy_to_torch, np_, rnd, to_torch, value_shapes


def _sdpa_np(q, k, v, mask=None, causal=False, scale=None):
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) * (1 / np.sqrt(q.shape[-1]) if scale is None else scale)
    if causal:
        mask = np.tril(np.ones(s.shape[-2:], bool))
    if mask is not None:
        mask = np.asarray(mask)
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    return sp.softmax(s, -1) @ v


def test_sdpa_against_numpy():
    q, k, v = rnd((2, 3, 5, 4)), rnd((2, 3, 7, 4), 1), rnd((2, 3, 7, 6), 2)
    np.testing.assert_allclose(np_(F.scaled_dot_product_attention(q, k, v)), _sdpa_np(q, k, v), rtol=1e-5, atol=1e-6)
    bm = np.random.default_rng(0).random((5, 7)) > 0.3
    bm[:, 0] = True
    np.testing.assert_allclose(np_(F.scaled_dot_product_attention(q, k, v, enp.asarray(bm))),
                               _sdpa_np(q, k, v, bm), rtol=1e-5, atol=1e-6)
    fm = np_(rnd((2, 1, 5, 7), 3))
    np.testing.assert_allclose(np_(F.scaled_dot_product_attention(q, k, v, enp.asarray(fm), scale=0.3)),
                               _sdpa_np(q, k, v, fm, scale=0.3), rtol=1e-5, atol=1e-6)
    qs = rnd((2, 3, 7, 4), 4)
    np.testing.assert_allclose(np_(F.scaled_dot_product_attention(qs, k, v, is_causal=True)),
                               _sdpa_np(qs, k, v, causal=True), rtol=1e-5, atol=1e-6)
    # grouped-query attention: 6 query heads share 3 key/value heads
    q6 = rnd((2, 6, 5, 4), 5)
    got = F.scaled_dot_product_attention(q6, k, v, enable_gqa=True)
    ref = _sdpa_np(q6, np.repeat(np_(k), 2, 1), np.repeat(np_(v), 2, 1))
    np.testing.assert_allclose(np_(got), ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError):
        F.scaled_dot_product_attention(q, k, v, enp.asarray(bm), is_causal=True)


def test_sdpa_dropout_needs_and_uses_key():
    q = rnd((1, 4, 8))
    a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5, key=random.key(0))
    b = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5, key=random.key(0))
    c = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5, key=random.key(1))
    np.testing.assert_array_equal(np_(a), np_(b))
    assert not np.allclose(np_(a), np_(c))
    with pytest.raises(TypeError):
        F.scaled_dot_product_attention(q, q, q, dropout_p=0.5, key=q)


@pytest.mark.parametrize("chunk", [1, 3, 7, 64])
@pytest.mark.parametrize("masking", ["none", "causal", "bool", "float"])
def test_chunked_equals_dense(chunk, masking):
    q, k, v = rnd((2, 2, 6, 4)), rnd((2, 2, 9, 4), 1), rnd((2, 2, 9, 5), 2)
    kw = {}
    if masking == "causal":
        q = rnd((2, 2, 9, 4))
        kw["is_causal"] = True
    elif masking == "bool":
        bm = np.random.default_rng(1).random((6, 9)) > 0.4
        bm[:, 3] = True
        kw["attn_mask"] = enp.asarray(bm)
    elif masking == "float":
        kw["attn_mask"] = rnd((2, 1, 6, 9), 3)
    dense = F.scaled_dot_product_attention(q, k, v, **kw)
    chunked = F.chunked_scaled_dot_product_attention(q, k, v, chunk_size=chunk, **kw)
    np.testing.assert_allclose(np_(chunked), np_(dense), rtol=1e-5, atol=1e-6)


def test_chunked_gradients_and_jit():
    q, k, v = rnd((1, 5, 4)), rnd((1, 8, 4), 1), rnd((1, 8, 3), 2)

    def loss(f, q, k, v):
        return (f(q, k, v) ** 2).sum()

    dense = ember.grad(lambda *a: loss(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), *a),
                       argnums=(0, 1, 2))(q, k, v)
    chunk = ember.grad(lambda *a: loss(lambda q, k, v: F.chunked_scaled_dot_product_attention(q, k, v, chunk_size=3),
                                       *a), argnums=(0, 1, 2))(q, k, v)
    for a, b in zip(dense, chunk):
        np.testing.assert_allclose(np_(b), np_(a), rtol=1e-4, atol=1e-5)
    j = ember.jit(lambda q, k, v: F.chunked_scaled_dot_product_attention(q, k, v, is_causal=False, chunk_size=4))
    np.testing.assert_allclose(np_(j(q, k, v)), np_(F.scaled_dot_product_attention(q, k, v)), rtol=1e-5, atol=1e-6)


def test_chunked_never_materialises_scores():
    q = rnd((64, 8))
    g = ember.make_graph(lambda q: F.chunked_scaled_dot_product_attention(q, q, q, chunk_size=16))(q)
    assert (64, 64) not in value_shapes(g.graph)
    gd = ember.make_graph(lambda q: F.scaled_dot_product_attention(q, q, q))(q)
    assert (64, 64) in value_shapes(gd.graph)


def test_multihead_attention_shapes_and_masks():
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    x = rnd((3, 5, 8))
    out, w = mha(x, x, x)
    assert out.shape == (3, 5, 8) and w.shape == (3, 5, 5)
    np.testing.assert_allclose(np_(w).sum(-1), 1.0, rtol=1e-5)
    kpm = np.zeros((3, 5), bool)
    kpm[:, -2:] = True
    _, w = mha(x, x, x, key_padding_mask=enp.asarray(kpm))
    assert np.allclose(np_(w)[:, :, -2:], 0.0)
    _, w = mha(x, x, x, is_causal=True, average_attn_weights=False)
    assert w.shape == (3, 2, 5, 5) and np.allclose(np.triu(np_(w)[0, 0], 1), 0.0)
    out, w = mha(x, x, x, need_weights=False)
    assert w is None
    un, _ = mha(x[0], x[0], x[0])
    np.testing.assert_allclose(np_(un), np_(mha(x, x, x)[0])[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kw,fwd", [
    (dict(), dict()),
    (dict(batch_first=True, bias=False), dict(average_attn_weights=False)),
    (dict(kdim=3, vdim=5), dict()),
    (dict(add_bias_kv=True, add_zero_attn=True), dict(mask=True)),
])
def test_multihead_attention_against_torch(kw, fwd):
    torch = pytest.importorskip("torch")
    e = nn.MultiheadAttention(8, 2, **kw)
    t = torch.nn.MultiheadAttention(8, 2, **kw)
    copy_to_torch(e, t)
    bf = kw.get("batch_first", False)
    L, S, N = 4, 6, 3
    q = rnd((N, L, 8) if bf else (L, N, 8))
    kshape = (N, S, kw.get("kdim", 8)) if bf else (S, N, kw.get("kdim", 8))
    vshape = (N, S, kw.get("vdim", 8)) if bf else (S, N, kw.get("vdim", 8))
    k, v = rnd(kshape, 1), rnd(vshape, 2)
    args = {}
    if fwd.pop("mask", False):
        am = np.random.default_rng(0).random((L, S)) > 0.7
        kpm = np.zeros((N, S), bool)
        kpm[0, -1] = True
        args = dict(attn_mask=am, key_padding_mask=kpm)
    out, w = e(q, k, v, **{a: enp.asarray(m) for a, m in args.items()}, **fwd)
    with torch.no_grad():
        tout, tw = t(to_torch(q), to_torch(k), to_torch(v), **{a: torch.from_numpy(m) for a, m in args.items()}, **fwd)
    np.testing.assert_allclose(np_(out), tout.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np_(w), tw.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cls,kw", [
    ("TransformerEncoderLayer", dict()), ("TransformerEncoderLayer", dict(norm_first=True, activation="gelu",
                                                                          batch_first=True)),
    ("TransformerDecoderLayer", dict()), ("TransformerDecoderLayer", dict(norm_first=True, batch_first=True))])
def test_transformer_layers_against_torch(cls, kw):
    torch = pytest.importorskip("torch")
    e = getattr(nn, cls)(8, 2, 16, dropout=0.1, **kw)
    t = getattr(torch.nn, cls)(8, 2, 16, dropout=0.1, **kw)
    copy_to_torch(e, t)
    e.eval()
    t.eval()
    bf = kw.get("batch_first", False)
    x = rnd((2, 5, 8) if bf else (5, 2, 8))
    mem = rnd((2, 4, 8) if bf else (4, 2, 8), 1)
    mask = np.triu(np.full((5, 5), -np.inf, np.float32), 1)
    kpm = np.zeros((2, 5), np.float32)
    kpm[1, -1] = -np.inf
    with torch.no_grad():
        if cls == "TransformerEncoderLayer":
            got = e(x, src_mask=enp.asarray(mask), src_key_padding_mask=enp.asarray(kpm))
            want = t(to_torch(x), src_mask=torch.from_numpy(mask), src_key_padding_mask=torch.from_numpy(kpm))
        else:
            got = e(x, mem, tgt_mask=enp.asarray(mask), tgt_key_padding_mask=enp.asarray(kpm))
            want = t(to_torch(x), to_torch(mem), tgt_mask=torch.from_numpy(mask),
                     tgt_key_padding_mask=torch.from_numpy(kpm))
    np.testing.assert_allclose(np_(got), want.numpy(), rtol=1e-4, atol=1e-4)


def test_transformer_stacks_and_training_mode():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.2, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8))
    assert [n for n, _ in enc.named_children()] == ["layers", "norm"]
    assert list(enc.state_dict())[0] == "layers.0.self_attn.in_proj_weight"
    np.testing.assert_array_equal(np_(enc.layers[0].linear1.weight), np_(enc.layers[1].linear1.weight))
    x = rnd((2, 5, 8))
    enc.set_rng(random.key(0))
    a, b = enc(x), enc(x)
    assert not np.allclose(np_(a), np_(b))  # dropout in training mode
    enc.eval()
    np.testing.assert_array_equal(np_(enc(x)), np_(enc(x)))
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, batch_first=True), 2)
    assert dec(x, rnd((2, 3, 8), 1)).shape == (2, 5, 8)
