"""Pooling layers: `MaxPool1d/2d/3d`, `AvgPool1d/2d/3d`, `AdaptiveAvgPool1d/2d/3d`,
`AdaptiveMaxPool1d/2d/3d`, `LPPool1d/2d/3d`, `MaxUnpool1d/2d/3d`.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.MaxPool2d(2)(enp.ones((1, 3, 8, 8))).shape
    (1, 3, 4, 4)
"""
from __future__ import annotations

from .. import functional as F
from ..module import Module
from ..functional._util import tuple_n
from ._common import check_sizes

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "MaxUnpool1d",
           "MaxUnpool2d", "MaxUnpool3d"]


class _MaxPool(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        check_sizes(type(self).__name__, 1, kernel_size=kernel_size, stride=stride, dilation=dilation)
        check_sizes(type(self).__name__, padding=padding)
        self.kernel_size, self.padding = kernel_size, padding
        self.stride = stride if stride is not None else kernel_size
        self.dilation, self.ceil_mode = dilation, ceil_mode
        self.return_indices = bool(return_indices)

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.dilation,
                              self.ceil_mode, self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPool):
    """Max pooling over (N, C, L).

    Example:
        >>> MaxPool1d(3, stride=2).stride
        2
    """
    _fn = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPool):
    """Max pooling over (N, C, H, W); `stride` defaults to `kernel_size`. With
    `return_indices=True` it returns (values, indices) for `MaxUnpool2d`.

    Example:
        >>> MaxPool2d((3, 2), stride=(2, 1)).kernel_size
        (3, 2)
        >>> import ember.numpy as enp
        >>> y, i = MaxPool2d(2, return_indices=True)(enp.ones((1, 3, 8, 8)))
        >>> MaxUnpool2d(2)(y, i).shape
        (1, 3, 8, 8)
    """
    _fn = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPool):
    """Max pooling over (N, C, D, H, W).

    Example:
        >>> MaxPool3d(2).kernel_size
        2
    """
    _fn = staticmethod(F.max_pool3d)


class _AvgPool(Module):
    _nsp = 0

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        check_sizes(type(self).__name__, 1, kernel_size=kernel_size, stride=stride)
        check_sizes(type(self).__name__, padding=padding)
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode, self.count_include_pad = padding, ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        from ..functional.pooling import _avg_pool
        return _avg_pool(input, self._nsp, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                         self.count_include_pad, self.divisor_override, type(self).__name__)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPool):
    """Average pooling over (N, C, L).

    Example:
        >>> import ember.numpy as enp
        >>> AvgPool1d(2)(enp.asarray([[[1.0, 3.0]]])).tolist()
        [[[2.0]]]
    """
    _nsp = 1

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)


class AvgPool2d(_AvgPool):
    """Average pooling over (N, C, H, W) with `count_include_pad` and `divisor_override`.

    Example:
        >>> AvgPool2d(3, stride=2, padding=1, count_include_pad=False).count_include_pad
        False
    """
    _nsp = 2


class AvgPool3d(_AvgPool):
    """Average pooling over (N, C, D, H, W).

    Example:
        >>> AvgPool3d(2).kernel_size
        2
    """
    _nsp = 3


class _Adaptive(Module):
    _fn = None

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = bool(return_indices)

    def forward(self, input):
        if self.return_indices:
            return type(self)._fn(input, self.output_size, True)
        return type(self)._fn(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_Adaptive):
    """Average pooling to a fixed length.

    Example:
        >>> import ember.numpy as enp
        >>> AdaptiveAvgPool1d(1)(enp.ones((2, 3, 5))).shape
        (2, 3, 1)
    """
    _fn = staticmethod(F.adaptive_avg_pool1d)

    def __init__(self, output_size):
        super().__init__(output_size)


class AdaptiveAvgPool2d(_Adaptive):
    """Average pooling to a fixed (H, W); None entries keep the input size.

    Example:
        >>> import ember.numpy as enp
        >>> AdaptiveAvgPool2d((5, None))(enp.ones((1, 64, 8, 9))).shape
        (1, 64, 5, 9)
    """
    _fn = staticmethod(F.adaptive_avg_pool2d)

    def __init__(self, output_size):
        super().__init__(output_size)


