"""Loss functions with PyTorch's arguments, defaults and reductions.

Example:
    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.mse_loss(enp.asarray([1.0, 2.0]), enp.asarray([1.0, 4.0])).item()
    2.0
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ...fx.core import get_aval
from ._util import arr, enp, float_arr, mean_of_sums, reduce_loss
from .activation import log_softmax
from ...amp._autocast import full_precision
from ...fx.spelling import user_str

__all__ = ["mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss", "cross_entropy", "nll_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
           "cosine_embedding_loss", "cosine_similarity", "margin_ranking_loss", "hinge_embedding_loss",
           "soft_margin_loss", "poisson_nll_loss", "gaussian_nll_loss", "triplet_margin_loss"]


def _pair(input, target, op):
    e = enp()
    x, t = float_arr(input), float_arr(target)
    d = e.result_type(x, t)
    x, t = e.astype(x, d), e.astype(t, d)
    if x.shape != t.shape:
        try:
            shape = tuple(e.broadcast_shapes(x.shape, t.shape))
        except Exception:
            raise ValueError(f"{op}: input shape {x.shape} and target shape {t.shape} do not "
                             f"broadcast") from None
        x, t = e.broadcast_to(x, shape), e.broadcast_to(t, shape)
    return x, t


@full_precision
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """(input - target)^2, reduced.

    Example:
        >>> import ember.numpy as enp
        >>> mse_loss(enp.zeros(2), enp.ones(2), reduction="sum").item()
        2.0
    """
    x, t = _pair(input, target, "mse_loss")
    loss = enp().square(x - t)
    if weight is not None:
        loss = loss * arr(weight)
    return reduce_loss(loss, reduction, "mse_loss")


@full_precision
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """|input - target|, reduced.

    Example:
        >>> import ember.numpy as enp
        >>> l1_loss(enp.zeros(2), enp.asarray([1.0, -3.0])).item()
        2.0
    """
    x, t = _pair(input, target, "l1_loss")
    return reduce_loss(enp().abs(x - t), reduction, "l1_loss")


@full_precision
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, else delta * (|d| - 0.5 delta), d = input - target.

    Example:
        >>> import ember.numpy as enp
        >>> huber_loss(enp.zeros(2), enp.asarray([0.5, 3.0]), reduction="none").tolist()
        [0.125, 2.5]
    """
    e = enp()
    x, t = _pair(input, target, "huber_loss")
    d = e.abs(x - t)
    loss = e.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    if weight is not None:
        loss = loss * arr(weight)
    return reduce_loss(loss, reduction, "huber_loss")


@full_precision
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (|d| when beta = 0).

    Example:
        >>> import ember.numpy as enp
        >>> smooth_l1_loss(enp.zeros(2), enp.asarray([0.5, 3.0]), reduction="none").tolist()
        [0.125, 2.5]
    """
    e = enp()
    x, t = _pair(input, target, "smooth_l1_loss")
    d = e.abs(x - t)
    if beta == 0:
        loss = d
    else:
        loss = e.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return reduce_loss(loss, reduction, "smooth_l1_loss")


def _class_axis_last(x):
    """(N, C, d1, ...) -> (N, d1, ..., C); (C,) stays."""
    return x if x.ndim == 1 else enp().moveaxis(x, 1, -1)


@full_precision
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """-input[n, target[n]] (weighted by `weight[target]`) for log-probabilities
    input (N, C, ...) or (C,); targets equal to `ignore_index` are skipped; "mean"
    divides by the total weight of the counted targets.

    Example:
        >>> import ember.numpy as enp
        >>> nll_loss(enp.log(enp.asarray([[0.5, 0.5]])), enp.asarray([0])).item() > 0.69
        True
    """
    e = enp()
    lp = _class_axis_last(float_arr(input))
    t = arr(target)
    if not _dt.is_integer(get_aval(t).dtype):
        raise TypeError(f"nll_loss: target must hold class indices (integers), got {user_str(get_aval(t))}")
    if tuple(t.shape) != tuple(lp.shape[:-1]):
        raise ValueError(f"nll_loss: target shape {t.shape} does not match input shape "
                         f"{float_arr(input).shape}")
    C = lp.shape[-1]
    valid = t != ignore_index
    safe = e.where(valid, t, 0)
    picked = e.squeeze(e.take_along_axis(lp, e.expand_dims(safe, -1), axis=-1), axis=-1)
    w = e.take(arr(weight).astype(lp.dtype), safe) if weight is not None else e.ones_like(picked)
    if weight is not None and arr(weight).shape != (C,):
        raise ValueError(f"nll_loss: weight must have shape ({C},), got {arr(weight).shape}")
    w = e.where(valid, w, 0.0)
    loss = -picked * w
    if reduction == "mean":
        return mean_of_sums(loss, w)
    return reduce_loss(loss, reduction, "nll_loss")


@full_precision
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Cross entropy between logits input (N, C, ...) or (C,) and either class
    indices (N, ...) or class probabilities (same shape as input); log-softmax is
    fused in for stability.  `weight` (C,) rescales classes, `ignore_index` skips
    targets (index form), `label_smoothing` mixes the target with the uniform
    distribution; reductions follow PyTorch ("mean" over the weights of counted
    targets for indices, over the batch elements for probabilities).

    Example:
        >>> import ember.numpy as enp
        >>> x = enp.asarray([[2.0, 0.0, -1.0]])
        >>> round(cross_entropy(x, enp.asarray([0])).item(), 4)
        0.1698
    """
    e = enp()
    x = float_arr(input)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    cdim = 0 if x.ndim == 1 else 1
    C = x.shape[cdim]
    lp = log_softmax(x, dim=cdim)
    t = arr(target)
    w = arr(weight).astype(lp.dtype) if weight is not None else None
    if w is not None and w.shape != (C,):
        raise ValueError(f"cross_entropy: weight must have shape ({C},), got {w.shape}")
    if _dt.is_integer(get_aval(t).dtype):
        nll = nll_loss(lp, t, w, ignore_index=ignore_index, reduction=reduction)
        if label_smoothing == 0.0:
            return nll
        lpl = _class_axis_last(lp)
        valid = t != ignore_index
        smooth = -e.sum(lpl * w if w is not None else lpl, axis=-1)
        smooth = e.where(valid, smooth, 0.0)
        if reduction == "mean":
            if w is not None:
                denom = e.where(valid, e.take(w, e.where(valid, t, 0)), 0.0)
            else:
                denom = valid
            sm = mean_of_sums(smooth, denom)
        else:
            sm = reduce_loss(smooth, reduction, "cross_entropy")
        return (1.0 - label_smoothing) * nll + sm * (label_smoothing / C)
    # probabilities
    t = e.astype(t, lp.dtype)
    if t.shape != x.shape:
        raise ValueError(f"cross_entropy: probability targets must have the input's shape {x.shape}, "
                         f"got {t.shape}")
    if label_smoothing > 0.0:
        t = t * (1.0 - label_smoothing) + label_smoothing / C
    prod = lp * t
    if w is not None:
        prod = prod * e.reshape(w, (C,) + (1,) * (x.ndim - 1 - cdim))
    loss = -e.sum(prod, axis=cdim)
    if reduction == "mean":
        return mean_of_sums(loss, loss.size if loss.ndim else 1)
    return reduce_loss(loss, reduction, "cross_entropy")


