"""Linear-algebra primitives (cholesky, triangular_solve, lu, qr, eigh, svd, eig) and
their jvp/transpose/batch rules, plus the `lu_solve` composite.

Every primitive works on the trailing two dimensions and batches over all
leading ones.  Inputs are float32, float64, complex64 or complex128; the
reference implementation is numpy/scipy.  Like LAPACK, the symmetric/Hermitian
routines read one triangle only, and their jvp rules differentiate exactly that
(so finite differences agree for any perturbation).  Failures that LAPACK
reports (a matrix that is not positive definite, a singular triangular solve)
produce NaN/inf instead of raising, so the result does not depend on whether a
value is concrete or traced.

Example:
    >>> import numpy as np
    >>> from ember.fx.prims.linalg import cholesky
    >>> cholesky(np.array([[4.0, 2.0], [2.0, 5.0]])).tolist()
    [[2.0, 0.0], [1.0, 2.0]]
"""
from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg as _sl

from ... import dtypes as _dt
from ..core import (AbstractArray, Primitive, Zero, get_aval, is_undefined, shape_error,
                    tangent_aval)
from . import convert as _cv
from . import elementwise as _ew
from . import reduce as _red
from . import shape as _sh
from .contraction import dot_general
from .rules import bdim_to_front, broadcast_to_shape, moveaxis
from ..spelling import user_str

_LINALG_DTYPES = (_dt.float32, _dt.float64, _dt.complex64, _dt.complex128)


# --- shape/dtype checks ------------------------------------------------------------------

def _check_dtype(name, *avals):
    for a in avals:
        if a.dtype not in _LINALG_DTYPES:
            raise TypeError(f"{name}: expected float32, float64, complex64 or complex128 "
                            f"input, got {a.dtype} (convert integer or half-precision "
                            f"inputs first, e.g. with ember.numpy.linalg)")


def _check_matrix(name, a, square=False):
    if a.ndim < 2:
        raise shape_error(name, f"expected a (batch of) matrices of rank >= 2, got {user_str(a)}")
    if square and a.shape[-1] != a.shape[-2]:
        raise shape_error(name, f"expected square matrices in the last two dims, got {user_str(a)}")


def _aval(shape, dtype):
    return AbstractArray(shape, dtype)


# --- helpers used by the rules (they bind primitives, so rules are differentiable) -------

def _is_complex(x) -> bool:
    return _dt.kind(get_aval(x).dtype) == "c"


def _mT(x):
    """Swap the last two dims."""
    nd = get_aval(x).ndim
    perm = list(range(nd))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return _sh.transpose(x, tuple(perm))


def _conj(x):
    return _ew.conj(x) if _is_complex(x) else x


def _H(x):
    return _conj(_mT(x))


def _matmul(a, b):
    """[..., m, k] @ [..., k, n] with equal batch dims."""
    nd = get_aval(a).ndim
    batch = tuple(range(nd - 2))
    return dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)))


def _as_dtype(x, dtype):
    return _cv.convert_element_type(x, dtype) if get_aval(x).dtype != dtype else x


def _const_matrix(x, mat):
    """A constant (m, n) numpy matrix broadcast to the shape and dtype of `x`."""
    a = get_aval(x)
    c = np.asarray(mat, dtype=a.dtype)
    return _sh.broadcast_in_dim(c, a.shape, (a.ndim - 2, a.ndim - 1))


def _masked(x, mat):
    return _ew.mul(x, _const_matrix(x, mat))


def _tril(x, k=0):
    m, n = get_aval(x).shape[-2:]
    return _masked(x, np.tri(m, n, k))


def _triu(x, k=0):
    m, n = get_aval(x).shape[-2:]
    return _masked(x, 1 - np.tri(m, n, k - 1))


def _eye_like(x):
    m, n = get_aval(x).shape[-2:]
    return _const_matrix(x, np.eye(m, n))


def _sym_from_triangle(x, lower):
    """The Hermitian matrix a LAPACK routine sees when it reads one triangle of `x`:
    off-diagonal entries mirrored, and the real part of the diagonal."""
    n = get_aval(x).shape[-1]
    tri = np.tril(np.ones((n, n)), -1) if lower else np.triu(np.ones((n, n)), 1)
    half = _masked(x, tri + 0.5 * np.eye(n))
    return _ew.add(half, _H(half))


def _diag(x):
    """The main diagonal [..., min(m, n)] of [..., m, n] (mask and sum)."""
    a = get_aval(x)
    m, n = a.shape[-2:]
    d = _masked(x, np.eye(m, n))
    return _red.reduce_sum(d, (a.ndim - 2,) if m >= n else (a.ndim - 1,))


