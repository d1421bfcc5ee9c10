"""Pooling in PyTorch's NC... layout: max/avg pooling (padding, dilation, ceil_mode,
count_include_pad) over `lax.reduce_window_*`, adaptive pooling, and max unpooling.

Divisors and adaptive windows depend only on static shapes, so they are computed
with numpy at trace time and enter the program as constants.

`return_indices=True` gives PyTorch's indices: for each output, the flat position of
its (first) maximum within its own (N, C) plane of the input. Their dtype is
ember's index dtype, int32 (int64 only for a plane of 2**31 or more elements), not
PyTorch's int64: ember's integers and indices (argmax, top_k) are int32, and an
int64 array works wherever the indices are consumed (`max_unpool*d`, `take`).

Example:
    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.max_pool2d(enp.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ... import lax
from ...fx.core import Tracer, get_aval
from ...transforms.custom_derivatives import custom_jvp
from ._util import at_user, enp, float_arr, tuple_n

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d", "lp_pool1d",
           "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d",
           "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices"]


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
    no_stride = stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0)
    s = tuple_n(k if no_stride else stride, nsp, "stride")
    p = tuple_n(padding, nsp, "padding")
    d = tuple_n(dilation, nsp, "dilation")
    for name, v, low in (("kernel_size", k, 1), ("stride", s, 1), ("dilation", d, 1),
                         ("padding", p, 0)):
        if any(a < low for a in v):
            bound = "positive" if low else "non-negative"
            raise ValueError(f"{op}: {name} must be {bound}, got {name}={v}; PyTorch raises "
                             f"here too{at_user()}")
    for kk, pp in zip(k, p):
        if pp > kk // 2:
            raise ValueError(f"{op}: pad should be at most half of effective kernel size, but got "
                             f"pad={pp} and kernel_size={kk}")
    sizes = x.shape[2:]
    outs = tuple(_out_size(n, kk, ss, pp, dd, ceil_mode) for n, kk, ss, pp, dd in zip(sizes, k, s, p, d))
    pads = tuple((pp, (o - 1) * ss + dd * (kk - 1) + 1 - n - pp)
                 for n, kk, ss, pp, dd, o in zip(sizes, k, s, p, d, outs))
    return k, s, p, d, outs, pads


def _plane_index_dtype(sizes):
    return np.int64 if int(np.prod(sizes)) >= 2 ** 31 - 1 else np.int32


def _window_table(sizes, taps):
    """Every window as a row of flat plane indices in row-major tap order; `taps[i]`
    is axis i's (outputs, k) tap positions, each padded tap replaced by the first
    real tap of its window. A replaced tap repeats a value whose own slot comes no
    later in the row or whose copy at a real position does, so an argmax over a row
    lands on a slot naming the first maximum in row-major order, as PyTorch's."""
    table = np.zeros((1, 1), np.int64)
    stride = int(np.prod(sizes))
    for n, idx in zip(sizes, taps):
        o, k = idx.shape
        stride //= n
        # (boxes so far, width so far) x (o, k) -> (boxes * o, width * k)
        table = (table[:, None, :, None] + idx[None, :, None, :] * stride).reshape(
            table.shape[0] * o, table.shape[1] * k)
    return table


def _first_real(idx, ok):
    """idx with each False entry of `ok` replaced by the row's first True one."""
    first = np.where(ok.any(1), ok.argmax(1), 0)
    fill = np.take_along_axis(idx, first[:, None], 1)
    return np.where(ok, idx, fill)


def _max_with_indices(x, table, outs, want_indices=True):
    """Values and plane indices (None unless `want_indices`) of each window's first
    maximum; the gradient reaches that element alone. Of several NaNs the first is
    taken (PyTorch's CPU kernel takes the last)."""
    e = enp()
    sizes = tuple(x.shape[2:])
    idt = _plane_index_dtype(sizes)
    flat = e.reshape(x, tuple(x.shape[:2]) + (int(np.prod(sizes)),))
    tab = e.asarray(table.astype(idt))
    windows = e.take(flat, tab, axis=2)  # (N, C, boxes, width)
    first = e.argmax(windows, axis=-1, keepdims=True)
    y = e.take_along_axis(windows, first, axis=-1, mode="clip")
    shape = tuple(x.shape[:2]) + tuple(outs)
    if not want_indices:
        return e.reshape(y, shape), None
    ind = e.take_along_axis(tab[None, None], e.astype(first, idt), axis=-1, mode="clip")
    return e.reshape(y, shape), e.reshape(ind, shape)


