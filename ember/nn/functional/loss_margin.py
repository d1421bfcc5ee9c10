"""Margin, ranking and distance losses with PyTorch's arguments, defaults and
reductions (hinge, triplet, multi-margin, cosine), and the distances they use.

Example:
    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.margin_ranking_loss(enp.asarray([1.0]), enp.asarray([0.0]), enp.asarray([1.0])).item()
    0.0
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ...amp._autocast import full_precision
from ...fx.core import get_aval
from ...fx.spelling import user_str
from ._util import arr, at_user, check_dim, enp, float_arr, float_input, reduce_loss
from .loss import (_check_classes, _clamp0, _class_weight, _hinge0, _pair, _shape_str,
                   _times_weight, legacy_reduction)

__all__ = ["cosine_embedding_loss", "cosine_similarity", "margin_ranking_loss", "hinge_embedding_loss",
           "soft_margin_loss", "pdist", "triplet_margin_loss", "triplet_margin_with_distance_loss",
           "pairwise_distance", "multi_margin_loss", "multilabel_margin_loss",
           "multilabel_soft_margin_loss"]


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """(x1 / max(||x1||, eps)) . (x2 / max(||x2||, eps)) along `dim`: each norm is
    clamped on its own, as in PyTorch 2, so tiny vectors keep their true cosine.

    Example:
        >>> import ember.numpy as enp
        >>> cosine_similarity(enp.asarray([[1.0, 0.0]]), enp.asarray([[1.0, 0.0]])).tolist()
        [1.0]
    """
    e = enp()
    a, b = _pair(x1, x2, "cosine_similarity", names=("x1", "x2"))
    dim = check_dim(dim, max(a.ndim, b.ndim), "cosine_similarity")
    # the clamp acts on the squared norm so that a zero vector's sqrt is never
    # differentiated (its infinite derivative would turn the gradient into NaN)
    s1 = e.sum(a * a, axis=dim, keepdims=True)
    s2 = e.sum(b * b, axis=dim, keepdims=True)
    n1 = e.sqrt(e.where(s1 < eps * eps, eps * eps, s1))
    n2 = e.sqrt(e.where(s2 < eps * eps, eps * eps, s2))
    return e.sum((a / n1) * (b / n2), axis=dim)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where target = 1, max(0, cos(x1, x2) - margin) where target = -1.

    Example:
        >>> import ember.numpy as enp
        >>> a = enp.asarray([[1.0, 0.0]]); b = enp.asarray([[0.0, 1.0]])
        >>> cosine_embedding_loss(a, b, enp.asarray([1])).item()
        1.0
    """
    e = enp()
    reduction = legacy_reduction(size_average, reduce, reduction)
    a, b = float_arr(input1), float_arr(input2)
    y = arr(target)
    if a.shape != b.shape or a.ndim not in (1, 2) or y.ndim != a.ndim - 1 or (
            a.ndim == 2 and y.shape[0] != a.shape[0]):
        raise ValueError(f"cosine_embedding_loss: expected input1 and input2 both (N, D) with "
                         f"target (N,), or both (D,) with a scalar target; got input1 "
                         f"{_shape_str(a.shape)}, input2 {_shape_str(b.shape)}, target "
                         f"{_shape_str(y.shape)}")
    a, b = _pair(a, b, "cosine_embedding_loss")
    dim = a.ndim - 1
    eps = 1e-12
    prod = e.sum(a * b, axis=dim)
    mag1 = e.sum(a * a, axis=dim) + eps
    mag2 = e.sum(b * b, axis=dim) + eps
    cos = prod / e.sqrt(mag1 * mag2)
    loss = e.where(y == 1, 1.0 - cos, e.where(y == -1, _clamp0(cos - margin), 0.0))
    return reduce_loss(loss, reduction, "cosine_embedding_loss")


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -target * (x1 - x2) + margin).

    Example:
        >>> import ember.numpy as enp
        >>> margin_ranking_loss(enp.asarray([1.0]), enp.asarray([2.0]), enp.asarray([1.0])).item()
        1.0
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    a, b, y = float_arr(input1), float_arr(input2), float_arr(target)
    if not a.ndim == b.ndim == y.ndim:
        raise ValueError(f"margin_ranking_loss: input1, input2 and target must have the same "
                         f"number of dimensions, got input1 {_shape_str(a.shape)}, input2 "
                         f"{_shape_str(b.shape)}, target {_shape_str(y.shape)}. Hint: reshape "
                         f"them to one shape, e.g. (N,)")
    a, b = _pair(a, b, "margin_ranking_loss")
    return reduce_loss(_clamp0(-float_arr(target) * (a - b) + margin), reduction,
                       "margin_ranking_loss")


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """x where target = 1, max(0, margin - x) where target = -1; any other target
    value adds both terms, as in PyTorch.

    Example:
        >>> import ember.numpy as enp
        >>> hinge_embedding_loss(enp.asarray([0.3, 0.3]), enp.asarray([1, -1]), reduction="none").tolist()
        [0.30000001192092896, 0.699999988079071]
    """
    e = enp()
    reduction = legacy_reduction(size_average, reduce, reduction)
    # PyTorch broadcasts input and target here (no check, no warning)
    x, y = _pair(input, target, "hinge_embedding_loss", dtype="input", float_input=True)
    loss = e.where(y != -1, x, 0.0) + e.where(y != 1, _clamp0(margin - x), 0.0)
    return reduce_loss(loss, reduction, "hinge_embedding_loss")


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-y x)); the target must broadcast to the input's shape.

    Example:
        >>> import ember.numpy as enp
        >>> round(soft_margin_loss(enp.asarray([0.0]), enp.asarray([1.0])).item(), 4)
        0.6931
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, y = _pair(input, target, "soft_margin_loss", "input", dtype="input", float_input=True)
    return reduce_loss(enp().logaddexp(-y * x, 0.0), reduction, "soft_margin_loss")