def _bcast_vec(v, shape, axis):
    """Broadcast [..., k] along a new matrix axis: axis=-1 puts v[j] in column j."""
    va = get_aval(v)
    nd = len(shape)
    nb = va.ndim - 1
    dims = tuple(range(nb)) + ((nd - 1,) if axis == -1 else (nd - 2,))
    return _sh.broadcast_in_dim(v, tuple(shape), dims)


def _scale_cols(x, v):
    """x[..., i, j] * v[..., j]."""
    a = get_aval(x)
    return _ew.mul(x, _bcast_vec(_as_dtype(v, a.dtype), a.shape, -1))


def _inv_gaps(w, dtype):
    """E[i, j] = 1 / (w[j] - w[i]) off the diagonal and 0 on it (no division by zero,
    so no NaN leaks into derivatives through the masked diagonal)."""
    wa = get_aval(w)
    k = wa.shape[-1]
    shape = wa.shape + (k,)
    diff = _ew.sub(_bcast_vec(w, shape, -1), _bcast_vec(w, shape, -2))
    eye = _const_matrix(diff, np.eye(k))
    e = _ew.div(_const_matrix(diff, 1 - np.eye(k)), _ew.add(diff, eye))
    return _as_dtype(e, dtype)


def _slice_last2(x, rows, cols):
    """x[..., r0:r1, c0:c1] for rows=(r0, r1), cols=(c0, c1)."""
    a = get_aval(x)
    start = (0,) * (a.ndim - 2) + (rows[0], cols[0])
    limit = a.shape[:-2] + (rows[1], cols[1])
    return _sh.slice(x, start, limit)


def _concat(xs, axis):
    nd = get_aval(xs[0]).ndim
    return _sh.concatenate(list(xs), axis % nd)


def _zeros_out(ans):
    if isinstance(ans, (list, tuple)):
        return [Zero(tangent_aval(get_aval(o))) for o in ans]
    return Zero(tangent_aval(get_aval(ans)))


def _trailing_batch(prim, core_rank=2):
    """Batch rule for primitives that act on the trailing `core_rank` dims: a batch dim
    among the leading dims stays where it is; otherwise it moves to the front."""
    def batch(axis_size, args, dims, **params):
        (x,), (d,) = args, dims
        nd = get_aval(x).ndim
        if d >= nd - core_rank:
            x, d = moveaxis(x, d, 0), 0
        out = prim.bind(x, **params)
        if prim.multiple_results:
            return out, [d] * len(out)
        return out, d
    return batch


def _batch_loop(fn, a, out_avals):
    """Apply a single-matrix function over the leading dims of `a` (for numpy routines
    that do not broadcast, and to isolate per-matrix failures)."""
    batch = a.shape[:-2]
    outs = [np.empty(o.shape, o.dtype) for o in out_avals]
    flat = a.reshape((-1,) + a.shape[-2:])
    flat_outs = [o.reshape((-1,) + o.shape[len(batch):]) for o in outs]
    for i in range(flat.shape[0]):
        res = fn(flat[i])
        for fo, r in zip(flat_outs, res):
            fo[i] = r
    return outs


# --- cholesky ----------------------------------------------------------------------------

def _cholesky_abstract(a):
    _check_dtype("cholesky", a)
    _check_matrix("cholesky", a, square=True)
    return _aval(a.shape, a.dtype)


def _cholesky_one(m):
    try:
        return (np.linalg.cholesky(m),)
    except np.linalg.LinAlgError:
        return (np.full(m.shape, np.nan, m.dtype),)


def _cholesky_impl(a):
    a = np.asarray(a)
    try:
        return np.linalg.cholesky(a).astype(a.dtype, copy=False)
    except np.linalg.LinAlgError:
        # One matrix is not positive definite: NaN for that one only.
        return _batch_loop(_cholesky_one, a, [_aval(a.shape, a.dtype)])[0]


def _cholesky_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    L = cholesky_p.bind(a)
    if type(da) is Zero:
        return L, _zeros_out(L)
    n = get_aval(a).shape[-1]
    da = _sym_from_triangle(da, lower=True)
    # dA = dL L^H + L dL^H  =>  L^{-1} dA L^{-H} = Phi^{-1}(L^{-1} dL), Phi = lower with half diag.
    x = triangular_solve(L, da, left_side=True, lower=True)
    x = triangular_solve(L, x, left_side=False, lower=True, transpose_a=True, conjugate_a=True)
    phi = _masked(x, np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n))
    return L, _matmul(L, phi)


cholesky_p = Primitive("cholesky")
cholesky_p.kind = "library"
cholesky_p.abstract_eval = _cholesky_abstract
cholesky_p.impl = _cholesky_impl
cholesky_p.jvp = _cholesky_jvp
cholesky_p.batch = _trailing_batch(cholesky_p)
cholesky_p.not_applicable.add("transpose")


