"""convolve and correlate of 1-D sequences (numpy's modes full/same/valid), one
convolution primitive per real product, so they are differentiable, batchable and fused.

Example:
    >>> import ember.numpy as enp
    >>> enp.convolve(enp.asarray([1.0, 2.0, 3.0]), enp.asarray([0.0, 1.0, 0.5])).tolist()
    [0.0, 1.0, 2.5, 4.0, 1.5]
"""
from __future__ import annotations

from .. import dtypes as _dt
from .. import lax
from ..fx.core import get_aval
from ._core import ensure_array, promote_dtypes

__all__ = ["convolve", "correlate"]

_MODES = ("full", "same", "valid")


def _inputs(a, v, mode, op):
    if mode not in _MODES:
        raise ValueError(f"{op}: mode must be one of {', '.join(map(repr, _MODES))}, got {mode!r}")
    a, v = ensure_array(a), ensure_array(v)
    for name, x in (("a", a), ("v", v)):
        ax = get_aval(x)
        if ax.ndim != 1:
            raise ValueError(f"{op}: {name} must be 1-D, got {ax.str_user()}; for N-d "
                             "arrays use lax.conv_general_dilated")
        if ax.shape[0] == 0:
            raise ValueError(f"{op}: {name} cannot be empty")
    if get_aval(a).dtype == _dt.bool_:
        a = a.astype(_dt.default_int)
    a, v = (ensure_array(x) for x in promote_dtypes(op, a, v))
    return a, v


def _xcorr_real(a, v):
    """z[k] = sum_j a[k + j - (m - 1)] * v[j], k = 0 .. n + m - 2."""
    m = get_aval(v).shape[0]
    out = lax.conv_general_dilated(a[None, None, :], v[None, None, :], (1,), [(m - 1, m - 1)])
    return out[0, 0]


def _xcorr(a, v):
    if _dt.kind(get_aval(a).dtype) != "c":
        return _xcorr_real(a, v)
    ar, ai, vr, vi = a.real, a.imag, v.real, v.imag
    re = _xcorr_real(ar, vr) - _xcorr_real(ai, vi)
    im = _xcorr_real(ar, vi) + _xcorr_real(ai, vr)
    return lax.complex(re, im)


def _cut(full, n, m, mode, swapped):
    if mode == "full":
        return full
    lo_n = min(n, m)
    if mode == "valid":
        start, length = lo_n - 1, max(n, m) - lo_n + 1
    else:
        # numpy computes with the longer operand first and reverses afterwards, which moves
        # the centre of an even-length window by one
        half = (lo_n - 1) // 2
        start, length = ((lo_n - 1) - half if swapped else half), max(n, m)
    return full[start:start + length]


def correlate(a, v, mode="valid"):
    """Cross-correlation `z[k] = sum_n a[n + k] * conj(v[n])` (numpy's correlate; note its
    default mode is "valid").

    Example:
        >>> import ember.numpy as enp
        >>> enp.correlate(enp.asarray([1.0, 2.0, 3.0]), enp.asarray([0.0, 1.0, 0.5]), "same").tolist()
        [2.0, 3.5, 3.0]
    """
    a, v = _inputs(a, v, mode, "correlate")
    n, m = get_aval(a).shape[0], get_aval(v).shape[0]
    return _cut(_xcorr(a, v.conj()), n, m, mode, n < m)


def convolve(a, v, mode="full"):
    """Discrete linear convolution `(a * v)[k] = sum_j a[j] v[k - j]` (numpy's convolve; also
    the product of polynomials given by their coefficients).

    Example:
        >>> import ember.numpy as enp
        >>> enp.convolve(enp.asarray([1, 2, 3]), enp.asarray([1, 1]), mode="valid").tolist()
        [3, 5]
    """
    a, v = _inputs(a, v, mode, "convolve")
    n, m = get_aval(a).shape[0], get_aval(v).shape[0]
    if m > n:
        a, v, n, m = v, a, m, n
    return _cut(_xcorr(a, v[::-1]), n, m, mode, False)