class AdaptiveAvgPool3d(_Adaptive):
    """Average pooling to a fixed (D, H, W).

    Example:
        >>> import ember.numpy as enp
        >>> AdaptiveAvgPool3d(1)(enp.ones((1, 2, 3, 3, 3))).shape
        (1, 2, 1, 1, 1)
    """
    _fn = staticmethod(F.adaptive_avg_pool3d)

    def __init__(self, output_size):
        super().__init__(output_size)


class AdaptiveMaxPool1d(_Adaptive):
    """Max pooling to a fixed length.

    Example:
        >>> import ember.numpy as enp
        >>> AdaptiveMaxPool1d(2)(enp.ones((1, 1, 5))).shape
        (1, 1, 2)
    """
    _fn = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_Adaptive):
    """Max pooling to a fixed (H, W).

    Example:
        >>> import ember.numpy as enp
        >>> AdaptiveMaxPool2d(3)(enp.ones((1, 1, 7, 7))).shape
        (1, 1, 3, 3)
    """
    _fn = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_Adaptive):
    """Max pooling to a fixed (D, H, W).

    Example:
        >>> import ember.numpy as enp
        >>> AdaptiveMaxPool3d(2)(enp.ones((1, 1, 5, 5, 5))).shape
        (1, 1, 2, 2, 2)
    """
    _fn = staticmethod(F.adaptive_max_pool3d)


class LPPool1d(Module):
    """Power-average pooling over (N, C, L).

    Example:
        >>> import ember.numpy as enp
        >>> LPPool1d(2, 2)(enp.ones((1, 1, 4))).shape
        (1, 1, 2)
    """

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input):
        return F.lp_pool1d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool2d(LPPool1d):
    """Power-average pooling over (N, C, H, W).

    Example:
        >>> import ember.numpy as enp
        >>> LPPool2d(2, 2)(enp.ones((1, 1, 4, 4))).shape
        (1, 1, 2, 2)
    """

    def forward(self, input):
        return F.lp_pool2d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class LPPool3d(LPPool1d):
    """Power-average pooling over (N, C, D, H, W).

    Example:
        >>> import ember.numpy as enp
        >>> LPPool3d(2, 2)(enp.ones((1, 1, 4, 4, 4))).shape
        (1, 1, 2, 2, 2)
    """

    def forward(self, input):
        return F.lp_pool3d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class _MaxUnpool(Module):
    _nsp = 0

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        check_sizes(type(self).__name__, 1, kernel_size=kernel_size, stride=stride)
        check_sizes(type(self).__name__, padding=padding)
        n = self._nsp
        # stored as tuples, as PyTorch's _single/_pair/_triple do
        self.kernel_size = tuple_n(kernel_size, n, "kernel_size")
        self.stride = tuple_n(stride if stride is not None else kernel_size, n, "stride")
        self.padding = tuple_n(padding, n, "padding")

    def forward(self, input, indices, output_size=None):
        from ..functional.pooling import _max_unpool
        return _max_unpool(input, indices, self._nsp, self.kernel_size, self.stride, self.padding,
                           output_size, type(self).__name__)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpool):
    """The inverse of `MaxPool1d(..., return_indices=True)`: values back at their
    indices, zeros elsewhere.

    Example:
        >>> import ember.numpy as enp
        >>> y, i = MaxPool1d(2, return_indices=True)(enp.asarray([[[1.0, 3.0, 2.0, 0.0]]]))
        >>> MaxUnpool1d(2)(y, i).tolist()
        [[[0.0, 3.0, 2.0, 0.0]]]
    """
    _nsp = 1


class MaxUnpool2d(_MaxUnpool):
    """The inverse of `MaxPool2d(..., return_indices=True)`; `forward(input, indices,
    output_size=None)` as PyTorch's.

    Example:
        >>> MaxUnpool2d(2)
        MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))
    """
    _nsp = 2


class MaxUnpool3d(_MaxUnpool):
    """The inverse of `MaxPool3d(..., return_indices=True)`.

    Example:
        >>> MaxUnpool3d(2, stride=2).stride
        (2, 2, 2)
    """
    _nsp = 3
