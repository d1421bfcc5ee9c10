"""`MultiheadAttention` with PyTorch's parameters (in_proj_weight / q,k,v_proj_weight,
in_proj_bias, out_proj, bias_k/bias_v), arguments and mask conventions.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> mha = nn.MultiheadAttention(8, 2, batch_first=True)
    >>> out, w = mha(enp.ones((3, 5, 8)), enp.ones((3, 7, 8)), enp.ones((3, 7, 8)))
    >>> out.shape, w.shape
    ((3, 5, 8), (3, 5, 7))
"""
from __future__ import annotations

from ... import numpy as enp
from .. import functional as F
from .. import init
from ..module import Module, next_rng_key
from ._common import init_keys, param_dtype, place
from .linear import Linear

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """Multi-head attention.  Inputs are (L, N, E) (or (N, L, E) with `batch_first`,
    or unbatched (L, E)); boolean masks are True where attention is *not* allowed,
    float masks are added.  Returns (output, weights) with weights averaged over
    heads (N, L, S) unless `average_attn_weights=False` ((N, H, L, S)), or None
    when `need_weights=False`.

    Example:
        >>> MultiheadAttention(8, 2, kdim=4, vdim=6).k_proj_weight.shape
        (8, 4)
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None, *, key=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim}"
                             f" and num_heads={num_heads} instead")
        self.embed_dim = int(embed_dim)
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads, self.dropout, self.batch_first = int(num_heads), float(dropout), batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise ValueError(f"embed_dim must be divisible by num_heads, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads}")
        d = param_dtype(dtype)
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = place(init.zeros_((embed_dim, embed_dim), dtype=d), device)
            self.k_proj_weight = place(init.zeros_((embed_dim, self.kdim), dtype=d), device)
            self.v_proj_weight = place(init.zeros_((embed_dim, self.vdim), dtype=d), device)
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = place(init.zeros_((3 * embed_dim, embed_dim), dtype=d), device)
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = place(init.zeros_((3 * embed_dim,), dtype=d), device)
        else:
            self.register_parameter("in_proj_bias", None)
        k_out, k_rest = init_keys(key, 2)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype, key=k_out)
        if add_bias_kv:
            self.bias_k = place(init.zeros_((1, 1, embed_dim), dtype=d), device)
            self.bias_v = place(init.zeros_((1, 1, embed_dim), dtype=d), device)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters(k_rest)

    def _reset_parameters(self, key=None):
        keys = init_keys(key, 5)
        if self._qkv_same_embed_dim:
            self.in_proj_weight = init.xavier_uniform_(self.in_proj_weight, key=keys[0])
        else:
            self.q_proj_weight = init.xavier_uniform_(self.q_proj_weight, key=keys[0])
            self.k_proj_weight = init.xavier_uniform_(self.k_proj_weight, key=keys[1])
            self.v_proj_weight = init.xavier_uniform_(self.v_proj_weight, key=keys[2])
        if self.in_proj_bias is not None:
            self.in_proj_bias = init.zeros_(self.in_proj_bias)
            self.out_proj.bias = init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            self.bias_k = init.xavier_normal_(self.bias_k, key=keys[3])
        if self.bias_v is not None:
            self.bias_v = init.xavier_normal_(self.bias_v, key=keys[4])

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        e = enp
        q, k, v = F._util.float_arr(query), F._util.float_arr(key), F._util.float_arr(value)
        batched = q.ndim == 3
        if self.batch_first and batched:
            q, k, v = e.swapaxes(q, 0, 1), e.swapaxes(k, 0, 1), e.swapaxes(v, 0, 1)
        training = self.training and self.dropout > 0.0
        out, w = F.multi_head_attention_forward(
            q, k, v, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight,
            self.out_proj.bias, training=training, key_padding_mask=key_padding_mask,
            need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal,
            rng=next_rng_key() if training else None)
        if self.batch_first and batched:
            out = e.swapaxes(out, 0, 1)
        return out, w
