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
from ...fx.core import Tracer, get_aval
from ...transforms.misc import stop_gradient
from ._util import arr, enp, mean_of_sums
from ...fx.spelling import user_str

__all__ = ["embedding", "one_hot", "embedding_bag"]


def _check_indices(idx, op):
    if not _dt.is_integer(get_aval(idx).dtype):
        raise TypeError(f"{op}: indices must be integers, got {user_str(get_aval(idx))}")


def _check_range(idx, n, op):
    """PyTorch's IndexError for indices outside [0, n) (concrete indices only: a
    traced index has no value to check)."""
    if isinstance(idx, Tracer) or idx.size == 0:
        return
    v = np.asarray(idx)
    lo, hi = int(v.min()), int(v.max())
    if lo < 0 or hi >= n:
        bad = lo if lo < 0 else hi
        raise IndexError(f"{op}: index out of range in self: got index {bad} for a weight of {n} "
                         f"rows; indices must be in [0, {n}) (negative indices do not wrap)")


def _padding_index(padding_idx, n, op):
    """padding_idx in [-n, n) as a row number (negative counts from the end, as PyTorch)."""
    if padding_idx is None:
        return None
    pi = int(padding_idx)
    if not -n <= pi < n:
        raise ValueError(f"{op}: padding_idx must be within num_embeddings, got padding_idx={pi} "
                         f"for a weight of {n} rows")
    return pi % n


def _weight(weight, op):
    w = arr(weight)
    if w.ndim != 2:
        raise ValueError(f"{op}: weight must be 2-d (num_embeddings, embedding_dim), got shape "
                         f"{tuple(w.shape)}")
    return w


def _row_norms(rows, norm_type):
    e = enp()
    if norm_type == 2:
        return e.sqrt(e.sum(e.square(rows), axis=-1, keepdims=True))
    return e.sum(e.abs(rows) ** norm_type, axis=-1, keepdims=True) ** (1.0 / norm_type)


def _renorm_scale(rows, max_norm, norm_type):
    # PyTorch's embedding_renorm_: rows above max_norm are scaled to max_norm / (norm + 1e-7)
    norm = _row_norms(rows, norm_type)
    return stop_gradient(enp().where(norm > max_norm, max_norm / (norm + 1e-7), 1.0))


def _renormed_weight(weight, indices, max_norm, norm_type=2.0):
    """`weight` with the rows that `indices` look up rescaled to norm `max_norm` where
    it is exceeded: the table PyTorch leaves behind after an embedding call with
    `max_norm` (it renormalises in place; `nn.Embedding` assigns this back).

    Example:
        >>> import ember.numpy as enp
        >>> w = enp.asarray([[3.0, 4.0], [0.3, 0.4]])
        >>> [[round(v, 4) for v in r] for r in _renormed_weight(w, enp.asarray([0]), 1.0).tolist()]
        [[0.6, 0.8], [0.3, 0.4]]
    """
    e = enp()
    w = arr(weight)
    idx = arr(indices)
    used = e.zeros((w.shape[0],), dtype=_dt.bool_).at[e.reshape(idx, (-1,))].set(True)
    scale = _renorm_scale(w, max_norm, norm_type)
    return e.where(e.expand_dims(used, -1), w * e.astype(scale, w.dtype), w)


