"""Normalisation layers: `BatchNorm1d/2d/3d` (running statistics as buffers),
`LayerNorm`, `GroupNorm`, `RMSNorm`, `InstanceNorm1d/2d/3d`, `LocalResponseNorm`.

BatchNorm in training mode writes its new running statistics into its buffers;
under a transform use `nn.functional_call` (which returns the updated buffers) or
`nn.TrainStep`.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> bn = nn.BatchNorm1d(2)
    >>> _ = bn(enp.asarray([[1.0, 2.0], [3.0, 6.0]]))
    >>> bn.running_mean.tolist()
    [0.20000000298023224, 0.4000000059604645]
"""
from __future__ import annotations

import numpy as np

from ... import numpy as enp
from .. import functional as F
from .. import init
from ..module import Module
from ._common import check_sizes, param_dtype, place

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm", "GroupNorm", "RMSNorm",
           "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm"]


class _BatchNorm(Module):
    _ndims = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None):
        super().__init__()
        self.num_features, self.eps, self.momentum = int(num_features), float(eps), momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        d = param_dtype(dtype)
        if affine:
            self.weight = place(init.ones_((num_features,), dtype=d), device)
            self.bias = place(init.zeros_((num_features,), dtype=d), device)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", place(init.zeros_((num_features,), dtype=d), device))
            self.register_buffer("running_var", place(init.ones_((num_features,), dtype=d), device))
            self.register_buffer("num_batches_tracked",
                                 place(enp.asarray(np.array(0, np.int32)), device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self):
        """Reset the running statistics to mean 0, variance 1, 0 batches.

        Example:
            >>> BatchNorm1d(2).reset_running_stats()
        """
        if self.track_running_stats:
            self.running_mean = enp.zeros_like(self.running_mean)
            self.running_var = enp.ones_like(self.running_var)
            self.num_batches_tracked = enp.zeros_like(self.num_batches_tracked)

    def reset_parameters(self, key=None):
        """Reset statistics, weight 1 and bias 0.

        Example:
            >>> BatchNorm1d(2).reset_parameters()
        """
        self.reset_running_stats()
        if self.affine:
            self.weight = enp.ones_like(self.weight)
            self.bias = enp.zeros_like(self.bias)

    def _check_input_dim(self, x):
        if x.ndim not in self._ndims:
            raise ValueError(f"{type(self).__name__}: expected {' or '.join(f'{n}D' for n in self._ndims)} "
                             f"input (got {x.ndim}D input)")

    def forward(self, input):
        x = F._util.float_arr(input)
        self._check_input_dim(x)
        tracking = self.training and self.track_running_stats
        momentum = self.momentum
        if tracking:
            self.num_batches_tracked = self.num_batches_tracked + 1
            if momentum is None:
                # cumulative moving average: momentum = 1 / batches seen.  PyTorch
                # divides in double; a float32 quotient (1/3 rounded) would drift
                # float64 running stats by ~1e-8, so divide in at least their dtype
                dt = np.promote_types(self.running_mean.dtype, np.float32)
                momentum = 1.0 / self.num_batches_tracked.astype(dt)
        use_batch = self.training or not self.track_running_stats
        out, mean, var = _batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                                     use_batch, tracking, momentum, self.eps)
        if tracking:
            self.running_mean, self.running_var = mean, var
        return out

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={getattr(self, 'bias', None) is not None}, "
                f"track_running_stats={self.track_running_stats}")


