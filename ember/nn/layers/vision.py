"""Resizing layers with PyTorch's names and arguments: `Upsample` (nearest,
nearest-exact, linear, bilinear, bicubic, trilinear; `size` or `scale_factor`,
`align_corners`), `UpsamplingNearest2d`, `UpsamplingBilinear2d`, `PixelShuffle`
and `PixelUnshuffle`, over `functional.interpolate` / `pixel_shuffle`.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.Upsample(scale_factor=2, mode="bicubic")(enp.ones((1, 1, 2, 3))).shape
    (1, 1, 4, 6)
"""
from __future__ import annotations

from .. import functional as F
from ..module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle",
           "ChannelShuffle"]


def _as_float_factor(scale_factor):
    if scale_factor is None:
        return None
    if isinstance(scale_factor, (tuple, list)):
        return tuple(float(s) for s in scale_factor)
    return float(scale_factor)


class Upsample(Module):
    """Resize (N, C, ...) inputs to `size` or by `scale_factor` (see
    `functional.interpolate` for the modes and PyTorch's coordinate conventions).

    Example:
        >>> import ember.numpy as enp
        >>> up = Upsample(size=3, mode="linear", align_corners=True)
        >>> up(enp.asarray([[[0.0, 1.0]]])).tolist(), up
        ([[[0.0, 0.5, 1.0]]], Upsample(size=3, mode='linear'))
    """

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        if (size is None) == (scale_factor is None):
            raise ValueError(f"{type(self).__name__}: give exactly one of size and scale_factor, got "
                             f"size={size!r}, scale_factor={scale_factor!r}")
        self.name = type(self).__name__
        self.size = size
        self.scale_factor = _as_float_factor(scale_factor)
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        info = (f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None
                else f"size={self.size!r}")
        return f"{info}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """`Upsample(..., mode="nearest")` for (N, C, H, W) inputs.

    Example:
        >>> import ember.numpy as enp
        >>> UpsamplingNearest2d(scale_factor=2)(enp.ones((1, 1, 2, 2))).shape
        (1, 1, 4, 4)
    """

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """`Upsample(..., mode="bilinear", align_corners=True)` for (N, C, H, W) inputs.

    Example:
        >>> import ember.numpy as enp
        >>> UpsamplingBilinear2d(size=(3, 3))(enp.ones((1, 1, 2, 2))).shape
        (1, 1, 3, 3)
    """

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """(N, C * r^2, H, W) -> (N, C, H * r, W * r) (sub-pixel convolution's shuffle).

    Example:
        >>> import ember.numpy as enp
        >>> PixelShuffle(2)(enp.ones((1, 8, 3, 3))).shape
        (1, 2, 6, 6)
    """

    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = int(upscale_factor)

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(N, C, H * r, W * r) -> (N, C * r^2, H, W), the inverse of `PixelShuffle`.

    Example:
        >>> import ember.numpy as enp
        >>> PixelUnshuffle(2)(enp.ones((1, 2, 6, 6))).shape
        (1, 8, 3, 3)
    """

    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = int(downscale_factor)

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Interleave the channels of (N, C, *) across `groups` groups (ShuffleNet).

    Example:
        >>> import ember.numpy as enp
        >>> ChannelShuffle(2)(enp.arange(4.0).reshape(1, 4, 1)).ravel().tolist()
        [0.0, 2.0, 1.0, 3.0]
    """

    def __init__(self, groups: int):
        super().__init__()
        self.groups = int(groups)

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
