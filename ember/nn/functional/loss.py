"""Loss functions with PyTorch's arguments, defaults and reductions: regression,
classification and likelihood losses, and the helpers every loss shares (margin and
distance losses are in `loss_margin.py`).

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
from ._util import arr, at_user, enp, float_arr, is_array, mean_of_sums, reduce_loss
from .activation import log_softmax
from ...amp._autocast import full_precision
from ...fx.spelling import user_str
from ...transforms.misc import stop_gradient

__all__ = ["mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss", "cross_entropy", "nll_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
           "gaussian_nll_loss"]


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


def _dtype_name(d):
    return user_str(np.dtype(d))


def _require_float(a, name, op):
    """TypeError, naming the argument, where PyTorch refuses a non-float `name`."""
    d = get_aval(a).dtype
    if not _dt.is_inexact(d):
        raise TypeError(f"{op}: {name} must be a floating-point array (float16, bfloat16, "
                        f"float32 or float64), got {_dtype_name(d)}, which PyTorch rejects too. "
                        f"Hint: {name}.astype('float32')")


def _pair(input, target, op, shapes="broadcast", dtype="promote", float_input=False,
          float_target=False, integers="raise", bools=True, names=("input", "target")):
    """input and target as floats of one dtype and one shape.  `shapes` says what a
    shape mismatch does, as PyTorch does for `op`: "broadcast" silently, "warn"
    broadcasts with a UserWarning, "same" raises ValueError, "input" allows only a
    target that broadcasts to the input's shape.  `dtype` is the dtype PyTorch gives
    `op`: "promote" the promotion of the two (an integer never widens a float, so
    float16 with int64 stays float16), "input" the input's
    dtype, "same" a TypeError unless both already have one floating dtype.  Two
    integer arrays raise TypeError (PyTorch has no integer kernel), or with
    `integers="float32"` give float32 (poisson_nll_loss, whose torch version is composite).
    `float_input` / `float_target`: a TypeError for an integer or bool one, where
    PyTorch refuses it; `bools=False`: a TypeError for a bool one (the losses whose
    torch version subtracts the two, which torch refuses for bool).  `names`: the two
    arguments as the errors call them (("x1", "x2") for the distances)."""
    e = enp()
    x, t = arr(input), arr(target)
    nx, nt = names
    if float_input or dtype == "same":
        _require_float(x, nx, op)
    if float_target or dtype == "same":
        _require_float(t, nt, op)
    dx, dt = get_aval(x).dtype, get_aval(t).dtype
    for name, d in ((nx, dx), (nt, dt)):
        if not bools and d == np.dtype(bool):
            raise TypeError(f"{op}: {name} is bool, which PyTorch rejects here too (it subtracts "
                            f"input and target). Hint: {name}.astype('float32')")
    if dtype == "same" and dx != dt:
        raise TypeError(f"{op}: {nx} ({_dtype_name(dx)}) and {nt} ({_dtype_name(dt)}) must have "
                        f"the same dtype; PyTorch raises here too. Hint: "
                        f"{nt}.astype('{_dtype_name(dx)}')")
    if not (_dt.is_inexact(dx) or _dt.is_inexact(dt)) and integers != "float32":
        raise TypeError(f"{op}: {nx} ({_dtype_name(dx)}) and {nt} ({_dtype_name(dt)}) are both "
                        f"integers, which PyTorch rejects too. Hint: {nx}.astype('float32')")
    d = dx if dtype == "input" and _dt.is_inexact(dx) else e.result_type(x, t)
    if not _dt.is_inexact(d):
        d = _dt.float32
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


def _class_weight(weight, C, dtype, op):
    """The per-class `weight` (C,) in `dtype`, the input's: PyTorch's class-index
    losses (nll_loss, cross_entropy with indices, multi_margin_loss) raise when an
    array weight has another dtype, so this raises TypeError too."""
    w = arr(weight)
    if tuple(w.shape) != (C,):
        raise ValueError(f"{op}: weight must have shape ({C},), got {_shape_str(w.shape)}")
    wd = get_aval(w).dtype
    if is_array(weight) and wd != np.dtype(dtype):
        raise TypeError(f"{op}: weight ({_dtype_name(wd)}) must have the input's dtype "
                        f"({_dtype_name(dtype)}); PyTorch raises here too. Hint: "
                        f"weight.astype('{_dtype_name(dtype)}')")
    return w.astype(dtype)


def _broadcast_weight(weight, loss, name, op):
    """`weight` as an array that broadcasts to the elementwise loss's shape (PyTorch's
    rule for weight= and pos_weight=), else a ValueError naming both shapes."""
    w = arr(weight)
    try:
        np.broadcast_shapes(tuple(w.shape), tuple(loss.shape))
        ok = np.broadcast_shapes(tuple(w.shape), tuple(loss.shape)) == tuple(loss.shape)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{op}: {name} of shape {_shape_str(w.shape)} must broadcast to the "
                         f"input's shape {_shape_str(loss.shape)}; PyTorch raises here too"
                         f"{at_user()}")
    return w


def _times_weight(loss, weight):
    """loss * weight with PyTorch's promotion (a float64 weight makes a float32 loss
    float64); a weight that is not an array takes the loss's dtype."""
    w = arr(weight)
    if not is_array(weight) or not _dt.is_inexact(get_aval(w).dtype):
        w = w.astype(loss.dtype)
    return loss * w


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
    x, t = _pair(input, target, "l1_loss", "warn", bools=False)
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
    x, t = _pair(input, target, "huber_loss", "warn", dtype="input", float_input=True)
    r = x - t
    d = e.abs(r)
    # the quadratic piece squares r, not |r|: through abs (derivative sign(0) = 0) the
    # second derivative at r == 0 came out 0 instead of 1
    loss = e.where(d < delta, 0.5 * r * r, delta * (d - 0.5 * delta))
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
    r = x - t
    d = e.abs(r)
    if beta == 0:
        loss = d
    else:
        loss = e.where(d < beta, 0.5 * r * r / beta, d - 0.5 * beta)   # r * r: as in huber_loss
    return reduce_loss(loss, reduction, "smooth_l1_loss")