def _lookup(idx, w, pi, max_norm, norm_type, scale_grad_by_freq, valid=None):
    """take(w, idx) with PyTorch's padding, max_norm and scale_grad_by_freq rules;
    `valid` marks the real entries of a padded bag table (the rest are fillers)."""
    e = enp()
    out = e.take(w, idx, axis=0)
    if max_norm is not None:
        # PyTorch renormalises the table in place without recording it, then looks
        # up: the output is renormalised, the weight's gradient is the plain
        # scatter of the output gradient (not scaled by the renorm factor)
        out = stop_gradient(out * e.astype(_renorm_scale(out, max_norm, norm_type), out.dtype)) + \
            (out - stop_gradient(out))
    if scale_grad_by_freq:
        # each looked-up row's gradient divided by how often its index occurs in the
        # whole input; the value is unchanged (out - stop_gradient(out) is 0)
        hits = e.ones(idx.shape, dtype=out.dtype) if valid is None else e.astype(valid, out.dtype)
        counts = e.zeros((w.shape[0],), dtype=out.dtype).at[e.reshape(idx, (-1,))].add(
            e.reshape(hits, (-1,)))
        inv = 1.0 / e.maximum(e.take(counts, idx, axis=0), 1.0)
        out = stop_gradient(out) + (out - stop_gradient(out)) * e.expand_dims(inv, -1)
    if pi is not None:
        out = e.where(e.expand_dims(idx == pi, -1), stop_gradient(out), out)
    return out


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` (num_embeddings, dim) at the integer indices `input`.

    As in PyTorch: positions equal to `padding_idx` (negative counts from the end)
    contribute no gradient to that row; `scale_grad_by_freq` divides each row's
    gradient by how often its index occurs in `input`; with `max_norm`, looked-up rows
    whose `norm_type`-norm exceeds it are rescaled to `max_norm` in the output and the
    weight's gradient is the unscaled one.  PyTorch also rescales those rows of
    `weight` in place; arrays are immutable, so this function cannot (`nn.Embedding`
    does).  Indices outside
    [0, num_embeddings) raise IndexError (checked when they are concrete).

    Example:
        >>> import ember.numpy as enp
        >>> embedding(enp.asarray([1, 0]), enp.asarray([[0.0, 1.0], [2.0, 3.0]])).tolist()
        [[2.0, 3.0], [0.0, 1.0]]
        >>> embedding(enp.asarray([0]), enp.asarray([[3.0, 4.0]]), max_norm=1.0).tolist()
        [[0.6000000238418579, 0.800000011920929]]
    """
    idx = arr(input)
    _check_indices(idx, "embedding")
    w = _weight(weight, "embedding")
    pi = _padding_index(padding_idx, w.shape[0], "embedding")
    _check_range(idx, w.shape[0], "embedding")
    return _lookup(idx, w, pi, max_norm, norm_type, scale_grad_by_freq)


def _bag_table(idx, offsets, include_last_offset):
    """1-d indices split at concrete `offsets` -> a (bags, longest) index table and
    the mask of its real entries (numpy: the bag layout is static)."""
    if isinstance(offsets, Tracer):
        raise ValueError("embedding_bag: offsets must be concrete (they fix the bag layout, a "
                         "static shape); under jit pass a 2-d input (bags, indices per bag) instead")
    offs = np.asarray(offsets).astype(np.int64)
    total = idx.shape[0]
    if offs.ndim != 1:
        raise ValueError(f"embedding_bag: offsets has to be a 1-d tensor, got shape {offs.shape}")
    if offs.size and (offs[0] != 0 or (np.diff(offs) < 0).any() or offs[-1] > total):
        raise ValueError(f"embedding_bag: offsets must start at 0 and be non-decreasing and at most "
                         f"the input length {total}, got {offs.tolist()}")
    if include_last_offset:
        if offs.size == 0:
            raise ValueError("embedding_bag: include_last_offset=True needs at least one offset")
        starts, ends = offs[:-1], offs[1:]
    else:
        starts, ends = offs, np.append(offs[1:], total)
    longest = int((ends - starts).max()) if starts.size else 0
    table = starts[:, None] + np.arange(longest)[None, :]
    valid = table < ends[:, None]
    return np.where(valid, table, 0), valid


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """Sum, mean or max of embeddings over bags (PyTorch's signature): a 2-d `input`
    (B, n) is B bags of n indices; a 1-d `input` is split into bags at `offsets`
    (concrete; an empty bag gives zeros).  Entries equal to `padding_idx` are left
    out of every mode (a bag of only padding gives zeros); `per_sample_weights`
    (input's shape, mode='sum' only) scales each looked-up row; `max_norm` and
    `scale_grad_by_freq` act as in `embedding`.

    Example:
        >>> import ember.numpy as enp
        >>> embedding_bag(enp.asarray([[0, 1]]), enp.asarray([[0.0], [2.0]])).tolist()
        [[1.0]]
        >>> w = enp.asarray([[1.0], [2.0], [3.0]])
        >>> embedding_bag(enp.asarray([0, 2, 1]), w, enp.asarray([0, 2]), mode="sum").tolist()
        [[4.0], [2.0]]
    """
    e = enp()
    idx = arr(input)
    _check_indices(idx, "embedding_bag")
    w = _weight(weight, "embedding_bag")
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
    if per_sample_weights is not None and mode != "sum":
        raise ValueError(f"embedding_bag: per_sample_weights is only supported for mode='sum' (as in "
                         f"PyTorch), got mode={mode!r}; weight the rows yourself with embedding() "
                         f"for other reductions")
    pi = _padding_index(padding_idx, w.shape[0], "embedding_bag")
    _check_range(idx, w.shape[0], "embedding_bag")
    psw = None if per_sample_weights is None else arr(per_sample_weights)
    if psw is not None and tuple(psw.shape) != tuple(idx.shape):
        raise ValueError(f"embedding_bag: per_sample_weights must have the input's shape "
                         f"{tuple(idx.shape)}, got {tuple(psw.shape)}")
    valid = None
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: offsets must be None for a 2-d input (each row is a "
                             "bag); pass a 1-d input to split it at offsets")
    elif idx.ndim == 1:
        if offsets is None:
            raise ValueError("embedding_bag: a 1-d input needs offsets (where each bag starts); "
                             "or pass a 2-d input (bags, indices per bag)")
        table, valid_np = _bag_table(idx, offsets, include_last_offset)
        if idx.shape[0] == 0 or table.shape[1] == 0:
            return e.zeros((table.shape[0], w.shape[1]), dtype=w.dtype)
        table = e.asarray(table.astype(np.int32))
        idx = e.take(idx, table, axis=0)
        if psw is not None:
            psw = e.take(psw, table, axis=0)
        valid = e.asarray(valid_np)
    else:
        raise ValueError(f"embedding_bag: input has to be 1-d (with offsets) or 2-d, got shape "
                         f"{tuple(idx.shape)}")
    emb = _lookup(idx, w, pi, max_norm, norm_type, scale_grad_by_freq, valid)
    keep = valid
    if pi is not None:
        keep = (idx != pi) if keep is None else keep & (idx != pi)
    if mode == "max":
        if keep is None:
            masked = emb
        else:
            masked = e.where(e.expand_dims(keep, -1), emb, -np.inf)
        # argmax: the gradient goes to the first maximum of each bag and dimension
        first = e.argmax(masked, axis=1, keepdims=True)
        out = e.squeeze(e.take_along_axis(masked, first, axis=1, mode="clip"), axis=1)
        if keep is not None:
            out = e.where(e.any(keep, axis=1, keepdims=True), out, 0.0)
        return out
    if keep is not None:
        emb = e.where(e.expand_dims(keep, -1), emb, 0.0)
    if mode == "sum":
        if psw is not None:
            emb = emb * e.expand_dims(e.astype(psw, emb.dtype), -1)
        return e.sum(emb, axis=1)
    if keep is None:
        return e.mean(emb, axis=1)
    return mean_of_sums(emb, e.expand_dims(keep, -1), axis=1, floor=1.0)


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
