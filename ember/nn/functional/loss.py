"""Loss functions with PyTorch's arguments, defaults and reductions.

Example:
    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.mse_loss(enp.asarray([1.0, 2.0]), enp.asarray([1.0, 4.0])).item()
    2.0
"""
from __future__ import annotations

import sys
import warnings

import numpy as np

from ... import dtypes as _dt
from ...fx.core import get_aval
from ._util import arr, enp, float_arr, mean_of_sums, reduce_loss
from .activation import log_softmax
from ...amp._autocast import full_precision
from ...fx.spelling import user_str
from ...transforms.misc import stop_gradient

__all__ = ["mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss", "cross_entropy", "nll_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
           "cosine_embedding_loss", "cosine_similarity", "margin_ranking_loss", "hinge_embedding_loss",
           "soft_margin_loss", "poisson_nll_loss", "gaussian_nll_loss", "triplet_margin_loss",
           "triplet_margin_with_distance_loss", "pairwise_distance", "multi_margin_loss",
           "multilabel_margin_loss", "multilabel_soft_margin_loss"]


def _user_stacklevel():
    """The warnings stacklevel, seen from the caller, of the first frame outside ember."""
    f, level = sys._getframe(1), 1
    while f is not None and f.f_globals.get("__name__", "").startswith("ember."):
        f, level = f.f_back, level + 1
    return level


def legacy_reduction(size_average, reduce, reduction="mean"):
    """`reduction` from PyTorch's deprecated `size_average` / `reduce` flags: when
    either is given it wins (None counts as True; reduce=False gives "none",
    size_average=False "sum", else "mean") and a UserWarning names the
    replacement, as PyTorch does.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     legacy_reduction(False, None)
        'sum'
    """
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{ret}' instead.", UserWarning, stacklevel=_user_stacklevel())
    return ret


