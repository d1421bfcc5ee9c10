"""`hessenberg`: the reduction a = q h q^H to upper Hessenberg form (LAPACK's gehrd and
orghr, through SciPy), and its jvp/batch rules.

The reduction is unique given q's first column (e1, as gehrd makes it) and, for
complex input, real subdiagonal entries of h (as gehrd makes them), provided h
is unreduced (no zero subdiagonal entry).  The jvp solves for the skew-Hermitian
Omega = q^H dq column by column, the Arnoldi recurrence differentiated: column
j + 1 of Omega below its diagonal comes from column j of
q^H dA q = dh + Omega h - h Omega, where dh must vanish below the subdiagonal;
for complex input, the imaginary diagonal entry Omega[j+1, j+1] keeps dh[j+1, j]
real.  Each step binds primitives, so the rule differentiates again.

Example:
    >>> import numpy as np
    >>> h, q = hessenberg(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]]))
    >>> bool(np.allclose(np.asarray(q) @ np.asarray(h) @ np.asarray(q).T,
    ...                  [[1, 2, 3], [4, 5, 6], [7, 8, 10]]))
    True
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as _sl

from ... import dtypes as _dt
from ..core import AbstractArray, Primitive, Zero, get_aval
from . import elementwise as _ew
from . import linalg as _la
from . import reduce as _red
from . import shape as _sh


def _abstract(a):
    _la._check_dtype("hessenberg", a)
    _la._check_matrix("hessenberg", a, square=True)
    return [AbstractArray(a.shape, a.dtype), AbstractArray(a.shape, a.dtype)]


def _one(m):
    h, q = _sl.hessenberg(m, calc_q=True, check_finite=False)
    return h, q


def _impl(a):
    a = np.asarray(a)
    outs = _abstract(get_aval(a))
    if a.size == 0:
        return [np.zeros(o.shape, o.dtype) for o in outs]
    return _la._batch_loop(_one, a, outs)


def _column(x, j):
    """x[..., :, j] as [..., n]."""
    n = get_aval(x).shape[-1]
    return _red.reduce_sum(_la._masked(x, np.outer(np.ones(n), np.arange(n) == j)),
                           (get_aval(x).ndim - 1,))


def _entry(x, i, j):
    """x[..., i, j] broadcast to [..., n] (one value per matrix)."""
    a = get_aval(x)
    n = a.shape[-1]
    mask = np.outer(np.arange(n) == i, np.arange(n) == j)
    s = _red.reduce_sum(_la._masked(x, mask), (a.ndim - 2, a.ndim - 1))
    return _sh.broadcast_in_dim(s, a.shape[:-1], tuple(range(a.ndim - 2)))


def _jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    outs = hessenberg_p.bind(a)
    h, q = outs
    if type(da) is Zero:
        return outs, _la._zeros_out(outs)
    shape = get_aval(a).shape
    n = shape[-1]
    rows = np.arange(n)
    c = _la._matmul(_la._H(q), _la._matmul(da, q))
    omega = _la._const_matrix(c, np.zeros((n, n)))
    for j in range(n - 1):
        # With Omega's column j + 1 still zero below its diagonal, column j of
        # c + h Omega - Omega h is h[j+1, j] times that unknown part (dh[i, j] = 0, i > j + 1).
        r = _column(_ew.add(c, _ew.sub(_la._matmul(h, omega), _la._matmul(omega, h))), j)
        col = _ew.div(r, _entry(h, j + 1, j))
        new = _la._masked(_la._bcast_vec(col, shape, -2), np.outer(rows > j + 1, rows == j + 1))
        if _la._is_complex(a):
            # Omega[j+1, j+1] = i Im(col[j+1]) makes dh[j+1, j] real, as gehrd's h is.
            zero = np.zeros((), _dt.real_dtype(get_aval(a).dtype))[()]
            theta = _ew.complex(zero, _ew.imag(col))
            new = _ew.add(new, _la._masked(_la._bcast_vec(theta, shape, -2),
                                           np.outer(rows == j + 1, rows == j + 1)))
        omega = _ew.add(omega, _ew.sub(new, _la._H(_la._tril(new, -1))))
    dq = _la._matmul(q, omega)
    dh = _ew.sub(c, _ew.sub(_la._matmul(omega, h), _la._matmul(h, omega)))
    return outs, [_la._triu(dh, -1), dq]


hessenberg_p = Primitive("hessenberg", multiple_results=True)
hessenberg_p.kind = "library"
hessenberg_p.abstract_eval = _abstract
hessenberg_p.impl = _impl
hessenberg_p.jvp = _jvp
hessenberg_p.batch = _la._trailing_batch(hessenberg_p)
hessenberg_p.not_applicable.add("transpose")


def hessenberg(x):
    """(h, q) with x = q h q^H, h upper Hessenberg and q unitary, for [..., N, N].

    Example:
        >>> import numpy as np
        >>> [o.shape for o in hessenberg(np.eye(3))]
        [(3, 3), (3, 3)]
    """
    return tuple(hessenberg_p.bind(x))


__all__ = ["hessenberg"]
