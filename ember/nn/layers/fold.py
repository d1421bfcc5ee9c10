"""Sliding-block layers: `Unfold` (im2col: image -> columns of patches) and `Fold`
(col2im: columns -> image, overlaps summed), over `functional.unfold` / `fold`.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> x = enp.ones((1, 2, 4, 4))
    >>> nn.Fold(4, 2, stride=2)(nn.Unfold(2, stride=2)(x)).tolist() == x.tolist()
    True
"""
from __future__ import annotations

from .. import functional as F
from ..module import Module

__all__ = ["Fold", "Unfold"]


class Fold(Module):
    """(N, C * prod(kernel_size), L) -> (N, C, *output_size), summing overlapping
    blocks (the adjoint of `Unfold`).

    Example:
        >>> import ember.numpy as enp
        >>> Fold((3, 3), 2)(enp.ones((1, 4, 4))).shape
        (1, 1, 3, 3)
    """

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """(N, C, H, W) -> (N, C * prod(kernel_size), L): every sliding block as a column.

    Example:
        >>> import ember.numpy as enp
        >>> Unfold(2)(enp.ones((1, 3, 4, 4))).shape
        (1, 12, 9)
    """

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")
