"""Windowed reductions (reduce_window_sum/max/min) and the select-and-gather/scatter
primitives that carry the derivatives of windowed max and min.

Every windowed op sees its operand base-dilated (holes filled with the
reduction's identity), then padded by `(low, high)` pairs (negative pads crop),
then reduced over windows of `window_dimensions`, spaced `window_dilation`
apart inside a window and `window_strides` apart between windows.  Pooling is
built from these.

Example:
    >>> import numpy as np
    >>> from ember.fx.prims.window import reduce_window_max
    >>> reduce_window_max(np.arange(6.0, dtype=np.float32).reshape(2, 3), (2, 2), (1, 1)).tolist()
    [[4.0, 5.0]]
"""
from __future__ import annotations

import itertools

import numpy as np

from ... import dtypes as _dt
from ..core import AbstractArray, Primitive, Zero, get_aval, is_undefined, shape_error, tangent_aval
from .elementwise import ieee_maximum, ieee_minimum
from .reduce import reduce_max_p, reduce_min_p
from .rules import bdim_to_front
from ..spelling import user_str

_LOWP = (_dt.float16, _dt.bfloat16)


# --- shared numpy helpers (also used by conv) --------------------------------------------

def dilate_pad_np(x, dilation, padding, fill):
    """Base-dilate `x` (holes = `fill`), then pad each axis by (low, high), negative = crop."""
    x = np.asarray(x)
    if any(d != 1 for d in dilation):
        shape = tuple((n - 1) * d + 1 if n else 0 for n, d in zip(x.shape, dilation))
        y = np.full(shape, fill, dtype=x.dtype)
        y[tuple(slice(None, None, d) for d in dilation)] = x
        x = y
    pos = [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
    if any(p != (0, 0) for p in pos):
        x = np.pad(x, pos, mode="constant", constant_values=fill)
    if any(lo < 0 or hi < 0 for lo, hi in padding):
        x = x[tuple(slice(max(-lo, 0), n - max(-hi, 0)) if n - max(-hi, 0) > max(-lo, 0)
                    else slice(0, 0)
                    for n, (lo, hi) in zip(x.shape, padding))]
    return x


def window_view_np(xp, axes, window_dimensions, window_strides, window_dilation):
    """A strided view of `xp` of shape `xp.shape` (with `axes` replaced by the
    output positions) + `window_dimensions`; assumes every output size is > 0."""
    eff = tuple((w - 1) * r + 1 for w, r in zip(window_dimensions, window_dilation))
    v = np.lib.stride_tricks.sliding_window_view(xp, eff, axis=axes)
    idx = [slice(None)] * xp.ndim
    for a, s in zip(axes, window_strides):
        idx[a] = slice(None, None, s)
    idx += [slice(None, None, r) for r in window_dilation]
    return v[tuple(idx)]


def window_out_size(n, w, s, lo, hi, base_dilation=1, window_dilation=1):
    """Number of window positions along one axis."""
    d = (n - 1) * base_dilation + 1 if n else 0
    p = d + lo + hi
    eff = (w - 1) * window_dilation + 1
    if p < eff:
        return 0
    return (p - eff) // s + 1


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """(low, high) pairs for "VALID", "SAME" (extra padding high) or "SAME_LOWER";
    explicit pairs pass through.  `window_shape` is the dilated window extent.

    Example:
        >>> padtype_to_pads((5,), (3,), (2,), "SAME")
        ((1, 1),)
    """
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return tuple((0, 0) for _ in in_shape)
        if mode in ("SAME", "SAME_LOWER"):
            pads = []
            for n, w, s in zip(in_shape, window_shape, window_strides):
                out = -(-n // s)
                total = max((out - 1) * s + w - n, 0)
                small, big = total // 2, total - total // 2
                pads.append((big, small) if mode == "SAME_LOWER" else (small, big))
            return tuple(pads)
        raise ValueError(f"unknown padding {padding!r}; expected 'SAME', 'SAME_LOWER', 'VALID' "
                         f"or a sequence of (low, high) pairs")
    try:
        pads = tuple((int(lo), int(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        raise TypeError(f"padding must be a string or a sequence of (low, high) pairs, "
                        f"got {padding!r}") from None
    if len(pads) != len(in_shape):
        raise TypeError(f"padding {padding!r} needs {len(in_shape)} (low, high) pairs")
    return pads


def _identity(dtype, kind):
    """The reduction's identity: the pad/hole value of windowed sum, max and min."""
    if kind == "sum":
        return np.zeros((), dtype)[()]
    if dtype == _dt.bool_:
        return np.bool_(kind == "min")
    if _dt.is_integer(dtype):
        info = np.iinfo(dtype)
        return dtype.type(info.min if kind == "max" else info.max)
    return np.array(-np.inf if kind == "max" else np.inf, dtype)[()]


# --- abstract evaluation -------------------------------------------------------------------

def _check_window_params(name, x, window_dimensions, window_strides, padding, base_dilation,
                         window_dilation):
    nd = x.ndim
    for what, v in (("window_dimensions", window_dimensions), ("window_strides", window_strides),
                    ("padding", padding), ("base_dilation", base_dilation),
                    ("window_dilation", window_dilation)):
        if len(v) != nd:
            raise shape_error(name, f"{what} {v} must have one entry per dimension of {user_str(x)}")
    for what, v in (("window_dimensions", window_dimensions), ("window_strides", window_strides),
                    ("base_dilation", base_dilation), ("window_dilation", window_dilation)):
        if any(e < 1 for e in v):
            raise shape_error(name, f"{what} {v} must be positive")


def _window_shape(x, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    return tuple(window_out_size(n, w, s, lo, hi, b, r) for n, w, s, (lo, hi), b, r in zip(
        x.shape, window_dimensions, window_strides, padding, base_dilation, window_dilation))


def _reduce_window_abstract(name, allowed):
    def abstract_eval(x, *, window_dimensions, window_strides, padding, base_dilation,
                      window_dilation):
        _check_window_params(name, x, window_dimensions, window_strides, padding, base_dilation,
                             window_dilation)
        if not allowed(x.dtype):
            raise TypeError(f"{name} does not accept dtype {x.dtype}")
        shape = _window_shape(x, window_dimensions, window_strides, padding, base_dilation,
                              window_dilation)
        return AbstractArray(shape, x.dtype, x.weak_type)
    return abstract_eval


# --- numpy implementations -------------------------------------------------------------------

def _windows(x, fill, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    """(view of shape out + window, out shape); the view is None when out is empty."""
    x = np.asarray(x)
    out = tuple(window_out_size(n, w, s, lo, hi, b, r) for n, w, s, (lo, hi), b, r in zip(
        x.shape, window_dimensions, window_strides, padding, base_dilation, window_dilation))
    if 0 in out:
        return None, out
    xp = dilate_pad_np(x, base_dilation, padding, fill)
    v = window_view_np(xp, tuple(range(x.ndim)), window_dimensions, window_strides,
                       window_dilation)
    return v, out


# Windows with few offsets are reduced by a loop over the offsets, each step one
# vectorised op on a strided slice the size of the output (fast, little memory);
# big windows (global pooling) reduce a sliding-window view instead.
_MAX_OFFSET_LOOP = 64


def _offsets(window_dimensions):
    return enumerate(itertools.product(*[range(w) for w in window_dimensions]))


def _offset_slice(k, out, window_strides, window_dilation):
    """The strided slice of the padded operand that offset k of every window reads."""
    return tuple(slice(kd * r, kd * r + (o - 1) * s + 1, s)
                 for kd, o, s, r in zip(k, out, window_strides, window_dilation))


def _reduce_window_impl(kind, abstract_eval):
    # max/min: IEEE maximum/minimum (-0.0 < +0.0), as reduce_max/reduce_min
    ufunc = {"sum": np.add, "max": ieee_maximum, "min": ieee_minimum}[kind]

    def impl(x, *, window_dimensions, window_strides, padding, base_dilation, window_dilation):
        x = np.asarray(x)
        # Eager calls reach the impl without abstract evaluation: validate here.
        abstract_eval(get_aval(x), window_dimensions=window_dimensions,
                      window_strides=window_strides, padding=padding, base_dilation=base_dilation,
                      window_dilation=window_dilation)
        dt = x.dtype
        if dt in _LOWP:
            x = x.astype(np.float32)
        fill = _identity(x.dtype, kind)
        if int(np.prod(window_dimensions)) > _MAX_OFFSET_LOOP:
            v, out = _windows(x, fill, window_dimensions, window_strides, padding, base_dilation,
                              window_dilation)
            if v is None:
                return np.zeros(out, dt)
            axes = tuple(range(x.ndim, 2 * x.ndim))
            if kind == "sum":
                r = np.sum(v, axis=axes, dtype=x.dtype)
            else:
                r = (reduce_max_p if kind == "max" else reduce_min_p).impl(v, axes=axes)
            return np.asarray(r).astype(dt, copy=False)
        out = _window_shape(get_aval(x), window_dimensions, window_strides, padding,
                            base_dilation, window_dilation)
        if 0 in out:
            return np.zeros(out, dt)
        xp = dilate_pad_np(x, base_dilation, padding, fill)
        acc = None
        for _, k in _offsets(window_dimensions):
            v = xp[_offset_slice(k, out, window_strides, window_dilation)]
            if acc is None:
                acc = np.array(v, dtype=x.dtype)
            elif kind == "sum":
                ufunc(acc, v, out=acc)
            else:
                acc = np.asarray(ufunc(acc, v))
        return acc.astype(dt, copy=False)
    return impl


def _select(x, select_prim, t, window_dimensions, window_strides, padding, base_dilation,
            window_dilation):
    """Per output position, the flat in-window offset of the first max (min) of x
    (NaN counts as the extreme, as in numpy), and t gathered there if t is given."""
    x = np.asarray(x)
    if x.dtype in _LOWP:
        x = x.astype(np.float32)
    out = _window_shape(get_aval(x), window_dimensions, window_strides, padding, base_dilation,
                        window_dilation)
    if 0 in out:
        return None, None, out
    xp = dilate_pad_np(x, base_dilation, padding, _identity(x.dtype, select_prim))
    tp = None if t is None else dilate_pad_np(t, base_dilation, padding, np.zeros((), t.dtype)[()])
    better = np.greater if select_prim == "max" else np.less
    nan_aware = _dt.is_float(x.dtype) and bool(np.isnan(x).any())
    idx = np.zeros(out, np.intp)
    best = gathered = None
    for kflat, k in _offsets(window_dimensions):
        sl = _offset_slice(k, out, window_strides, window_dilation)
        v = xp[sl]
        if best is None:
            best = np.array(v)
            gathered = None if tp is None else np.array(tp[sl])
            continue
        upd = better(v, best)
        if nan_aware:
            upd |= np.isnan(v) & ~np.isnan(best)
        np.copyto(best, v, where=upd)
        np.copyto(idx, kflat, where=upd)
        if tp is not None:
            np.copyto(gathered, tp[sl], where=upd)
    return idx, gathered, out


def _sag_impl(t, x, *, select_prim, window_dimensions, window_strides, padding, base_dilation,
              window_dilation):
    t = np.asarray(t)
    _sag_abstract(get_aval(t), get_aval(x), select_prim=select_prim,
                  window_dimensions=window_dimensions, window_strides=window_strides,
                  padding=padding, base_dilation=base_dilation, window_dilation=window_dilation)
    idx, gathered, out = _select(x, select_prim, t, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation)
    if idx is None:
        return np.zeros(out, t.dtype)
    return gathered


def _ssa_impl(s, x, *, select_prim, window_dimensions, window_strides, padding, base_dilation,
              window_dilation):
    s = np.asarray(s)
    x = np.asarray(x)
    _ssa_abstract(get_aval(s), get_aval(x), select_prim=select_prim,
                  window_dimensions=window_dimensions, window_strides=window_strides,
                  padding=padding, base_dilation=base_dilation, window_dilation=window_dilation)
    idx, _, out = _select(x, select_prim, None, window_dimensions, window_strides, padding,
                          base_dilation, window_dilation)
    if idx is None or x.size == 0:
        return np.zeros(x.shape, s.dtype)
    acc_dtype = np.float32 if s.dtype in _LOWP else s.dtype
    sw = s.astype(acc_dtype, copy=False)
    # Accumulate in the padded, dilated coordinates: within one window offset the
    # windows read distinct positions, so each step is a plain strided add.
    pshape = tuple(((n - 1) * b + 1) + lo + hi
                   for n, b, (lo, hi) in zip(x.shape, base_dilation, padding))
    buf = np.zeros(pshape, acc_dtype)
    zero = np.zeros((), acc_dtype)
    for kflat, k in _offsets(window_dimensions):
        buf[_offset_slice(k, out, window_strides, window_dilation)] += np.where(idx == kflat, sw,
                                                                                 zero)
    # Read back the operand's positions: padded index i*b + lo; holes and padding drop out.
    res = np.zeros(x.shape, acc_dtype)
    src, dst = [], []
    for n, b, (lo, _), p in zip(x.shape, base_dilation, padding, pshape):
        i0 = max(0, -(lo // b) if lo < 0 else 0)
        i1 = min(n - 1, (p - 1 - lo) // b)
        if i1 < i0:
            return res.astype(s.dtype)
        dst.append(slice(i0, i1 + 1))
        src.append(slice(i0 * b + lo, i1 * b + lo + 1, b))
    res[tuple(dst)] = buf[tuple(src)]
    return res.astype(s.dtype, copy=False)


# --- primitives ----------------------------------------------------------------------------------

def _numeric(d):
    return d != _dt.bool_ and d != _dt.float0


def _ordered(d):
    return _dt.kind(d) != "c" and d != _dt.float0


reduce_window_sum_p = Primitive("reduce_window_sum")
reduce_window_sum_p.kind = "reduction"
reduce_window_sum_p.abstract_eval = _reduce_window_abstract("reduce_window_sum", _numeric)
reduce_window_sum_p.impl = _reduce_window_impl("sum", reduce_window_sum_p.abstract_eval)

reduce_window_max_p = Primitive("reduce_window_max")
reduce_window_max_p.kind = "reduction"
reduce_window_max_p.abstract_eval = _reduce_window_abstract("reduce_window_max", _ordered)
reduce_window_max_p.impl = _reduce_window_impl("max", reduce_window_max_p.abstract_eval)

reduce_window_min_p = Primitive("reduce_window_min")
reduce_window_min_p.kind = "reduction"
reduce_window_min_p.abstract_eval = _reduce_window_abstract("reduce_window_min", _ordered)
reduce_window_min_p.impl = _reduce_window_impl("min", reduce_window_min_p.abstract_eval)


def _sag_abstract(t, x, *, select_prim, window_dimensions, window_strides, padding, base_dilation,
                  window_dilation):
    name = "select_and_gather_add"
    _check_window_params(name, x, window_dimensions, window_strides, padding, base_dilation,
                         window_dilation)
    if t.shape != x.shape:
        raise shape_error(name, f"tangent {user_str(t)} and operand {user_str(x)} must have the same shape")
    if not _dt.is_inexact(t.dtype) or not _ordered(x.dtype):
        raise TypeError(f"{name}: needs an inexact tangent and an ordered operand, got {user_str(t)}, {user_str(x)}")
    shape = _window_shape(x, window_dimensions, window_strides, padding, base_dilation,
                          window_dilation)
    return AbstractArray(shape, t.dtype, t.weak_type)


def _ssa_abstract(s, x, *, select_prim, window_dimensions, window_strides, padding, base_dilation,
                  window_dilation):
    name = "select_and_scatter_add"
    _check_window_params(name, x, window_dimensions, window_strides, padding, base_dilation,
                         window_dilation)
    shape = _window_shape(x, window_dimensions, window_strides, padding, base_dilation,
                          window_dilation)
    if s.shape != shape:
        raise shape_error(name, f"source {user_str(s)} must have the windowed shape {shape} of operand {user_str(x)}")
    if not _dt.is_inexact(s.dtype) or not _ordered(x.dtype):
        raise TypeError(f"{name}: needs an inexact source and an ordered operand, got {user_str(s)}, {user_str(x)}")
    return AbstractArray(x.shape, s.dtype, s.weak_type)


select_and_gather_add_p = Primitive("select_and_gather_add")
select_and_gather_add_p.kind = "reduction"
select_and_gather_add_p.abstract_eval = _sag_abstract
select_and_gather_add_p.impl = _sag_impl

select_and_scatter_add_p = Primitive("select_and_scatter_add")
select_and_scatter_add_p.kind = "scatter"
select_and_scatter_add_p.abstract_eval = _ssa_abstract
select_and_scatter_add_p.impl = _ssa_impl


# --- wrappers ---------------------------------------------------------------------------------

def _window_params(x, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    a = get_aval(x)
    nd = a.ndim
    wd = tuple(int(w) for w in window_dimensions)
    if len(wd) != nd:
        raise shape_error("reduce_window", f"window_dimensions {window_dimensions} must have one "
                          f"entry per dimension of {user_str(a)}")
    ws = (1,) * nd if window_strides is None else tuple(int(s) for s in window_strides)
    bd = (1,) * nd if base_dilation is None else tuple(int(b) for b in base_dilation)
    rd = (1,) * nd if window_dilation is None else tuple(int(r) for r in window_dilation)
    if padding is None:
        padding = "VALID"
    in_shape = tuple((n - 1) * b + 1 if n else 0 for n, b in zip(a.shape, bd))
    eff = tuple((w - 1) * r + 1 for w, r in zip(wd, rd))
    pads = padtype_to_pads(in_shape, eff, ws, padding)
    return dict(window_dimensions=wd, window_strides=ws, padding=pads, base_dilation=bd,
                window_dilation=rd)


def reduce_window_sum(x, window_dimensions, window_strides=None, padding="VALID",
                      base_dilation=None, window_dilation=None):
    """Sum over sliding windows (zero padding).  `padding` is "VALID", "SAME" or
    (low, high) pairs; strides and dilations default to 1.

    Example:
        >>> import numpy as np
        >>> reduce_window_sum(np.ones(5, np.float32), (2,), (2,)).tolist()
        [2.0, 2.0]
    """
    return reduce_window_sum_p.bind(x, **_window_params(x, window_dimensions, window_strides,
                                                        padding, base_dilation, window_dilation))


def reduce_window_max(x, window_dimensions, window_strides=None, padding="VALID",
                      base_dilation=None, window_dilation=None):
    """Max over sliding windows (padding is -inf, or the integer minimum).

    Example:
        >>> import numpy as np
        >>> reduce_window_max(np.array([1., 3., 2.], np.float32), (2,)).tolist()
        [3.0, 3.0]
    """
    return reduce_window_max_p.bind(x, **_window_params(x, window_dimensions, window_strides,
                                                        padding, base_dilation, window_dilation))


def reduce_window_min(x, window_dimensions, window_strides=None, padding="VALID",
                      base_dilation=None, window_dilation=None):
    """Min over sliding windows (padding is +inf, or the integer maximum).

    Example:
        >>> import numpy as np
        >>> reduce_window_min(np.array([1., 3., 2.], np.float32), (2,)).tolist()
        [1.0, 2.0]
    """
    return reduce_window_min_p.bind(x, **_window_params(x, window_dimensions, window_strides,
                                                        padding, base_dilation, window_dilation))


def _check_select(select_prim):
    if select_prim not in ("max", "min"):
        raise ValueError(f"select_prim must be 'max' or 'min', got {select_prim!r}")
    return select_prim


def select_and_gather_add(tangents, operand, select_prim, window_dimensions, window_strides=None,
                          padding="VALID", base_dilation=None, window_dilation=None):
    """For each window of `operand`, the entry of `tangents` at the window's first
    max (`select_prim="max"`) or min: the tangent of a windowed max/min.

    Example:
        >>> import numpy as np
        >>> x = np.array([1., 3., 2.], np.float32); t = np.array([10., 20., 30.], np.float32)
        >>> select_and_gather_add(t, x, "max", (2,)).tolist()
        [20.0, 20.0]
    """
    params = _window_params(operand, window_dimensions, window_strides, padding, base_dilation,
                            window_dilation)
    return select_and_gather_add_p.bind(tangents, operand, select_prim=_check_select(select_prim),
                                        **params)


def select_and_scatter_add(source, operand, select_prim, window_dimensions, window_strides=None,
                           padding="VALID", base_dilation=None, window_dilation=None):
    """Add each entry of `source` (one per window) into `operand`'s shape at the
    window's first max (min): the cotangent of a windowed max/min.

    Example:
        >>> import numpy as np
        >>> x = np.array([1., 3., 2.], np.float32)
        >>> select_and_scatter_add(np.ones(2, np.float32), x, "max", (2,)).tolist()
        [0.0, 2.0, 0.0]
    """
    params = _window_params(operand, window_dimensions, window_strides, padding, base_dilation,
                            window_dilation)
    return select_and_scatter_add_p.bind(source, operand, select_prim=_check_select(select_prim),
                                         **params)


# --- jvp and transpose rules ------------------------------------------------------------------

def _transposed_window_params(x_aval, ct_aval, *, window_dimensions, window_strides, padding,
                              base_dilation, window_dilation):
    """Params of the windowed sum that maps a cotangent of reduce_window_sum back to
    its operand: the cotangent dilated by the strides, padded so that every input
    position sees exactly the windows that covered it, and read with stride
    `base_dilation` (the holes of a base-dilated operand receive nothing)."""
    pads = []
    for n, o, w, s, (lo, hi), b, r in zip(x_aval.shape, ct_aval.shape, window_dimensions,
                                          window_strides, padding, base_dilation, window_dilation):
        d = (n - 1) * b + 1
        pads.append(((w - 1) * r - lo, d - 1 + lo - (o - 1) * s))
    return dict(window_dimensions=window_dimensions, window_strides=base_dilation,
                padding=tuple(pads), base_dilation=window_strides, window_dilation=window_dilation)


def _rws_transpose(ct, x, **params):
    from .rules import zeros
    ca = get_aval(ct)
    if ca.size == 0 or x.aval.size == 0:
        return [zeros(x.aval)]
    return [reduce_window_sum_p.bind(ct, **_transposed_window_params(x.aval, ca, **params))]


def _rws_jvp(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    ans = reduce_window_sum_p.bind(x, **params)
    if type(t) is Zero or not _dt.is_inexact(get_aval(x).dtype):
        return ans, Zero(tangent_aval(get_aval(ans)))
    return ans, reduce_window_sum_p.bind(t, **params)


def _minmax_jvp(prim, select_prim):
    def jvp(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, **params)
        if type(t) is Zero or not _dt.is_inexact(get_aval(x).dtype):
            return ans, Zero(tangent_aval(get_aval(ans)))
        return ans, select_and_gather_add_p.bind(t, x, select_prim=select_prim, **params)
    return jvp


reduce_window_sum_p.jvp = _rws_jvp
reduce_window_sum_p.transpose = _rws_transpose
reduce_window_max_p.jvp = _minmax_jvp(reduce_window_max_p, "max")
reduce_window_min_p.jvp = _minmax_jvp(reduce_window_min_p, "min")
reduce_window_max_p.not_applicable.add("transpose")
reduce_window_min_p.not_applicable.add("transpose")


def _linear_in_first(prim):
    """jvp of a primitive linear in its first argument whose second argument only
    selects positions (piecewise constant: no derivative through it)."""
    def jvp(primals, tangents, **params):
        (a, x), (ta, _) = primals, tangents
        ans = prim.bind(a, x, **params)
        if type(ta) is Zero:
            return ans, Zero(tangent_aval(get_aval(ans)))
        return ans, prim.bind(ta, x, **params)
    return jvp


def _sag_transpose(ct, t, x, **params):
    if is_undefined(x):
        raise TypeError("select_and_gather_add is not linear in its operand")
    return [select_and_scatter_add_p.bind(ct, x, **params), None]


def _ssa_transpose(ct, s, x, **params):
    if is_undefined(x):
        raise TypeError("select_and_scatter_add is not linear in its operand")
    return [select_and_gather_add_p.bind(ct, x, **params), None]


select_and_gather_add_p.jvp = _linear_in_first(select_and_gather_add_p)
select_and_gather_add_p.transpose = _sag_transpose
select_and_scatter_add_p.jvp = _linear_in_first(select_and_scatter_add_p)
select_and_scatter_add_p.transpose = _ssa_transpose


# --- batch rules ---------------------------------------------------------------------------------

def _batched_params(params, d):
    """Insert a size-1, stride-1, unpadded, undilated window at dim d."""
    def ins(t, v):
        return t[:d] + (v,) + t[d:]
    return dict(params, window_dimensions=ins(params["window_dimensions"], 1),
                window_strides=ins(params["window_strides"], 1),
                padding=ins(params["padding"], (0, 0)),
                base_dilation=ins(params["base_dilation"], 1),
                window_dilation=ins(params["window_dilation"], 1))


def _unary_window_batch(prim):
    def batch(axis_size, args, dims, **params):
        (x,), (d,) = args, dims
        return prim.bind(x, **_batched_params(params, d)), d
    return batch


def _binary_window_batch(prim):
    def batch(axis_size, args, dims, **params):
        a, x = args
        da, dx = dims
        if da is not None and da == dx:
            return prim.bind(a, x, **_batched_params(params, da)), da
        a = bdim_to_front(a, da, axis_size)
        x = bdim_to_front(x, dx, axis_size)
        return prim.bind(a, x, **_batched_params(params, 0)), 0
    return batch


for _p in (reduce_window_sum_p, reduce_window_max_p, reduce_window_min_p):
    _p.batch = _unary_window_batch(_p)
for _p in (select_and_gather_add_p, select_and_scatter_add_p):
    _p.batch = _binary_window_batch(_p)