def _max_pool(x, nsp, kernel_size, stride, padding, dilation, ceil_mode, op, return_indices=False):
    x, unbatched = _batched(x, nsp, op)
    k, s, p, d, outs, pads = _geometry(x, nsp, kernel_size, stride, padding, dilation, ceil_mode, op)
    if return_indices:
        taps = []
        for n, kk, ss, pp, dd, o in zip(x.shape[2:], k, s, p, d, outs):
            idx = (np.arange(o) * ss - pp)[:, None] + dd * np.arange(kk)[None, :]
            taps.append(np.clip(_first_real(idx, (idx >= 0) & (idx < n)), 0, max(n - 1, 0)))
        y, ind = _max_with_indices(x, _window_table(tuple(x.shape[2:]), taps), outs)
        return (y[0], ind[0]) if unbatched else (y, ind)
    y = lax.reduce_window_max(x, (1, 1) + k, (1, 1) + s, ((0, 0), (0, 0)) + pads,
                              window_dilation=(1, 1) + d)
    return y[0] if unbatched else y


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over windows of (N, C, L) (padding counts as -inf); `return_indices=True`
    also gives each maximum's position in its row (see `max_unpool1d`).

    Example:
        >>> import ember.numpy as enp
        >>> max_pool1d(enp.asarray([[[1.0, 3.0, 2.0, 0.0]]]), 2).tolist()
        [[[3.0, 2.0]]]
        >>> max_pool1d(enp.asarray([[[1.0, 3.0, 2.0, 0.0]]]), 2, return_indices=True)[1].tolist()
        [[[1, 2]]]
    """
    return _max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode, "max_pool1d",
                     return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over windows of (N, C, H, W); `stride` defaults to `kernel_size`.
    `return_indices=True` also gives the flat position ``h * W + w`` of each (first)
    maximum within its (N, C) plane, in ember's int32 index dtype.

    Example:
        >>> import ember.numpy as enp
        >>> max_pool2d(enp.ones((1, 1, 5, 5)), 2, ceil_mode=True).shape
        (1, 1, 3, 3)
        >>> y, i = max_pool2d(enp.arange(16.0).reshape(1, 1, 4, 4), 2, return_indices=True)
        >>> i.tolist()
        [[[[5, 7], [13, 15]]]]
    """
    return _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d",
                     return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over windows of (N, C, D, H, W); `return_indices=True` also gives flat
    positions ``(d * H + h) * W + w`` within each (N, C) volume.

    Example:
        >>> import ember.numpy as enp
        >>> max_pool3d(enp.ones((1, 1, 4, 4, 4)), 2).shape
        (1, 1, 2, 2, 2)
    """
    return _max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode, "max_pool3d",
                     return_indices)


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


def _adaptive_max(input, output_size, nsp, op, return_indices=False):
    x, unbatched = _batched(input, nsp, op)
    outs = _output_sizes(x, output_size, nsp)
    taps = []
    for n, o in zip(x.shape[2:], outs):
        starts, ends = _adaptive_bounds(n, o)
        k = max(b - a for a, b in zip(starts, ends))
        idx = np.asarray(starts)[:, None] + np.arange(k)[None, :]
        taps.append(_first_real(idx, idx < np.asarray(ends)[:, None]))
    # An argmax over each window's taps (not a max of per-axis maxes, which would
    # split the gradient between ties) sends it to the first maximum, as PyTorch.
    y, ind = _max_with_indices(x, _window_table(tuple(x.shape[2:]), taps), outs, return_indices)
    if return_indices:
        return (y[0], ind[0]) if unbatched else (y, ind)
    return y[0] if unbatched else y


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max pooling to a fixed output length (the gradient goes to the first maximum
    of each window, as PyTorch); `return_indices=True` also gives its positions.

    Example:
        >>> import ember.numpy as enp
        >>> adaptive_max_pool1d(enp.asarray([[[1.0, 5.0, 3.0]]]), 2).tolist()
        [[[5.0, 5.0]]]
        >>> adaptive_max_pool1d(enp.asarray([[[1.0, 5.0, 3.0]]]), 2, return_indices=True)[1].tolist()
        [[[1, 1]]]
    """
    return _adaptive_max(input, output_size, 1, "adaptive_max_pool1d", return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max pooling to a fixed (H, W); ties send the gradient (and the index, with
    `return_indices=True`) to the first maximum in row-major order, as PyTorch.

    Example:
        >>> import ember.numpy as enp
        >>> adaptive_max_pool2d(enp.ones((1, 2, 5, 5)), 2).shape
        (1, 2, 2, 2)
        >>> adaptive_max_pool2d(enp.ones((1, 1, 5, 5)), 2, return_indices=True)[1].tolist()
        [[[[0, 2], [10, 12]]]]
    """
    return _adaptive_max(input, output_size, 2, "adaptive_max_pool2d", return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max pooling to a fixed (D, H, W).

    Example:
        >>> import ember.numpy as enp
        >>> adaptive_max_pool3d(enp.ones((1, 1, 4, 5, 6)), (2, 2, 3)).shape
        (1, 1, 2, 2, 3)
    """
    return _adaptive_max(input, output_size, 3, "adaptive_max_pool3d", return_indices)


class InvalidMaxIndexError(IndexError, RuntimeError):
    """An index given to `max_unpool*d` outside its output plane (an IndexError, and a
    RuntimeError like PyTorch's, so code catching either works)."""


def _unpool_size(in_sizes, k, s, p, output_size, op):
    nsp = len(in_sizes)
    default = tuple((n - 1) * ss - 2 * pp + kk for n, kk, ss, pp in zip(in_sizes, k, s, p))
    if output_size is None:
        sizes = default
    else:
        sizes = tuple(int(v) for v in output_size)
        if len(sizes) == nsp + 2:
            sizes = sizes[2:]
        if len(sizes) != nsp:
            raise ValueError(f"{op}: output_size should be a sequence containing {nsp} or "
                             f"{nsp + 2} elements, but it has a length of {len(sizes)}")
        for dim, (v, dv, ss) in enumerate(zip(sizes, default, s)):
            # PyTorch's bounds: sizes whose pooling (stride ss) would give the input's size
            if not dv - ss < v < dv + ss:
                raise ValueError(f"{op}: invalid output_size {tuple(output_size)} (dim {dim} "
                                 f"must be between {dv - ss} and {dv + ss}, exclusive; the "
                                 f"default for this input is {default})")
    if any(v <= 0 for v in sizes):
        raise ValueError(f"{op}: the output size {sizes} is empty (input spatial shape "
                         f"{tuple(in_sizes)}, kernel_size={k}, stride={s}, padding={p})")
    return sizes


def _set_into_zeros(size, pos, vals):
    return enp().zeros((size,), vals.dtype).at[pos].set(vals, mode="drop")


def _scatter_set_jvp(size, primals, tangents):
    pos, vals = primals
    tan = enp().zeros((size,), vals.dtype).at[pos].add(tangents[1], mode="drop")
    return _set_into_zeros(size, pos, vals), tan


# A position named twice keeps one of its values, as in PyTorch, and as in PyTorch
# every value gets the gradient at its position: the tangent is scattered with an
# add, whose transpose is that gather (a set's would reach only the kept value).
_scatter_set = custom_jvp(_set_into_zeros, nondiff_argnums=(0,))
_scatter_set.defjvp(_scatter_set_jvp)


def _max_unpool(input, indices, nsp, kernel_size, stride, padding, output_size, op):
    from ...numpy._util import concrete_or_none
    e = enp()
    x = float_arr(input)
    ind = e.asarray(indices)
    idtype = get_aval(ind).dtype
    if _dt.kind(idtype) not in "iu":
        raise TypeError(f"{op}: indices must be an integer array (as returned by "
                        f"max_pool{nsp}d(..., return_indices=True)), got dtype {idtype}")
    if tuple(ind.shape) != tuple(x.shape):
        raise ValueError(f"{op}: indices shape {tuple(ind.shape)} must equal the input shape "
                         f"{tuple(x.shape)} (pass the indices the pooling returned with it)")
    unbatched = x.ndim == nsp + 1
    if unbatched:
        x, ind = e.expand_dims(x, 0), e.expand_dims(ind, 0)
    elif x.ndim != nsp + 2:
        raise ValueError(f"{op}: expected a {nsp + 1}-d or {nsp + 2}-d input, got shape {tuple(x.shape)}")
    k = tuple_n(kernel_size, nsp, "kernel_size")
    s = tuple_n(stride if stride is not None and stride != () else k, nsp, "stride")
    p = tuple_n(padding, nsp, "padding")
    sizes = _unpool_size(tuple(x.shape[2:]), k, s, p, output_size, op)
    plane = int(np.prod(sizes))
    rows = int(x.shape[0]) * int(x.shape[1])
    cv = concrete_or_none(ind) if not isinstance(ind, Tracer) else None
    if cv is not None and np.asarray(cv).size:
        cv = np.asarray(cv).astype(np.int64)
        bad = (cv < 0) | (cv >= plane)
        if bad.any():
            raise InvalidMaxIndexError(
                f"{op}: found an invalid max index {cv[bad].ravel()[0]} (indices must lie in "
                f"[0, {plane}) for an output plane of size {'x'.join(map(str, sizes))}; pass "
                f"output_size= if the pooled input was larger than {tuple(sizes)})")
    idt = np.int64 if rows * plane >= 2 ** 31 - 1 else np.int32
    ind = e.reshape(e.astype(ind, idt), (rows, int(np.prod(x.shape[2:]))))
    base = e.asarray((np.arange(rows, dtype=idt) * idt(plane))[:, None])
    # Traced indices out of range (only a jit or vmap can hide them from the check
    # above) are sent past the end and dropped, not into a neighbouring plane.
    ok = (ind >= 0) & (ind < plane)
    pos = e.where(ok, ind + base, e.asarray(idt(rows * plane)))
    out = _scatter_set(rows * plane, e.reshape(pos, (-1,)), e.reshape(x, (-1,)))
    out = e.reshape(out, tuple(x.shape[:2]) + sizes)
    return out[0] if unbatched else out


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of `max_pool1d(..., return_indices=True)`: each value placed at its
    index in a zero (N, C, L_out) array, L_out = (L - 1) * stride - 2 * padding +
    kernel_size unless `output_size` says otherwise.

    Example:
        >>> import ember.numpy as enp
        >>> y, i = max_pool1d(enp.asarray([[[1.0, 3.0, 2.0, 0.0]]]), 2, return_indices=True)
        >>> max_unpool1d(y, i, 2).tolist()
        [[[0.0, 3.0, 2.0, 0.0]]]
    """
    return _max_unpool(input, indices, 1, kernel_size, stride, padding, output_size, "max_unpool1d")


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of `max_pool2d(..., return_indices=True)`; `output_size` (H, W) or
    (N, C, H, W) picks among the sizes that pool to the input's (an odd size the
    default cannot reach, say).

    Example:
        >>> import ember.numpy as enp
        >>> y, i = max_pool2d(enp.arange(25.0).reshape(1, 1, 5, 5), 2, return_indices=True)
        >>> max_unpool2d(y, i, 2, output_size=(5, 5)).shape
        (1, 1, 5, 5)
    """
    return _max_unpool(input, indices, 2, kernel_size, stride, padding, output_size, "max_unpool2d")


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of `max_pool3d(..., return_indices=True)`.

    Example:
        >>> import ember.numpy as enp
        >>> y, i = max_pool3d(enp.ones((1, 1, 4, 4, 4)), 2, return_indices=True)
        >>> max_unpool3d(y, i, 2).shape
        (1, 1, 4, 4, 4)
    """
    return _max_unpool(input, indices, 3, kernel_size, stride, padding, output_size, "max_unpool3d")


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over windows of x^p)^(1/p) for (N, C, L).

    Example:
        >>> import ember.numpy as enp
        >>> lp_pool1d(enp.asarray([[[3.0, 4.0]]]), 2, 2).tolist()
        [[[5.0]]]
    """
    k = tuple_n(kernel_size, 1, "kernel_size")
    return _lp_pool(avg_pool1d, max_pool1d, input, norm_type, k, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over windows of x^p)^(1/p) for (N, C, H, W).

    Example:
        >>> import ember.numpy as enp
        >>> lp_pool2d(enp.ones((1, 1, 2, 2)), 1, 2).tolist()
        [[[[4.0]]]]
    """
    k = tuple_n(kernel_size, 2, "kernel_size")
    return _lp_pool(avg_pool2d, max_pool2d, input, norm_type, k, stride, ceil_mode)



def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over windows of x^p)^(1/p) for (N, C, D, H, W).

    Example:
        >>> import ember.numpy as enp
        >>> lp_pool3d(enp.ones((1, 1, 2, 2, 2)), 1, 2).tolist()
        [[[[[8.0]]]]]
    """
    k = tuple_n(kernel_size, 3, "kernel_size")
    return _lp_pool(avg_pool3d, max_pool3d, input, norm_type, k, stride, ceil_mode)


def _lp_pool(avg_pool, max_pool, input, norm_type, k, stride, ceil_mode):
    """The lp_pool*d body: the window mean of x^p times the window size, to the 1/p."""
    x = float_arr(input)
    # p = +-inf is the limit max / min of |x| (PyTorch special-cases it the same
    # way); the power formula would give x^inf -> inf/0 and then ^(1/inf) = 1
    if norm_type == float("inf"):
        return max_pool(enp().abs(x), k, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return -max_pool(-enp().abs(x), k, stride, 0, 1, ceil_mode)
    y = avg_pool(x ** norm_type, k, stride, 0, ceil_mode)
    return (enp().sign(y) * enp().abs(y) * int(np.prod(k))) ** (1.0 / norm_type)


# PyTorch's `*_with_indices` spellings: always (values, indices); their own
# `return_indices` argument is accepted and ignored, as there.

def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """`max_pool1d(..., return_indices=True)`: (values, indices).

    Example:
        >>> import ember.numpy as enp
        >>> v, i = max_pool1d_with_indices(enp.asarray([[[1.0, 3.0, 2.0, 0.0]]]), 2)
        >>> v.tolist(), i.tolist()
        ([[[3.0, 2.0]]], [[[1, 2]]])
    """
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """`max_pool2d(..., return_indices=True)`: (values, indices).

    Example:
        >>> import ember.numpy as enp
        >>> v, i = max_pool2d_with_indices(enp.arange(16.0).reshape(1, 1, 4, 4), 2)
        >>> i.tolist()
        [[[[5, 7], [13, 15]]]]
    """
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """`max_pool3d(..., return_indices=True)`: (values, indices).

    Example:
        >>> import ember.numpy as enp
        >>> v, i = max_pool3d_with_indices(enp.arange(8.0).reshape(1, 1, 2, 2, 2), 2)
        >>> v.tolist(), i.tolist()
        ([[[[[7.0]]]]], [[[[[7]]]]])
    """
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """`adaptive_max_pool1d(..., return_indices=True)`: (values, indices).

    Example:
        >>> import ember.numpy as enp
        >>> v, i = adaptive_max_pool1d_with_indices(enp.asarray([[[1.0, 3.0, 2.0, 0.0]]]), 1)
        >>> v.tolist(), i.tolist()
        ([[[3.0]]], [[[1]]])
    """
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """`adaptive_max_pool2d(..., return_indices=True)`: (values, indices).

    Example:
        >>> import ember.numpy as enp
        >>> v, i = adaptive_max_pool2d_with_indices(enp.arange(16.0).reshape(1, 1, 4, 4), 1)
        >>> v.tolist(), i.tolist()
        ([[[[15.0]]]], [[[[15]]]])
    """
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """`adaptive_max_pool3d(..., return_indices=True)`: (values, indices).

    Example:
        >>> import ember.numpy as enp
        >>> v, i = adaptive_max_pool3d_with_indices(enp.arange(8.0).reshape(1, 1, 2, 2, 2), 1)
        >>> v.tolist(), i.tolist()
        ([[[[[7.0]]]]], [[[[[7]]]]])
    """
    return adaptive_max_pool3d(input, output_size, True)
