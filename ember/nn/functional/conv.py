"""Convolutions in PyTorch's layouts (NC[D]HW inputs, OI[D]HW weights), including
transposed convolutions, over `lax.conv_general_dilated`.

Example:
    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.conv2d(enp.ones((1, 3, 8, 8)), enp.ones((4, 3, 3, 3)), padding="same").shape
    (1, 4, 8, 8)
"""
from __future__ import annotations

from ... import lax
from ._util import arr, at_user, enp, float_arr, tuple_n
from ...amp._autocast import lower_precision

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "fold",
           "conv_transpose3d", "unfold"]


def _prep(input, weight, nsp, op):
    e = enp()
    x, w = float_arr(input), arr(weight)
    d = e.result_type(x, w)
    x, w = e.astype(x, d), e.astype(w, d)
    unbatched = x.ndim == nsp + 1
    if unbatched:
        x = e.expand_dims(x, 0)
    if x.ndim != nsp + 2:
        raise ValueError(f"{op}: expected a {nsp + 1}-d (unbatched) or {nsp + 2}-d (batched) input, "
                         f"got shape {tuple(arr(input).shape)}")
    if w.ndim != nsp + 2:
        raise ValueError(f"{op}: expected a {nsp + 2}-d weight, got shape {w.shape}")
    return x, w, unbatched


def _pads(padding, kernel, dilation, stride, nsp, op):
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * nsp
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{op}: padding='same' is not supported for strided convolutions")
            out = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                out.append((total // 2, total - total // 2))
            return out
        raise ValueError(f"{op}: padding must be 'valid', 'same', an int or a tuple, got {padding!r}")
    p = tuple_n(padding, nsp, "padding")
    return [(a, a) for a in p]


def _check_window(op, stride, dilation, padding=None):
    """PyTorch's argument checks of a convolution: positive stride and dilation,
    non-negative padding, each an error naming the argument as the user passed it."""
    if any(s <= 0 for s in stride):
        raise ValueError(f"{op}: stride must be positive, got stride={stride}; PyTorch raises "
                         f"here too{at_user()}")
    if any(d <= 0 for d in dilation):
        raise ValueError(f"{op}: dilation must be positive, got dilation={dilation}; PyTorch "
                         f"raises here too{at_user()}")
    if padding is not None and not isinstance(padding, str) and any(p < 0 for p in padding):
        raise ValueError(f"{op}: padding must be non-negative, got padding={padding}; PyTorch "
                         f"raises here too. Hint: crop with slicing or F.pad with negative "
                         f"widths{at_user()}")


def _check_bias(op, bias, out_channels):
    if bias is None:
        return
    b = arr(bias)
    if b.ndim != 1 or b.shape[0] != out_channels:
        raise ValueError(f"{op}: expected bias to be 1-dimensional with {out_channels} elements "
                         f"(out_channels), got bias of shape {tuple(b.shape)}; PyTorch raises here "
                         f"too{at_user()}")


def _conv(input, weight, bias, stride, padding, dilation, groups, nsp, op, padding_mode="zeros"):
    x, w, unbatched = _prep(input, weight, nsp, op)
    stride = tuple_n(stride, nsp, "stride")
    dilation = tuple_n(dilation, nsp, "dilation")
    _check_window(op, stride, dilation,
                  padding if isinstance(padding, str) else tuple_n(padding, nsp, "padding"))
    _check_bias(op, bias, w.shape[0])
    if x.shape[1] != w.shape[1] * groups:
        raise ValueError(f"{op}: expected input with {w.shape[1] * groups} channels (weight {w.shape}, "
                         f"groups={groups}), got {x.shape[1]}")
    if w.shape[0] % groups:
        raise ValueError(f"{op}: out_channels {w.shape[0]} must be divisible by groups={groups}")
    pads = _pads(padding, w.shape[2:], dilation, stride, nsp, op)
    padded = tuple(n + a + b for n, (a, b) in zip(x.shape[2:], pads))
    span = tuple(d * (k - 1) + 1 for k, d in zip(w.shape[2:], dilation))
    if any(k > n for k, n in zip(span, padded)):
        raise ValueError(f"{op}: calculated padded input size per channel {padded} is smaller "
                         f"than the (dilated) kernel size {span} (input shape "
                         f"{tuple(arr(input).shape)}, weight shape {tuple(w.shape)}); PyTorch raises "
                         f"here too. Hint: pad the input, or use a smaller kernel{at_user()}")
    if padding_mode != "zeros":
        mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}.get(padding_mode)
        if mode is None:
            raise ValueError(f"{op}: padding_mode must be 'zeros', 'reflect', 'replicate' or "
                             f"'circular', got {padding_mode!r}")
        x = enp().pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in pads], mode=mode)
        pads = [(0, 0)] * nsp
    y = lax.conv_general_dilated(x, w, stride, pads, rhs_dilation=dilation, feature_group_count=groups)
    if bias is not None:
        y = y + enp().reshape(arr(bias).astype(y.dtype), (1, -1) + (1,) * nsp)
    return y[0] if unbatched else y


