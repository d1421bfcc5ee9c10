"""Attention: dense `scaled_dot_product_attention`, a memory-efficient chunked
variant (online softmax over key chunks in an `ember.scan`, never forming the
L x S score matrix) and `multi_head_attention_forward` (PyTorch's MHA).

Mask conventions follow PyTorch: for `scaled_dot_product_attention` a boolean mask
is True where attention is *allowed*; for `multi_head_attention_forward` (and
`nn.MultiheadAttention`) boolean `attn_mask` / `key_padding_mask` are True where
attention is *not allowed*.  Float masks are added to the scores.  In
`scaled_dot_product_attention` (and the chunked variant) a query that may attend to
no key (a fully masked row) gets zeros and a finite gradient, as PyTorch 2's
`scaled_dot_product_attention` does; `multi_head_attention_forward` keeps the NaN of
PyTorch's explicit softmax there.

Example:
    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> q = enp.ones((2, 4, 8))
    >>> F.scaled_dot_product_attention(q, q, q, is_causal=True).shape
    (2, 4, 8)
"""
from __future__ import annotations

import math

import numpy as np

from ... import dtypes as _dt
from ...fx.core import get_aval
from ...transforms.misc import stop_gradient
from ._util import arr, enp, float_arr
from .activation import softmax
from .dropout import dropout
from .linear import linear
from ...amp._autocast import lower_precision

__all__ = ["scaled_dot_product_attention", "chunked_scaled_dot_product_attention",
           "memory_efficient_attention", "multi_head_attention_forward"]


