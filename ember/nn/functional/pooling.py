"""Pooling in PyTorch's NC... layout: max/avg pooling (padding, dilation, ceil_mode,
count_include_pad) over `lax.reduce_window_*`, and adaptive pooling.

Divisors and adaptive windows depend only on static shapes, so they are computed
with numpy at trace time and enter the program as constants.

Example:
    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.max_pool2d(enp.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
"""
from __future__ import annotations

import numpy as np

from ... import lax
from ._util import enp, float_arr, tuple_n

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "lp_pool1d", "lp_pool2d"]


def _batched(x, nsp, op):
    x = float_arr(x)
    if x.ndim == nsp + 1:
        return enp().expand_dims(x, 0), True
    if x.ndim != nsp + 2:
        raise ValueError(f"{op}: expected a {nsp + 1}-d or {nsp + 2}-d input, got shape {x.shape}")
    return x, False


def _out_size(n, k, s, p, d, ceil_mode):
    eff = d * (k - 1) + 1
    num = n + 2 * p - eff
    if num < 0:
        raise ValueError(f"pooling: window of extent {eff} does not fit the input of size {n} "
                         f"with padding {p}")
    out = (-(-num // s) if ceil_mode else num // s) + 1
    # PyTorch: the last window must start inside the input or the left padding.
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _geometry(x, nsp, kernel_size, stride, padding, dilation, ceil_mode, op):
    k = tuple_n(kernel_size, nsp, "kernel_size")
    s = tuple_n(stride if stride is not None and stride != () else k, nsp, "stride")
    p = tuple_n(padding, nsp, "padding")
    d = tuple_n(dilation, nsp, "dilation")
    for kk, pp in zip(k, p):
        if pp > kk // 2:
            raise ValueError(f"{op}: pad should be at most half of effective kernel size, but got "
                             f"pad={pp} and kernel_size={kk}")
    sizes = x.shape[2:]
    outs = tuple(_out_size(n, kk, ss, pp, dd, ceil_mode) for n, kk, ss, pp, dd in zip(sizes, k, s, p, d))
    pads = tuple((pp, (o - 1) * ss + dd * (kk - 1) + 1 - n - pp)
                 for n, kk, ss, pp, dd, o in zip(sizes, k, s, p, d, outs))
    return k, s, p, d, outs, pads


def _max_pool(x, nsp, kernel_size, stride, padding, dilation, ceil_mode, op):
    x, unbatched = _batched(x, nsp, op)
    k, s, p, d, outs, pads = _geometry(x, nsp, kernel_size, stride, padding, dilation, ceil_mode, op)
    y = lax.reduce_window_max(x, (1, 1) + k, (1, 1) + s, ((0, 0), (0, 0)) + pads,
                              window_dilation=(1, 1) + d)
    return y[0] if unbatched else y


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """Max over windows of (N, C, L) (padding counts as -inf).

    Example:
        >>> import ember.numpy as enp
        >>> max_pool1d(enp.asarray([[[1.0, 3.0, 2.0, 0.0]]]), 2).tolist()
        [[[3.0, 2.0]]]
    """
    return _max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode, "max_pool1d")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """Max over windows of (N, C, H, W); `stride` defaults to `kernel_size`.

    Example:
        >>> import ember.numpy as enp
        >>> max_pool2d(enp.ones((1, 1, 5, 5)), 2, ceil_mode=True).shape
        (1, 1, 3, 3)
    """
    return _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d")


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """Max over windows of (N, C, D, H, W).

    Example:
        >>> import ember.numpy as enp
        >>> max_pool3d(enp.ones((1, 1, 4, 4, 4)), 2).shape
        (1, 1, 2, 2, 2)
    """
    return _max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode, "max_pool3d")


def _taps(n, k, s, lo, out, lo_ok, hi_ok):
    """Per output position: how many window taps land in [lo_ok, hi_ok) (input coords)."""
    starts = np.arange(out) * s - lo
    taps = starts[:, None] + np.arange(k)[None, :]
    return ((taps >= lo_ok) & (taps < hi_ok)).sum(1)


