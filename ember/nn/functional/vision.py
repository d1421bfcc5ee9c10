"""Padding, resizing (`interpolate`) and pixel shuffling.

Resizing matrices depend only on static shapes: `interpolate` builds one small
(out x in) matrix per spatial axis with numpy and applies them in turn, so it is
differentiable and batchable like any matmul.

Example:
    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.interpolate(enp.ones((1, 1, 2, 2)), scale_factor=2).shape
    (1, 1, 4, 4)
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ... import lax
from ._util import arr, at_user, enp, float_arr

__all__ = ["pad", "interpolate", "upsample", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
           "native_channel_shuffle", "upsample_nearest", "upsample_bilinear"]


def pad(input, pad, mode="constant", value=None):
    """Pad the trailing dimensions: `pad` = (left_last, right_last, left_2nd_last,
    right_2nd_last, ...), as PyTorch.  Modes "constant" (negative widths crop),
    "reflect", "replicate", "circular".

    Example:
        >>> import ember.numpy as enp
        >>> pad(enp.ones((1, 2)), (1, 2)).tolist()
        [[0.0, 1.0, 1.0, 0.0, 0.0]]
    """
    e = enp()
    x = arr(input)
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ValueError(f"pad: padding length must be even and at most 2 * ndim, got {pad} for an "
                         f"input of shape {x.shape}")
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    if mode == "constant":
        v = 0 if value is None else value
        return lax.pad(x, e.asarray(v, dtype=x.dtype), [(lo, hi, 0) for lo, hi in widths])
    np_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}.get(mode)
    if np_mode is None:
        raise ValueError(f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', "
                         f"got {mode!r}")
    if value is not None and value != 0:
        raise ValueError(f"pad: padding mode {mode!r} doesn't take in value argument (got "
                         f"value={value!r}); PyTorch raises here too. Hint: value= is for "
                         f"mode='constant'{at_user()}")
    if any(lo < 0 or hi < 0 for lo, hi in widths):
        raise ValueError(f"pad: negative padding is only supported in constant mode, got {pad}")
    if mode == "reflect":
        for (lo, hi), n in zip(widths, x.shape):
            if (lo or hi) and (lo >= n or hi >= n):  # unpadded dimensions may be empty
                raise ValueError(f"pad: reflect padding ({lo}, {hi}) must be smaller than the "
                                 f"dimension {n}")
    return e.pad(x, widths, mode=np_mode)


def _scales(x, size, scale_factor, nsp, recompute):
    ins = tuple(x.shape[2:])
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: exactly one of size and scale_factor must be given")
    if size is not None:
        outs = (int(size),) * nsp if isinstance(size, (int, np.integer)) else tuple(int(s) for s in size)
        if len(outs) != nsp:
            raise ValueError(f"interpolate: size must have {nsp} entries, got {size}")
        if any(o <= 0 for o in outs):
            raise ValueError(f"interpolate: input and output sizes should be greater than 0, but "
                             f"got input {ins} and size={size!r}; PyTorch raises here too"
                             f"{at_user()}")
        return outs, [n / o if o else 0.0 for n, o in zip(ins, outs)]
    sf = (float(scale_factor),) * nsp if isinstance(scale_factor, (int, float)) else tuple(
        float(s) for s in scale_factor)
    if len(sf) != nsp:
        raise ValueError(f"interpolate: scale_factor must have {nsp} entries, got {scale_factor}")
    outs = tuple(int(math.floor(n * s)) for n, s in zip(ins, sf))
    if any(o <= 0 for o in outs):
        raise ValueError(f"interpolate: input and output sizes should be greater than 0, but got "
                         f"input {ins} and output {outs} from scale_factor={scale_factor!r}; "
                         f"PyTorch raises here too{at_user()}")
    if recompute:
        return outs, [n / o if o else 0.0 for n, o in zip(ins, outs)]
    return outs, [1.0 / s for s in sf]


def _matrix(n_in, n_out, scale, mode, align_corners):
    m = np.zeros((n_out, n_in), np.float64)
    dst = np.arange(n_out, dtype=np.float64)
    if mode == "nearest":
        src = np.minimum(np.floor(dst * scale).astype(np.int64), n_in - 1)
        m[np.arange(n_out), src] = 1.0
        return m
    if mode == "nearest-exact":
        src = np.minimum(np.floor((dst + 0.5) * scale).astype(np.int64), n_in - 1)
        m[np.arange(n_out), src] = 1.0
        return m
    if mode == "cubic":
        return _cubic_matrix(n_in, n_out, scale, align_corners)
    # linear family
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
    else:
        src = np.maximum((dst + 0.5) * scale - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    lam = src - i0
    np.add.at(m, (np.arange(n_out), i0), 1.0 - lam)
    np.add.at(m, (np.arange(n_out), i1), lam)
    return m


def _cubic_matrix(n_in, n_out, scale, align_corners, A=-0.75):
    """Keys' cubic convolution (A = -0.75, PyTorch's choice) with PyTorch's source
    coordinates (not clamped at 0, unlike the linear modes) and border taps clamped
    into the input."""
    m = np.zeros((n_out, n_in), np.float64)
    dst = np.arange(n_out, dtype=np.float64)
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
    else:
        src = (dst + 0.5) * scale - 0.5
    i0 = np.floor(src).astype(np.int64)
    t = src - i0

    def near(x):  # |x| <= 1
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A

    rows = np.arange(n_out)
    for off, w in ((-1, far(t + 1)), (0, near(t)), (1, near(1 - t)), (2, far(2 - t))):
        np.add.at(m, (rows, np.clip(i0 + off, 0, n_in - 1)), w)
    return m


_LINEAR = {"linear": 1, "bilinear": 2, "trilinear": 3, "bicubic": 2}


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize (N, C, ...) to `size` or by `scale_factor` with PyTorch's coordinate
    conventions: modes "nearest", "nearest-exact", "linear" (3-d input), "bilinear"
    and "bicubic" (4-d; Keys' cubic with A = -0.75, taps clamped at the border),
    "trilinear" (5-d), with `align_corners` for the interpolating modes.

    Example:
        >>> import ember.numpy as enp
        >>> x = enp.asarray([[[0.0, 1.0]]])
        >>> interpolate(x, size=3, mode="linear", align_corners=True).tolist()
        [[[0.0, 0.5, 1.0]]]
    """
    e = enp()
    x = float_arr(input)
    nsp = x.ndim - 2
    if nsp < 1:
        raise ValueError(f"interpolate: expected an (N, C, ...) input, got shape {x.shape}")
    if antialias:
        raise ValueError("interpolate: antialias=True is not supported")
    if mode in _LINEAR:
        if _LINEAR[mode] != nsp:
            raise ValueError(f"interpolate: mode {mode!r} needs a {_LINEAR[mode] + 2}-d input, got "
                             f"shape {x.shape}")
        align = bool(align_corners)
    elif mode in ("nearest", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("interpolate: align_corners option can only be set with the "
                             "interpolating modes: linear | bilinear | bicubic | trilinear")
        align = False
    else:
        raise ValueError(f"interpolate: unsupported mode {mode!r} (nearest, nearest-exact, linear, "
                         f"bilinear, bicubic, trilinear)")
    outs, scales = _scales(x, size, scale_factor, nsp, bool(recompute_scale_factor))
    kind = "cubic" if mode == "bicubic" else "linear" if mode in _LINEAR else mode
    for i, (n_in, n_out, sc) in enumerate(zip(x.shape[2:], outs, scales)):
        m = _matrix(n_in, n_out, sc, kind, align)
        axis = 2 + i
        xm = e.moveaxis(x, axis, -1)
        xm = e.matmul(xm, e.asarray(m.T.astype(np.dtype(x.dtype))))
        x = e.moveaxis(xm, -1, axis)
    return x


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """`interpolate` under its older name.

    Example:
        >>> import ember.numpy as enp
        >>> upsample(enp.ones((1, 1, 2)), scale_factor=2).shape
        (1, 1, 4)
    """
    return interpolate(input, size, scale_factor, mode, align_corners)


def pixel_shuffle(input, upscale_factor):
    """(N, C * r^2, H, W) -> (N, C, H * r, W * r).

    Example:
        >>> import ember.numpy as enp
        >>> pixel_shuffle(enp.ones((1, 8, 2, 2)), 2).shape
        (1, 2, 4, 4)
    """
    e = enp()
    x = arr(input)
    r = int(upscale_factor)
    # PyTorch takes (*, C*r^2, H, W): any number of leading batch dimensions, or none
    if x.ndim < 3 or x.shape[-3] % (r * r):
        raise ValueError(f"pixel_shuffle: expected (*, C*r^2, H, W) with r={r}, got shape "
                         f"{tuple(x.shape)}{at_user()}")
    *lead, c, h, w = x.shape
    n = int(np.prod(lead)) if lead else 1
    y = e.reshape(x, (n, c // (r * r), r, r, h, w))
    y = e.permute_dims(y, (0, 1, 4, 2, 5, 3))
    return e.reshape(y, tuple(lead) + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """(N, C, H * r, W * r) -> (N, C * r^2, H, W).

    Example:
        >>> import ember.numpy as enp
        >>> pixel_unshuffle(enp.ones((1, 2, 4, 4)), 2).shape
        (1, 8, 2, 2)
    """
    e = enp()
    x = arr(input)
    r = int(downscale_factor)
    if x.ndim < 3 or x.shape[-2] % r or x.shape[-1] % r:
        raise ValueError(f"pixel_unshuffle: expected (*, C, H*r, W*r) with r={r}, got shape "
                         f"{tuple(x.shape)}{at_user()}")
    *lead, c, h, w = x.shape
    n = int(np.prod(lead)) if lead else 1
    y = e.reshape(x, (n, c, h // r, r, w // r, r))
    y = e.permute_dims(y, (0, 1, 3, 5, 2, 4))
    return e.reshape(y, tuple(lead) + (c * r * r, h // r, w // r))


def channel_shuffle(input, groups):
    """Interleave the channels of (N, C, *) across `groups` groups: (N, g, C/g, *) ->
    (N, C/g, g, *), as ShuffleNet mixes grouped-convolution outputs.

    Example:
        >>> import ember.numpy as enp
        >>> channel_shuffle(enp.arange(4.0).reshape(1, 4, 1), 2).ravel().tolist()
        [0.0, 2.0, 1.0, 3.0]
    """
    e = enp()
    x = arr(input)
    g = int(groups)
    if x.ndim <= 2:
        raise ValueError(f"channel_shuffle: expected an input with more than 2 dims (N, C, *), but "
                         f"got an input of shape {tuple(x.shape)}")
    if g <= 0:
        raise ValueError(f"channel_shuffle: number of groups to divide channels in must be "
                         f"positive, got groups={groups}")
    n, c = x.shape[:2]
    if c % g:
        raise ValueError(f"channel_shuffle: number of channels must be divisible by groups, got "
                         f"{c} channels and groups={g} (input shape {tuple(x.shape)})")
    rest = tuple(x.shape[2:])
    y = e.reshape(x, (n, g, c // g) + rest)
    y = e.swapaxes(y, 1, 2)
    return e.reshape(y, (n, c) + rest)


native_channel_shuffle = channel_shuffle


def upsample_nearest(input, size=None, scale_factor=None):
    """`interpolate(..., mode='nearest')` under PyTorch's deprecated name (which warns
    with a UserWarning, as PyTorch does).

    Example:
        >>> import warnings
        >>> import ember.numpy as enp
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     upsample_nearest(enp.ones((1, 1, 2, 2)), scale_factor=2).shape
        (1, 1, 4, 4)
    """
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """`interpolate(..., mode='bilinear', align_corners=True)` under PyTorch's
    deprecated name (which warns with a UserWarning, as PyTorch does).

    Example:
        >>> import warnings
        >>> import ember.numpy as enp
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     upsample_bilinear(enp.asarray([[[[0.0, 1.0]]]]), size=(1, 3)).tolist()
        [[[[0.0, 0.5, 1.0]]]]
    """
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