def _qkv(q, k, v, enable_gqa, op):
    e = enp()
    q, k, v = float_arr(q), float_arr(k), float_arr(v)
    d = e.result_type(q, k, v)
    q, k, v = e.astype(q, d), e.astype(k, d), e.astype(v, d)
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise ValueError(f"{op}: query, key and value need at least 2 dimensions (..., L, E)")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"{op}: shapes do not match: query {q.shape}, key {k.shape}, value {v.shape}")
    if enable_gqa and q.ndim >= 3 and k.shape[-3] != q.shape[-3]:
        hq, hk = q.shape[-3], k.shape[-3]
        if hq % hk:
            raise ValueError(f"{op}: {hq} query heads are not a multiple of {hk} key heads")
        k = e.repeat(k, hq // hk, axis=-3)
        v = e.repeat(v, hq // hk, axis=-3)
    return q, k, v


def _scale(q, scale):
    return 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)


def _mask_parts(attn_mask, dtype):
    """(bool mask or None, additive float mask or None)."""
    if attn_mask is None:
        return None, None
    m = arr(attn_mask)
    if get_aval(m).dtype == _dt.bool_:
        return m, None
    return None, enp().astype(m, dtype)


@lower_precision
def scaled_dot_product_attention(q, k, v, /, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, key=None, enable_gqa=False):
    """softmax(q @ k^T * scale + mask) @ v for q (..., L, E), k (..., S, E), v (..., S, Ev).

    `attn_mask` broadcasts to (..., L, S): boolean (True = may attend) or float
    (added).  `is_causal` masks keys after the query position (top-left aligned).
    `scale` defaults to 1/sqrt(E).  Dropout on the attention weights needs a `key`
    (or runs inside a forward pass's RNG stream).  `enable_gqa` repeats key/value
    heads (dim -3) to match the query heads.  q, k, v are positional-only so that
    `key=` is always the RNG key.

    Example:
        >>> import ember.numpy as enp
        >>> q = enp.ones((1, 3, 4)); v = enp.arange(12.0).reshape(1, 3, 4)
        >>> [round(t, 4) for t in scaled_dot_product_attention(q, q, v)[0, 0].tolist()]
        [4.0, 5.0, 6.0, 7.0]
    """
    e = enp()
    q, k, v = _qkv(q, k, v, enable_gqa, "scaled_dot_product_attention")
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: pass either attn_mask or is_causal, not both")
    s = e.matmul(q, e.swapaxes(k, -1, -2)) * _scale(q, scale)
    L, S = q.shape[-2], k.shape[-2]
    bool_mask, add_mask = _mask_parts(attn_mask, s.dtype)
    if is_causal:
        bool_mask = e.asarray(np.tril(np.ones((L, S), np.bool_)))
    if add_mask is not None:
        s = s + add_mask
    if bool_mask is not None:
        s = e.where(bool_mask, s, -np.inf)
    if bool_mask is not None or add_mask is not None:
        # A row with every key masked would be a softmax of all -inf: 0/0.  PyTorch
        # returns zeros there; softmax a stand-in row of zeros so the backward pass
        # sees no 0/0 either, then zero its weights.  (A NaN row stays NaN.)
        open_row = ~(e.max(s, axis=-1, keepdims=True) == -np.inf)
        w = e.where(open_row, softmax(e.where(open_row, s, 0.0), dim=-1), 0.0)
    else:
        w = softmax(s, dim=-1)
    if dropout_p > 0.0:
        w = dropout(w, dropout_p, True, key=key)
    return e.matmul(w, v)


def chunked_scaled_dot_product_attention(q, k, v, /, attn_mask=None, is_causal=False, scale=None,
                                         chunk_size=128, enable_gqa=False):
    """The same result as `scaled_dot_product_attention` (without dropout), computed
    over chunks of `chunk_size` keys with an online softmax inside `ember.scan`: peak
    memory is O(L * chunk_size) per batch element instead of O(L * S), and each step
    is rematerialised in the backward pass (`ember.checkpoint`), so gradients keep
    only O(L * Ev) per chunk.  A dense `attn_mask` is sliced per chunk (it is the
    caller's array); `is_causal` is computed per chunk from positions.

    Example:
        >>> import ember.numpy as enp
        >>> from ember import random
        >>> q = random.normal(random.key(0), (2, 5, 4)); k = random.normal(random.key(1), (2, 7, 4))
        >>> a = chunked_scaled_dot_product_attention(q, k, k, chunk_size=3)
        >>> b = scaled_dot_product_attention(q, k, k)
        >>> bool(enp.allclose(a, b, atol=1e-5))
        True
    """
    import ember
    e = enp()
    q, k, v = _qkv(q, k, v, enable_gqa, "chunked_scaled_dot_product_attention")
    if is_causal and attn_mask is not None:
        raise ValueError("chunked_scaled_dot_product_attention: pass either attn_mask or is_causal")
    chunk_size = int(chunk_size)
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    L, S, Ev = q.shape[-2], k.shape[-2], v.shape[-1]
    sc = _scale(q, scale)
    dt = q.dtype
    n = max(1, -(-S // chunk_size))
    pad_s = n * chunk_size - S
    batch = tuple(e.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2]))
    k = e.broadcast_to(k, batch + k.shape[-2:])
    v = e.broadcast_to(v, batch + v.shape[-2:])
    if pad_s:
        k = e.pad(k, [(0, 0)] * len(batch) + [(0, pad_s), (0, 0)])
        v = e.pad(v, [(0, 0)] * len(batch) + [(0, pad_s), (0, 0)])

    def chunks(x):  # (..., n*C, D) -> (n, ..., C, D)
        x = e.reshape(x, x.shape[:-2] + (n, chunk_size, x.shape[-1]))
        return e.moveaxis(x, -3, 0)

    xs = {"k": chunks(k), "v": chunks(v), "start": e.arange(n, dtype=_dt.int32) * chunk_size}
    bool_mask, add_mask = _mask_parts(attn_mask, dt)
    for name, m in (("bmask", bool_mask), ("amask", add_mask)):
        if m is None:
            continue
        mb = e.broadcast_to(m, tuple(m.shape[:-2]) + (L, S)) if m.ndim >= 2 else e.broadcast_to(m, (L, S))
        if pad_s:
            fill = False if name == "bmask" else 0.0
            mb = e.pad(mb, [(0, 0)] * (mb.ndim - 1) + [(0, pad_s)], constant_values=fill)
        mb = e.reshape(mb, mb.shape[:-1] + (n, chunk_size))
        xs[name] = e.moveaxis(mb, -2, 0)
    qpos = e.arange(L, dtype=_dt.int32)[:, None]

    def step(carry, x):
        m, denom, acc = carry
        s = e.matmul(q, e.swapaxes(x["k"], -1, -2)) * sc  # (..., L, C)
        kpos = x["start"] + e.arange(chunk_size, dtype=_dt.int32)
        valid = kpos < S
        if is_causal:
            valid = valid & (qpos >= kpos)
        if "bmask" in x:
            valid = valid & x["bmask"]
        if "amask" in x:
            s = s + x["amask"]
        s = e.where(valid, s, -np.inf)
        # The result does not depend on the running maximum (it only keeps exp in
        # range), so it carries no gradient.
        m_new = stop_gradient(e.maximum(m, e.max(s, axis=-1, keepdims=True)))
        shift = e.where(e.isfinite(m_new), m_new, 0.0)
        p = e.exp(s - shift)
        corr = e.exp(m - shift)
        denom = denom * corr + e.sum(p, axis=-1, keepdims=True)
        acc = acc * corr + e.matmul(p, x["v"])
        return (m_new, denom, acc), None

    out_batch = tuple(e.broadcast_shapes(q.shape[:-2], batch))
    init = (e.full(out_batch + (L, 1), -np.inf, dtype=dt), e.zeros(out_batch + (L, 1), dtype=dt),
            e.zeros(out_batch + (L, Ev), dtype=dt))
    (_, denom, acc), _ = ember.scan(ember.checkpoint(step), init, xs)
    # a fully masked row has acc = denom = 0: zeros (as the dense version), not 0/0
    return acc / e.where(denom > 0, denom, 1.0)


memory_efficient_attention = chunked_scaled_dot_product_attention


def _mha_bool_to_float(mask, dtype):
    """PyTorch MHA masks: bool True = not allowed -> -inf; float masks are added."""
    e = enp()
    m = arr(mask)
    if get_aval(m).dtype == _dt.bool_:
        return e.where(m, -np.inf, 0.0).astype(dtype)
    return e.astype(m, dtype)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p,
                                 out_proj_weight, out_proj_bias, training=True, key_padding_mask=None,
                                 need_weights=True, attn_mask=None, use_separate_proj_weight=False,
                                 q_proj_weight=None, k_proj_weight=None, v_proj_weight=None,
                                 static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False, *, rng=None):
    """PyTorch's multi-head attention on sequence-first inputs: query (L, N, E) or
    unbatched (L, E), key/value (S, N, E_k/E_v).  Returns (output (L, N, E), weights
    (N, L, S) averaged over heads, or (N, H, L, S), or None when not `need_weights`).
    `is_causal` without `attn_mask` builds the causal mask.  `rng` is the dropout key.

    Example:
        >>> import ember.numpy as enp
        >>> E = 4; x = enp.ones((3, 2, E))
        >>> out, w = multi_head_attention_forward(x, x, x, E, 2, enp.ones((3 * E, E)), None, None,
        ...     None, False, 0.0, enp.ones((E, E)), None)
        >>> out.shape, w.shape
        ((3, 2, 4), (2, 3, 3))
    """
    e = enp()
    q_in, k_in, v_in = float_arr(query), float_arr(key), float_arr(value)
    unbatched = q_in.ndim == 2
    if unbatched:
        q_in, k_in, v_in = q_in[:, None], k_in[:, None], v_in[:, None]
        if key_padding_mask is not None:
            key_padding_mask = arr(key_padding_mask)[None]
    L, N, E = q_in.shape
    S = k_in.shape[0]
    if E != embed_dim_to_check:
        raise ValueError(f"multi_head_attention: was expecting embedding dimension of "
                         f"{embed_dim_to_check}, but got {E}")
    if E % num_heads:
        raise ValueError(f"embed_dim {E} not divisible by num_heads {num_heads}")
    hd = E // num_heads
    if use_separate_proj_weight:
        bq = bk = bv = None
        if in_proj_bias is not None:
            bq, bk, bv = e.split(arr(in_proj_bias), 3)
        q = linear(q_in, q_proj_weight, bq)
        k = linear(k_in, k_proj_weight, bk)
        v = linear(v_in, v_proj_weight, bv)
    else:
        wq, wk, wv = e.split(arr(in_proj_weight), 3)
        bq = bk = bv = None
        if in_proj_bias is not None:
            bq, bk, bv = e.split(arr(in_proj_bias), 3)
        q, k, v = linear(q_in, wq, bq), linear(k_in, wk, bk), linear(v_in, wv, bv)
    dt = q.dtype
    if is_causal and attn_mask is None:
        attn_mask = e.asarray(np.triu(np.ones((L, S), np.bool_), 1))
    if attn_mask is not None:
        attn_mask = _mha_bool_to_float(attn_mask, dt)
        if attn_mask.ndim == 2:
            if attn_mask.shape != (L, S):
                raise ValueError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                 f"{(L, S)}.")
            attn_mask = attn_mask[None]
        elif attn_mask.ndim == 3:
            if attn_mask.shape != (N * num_heads, L, S):
                raise ValueError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                 f"{(N * num_heads, L, S)}.")
        else:
            raise ValueError(f"attn_mask's dimension {attn_mask.ndim} is not supported")
    if bias_k is not None and bias_v is not None:
        k = e.concat([k, e.broadcast_to(arr(bias_k), (1, N, E))], axis=0)
        v = e.concat([v, e.broadcast_to(arr(bias_v), (1, N, E))], axis=0)
        if attn_mask is not None:
            attn_mask = e.pad(attn_mask, [(0, 0), (0, 0), (0, 1)])
        if key_padding_mask is not None:
            key_padding_mask = _mha_bool_to_float(key_padding_mask, dt)
            key_padding_mask = e.pad(key_padding_mask, [(0, 0), (0, 1)])
    # (S, N, E) -> (N, H, S, hd)
    q = e.permute_dims(e.reshape(q, (L, N, num_heads, hd)), (1, 2, 0, 3))
    k = e.permute_dims(e.reshape(k, (k.shape[0], N, num_heads, hd)), (1, 2, 0, 3))
    v = e.permute_dims(e.reshape(v, (v.shape[0], N, num_heads, hd)), (1, 2, 0, 3))
    if add_zero_attn:
        k = e.concat([k, e.zeros((N, num_heads, 1, hd), dtype=dt)], axis=2)
        v = e.concat([v, e.zeros((N, num_heads, 1, hd), dtype=dt)], axis=2)
        if attn_mask is not None:
            attn_mask = e.pad(attn_mask, [(0, 0), (0, 0), (0, 1)])
        if key_padding_mask is not None:
            key_padding_mask = e.pad(_mha_bool_to_float(key_padding_mask, dt), [(0, 0), (0, 1)])
    S2 = k.shape[2]
    s = e.matmul(q, e.swapaxes(k, -1, -2)) * (1.0 / math.sqrt(hd))  # (N, H, L, S2)
    if attn_mask is not None:
        am = attn_mask
        if am.shape[0] == 1:
            s = s + am[None]
        else:
            s = s + e.reshape(am, (N, num_heads, L, S2))
    if key_padding_mask is not None:
        kpm = _mha_bool_to_float(key_padding_mask, dt)
        if kpm.shape != (N, S2):
            raise ValueError(f"expecting key_padding_mask shape of {(N, S2)}, but got {kpm.shape}")
        s = s + kpm[:, None, None, :]
    w = softmax(s, dim=-1)
    if training and dropout_p > 0.0:
        w = dropout(w, dropout_p, True, key=rng)
    out = e.matmul(w, v)  # (N, H, L, hd)
    out = e.reshape(e.permute_dims(out, (2, 0, 1, 3)), (L, N, E))
    out = linear(out, out_proj_weight, out_proj_bias)
    weights = None
    if need_weights:
        weights = e.mean(w, axis=1) if average_attn_weights else w
        if unbatched:
            weights = weights[0]
    if unbatched:
        out = out[:, 0]
    return out, weights