def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with the p-norm distance (+eps, as PyTorch).

    Example:
        >>> import ember.numpy as enp
        >>> triplet_margin_loss(enp.zeros((1, 2)), enp.zeros((1, 2)), enp.ones((1, 2))).item() >= 0
        True
    """
    e = enp()
    reduction = legacy_reduction(size_average, reduce, reduction)
    a, pz, n = float_arr(anchor), float_arr(positive), float_arr(negative)
    _same_ndim(a, pz, n, "triplet_margin_loss")
    _positive_margin(margin, "triplet_margin_loss")

    def dist(u, v):
        return pairwise_distance(u, v, p, eps)

    dp, dn = dist(a, pz), dist(a, n)
    if swap:
        dn = e.minimum(dn, dist(pz, n))
    return reduce_loss(_clamp0(dp - dn + margin), reduction, "triplet_margin_loss")


def _positive_margin(margin, op):
    if isinstance(margin, (int, float, np.integer, np.floating)) and not margin > 0:
        raise ValueError(f"{op}: margin must be greater than 0, got margin={margin!r}; PyTorch "
                         f"raises here too{at_user()}")


def _same_ndim(a, p, n, op):
    if not a.ndim == p.ndim == n.ndim:
        raise ValueError(f"{op}: anchor, positive and negative must have the same number of "
                         f"dimensions, got anchor {_shape_str(a.shape)}, positive "
                         f"{_shape_str(p.shape)}, negative {_shape_str(n.shape)}")


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps along the last axis (PyTorch's eps placement).

    Example:
        >>> import ember.numpy as enp
        >>> round(pairwise_distance(enp.asarray([[3.0, 0.0]]), enp.asarray([[0.0, 4.0]])).item(), 4)
        5.0
    """
    e = enp()
    a, b = _pair(x1, x2, "pairwise_distance", integers="float32", names=("x1", "x2"))
    r = a - b + eps
    d = e.abs(r)
    if p == float("inf"):
        out = e.max(d, axis=-1, keepdims=keepdim)
    elif p == 0:
        out = e.sum(e.astype(d != 0, d.dtype), axis=-1, keepdims=keepdim)
    elif p == 1:
        out = e.sum(d, axis=-1, keepdims=keepdim)
    elif p == 2:
        # r * r, not d * d: smooth where r == 0 (abs has derivative sign(0) = 0 there)
        out = e.sqrt(e.sum(r * r, axis=-1, keepdims=keepdim))
    else:
        out = e.sum(d ** p, axis=-1, keepdims=keepdim) ** (1.0 / p)
    return out


