"""The principal matrix square root primitive, `sqrtm`, and its jvp/batch rules.

The value is SciPy's (a Schur method, which also handles defective matrices); the
result is always complex, as in JAX, because whether the principal root of a real
matrix is real depends on its eigenvalues.  The jvp solves the Sylvester equation
X dX + dX X = dA in the eigenbasis of X (so it assumes X is diagonalizable, with no
two eigenvalues summing to zero, which holds for the principal root of a
non-singular matrix); it binds `eig`, `lu` and `sqrtm` itself, so it
differentiates again.

Example:
    >>> import numpy as np
    >>> sqrtm(np.array([[4.0, 0.0], [0.0, 9.0]])).real.tolist()
    [[2.0, 0.0], [0.0, 3.0]]
"""
from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg as _sl

from ... import dtypes as _dt
from ..core import AbstractArray, Primitive, Zero, get_aval, tangent_aval
from . import elementwise as _ew
from . import linalg as _la


def _abstract(a):
    _la._check_dtype("sqrtm", a)
    _la._check_matrix("sqrtm", a, square=True)
    return AbstractArray(a.shape, _dt.complex_dtype(a.dtype))


def _one(m):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # a singular matrix warns; its root is inf/NaN
        return (_sl.sqrtm(m.astype(np.complex128)),)


def _impl(a):
    a = np.asarray(a)
    out = _abstract(get_aval(a))
    if a.size == 0:
        return np.zeros(out.shape, out.dtype)
    return _la._batch_loop(_one, a, [out])[0]


def _jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    x = sqrtm_p.bind(a)
    if type(da) is Zero:
        return x, Zero(tangent_aval(get_aval(x)))
    cd = get_aval(x).dtype
    w, v = _la.eig_p.bind(x, compute_eigenvectors=True)
    f, _, perm = _la.lu_p.bind(v)
    # In the eigenbasis, X = diag(w): (w_i + w_j) G_ij = (V^-1 dA V)_ij.
    g = _la.lu_solve(f, perm, _la._matmul(_la._as_dtype(da, cd), v))
    shape = get_aval(g).shape
    h = _ew.div(g, _ew.add(_la._bcast_vec(w, shape, -2), _la._bcast_vec(w, shape, -1)))
    # dX = V H V^-1, the right division as a transposed solve: (H V^-1)^T = V^-T H^T.
    return x, _la._matmul(v, _la._mT(_la.lu_solve(f, perm, _la._mT(h), trans=1)))


sqrtm_p = Primitive("sqrtm")
sqrtm_p.kind = "library"
sqrtm_p.abstract_eval = _abstract
sqrtm_p.impl = _impl
sqrtm_p.jvp = _jvp
sqrtm_p.batch = _la._trailing_batch(sqrtm_p)
sqrtm_p.not_applicable.add("transpose")


def sqrtm(x):
    """The principal square root of square matrices [..., N, N], always complex.

    Example:
        >>> import numpy as np
        >>> sqrtm(np.eye(2, dtype=np.float32)).dtype
        dtype('complex64')
    """
    return sqrtm_p.bind(x)


__all__ = ["sqrtm"]
