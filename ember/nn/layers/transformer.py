"""Transformer layers with PyTorch's structure and names: `TransformerEncoderLayer`,
`TransformerDecoderLayer` (post- or pre-norm via `norm_first`, relu/gelu or any
callable activation), the stacks `TransformerEncoder` / `TransformerDecoder`, and
the encoder-decoder `Transformer` (with `generate_square_subsequent_mask`).

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)
    >>> layer(enp.ones((2, 5, 8))).shape
    (2, 5, 8)
"""
from __future__ import annotations

import copy

from .. import functional as F
from .. import init
from ..module import Module, _state_items
from ._common import init_keys
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .normalization import LayerNorm

__all__ = ["TransformerEncoderLayer", "TransformerDecoderLayer", "TransformerEncoder",
           "TransformerDecoder", "Transformer"]


def _activation(act):
    if isinstance(act, str):
        if act == "relu":
            return F.relu
        if act == "gelu":
            return F.gelu
        raise ValueError(f"activation should be relu/gelu, not {act}")
    return act


def _clone(module, n):
    """n independent copies of `module` (arrays are immutable, so they are shared
    until one copy's parameters are replaced)."""
    out = []
    for _ in range(n):
        memo = {id(v): v for _, v in _state_items(module)}
        out.append(copy.deepcopy(module, memo))
    return out


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with residual connection,
    dropout and layer norm (after, or before with `norm_first`).

    Example:
        >>> sorted(n.split(".")[0] for n in TransformerEncoderLayer(4, 2, 8).state_dict())[:2]
        ['linear1', 'linear1']
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True, device=None,
                 dtype=None):
        super().__init__()
        fk = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **fk)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **fk)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **fk)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)
        self.batch_first = batch_first

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention over `memory` and a feed-forward block.

    Example:
        >>> import ember.numpy as enp
        >>> layer = TransformerDecoderLayer(8, 2, 16)
        >>> layer(enp.ones((4, 2, 8)), enp.ones((6, 2, 8))).shape
        (4, 2, 8)
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True, device=None,
                 dtype=None):
        super().__init__()
        fk = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **fk)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, **fk)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **fk)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **fk)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)
        self.batch_first = batch_first

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask,
                                    memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x


class TransformerEncoder(Module):
    """`num_layers` copies of an encoder layer (starting from identical weights, as
    PyTorch's deep copies), with an optional final norm.

    Example:
        >>> import ember.numpy as enp
        >>> enc = TransformerEncoder(TransformerEncoderLayer(8, 2, 16), num_layers=2)
        >>> enc(enp.ones((5, 1, 8))).shape
        (5, 1, 8)
    """

    def __init__(self, encoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = ModuleList(_clone(encoder_layer, num_layers))
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=is_causal)
        return self.norm(x) if self.norm is not None else x


class TransformerDecoder(Module):
    """`num_layers` copies of a decoder layer with an optional final norm.

    Example:
        >>> import ember.numpy as enp
        >>> dec = TransformerDecoder(TransformerDecoderLayer(8, 2, 16), num_layers=2)
        >>> dec(enp.ones((3, 1, 8)), enp.ones((4, 1, 8))).shape
        (3, 1, 8)
    """

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = ModuleList(_clone(decoder_layer, num_layers))
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                      memory_is_causal=memory_is_causal)
        return self.norm(x) if self.norm is not None else x


class Transformer(Module):
    """The encoder-decoder transformer of "Attention Is All You Need" with PyTorch's
    arguments, submodule names (`encoder.layers.0...`, `encoder.norm`, `decoder...`)
    and initialisation (Xavier-uniform for every weight matrix).  `forward(src,
    tgt, ...)` takes PyTorch's masks; `generate_square_subsequent_mask(n)` is the
    causal float mask (0 on and below the diagonal, -inf above).

    Example:
        >>> import ember.numpy as enp
        >>> model = Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
        ...                     dim_feedforward=16, batch_first=True)
        >>> mask = Transformer.generate_square_subsequent_mask(3)
        >>> model(enp.ones((2, 5, 8)), enp.ones((2, 3, 8)), tgt_mask=mask).shape
        (2, 3, 8)
    """

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None, *, key=None):
        super().__init__()
        fk = dict(device=device, dtype=dtype)
        lk = dict(dim_feedforward=dim_feedforward, dropout=dropout, activation=activation,
                  layer_norm_eps=layer_norm_eps, batch_first=batch_first, norm_first=norm_first,
                  bias=bias, **fk)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(TransformerEncoderLayer(d_model, nhead, **lk),
                                              num_encoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(TransformerDecoderLayer(d_model, nhead, **lk),
                                              num_decoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk))
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        self._reset_parameters(key)

    def _reset_parameters(self, key=None):
        # PyTorch re-draws every matrix (dim > 1) Xavier-uniform, so the cloned layers differ
        names = [n for n, v in self.named_parameters() if v.ndim > 1]
        for n, k in zip(names, init_keys(key, max(1, len(names)))):
            m, leaf = self._slot(n)
            setattr(m, leaf, init.xavier_uniform_(getattr(m, leaf), key=k))

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """The (sz, sz) causal mask: 0.0 where key <= query, -inf above the diagonal.

        Example:
            >>> Transformer.generate_square_subsequent_mask(2).tolist()
            [[0.0, -inf], [0.0, 0.0]]
        """
        import ember.numpy as enp
        d = enp.float32 if dtype is None else dtype
        i = enp.arange(sz)
        mask = enp.where(i[None, :] > i[:, None], -enp.inf, 0.0).astype(d)
        if device is not None:
            from ._common import place
            mask = place(mask, device)
        return mask

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None,
                src_is_causal=None, tgt_is_causal=None, memory_is_causal=False):
        batched = src.ndim == 3
        if src.ndim != tgt.ndim:
            raise ValueError(f"Transformer: src and tgt must have the same number of dimensions, got "
                             f"src {tuple(src.shape)} and tgt {tuple(tgt.shape)}")
        b = 0 if self.batch_first else 1
        if batched and src.shape[b] != tgt.shape[b]:
            raise ValueError(f"Transformer: the batch number of src and tgt must be equal, got "
                             f"src {tuple(src.shape)} and tgt {tuple(tgt.shape)} "
                             f"(batch_first={self.batch_first})")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ValueError(f"Transformer: the feature number of src and tgt must be equal to "
                             f"d_model={self.d_model}, got src {tuple(src.shape)} and tgt "
                             f"{tuple(tgt.shape)}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=bool(src_is_causal))
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