@full_precision
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-(t log p + (1 - t) log(1 - p)) for probabilities p; each log is clamped at
    -100 as in PyTorch.

    Example:
        >>> import ember.numpy as enp
        >>> round(binary_cross_entropy(enp.asarray([0.5]), enp.asarray([1.0])).item(), 4)
        0.6931
    """
    e = enp()
    p, t = _pair(input, target, "binary_cross_entropy")
    # log clamped at -100 (PyTorch), without evaluating log(0): the gradient stays finite
    lo = e.where(p > 0, e.maximum(e.log(e.where(p > 0, p, 1.0)), -100.0), -100.0)
    l1 = e.where(p < 1, e.maximum(e.log1p(-e.where(p < 1, p, 0.0)), -100.0), -100.0)
    loss = -(t * lo + (1.0 - t) * l1)
    if weight is not None:
        loss = loss * arr(weight)
    return reduce_loss(loss, reduction, "binary_cross_entropy")


@full_precision
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """Sigmoid + binary cross entropy in one stable expression:
    (1 - t) x + (1 + (pos_weight - 1) t) * softplus(-x).

    Example:
        >>> import ember.numpy as enp
        >>> round(binary_cross_entropy_with_logits(enp.asarray([0.0]), enp.asarray([1.0])).item(), 4)
        0.6931
    """
    e = enp()
    x, t = _pair(input, target, "binary_cross_entropy_with_logits")
    sp = e.logaddexp(-x, 0.0)  # softplus(-x) = -log(sigmoid(x))
    if pos_weight is not None:
        lw = 1.0 + (arr(pos_weight).astype(x.dtype) - 1.0) * t
        loss = (1.0 - t) * x + lw * sp
    else:
        loss = (1.0 - t) * x + sp
    if weight is not None:
        loss = loss * arr(weight)
    return reduce_loss(loss, reduction, "binary_cross_entropy_with_logits")


@full_precision
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL(target || exp(input)) pointwise for log-probabilities `input`:
    t (log t - input) (0 where t = 0), or exp(t) (t - input) with `log_target`.
    Reductions: "mean" (over elements, PyTorch's default), "batchmean" (sum / N),
    "sum", "none".

    Example:
        >>> import ember.numpy as enp
        >>> p = enp.log(enp.asarray([0.5, 0.5]))
        >>> kl_div(p, enp.asarray([0.5, 0.5]), reduction="sum").item()
        0.0
    """
    e = enp()
    x, t = _pair(input, target, "kl_div")
    if log_target:
        loss = e.exp(t) * (t - x)
    else:
        pos = t > 0
        loss = e.where(pos, t * (e.log(e.where(pos, t, 1.0)) - x), 0.0)
    if reduction == "batchmean":
        return mean_of_sums(loss, x.shape[0] if x.ndim else 1)
    return reduce_loss(loss, reduction, "kl_div")


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """x1 . x2 / max(||x1|| ||x2||, eps) along `dim`.

    Example:
        >>> import ember.numpy as enp
        >>> cosine_similarity(enp.asarray([[1.0, 0.0]]), enp.asarray([[1.0, 0.0]])).tolist()
        [1.0]
    """
    e = enp()
    a, b = _pair(x1, x2, "cosine_similarity")
    n1 = e.sqrt(e.sum(a * a, axis=dim))
    n2 = e.sqrt(e.sum(b * b, axis=dim))
    return e.sum(a * b, axis=dim) / e.maximum(n1 * n2, eps)


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
    a, b = _pair(input1, input2, "cosine_embedding_loss")
    dim = a.ndim - 1
    eps = 1e-12
    prod = e.sum(a * b, axis=dim)
    mag1 = e.sum(a * a, axis=dim) + eps
    mag2 = e.sum(b * b, axis=dim) + eps
    cos = prod / e.sqrt(mag1 * mag2)
    y = arr(target)
    loss = e.where(y == 1, 1.0 - cos, e.where(y == -1, e.maximum(cos - margin, 0.0), 0.0))
    return reduce_loss(loss, reduction, "cosine_embedding_loss")


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -target * (x1 - x2) + margin).

    Example:
        >>> import ember.numpy as enp
        >>> margin_ranking_loss(enp.asarray([1.0]), enp.asarray([2.0]), enp.asarray([1.0])).item()
        1.0
    """
    a, b = _pair(input1, input2, "margin_ranking_loss")
    return reduce_loss(enp().maximum(-float_arr(target) * (a - b) + margin, 0.0), reduction,
                       "margin_ranking_loss")


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """x where target = 1, max(0, margin - x) where target = -1.

    Example:
        >>> import ember.numpy as enp
        >>> hinge_embedding_loss(enp.asarray([0.3, 0.3]), enp.asarray([1, -1]), reduction="none").tolist()
        [0.30000001192092896, 0.699999988079071]
    """
    e = enp()
    x = float_arr(input)
    y = arr(target)
    loss = e.where(y == 1, x, 0.0) + e.where(y == -1, e.maximum(margin - x, 0.0), 0.0)
    return reduce_loss(loss, reduction, "hinge_embedding_loss")


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-y x)).

    Example:
        >>> import ember.numpy as enp
        >>> round(soft_margin_loss(enp.asarray([0.0]), enp.asarray([1.0])).item(), 4)
        0.6931
    """
    x, y = _pair(input, target, "soft_margin_loss")
    return reduce_loss(enp().logaddexp(-y * x, 0.0), reduction, "soft_margin_loss")


