"""The `fft` primitive: complex and real discrete Fourier transforms over the trailing
dimensions, with its (linear) jvp, transpose and batch rules.

`fft_type` is one of "FFT", "IFFT", "RFFT", "IRFFT" (see `FftType`) and
`fft_lengths` the logical lengths of the trailing len(fft_lengths) dims.  The
normalisation is numpy's "backward" one (the inverse transforms divide by the
number of points).  Precision follows the input: complex64 stays complex64.

Transposes use the bilinear pairing <a, b> = Re(sum(a * b)) that ember's other
complex rules use (no conjugation): the complex FFT matrices are symmetric, so
FFT and IFFT are their own transposes; RFFT and IRFFT transpose into each
other up to conjugation and the weights of the half spectrum.

Example:
    >>> import numpy as np
    >>> from ember.fx.prims.fft import fft
    >>> fft(np.ones(4, np.float32), "RFFT", (4,)).tolist()
    [(4+0j), 0j, 0j]
"""
from __future__ import annotations

import math

import numpy as np

from ... import dtypes as _dt
from ..core import AbstractArray, Primitive, get_aval, shape_error
from . import elementwise as _ew
from . import shape as _sh
from .rules import deflinear, moveaxis
from ..spelling import user_str


class FftType:
    """The kinds of transform `fft` computes."""
    FFT = "FFT"      # complex -> complex, forward
    IFFT = "IFFT"    # complex -> complex, inverse (divides by the size)
    RFFT = "RFFT"    # real -> half spectrum (last dim n // 2 + 1)
    IRFFT = "IRFFT"  # half spectrum -> real (inverse, divides by the size)


_TYPES = (FftType.FFT, FftType.IFFT, FftType.RFFT, FftType.IRFFT)


def _fft_abstract(x, *, fft_type, fft_lengths):
    k = len(fft_lengths)
    if fft_type not in _TYPES:
        raise TypeError(f"fft: unknown fft_type {fft_type!r}; expected one of {_TYPES}")
    if k == 0 or any(n < 1 for n in fft_lengths):
        raise shape_error("fft", f"fft_lengths must be a non-empty tuple of positive ints, "
                          f"got {fft_lengths}")
    if x.ndim < k:
        raise shape_error("fft", f"operand {user_str(x)} has fewer than {k} dims to transform")
    trailing = x.shape[x.ndim - k:]
    lead = x.shape[:x.ndim - k]
    n_last = fft_lengths[-1]
    if fft_type == FftType.RFFT:
        if x.dtype not in (_dt.float32, _dt.float64):
            raise TypeError(f"fft: RFFT needs a float32/float64 operand, got {x.dtype}")
        if trailing != tuple(fft_lengths):
            raise shape_error("fft", f"RFFT operand {user_str(x)} must end in fft_lengths {fft_lengths}")
        return AbstractArray(lead + tuple(fft_lengths[:-1]) + (n_last // 2 + 1,),
                             _dt.complex_dtype(x.dtype))
    if x.dtype not in (_dt.complex64, _dt.complex128):
        raise TypeError(f"fft: {fft_type} needs a complex64/complex128 operand, got {x.dtype}")
    if fft_type == FftType.IRFFT:
        want = tuple(fft_lengths[:-1]) + (n_last // 2 + 1,)
        if trailing != want:
            raise shape_error("fft", f"IRFFT operand {user_str(x)} must end in {want} (the half spectrum "
                              f"of fft_lengths {fft_lengths})")
        return AbstractArray(lead + tuple(fft_lengths), _dt.real_dtype(x.dtype))
    if trailing != tuple(fft_lengths):
        raise shape_error("fft", f"{fft_type} operand {user_str(x)} must end in fft_lengths {fft_lengths}")
    return AbstractArray(x.shape, x.dtype)


def _fft_impl(x, *, fft_type, fft_lengths):
    x = np.asarray(x)
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    s = tuple(fft_lengths)
    if fft_type == FftType.FFT:
        out, dt = np.fft.fftn(x, s=s, axes=axes), x.dtype
    elif fft_type == FftType.IFFT:
        out, dt = np.fft.ifftn(x, s=s, axes=axes), x.dtype
    elif fft_type == FftType.RFFT:
        out, dt = np.fft.rfftn(x, s=s, axes=axes), _dt.complex_dtype(x.dtype)
    else:
        out, dt = np.fft.irfftn(x, s=s, axes=axes), _dt.real_dtype(x.dtype)
    return np.asarray(out).astype(dt, copy=False)


def _half_spectrum_weights(n):
    """c[k] = 1 for the DC (and Nyquist, n even) bins of the half spectrum, else 2:
    how many bins of the full spectrum each half-spectrum bin stands for."""
    m = n // 2 + 1
    c = np.full(m, 2.0)
    c[0] = 1.0
    if n % 2 == 0:
        c[-1] = 1.0
    return c


def _weighted(x, w):
    a = get_aval(x)
    wc = _sh.broadcast_in_dim(np.asarray(w, dtype=a.dtype), a.shape, (a.ndim - 1,))
    return _ew.mul(x, wc)


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
    n_total = math.prod(fft_lengths)
    c = _half_spectrum_weights(fft_lengths[-1])
    if fft_type in (FftType.FFT, FftType.IFFT):
        # The DFT matrices are symmetric.
        return [fft(ct, fft_type, fft_lengths)]
    if fft_type == FftType.RFFT:
        # <rfft(x), ct> = sum_j x_j Re(F [ct; 0])_j = N * irfft(conj(ct) / c).
        y = _weighted(_ew.conj(ct), n_total / c)
        return [fft(y, FftType.IRFFT, fft_lengths)]
    # irfft(y) = Re(sum_k c_k y_k e^{+2 pi i jk/n}) / N  =>  ct_y = c * conj(rfft(ct)) / N.
    return [_weighted(_ew.conj(fft(ct, FftType.RFFT, fft_lengths)), c / n_total)]


def _fft_batch(axis_size, args, dims, *, fft_type, fft_lengths):
    (x,), (d,) = args, dims
    nd = get_aval(x).ndim
    if d >= nd - len(fft_lengths):
        x, d = moveaxis(x, d, 0), 0
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), d


fft_p = Primitive("fft")
fft_p.kind = "library"
fft_p.abstract_eval = _fft_abstract
fft_p.impl = _fft_impl
fft_p.batch = _fft_batch
deflinear(fft_p, _fft_transpose)


def fft(x, fft_type, fft_lengths):
    """Discrete Fourier transform of kind `fft_type` ("FFT", "IFFT", "RFFT", "IRFFT")
    over the trailing len(fft_lengths) dims of `x`, numpy's "backward" scaling.

    Example:
        >>> import numpy as np
        >>> fft(np.array([1, 1j, -1, -1j], np.complex64), "FFT", (4,)).tolist()
        [0j, (4+0j), 0j, 0j]
    """
    t = str(fft_type).upper()
    if isinstance(fft_lengths, int):
        fft_lengths = (fft_lengths,)
    return fft_p.bind(x, fft_type=t, fft_lengths=tuple(int(n) for n in fft_lengths))


__all__ = ["FftType", "fft"]
