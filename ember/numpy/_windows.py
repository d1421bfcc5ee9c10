"""Window functions for spectral analysis (numpy's hamming, hanning, blackman, bartlett,
kaiser) and the modified Bessel function `i0` that kaiser is built on. The window length
is static (it is the output's shape); values are in the default float dtype.

Example:
    >>> import ember.numpy as enp
    >>> enp.hanning(3).tolist()
    [0.0, 1.0, 0.0]
"""
from __future__ import annotations

import math

from ..fx.core import get_aval
from ._core import ensure_array, promote_dtypes
from ._util import static_int

__all__ = ["i0", "hamming", "hanning", "blackman", "bartlett", "kaiser"]


def i0(x):
    """The modified Bessel function of the first kind of order 0, elementwise (real input;
    integers become floats). Differentiable: its derivative is `i1`.

    Example:
        >>> import ember.numpy as enp
        >>> round(float(enp.i0(0.0)), 6), round(float(enp.i0(1.0)), 6)
        (1.0, 1.266066)
    """
    from ._elementwise import abs as _abs, exp
    from ..scipy.special import i0e
    x = ensure_array(x)
    if get_aval(x).dtype.kind == "c":
        raise TypeError(f"i0: complex input is not supported (JAX's i0 is real-only), got "
                        f"{get_aval(x).str_user()}")
    (x,) = (ensure_array(v) for v in promote_dtypes("i0", x, to_inexact=True))
    # i0e keeps its scale for large |x|; exp(|x|) restores it (inf where i0 overflows)
    return exp(_abs(x)) * i0e(x)


def _n(m, op):
    """The static length and the sample positions 0..M-1 as default floats."""
    from ._creation import arange
    m = static_int(m, op, "M")
    return m, arange(max(m, 0), dtype=float)


def _trivial(m):
    from ._creation import ones
    return ones((max(m, 0),), dtype=float)


def _cosine_sum(m, op, coeffs):
    from ._elementwise import cos
    m, n = _n(m, op)
    if m <= 1:
        return _trivial(m)
    out = 0.0
    for k, a in enumerate(coeffs):
        term = a if k == 0 else a * cos((2.0 * math.pi * k / (m - 1)) * n)
        out = out + (-term if k % 2 else term)
    return out


def hamming(M):
    """The Hamming window `0.54 - 0.46 cos(2 pi n / (M - 1))` of length M.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> np.round(np.asarray(enp.hamming(3), float), 4).tolist()
        [0.08, 1.0, 0.08]
    """
    return _cosine_sum(M, "hamming", (0.54, 0.46))


def hanning(M):
    """The Hann window `0.5 - 0.5 cos(2 pi n / (M - 1))` of length M.

    Example:
        >>> import ember.numpy as enp
        >>> enp.hanning(5).tolist()
        [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    return _cosine_sum(M, "hanning", (0.5, 0.5))


def blackman(M):
    """The Blackman window `0.42 - 0.5 cos(2 pi n/(M-1)) + 0.08 cos(4 pi n/(M-1))`.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> np.round(np.asarray(enp.blackman(3), float), 4).tolist()
        [-0.0, 1.0, -0.0]
    """
    return _cosine_sum(M, "blackman", (0.42, 0.5, 0.08))


def bartlett(M):
    """The Bartlett (triangular) window `1 - |2n/(M-1) - 1|` of length M.

    Example:
        >>> import ember.numpy as enp
        >>> enp.bartlett(5).tolist()
        [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    from ._elementwise import abs as _abs
    m, n = _n(M, "bartlett")
    if m <= 1:
        return _trivial(m)
    return 1.0 - _abs(n * (2.0 / (m - 1)) - 1.0)


def kaiser(M, beta):
    """The Kaiser window `i0(beta sqrt(1 - (2n/(M-1) - 1)**2)) / i0(beta)`; differentiable
    in `beta` (which may be traced).

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> np.round(np.asarray(enp.kaiser(3, 5.0), float), 4).tolist()
        [0.0367, 1.0, 0.0367]
    """
    from ._creation import arange
    from ._elementwise import sqrt
    m = static_int(M, "kaiser", "M")
    beta = ensure_array(beta)
    if get_aval(beta).ndim != 0:
        raise ValueError(f"kaiser: beta must be a scalar, got {get_aval(beta).str_user()}")
    if m <= 1:
        return _trivial(m)
    # the positions take beta's precision (a float64 beta gives a float64 window)
    n, beta = (ensure_array(v) for v in promote_dtypes("kaiser", arange(m), beta,
                                                      to_inexact=True))
    alpha = (m - 1) / 2.0
    r = (n - alpha) / alpha
    # rounding can push 1 - r*r just below 0 at the ends; the window is i0(0)/i0(beta) there
    from ._elementwise import maximum
    return i0(beta * sqrt(maximum(1.0 - r * r, 0.0))) / i0(beta)