def _avg_pool(x, nsp, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, op):
    e = enp()
    x, unbatched = _batched(x, nsp, op)
    k, s, p, d, outs, pads = _geometry(x, nsp, kernel_size, stride, padding, 1, ceil_mode, op)
    y = lax.reduce_window_sum(x, (1, 1) + k, (1, 1) + s, ((0, 0), (0, 0)) + pads)
    if divisor_override is not None:
        if divisor_override == 0:
            raise ValueError(f"{op}: divisor must be not zero")
        y = y / float(divisor_override)
    else:
        counts = np.ones((), np.float64)
        for n, kk, ss, pp, o in zip(x.shape[2:], k, s, p, outs):
            lo_ok, hi_ok = (-pp, n + pp) if count_include_pad else (0, n)
            c = _taps(n, kk, ss, pp, o, lo_ok, hi_ok).astype(np.float64)
            counts = np.multiply.outer(counts, c)
        y = y / e.asarray(counts.astype(np.dtype(y.dtype)))
    return y[0] if unbatched else y


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over windows of (N, C, L); padded zeros count unless `count_include_pad=False`.

    Example:
        >>> import ember.numpy as enp
        >>> avg_pool1d(enp.asarray([[[1.0, 3.0, 2.0, 0.0]]]), 2).tolist()
        [[[2.0, 1.0]]]
    """
    return _avg_pool(input, 1, kernel_size, stride, padding, ceil_mode, count_include_pad, None,
                     "avg_pool1d")


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over windows of (N, C, H, W).

    Example:
        >>> import ember.numpy as enp
        >>> avg_pool2d(enp.ones((1, 1, 4, 4)), 3, 1, 1, count_include_pad=False)[0, 0, 0, 0].item()
        1.0
    """
    return _avg_pool(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, "avg_pool2d")


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over windows of (N, C, D, H, W).

    Example:
        >>> import ember.numpy as enp
        >>> avg_pool3d(enp.ones((1, 1, 4, 4, 4)), 2).shape
        (1, 1, 2, 2, 2)
    """
    return _avg_pool(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, "avg_pool3d")


def _adaptive_bounds(n, out):
    starts = [(i * n) // out for i in range(out)]
    ends = [-(-((i + 1) * n) // out) for i in range(out)]
    return starts, ends


def _output_sizes(x, output_size, nsp):
    if isinstance(output_size, (int, np.integer)) or output_size is None:
        output_size = (output_size,) * nsp
    output_size = tuple(output_size)
    if len(output_size) != nsp:
        raise ValueError(f"adaptive pooling: output_size must have {nsp} entries, got {output_size}")
    return tuple(n if o is None else int(o) for n, o in zip(x.shape[-nsp:], output_size))


def _adaptive_avg(input, output_size, nsp, op):
    e = enp()
    x, unbatched = _batched(input, nsp, op)
    outs = _output_sizes(x, output_size, nsp)
    for i, (n, o) in enumerate(zip(x.shape[2:], outs)):
        starts, ends = _adaptive_bounds(n, o)
        m = np.zeros((o, n), np.float64)
        for r, (a, b) in enumerate(zip(starts, ends)):
            m[r, a:b] = 1.0 / (b - a)
        axis = 2 + i
        xm = e.moveaxis(x, axis, -1)
        xm = e.matmul(xm, e.asarray(m.T.astype(np.dtype(x.dtype))))
        x = e.moveaxis(xm, -1, axis)
    return x[0] if unbatched else x


def adaptive_avg_pool1d(input, output_size):
    """Average pooling to a fixed output length (PyTorch's window bounds).

    Example:
        >>> import ember.numpy as enp
        >>> adaptive_avg_pool1d(enp.asarray([[[1.0, 2.0, 3.0]]]), 2).tolist()
        [[[1.5, 2.5]]]
    """
    return _adaptive_avg(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed (H, W) (an int, a pair, entries None keep the input size).

    Example:
        >>> import ember.numpy as enp
        >>> adaptive_avg_pool2d(enp.ones((2, 3, 7, 5)), (1, 1)).shape
        (2, 3, 1, 1)
    """
    return _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d")


def adaptive_avg_pool3d(input, output_size):
    """Average pooling to a fixed (D, H, W).

    Example:
        >>> import ember.numpy as enp
        >>> adaptive_avg_pool3d(enp.ones((1, 1, 4, 4, 4)), 2).shape
        (1, 1, 2, 2, 2)
    """
    return _adaptive_avg(input, output_size, 3, "adaptive_avg_pool3d")


def _adaptive_max(input, output_size, nsp, op):
    e = enp()
    x, unbatched = _batched(input, nsp, op)
    outs = _output_sizes(x, output_size, nsp)
    sizes = tuple(x.shape[2:])
    # Every output box as a row of flat input indices in row-major order, each axis's
    # window padded by repeating its first index (a padded entry copies an element
    # earlier in the row): an argmax over a row picks the first maximum, so the
    # gradient goes to that element alone, as in PyTorch (a max of per-axis maxes
    # would split it between ties).
    table = np.zeros((1, 1), np.int64)
    stride = int(np.prod(sizes))
    for n, o in zip(sizes, outs):
        starts, ends = _adaptive_bounds(n, o)
        k = max(b - a for a, b in zip(starts, ends))
        idx = np.asarray(starts)[:, None] + np.arange(k)[None, :]
        idx = np.where(idx < np.asarray(ends)[:, None], idx, np.asarray(starts)[:, None])
        stride //= n
        # (boxes so far, width so far) x (o, k) -> (boxes * o, width * k)
        table = (table[:, None, :, None] + idx[None, :, None, :] * stride).reshape(
            table.shape[0] * o, table.shape[1] * k)
    flat = e.reshape(x, tuple(x.shape[:2]) + (-1,))
    windows = e.take(flat, e.asarray(table.astype(np.int32)), axis=2)  # (N, C, boxes, width)
    first = e.argmax(windows, axis=-1, keepdims=True)
    y = e.take_along_axis(windows, first, axis=-1)
    y = e.reshape(y, tuple(x.shape[:2]) + outs)
    return y[0] if unbatched else y


def adaptive_max_pool1d(input, output_size):
    """Max pooling to a fixed output length (the gradient goes to the first maximum
    of each window, as PyTorch).

    Example:
        >>> import ember.numpy as enp
        >>> adaptive_max_pool1d(enp.asarray([[[1.0, 5.0, 3.0]]]), 2).tolist()
        [[[5.0, 5.0]]]
    """
    return _adaptive_max(input, output_size, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d(input, output_size):
    """Max pooling to a fixed (H, W); ties send the gradient to the first maximum in
    row-major order, as PyTorch.

    Example:
        >>> import ember.numpy as enp
        >>> adaptive_max_pool2d(enp.ones((1, 2, 5, 5)), 2).shape
        (1, 2, 2, 2)
    """
    return _adaptive_max(input, output_size, 2, "adaptive_max_pool2d")


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over windows of x^p)^(1/p) for (N, C, L).

    Example:
        >>> import ember.numpy as enp
        >>> lp_pool1d(enp.asarray([[[3.0, 4.0]]]), 2, 2).tolist()
        [[[5.0]]]
    """
    k = tuple_n(kernel_size, 1, "kernel_size")[0]
    y = avg_pool1d(float_arr(input) ** norm_type, k, stride, 0, ceil_mode)
    return (enp().sign(y) * enp().abs(y) * k) ** (1.0 / norm_type)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over windows of x^p)^(1/p) for (N, C, H, W).

    Example:
        >>> import ember.numpy as enp
        >>> lp_pool2d(enp.ones((1, 1, 2, 2)), 1, 2).tolist()
        [[[[4.0]]]]
    """
    kh, kw = tuple_n(kernel_size, 2, "kernel_size")
    y = avg_pool2d(float_arr(input) ** norm_type, (kh, kw), stride, 0, ceil_mode)
    return (enp().sign(y) * enp().abs(y) * (kh * kw)) ** (1.0 / norm_type)