def pdist(input, p=2.0):
    """The p-norm distances between all pairs of rows of an (N, M) input: the
    N * (N - 1) / 2 entries above the diagonal of the distance matrix, row by row
    (pairs (0, 1), (0, 2), ..., (1, 2), ...), as PyTorch.  The gradient at a zero
    distance is 0, as PyTorch's.

    Example:
        >>> import ember.numpy as enp
        >>> pdist(enp.asarray([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])).tolist()
        [5.0, 1.0, 4.242640495300293]
    """
    e = enp()
    x = float_input(input, "pdist")
    if x.ndim != 2:
        raise ValueError(f"pdist: expected a 2-d (N, M) input, got shape {tuple(x.shape)}")
    p = float(p)
    if not p >= 0:
        raise ValueError(f"pdist: p must be non-negative, got p={p}")
    i, j = np.triu_indices(x.shape[0], 1)
    d = e.abs(x[i] - x[j])
    if d.shape[-1] == 0:  # rows of no features are all at distance 0
        return e.zeros(d.shape[:1], d.dtype)
    if p == float("inf"):
        return e.max(d, axis=-1)
    if p == 0:
        return e.sum(e.astype(d != 0, d.dtype), axis=-1)
    if p == 1:
        return e.sum(d, axis=-1)
    # the p-th root has an infinite slope at 0: the zero distances take a safe value
    # inside it and are put back as exact zeros, so their gradient is 0 (not nan)
    s = e.sum(d * d if p == 2 else d ** p, axis=-1)
    zero = s == 0
    return e.where(zero, 0.0, e.where(zero, 1.0, s) ** (1.0 / p))


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) for any distance function
    `distance_function(x, y)` (default: `pairwise_distance`); with `swap`,
    d(a, n) becomes min(d(a, n), d(p, n)).

    Example:
        >>> import ember.numpy as enp
        >>> a, p, n = enp.zeros((1, 2)), enp.zeros((1, 2)), enp.ones((1, 2))
        >>> cos = lambda u, v: 1.0 - cosine_similarity(u, v)
        >>> triplet_margin_with_distance_loss(a, p, n, distance_function=cos).item()
        1.0
    """
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"triplet_margin_with_distance_loss: {reduction!r} is not a valid value "
                         f"for reduction (use 'none', 'mean' or 'sum')")
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: margin must be greater than 0, got {margin}")
    a, pz, n = float_arr(anchor), float_arr(positive), float_arr(negative)
    _same_ndim(a, pz, n, "triplet_margin_with_distance_loss")
    dist = pairwise_distance if distance_function is None else distance_function
    dp, dn = dist(a, pz), dist(a, n)
    if swap:
        dn = enp().minimum(dn, dist(pz, n))
    return reduce_loss(_clamp0(margin + dp - dn), reduction,
                       "triplet_margin_with_distance_loss")


def _class_targets(x, target, op):
    """(N, C) scores and (N,) integer targets for the multi-class margin losses."""
    e = enp()
    y = arr(target)
    if not _dt.is_integer(get_aval(y).dtype):
        raise TypeError(f"{op}: target must hold class indices (integers), got {user_str(get_aval(y))}")
    if x.ndim not in (1, 2):
        raise ValueError(f"{op}: input must be (C,) or (N, C), got {_shape_str(x.shape)}")
    N = 1 if x.ndim == 1 else x.shape[0]
    if y.size != N or (x.ndim == 2 and y.ndim != 1):
        want = "() or (1,)" if x.ndim == 1 else f"({N},)"
        raise ValueError(f"{op}: target must have shape {want} for input {_shape_str(x.shape)}, "
                         f"got {_shape_str(y.shape)}")
    return e.reshape(x, (N, x.shape[-1])), e.reshape(y, (N,))


@full_precision
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """Multi-class hinge loss: for each sample, the sum over classes i != y of
    weight[y] * max(0, margin - x[y] + x[i])^p, divided by the number of classes C;
    input (N, C) or (C,), target (N,) or () class indices, p 1 or 2.  Out-of-range
    targets raise IndexError (NaN under `jit`, where the values are unknown).

    Example:
        >>> import ember.numpy as enp
        >>> x = enp.asarray([[0.1, 0.2, 0.4, 0.8]])
        >>> round(multi_margin_loss(x, enp.asarray([3])).item(), 4)
        0.325
    """
    e = enp()
    reduction = legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError(f"multi_margin_loss: only p == 1 and p == 2 are supported, got p={p}")
    x = float_arr(input)
    x2, y = _class_targets(x, target, "multi_margin_loss")
    C = x2.shape[-1]
    _check_classes(y, C, "multi_margin_loss")
    in_range = (y >= 0) & (y < C)
    safe = e.where(in_range, y, 0)
    xy = e.take_along_axis(x2, safe[:, None], axis=1, mode="clip")
    h = _hinge0(margin - xy + x2)
    if p == 2:
        h = h * h
    if weight is not None:
        w = _class_weight(weight, C, x2.dtype, "multi_margin_loss")
        h = h * e.take(w, safe, mode="clip")[:, None]
    others = e.arange(C)[None, :] != safe[:, None]
    loss = e.sum(e.where(others, h, 0.0), axis=1) / C
    loss = e.where(in_range, loss, np.nan)
    if x.ndim == 1:
        loss = loss[0]
    return reduce_loss(loss, reduction, "multi_margin_loss")


@full_precision
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label hinge loss: the targets of a sample are the class indices in its
    target row up to the first -1; the loss sums max(0, 1 - (x[j] - x[i])) over
    target classes j and non-target classes i, divided by C.  input and target are
    (C,) or (N, C); indices outside [-1, C) raise IndexError (NaN under `jit`).

    Example:
        >>> import ember.numpy as enp
        >>> x = enp.asarray([[0.1, 0.2, 0.4, 0.8]])
        >>> round(multilabel_margin_loss(x, enp.asarray([[3, 0, -1, 1]])).item(), 4)
        0.85
    """
    e = enp()
    reduction = legacy_reduction(size_average, reduce, reduction)
    x = float_arr(input)
    y = arr(target)
    if not _dt.is_integer(get_aval(y).dtype):
        raise TypeError(f"multilabel_margin_loss: target must hold class indices (integers), got "
                        f"{user_str(get_aval(y))}")
    if x.ndim not in (1, 2) or tuple(y.shape) != tuple(x.shape):
        raise ValueError(f"multilabel_margin_loss: input must be (C,) or (N, C) and target the "
                         f"same shape, got input {_shape_str(x.shape)}, target {_shape_str(y.shape)}")
    C = x.shape[-1]
    _check_classes(y, C, "multilabel_margin_loss", lowest=-1)
    x2, y2 = e.reshape(x, (-1, C)), e.reshape(y, (-1, C))
    # a row's targets end at its first -1
    active = e.cumsum(e.astype(y2 == -1, _dt.int32), axis=-1) == 0
    in_range = (y2 >= 0) & (y2 < C)
    safe = e.where(active & in_range, y2, 0)
    hit = (safe[:, :, None] == e.arange(C)[None, None, :]) & active[:, :, None]   # (N, S, C)
    is_target = e.any(hit, axis=1)                                                # (N, C)
    xt = e.take_along_axis(x2, safe, axis=1, mode="clip")                                    # (N, S)
    h = _hinge0(1.0 - xt[:, :, None] + x2[:, None, :])
    h = e.where(active[:, :, None] & ~is_target[:, None, :], h, 0.0)
    loss = e.sum(h, axis=(1, 2)) / C
    loss = e.where(e.any(active & ~in_range, axis=1), np.nan, loss)
    if x.ndim == 1:
        loss = loss[0]
    return reduce_loss(loss, reduction, "multilabel_margin_loss")


@full_precision
def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """Per-class binary cross entropy on logits, averaged over the C classes (last
    axis): -(t log sigmoid(x) + (1 - t) log sigmoid(-x)), times `weight` (C,) if
    given, then the mean over classes; reductions act on the per-sample values.

    Example:
        >>> import ember.numpy as enp
        >>> round(multilabel_soft_margin_loss(enp.zeros((1, 2)), enp.asarray([[1.0, 0.0]])).item(), 4)
        0.6931
    """
    e = enp()
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, t = _pair(input, target, "multilabel_soft_margin_loss", float_input=True, bools=False)
    loss = t * e.logaddexp(-x, 0.0) + (1.0 - t) * e.logaddexp(x, 0.0)
    if weight is not None:
        loss = _times_weight(loss, weight)  # a float64 weight makes the loss float64
    loss = e.sum(loss, axis=-1) / x.shape[-1]
    return reduce_loss(loss, reduction, "multilabel_soft_margin_loss")
