"""`ember.numpy.fft`: numpy's discrete Fourier transforms (with `n`/`s`, `axis`/`axes`
and `norm`), composed from the `fft` primitive.

Precision follows the input: float32/complex64 data transforms in single
precision (numpy 2 does the same), integers are treated as float32 and
float16/bfloat16 compute in float32.  `norm` is "backward" (default: the
inverse divides by n), "ortho" (both by sqrt(n)) or "forward" (the forward
transform divides by n).

Example:
    >>> import numpy as np, ember.numpy as enp
    >>> enp.fft.fft(enp.asarray([1.0, 0.0, 0.0, 0.0])).tolist()
    [(1+0j), (1+0j), (1+0j), (1+0j)]
"""
from __future__ import annotations

import math
import operator

import numpy as np

from .. import dtypes as _dt
from ..array import Array
from ..fx.core import Tracer, get_aval, shape_error
from ..fx.prims import convert as _cv
from ..fx.prims import elementwise as _ew
from ..fx.prims import shape as _sh
from ..fx.prims.fft import FftType
from ..fx.prims.fft import fft as _fft_prim
from ._core import asarray
from ._util import canonicalize_axis
from ..fx.spelling import user_str

__all__ = [
    "fft",
    "fft2",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifft2",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfft2",
    "irfftn",
    "rfft",
    "rfft2",
    "rfftfreq",
    "rfftn",
]

_NORMS = (None, "backward", "ortho", "forward")
_SWAP = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _arr(x):
    return x if isinstance(x, (Array, Tracer)) else asarray(x)


def _check_norm(norm, op):
    if norm not in _NORMS:
        raise ValueError(f"{op}: invalid norm {norm!r}; expected 'backward', 'ortho' or 'forward'")


def _axis(axis, ndim, op):
    return canonicalize_axis(axis, ndim, op)


def _as_complex(x):
    d = get_aval(x).dtype
    if _dt.kind(d) == "c":
        return x
    real = _dt.float64 if d == _dt.float64 else _dt.float32
    return _cv.convert_element_type(x, _dt.complex_dtype(real))


def _as_real(x, op):
    d = get_aval(x).dtype
    if _dt.kind(d) == "c":
        raise TypeError(f"{op} needs real input, got {d}; use the complex transform "
                        f"(fft/fftn) or take the real part first")
    return _cv.convert_element_type(x, _dt.float64 if d == _dt.float64 else _dt.float32)


def _resize(x, axis, n):
    """Crop or zero-pad `x` to length `n` along `axis`, as numpy's `n`/`s` do."""
    a = get_aval(x)
    size = a.shape[axis]
    if n == size:
        return x
    if n < size:
        return _sh.slice_in_dim(x, 0, n, 1, axis)
    config = [(0, 0, 0)] * a.ndim
    config[axis] = (0, n - size, 0)
    return _sh.pad(x, np.zeros((), a.dtype)[()], tuple(config))


def _scale(x, norm, n, inverse):
    if norm in (None, "backward"):
        return x
    if norm == "ortho":
        f = math.sqrt(n) if inverse else 1.0 / math.sqrt(n)
    else:
        f = float(n) if inverse else 1.0 / n
    return _ew.mul(x, np.array(f, dtype=get_aval(x).dtype)[()])


