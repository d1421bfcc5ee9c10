"""Bit packing: packbits (each group of 8 truth values -> one uint8) and unpackbits (each
uint8 -> its 8 bits), big- or little-endian within the byte.

Example:
    >>> import ember.numpy as enp
    >>> enp.packbits(enp.asarray([1, 0, 1])).tolist()
    [160]
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..fx.core import get_aval
from ._core import ensure_array
from ._util import canonicalize_axis, const

__all__ = ["packbits", "unpackbits"]


def _bit_weights(bitorder, op, lead):
    if bitorder not in ("big", "little"):
        raise ValueError(f"{op}: bitorder must be 'big' or 'little', got {bitorder!r}")
    shifts = np.arange(8, dtype=np.uint8)
    if bitorder == "big":
        shifts = shifts[::-1]
    return ensure_array(shifts.reshape((1,) * lead + (8,)))


def packbits(a, axis=None, bitorder="big"):
    """Pack the truth values of an integer or boolean array into uint8, 8 per byte, along
    `axis` (the flattened array when None), zero-padding the last byte.

    Example:
        >>> import ember.numpy as enp
        >>> enp.packbits(enp.asarray([[1, 1], [0, 1]]), axis=0).tolist()
        [[128, 192]]
    """
    x = ensure_array(a)
    d = get_aval(x).dtype
    if _dt.kind(d) not in "iub":
        raise TypeError(f"packbits: expected an integer or boolean array, got "
                        f"{get_aval(x).str_user()}")
    u8 = np.dtype(np.uint8)
    x = lax.convert_element_type(lax.ne(x, const(d, 0)) if d != _dt.bool_ else x, u8)
    if axis is None:
        x = lax.reshape(x, (get_aval(x).size,))
        axis = 0
    ax = canonicalize_axis(axis, get_aval(x).shape, "packbits")
    nd = get_aval(x).ndim
    perm = tuple(i for i in range(nd) if i != ax) + (ax,)
    x = lax.transpose(x, perm)
    n = get_aval(x).shape[-1]
    if n % 8:
        x = lax.pad(x, const(u8, 0), [(0, 0, 0)] * (nd - 1) + [(0, 8 - n % 8, 0)])
    shp = get_aval(x).shape
    x = lax.reshape(x, shp[:-1] + (shp[-1] // 8, 8))
    w = lax.broadcast_in_dim(_bit_weights(bitorder, "packbits", nd), get_aval(x).shape,
                             tuple(range(nd + 1)))
    # the 8 shifted bits are disjoint, so their sum is their bitwise or (no overflow)
    packed = lax.reduce_sum(lax.shift_left(x, w), (nd,))
    inv = np.argsort(perm)
    return lax.transpose(packed, tuple(int(i) for i in inv))


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """The bits of a uint8 array as a uint8 array of 0s and 1s, 8 per byte along `axis` (the
    flattened array when None); `count` keeps the first `count` bits (zero-padded when
    larger; negative: drops `-count` from the end).

    Example:
        >>> import ember.numpy as enp
        >>> enp.unpackbits(enp.asarray([160], dtype=enp.uint8), count=3).tolist()
        [1, 0, 1]
    """
    from ._util import static_int
    x = ensure_array(a)
    u8 = np.dtype(np.uint8)
    if get_aval(x).dtype != u8:
        raise TypeError(f"unpackbits: expected a uint8 array, got {get_aval(x).str_user()}")
    if axis is None:
        x = lax.reshape(x, (get_aval(x).size,))
        axis = 0
    ax = canonicalize_axis(axis, get_aval(x).shape, "unpackbits")
    nd = get_aval(x).ndim
    perm = tuple(i for i in range(nd) if i != ax) + (ax,)
    x = lax.transpose(x, perm)
    shp = get_aval(x).shape
    x8 = lax.broadcast_in_dim(x, shp + (8,), tuple(range(nd)))
    w = lax.broadcast_in_dim(_bit_weights(bitorder, "unpackbits", nd), shp + (8,),
                             tuple(range(nd + 1)))
    bits = lax.bitwise_and(lax.shift_right_logical(x8, w), const(u8, 1))
    bits = lax.reshape(bits, shp[:-1] + (shp[-1] * 8,))
    total = shp[-1] * 8
    if count is not None:
        count = static_int(count, "unpackbits", "count")
        keep = count if count >= 0 else max(total + count, 0)
        if keep <= total:
            bits = lax.slice_in_dim(bits, 0, keep, 1, nd - 1)
        else:
            bits = lax.pad(bits, const(u8, 0), [(0, 0, 0)] * (nd - 1) + [(0, keep - total, 0)])
    inv = np.argsort(perm)
    return lax.transpose(bits, tuple(int(i) for i in inv))
