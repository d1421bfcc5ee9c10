"""Normalisation: batch, layer, group, instance and RMS norm, and `normalize`.

These are pure: `batch_norm(..., training=True, return_stats=True)` (and
`instance_norm(..., return_stats=True)`) returns the updated running statistics
instead of writing them in place; passing running statistics in training without
`return_stats=True` is an error, since the update PyTorch would make in place
would be lost.

Example:
    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> y = F.layer_norm(enp.asarray([[1.0, 3.0]]), (2,))
    >>> [round(v, 3) for v in y[0].tolist()]
    [-1.0, 1.0]
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ._util import (arr, at_user, check_dim, enp, float_arr, float_input, param_like,
                    same_param_dtype)
from ...amp._autocast import full_precision

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "normalize",
           "local_response_norm"]


_LOST_UPDATE = (
    "{op}: running_mean/running_var were given with {flag}, but ember arrays are immutable, "
    "so the running statistics cannot be updated in place as PyTorch does; pass "
    "return_stats=True to get (out, new_running_mean, new_running_var) back, or pass "
    "None, None to use the batch statistics only")


def _channel_shape(x):
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def _check_channels(op, x, **per_channel):
    """Each given per-channel array (weight, bias, running statistics) must hold one
    value per channel of x (dim 1): PyTorch's check, before a reshape would fail."""
    c = x.shape[1]
    for name, v in per_channel.items():
        if v is None:
            continue
        n = int(np.prod(np.shape(v) if not hasattr(v, "shape") else v.shape))
        if n != c:
            raise ValueError(f"{op}: {name} should contain {c} elements (one per channel of the "
                             f"input of shape {tuple(x.shape)}), not {n} (shape "
                             f"{tuple(np.shape(v) if not hasattr(v, 'shape') else v.shape)}); "
                             f"PyTorch raises here too. Hint: the layer's num_features / "
                             f"num_channels must equal the input's size at dim 1{at_user()}")


@full_precision
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5, *, return_stats=False):
    """Normalise (N, C, ...) per channel: with batch statistics when `training` (or
    when no running statistics are given), else with `running_mean`/`running_var`.

    With `return_stats=True` returns `(out, new_running_mean, new_running_var)`: in
    training, running = (1 - momentum) * running + momentum * batch statistic (the
    unbiased variance, as PyTorch); otherwise the running values unchanged.

    Arrays are immutable, so the in-place update PyTorch makes in training cannot
    happen here: `training=True` with running statistics and without
    `return_stats=True` raises ValueError rather than silently dropping it (pass
    `None, None` to normalise with batch statistics only).

    Example:
        >>> import ember.numpy as enp
        >>> x = enp.asarray([[1.0], [3.0]])
        >>> out, m, v = batch_norm(x, enp.zeros(1), enp.ones(1), training=True, return_stats=True)
        >>> m.tolist(), v.tolist()
        ([0.20000000298023224], [1.100000023841858])
    """
    e = enp()
    x = float_arr(input)
    if x.ndim < 2:
        raise ValueError(f"batch_norm: expected at least a 2-d input (N, C, ...), got shape {x.shape}")
    if training and not return_stats and (running_mean is not None or running_var is not None):
        raise ValueError(_LOST_UPDATE.format(op="batch_norm", flag="training=True"))
    _check_channels("batch_norm", x, running_mean=running_mean, running_var=running_var,
                    weight=weight, bias=bias)
    axes = (0,) + tuple(range(2, x.ndim))
    shape = _channel_shape(x)
    use_batch = training or running_mean is None or running_var is None
    new_mean, new_var = running_mean, running_var
    if use_batch:
        n = int(np.prod([x.shape[a] for a in axes]))
        if training and n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {x.shape}")
        mean = e.mean(x, axis=axes)
        var = e.mean(e.square(x - e.reshape(mean, shape)), axis=axes)
        if training and running_mean is not None:
            m = float(momentum)
            rm, rv = arr(running_mean), arr(running_var)
            new_mean = (1 - m) * rm + m * e.astype(mean, rm.dtype)
            new_var = (1 - m) * rv + m * e.astype(var * (n / max(n - 1, 1)), rv.dtype)
    else:
        mean, var = arr(running_mean), arr(running_var)
    inv = 1.0 / e.sqrt(e.astype(var, x.dtype) + eps)
    out = (x - e.reshape(e.astype(mean, x.dtype), shape)) * e.reshape(inv, shape)
    same_param_dtype("batch_norm", weight=weight, bias=bias)
    if weight is not None:
        out = out * e.reshape(param_like(weight, x, "weight", "batch_norm"), shape)
    if bias is not None:
        out = out + e.reshape(param_like(bias, x, "bias", "batch_norm"), shape)
    if return_stats:
        return out, new_mean, new_var
    return out