def _batch_norm(x, rm, rv, w, b, use_batch, tracking, momentum, eps):
    """batch_norm that also accepts a traced momentum (cumulative averaging)."""
    e = enp
    if not use_batch:
        return F.batch_norm(x, rm, rv, w, b, False, 0.0, eps), rm, rv
    if not tracking:
        return F.batch_norm(x, None, None, w, b, True, 0.0, eps), rm, rv
    axes = (0,) + tuple(range(2, x.ndim))
    n = int(np.prod([x.shape[a] for a in axes]))
    if n <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{x.shape}")
    out = F.batch_norm(x, None, None, w, b, True, 0.0, eps)
    mean = e.mean(x, axis=axes)
    var = e.mean(e.square(x - e.reshape(mean, (1, -1) + (1,) * (x.ndim - 2))), axis=axes) * (n / (n - 1))
    m = momentum
    new_mean = (1 - m) * rm + m * e.astype(mean, rm.dtype)
    new_var = (1 - m) * rv + m * e.astype(var, rv.dtype)
    return out, e.astype(new_mean, rm.dtype), e.astype(new_var, rv.dtype)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over (N, C) or (N, C, L).

    Example:
        >>> BatchNorm1d(100, affine=False).weight is None
        True
    """
    _ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over (N, C, H, W).

    Example:
        >>> sorted(BatchNorm2d(3).state_dict())
        ['bias', 'num_batches_tracked', 'running_mean', 'running_var', 'weight']
    """
    _ndims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over (N, C, D, H, W).

    Example:
        >>> BatchNorm3d(3).num_features
        3
    """
    _ndims = (5,)


class _InstanceNorm(_BatchNorm):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False,
                 device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def forward(self, input):
        x = F._util.float_arr(input)
        unbatched = x.ndim == self._ndims[0] - 1
        if unbatched:
            x = x[None]
        self._check_input_dim(x)
        if x.shape[1] != self.num_features:
            raise ValueError(f"{type(self).__name__}: expected input's size at dim=1 to match "
                             f"num_features ({self.num_features}), but got an input of shape "
                             f"{tuple(x.shape)}")
        if self.track_running_stats and not self.training:
            out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                                  use_input_stats=False, eps=self.eps)
        elif self.track_running_stats:
            # PyTorch's InstanceNorm passes momentum=None on as 0 (the running
            # statistics stay put; there is no cumulative average as in BatchNorm) and
            # never advances num_batches_tracked, which it keeps only for state_dict keys.
            m = self.momentum if self.momentum is not None else 0.0
            out, self.running_mean, self.running_var = F.instance_norm(
                x, self.running_mean, self.running_var, self.weight, self.bias,
                use_input_stats=True, momentum=m, eps=self.eps, return_stats=True)
        else:
            out = F.instance_norm(x, None, None, self.weight, self.bias, eps=self.eps)
        return out[0] if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation over (N, C, L) (no affine, no running stats by default).

    Example:
        >>> import ember.numpy as enp
        >>> InstanceNorm1d(3)(enp.ones((2, 3, 4))).shape
        (2, 3, 4)
    """
    _ndims = (3,)


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation over (N, C, H, W).

    Example:
        >>> import ember.numpy as enp
        >>> InstanceNorm2d(3, affine=True)(enp.ones((1, 3, 2, 2))).shape
        (1, 3, 2, 2)
    """
    _ndims = (4,)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation over (N, C, D, H, W) (or unbatched (C, D, H, W)).

    Example:
        >>> import ember.numpy as enp
        >>> InstanceNorm3d(2)
        InstanceNorm3d(2, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)
        >>> InstanceNorm3d(2)(enp.ones((1, 2, 3, 3, 3))).shape
        (1, 2, 3, 3, 3)
    """
    _ndims = (5,)


class LayerNorm(Module):
    """Normalise over the trailing `normalized_shape`, with elementwise affine
    weight (ones) and bias (zeros).

    Example:
        >>> import ember.numpy as enp
        >>> LayerNorm(4)(enp.ones((2, 4))).shape
        (2, 4)
    """

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        ns = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) else tuple(normalized_shape)
        self.normalized_shape = tuple(int(s) for s in ns)
        self.eps, self.elementwise_affine = float(eps), elementwise_affine
        d = param_dtype(dtype)
        if elementwise_affine:
            self.weight = place(init.ones_(self.normalized_shape, dtype=d), device)
            self.bias = place(init.zeros_(self.normalized_shape, dtype=d), device) if bias else None
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={getattr(self, 'bias', None) is not None}")


class GroupNorm(Module):
    """Group normalisation over (N, C, ...) with per-channel affine parameters.

    Example:
        >>> import ember.numpy as enp
        >>> GroupNorm(2, 4)(enp.ones((3, 4, 5))).shape
        (3, 4, 5)
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device=None, dtype=None):
        super().__init__()
        check_sizes(type(self).__name__, 1, num_groups=num_groups)
        check_sizes(type(self).__name__, num_channels=num_channels)
        if num_channels % num_groups:
            raise ValueError(f"num_channels must be divisible by num_groups, got num_channels="
                             f"{num_channels} and num_groups={num_groups}")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, float(eps), affine
        d = param_dtype(dtype)
        if affine:
            self.weight = place(init.ones_((num_channels,), dtype=d), device)
            self.bias = place(init.zeros_((num_channels,), dtype=d), device)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={getattr(self, 'bias', None) is not None}")


class RMSNorm(Module):
    """Root-mean-square normalisation over the trailing `normalized_shape`
    (eps None: the dtype's machine epsilon), with an elementwise weight.

    Example:
        >>> import ember.numpy as enp
        >>> RMSNorm([2, 3])(enp.ones((4, 2, 3))).shape
        (4, 2, 3)
    """

    def __init__(self, normalized_shape, eps=None, elementwise_affine: bool = True, device=None,
                 dtype=None):
        super().__init__()
        ns = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = tuple(int(s) for s in ns), eps, elementwise_affine
        if elementwise_affine:
            self.weight = place(init.ones_(self.normalized_shape, dtype=param_dtype(dtype)), device)
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    """Local response normalisation across channels.

    Example:
        >>> import ember.numpy as enp
        >>> LocalResponseNorm(2)(enp.ones((1, 4, 2, 2))).shape
        (1, 4, 2, 2)
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
