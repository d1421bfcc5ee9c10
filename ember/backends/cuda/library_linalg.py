"""Device library steps of the linear-algebra primitives (`fx/prims/linalg.py`)
over an array module `xp`: its `linalg` (cuSOLVER through CuPy on the GPU, LAPACK
through numpy in the host emulation) and its SciPy (`cupyx.scipy.linalg` /
`scipy.linalg`) for triangular solves.

The results are the reference impls': Cholesky of a matrix that is not positive
definite is NaN for that matrix only (the module is asked to raise, and the
batch is then factored matrix by matrix); a module whose routine takes only one
matrix gets the batch one matrix at a time.  LU runs for real float32/float64
matrices (what `cupyx.scipy.linalg.lu_factor` takes); a singular matrix, which
it fills with NaN where LAPACK keeps zeros, is factored again by the reference
on the host (one flag read back per call).  The non-symmetric eigendecomposition
(no cuSOLVER routine through CuPy) stays a host step.

Example:
    >>> import numpy as np
    >>> cholesky(np, np.array([[4., 2.], [2., 5.]])).tolist()
    [[2.0, 0.0], [1.0, 2.0]]
"""
from __future__ import annotations

import contextlib
import warnings

import numpy as np

from ...fx.prims import linalg as _ref

_NOT_BATCHED = (ValueError, NotImplementedError, TypeError)


def _scipy_linalg(xp):
    if xp is np:
        import scipy.linalg as sl
        return sl
    import cupyx.scipy.linalg as sl  # the GPU's own: imported only with CuPy
    return sl


def _raising(xp):
    """A context in which `xp.linalg` raises LinAlgError on a failed factorisation
    (numpy always does; CuPy only inside `cupyx.errstate(linalg="raise")`)."""
    if xp is np:
        return contextlib.nullcontext()
    import cupyx
    return cupyx.errstate(linalg="raise")


def _per_matrix(xp, fn, a, *rest):
    """fn applied to each matrix of the batch of `a` (and the matching matrices of
    `rest`), the results stacked back: for routines that take one matrix."""
    batch = a.shape[:-2]
    flat = [x.reshape((-1,) + x.shape[-2:]) for x in (a,) + rest]
    outs = [fn(*(x[i] for x in flat)) for i in range(flat[0].shape[0])]
    if not isinstance(outs[0], (tuple, list)):
        return xp.stack(outs).reshape(batch + outs[0].shape) if outs else None
    return [xp.stack(col).reshape(batch + col[0].shape) for col in zip(*outs)]


def _batched(xp, fn, a):
    """fn(a) on the whole batch; matrix by matrix where the module takes only one."""
    if a.ndim <= 2:
        return fn(a)
    try:
        return fn(a)
    except _NOT_BATCHED:
        return _per_matrix(xp, fn, a)


def cholesky(xp, a):
    if a.size == 0:
        return xp.zeros(a.shape, a.dtype)

    def one(m):
        try:
            with _raising(xp):
                return xp.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            return xp.full(m.shape, np.nan, m.dtype)
    try:
        with _raising(xp):
            out = _batched(xp, xp.linalg.cholesky, a)
    except np.linalg.LinAlgError:   # one matrix failed: NaN for that one only
        out = one(a) if a.ndim == 2 else _per_matrix(xp, one, a)
    return out.astype(a.dtype, copy=False)


def qr(xp, a, *, full_matrices):
    mode = "complete" if full_matrices else "reduced"
    q, r = _batched(xp, lambda m: xp.linalg.qr(m, mode=mode), a)
    return [q.astype(a.dtype, copy=False), r.astype(a.dtype, copy=False)]


def eigh(xp, a, *, lower):
    w, v = _batched(xp, lambda m: xp.linalg.eigh(m, UPLO="L" if lower else "U"), a)
    real = np.dtype(a.dtype.char.lower()) if a.dtype.kind == "c" else a.dtype
    return [v.astype(a.dtype, copy=False), w.astype(real, copy=False)]


def svd(xp, a, *, full_matrices, compute_uv):
    real = np.dtype(a.dtype.char.lower()) if a.dtype.kind == "c" else a.dtype
    if not compute_uv:
        return [_batched(xp, lambda m: xp.linalg.svd(m, compute_uv=False), a).astype(real, copy=False)]
    u, s, vh = _batched(xp, lambda m: xp.linalg.svd(m, full_matrices=full_matrices), a)
    return [s.astype(real, copy=False), u.astype(a.dtype, copy=False), vh.astype(a.dtype, copy=False)]


def triangular_solve(xp, a, b, **params):
    """op(a) x = b (or x op(a) = b): the reference's reduction to a left-side solve,
    here matrix by matrix (cupyx's solve_triangular takes one); a zero pivot that
    the routine refuses is substituted, as the reference does, and otherwise gives
    IEEE inf/NaN (the whole batch substituted then, as the reference's)."""
    sl = _scipy_linalg(xp)

    def solve(tri, rhs, lower, unit_diagonal):   # (a and b have equal batch dims)
        def one(t, r):
            return sl.solve_triangular(t, r, lower=lower, unit_diagonal=unit_diagonal, check_finite=False)
        try:
            return one(tri, rhs) if tri.ndim == 2 else _per_matrix(xp, one, tri, rhs)
        except np.linalg.LinAlgError:
            return _ref.substitute(tri, rhs, lower, unit_diagonal, xp)
    return _ref.triangular_solve_with(solve, a, b, xp=xp, **params)


def lu_on_device(eq) -> bool:
    """The LU steps `lu` serves: real float32/float64 matrices."""
    return np.dtype(eq.inputs[0].aval.dtype) in (np.float32, np.float64)


def lu(xp, a):
    """[lu, pivots (int32), permutation (int32)] as the reference's (LAPACK getrf)."""
    m, n = a.shape[-2:]
    k = min(m, n)
    if a.size == 0:
        piv = xp.broadcast_to(xp.arange(k, dtype=np.int32), a.shape[:-2] + (k,)).copy()
        return [xp.zeros(a.shape, a.dtype), piv, _ref._pivots_to_permutation(piv, m, xp)]
    sl = _scipy_linalg(xp)

    def one(mat):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # singular: U has a zero pivot
            f, p = sl.lu_factor(mat, check_finite=False)
        return f, p.astype(np.int32)
    f, piv = one(a) if a.ndim == 2 else _per_matrix(xp, one, a)
    if xp is not np and bool(xp.isnan(f).any() & ~xp.isnan(a).any()):
        # cuSOLVER's singular matrices: the reference's zeros, computed on the host
        return [xp.asarray(r) for r in _ref.lu_p.impl(a.get())]
    return [f.astype(a.dtype, copy=False), piv, _ref._pivots_to_permutation(piv, m, xp)]