@full_precision
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing `normalized_shape` dimensions, then scale and shift.

    Example:
        >>> import ember.numpy as enp
        >>> layer_norm(enp.ones((2, 3)), 3).tolist()
        [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    e = enp()
    x = float_arr(input)
    ns = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(ns):]) != ns:
        raise ValueError(f"layer_norm: input of shape {x.shape} does not end with normalized_shape {ns}")
    for name, v in (("weight", weight), ("bias", bias)):
        if v is not None and tuple(arr(v).shape) != ns:
            raise ValueError(f"layer_norm: expected {name} to be of same shape as normalized_shape "
                             f"{ns}, but got {name} of shape {tuple(arr(v).shape)}; PyTorch raises "
                             f"here too{at_user()}")
    axes = tuple(range(x.ndim - len(ns), x.ndim))
    mean = e.mean(x, axis=axes, keepdims=True)
    var = e.mean(e.square(x - mean), axis=axes, keepdims=True)
    out = (x - mean) / e.sqrt(var + eps)
    same_param_dtype("layer_norm", weight=weight, bias=bias)
    if weight is not None:
        out = out * param_like(weight, x, "weight", "layer_norm")
    if bias is not None:
        out = out + param_like(bias, x, "bias", "layer_norm")
    return out


@full_precision
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise (N, C, ...) over groups of C / num_groups channels (and all spatial
    positions), then scale and shift per channel.

    Example:
        >>> import ember.numpy as enp
        >>> group_norm(enp.ones((2, 4, 3)), 2).shape
        (2, 4, 3)
    """
    e = enp()
    x = float_arr(input)
    if x.ndim < 2 or x.shape[1] % num_groups:
        raise ValueError(f"group_norm: {num_groups} groups do not divide the channels of an input "
                         f"of shape {x.shape}")
    _check_channels("group_norm", x, weight=weight, bias=bias)
    g = e.reshape(x, (x.shape[0], num_groups, int(np.prod(x.shape[1:])) // num_groups))
    mean = e.mean(g, axis=-1, keepdims=True)
    var = e.mean(e.square(g - mean), axis=-1, keepdims=True)
    out = e.reshape((g - mean) / e.sqrt(var + eps), x.shape)
    shape = _channel_shape(x)
    same_param_dtype("group_norm", weight=weight, bias=bias)
    if weight is not None:
        out = out * e.reshape(param_like(weight, x, "weight", "group_norm"), shape)
    if bias is not None:
        out = out + e.reshape(param_like(bias, x, "bias", "group_norm"), shape)
    return out


@full_precision
def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5, *, return_stats=False):
    """Normalise each (sample, channel) over its spatial positions (with
    `running_mean`/`running_var` instead when `use_input_stats=False`).

    With `return_stats=True` returns `(out, new_running_mean, new_running_var)`:
    when the input statistics are used, running = (1 - momentum) * running +
    momentum * (the batch mean of the per-instance mean / unbiased variance), as
    PyTorch; otherwise the running values unchanged.  Running statistics given
    with `use_input_stats=True` need `return_stats=True` (ValueError otherwise),
    since the update cannot be made in place.

    Example:
        >>> import ember.numpy as enp
        >>> instance_norm(enp.ones((2, 3, 4))).shape
        (2, 3, 4)
        >>> x = enp.asarray([[[1.0, 3.0]]])
        >>> out, m, v = instance_norm(x, enp.zeros(1), enp.ones(1), return_stats=True)
        >>> m.tolist(), v.tolist()
        ([0.20000000298023224], [1.100000023841858])
    """
    e = enp()
    x = float_arr(input)
    if x.ndim < 3:
        raise ValueError(f"instance_norm: expected an input (N, C, ...) with at least one spatial "
                         f"dimension, got shape {x.shape}")
    has_stats = running_mean is not None or running_var is not None
    if use_input_stats and has_stats and not return_stats:
        raise ValueError(_LOST_UPDATE.format(op="instance_norm", flag="use_input_stats=True"))
    _check_channels("instance_norm", x, running_mean=running_mean, running_var=running_var,
                    weight=weight, bias=bias)
    new_mean, new_var = running_mean, running_var
    if not use_input_stats and running_mean is not None:
        shape = _channel_shape(x)
        out = (x - e.reshape(arr(running_mean), shape)) / e.sqrt(e.reshape(arr(running_var), shape) + eps)
    else:
        axes = tuple(range(2, x.ndim))
        mean = e.mean(x, axis=axes, keepdims=True)
        var = e.mean(e.square(x - mean), axis=axes, keepdims=True)
        out = (x - mean) / e.sqrt(var + eps)
        if has_stats:
            n = int(np.prod(x.shape[2:]))
            m = momentum
            rm, rv = arr(running_mean), arr(running_var)
            batch_mean = e.mean(e.reshape(mean, x.shape[:2]), axis=0)
            batch_var = e.mean(e.reshape(var, x.shape[:2]), axis=0) * (n / max(n - 1, 1))
            new_mean = e.astype((1 - m) * rm + m * e.astype(batch_mean, rm.dtype), rm.dtype)
            new_var = e.astype((1 - m) * rv + m * e.astype(batch_var, rv.dtype), rv.dtype)
    shape = _channel_shape(x)
    same_param_dtype("instance_norm", weight=weight, bias=bias)
    if weight is not None:
        out = out * e.reshape(param_like(weight, x, "weight", "instance_norm"), shape)
    if bias is not None:
        out = out + e.reshape(param_like(bias, x, "bias", "instance_norm"), shape)
    if return_stats:
        return out, new_mean, new_var
    return out


@full_precision
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) over the trailing `normalized_shape` dimensions;
    `eps` defaults to the machine epsilon of the input's dtype (as PyTorch).

    Example:
        >>> import ember.numpy as enp
        >>> [round(v, 4) for v in rms_norm(enp.asarray([3.0, 4.0]), (2,)).tolist()]
        [0.8485, 1.1314]
    """
    e = enp()
    x = float_arr(input)
    ns = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(ns):]) != ns:
        raise ValueError(f"rms_norm: input of shape {x.shape} does not end with normalized_shape {ns}")
    if eps is None:
        eps = float(_dt.finfo(x.dtype).eps)
    axes = tuple(range(x.ndim - len(ns), x.ndim))
    out = x / e.sqrt(e.mean(e.square(x), axis=axes, keepdims=True) + eps)
    if weight is not None:
        # PyTorch answers in the input's dtype whatever the weight's
        out = out * arr(weight).astype(x.dtype)
    return out


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """x / max(||x||_p, eps) along `dim`.  A zero vector has PyTorch's finite
    gradient (the incoming gradient / eps), not NaN.

    Example:
        >>> import ember.numpy as enp
        >>> normalize(enp.asarray([[3.0, 4.0]])).tolist()
        [[0.6000000238418579, 0.800000011920929]]
    """
    e = enp()
    x = float_input(input, "normalize")
    dim = check_dim(dim, x.ndim, "normalize")
    if p == 0:  # the "0-norm" counts the non-zero entries, as torch.linalg.vector_norm
        norm = e.sum(e.astype(x != 0, x.dtype), axis=dim, keepdims=True)
    elif p == float("inf"):
        norm = e.max(e.abs(x), axis=dim, keepdims=True)
    elif p == 1:
        norm = e.sum(e.abs(x), axis=dim, keepdims=True)
    else:
        total = e.sum(e.square(x) if p == 2 else e.abs(x) ** p, axis=dim, keepdims=True)
        # the root's derivative is infinite at 0 (times a zero: NaN); PyTorch's norm
        # has gradient 0 there, so take the root of a stand-in 1 and select 0 after
        nonzero = total > 0
        safe = e.where(nonzero, total, 1.0)
        root = e.sqrt(safe) if p == 2 else safe ** (1.0 / p)
        norm = e.where(nonzero, root, 0.0)
    return x / e.maximum(norm, eps)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Normalise each channel by the squared activity of `size` neighbouring channels.

    Example:
        >>> import ember.numpy as enp
        >>> local_response_norm(enp.ones((1, 4, 2, 2)), 2).shape
        (1, 4, 2, 2)
    """
    e = enp()
    x = float_arr(input)
    if x.ndim < 3:
        raise ValueError(f"local_response_norm: expected a 3-d or higher input (N, C, ...), got "
                         f"shape {tuple(x.shape)}; PyTorch raises here too{at_user()}")
    if not isinstance(size, (int, np.integer)) or size <= 0:
        raise ValueError(f"local_response_norm: size must be a positive int, got size={size!r}"
                         f"{at_user()}")
    sq = e.square(x)
    c = x.shape[1]
    pad = [(0, 0)] * x.ndim
    pad[1] = (size // 2, (size - 1) // 2)
    sqp = e.pad(sq, pad)
    acc = sum(sqp[:, i:i + c] for i in range(size))
    return x / (k + alpha / size * acc) ** beta
