"""Eager rules of the shape/movement primitives (`fx/prims/shape.py`) and of
`convert_element_type` (`fx/prims/convert.py`) over an array module `xp`.

Movement ops return views where numpy's would (broadcast_in_dim is a stride-0
view on the GPU too: arrays are immutable, so sharing is safe).  Conversions
follow the reference: float -> int truncates and saturates (NaN -> 0); the
conversions to bfloat16 that the reference rounds to odd first run compiled.

Example:
    >>> import numpy as np
    >>> from ember.fx.prims.convert import convert_element_type_p
    >>> from .eager import run_rule
    >>> x = np.array([np.nan, 1e10, -2.7], np.float32)
    >>> run_rule(np, convert_element_type_p, [x], dict(new_dtype=np.dtype("int32"))).tolist()
    [0, 2147483647, -2]
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ...fx.prims import convert as C
from ...fx.prims import shape as S
from ...transforms import misc as _misc
from .eager import NOT_COVERED, eager_rule, is_float, quiet


@eager_rule(S.broadcast_in_dim_p)
def _broadcast_in_dim(xp, x, *, shape, broadcast_dimensions):
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return xp.broadcast_to(x.reshape(expanded), shape)


@eager_rule(S.reshape_p)
def _reshape(xp, x, *, new_sizes):
    return xp.reshape(x, new_sizes)


@eager_rule(S.transpose_p)
def _transpose(xp, x, *, permutation):
    return xp.transpose(x, permutation)


@eager_rule(S.squeeze_p)
def _squeeze(xp, x, *, dimensions):
    S._squeeze_abstract(_aval(x), dimensions=dimensions)   # numpy would accept some bad calls
    return xp.squeeze(x, tuple(dimensions)) if dimensions else x


@eager_rule(S.expand_dims_p)
def _expand_dims(xp, x, *, dimensions):
    return x.reshape(S._expand_abstract(_aval(x), dimensions=dimensions).shape)


@eager_rule(S.rev_p)
def _rev(xp, x, *, dimensions):
    S._rev_abstract(_aval(x), dimensions=dimensions)
    return xp.flip(x, tuple(dimensions)) if dimensions else x


@eager_rule(S.concatenate_p)
def _concatenate(xp, *xs, dimension):
    S._concat_abstract(*[_aval(x) for x in xs], dimension=dimension)
    return xp.concatenate(xs, axis=dimension)


@eager_rule(S.slice_p)
def _slice(xp, x, *, start_indices, limit_indices, strides):
    S._slice_abstract(_aval(x), start_indices=start_indices, limit_indices=limit_indices,
                      strides=strides)
    return x[tuple(slice(s, l, st) for s, l, st in zip(start_indices, limit_indices, strides))]


@eager_rule(S.pad_p)
def _pad(xp, x, padding_value, *, padding_config):
    # pad with the non-negative parts into a filled buffer, then crop the negative ones
    full, place, crop = [], [], []
    for n, (lo, hi, interior) in zip(x.shape, padding_config):
        plo, phi = max(lo, 0), max(hi, 0)
        size = plo + phi + n + max(n - 1, 0) * interior
        full.append(size)
        place.append(slice(plo, plo + max(n - 1, 0) * (interior + 1) + (n > 0), interior + 1))
        crop.append(slice(max(-lo, 0), size - max(-hi, 0)))
    out = xp.empty(full, dtype=x.dtype)
    out[...] = padding_value
    out[tuple(place)] = x
    return out[tuple(crop)]


@eager_rule(S.iota_p)
def _iota(xp, *, dtype, shape, dimension):
    S._iota_abstract(dtype=dtype, shape=shape, dimension=dimension)
    r = xp.arange(shape[dimension], dtype=np.int64).astype(dtype)
    expanded = [1] * len(shape)
    expanded[dimension] = shape[dimension]
    return xp.broadcast_to(r.reshape(expanded), shape)


@eager_rule(_misc.stop_gradient_p)
def _identity(xp, x):
    return x


@eager_rule(C.convert_element_type_p)
def _convert(xp, x, *, new_dtype, weak_type=False):
    new_dtype = np.dtype(new_dtype)
    d = x.dtype
    if d == new_dtype:
        return x
    if new_dtype == _dt.bfloat16 and (d == np.float64 or (d.kind in "iu" and d.itemsize >= 4)):
        # the reference rounds these to odd in float32 first (ml_dtypes would round
        # twice): that helper has no rule here
        return NOT_COVERED
    with quiet(xp):
        if d.kind == "c" and new_dtype.kind != "c":
            x = xp.real(x)
        if is_float(x.dtype) and new_dtype.kind in "iu":
            # truncate toward zero; NaN -> 0 and out-of-range values saturate
            info = np.iinfo(new_dtype)
            y = xp.trunc(x.astype(np.float64))
            hi = y >= float(info.max)
            lo = y <= float(info.min)
            out = xp.where(xp.isnan(y) | hi | lo, 0, y).astype(new_dtype)
            out = xp.where(hi, xp.asarray(info.max, new_dtype), out)
            return xp.where(lo, xp.asarray(info.min, new_dtype), out)
        return x.astype(new_dtype)


def _aval(x):
    from ...fx.core import AbstractArray
    return AbstractArray(x.shape, _dt.canonicalize(x.dtype))
