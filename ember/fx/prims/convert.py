"""Dtype conversion primitives: convert_element_type, bitcast_convert_type and
reduce_precision (rounding to a narrower float format within a dtype).

Example:
    >>> import numpy as np
    >>> from ember.fx.prims.convert import convert_element_type
    >>> convert_element_type(np.float32(2.7), np.dtype("int32")).dtype
    dtype('int32')
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ..core import AbstractArray, Primitive, Zero, get_aval, tangent_aval
from .rules import deflinear, defvectorized
from ..spelling import user_str


def _convert_abstract(x, *, new_dtype, weak_type=False):
    return AbstractArray(x.shape, new_dtype, weak_type)


def _convert_impl(x, *, new_dtype, weak_type=False):
    x = np.asarray(x)
    if x.dtype == new_dtype:
        return x
    if _dt.is_inexact(x.dtype) and _dt.is_integer(new_dtype):
        # float -> int: truncate toward zero; NaN -> 0 and out-of-range values
        # saturate, so every backend agrees (C leaves these undefined).
        info = np.iinfo(new_dtype)
        with np.errstate(invalid="ignore"):
            y = np.trunc(np.real(x).astype(np.float64))
            # compare in float64 before converting: float(int64 max) rounds up to 2**63
            hi = y >= float(info.max)
            lo = y <= float(info.min)
            bad = np.isnan(y) | hi | lo
            out = np.where(bad, 0, y).astype(new_dtype)
            out[hi] = info.max
            out[lo] = info.min
            return out
    if _dt.kind(x.dtype) == "c" and _dt.kind(new_dtype) != "c":
        x = np.real(x)
    with np.errstate(invalid="ignore", over="ignore"):
        if np.dtype(new_dtype) == _dt.bfloat16 and (x.dtype == np.float64 or
                                                     (_dt.is_integer(x.dtype) and x.dtype.itemsize >= 4)):
            # ml_dtypes rounds these through float32 (twice: 1 + 2**-8 + 2**-30 gives
            # 1.0, not 1 + 2**-7); rounding to odd first makes the last step exact
            x = _float32_round_to_odd(x)
        return x.astype(new_dtype)


def _float32_round_to_odd(x):
    """`x` (float64 or integers) as float32 rounded to odd: truncated toward zero
    with the last bit set when inexact, so one more rounding to a format at least
    two bits narrower (bfloat16, float16) is correctly rounded.  Integers go to
    float64 the same way first (round-to-odd composes).

    Example:
        >>> float(_float32_round_to_odd(np.array(1 + 2**-30)) - 1) == 2**-23
        True
    """
    if _dt.is_integer(x.dtype):
        t = x.astype(np.float64)
        if x.dtype.itemsize == 8:
            # t may be 2**63 (2**64), which does not convert back
            big = t >= (2.0 ** 63 if x.dtype.kind == "i" else 2.0 ** 64)
            ti = np.where(big, 0, t).astype(x.dtype)
            inexact = big | (ti != x)
            toward_zero = big | ((t > 0) & (ti > x)) | ((t < 0) & (ti < x))
            t = _odd_bits(t, inexact, toward_zero, np.uint64)
        x = t
    t = x.astype(np.float32)
    back = t.astype(np.float64)
    inexact = (back != x) & ~np.isnan(x)
    return _odd_bits(t, inexact, inexact & (np.abs(back) > np.abs(x)), np.uint32)


def _odd_bits(t, inexact, toward_zero, utype):
    bits = np.array(t).view(utype)
    bits = np.where(toward_zero, bits - utype(1), bits)
    bits = np.where(inexact, bits | utype(1), bits)
    return bits.view(t.dtype)


convert_element_type_p = Primitive("convert_element_type")
convert_element_type_p.abstract_eval = _convert_abstract
convert_element_type_p.impl = _convert_impl
defvectorized(convert_element_type_p)


def convert_element_type(x, new_dtype, weak_type: bool = False):
    """Convert to `new_dtype` (float->int truncates toward zero, saturating; NaN -> 0)."""
    new_dtype = _dt.canonicalize(new_dtype)
    a = get_aval(x)
    if a.dtype == new_dtype and a.weak_type == weak_type and not isinstance(x, (int, float, bool, complex)):
        return x
    return convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)


def _convert_jvp(primals, tangents, *, new_dtype, weak_type=False):
    (x,), (g,) = primals, tangents
    ans = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if type(g) is Zero or not (_dt.is_inexact(new_dtype) and _dt.is_inexact(get_aval(x).dtype)):
        return ans, Zero(tangent_aval(get_aval(ans)))
    return ans, convert_element_type_p.bind(g, new_dtype=new_dtype, weak_type=weak_type)


def _convert_transpose(ct, x, *, new_dtype, weak_type=False):
    old = x.aval.dtype
    if not _dt.is_inexact(old):
        return [Zero(tangent_aval(x.aval))]
    return [convert_element_type_p.bind(ct, new_dtype=old, weak_type=x.aval.weak_type)]


convert_element_type_p.jvp = _convert_jvp
convert_element_type_p.transpose = _convert_transpose


def _bitcast_abstract(x, *, new_dtype):
    old = x.dtype.itemsize
    new = np.dtype(new_dtype).itemsize
    if old == new:
        shape = x.shape
    elif old > new:
        shape = x.shape + (old // new,)
    else:
        if not x.shape or x.shape[-1] != new // old:
            raise TypeError(f"bitcast_convert_type: {user_str(x)} to {new_dtype} needs a last dimension "
                            f"of {new // old}")
        shape = x.shape[:-1]
    return AbstractArray(shape, new_dtype)


def _bitcast_impl(x, *, new_dtype):
    x = np.asarray(x)
    x = x if x.flags.c_contiguous else np.ascontiguousarray(x)  # keeps 0-d arrays 0-d
    old, new = x.dtype.itemsize, np.dtype(new_dtype).itemsize
    # numpy views a 0-d array only at the same itemsize: view its one element as 1-d
    y = x.reshape(1).view(new_dtype) if x.ndim == 0 and old != new else x.view(new_dtype)
    if old > new:
        return y.reshape(x.shape + (old // new,))
    if old < new:
        return y.reshape(x.shape[:-1])
    return y


bitcast_convert_type_p = Primitive("bitcast_convert_type")
bitcast_convert_type_p.kind = "library"
bitcast_convert_type_p.abstract_eval = _bitcast_abstract
bitcast_convert_type_p.impl = _bitcast_impl
bitcast_convert_type_p.not_applicable.add("transpose")


def _bitcast_batch(axis_size, args, dims, *, new_dtype):
    (x,), (d,) = args, dims
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), d


def _bitcast_jvp(primals, tangents, *, new_dtype):
    ans = bitcast_convert_type_p.bind(primals[0], new_dtype=new_dtype)
    return ans, Zero(tangent_aval(get_aval(ans)))


bitcast_convert_type_p.batch = _bitcast_batch
bitcast_convert_type_p.jvp = _bitcast_jvp


def bitcast_convert_type(x, new_dtype):
    """Reinterpret the bits of `x` as `new_dtype` (sizes differing -> a trailing dim)."""
    return bitcast_convert_type_p.bind(x, new_dtype=_dt.canonicalize(new_dtype))


# --- reduce_precision: round to a narrower float format, staying in the same dtype -----

# float dtype -> (unsigned type of its width, exponent bits, mantissa bits)
FLOAT_LAYOUT = {"float16": (np.uint16, 5, 10), "bfloat16": (np.uint16, 8, 7),
                "float32": (np.uint32, 8, 23), "float64": (np.uint64, 11, 52)}


def _rp_abstract(x, *, exponent_bits, mantissa_bits):
    if not _dt.is_float(x.dtype):
        raise TypeError(f"reduce_precision: operand must be a real float, got {user_str(x)}")
    return AbstractArray(x.shape, x.dtype, x.weak_type)


def _rp_impl(x, *, exponent_bits, mantissa_bits):
    """XLA's ReducePrecision on the bit pattern: round the mantissa to nearest even at
    `mantissa_bits`, then send exponents the narrower format cannot hold to +-inf
    (above) and +-0 (below its smallest normal: it has no subnormals); NaN stays."""
    x = np.asarray(x)
    ut, E, M = FLOAT_LAYOUT[x.dtype.name]
    e, m = exponent_bits, mantissa_bits
    if e >= E and m >= M:
        return x.copy()
    u = x.view(ut).copy()
    one = ut(1)
    if m < M:
        shift = ut(M - m)
        last = one << shift
        lsb = (u >> shift) & one
        u = ((u + lsb + ((last >> one) - one)) & ~(last - one)).astype(ut)
    if e < E:
        exp_mask = ut(((1 << E) - 1) << M)
        bias, rbias = (1 << (E - 1)) - 1, (1 << (e - 1)) - 1
        field = u & exp_mask
        signed_zero = u & ut(1 << (x.dtype.itemsize * 8 - 1))
        u = np.where(field > ut((bias + rbias) << M), signed_zero | exp_mask,
                     np.where(field <= ut((bias - rbias) << M), signed_zero, u)).astype(ut)
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(x), x, u.view(x.dtype))


reduce_precision_p = Primitive("reduce_precision")
reduce_precision_p.abstract_eval = _rp_abstract
reduce_precision_p.impl = _rp_impl
defvectorized(reduce_precision_p)


def _rp_transpose(ct, x, **params):
    return [Zero(x.aval) if type(ct) is Zero else reduce_precision_p.bind(ct, **params)]


# linear as JAX takes it: tangents and cotangents are rounded to the format as well
deflinear(reduce_precision_p, _rp_transpose)


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    """`operand` rounded to a float format with `exponent_bits` exponent and
    `mantissa_bits` mantissa bits, keeping its dtype (jax.lax.reduce_precision): round to
    nearest even, values beyond the format's range to +-inf, below its smallest normal to
    +-0, NaN kept.  `reduce_precision(x, 5, 10)` simulates float16 in float32;
    `(8, 7)` bfloat16; `(4, 3)` float8_e4m3 without its NaN-only top code.  Derivatives
    pass through rounded the same way.

    Example:
        >>> import numpy as np
        >>> reduce_precision(np.float32(1 + 2 ** -9), 8, 7).item()  # bfloat16 keeps 7 bits
        1.0
        >>> reduce_precision(np.float32(1e5), 5, 10).item()  # beyond float16's range
        inf
    """
    e, m = int(exponent_bits), int(mantissa_bits)
    if e < 1 or m < 0:
        raise ValueError(f"reduce_precision: exponent_bits must be >= 1 and mantissa_bits >= 0, "
                         f"got exponent_bits={exponent_bits}, mantissa_bits={mantissa_bits}")
    return reduce_precision_p.bind(operand, exponent_bits=e, mantissa_bits=m)
