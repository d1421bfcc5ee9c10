"""Convolution layers: `Conv1d/2d/3d` and `ConvTranspose1d/2d/3d` with PyTorch's
arguments, weight layouts, names and default initialisation.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.Conv2d(3, 8, 3, padding="same")(enp.ones((1, 3, 16, 16))).shape
    (1, 8, 16, 16)
"""
from __future__ import annotations

import math

from ..functional.conv import _conv
from .. import init
from ..functional._util import tuple_n
from ..module import Module
from ._common import check_sizes, init_keys, param_dtype, place

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


class _ConvNd(Module):
    _nsp = 0
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                 bias, padding_mode, device, dtype, key, output_padding=0):
        super().__init__()
        n = self._nsp
        name = type(self).__name__
        check_sizes(name, in_channels=in_channels, out_channels=out_channels,
                    padding=None if isinstance(padding, str) else padding, output_padding=output_padding)
        check_sizes(name, 1, kernel_size=kernel_size, stride=stride, dilation=dilation)
        if groups <= 0:
            raise ValueError(f"groups must be a positive integer, got groups={groups}")
        if in_channels % groups:
            raise ValueError(f"in_channels must be divisible by groups, got in_channels={in_channels} "
                             f"and groups={groups}")
        if out_channels % groups:
            raise ValueError(f"out_channels must be divisible by groups, got out_channels={out_channels} "
                             f"and groups={groups}")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in tuple_n(stride, n, "stride")):
                raise ValueError(f"padding='same' is not supported for strided convolutions, got "
                                 f"stride={stride}")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(f"padding_mode must be one of 'zeros', 'reflect', 'replicate' or "
                             f"'circular', but got padding_mode={padding_mode!r}")
        if self._transposed and padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size = tuple_n(kernel_size, n, "kernel_size")
        self.stride = tuple_n(stride, n, "stride")
        self.padding = padding if isinstance(padding, str) else tuple_n(padding, n, "padding")
        self.dilation = tuple_n(dilation, n, "dilation")
        self.output_padding = tuple_n(output_padding, n, "output_padding")
        self.groups = int(groups)
        self.padding_mode = padding_mode
        d = param_dtype(dtype)
        if self._transposed:
            wshape = (self.in_channels, self.out_channels // self.groups) + self.kernel_size
        else:
            wshape = (self.out_channels, self.in_channels // self.groups) + self.kernel_size
        self.weight = place(init.zeros_(wshape, dtype=d), device)
        self.bias = place(init.zeros_((self.out_channels,), dtype=d), device) if bias else None
        self.reset_parameters(key)

    def reset_parameters(self, key=None):
        """Re-draw the parameters: kaiming_uniform(a=sqrt(5)) weight and
        U(-1/sqrt(fan_in), 1/sqrt(fan_in)) bias, fan_in computed from the weight.

        Example:
            >>> Conv1d(1, 1, 3).reset_parameters()
        """
        kw, kb = init_keys(key, 2)
        self.weight = init.kaiming_uniform_(self.weight, a=math.sqrt(5), key=kw)
        if self.bias is not None:
            fan_in, _ = init.fan_in_and_fan_out(self.weight.shape)
            bound = 1 / math.sqrt(fan_in) if fan_in else 0.0
            self.bias = init.uniform_(self.bias, -bound, bound, key=kb)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._nsp:
            s += f", padding={self.padding if isinstance(self.padding, tuple) else repr(self.padding)}"
        if self.dilation != (1,) * self._nsp:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._nsp:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None, *, key=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode, device, dtype, key)

    def forward(self, input):
        return _conv(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                     self.groups, self._nsp, type(self).__name__, self.padding_mode)


class Conv1d(_Conv):
    """1-d convolution over (N, C_in, L); `padding` an int, "valid" or "same".

    Example:
        >>> Conv1d(16, 33, 3, stride=2).weight.shape
        (33, 16, 3)
    """
    _nsp = 1


class Conv2d(_Conv):
    """2-d convolution over (N, C_in, H, W).

    Example:
        >>> Conv2d(16, 32, (3, 5), groups=2).weight.shape
        (32, 8, 3, 5)
    """
    _nsp = 2


class Conv3d(_Conv):
    """3-d convolution over (N, C_in, D, H, W).

    Example:
        >>> Conv3d(2, 4, 3).weight.shape
        (4, 2, 3, 3, 3)
    """
    _nsp = 3


class _ConvTranspose(_ConvNd):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None, *,
                 key=None):
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__} does not support string padding")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode, device, dtype, key, output_padding)

    def forward(self, input, output_size=None):
        from ..functional.conv import _conv_transpose
        op = self.output_padding
        if output_size is not None:
            op = self._output_padding(input, output_size)
        return _conv_transpose(input, self.weight, self.bias, self.stride, self.padding, op,
                               self.groups, self.dilation, self._nsp, type(self).__name__)

    def _output_padding(self, input, output_size):
        n = self._nsp
        size = tuple(output_size)[-n:]
        spatial = tuple(input.shape[-n:])
        out = []
        for i in range(n):
            base = ((spatial[i] - 1) * self.stride[i] - 2 * self.padding[i]
                    + self.dilation[i] * (self.kernel_size[i] - 1) + 1)
            extra = size[i] - base
            if not 0 <= extra < max(self.stride[i], self.dilation[i]):
                raise ValueError(f"requested an output size of {size}, but valid sizes range from "
                                 f"{base} to {base + self.stride[i] - 1} in dimension {i}")
            out.append(extra)
        return tuple(out)


class ConvTranspose1d(_ConvTranspose):
    """Transposed 1-d convolution; weight (C_in, C_out/groups, K).

    Example:
        >>> import ember.numpy as enp
        >>> ConvTranspose1d(2, 3, 3, stride=2)(enp.ones((1, 2, 4))).shape
        (1, 3, 9)
    """
    _nsp = 1


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-d convolution; weight (C_in, C_out/groups, kH, kW); `forward`
    accepts `output_size` to pick the output padding.

    Example:
        >>> import ember.numpy as enp
        >>> m = ConvTranspose2d(2, 3, 3, stride=2, padding=1)
        >>> m(enp.ones((1, 2, 4, 4)), output_size=(8, 8)).shape
        (1, 3, 8, 8)
    """
    _nsp = 2


class ConvTranspose3d(_ConvTranspose):
    """Transposed 3-d convolution; weight (C_in, C_out/groups, kD, kH, kW).

    Example:
        >>> ConvTranspose3d(1, 2, 2).weight.shape
        (1, 2, 2, 2, 2)
    """
    _nsp = 3
