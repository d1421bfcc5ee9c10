"""Autocast: inside `with autocast(dtype=bfloat16):` the matmul-like functions
of `ember.nn.functional` compute in the low-precision dtype and the
precision-sensitive ones (softmax, normalisation, losses) in float32, as under
PyTorch's `torch.autocast`. Functions opt in with the `lower_precision` and
`full_precision` decorators. The setting is part of every jit cache key.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> with autocast(dtype="bfloat16"):
    ...     y = nn.functional.linear(enp.ones((2, 3)), enp.ones((4, 3)))
    ...     p = nn.functional.softmax(y, dim=-1)
    >>> str(y.dtype), str(p.dtype)
    ('bfloat16', 'float32')
"""
from __future__ import annotations

import contextlib
import contextvars
import functools

import numpy as np

from .. import dtypes as _dt
from ..fx import trace_context

_DTYPE: contextvars.ContextVar = contextvars.ContextVar("ember_autocast", default=None)
trace_context.register("autocast", lambda: None if (d := _DTYPE.get()) is None else str(d))

_HALF = (np.dtype(_dt.float16), np.dtype(_dt.bfloat16))
_LOW_OK = (np.dtype(_dt.float16), np.dtype(_dt.bfloat16))


def current_dtype():
    """The compute dtype of the innermost active autocast, or None."""
    return _DTYPE.get()


@contextlib.contextmanager
def autocast(device_type: str = "cpu", dtype="bfloat16", enabled: bool = True, cache_enabled=None):
    """Run matmuls/convolutions/attention in `dtype` (bfloat16 or float16) and
    softmax, normalisation and losses in float32 for the block (PyTorch's
    `torch.autocast` signature; `device_type` is accepted for compatibility).

    Example:
        >>> import ember.numpy as enp
        >>> from ember import nn
        >>> with autocast("cpu", dtype="float16"):
        ...     str(nn.functional.linear(enp.ones((1, 2)), enp.ones((2, 2))).dtype)
        'float16'
    """
    if not enabled:
        token = _DTYPE.set(None)
        try:
            yield
        finally:
            _DTYPE.reset(token)
        return
    d = _dt.canonicalize(dtype)
    if d not in _LOW_OK:
        raise TypeError(f"autocast computes in bfloat16 or float16, not {d} (float32 is the "
                        "default: use enabled=False or no autocast)")
    with trace_context.override():
        token = _DTYPE.set(d)
        try:
            yield
        finally:
            _DTYPE.reset(token)


def _cast_floats(values, to, only):
    from ..fx.core import get_aval
    from ..fx.prims.convert import convert_element_type
    out = []
    for v in values:
        try:
            a = get_aval(v) if not isinstance(v, (int, float, bool, type(None), str, tuple, list)) else None
        except TypeError:
            a = None
        if a is not None and _dt.is_float(a.dtype) and a.dtype != to and only(a.dtype):
            v = convert_element_type(v, to)
        out.append(v)
    return out


def lower_precision(fn):
    """Decorator: under autocast, float array arguments are cast to the compute dtype."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        d = _DTYPE.get()
        if d is None:
            return fn(*args, **kwargs)
        args = _cast_floats(args, d, lambda _: True)
        keys = list(kwargs)
        kwargs = dict(zip(keys, _cast_floats([kwargs[k] for k in keys], d, lambda _: True)))
        return fn(*args, **kwargs)
    return wrapper


def full_precision(fn):
    """Decorator: under autocast, half-precision array arguments are cast to float32."""
    f32 = np.dtype(np.float32)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _DTYPE.get() is None:
            return fn(*args, **kwargs)
        args = _cast_floats(args, f32, lambda d: d in _HALF)
        keys = list(kwargs)
        kwargs = dict(zip(keys, _cast_floats([kwargs[k] for k in keys], f32, lambda d: d in _HALF)))
        return fn(*args, **kwargs)
    return wrapper
