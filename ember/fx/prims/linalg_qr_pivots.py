"""`qr_pivots`: the column order that QR with column pivoting (LAPACK's geqp3) picks.

The order is piecewise constant in the matrix, so the primitive has zero
derivatives; `ember.scipy.linalg.qr(pivoting=True)` then factors the permuted
columns with the differentiable `qr` primitive, which reproduces geqp3's q and r
(its Householder steps are those of a QR of the permuted matrix).

Example:
    >>> import numpy as np
    >>> qr_pivots(np.array([[1.0, 3.0], [0.0, 4.0]])).tolist()
    [1, 0]
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as _sl

from ... import dtypes as _dt
from ..core import AbstractArray, Primitive, get_aval
from . import linalg as _la
from .rules import defjvp_zero


def _abstract(a):
    _la._check_dtype("qr_pivots", a)
    _la._check_matrix("qr_pivots", a)
    return AbstractArray(a.shape[:-2] + a.shape[-1:], _dt.int32)


def _one(m):
    return (_sl.qr(m, mode="r", pivoting=True, check_finite=False)[1],)


def _impl(a):
    a = np.asarray(a)
    out = _abstract(get_aval(a))
    if a.size == 0:
        return np.broadcast_to(np.arange(a.shape[-1], dtype=np.int32), out.shape).copy()
    return _la._batch_loop(_one, a, [out])[0]


qr_pivots_p = Primitive("qr_pivots")
qr_pivots_p.kind = "library"
qr_pivots_p.abstract_eval = _abstract
qr_pivots_p.impl = _impl
qr_pivots_p.batch = _la._trailing_batch(qr_pivots_p)
defjvp_zero(qr_pivots_p)


def qr_pivots(x):
    """The column permutation p [..., N] (int32) of QR with column pivoting of
    [..., M, N] matrices: x[..., :, p] = q @ r with |diag(r)| non-increasing.

    Example:
        >>> import numpy as np
        >>> qr_pivots(np.eye(2)).dtype
        dtype('int32')
    """
    return qr_pivots_p.bind(x)


__all__ = ["qr_pivots"]