def _class_axis_last(x, op="nll_loss"):
    """(N, C, d1, ...) -> (N, d1, ..., C); (C,) stays; a 0-d input has no class axis."""
    if x.ndim == 0:
        raise ValueError(f"{op}: expected an input of 1 or more dimensions, (C,) or (N, C, ...), got a "
                         f"0-d input; PyTorch raises here too{at_user()}")
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
    if weight is not None:
        weight = _class_weight(weight, C, lp.dtype, "nll_loss")
    _check_classes(t, C, "nll_loss", ignore_index)
    valid, in_range, safe, w = _target_weights(t, weight, ignore_index, C, lp.dtype)
    picked = e.squeeze(e.take_along_axis(lp, e.expand_dims(safe, -1), axis=-1, mode="clip"), axis=-1)
    loss = e.where(valid & ~in_range, np.nan, -picked * w)
    if reduction == "mean":
        return weighted_target_mean(loss, w)
    return reduce_loss(loss, reduction, "nll_loss")


def _target_weights(t, weight, ignore_index, C, dtype):
    """For class indices t: (counted, in [0, C), t with the others set to 0, and each
    target's class weight, 0 where ignored), as `nll_loss` weighs its targets."""
    e = enp()
    valid = t != ignore_index
    in_range = (t >= 0) & (t < C)
    safe = e.where(valid & in_range, t, 0)
    w = e.take(arr(weight).astype(dtype), safe, mode="clip") if weight is not None else e.ones(t.shape, dtype)
    return valid, in_range, safe, e.where(valid, w, 0.0)