@full_precision
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Poisson negative log-likelihood: exp(x) - t x (log_input) or x - t log(x + eps),
    plus Stirling's term for t > 1 when `full`.

    Example:
        >>> import ember.numpy as enp
        >>> poisson_nll_loss(enp.asarray([0.0]), enp.asarray([1.0])).item()
        1.0
    """
    e = enp()
    x, t = _pair(input, target, "poisson_nll_loss")
    loss = e.exp(x) - t * x if log_input else x - t * e.log(x + eps)
    if full:
        st = t * e.log(e.where(t > 1, t, 1.0)) - t + 0.5 * e.log(2 * np.pi * e.where(t > 1, t, 1.0))
        loss = loss + e.where(t > 1, st, 0.0)
    return reduce_loss(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log(2 pi)).

    Example:
        >>> import ember.numpy as enp
        >>> gaussian_nll_loss(enp.asarray([0.0]), enp.asarray([0.0]), enp.asarray([1.0])).item()
        0.0
    """
    e = enp()
    x, t = _pair(input, target, "gaussian_nll_loss")
    v = e.maximum(float_arr(var), eps)
    if v.ndim == x.ndim - 1:
        v = e.expand_dims(v, -1)
    loss = 0.5 * (e.log(v) + e.square(x - t) / v)
    if full:
        loss = loss + 0.5 * float(np.log(2 * np.pi))
    return reduce_loss(loss, reduction, "gaussian_nll_loss")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with the p-norm distance (+eps, as PyTorch).

    Example:
        >>> import ember.numpy as enp
        >>> triplet_margin_loss(enp.zeros((1, 2)), enp.zeros((1, 2)), enp.ones((1, 2))).item() >= 0
        True
    """
    e = enp()
    a, pz, n = float_arr(anchor), float_arr(positive), float_arr(negative)

    def dist(u, v):
        return e.sum(e.abs(u - v + eps) ** p, axis=-1) ** (1.0 / p)

    dp, dn = dist(a, pz), dist(a, n)
    if swap:
        dn = e.minimum(dn, dist(pz, n))
    return reduce_loss(e.maximum(dp - dn + margin, 0.0), reduction, "triplet_margin_loss")