def _transform(x, axes, lengths, kind, norm, op):
    """Apply the primitive over `axes` (distinct, canonical) with logical `lengths`."""
    _check_norm(norm, op)
    for n in lengths:
        if n < 1:
            raise ValueError(f"{op}: invalid number of data points ({n}) specified")
    nd = get_aval(x).ndim
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: repeated axes {axes} are not supported")
    if kind == FftType.IRFFT:
        sizes = list(lengths[:-1]) + [lengths[-1] // 2 + 1]
    else:
        sizes = list(lengths)
    for ax, n in zip(axes, sizes):
        x = _resize(x, ax, n)
    rest = [i for i in range(nd) if i not in axes]
    perm = tuple(rest) + tuple(axes)
    y = _sh.transpose(x, perm)
    y = _fft_prim(y, kind, tuple(lengths))
    inv = [0] * nd
    for i, p in enumerate(perm):
        inv[p] = i
    y = _sh.transpose(y, tuple(inv))
    inverse = kind in (FftType.IFFT, FftType.IRFFT)
    return _scale(y, norm, math.prod(lengths), inverse)


def _one_axis(a, n, axis, norm, kind, op):
    x = _arr(a)
    nd = get_aval(x).ndim
    if nd == 0:
        raise shape_error(op, "input must be at least 1-D")
    ax = _axis(axis, nd, op)
    if kind == FftType.RFFT:
        x = _as_real(x, op)
    else:
        x = _as_complex(x)
    size = get_aval(x).shape[ax]
    if n is None:
        n = 2 * (size - 1) if kind == FftType.IRFFT else size
    n = operator.index(n)
    return _transform(x, (ax,), (n,), kind, norm, op)


def _many_axes(a, s, axes, norm, kind, op):
    x = _arr(a)
    nd = get_aval(x).ndim
    if axes is None:
        axes = tuple(range(nd)) if s is None else tuple(range(nd - len(s), nd))
    else:
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
    axes = tuple(_axis(ax, nd, op) for ax in axes)
    if not axes:
        return x
    if s is not None:
        s = tuple(operator.index(v) for v in s)
        if len(s) != len(axes):
            raise ValueError(f"{op}: s {s} and axes {axes} must have the same length")
    if kind == FftType.RFFT:
        x = _as_real(x, op)
    else:
        x = _as_complex(x)
    shape = get_aval(x).shape
    lengths = []
    for i, ax in enumerate(axes):
        given = None if s is None or s[i] == -1 else s[i]
        if given is None:
            last = i == len(axes) - 1
            given = 2 * (shape[ax] - 1) if (kind == FftType.IRFFT and last) else shape[ax]
        lengths.append(given)
    return _transform(x, axes, tuple(lengths), kind, norm, op)


def fft(a, n=None, axis=-1, norm=None):
    """1-D discrete Fourier transform along `axis` (cropped/zero-padded to `n`).

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.fft.fft(enp.asarray(np.ones(2))).tolist()
        [(2+0j), 0j]
    """
    return _one_axis(a, n, axis, norm, FftType.FFT, "fft")


def ifft(a, n=None, axis=-1, norm=None):
    """1-D inverse discrete Fourier transform.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.fft.ifft(enp.asarray([2.0, 0.0])).tolist()
        [(1+0j), (1+0j)]
    """
    return _one_axis(a, n, axis, norm, FftType.IFFT, "ifft")


def rfft(a, n=None, axis=-1, norm=None):
    """1-D transform of real input: the n // 2 + 1 non-negative frequencies.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.fft.rfft(enp.asarray(np.ones(4))).tolist()
        [(4+0j), 0j, 0j]
    """
    return _one_axis(a, n, axis, norm, FftType.RFFT, "rfft")


def irfft(a, n=None, axis=-1, norm=None):
    """Inverse of `rfft`: a real signal of length n (default 2 * (m - 1)).

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.fft.irfft(enp.asarray([4.0, 0.0, 0.0])).tolist()
        [1.0, 1.0, 1.0, 1.0]
    """
    return _one_axis(a, n, axis, norm, FftType.IRFFT, "irfft")


def fftn(a, s=None, axes=None, norm=None):
    """N-D discrete Fourier transform over `axes` (all by default) with sizes `s`.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.fft.fftn(enp.asarray(np.ones((2, 2)))).tolist()
        [[(4+0j), 0j], [0j, 0j]]
    """
    return _many_axes(a, s, axes, norm, FftType.FFT, "fftn")


def ifftn(a, s=None, axes=None, norm=None):
    """N-D inverse discrete Fourier transform.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.fft.ifftn(enp.asarray([[4.0, 0.0], [0.0, 0.0]])).tolist()
        [[(1+0j), (1+0j)], [(1+0j), (1+0j)]]
    """
    return _many_axes(a, s, axes, norm, FftType.IFFT, "ifftn")


def rfftn(a, s=None, axes=None, norm=None):
    """N-D transform of real input (the last axis keeps n // 2 + 1 frequencies).

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.fft.rfftn(enp.asarray(np.ones((2, 4)))).shape
        (2, 3)
    """
    return _many_axes(a, s, axes, norm, FftType.RFFT, "rfftn")


def irfftn(a, s=None, axes=None, norm=None):
    """Inverse of `rfftn` (the last axis defaults to length 2 * (m - 1)).

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.fft.irfftn(enp.fft.rfftn(enp.asarray(np.ones((2, 4))))).shape
        (2, 4)
    """
    return _many_axes(a, s, axes, norm, FftType.IRFFT, "irfftn")


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """2-D discrete Fourier transform over the last two axes.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.fft.fft2(enp.asarray(np.ones((2, 2)))).shape
        (2, 2)
    """
    return _many_axes(a, s, axes, norm, FftType.FFT, "fft2")


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """2-D inverse discrete Fourier transform.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.fft.ifft2(enp.asarray(np.ones((2, 2)))).shape
        (2, 2)
    """
    return _many_axes(a, s, axes, norm, FftType.IFFT, "ifft2")


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """2-D transform of real input.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.fft.rfft2(enp.asarray(np.ones((2, 4)))).shape
        (2, 3)
    """
    return _many_axes(a, s, axes, norm, FftType.RFFT, "rfft2")


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """Inverse of `rfft2`.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.fft.irfft2(enp.asarray(np.ones((2, 3)))).shape
        (2, 4)
    """
    return _many_axes(a, s, axes, norm, FftType.IRFFT, "irfft2")


def hfft(a, n=None, axis=-1, norm=None):
    """Transform of a Hermitian-symmetric signal given by its first half: a real
    spectrum of length n (default 2 * (m - 1)).

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.fft.hfft(enp.asarray([1.0, 0.0, 0.0])).tolist()
        [1.0, 1.0, 1.0, 1.0]
    """
    _check_norm(norm, "hfft")
    x = _as_complex(_arr(a))
    return irfft(_ew.conj(x), n, axis, norm=_SWAP[norm])


def ihfft(a, n=None, axis=-1, norm=None):
    """Inverse of `hfft`: the first n // 2 + 1 terms of the Hermitian spectrum of
    a real signal.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.fft.ihfft(enp.asarray(np.ones(4))).real.tolist()
        [1.0, 0.0, 0.0]
    """
    _check_norm(norm, "ihfft")
    return _ew.conj(rfft(a, n, axis, norm=_SWAP[norm]))


def _freqs(values, d, dtype):
    dtype = _dt.default_float if dtype is None else _dt.canonicalize(dtype)
    if isinstance(d, (Array, Tracer)):
        base = asarray(values.astype(dtype))
        dd = _cv.convert_element_type(d, dtype)
        if get_aval(dd).ndim:
            raise shape_error("fftfreq", f"d must be a scalar, got {user_str(get_aval(dd))}")
        return _ew.div(base, dd)
    return asarray((values / d).astype(dtype))


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """Sample frequencies of `fft` for n points spaced d apart (float32 by default).

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.fft.fftfreq(4).tolist()
        [0.0, 0.25, -0.5, -0.25]
    """
    n = operator.index(n)
    return _freqs(np.fft.fftfreq(n, 1.0), d, dtype)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """Sample frequencies of `rfft` for n points spaced d apart.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.fft.rfftfreq(4).tolist()
        [0.0, 0.25, 0.5]
    """
    n = operator.index(n)
    return _freqs(np.fft.rfftfreq(n, 1.0), d, dtype)


def _roll(x, shift, axis):
    n = get_aval(x).shape[axis]
    if n == 0:
        return x
    shift %= n
    if shift == 0:
        return x
    return _sh.concatenate([_sh.slice_in_dim(x, n - shift, n, 1, axis),
                            _sh.slice_in_dim(x, 0, n - shift, 1, axis)], axis)


def _shift(x, axes, sign, op):
    x = _arr(x)
    nd = get_aval(x).ndim
    if axes is None:
        axes = tuple(range(nd))
    elif isinstance(axes, int):
        axes = (axes,)
    shape = get_aval(x).shape
    for ax in axes:
        ax = _axis(ax, nd, op)
        x = _roll(x, sign * (shape[ax] // 2), ax)
    return x


def fftshift(x, axes=None):
    """Move the zero frequency to the centre (roll by n // 2 along `axes`).

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.fft.fftshift(enp.fft.fftfreq(4)).tolist()
        [-0.5, -0.25, 0.0, 0.25]
    """
    return _shift(x, axes, 1, "fftshift")


def ifftshift(x, axes=None):
    """Inverse of `fftshift`.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.fft.ifftshift(enp.asarray([-0.5, -0.25, 0.0, 0.25])).tolist()
        [0.0, 0.25, -0.5, -0.25]
    """
    return _shift(x, axes, -1, "ifftshift")
