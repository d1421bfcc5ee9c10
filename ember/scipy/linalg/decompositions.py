"""Matrix decompositions with SciPy's argument conventions (`cholesky`, `lu`, `eigh`,
`eigh_tridiagonal`, `svd`, `qr`, `polar`, `hessenberg`), as thin wrappers over ember's
linalg primitives; batched over leading dims.  `overwrite_a`, `check_finite` and the
like are accepted and ignored."""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ... import numpy as enp
from ...fx.core import get_aval
from ...fx.prims import linalg as _la
from ...fx.prims.linalg_hessenberg import hessenberg as _hessenberg
from ...fx.prims.linalg_qr_pivots import qr_pivots
from ...numpy import _core as _core
from ._util import back, check_matrix, check_square, inexact, shape_of

__all__ = ["cholesky", "eigh", "eigh_tridiagonal", "hessenberg", "lu", "polar", "qr", "svd"]


def _mT(x):
    nd = len(shape_of(x))
    return _core.asarray(x).transpose(tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _H(x):
    x = _mT(x)
    return x.conj() if _dt.kind(get_aval(x).dtype) == "c" else x


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """Cholesky factor of Hermitian positive-definite matrices (scipy.linalg.cholesky):
    upper U with a = U^H U by default (SciPy's default, unlike numpy's), or lower L
    with a = L L^H.  As in SciPy, only that triangle of `a` is read (so derivatives
    land in it only); a matrix that is not positive definite gives NaNs.

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import cholesky
        >>> cholesky(np.array([[4.0, 2.0], [2.0, 5.0]])).tolist()
        [[2.0, 1.0], [0.0, 2.0]]
    """
    (a,), out = inexact("cholesky", a)
    check_square("cholesky", "a", a)
    if lower:
        return back(_la.cholesky(a, symmetrize_input=False), out)
    # The upper triangle of a is the lower triangle of a^H, and U = L^H.
    return back(_H(_la.cholesky(_H(a), symmetrize_input=False)), out)


def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
    """LU decomposition with partial pivoting (scipy.linalg.lu): a = p @ l @ u for
    [..., M, N] matrices, with p [..., M, M] a permutation matrix (real dtype), l
    [..., M, K] unit lower triangular and u [..., K, N] upper triangular, K = min(M, N).
    With `permute_l`, returns (p @ l, u).

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import lu
        >>> p, l, u = lu(np.array([[1.0, 2.0], [3.0, 4.0]]))
        >>> p.tolist(), u.tolist()
        ([[0.0, 1.0], [1.0, 0.0]], [[3.0, 4.0], [0.0, 0.6666666666666667]])
    """
    (a,), out = inexact("lu", a)
    check_matrix("lu", "a", a)
    f, _, perm = _la.lu(a)
    dtype = get_aval(f).dtype
    m, n = shape_of(a)[-2:]
    k = min(m, n)
    f = _core.asarray(f)
    # perm satisfies a[perm] = l @ u, so p is the transpose of the matrix with ones at (i, perm[i]).
    p = _mT(_la.permutation_matrix(perm, _dt.real_dtype(dtype)))
    l = f[..., :, :k] * np.tri(m, k, -1, dtype=dtype) + np.eye(m, k, dtype=dtype)
    u = f[..., :k, :] * (1 - np.tri(k, n, -1, dtype=dtype))
    if permute_l:
        pl = _la._matmul(_mT(_la.permutation_matrix(perm, dtype)), l)
        return back(pl, out), back(u, out)
    return back(p, out), back(l, out), back(u, out)


def eigh(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         turbo=True, eigvals=None, type=1, check_finite=True):
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices
    (scipy.linalg.eigh): returns (w, v) with a @ v = v * w, or w with `eigvals_only`.

    As in JAX, `a` is symmetrised, (a + a^H) / 2, so `lower` does not change the
    result for Hermitian input.  With `b` (Hermitian positive definite) it solves
    the generalized problem of `type` 1 (a v = w b v), 2 (a b v = w v) or 3
    (b a v = w v) through b's Cholesky factor, with SciPy's normalisation (v^H b v = I
    for types 1 and 2, v^H b^-1 v = I for 3).  `eigvals=(lo, hi)` keeps eigenvalues
    lo..hi (inclusive, ascending).  Derivatives assume distinct eigenvalues.

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import eigh
        >>> eigh(np.array([[2.0, 1.0], [1.0, 2.0]]), eigvals_only=True).tolist()
        [1.0, 3.0]
    """
    if type not in (1, 2, 3):
        raise ValueError(f"eigh: type must be 1, 2 or 3, got {type!r}")
    if b is None:
        (a,), out = inexact("eigh", a)
    else:
        (a, b), out = inexact("eigh", a, b)
        check_square("eigh", "b", b)
    check_square("eigh", "a", a)
    if b is not None and shape_of(b) != shape_of(a):
        raise TypeError(f"eigh: b must have the shape of a, {shape_of(a)}, got {shape_of(b)}")
    if b is None:
        v, w = _la.eigh(a, lower=bool(lower))
    else:
        v, w = _generalized(a, b, lower, type)
    if eigvals is not None:
        lo, hi = (int(e) for e in eigvals)
        n = shape_of(a)[-1]
        if not 0 <= lo <= hi < n:
            raise ValueError(f"eigh: eigvals must be (lo, hi) with 0 <= lo <= hi < {n}, got "
                             f"{tuple(eigvals)}")
        w = _core.asarray(w)[..., lo:hi + 1]
        v = _core.asarray(v)[..., lo:hi + 1]
    if eigvals_only:
        return back(w, out)
    return back(w, out), back(v, out)


def _generalized(a, b, lower, type):
    L = _la.cholesky(b)  # symmetrised, like a
    tri = dict(left_side=True, lower=True)
    if type == 1:
        # L^-1 a L^-H y = w y, v = L^-H y
        c = _la.triangular_solve(L, a, **tri)
        c = _H(_la.triangular_solve(L, _H(c), **tri))
    else:
        c = _la._matmul(_H(L), _la._matmul(a, L))
    y, w = _la.eigh(c, lower=bool(lower))
    if type == 3:
        return _la._matmul(L, y), w
    return _la.triangular_solve(L, y, transpose_a=True, conjugate_a=True, **tri), w


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
        lapack_driver="gesdd"):
    """Singular value decomposition a = u @ diag(s) @ vh (scipy.linalg.svd): returns
    (u, s, vh), or s when not `compute_uv`; s is real and descending.  `lapack_driver`
    ('gesdd' or 'gesvd') is checked and otherwise ignored.  Derivatives assume distinct
    non-zero singular values (and full_matrices=False for non-square `a`).

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import svd
        >>> svd(np.diag([1.0, 3.0]), compute_uv=False).tolist()
        [3.0, 1.0]
    """
    if lapack_driver not in ("gesdd", "gesvd"):
        raise ValueError(f"svd: lapack_driver must be 'gesdd' or 'gesvd', got {lapack_driver!r}")
    (a,), out = inexact("svd", a)
    check_matrix("svd", "a", a)
    if not compute_uv:
        return back(_la.svd(a, compute_uv=False), out)
    s, u, vh = _la.svd(a, full_matrices=bool(full_matrices))
    return back(u, out), back(s, out), back(vh, out)


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    """QR decomposition a = q @ r (scipy.linalg.qr) of [..., M, N] matrices.  `mode`:
    'full' (q [..., M, M], r [..., M, N]), 'economic' (q [..., M, K], r [..., K, N],
    K = min(M, N)) or 'r' (returns the 1-tuple (r,), r [..., M, N], as SciPy does).
    With `pivoting`, also returns the column permutation p [..., N] (int32) of
    LAPACK's geqp3, with a[..., :, p] = q @ r and |diag(r)| non-increasing; q and r
    are differentiable (p is piecewise constant).  mode='raw' is not implemented.

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import qr
        >>> q, r = qr(np.ones((3, 2)), mode="economic")
        >>> q.shape, r.shape
        ((3, 2), (2, 2))
    """
    if mode == "raw":
        raise ValueError("qr: mode='raw' (LAPACK's Householder reflectors and scales) is not "
                         "available: ember's QR primitive produces q and r; use mode='full', "
                         "'economic' or 'r'")
    if mode not in ("full", "economic", "r"):
        raise ValueError(f"qr: mode must be 'full', 'economic' or 'r', got {mode!r}")
    (a,), out = inexact("qr", a)
    check_matrix("qr", "a", a)
    m, n = shape_of(a)[-2:]
    piv = ()
    if pivoting:
        p = qr_pivots(a)
        a = enp.take_along_axis(a, _core.broadcast_to(_core.asarray(p)[..., None, :], shape_of(a)),
                                axis=-1, mode="clip")
        piv = (p,)
    if mode == "r":
        # The economic r padded with zero rows: the full q is not needed, and the economic
        # factorization is the one that is differentiable for tall a.
        _, r = _la.qr(a, full_matrices=False)
        if m > n:
            r = enp.pad(r, [(0, 0)] * (len(shape_of(a)) - 2) + [(0, m - n), (0, 0)])
        return (back(r, out),) + piv
    q, r = _la.qr(a, full_matrices=mode == "full")
    return (back(q, out), back(r, out)) + piv


def polar(a, side="right", *, method="svd", eps=None, max_iterations=None):
    """Polar decomposition (scipy.linalg.polar) from the SVD: a = u @ p with `side`
    'right' (p [..., N, N]) or a = p @ u with 'left' (p [..., M, M]); u [..., M, N] has
    orthonormal columns (or rows) and p is Hermitian positive semi-definite.  JAX's
    `method` ('svd' or 'qdwh'), `eps` and `max_iterations` are accepted; both methods
    compute through the SVD here.

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import polar
        >>> u, p = polar(np.array([[2.0, 0.0], [0.0, -3.0]]))
        >>> u.tolist(), p.tolist()
        ([[1.0, 0.0], [0.0, -1.0]], [[2.0, 0.0], [0.0, 3.0]])
    """
    if side not in ("right", "left"):
        raise ValueError(f"polar: side must be 'right' or 'left', got {side!r}")
    if method not in ("svd", "qdwh"):
        raise ValueError(f"polar: method must be 'svd' or 'qdwh', got {method!r}")
    (a,), out = inexact("polar", a)
    check_matrix("polar", "a", a)
    s, w, vh = _la.svd(a, full_matrices=False)
    dtype = get_aval(a).dtype
    s = _core.asarray(s).astype(dtype)
    u = _la._matmul(w, vh)
    if side == "right":
        p = _la._matmul(_H(vh), _core.asarray(vh) * s[..., :, None])
    else:
        p = _la._matmul(_core.asarray(w) * s[..., None, :], _H(w))
    return back(u, out), back(p, out)


def eigh_tridiagonal(d, e, *, eigvals_only=False, select="a", select_range=None, tol=None,
                     check_finite=True, lapack_driver="auto", key=None):
    """Eigenvalues (ascending) and eigenvectors of the Hermitian tridiagonal matrix with
    diagonal `d` [..., N] and off-diagonal `e` [..., N-1] (scipy.linalg.eigh_tridiagonal):
    returns (w, v), or w with `eigvals_only`.  `select` 'a' keeps all eigenvalues, 'i'
    those with indices select_range = (lo, hi) (inclusive).  It runs the dense `eigh`
    of the assembled matrix, O(N^3) rather than LAPACK's O(N^2), so that it batches and
    differentiates like `eigh`; `tol`, `lapack_driver` and JAX's `key` are accepted and
    ignored.

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import eigh_tridiagonal
        >>> np.round(np.asarray(eigh_tridiagonal(np.array([2.0, 2.0]), np.array([1.0]),
        ...                                       eigvals_only=True)), 6).tolist()
        [1.0, 3.0]
    """
    if select not in ("a", "i"):
        raise ValueError(f"eigh_tridiagonal: select={select!r} is not supported (the number "
                         f"of eigenvalues in a value range depends on the data, and ember's "
                         f"shapes are static); use select='a' and mask, or select='i' with "
                         f"index bounds")
    (d, e), out = inexact("eigh_tridiagonal", d, e)
    sd, se = shape_of(d), shape_of(e)
    if len(sd) < 1 or len(se) < 1 or se[-1] != max(sd[-1] - 1, 0):
        raise TypeError(f"eigh_tridiagonal: e must have one element fewer than d along the "
                        f"last axis, got shapes {sd} and {se}")
    n = sd[-1]
    batch = _core.broadcast_shapes(sd[:-1], se[:-1], op="eigh_tridiagonal")
    d = _core.broadcast_to(d, batch + (n,))
    e = _core.broadcast_to(e, batch + (max(n - 1, 0),))
    dtype = get_aval(d).dtype
    # e0[j] = e[j - 1], so e0[..., None, :] on the superdiagonal puts e[i] at (i, i + 1).
    e0 = enp.concatenate([enp.zeros(batch + (min(n, 1),), dtype), e], axis=-1)
    t = (d[..., None, :] * np.eye(n, dtype=dtype) + e0[..., None, :] * np.eye(n, k=1, dtype=dtype)
         + enp.conj(e0)[..., :, None] * np.eye(n, k=-1, dtype=dtype))
    if select == "i":
        res = eigh(t, eigvals=select_range, eigvals_only=eigvals_only)
    else:
        res = eigh(t, eigvals_only=eigvals_only)
    if eigvals_only:
        return back(res, out)
    return back(res[0], out), back(res[1], out)


def hessenberg(a, calc_q=False, overwrite_a=False, check_finite=True):
    """Reduction to upper Hessenberg form (scipy.linalg.hessenberg): h, or (h, q) with
    `calc_q`, where a = q @ h @ q^H for square [..., N, N] matrices and q is unitary
    with first column e1 (LAPACK's gehrd; complex h has a real subdiagonal).
    Differentiable where h has no zero subdiagonal entry (there the reduction is
    unique).

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import hessenberg
        >>> h = hessenberg(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]]))
        >>> bool(np.allclose(np.tril(np.asarray(h), -2), 0))
        True
    """
    (a,), out = inexact("hessenberg", a)
    check_square("hessenberg", "a", a)
    h, q = _hessenberg(a)
    return (back(h, out), back(q, out)) if calc_q else back(h, out)