def weighted_target_mean(loss, w):
    """PyTorch's "mean" for class-index losses: sum(loss) / sum(w) over the targets'
    class weights `w` (0 for ignored ones); with every target ignored NaN (0 / 0) as
    in PyTorch, but with zero gradients.

    Example:
        >>> import ember.numpy as enp
        >>> weighted_target_mean(enp.asarray([2.0, 0.0]), enp.asarray([0.5, 0.0])).item()
        4.0
    """
    e = enp()
    d = get_aval(loss).dtype
    total = e.sum(e.astype(w, _dt.accumulation_dtype(d)))
    some = total > 0
    return e.where(some, mean_of_sums(loss, e.where(some, total, 1.0)), np.nan).astype(d)


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
    x = arr(input)
    _require_float(x, "input", "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    cdim = 0 if x.ndim == 1 else 1
    C = x.shape[cdim]
    lp = log_softmax(x, dim=cdim)
    t = arr(target)
    if _dt.is_integer(get_aval(t).dtype):
        w = _class_weight(weight, C, lp.dtype, "cross_entropy") if weight is not None else None
        nll = nll_loss(lp, t, w, ignore_index=ignore_index, reduction=reduction)
        if label_smoothing == 0.0:
            return nll
        lpl = _class_axis_last(lp, "cross_entropy")
        valid = t != ignore_index
        smooth = -e.sum(lpl * w if w is not None else lpl, axis=-1)
        smooth = e.where(valid, smooth, 0.0)
        if reduction == "mean":
            sm = mean_of_sums(smooth, _target_weights(t, w, ignore_index, C, lp.dtype)[3])
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
    # probability targets: PyTorch promotes input, target and weight to one dtype
    _require_float(t, "target", "cross_entropy")
    w = arr(weight) if weight is not None else None
    if w is not None and tuple(w.shape) != (C,):
        raise ValueError(f"cross_entropy: weight must have shape ({C},), got {_shape_str(w.shape)}")
    d = e.result_type(lp, t, w) if w is not None and is_array(weight) else e.result_type(lp, t)
    lp, t = e.astype(lp, d), e.astype(t, d)
    w = e.astype(w, d) if w is not None else None
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
    p, t = _pair(input, target, "binary_cross_entropy", "same", dtype="same")
    for name, v in (("input", p), ("target", t)):
        c = _concrete(v)
        if c is not None and c.size and not ((c >= 0) & (c <= 1)).all():
            bad = c[~((c >= 0) & (c <= 1))].flat[0]
            hint = ("apply sigmoid first, or use binary_cross_entropy_with_logits for logits"
                    if name == "input" else "targets are probabilities in [0, 1]")
            raise ValueError(f"binary_cross_entropy: all elements of {name} should be between 0 "
                             f"and 1, got {float(bad)!r}; PyTorch raises here too. Hint: {hint}"
                             f"{at_user()}")
    loss = _bce(p, t)
    if weight is not None:
        # PyTorch multiplies in place: the loss keeps the input's dtype
        loss = loss * _broadcast_weight(weight, loss, "weight", "binary_cross_entropy").astype(loss.dtype)
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
    op = "binary_cross_entropy_with_logits"
    x, t = _pair(input, target, op, "same", float_input=True, float_target=True)
    # PyTorch's loss has the target's dtype (its first step is in place on 1 - target),
    # whatever the dtypes of input, weight and pos_weight
    out = get_aval(arr(target)).dtype
    sp = e.logaddexp(-x, 0.0)  # softplus(-x) = -log(sigmoid(x))
    if pos_weight is not None:
        pw = _broadcast_weight(pos_weight, x, "pos_weight", op)
        lw = 1.0 + (pw.astype(x.dtype) - 1.0) * t
        loss = (1.0 - t) * x + lw * sp
    else:
        loss = (1.0 - t) * x + sp
    if weight is not None:
        loss = loss * _broadcast_weight(weight, loss, "weight", op).astype(loss.dtype)
    return e.astype(reduce_loss(loss, reduction, op), out)


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
    x, t = _pair(input, target, "kl_div", float_input=True, float_target=True)
    if log_target:
        loss = e.exp(t) * (t - x)
    else:
        pos = t > 0
        loss = e.where(pos, t * (e.log(e.where(pos, t, 1.0)) - x), 0.0)
    if reduction == "batchmean":
        return mean_of_sums(loss, x.shape[0] if x.ndim else 1)
    return reduce_loss(loss, reduction, "kl_div")


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
    x, t = _pair(input, target, "poisson_nll_loss", integers="float32")
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
        # PyTorch promotes input, target and var to one dtype
        v = arr(var)
        d = e.result_type(x, v) if is_array(var) else x.dtype
        x, t, v = e.astype(x, d), e.astype(t, d), e.astype(v, d)
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