def cholesky(x, *, symmetrize_input: bool = True):
    """Lower Cholesky factor L of Hermitian positive-definite matrices (A = L L^H).

    With `symmetrize_input` the input is first replaced by (A + A^H) / 2, so
    derivatives are symmetric; otherwise only the lower triangle is read.
    A matrix that is not positive definite gives NaNs.

    Example:
        >>> import numpy as np
        >>> cholesky(np.eye(2, dtype=np.float32)).dtype
        dtype('float32')
    """
    if symmetrize_input:
        _cholesky_abstract(get_aval(x))  # a clear error before symmetrize's own ops
        x = symmetrize(x)
    return cholesky_p.bind(x)


def symmetrize(x):
    """(x + x^H) / 2 over the last two dims.

    Example:
        >>> import numpy as np
        >>> symmetrize(np.array([[1.0, 2.0], [0.0, 1.0]])).tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """
    half = np.array(0.5, dtype=_dt.real_dtype(get_aval(x).dtype))
    if _is_complex(x):
        half = np.array(0.5, dtype=get_aval(x).dtype)
    return _ew.mul(_ew.add(x, _H(x)), half[()])


# --- triangular_solve ----------------------------------------------------------------------

def _ts_abstract(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    _check_dtype("triangular_solve", a, b)
    _check_matrix("triangular_solve", a, square=True)
    if a.dtype != b.dtype:
        raise TypeError(f"triangular_solve: a and b must have the same dtype, got {user_str(a)} and {user_str(b)}")
    if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2]:
        raise shape_error("triangular_solve", f"a and b must have equal batch dims, got {user_str(a)} and {user_str(b)}")
    m = a.shape[-1]
    k = b.shape[-2] if left_side else b.shape[-1]
    if k != m:
        side = "rows" if left_side else "columns"
        raise shape_error("triangular_solve", f"b must have {m} {side} to match a {user_str(a)} "
                          f"(left_side={left_side}), got {user_str(b)}")
    return _aval(b.shape, b.dtype)


