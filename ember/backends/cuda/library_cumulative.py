"""Device library steps of the cumulative primitives (`fx/prims/cumulative.py`)
over an array module `xp` (CuPy on the GPU, numpy in the host emulation).

cumsum/cumprod are the module's own (integers wrap, half precision accumulates
in float32, as the reference).  cummax/cummin/cumlogsumexp have no accumulate in
every module, so they run as a log-step scan (Hillis-Steele: log2(n) whole-array
steps, each combining element i with element i - 2^s): max and min on the IEEE
order keys are exact, so those are bitwise the reference's; cumlogsumexp adds
in a different order, so it agrees to rounding.

Example:
    >>> import numpy as np
    >>> run = cumulative("max")
    >>> run(np, np.array([1., np.nan, 3.], np.float32), axis=0, reverse=False).tolist()
    [1.0, nan, nan]
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ...fx.prims.elementwise import from_order_keys, order_keys
from .eager import quiet

_HALF = (np.dtype(np.float16), np.dtype(_dt.bfloat16))


def _log_step_scan(xp, x, combine):
    """The inclusive scan of `x` along its last axis (a new array)."""
    y = xp.array(x, copy=True)
    n, s = y.shape[-1], 1
    while s < n:
        # the right side is a new array before the assignment: no aliasing
        y[..., s:] = combine(y[..., s:], y[..., :-s])
        s *= 2
    return y


def _extremum_scan(op):
    def scan(xp, x):
        ufunc = xp.maximum if op == "max" else xp.minimum
        if np.dtype(x.dtype).kind != "f":
            return _log_step_scan(xp, x, ufunc)
        return from_order_keys(_log_step_scan(xp, order_keys(x, op, xp), ufunc), x.dtype, xp)
    return scan


def _module_scan(name):
    def scan(xp, x):
        return getattr(xp, name)(x, axis=-1, dtype=x.dtype)
    return scan


_SCANS = {"sum": _module_scan("cumsum"), "prod": _module_scan("cumprod"),
          "max": _extremum_scan("max"), "min": _extremum_scan("min"),
          "logsumexp": lambda xp, x: _log_step_scan(xp, x, xp.logaddexp)}


def cumulative(kind):
    """fn(xp, x, *, axis, reverse): the running `kind` ("sum", "prod", "max", "min",
    "logsumexp") of `x` along `axis`, with the reference's dtype handling."""
    scan = _SCANS[kind]

    def run(xp, x, *, axis, reverse):
        d = np.dtype(x.dtype)
        xc = x.astype(np.float32) if d in _HALF else x
        xc = xp.moveaxis(xc, axis, -1)
        if reverse:
            xc = xp.flip(xc, -1)
        with quiet(xp):   # inf - inf and overflow are the reference's too
            out = scan(xp, xc)
            if kind in ("sum", "logsumexp") and np.dtype(out.dtype).kind in "fc":
                out = out + out.dtype.type(0)   # from +0.0, as the reference: -0.0 sums are +0.0
        if reverse:
            out = xp.flip(out, -1)
        return xp.ascontiguousarray(xp.moveaxis(out, -1, axis)).astype(d, copy=False)
    return run
