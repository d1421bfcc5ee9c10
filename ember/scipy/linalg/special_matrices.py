"""Structured matrices built from their defining entries (`block_diag`, `toeplitz`,
`hankel`, `circulant`), as gathers and pads, so they differentiate with respect to
those entries.  Dtypes are kept (integers stay integers), as in SciPy and JAX."""
from __future__ import annotations

import numpy as np

from ... import numpy as enp
from ...fx.core import get_aval
from ...numpy import _core as _core
from ._util import shape_of

__all__ = ["block_diag", "circulant", "hankel", "toeplitz"]


def block_diag(*arrs):
    """The block-diagonal matrix of the given blocks (scipy.linalg.block_diag): scalars
    are 1x1 blocks and 1-D arrays 1xN rows; no blocks give an empty (1, 0) matrix.

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import block_diag
        >>> block_diag(np.array([[1, 2]]), 3).tolist()
        [[1, 2, 0], [0, 0, 3]]
    """
    if not arrs:
        return enp.zeros((1, 0))
    blocks = _core.promote_dtypes("block_diag", *arrs)
    for i, b in enumerate(blocks):
        if b.ndim > 2:
            raise TypeError(f"block_diag: blocks must have at most 2 dims, got shape "
                            f"{shape_of(b)} for argument {i}")
    blocks = [enp.atleast_2d(b) for b in blocks]
    width = sum(shape_of(b)[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        c = shape_of(b)[1]
        rows.append(enp.pad(b, ((0, 0), (left, width - left - c))))
        left += c
    return enp.concatenate(rows, axis=0)


def _vectors(name, *xs):
    xs = _core.promote_dtypes(name, *xs)
    return [enp.atleast_1d(x) for x in xs]


def _gather(vals, index):
    """vals[..., index] for a constant (m, n) index matrix."""
    return enp.take(vals, np.asarray(index, np.int32), axis=-1, mode="clip")


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column `c` and first row `r`
    (scipy.linalg.toeplitz): t[i, j] = c[i - j] for i >= j, else r[j - i]; r[0] is
    ignored, and `r` defaults to conj(c) (a Hermitian matrix).  Leading dims of `c`
    and `r` are batch dims (they broadcast), as in JAX.

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import toeplitz
        >>> toeplitz(np.array([1, 2, 3]), np.array([1, 4, 5])).tolist()
        [[1, 4, 5], [2, 1, 4], [3, 2, 1]]
    """
    if r is None:
        (c,) = _vectors("toeplitz", c)
        r = c.conj() if np.iscomplexobj(np.empty((), get_aval(c).dtype)) else c
    else:
        c, r = _vectors("toeplitz", c, r)
    m, n = shape_of(c)[-1], shape_of(r)[-1]
    batch = _core.broadcast_shapes(shape_of(c)[:-1], shape_of(r)[:-1], op="toeplitz")
    c = _core.broadcast_to(c, batch + (m,))
    r = _core.broadcast_to(r, batch + (n,))
    # vals = r[n-1:0:-1] ++ c, so t[i, j] = vals[n - 1 + i - j].
    vals = enp.concatenate([enp.flip(r[..., 1:], axis=-1), c], axis=-1)
    i, j = np.ogrid[:m, :n]
    return _gather(vals, n - 1 + i - j)


def hankel(c, r=None):
    """The Hankel matrix with first column `c` and last row `r` (scipy.linalg.hankel):
    h[i, j] = c[i + j] while i + j < len(c), else r[i + j - len(c) + 1]; r[0] is
    ignored, and `r` defaults to zeros.  Leading dims broadcast as batch dims.

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import hankel
        >>> hankel(np.array([1, 2, 3]), np.array([3, 4])).tolist()
        [[1, 2], [2, 3], [3, 4]]
    """
    if r is None:
        (c,) = _vectors("hankel", c)
        r = enp.zeros_like(c)
    else:
        c, r = _vectors("hankel", c, r)
    m, n = shape_of(c)[-1], shape_of(r)[-1]
    batch = _core.broadcast_shapes(shape_of(c)[:-1], shape_of(r)[:-1], op="hankel")
    c = _core.broadcast_to(c, batch + (m,))
    r = _core.broadcast_to(r, batch + (n,))
    vals = enp.concatenate([c, r[..., 1:]], axis=-1)
    i, j = np.ogrid[:m, :n]
    return _gather(vals, i + j)


def circulant(c):
    """The circulant matrix with first column `c` (scipy.linalg.circulant):
    a[i, j] = c[(i - j) mod n].  Leading dims of `c` are batch dims.

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import circulant
        >>> circulant(np.array([1, 2, 3])).tolist()
        [[1, 3, 2], [2, 1, 3], [3, 2, 1]]
    """
    (c,) = _vectors("circulant", c)
    n = shape_of(c)[-1]
    i, j = np.ogrid[:n, :n]
    return _gather(c, (i - j) % max(n, 1))