def substitute(a, b, lower, unit_diagonal, xp=np):
    """Forward/back substitution with IEEE semantics (a singular a gives inf/nan)."""
    m = a.shape[-1]
    x = xp.zeros(b.shape, b.dtype)
    order = range(m) if lower else range(m - 1, -1, -1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in order:
            r = b[..., i, :] - xp.einsum("...j,...jk->...k", a[..., i, :], x)
            x[..., i, :] = r if unit_diagonal else r / a[..., i, i][..., None]
    return x


def _scipy_solve(tri, b, lower, unit_diagonal):
    try:
        return _sl.solve_triangular(tri, b, lower=lower, unit_diagonal=unit_diagonal, check_finite=False)
    except (np.linalg.LinAlgError, ValueError):   # a zero pivot: substitute, as IEEE would
        return substitute(tri, b, lower, unit_diagonal)


def triangular_solve_with(solve, a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal, xp=np):
    """op(a) x = b (or x op(a) = b when not `left_side`) reduced to
    `solve(tri, b, lower, unit_diagonal)`, a left-side solve by the triangle `tri`
    of a (the reference passes SciPy's; the CUDA backend its module's).

    Example:
        >>> a = np.array([[2., 0.], [1., 1.]])
        >>> triangular_solve_with(_scipy_solve, a, np.array([[2.], [2.]]), left_side=True, lower=True,
        ...                       transpose_a=False, conjugate_a=False, unit_diagonal=False).ravel().tolist()
        [1.0, 1.0]
    """
    if not left_side:
        # x op(a) = b  <=>  op(a)^T x^T = b^T
        x = triangular_solve_with(solve, a, xp.swapaxes(b, -1, -2), left_side=True, lower=lower,
                                  transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                  unit_diagonal=unit_diagonal, xp=xp)
        return xp.ascontiguousarray(xp.swapaxes(x, -1, -2))
    if b.size == 0:
        return xp.zeros(b.shape, b.dtype)
    if conjugate_a:
        a = xp.conj(a)
    if transpose_a:
        a = xp.swapaxes(a, -1, -2)
        lower = not lower
    tri = xp.tril(a) if lower else xp.triu(a)
    return xp.asarray(solve(tri, b, lower, unit_diagonal)).astype(b.dtype, copy=False)


def _ts_impl(a, b, **params):
    return triangular_solve_with(_scipy_solve, np.asarray(a), np.asarray(b), **params)


def _op(x, transpose_a, conjugate_a):
    if transpose_a:
        x = _mT(x)
    if conjugate_a:
        x = _conj(x)
    return x


def _ts_jvp(primals, tangents, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    a, b = primals
    da, db = tangents
    params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
                  conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
    x = triangular_solve_p.bind(a, b, **params)
    if type(da) is Zero and type(db) is Zero:
        return x, _zeros_out(x)
    rhs = None if type(db) is Zero else db
    if type(da) is not Zero:
        # Only the referenced triangle of a takes part (no diagonal with unit_diagonal).
        k = -1 if unit_diagonal else 0
        da = _tril(da, k) if lower else _triu(da, -k)
        opda = _op(da, transpose_a, conjugate_a)
        corr = _matmul(opda, x) if left_side else _matmul(x, opda)
        rhs = _ew.neg(corr) if rhs is None else _ew.sub(rhs, corr)
    return x, triangular_solve_p.bind(a, rhs, **params)


def _ts_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    if is_undefined(a):
        raise TypeError("triangular_solve is linear in b only, not in the matrix a")
    # x = op(a)^{-1} b  =>  ct_b = op(a)^{-T} ct  (and likewise on the right).
    ct_b = triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                   transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                   unit_diagonal=unit_diagonal)
    return [None, ct_b]


def _ts_batch(axis_size, args, dims, **params):
    (a, b), (da, db) = args, dims
    if da is not None and db is not None:
        nd = get_aval(a).ndim
        if da == db and da < nd - 2:
            return triangular_solve_p.bind(a, b, **params), da
    a = bdim_to_front(a, da, axis_size)
    b = bdim_to_front(b, db, axis_size)
    return triangular_solve_p.bind(a, b, **params), 0


triangular_solve_p = Primitive("triangular_solve")
triangular_solve_p.kind = "library"
triangular_solve_p.abstract_eval = _ts_abstract
triangular_solve_p.impl = _ts_impl
triangular_solve_p.jvp = _ts_jvp
triangular_solve_p.transpose = _ts_transpose
triangular_solve_p.batch = _ts_batch


def triangular_solve(a, b, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """Solve op(a) x = b (left_side) or x op(a) = b for triangular `a`, where op
    optionally transposes and/or conjugates.  Only the `lower` (or upper) triangle
    of `a` is read; with `unit_diagonal` its diagonal is taken to be ones.
    `a` is [..., m, m]; `b` is [..., m, n] (left) or [..., n, m] (right) with the
    same batch dims.  Linear in `b`.

    Example:
        >>> import numpy as np
        >>> a = np.array([[2.0, 0.0], [1.0, 1.0]]); b = np.array([[2.0], [3.0]])
        >>> triangular_solve(a, b, left_side=True, lower=True).tolist()
        [[1.0], [2.0]]
    """
    return triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                   transpose_a=bool(transpose_a), conjugate_a=bool(conjugate_a),
                                   unit_diagonal=bool(unit_diagonal))


# --- lu ------------------------------------------------------------------------------------

def _lu_abstract(a):
    _check_dtype("lu", a)
    _check_matrix("lu", a)
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    return [_aval(a.shape, a.dtype), _aval(batch + (min(m, n),), _dt.int32),
            _aval(batch + (m,), _dt.int32)]


def _pivots_to_permutation(piv, m, xp=np):
    """Apply the row swaps i <-> piv[i] in order to arange(m) (`xp`: the array
    module; the CUDA backend passes CuPy)."""
    batch = piv.shape[:-1]
    perm = xp.broadcast_to(xp.arange(m, dtype=np.int32), batch + (m,)).copy()
    if perm.size == 0 or piv.shape[-1] == 0:
        return perm
    flat = perm.reshape(-1, m)
    fpiv = piv.reshape(-1, piv.shape[-1])
    rows = xp.arange(flat.shape[0])
    for i in range(fpiv.shape[1]):
        j = fpiv[:, i]
        pi, pj = flat[rows, i].copy(), flat[rows, j].copy()
        flat[rows, i], flat[rows, j] = pj, pi
    return perm


def _lu_impl(a):
    a = np.asarray(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    if a.size == 0:
        piv = np.broadcast_to(np.arange(k, dtype=np.int32), batch + (k,)).copy()
        return [np.zeros(a.shape, a.dtype), piv, _pivots_to_permutation(piv, m)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # singular matrices warn; U then has a zero pivot
        lu, piv = _sl.lu_factor(a, check_finite=False)
    piv = np.asarray(piv, np.int32).reshape(batch + (k,))
    return [np.asarray(lu).astype(a.dtype, copy=False), piv, _pivots_to_permutation(piv, m)]


def permutation_matrix(permutation, dtype):
    """P[..., i, j] = (permutation[..., i] == j), so P @ x = x[permutation].

    Example:
        >>> import numpy as np
        >>> permutation_matrix(np.array([1, 0], np.int32), np.float32).tolist()
        [[0.0, 1.0], [1.0, 0.0]]
    """
    pa = get_aval(permutation)
    m = pa.shape[-1]
    shape = pa.shape + (m,)
    rows = _sh.broadcast_in_dim(permutation, shape, tuple(range(pa.ndim)))
    cols = _sh.broadcast_in_dim(np.arange(m, dtype=pa.dtype), shape, (pa.ndim,))
    return _cv.convert_element_type(_ew.eq(rows, cols), dtype)


def _lu_square_tangent(lu, dap):
    """(dL, dU) of a square LU = P A given the permuted tangent P dA."""
    x = triangular_solve(lu, dap, left_side=True, lower=True, unit_diagonal=True)
    x = triangular_solve(lu, x, left_side=False, lower=False)
    L = _ew.add(_tril(lu, -1), _eye_like(lu))
    U = _triu(lu)
    return _matmul(L, _tril(x, -1)), _matmul(_triu(x), U)


def _lu_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    outs = lu_p.bind(a)
    lu, _, perm = outs
    if type(da) is Zero:
        return outs, _zeros_out(outs)
    m, n = get_aval(a).shape[-2:]
    dap = _matmul(permutation_matrix(perm, get_aval(a).dtype), da)
    if m == n:
        dl, du = _lu_square_tangent(lu, dap)
        dlu = _ew.add(dl, du)
    elif m > n:
        lu1, lu2 = _slice_last2(lu, (0, n), (0, n)), _slice_last2(lu, (n, m), (0, n))
        da1, da2 = _slice_last2(dap, (0, n), (0, n)), _slice_last2(dap, (n, m), (0, n))
        dl1, du = _lu_square_tangent(lu1, da1)
        # A2 = L2 U  =>  dL2 = (dA2 - L2 dU) U^{-1}
        dl2 = triangular_solve(lu1, _ew.sub(da2, _matmul(lu2, du)), left_side=False, lower=False)
        dlu = _concat([_ew.add(dl1, du), dl2], -2)
    else:
        lu1, u2 = _slice_last2(lu, (0, m), (0, m)), _slice_last2(lu, (0, m), (m, n))
        da1, da2 = _slice_last2(dap, (0, m), (0, m)), _slice_last2(dap, (0, m), (m, n))
        dl, du1 = _lu_square_tangent(lu1, da1)
        # A2 = L U2  =>  dU2 = L^{-1} (dA2 - dL U2)
        du2 = triangular_solve(lu1, _ew.sub(da2, _matmul(dl, u2)), left_side=True, lower=True,
                               unit_diagonal=True)
        dlu = _concat([_ew.add(dl, du1), du2], -1)
    z = _zeros_out(outs)
    return outs, [dlu, z[1], z[2]]


lu_p = Primitive("lu", multiple_results=True)
lu_p.kind = "library"
lu_p.abstract_eval = _lu_abstract
lu_p.impl = _lu_impl
lu_p.jvp = _lu_jvp
lu_p.batch = _trailing_batch(lu_p)
lu_p.not_applicable.add("transpose")


def lu(x):
    """LU decomposition with partial pivoting of [..., m, n] matrices.

    Returns (lu, pivots, permutation): `lu` holds L (unit lower, below the
    diagonal) and U (upper); `pivots[i]` is the row swapped with row i (int32,
    [..., min(m, n)]); `permutation` [..., m] satisfies x[permutation] = L @ U.

    Example:
        >>> import numpy as np
        >>> lu_, piv, perm = lu(np.array([[1.0, 2.0], [3.0, 4.0]]))
        >>> perm.tolist()
        [1, 0]
    """
    return lu_p.bind(x)


def lu_solve(lu_factors, permutation, b, trans: int = 0):
    """Solve A x = b (trans=0), A^T x = b (1) or A^H x = b (2) from `lu(A)`'s lu and
    permutation.  `b` is [..., m, k] with the batch dims of `lu_factors`.

    Example:
        >>> import numpy as np
        >>> a = np.array([[1.0, 2.0], [3.0, 4.0]]); f, _, p = lu(a)
        >>> np.round(np.asarray(lu_solve(f, p, np.array([[5.0], [11.0]]))), 6).tolist()
        [[1.0], [2.0]]
    """
    dtype = get_aval(lu_factors).dtype
    pmat = permutation_matrix(permutation, dtype)
    if trans == 0:
        x = _matmul(pmat, b)
        x = triangular_solve(lu_factors, x, left_side=True, lower=True, unit_diagonal=True)
        return triangular_solve(lu_factors, x, left_side=True, lower=False)
    if trans not in (1, 2):
        raise ValueError(f"lu_solve: trans must be 0, 1 or 2, got {trans}")
    conj = trans == 2
    # A = P^T L U  =>  A^T = U^T L^T P  =>  x = P^T L^{-T} U^{-T} b
    x = triangular_solve(lu_factors, b, left_side=True, lower=False, transpose_a=True,
                         conjugate_a=conj)
    x = triangular_solve(lu_factors, x, left_side=True, lower=True, transpose_a=True,
                         conjugate_a=conj, unit_diagonal=True)
    return _matmul(_mT(pmat), x)


# --- qr ------------------------------------------------------------------------------------

def _qr_abstract(a, *, full_matrices):
    _check_dtype("qr", a)
    _check_matrix("qr", a)
    m, n = a.shape[-2:]
    k = m if full_matrices else min(m, n)
    batch = a.shape[:-2]
    return [_aval(batch + (m, k), a.dtype), _aval(batch + (k, n), a.dtype)]


def _qr_impl(a, *, full_matrices):
    a = np.asarray(a)
    q, r = np.linalg.qr(a, mode="complete" if full_matrices else "reduced")
    return [q.astype(a.dtype, copy=False), r.astype(a.dtype, copy=False)]


def _qr_tall_tangent(q, r, da):
    """(dQ, dR) for A = Q R with Q [m, n] orthonormal columns and R [n, n] upper, m >= n."""
    dar = triangular_solve(r, da, left_side=False, lower=False)  # dA R^{-1}
    c = _matmul(_H(q), dar)
    cl = _tril(c, -1)
    omega = _ew.sub(cl, _H(cl))  # Q^H dQ: skew-Hermitian, its lower part fixed by c
    if _is_complex(c):
        # R keeps a real diagonal, which fixes the imaginary diagonal of Q^H dQ.
        zero = np.zeros((), _dt.real_dtype(get_aval(c).dtype))[()]
        omega = _ew.add(omega, _masked(_ew.sub(c, _ew.complex(_ew.real(c), zero)),
                                       np.eye(get_aval(c).shape[-1])))
    dq = _ew.add(_matmul(q, _ew.sub(omega, c)), dar)
    dr = _matmul(_ew.sub(c, omega), r)
    return dq, dr


def _qr_jvp(primals, tangents, *, full_matrices):
    (a,), (da,) = primals, tangents
    outs = qr_p.bind(a, full_matrices=full_matrices)
    q, r = outs
    if type(da) is Zero:
        return outs, _zeros_out(outs)
    m, n = get_aval(a).shape[-2:]
    if m >= n:
        if full_matrices and m > n:
            raise ValueError("qr: the derivative of full_matrices=True for a tall matrix is not "
                             "defined (the extra columns of Q are not unique); use "
                             "full_matrices=False")
        dq, dr = _qr_tall_tangent(q, r, da)
    else:
        # A = Q [R1 R2]: the square part fixes dQ, then dR2 = Q^H (dA2 - dQ R2).
        r1, r2 = _slice_last2(r, (0, m), (0, m)), _slice_last2(r, (0, m), (m, n))
        da1, da2 = _slice_last2(da, (0, m), (0, m)), _slice_last2(da, (0, m), (m, n))
        dq, dr1 = _qr_tall_tangent(q, r1, da1)
        dr2 = _matmul(_H(q), _ew.sub(da2, _matmul(dq, r2)))
        dr = _concat([dr1, dr2], -1)
    return outs, [dq, dr]


qr_p = Primitive("qr", multiple_results=True)
qr_p.kind = "library"
qr_p.abstract_eval = _qr_abstract
qr_p.impl = _qr_impl
qr_p.jvp = _qr_jvp
qr_p.batch = _trailing_batch(qr_p)
qr_p.not_applicable.add("transpose")


def qr(x, full_matrices: bool = True):
    """QR decomposition of [..., m, n] matrices: returns (q, r) with q unitary
    ([..., m, m], or [..., m, k] with k = min(m, n) when not `full_matrices`) and r
    upper triangular.  Differentiable except for full_matrices with m > n.

    Example:
        >>> import numpy as np
        >>> q, r = qr(np.ones((3, 2)), full_matrices=False)
        >>> q.shape, r.shape
        ((3, 2), (2, 2))
    """
    return qr_p.bind(x, full_matrices=bool(full_matrices))


# --- eigh ----------------------------------------------------------------------------------

def _eigh_abstract(a, *, lower):
    _check_dtype("eigh", a)
    _check_matrix("eigh", a, square=True)
    return [_aval(a.shape, a.dtype), _aval(a.shape[:-1], _dt.real_dtype(a.dtype))]


def _eigh_impl(a, *, lower):
    a = np.asarray(a)
    w, v = np.linalg.eigh(a, UPLO="L" if lower else "U")
    return [v.astype(a.dtype, copy=False), w.astype(_dt.real_dtype(a.dtype), copy=False)]


def _eigh_jvp(primals, tangents, *, lower):
    (a,), (da,) = primals, tangents
    outs = eigh_p.bind(a, lower=lower)
    v, w = outs
    if type(da) is Zero:
        return outs, _zeros_out(outs)
    dtype = get_aval(a).dtype
    da = _sym_from_triangle(da, lower)
    f = _matmul(_H(v), _matmul(da, v))
    dw = _diag(f)
    if _is_complex(dw):
        dw = _ew.real(dw)
    # Distinct eigenvalues assumed: dV = V (E o F), E[i, j] = 1 / (w[j] - w[i]).
    dv = _matmul(v, _ew.mul(_inv_gaps(w, dtype), f))
    return outs, [dv, dw]


eigh_p = Primitive("eigh", multiple_results=True)
eigh_p.kind = "library"
eigh_p.abstract_eval = _eigh_abstract
eigh_p.impl = _eigh_impl
eigh_p.jvp = _eigh_jvp
eigh_p.batch = _trailing_batch(eigh_p)
eigh_p.not_applicable.add("transpose")


def eigh(x, lower: bool = True, symmetrize_input: bool = True):
    """Eigendecomposition of Hermitian matrices: returns (v, w) with eigenvalues `w`
    (real, ascending) and eigenvectors in the columns of `v`, x = v diag(w) v^H.

    Only the `lower` (or upper) triangle is read; with `symmetrize_input` the
    input is first replaced by (x + x^H) / 2.  The derivative assumes distinct
    eigenvalues (it is inf/NaN for repeated ones); eigenvectors of complex input
    are differentiated in the gauge where v^H dv has a zero diagonal.

    Example:
        >>> import numpy as np
        >>> v, w = eigh(np.diag([2.0, 1.0]))
        >>> w.tolist()
        [1.0, 2.0]
    """
    if symmetrize_input:
        _eigh_abstract(get_aval(x), lower=lower)  # a clear error before symmetrize's own ops
        x = symmetrize(x)
    return eigh_p.bind(x, lower=bool(lower))


# --- svd -----------------------------------------------------------------------------------

def _svd_abstract(a, *, full_matrices, compute_uv):
    _check_dtype("svd", a)
    _check_matrix("svd", a)
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    s = _aval(batch + (k,), _dt.real_dtype(a.dtype))
    if not compute_uv:
        return [s]
    ku, kv = (m, n) if full_matrices else (k, k)
    return [s, _aval(batch + (m, ku), a.dtype), _aval(batch + (kv, n), a.dtype)]


def _svd_impl(a, *, full_matrices, compute_uv):
    a = np.asarray(a)
    rd = _dt.real_dtype(a.dtype)
    if not compute_uv:
        return [np.linalg.svd(a, compute_uv=False).astype(rd, copy=False)]
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return [s.astype(rd, copy=False), u.astype(a.dtype, copy=False),
            vh.astype(a.dtype, copy=False)]


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv):
    (a,), (da,) = primals, tangents
    outs = svd_p.bind(a, full_matrices=full_matrices, compute_uv=compute_uv)
    if type(da) is Zero:
        return outs, _zeros_out(outs)
    m, n = get_aval(a).shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise ValueError("svd: the derivative of the singular vectors with full_matrices=True "
                         "is not defined for non-square matrices (the extra vectors are not "
                         "unique); use full_matrices=False")
    if compute_uv:
        s, u, vh = outs
    else:
        s, u, vh = svd_p.bind(a, full_matrices=False, compute_uv=True)
    dtype = get_aval(a).dtype
    v = _H(vh)
    dp = _matmul(_H(u), _matmul(da, v))  # U^H dA V
    ds = _diag(dp)
    if _is_complex(ds):
        ds = _ew.real(ds)
    if not compute_uv:
        return outs, [ds]
    shape = get_aval(dp).shape
    s_c = _as_dtype(s, dtype)
    s_row = _bcast_vec(s_c, shape, -1)  # s[j] at (i, j)
    s_col = _bcast_vec(s_c, shape, -2)  # s[i] at (i, j)
    f = _inv_gaps(_ew.mul(s, s), dtype)  # 1 / (s_j^2 - s_i^2), distinct values assumed
    dph = _H(dp)
    omega_u = _ew.mul(f, _ew.add(_ew.mul(dp, s_row), _ew.mul(s_col, dph)))
    omega_v = _ew.mul(f, _ew.add(_ew.mul(s_col, dp), _ew.mul(dph, s_row)))
    rdt = _dt.real_dtype(dtype)
    one, zero = np.ones((), rdt)[()], np.zeros((), rdt)[()]
    # A zero singular value is fine where the factor it divides is zero in exact
    # arithmetic: the parts of dA outside the span of U (of V) vanish when U (V)
    # is square, so those terms are left out rather than computed as rounding
    # noise / 0 (a square singular matrix's derivative read NaN or garbage); the
    # complex gauge's phase of a zero singular value's vectors is free: take 0.
    flat = _ew.eq(s, broadcast_to_shape(zero, get_aval(s).shape))
    s_inv = _ew.select_n(flat, _ew.div(one, _ew.select_n(flat, s, broadcast_to_shape(one, get_aval(s).shape))),
                         broadcast_to_shape(zero, get_aval(s).shape))
    du, dv = _matmul(u, omega_u), _matmul(v, omega_v)
    if get_aval(u).shape[-1] < m:
        du = _ew.add(du, _scale_cols(_ew.sub(_matmul(da, v), _matmul(u, dp)), _ew.div(one, s)))
    if get_aval(v).shape[-1] < n:
        dv = _ew.add(dv, _scale_cols(_ew.sub(_matmul(_H(da), u), _matmul(v, dph)), _ew.div(one, s)))
    if _is_complex(dp):
        # Gauge: V^H dV has a zero diagonal, so U^H dU carries i Im(diag(dP)) / s.
        phase = _ew.complex(zero, _ew.mul(_ew.imag(_diag(dp)), s_inv))
        du = _ew.add(du, _scale_cols(u, phase))
    return outs, [ds, du, _H(dv)]


svd_p = Primitive("svd", multiple_results=True)
svd_p.kind = "library"
svd_p.abstract_eval = _svd_abstract
svd_p.impl = _svd_impl
svd_p.jvp = _svd_jvp
svd_p.batch = _trailing_batch(svd_p)
svd_p.not_applicable.add("transpose")


def svd(x, full_matrices: bool = True, compute_uv: bool = True):
    """Singular value decomposition x = u diag(s) vh of [..., m, n] matrices.

    Returns (s, u, vh), or just s when not `compute_uv`; s is real and
    descending.  The derivative assumes distinct non-zero singular values and,
    for u and vh, full_matrices=False (or square x).

    Example:
        >>> import numpy as np
        >>> svd(np.diag([1.0, 3.0]), compute_uv=False).tolist()
        [3.0, 1.0]
    """
    out = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    return tuple(out) if compute_uv else out[0]


# --- eig (general, non-symmetric) ------------------------------------------------------------

def _eig_abstract(a, *, compute_eigenvectors):
    _check_dtype("eig", a)
    _check_matrix("eig", a, square=True)
    cd = _dt.complex_dtype(a.dtype)
    w = _aval(a.shape[:-1], cd)
    return [w, _aval(a.shape, cd)] if compute_eigenvectors else [w]


def _eig_impl(a, *, compute_eigenvectors):
    a = np.asarray(a)
    cd = _dt.complex_dtype(a.dtype)
    if a.size == 0:
        w = np.zeros(a.shape[:-1], cd)
        return [w, np.zeros(a.shape, cd)] if compute_eigenvectors else [w]
    if not compute_eigenvectors:
        return [np.linalg.eigvals(a).astype(cd)]
    w, v = np.linalg.eig(a)
    return [w.astype(cd), v.astype(cd)]


def _eig_jvp(primals, tangents, *, compute_eigenvectors):
    (a,), (da,) = primals, tangents
    outs = eig_p.bind(a, compute_eigenvectors=compute_eigenvectors)
    if type(da) is Zero:
        return outs, _zeros_out(outs)
    w, v = eig_p.bind(a, compute_eigenvectors=True)
    cd = get_aval(v).dtype
    nd = get_aval(v).ndim
    f, _, perm = lu_p.bind(v)
    # V^{-1} dA V: its diagonal is dw; off the diagonal it rotates the eigenvectors.
    g = lu_solve(f, perm, _matmul(_as_dtype(da, cd), v))
    dw = _diag(g)
    if not compute_eigenvectors:
        return outs, [dw]
    dv = _matmul(v, _ew.mul(_inv_gaps(w, cd), g))
    # numpy's eigenvectors have unit norm: remove the radial part Re(v^H dv) v.
    radial = _ew.real(_red.reduce_sum(_ew.mul(_ew.conj(v), dv), (nd - 2,)))
    zero = np.zeros((), _dt.real_dtype(cd))[()]
    dv = _ew.sub(dv, _scale_cols(v, _ew.complex(radial, zero)))
    return outs, [dw, dv]


eig_p = Primitive("eig", multiple_results=True)
eig_p.kind = "library"
eig_p.abstract_eval = _eig_abstract
eig_p.impl = _eig_impl
eig_p.jvp = _eig_jvp
eig_p.batch = _trailing_batch(eig_p)
eig_p.not_applicable.add("transpose")


def eig(x, compute_eigenvectors: bool = True):
    """Eigenvalues (and right eigenvectors) of general square matrices, always complex.

    Returns (w, v) with x v[:, j] = w[j] v[:, j] and unit-norm columns of v, or
    (w,) when not `compute_eigenvectors`.  The derivative assumes distinct
    eigenvalues; the eigenvectors' phase is not fixed by the derivative (their
    tangents satisfy dA v + A dv = dw v + w dv and keep unit norm).

    Example:
        >>> import numpy as np
        >>> w, v = eig(np.diag([1.0, 2.0]))
        >>> w.tolist()
        [(1+0j), (2+0j)]
    """
    return tuple(eig_p.bind(x, compute_eigenvectors=bool(compute_eigenvectors)))


__all__ = [
    "cholesky",
    "eig",
    "eigh",
    "lu",
    "lu_solve",
    "permutation_matrix",
    "qr",
    "svd",
    "symmetrize",
    "triangular_solve",
]