@lower_precision
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d convolution (cross-correlation) of (N, C_in, L) with (C_out, C_in/groups, K).

    Example:
        >>> import ember.numpy as enp
        >>> conv1d(enp.ones((1, 1, 5)), enp.ones((1, 1, 3))).tolist()
        [[[3.0, 3.0, 3.0]]]
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


@lower_precision
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution of (N, C_in, H, W) with (C_out, C_in/groups, kH, kW); `padding`
    is an int, a pair, "valid" or "same".

    Example:
        >>> import ember.numpy as enp
        >>> conv2d(enp.ones((1, 1, 4, 4)), enp.ones((2, 1, 3, 3)), stride=2, padding=1).shape
        (1, 2, 2, 2)
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


@lower_precision
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d convolution of (N, C_in, D, H, W) with (C_out, C_in/groups, kD, kH, kW).

    Example:
        >>> import ember.numpy as enp
        >>> conv3d(enp.ones((1, 1, 3, 3, 3)), enp.ones((1, 1, 3, 3, 3))).shape
        (1, 1, 1, 1, 1)
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, nsp, op):
    e = enp()
    x, w, unbatched = _prep(input, weight, nsp, op)
    stride = tuple_n(stride, nsp, "stride")
    dilation = tuple_n(dilation, nsp, "dilation")
    padding = tuple_n(padding, nsp, "padding")
    output_padding = tuple_n(output_padding, nsp, "output_padding")
    _check_window(op, stride, dilation, padding)
    _check_bias(op, bias, w.shape[1] * groups)
    for op_, s, d in zip(output_padding, stride, dilation):
        if op_ >= max(s, d):
            raise ValueError(f"{op}: output_padding must be smaller than either stride or dilation, "
                             f"got output_padding={output_padding}, stride={stride}, dilation={dilation}")
    cin = w.shape[0]
    if x.shape[1] != cin:
        raise ValueError(f"{op}: expected input with {cin} channels (weight {w.shape}), got {x.shape[1]}")
    if cin % groups:
        raise ValueError(f"{op}: in_channels {cin} must be divisible by groups={groups}")
    k = w.shape[2:]
    cog = w.shape[1]
    # (C_in, C_out/g, k...) -> the forward-conv kernel (C_out, C_in/g, k...), flipped.
    w = e.reshape(w, (groups, cin // groups, cog) + k)
    w = e.swapaxes(w, 1, 2)
    w = e.reshape(w, (groups * cog, cin // groups) + k)
    w = lax.rev(w, tuple(range(2, 2 + nsp)))
    pads = [(d * (kk - 1) - p, d * (kk - 1) - p + o)
            for kk, d, p, o in zip(k, dilation, padding, output_padding)]
    y = lax.conv_general_dilated(x, w, (1,) * nsp, pads, lhs_dilation=stride, rhs_dilation=dilation,
                                 feature_group_count=groups)
    if bias is not None:
        y = y + e.reshape(arr(bias).astype(y.dtype), (1, -1) + (1,) * nsp)
    return y[0] if unbatched else y


@lower_precision
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Transposed 1-d convolution; weight (C_in, C_out/groups, K); output length
    (L - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1.

    Example:
        >>> import ember.numpy as enp
        >>> conv_transpose1d(enp.ones((1, 1, 3)), enp.ones((1, 1, 2)), stride=2).shape
        (1, 1, 6)
    """
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation,
                           1, "conv_transpose1d")


@lower_precision
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Transposed 2-d convolution; weight (C_in, C_out/groups, kH, kW).

    Example:
        >>> import ember.numpy as enp
        >>> conv_transpose2d(enp.ones((1, 2, 3, 3)), enp.ones((2, 4, 3, 3)), stride=2,
        ...                  padding=1, output_padding=1).shape
        (1, 4, 6, 6)
    """
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation,
                           2, "conv_transpose2d")


@lower_precision
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Transposed 3-d convolution; weight (C_in, C_out/groups, kD, kH, kW).

    Example:
        >>> import ember.numpy as enp
        >>> conv_transpose3d(enp.ones((1, 1, 2, 2, 2)), enp.ones((1, 1, 2, 2, 2))).shape
        (1, 1, 3, 3, 3)
    """
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation,
                           3, "conv_transpose3d")


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extract sliding 2-d patches: (N, C, H, W) -> (N, C * kH * kW, L) (im2col).

    Example:
        >>> import ember.numpy as enp
        >>> unfold(enp.ones((1, 2, 4, 4)), 2).shape
        (1, 8, 9)
    """
    e = enp()
    x = float_arr(input)
    if x.ndim not in (3, 4):
        raise ValueError(f"unfold: expected a 3-d (C, H, W) or 4-d (N, C, H, W) input, got shape "
                         f"{tuple(x.shape)}")
    unbatched = x.ndim == 3
    if unbatched:
        x = x[None]
    kh, kw = tuple_n(kernel_size, 2, "kernel_size")
    c = x.shape[1]
    y = conv2d(x, _patch_kernel(c, kh, kw, x.dtype), None, stride, padding, dilation)
    y = e.reshape(y, (y.shape[0], y.shape[1], y.shape[2] * y.shape[3]))  # N may be 0
    return y[0] if unbatched else y


def _patch_kernel(c, kh, kw, dtype):
    # An identity kernel per (channel, tap) picks the patch entries, in PyTorch's order.
    e = enp()
    return e.reshape(e.eye(c * kh * kw, dtype=dtype), (c * kh * kw, c, kh, kw))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum sliding 2-d patches back into an image (col2im, the adjoint of `unfold`):
    (N, C * kH * kW, L) or unbatched (C * kH * kW, L) -> (N, C, H, W) with
    (H, W) = `output_size`; overlapping entries add up.

    Example:
        >>> import ember.numpy as enp
        >>> fold(enp.ones((1, 4, 4)), (3, 3), 2)[0, 0].tolist()
        [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
    """
    e = enp()
    x = float_arr(input)
    if x.ndim not in (2, 3):
        raise ValueError(f"fold: expected a 2-d (C * kH * kW, L) or 3-d (N, C * kH * kW, L) input, "
                         f"got shape {tuple(x.shape)}")
    unbatched = x.ndim == 2
    if unbatched:
        x = x[None]
    size = tuple_n(output_size, 2, "output_size")
    k = tuple_n(kernel_size, 2, "kernel_size")
    d = tuple_n(dilation, 2, "dilation")
    p = tuple_n(padding, 2, "padding")
    s = tuple_n(stride, 2, "stride")
    for name, v, lo in (("kernel_size", k, 1), ("dilation", d, 1), ("stride", s, 1), ("padding", p, 0)):
        if any(int(i) < lo for i in v):
            raise ValueError(f"fold: {name} must be {'positive' if lo else 'non-negative'}, got "
                             f"{name}={v}")
    n, ck, length = x.shape
    if ck % (k[0] * k[1]):
        raise ValueError(f"fold: expected size of input's dimension 1 to be divisible by the "
                         f"product of kernel_size, but got input.size(1)={ck} and kernel_size={k}")
    blocks = [(size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    if min(blocks) < 1 or blocks[0] * blocks[1] != length:
        raise ValueError(f"fold: given output_size={size}, kernel_size={k}, dilation={d}, "
                         f"padding={p}, stride={s}, expected size of input's dimension 2 to match "
                         f"the calculated number of sliding blocks {blocks[0]} * {blocks[1]} = "
                         f"{blocks[0] * blocks[1]}, but got input.size(2)={length}")
    c = ck // (k[0] * k[1])
    y = e.reshape(x, (n, ck, blocks[0], blocks[1]))
    # The transposed convolution with unfold's kernel is unfold's adjoint; the rows and
    # columns past the last block (which no patch reaches) are its output_padding.
    extra = [size[i] + 2 * p[i] - ((blocks[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1) for i in range(2)]
    out = _conv_transpose(y, _patch_kernel(c, k[0], k[1], x.dtype), None, s, p, tuple(extra), 1, d,
                          2, "fold")
    return out[0] if unbatched else out