def _shape_str(shape):
    return "(" + ", ".join(str(int(d)) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _concrete(x):
    """x's values as numpy when known now (eager, or under grad), else None (jit, vmap)."""
    from ...numpy._util import concrete_or_none
    return concrete_or_none(x)


def _pair(input, target, op, shapes="broadcast"):
    """input and target as floats of one dtype and one shape.  `shapes` says what a
    shape mismatch does, as PyTorch does for `op`: "broadcast" silently, "warn"
    broadcasts with a UserWarning, "same" raises ValueError, "input" allows only a
    target that broadcasts to the input's shape."""
    e = enp()
    x, t = float_arr(input), float_arr(target)
    d = e.result_type(x, t)
    x, t = e.astype(x, d), e.astype(t, d)
    if x.shape == t.shape:
        return x, t
    xs, ts = _shape_str(x.shape), _shape_str(t.shape)
    if shapes == "same":
        raise ValueError(f"{op}: target shape {ts} differs from input shape {xs}; the loss does "
                         f"not broadcast them (it would pair every input with every target). "
                         f"Hint: reshape the target to {xs}, e.g. target.reshape{xs}")
    try:
        shape = tuple(e.broadcast_shapes(x.shape, t.shape))
    except Exception:
        raise ValueError(f"{op}: input shape {xs} and target shape {ts} do not broadcast") from None
    if shapes == "input" and shape != tuple(x.shape):
        raise ValueError(f"{op}: target shape {ts} broadcast with input shape {xs} gives "
                         f"{_shape_str(shape)}, but the loss keeps the input's shape. Hint: "
                         f"reshape the target to {xs}")
    if shapes == "warn":
        warnings.warn(f"{op}: using a target size {ts} that is different to the input size {xs}. "
                      f"This will likely lead to incorrect results due to broadcasting. Please "
                      f"ensure they have the same size.", UserWarning, stacklevel=_user_stacklevel())
    return e.broadcast_to(x, shape), e.broadcast_to(t, shape)


def _clamp0(v):
    """max(v, 0) whose gradient at v = 0 is 1, as PyTorch's clamp_min (maximum splits
    ties); NaN stays NaN."""
    return enp().where(v < 0, 0.0, v)


def _hinge0(v):
    """max(v, 0) whose gradient at v = 0 is 0, as PyTorch's margin kernels (z > 0)."""
    return enp().where(v <= 0, 0.0, v)


def _weighted(loss, weight, x, op):
    """loss * weight for the regression losses, whose weight must have the input's shape."""
    w = arr(weight)
    if tuple(w.shape) != tuple(x.shape):
        raise ValueError(f"{op}: weight must have the input's shape {_shape_str(x.shape)}, got "
                         f"{_shape_str(w.shape)}")
    return loss * w.astype(loss.dtype)


def _check_classes(t, C, op, ignore_index=None, lowest=0):
    """IndexError for class indices outside [lowest, C) (other than ignore_index),
    when the values are known; traced values are checked by the caller's NaN."""
    v = _concrete(t)
    if v is None or v.size == 0:
        return
    bad = (v < lowest) | (v >= C)
    if ignore_index is not None:
        bad &= v != ignore_index
    if bad.any():
        raise IndexError(f"{op}: Target {int(v[bad].flat[0])} is out of bounds: the input has "
                         f"C={C} classes, so class indices must lie in [0, {C - 1}]"
                         + ("" if ignore_index is None else f" or equal ignore_index={ignore_index}"))


@full_precision
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """(input - target)^2, reduced; with `weight` (the input's shape) "mean" is
    sum(weight * loss) / sum(weight), as in PyTorch.

    Example:
        >>> import ember.numpy as enp
        >>> mse_loss(enp.zeros(2), enp.ones(2), reduction="sum").item()
        2.0
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, t = _pair(input, target, "mse_loss", "warn")
    loss = enp().square(x - t)
    if weight is not None:
        return _weighted_mean(_weighted(loss, weight, x, "mse_loss"), weight, reduction, "mse_loss")
    return reduce_loss(loss, reduction, "mse_loss")


@full_precision
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """|input - target|, reduced; with `weight` (the input's shape) "mean" is
    sum(weight * loss) / sum(weight), as in PyTorch.

    Example:
        >>> import ember.numpy as enp
        >>> l1_loss(enp.zeros(2), enp.asarray([1.0, -3.0])).item()
        2.0
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, t = _pair(input, target, "l1_loss", "warn")
    loss = enp().abs(x - t)
    if weight is not None:
        return _weighted_mean(_weighted(loss, weight, x, "l1_loss"), weight, reduction, "l1_loss")
    return reduce_loss(loss, reduction, "l1_loss")


def _weighted_mean(loss, weight, reduction, op):
    if reduction == "mean":
        return mean_of_sums(loss, arr(weight))
    return reduce_loss(loss, reduction, op)


@full_precision
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, else delta * (|d| - 0.5 delta), d = input - target;
    `weight` (the input's shape) multiplies the elementwise loss before the plain
    reduction (PyTorch's "mean" here is mean(weight * loss)).

    Example:
        >>> import ember.numpy as enp
        >>> huber_loss(enp.zeros(2), enp.asarray([0.5, 3.0]), reduction="none").tolist()
        [0.125, 2.5]
    """
    e = enp()
    if not delta > 0:
        raise ValueError(f"huber_loss: delta must be positive, got delta={delta}")
    x, t = _pair(input, target, "huber_loss", "warn")
    d = e.abs(x - t)
    loss = e.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    if weight is not None:
        loss = _weighted(loss, weight, x, "huber_loss")
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
    reduction = legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got beta={beta}")
    x, t = _pair(input, target, "smooth_l1_loss", "warn")
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

    A class index outside [0, C) (other than `ignore_index`) raises IndexError
    when the targets are known; under `jit`/`vmap` they are not, and such a
    target's loss is NaN instead of a silently wrong number.

    Example:
        >>> import ember.numpy as enp
        >>> nll_loss(enp.log(enp.asarray([[0.5, 0.5]])), enp.asarray([0])).item() > 0.69
        True
    """
    e = enp()
    reduction = legacy_reduction(size_average, reduce, reduction)
    lp = _class_axis_last(float_arr(input))
    t = arr(target)
    if not _dt.is_integer(get_aval(t).dtype):
        raise TypeError(f"nll_loss: target must hold class indices (integers), got {user_str(get_aval(t))}")
    if tuple(t.shape) != tuple(lp.shape[:-1]):
        raise ValueError(f"nll_loss: target shape {t.shape} does not match input shape "
                         f"{float_arr(input).shape}")
    C = lp.shape[-1]
    if weight is not None and arr(weight).shape != (C,):
        raise ValueError(f"nll_loss: weight must have shape ({C},), got {_shape_str(arr(weight).shape)}")
    _check_classes(t, C, "nll_loss", ignore_index)
    valid = t != ignore_index
    in_range = (t >= 0) & (t < C)
    safe = e.where(valid & in_range, t, 0)
    picked = e.squeeze(e.take_along_axis(lp, e.expand_dims(safe, -1), axis=-1), axis=-1)
    w = e.take(arr(weight).astype(lp.dtype), safe) if weight is not None else e.ones_like(picked)
    w = e.where(valid, w, 0.0)
    loss = e.where(valid & ~in_range, np.nan, -picked * w)
    if reduction == "mean":
        # every target ignored: NaN (0 / 0) as in PyTorch, but with zero gradients
        total = e.sum(e.astype(w, _dt.accumulation_dtype(lp.dtype)))
        some = total > 0
        return e.where(some, mean_of_sums(loss, e.where(some, total, 1.0)), np.nan).astype(lp.dtype)
    return reduce_loss(loss, reduction, "nll_loss")


@full_precision
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Cross entropy between logits input (N, C, ...) or (C,) and either class
    indices (N, ...) or class probabilities (same shape as input); log-softmax is
    fused in for stability.  `weight` (C,) rescales classes, `ignore_index` skips
    targets (index form), `label_smoothing` mixes the target with the uniform
    distribution; reductions follow PyTorch ("mean" over the weights of counted
    targets for indices, over the batch elements for probabilities).  As in
    PyTorch, `ignore_index` other than -100 with probability targets is an error,
    and out-of-range class indices raise IndexError (see `nll_loss`).

    Example:
        >>> import ember.numpy as enp
        >>> x = enp.asarray([[2.0, 0.0, -1.0]])
        >>> round(cross_entropy(x, enp.asarray([0])).item(), 4)
        0.1698
    """
    e = enp()
    reduction = legacy_reduction(size_average, reduce, reduction)
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
    if ignore_index != -100:
        raise ValueError(f"cross_entropy: ignore_index={ignore_index} is not supported for "
                         f"probability (floating-point, {user_str(get_aval(t))}) targets; "
                         f"PyTorch rejects it too. Hint: pass integer class indices to use "
                         f"ignore_index, or zero the probability rows to leave out (they still "
                         f"count in the 'mean')")
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


def _clamped_logs(p):
    """log p and log(1 - p), each clamped at -100 (PyTorch), without evaluating log(0)."""
    e = enp()
    lo = e.where(p > 0, e.maximum(e.log(e.where(p > 0, p, 1.0)), -100.0), -100.0)
    l1 = e.where(p < 1, e.maximum(e.log1p(-e.where(p < 1, p, 0.0)), -100.0), -100.0)
    return lo, l1


def _bce_primal(p, t):
    lo, l1 = _clamped_logs(p)
    return -(t * lo + (1.0 - t) * l1)


# PyTorch's floor is the float32 constant 1e-12, also in float64
_BCE_EPS = float(np.float32(1e-12))


def _bce_dp(dp, ans, p, t):
    # PyTorch's derivative: the unclamped one, its denominator floored at _BCE_EPS
    return dp * (p - t) / enp().maximum(p * (1.0 - p), _BCE_EPS)


def _bce_dt(dt, ans, p, t):
    lo, l1 = _clamped_logs(p)
    return dt * (l1 - lo)


def _make_bce():
    from ...transforms.custom_derivatives import custom_jvp
    f = custom_jvp(_bce_primal)
    f.defjvps(_bce_dp, _bce_dt)
    return f


_bce = _make_bce()


@full_precision
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-(t log p + (1 - t) log(1 - p)) for probabilities p; each log is clamped at
    -100 and the gradient in p is (p - t) / max(p (1 - p), 1e-12), as in PyTorch
    (so a saturated wrong prediction, p = 0 with t = 1, still gets a large gradient).
    The target must have the input's shape (ValueError otherwise, as in PyTorch).

    Example:
        >>> import ember.numpy as enp
        >>> round(binary_cross_entropy(enp.asarray([0.5]), enp.asarray([1.0])).item(), 4)
        0.6931
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    p, t = _pair(input, target, "binary_cross_entropy", "same")
    loss = _bce(p, t)
    if weight is not None:
        loss = loss * arr(weight)
    return reduce_loss(loss, reduction, "binary_cross_entropy")


@full_precision
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """Sigmoid + binary cross entropy in one stable expression:
    (1 - t) x + (1 + (pos_weight - 1) t) * softplus(-x); `pos_weight` broadcasts
    against the class (last) axis.  The target must have the input's shape
    (ValueError otherwise, as in PyTorch).

    Example:
        >>> import ember.numpy as enp
        >>> round(binary_cross_entropy_with_logits(enp.asarray([0.0]), enp.asarray([1.0])).item(), 4)
        0.6931
    """
    e = enp()
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, t = _pair(input, target, "binary_cross_entropy_with_logits", "same")
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
    reduction = legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"kl_div: {reduction!r} is not a valid value for reduction (use 'none', "
                         f"'batchmean', 'sum' or 'mean')")
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
    """(x1 / max(||x1||, eps)) . (x2 / max(||x2||, eps)) along `dim`: each norm is
    clamped on its own, as in PyTorch 2, so tiny vectors keep their true cosine.

    Example:
        >>> import ember.numpy as enp
        >>> cosine_similarity(enp.asarray([[1.0, 0.0]]), enp.asarray([[1.0, 0.0]])).tolist()
        [1.0]
    """
    e = enp()
    a, b = _pair(x1, x2, "cosine_similarity")
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
    x, y = _pair(input, target, "hinge_embedding_loss")
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
    x, y = _pair(input, target, "soft_margin_loss", "input")
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
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, t = _pair(input, target, "poisson_nll_loss")
    loss = e.exp(x) - t * x if log_input else x - t * e.log(x + eps)
    if full:
        st = t * e.log(e.where(t > 1, t, 1.0)) - t + 0.5 * e.log(2 * np.pi * e.where(t > 1, t, 1.0))
        loss = loss + e.where(t > 1, st, 0.0)
    return reduce_loss(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log(2 pi)).

    As in PyTorch the clamp at `eps` changes the value only: the gradient in `var`
    is that of the unclamped formula at the clamped value.  `var` has the input's
    shape, or one fewer trailing dimension, or a 1 in exactly one place (one
    variance shared along that axis), or is a Python float; a negative entry raises
    ValueError (when the values are known: under `jit` they are not checked).

    Example:
        >>> import ember.numpy as enp
        >>> gaussian_nll_loss(enp.asarray([0.0]), enp.asarray([0.0]), enp.asarray([1.0])).item()
        0.0
    """
    e = enp()
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        if var < 0:
            raise ValueError(f"gaussian_nll_loss: var has negative entry/entries (var={var})")
    else:
        vc = _concrete(var)
        if vc is not None and np.any(vc < 0):
            raise ValueError("gaussian_nll_loss: var has negative entry/entries. Hint: predict a "
                             "variance that is positive by construction, e.g. softplus(raw) or exp(raw)")
    xin = float_arr(input)
    x, t = _pair(xin, target, "gaussian_nll_loss")
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        v = e.full(xin.shape, float(var), dtype=x.dtype)
    else:
        v = float_arr(var).astype(x.dtype)
    if tuple(v.shape) != tuple(xin.shape):
        if tuple(v.shape) == tuple(xin.shape[:-1]):
            v = e.expand_dims(v, -1)
        elif not (v.ndim == xin.ndim
                  and sum(b for a, b in zip(xin.shape, v.shape) if a != b) == 1):
            raise ValueError(f"gaussian_nll_loss: var is of incorrect size: var "
                             f"{_shape_str(v.shape)} for input {_shape_str(xin.shape)}. It must be "
                             f"the input's shape, that shape without the last axis "
                             f"{_shape_str(xin.shape[:-1])}, or the input's shape with one axis of size 1")
    # the clamp moves the value only; the gradient passes through unclamped (PyTorch)
    v = v + stop_gradient(e.maximum(v, eps) - v)
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
    reduction = legacy_reduction(size_average, reduce, reduction)
    a, pz, n = float_arr(anchor), float_arr(positive), float_arr(negative)
    _same_ndim(a, pz, n, "triplet_margin_loss")

    def dist(u, v):
        return pairwise_distance(u, v, p, eps)

    dp, dn = dist(a, pz), dist(a, n)
    if swap:
        dn = e.minimum(dn, dist(pz, n))
    return reduce_loss(_clamp0(dp - dn + margin), reduction, "triplet_margin_loss")


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
    a, b = _pair(x1, x2, "pairwise_distance")
    d = e.abs(a - b + eps)
    if p == float("inf"):
        out = e.max(d, axis=-1, keepdims=keepdim)
    elif p == 0:
        out = e.sum(e.astype(d != 0, d.dtype), axis=-1, keepdims=keepdim)
    elif p == 1:
        out = e.sum(d, axis=-1, keepdims=keepdim)
    elif p == 2:
        out = e.sqrt(e.sum(d * d, axis=-1, keepdims=keepdim))
    else:
        out = e.sum(d ** p, axis=-1, keepdims=keepdim) ** (1.0 / p)
    return out


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
    xy = e.take_along_axis(x2, safe[:, None], axis=1)
    h = _hinge0(margin - xy + x2)
    if p == 2:
        h = h * h
    if weight is not None:
        w = float_arr(weight).astype(x2.dtype)
        if w.shape != (C,):
            raise ValueError(f"multi_margin_loss: weight must have shape ({C},), got {_shape_str(w.shape)}")
        h = h * e.take(w, safe)[:, None]
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
    xt = e.take_along_axis(x2, safe, axis=1)                                      # (N, S)
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
    x, t = _pair(input, target, "multilabel_soft_margin_loss")
    loss = t * e.logaddexp(-x, 0.0) + (1.0 - t) * e.logaddexp(x, 0.0)
    if weight is not None:
        loss = loss * float_arr(weight).astype(loss.dtype)
    loss = e.sum(loss, axis=-1) / x.shape[-1]
    return reduce_loss(loss, reduction, "multilabel_soft_margin_loss")
