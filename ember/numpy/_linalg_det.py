"""The determinant with a derivative that holds at singular matrices.

d det(A) = trace(adj(A) dA).  Differentiating the LU factorization instead solves
with U, which is 0/0 at a zero pivot, so the gradient of det at an exactly
singular matrix (one with a zero pivot) read NaN where the adjugate is finite.
The rule forms the adjugate as det(A) A^-1 (through LU) where A is well
conditioned and as det(U) det(Vh) Vh^H diag(prod_{j != i} s_j) U^H (from the
SVD, no division) where it is singular or nearly so (a pivot within sqrt(eps)
of the largest); each branch sees a harmless stand-in matrix
where the other one is taken, so neither puts inf/NaN into a derivative.
Higher derivatives are exact at well-conditioned matrices; at (nearly) singular
ones they go through the SVD's derivative, which needs distinct singular
values: at rank n-1 they hold, at lower rank (two singular values at 0) the
third and later ones are NaN or inaccurate (docs/sharp-bits.md).

Example:
    >>> import numpy as np, ember
    >>> from ember.numpy._linalg_det import determinant
    >>> g = ember.grad(determinant)(np.array([[1.0, 2.0], [2.0, 4.0]]))   # singular
    >>> np.round(np.asarray(g), 12).tolist()                                # its cofactors
    [[4.0, -2.0], [-2.0, 1.0]]
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..fx.core import const, get_aval
from ..fx.prims import elementwise as _ew
from ..fx.prims import linalg as _la
from ..fx.prims import reduce as _red
from ..fx.prims import shape as _sh
from ..transforms.custom_derivatives import custom_jvp
from .linalg import _H, _bmm, _eye, _lu_parts, _mT, _solve_matrices


def _lu_det(x):
    _, _, sign, d = _lu_parts(x)
    return _ew.mul(sign, _red.reduce_prod(d, (get_aval(d).ndim - 1,)))


determinant = custom_jvp(_lu_det)


def _matrices(v, like):
    """v [...] broadcast to the matrices [..., n, n] of `like`."""
    s = get_aval(like).shape
    return _sh.broadcast_in_dim(v, s, tuple(range(len(s) - 2)))


def _exclusive_products(s):
    """p[..., i] = prod_{j != i} s[..., j], by products only (exact with zeros)."""
    sa = get_aval(s)
    n = sa.shape[-1]
    sq = sa.shape + (n,)
    rows = _sh.broadcast_in_dim(s, sq, tuple(range(sa.ndim - 1)) + (sa.ndim,))
    diag = _sh.broadcast_in_dim(np.eye(n, dtype=bool), sq, (sa.ndim - 1, sa.ndim))
    ones = _sh.broadcast_in_dim(np.array(1, sa.dtype), sq, ())
    return _red.reduce_prod(_ew.select_n(diag, rows, ones), (sa.ndim,))


def _adjugate(x):
    """adj(x) = det(x) x^-1 of square matrices [..., n, n], finite when singular."""
    xa = get_aval(x)
    n, batch = xa.shape[-1], xa.shape[:-2]
    if n == 0:
        return x
    _, _, _, d = _lu_parts(x)
    # "singular": a pivot at most sqrt(eps) of the largest (an exact zero
    # included).  det(x) x^-1 loses ~eps * cond(x) of its digits, and its
    # derivatives more, while the SVD form stays accurate near singularity
    rdt = _dt.real_dtype(xa.dtype)
    ad = _ew.abs(d)
    last = (get_aval(d).ndim - 1,)
    tol = _ew.mul(_red.reduce_max(ad, last), const(rdt, float(np.sqrt(np.finfo(rdt).eps))))
    singular = _matrices(_ew.le(_red.reduce_min(ad, last), tol), x)
    eye = _eye(n, xa.dtype, batch)
    # nonsingular: det(x) x^-1 (identity where x is singular)
    xl = _ew.select_n(singular, x, eye)
    adj_lu = _ew.mul(_matrices(determinant(xl), xl), _solve_matrices(xl, eye))
    # singular: the SVD form (a matrix with distinct singular values where x is not)
    distinct = np.diag(np.arange(1, n + 1)).astype(xa.dtype)
    xs = _ew.select_n(singular, _sh.broadcast_in_dim(distinct, xa.shape, (len(batch), len(batch) + 1)), x)
    s, u, vh = _la.svd(xs, full_matrices=True)
    p = _exclusive_products(s)
    if _dt.kind(xa.dtype) == "c":
        p = _ew.complex(p, const(get_aval(p).dtype, 0))
    phase = _ew.mul(_lu_det(u), _lu_det(vh))
    scaled = _ew.mul(_H(vh), _sh.broadcast_in_dim(p, xa.shape, tuple(range(len(batch))) + (len(batch) + 1,)))
    adj_svd = _ew.mul(_matrices(phase, x), _bmm(scaled, _H(u)))
    return _ew.select_n(singular, adj_lu, adj_svd)


def _determinant_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    nd = get_aval(x).ndim
    # d det = sum_ij adj(x)_ji t_ij (holomorphic: no conjugate)
    return determinant(x), _red.reduce_sum(_ew.mul(_mT(_adjugate(x)), t), (nd - 2, nd - 1))


determinant.defjvp(_determinant_jvp)
