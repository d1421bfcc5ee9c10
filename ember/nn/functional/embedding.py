"""Embedding lookups and one-hot encoding.

Example:
    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.one_hot(enp.asarray([0, 2]), 3).tolist()
    [[1, 0, 0], [0, 0, 1]]
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ...fx.core import get_aval
from ...transforms.misc import stop_gradient
from ._util import arr, enp, mean_of_sums
from ...fx.spelling import user_str

__all__ = ["embedding", "one_hot", "embedding_bag"]


def _check_indices(idx, op):
    if not _dt.is_integer(get_aval(idx).dtype):
        raise TypeError(f"{op}: indices must be integers, got {user_str(get_aval(idx))}")


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` (num_embeddings, dim) at the integer indices `input`.

    Positions equal to `padding_idx` contribute no gradient to that row.  With
    `max_norm`, looked-up rows whose `norm_type`-norm exceeds it are rescaled to
    `max_norm` in the output (the weight itself is never modified: arrays are immutable).

    Example:
        >>> import ember.numpy as enp
        >>> embedding(enp.asarray([1, 0]), enp.asarray([[0.0, 1.0], [2.0, 3.0]])).tolist()
        [[2.0, 3.0], [0.0, 1.0]]
    """
    e = enp()
    idx = arr(input)
    _check_indices(idx, "embedding")
    w = arr(weight)
    if w.ndim != 2:
        raise ValueError(f"embedding: weight must be 2-d, got shape {w.shape}")
    out = e.take(w, idx, axis=0)
    if padding_idx is not None:
        pi = padding_idx if padding_idx >= 0 else padding_idx + w.shape[0]
        mask = e.expand_dims(idx == pi, -1)
        out = e.where(mask, stop_gradient(out), out)
    if max_norm is not None:
        if norm_type == 2:
            norm = e.sqrt(e.sum(e.square(out), axis=-1, keepdims=True))
        else:
            norm = e.sum(e.abs(out) ** norm_type, axis=-1, keepdims=True) ** (1.0 / norm_type)
        scale = e.where(norm > max_norm, max_norm / (norm + 1e-7), 1.0)
        out = out * stop_gradient(scale)
    return out


def embedding_bag(input, weight, offsets=None, mode="mean", padding_idx=None):
    """Sum, mean or max of embeddings over bags: 2-d `input` (B, n) is B bags of n
    indices (offsets are not supported: use a 2-d input).

    Example:
        >>> import ember.numpy as enp
        >>> embedding_bag(enp.asarray([[0, 1]]), enp.asarray([[0.0], [2.0]])).tolist()
        [[1.0]]
    """
    e = enp()
    idx = arr(input)
    if idx.ndim != 2 or offsets is not None:
        raise ValueError("embedding_bag: pass a 2-d input of shape (bags, indices per bag) "
                         "without offsets")
    emb = embedding(idx, weight, padding_idx)
    if padding_idx is not None:
        keep = e.expand_dims(idx != padding_idx, -1)
        emb = e.where(keep, emb, 0.0)
    if mode == "sum":
        return e.sum(emb, axis=1)
    if mode == "mean":
        if padding_idx is None:
            return e.mean(emb, axis=1)
        cnt = e.expand_dims(idx != padding_idx, -1)
        return mean_of_sums(emb, cnt, axis=1, floor=1.0)
    if mode == "max":
        return e.max(emb, axis=1)
    raise ValueError(f"embedding_bag: mode must be 'sum', 'mean' or 'max', got {mode!r}")


def one_hot(tensor, num_classes: int = -1):
    """One-hot int32 encoding of integer class indices, a new trailing axis of size
    `num_classes` (-1: the maximum index + 1, which needs a concrete input).
    Indices outside [0, num_classes) raise ValueError when the values are known
    (PyTorch raises RuntimeError); under `jit`/`vmap` they are not, and such an
    index gives an all-zero row.

    Example:
        >>> import ember.numpy as enp
        >>> one_hot(enp.asarray([1]), -1).tolist()
        [[0, 1]]
    """
    e = enp()
    x = arr(tensor)
    _check_indices(x, "one_hot")
    from ...numpy._util import concrete_or_none
    v = concrete_or_none(x)
    if v is not None and v.size and v.min() < 0:
        raise ValueError(f"one_hot: class values must be non-negative, got {int(v.min())}")
    if num_classes == -1:
        num_classes = int(np.asarray(e.max(x))) + 1 if x.size else 0
    elif v is not None and v.size and v.max() >= num_classes:
        raise ValueError(f"one_hot: class values must be smaller than num_classes={num_classes}, "
                         f"got {int(v.max())}. Hint: pass num_classes=-1 to size it from the "
                         f"data, or a larger num_classes")
    classes = e.arange(num_classes, dtype=x.dtype)
    return e.astype(e.expand_dims(x, -1) == classes, _dt.int32)
