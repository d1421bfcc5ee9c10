"""`Embedding` (lookup table with padding_idx) and `EmbeddingBag`.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.Embedding(10, 3)(enp.asarray([[1, 2], [4, 5]])).shape
    (2, 2, 3)
"""
from __future__ import annotations

from ...fx.core import Tracer
from .. import functional as F
from .. import init
from ..functional.embedding import _padding_index, _renormed_weight
from ..module import Module
from ._common import check_sizes, init_keys, param_dtype, place

__all__ = ["Embedding", "EmbeddingBag"]


class Embedding(Module):
    """A (num_embeddings, embedding_dim) table initialised N(0, 1); the row at
    `padding_idx` (negative counts from the end) starts at zero and gets no gradient.
    With `max_norm`, looked-up rows above it are rescaled in the output and, as in
    PyTorch, in the table too when the call is eager (under a transform the weight
    is a traced value and only the output is rescaled).  `scale_grad_by_freq`
    divides each row's gradient by its index's frequency in the input.

    Example:
        >>> m = Embedding(5, 2, padding_idx=0)
        >>> m.weight[0].tolist()
        [0.0, 0.0]
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight=None, _freeze: bool = False, device=None, dtype=None, *, key=None):
        super().__init__()
        check_sizes(type(self).__name__, num_embeddings=num_embeddings, embedding_dim=embedding_dim)
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"padding_idx must be within num_embeddings, got padding_idx={padding_idx} "
                                 f"and num_embeddings={num_embeddings}")
            padding_idx = padding_idx % num_embeddings
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is not None:
            w = F._util.float_arr(_weight)
            if tuple(w.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"Shape of weight {tuple(w.shape)} does not match (num_embeddings, "
                                 f"embedding_dim) = {(num_embeddings, embedding_dim)}")
            self.weight = place(w, device)
        else:
            self.weight = place(init.zeros_((num_embeddings, embedding_dim), dtype=param_dtype(dtype)), device)
            self.reset_parameters(key)
        if _freeze:
            self.freeze("weight")

    def reset_parameters(self, key=None):
        """Re-draw the table from N(0, 1), zeroing the padding row.

        Example:
            >>> Embedding(3, 2).reset_parameters()
        """
        (k,) = init_keys(key, 1)
        w = init.normal_(self.weight, key=k)
        if self.padding_idx is not None:
            w = w.at[self.padding_idx].set(0.0)
        self.weight = w

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx=None, max_norm=None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False):
        """An Embedding holding the given (num_embeddings, dim) table, frozen by default.

        Example:
            >>> import ember.numpy as enp
            >>> Embedding.from_pretrained(enp.ones((3, 2))).is_frozen("weight")
            True
        """
        w = F._util.float_arr(embeddings)
        if w.ndim != 2:
            raise ValueError(f"Embeddings parameter is expected to be 2-dimensional, got shape "
                             f"{tuple(w.shape)}")
        return cls(w.shape[0], w.shape[1], padding_idx, max_norm, norm_type, scale_grad_by_freq,
                   sparse, _weight=w, _freeze=freeze)

    def forward(self, input):
        out = F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                          self.scale_grad_by_freq, self.sparse)
        _renorm_in_place(self, input)
        return out

    def extra_repr(self):
        return _embedding_repr(self)


def _renorm_in_place(module, input):
    """PyTorch's in-place max_norm renormalisation of the looked-up rows, done when
    both table and indices are concrete (a traced table is an argument of a
    transform: rebinding it would leak a tracer and is not what the caller holds)."""
    if module.max_norm is None or isinstance(module.weight, Tracer) or isinstance(input, Tracer):
        return
    module.weight = _renormed_weight(module.weight, input, module.max_norm, module.norm_type)


def _embedding_repr(m):
    # PyTorch's field order differs between the two: Embedding puts padding_idx
    # first and shows sparse, EmbeddingBag puts it last and leaves sparse out
    bag = isinstance(m, EmbeddingBag)
    s = f"{m.num_embeddings}, {m.embedding_dim}"
    if m.padding_idx is not None and not bag:
        s += f", padding_idx={m.padding_idx}"
    if m.max_norm is not None:
        s += f", max_norm={m.max_norm}"
    if m.norm_type != 2:
        s += f", norm_type={m.norm_type}"
    if m.scale_grad_by_freq:
        s += f", scale_grad_by_freq={m.scale_grad_by_freq}"
    if bag:
        s += f", mode={m.mode!r}"
        if m.padding_idx is not None:
            s += f", padding_idx={m.padding_idx}"
    elif m.sparse:
        s += ", sparse=True"
    return s


class EmbeddingBag(Module):
    """Sums, means or maxes of embeddings over bags: a 2-d index input (one bag per
    row) or a 1-d one with `offsets`.  `padding_idx` entries are left out of every
    mode; `per_sample_weights` (mode='sum'), `max_norm` and `scale_grad_by_freq` act
    as in PyTorch (see `Embedding` for the in-place renormalisation).

    Example:
        >>> import ember.numpy as enp
        >>> EmbeddingBag(10, 3)(enp.asarray([[1, 2], [3, 4]])).shape
        (2, 3)
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None, device=None, dtype=None, *, key=None):
        super().__init__()
        check_sizes(type(self).__name__, num_embeddings=num_embeddings, embedding_dim=embedding_dim)
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"EmbeddingBag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
        self.num_embeddings, self.embedding_dim, self.mode = int(num_embeddings), int(embedding_dim), mode
        self.padding_idx = _padding_index(padding_idx, self.num_embeddings, "EmbeddingBag")
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        self.sparse, self.include_last_offset = sparse, include_last_offset
        (k,) = init_keys(key, 1)
        w = init.normal_((num_embeddings, embedding_dim), key=k, dtype=param_dtype(dtype)) \
            if _weight is None else F._util.float_arr(_weight)
        if tuple(w.shape) != (self.num_embeddings, self.embedding_dim):
            raise ValueError(f"Shape of weight {tuple(w.shape)} does not match (num_embeddings, "
                             f"embedding_dim) = {(self.num_embeddings, self.embedding_dim)}")
        if self.padding_idx is not None:
            w = w.at[self.padding_idx].set(0.0)
        self.weight = place(w, device)

    def forward(self, input, offsets=None, per_sample_weights=None):
        out = F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                              self.scale_grad_by_freq, self.mode, self.sparse, per_sample_weights,
                              self.include_last_offset, self.padding_idx)
        _renorm_in_place(self, input)
        return out

    def extra_repr(self):
        return _embedding_repr(self)
