"""`ember.numpy.linalg`: the array API linear-algebra extension (plus numpy's `norm`,
`lstsq`, `eig`, `eigvals` and `cond`), composed from ember's linalg primitives.

Everything here is a composite over primitives, so it differentiates, batches
and stages like any other ember function.  Matrix arguments are [..., M, N] and
batch over the leading dims.  Integer inputs compute in float32 (the default
float) and float16/bfloat16 inputs compute in float32 and round back.  Unlike
numpy, failures do not raise: a matrix that is not positive definite gives
NaNs from `cholesky`, a singular one gives inf/NaN from `solve`/`inv`.

Example:
    >>> import numpy as np, ember.numpy as enp
    >>> enp.linalg.det(enp.asarray([[1.0, 2.0], [3.0, 4.0]])).round(4).item()
    -2.0
"""
from __future__ import annotations

import math
import operator
from typing import NamedTuple

import numpy as np

from .. import dtypes as _dt
from ..array import Array
from ..fx.core import Tracer, const, get_aval, shape_error
from ..fx.prims import contraction as _dot
from ..fx.prims import convert as _cv
from ..fx.prims import elementwise as _ew
from ..fx.prims import linalg as _la
from ..fx.prims import reduce as _red
from ..fx.prims import shape as _sh
from ._core import asarray, broadcast_shapes, broadcast_to
from ._util import canonicalize_axis, check_dtype
from ..fx.spelling import user_str

__all__ = [
    "EigResult",
    "EighResult",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "cholesky",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "lstsq",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "norm",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "tensorinv",
    "tensorsolve",
    "trace",
    "vecdot",
    "vector_norm",
]


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class EigResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    Q: object
    R: object


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


# --- helpers -----------------------------------------------------------------------------

def _arr(x):
    return x if isinstance(x, (Array, Tracer)) else asarray(x)


def _axis(axis, ndim, op):
    return canonicalize_axis(axis, ndim, op)


def _inexact_dtype(d):
    """The dtype linalg computes in for an input dtype, and the dtype results return in."""
    if not _dt.is_inexact(d):
        return _dt.default_float, _dt.default_float
    if d in (_dt.float16, _dt.bfloat16):
        return _dt.float32, d
    return d, d


def _matrix_input(x, op, square=False):
    """(x converted to a LAPACK dtype, the dtype to return results in)."""
    x = _arr(x)
    a = get_aval(x)
    if a.ndim < 2:
        raise shape_error(op, f"expected an array of rank >= 2 (a stack of matrices), got {user_str(a)}")
    if square and a.shape[-1] != a.shape[-2]:
        raise shape_error(op, f"expected square matrices in the last two dims, got {user_str(a)}")
    compute, out = _inexact_dtype(a.dtype)
    return _cv.convert_element_type(x, compute), out


def _back(x, out_dtype):
    """Round results computed in float32 back to a half-precision input dtype."""
    d = get_aval(x).dtype
    if out_dtype in (_dt.float16, _dt.bfloat16) and _dt.kind(d) == "f" and d != out_dtype:
        return _cv.convert_element_type(x, out_dtype)
    return x


def _promote_dtypes(op, *xs):
    xs = [_arr(x) for x in xs]
    avals = [get_aval(x) for x in xs]
    dtype, _ = _dt.promote([a.dtype for a in avals], [a.weak_type for a in avals])
    return [_cv.convert_element_type(x, dtype) for x in xs], dtype


def _conj(x):
    return _ew.conj(x) if _dt.kind(get_aval(x).dtype) == "c" else x


def _mT(x):
    nd = get_aval(x).ndim
    return _sh.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _H(x):
    return _conj(_mT(x))


def _bmm(a, b):
    """Batched matmul with equal batch dims."""
    nd = get_aval(a).ndim
    batch = tuple(range(nd - 2))
    return _dot.dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)))


def _eye(n, dtype, batch=()):
    e = np.eye(n, dtype=dtype)
    if not batch:
        return asarray(e)
    return _sh.broadcast_in_dim(e, tuple(batch) + (n, n), (len(batch), len(batch) + 1))


def _abs(x):
    return _ew.abs(x) if _dt.kind(get_aval(x).dtype) != "b" else x


def _sum(x, axes):
    nd = get_aval(x).ndim
    return _red.reduce_sum(x, tuple(a % nd for a in axes))


def _keepdims(x, shape, axes):
    """Reshape a reduction result back to rank len(shape) with size-1 reduced axes."""
    new = tuple(1 if i in axes else s for i, s in enumerate(shape))
    return _sh.reshape(x, new)


def _eps(dtype):
    return float(np.finfo(_dt.real_dtype(dtype)).eps)


# --- products ------------------------------------------------------------------------------

def matmul(x1, x2, /):
    """Matrix product with numpy's rules (1-D operands are promoted to matrices,
    batch dims broadcast).

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.matmul(enp.asarray(np.ones((2, 3))), enp.asarray(np.ones(3))).tolist()
        [3.0, 3.0]
    """
    (a, b), _ = _promote_dtypes("matmul", x1, x2)
    aa, ba = get_aval(a), get_aval(b)
    if aa.ndim == 0 or ba.ndim == 0:
        raise shape_error("matmul", f"operands must be at least 1-D, got {user_str(aa)} and {user_str(ba)} "
                          f"(use multiply for scalars)")
    va, vb = aa.ndim == 1, ba.ndim == 1
    if va:
        a = _sh.reshape(a, (1,) + aa.shape)
    if vb:
        b = _sh.reshape(b, ba.shape + (1,))
    aa, ba = get_aval(a), get_aval(b)
    if aa.shape[-1] != ba.shape[-2]:
        raise shape_error("matmul", f"contracted dims differ: {user_str(get_aval(x1))} @ {user_str(get_aval(x2))}")
    if ba.ndim == 2:
        out = _dot.dot_general(a, b, (((aa.ndim - 1,), (0,)), ((), ())))
    else:
        batch = broadcast_shapes(aa.shape[:-2], ba.shape[:-2], op="matmul")
        a = broadcast_to(a, batch + aa.shape[-2:])
        b = broadcast_to(b, batch + ba.shape[-2:])
        out = _bmm(a, b)
    oa = get_aval(out)
    if va and vb:
        return _sh.reshape(out, oa.shape[:-2])
    if va:
        return _sh.reshape(out, oa.shape[:-2] + oa.shape[-1:])
    if vb:
        return _sh.reshape(out, oa.shape[:-1])
    return out


def matrix_transpose(x, /):
    """Swap the last two axes.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.matrix_transpose(enp.asarray(np.ones((2, 3)))).shape
        (3, 2)
    """
    x = _arr(x)
    if get_aval(x).ndim < 2:
        raise shape_error("matrix_transpose", f"expected rank >= 2, got {user_str(get_aval(x))}")
    return _mT(x)


def tensordot(x1, x2, /, *, axes=2):
    """Contract the last `axes` dims of x1 with the first of x2, or the given
    pair of axis sequences.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.tensordot(enp.asarray(np.ones((2, 3))), enp.asarray(np.ones((3, 4))), axes=1).shape
        (2, 4)
    """
    (a, b), _ = _promote_dtypes("tensordot", x1, x2)
    na, nb = get_aval(a).ndim, get_aval(b).ndim
    if isinstance(axes, int):
        if axes < 0 or axes > min(na, nb):
            raise ValueError(f"tensordot: axes={axes} is out of range for ranks {na} and {nb}")
        ca, cb = tuple(range(na - axes, na)), tuple(range(axes))
    else:
        ca, cb = axes
        ca = (ca,) if isinstance(ca, int) else tuple(ca)
        cb = (cb,) if isinstance(cb, int) else tuple(cb)
        if len(ca) != len(cb):
            raise ValueError(f"tensordot: axes {axes} must pair up")
        ca = tuple(_axis(c, na, "tensordot") for c in ca)
        cb = tuple(_axis(c, nb, "tensordot") for c in cb)
    return _dot.dot_general(a, b, ((ca, cb), ((), ())))


def vecdot(x1, x2, /, *, axis=-1):
    """sum(conj(x1) * x2) over `axis`, broadcasting the other dims.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.vecdot(enp.asarray([1.0, 2.0]), enp.asarray([3.0, 4.0])).item()
        11.0
    """
    (a, b), _ = _promote_dtypes("vecdot", x1, x2)
    shape = broadcast_shapes(get_aval(a).shape, get_aval(b).shape, op="vecdot")
    if not shape:
        raise shape_error("vecdot", "operands must be at least 1-D")
    ax = _axis(axis, len(shape), "vecdot")
    a, b = broadcast_to(a, shape), broadcast_to(b, shape)
    if get_aval(a).shape[ax] != get_aval(b).shape[ax]:
        raise shape_error("vecdot", f"sizes along axis {axis} differ")
    return _red.reduce_sum(_ew.mul(_conj(a), b), (ax,))


def outer(x1, x2, /):
    """Outer product of two 1-D arrays.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.outer(enp.asarray([1, 2]), enp.asarray([3, 4, 5])).shape
        (2, 3)
    """
    (a, b), _ = _promote_dtypes("outer", x1, x2)
    aa, ba = get_aval(a), get_aval(b)
    if aa.ndim != 1 or ba.ndim != 1:
        raise shape_error("outer", f"operands must be 1-D, got {user_str(aa)} and {user_str(ba)}")
    shape = aa.shape + ba.shape
    return _ew.mul(_sh.broadcast_in_dim(a, shape, (0,)), _sh.broadcast_in_dim(b, shape, (1,)))


def cross(x1, x2, /, *, axis=-1):
    """Cross product of 3-element vectors along `axis` (other dims broadcast).

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.cross(enp.asarray([1.0, 0, 0]), enp.asarray([0.0, 1, 0])).tolist()
        [0.0, 0.0, 1.0]
    """
    (a, b), _ = _promote_dtypes("cross", x1, x2)
    shape = broadcast_shapes(get_aval(a).shape, get_aval(b).shape, op="cross")
    if not shape:
        raise shape_error("cross", "operands must be at least 1-D")
    ax = _axis(axis, len(shape), "cross")
    a, b = broadcast_to(a, shape), broadcast_to(b, shape)
    if shape[ax] != 3:
        raise shape_error("cross", f"vectors along axis {axis} must have 3 elements, got "
                          f"{shape[ax]}")
    ca = [_sh.index_in_dim(a, i, ax, keepdims=True) for i in range(3)]
    cb = [_sh.index_in_dim(b, i, ax, keepdims=True) for i in range(3)]
    parts = [_ew.sub(_ew.mul(ca[(i + 1) % 3], cb[(i + 2) % 3]),
                     _ew.mul(ca[(i + 2) % 3], cb[(i + 1) % 3])) for i in range(3)]
    return _sh.concatenate(parts, ax)


def diagonal(x, /, *, offset=0):
    """The `offset` diagonal of the last two dims, shape [..., k].

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.diagonal(enp.asarray([[1, 2], [3, 4]])).tolist()
        [1, 4]
    """
    x = _arr(x)
    a = get_aval(x)
    if a.ndim < 2:
        raise shape_error("diagonal", f"expected rank >= 2, got {user_str(a)}")
    offset = operator.index(offset)
    m, n = a.shape[-2:]
    length = max(0, min(m, n - offset) if offset >= 0 else min(m + offset, n))
    batch = a.shape[:-2]
    flat = _sh.reshape(x, batch + (m * n,))
    # Entry (i, i + offset) sits at flat index offset + i * (n + 1).
    start = offset if offset >= 0 else -offset * n
    if length == 0:
        start = 0
    limit = start + (length - 1) * (n + 1) + 1 if length else 0
    nb = len(batch)
    return _sh.slice(flat, (0,) * nb + (start,), batch + (limit,), (1,) * nb + (n + 1,))


def trace(x, /, *, offset=0, dtype=None):
    """Sum of the `offset` diagonal of the last two dims.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.trace(enp.asarray([[1, 2], [3, 4]])).item()
        5
    """
    from ._reductions import sum as _sum
    check_dtype("trace", x, "numeric")
    # the array API's sum dtype rule: small integers widen to the default integer
    return _sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


# --- factorizations -----------------------------------------------------------------------

def cholesky(x, /, *, upper=False):
    """Cholesky factor of Hermitian positive-definite matrices: lower L with
    x = L L^H (or upper U = L^H with x = U^H U).  The input is symmetrised first;
    a matrix that is not positive definite gives NaNs.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.cholesky(enp.asarray([[4.0, 2.0], [2.0, 5.0]])).tolist()
        [[2.0, 0.0], [1.0, 2.0]]
    """
    x, out = _matrix_input(x, "cholesky", square=True)
    L = _la.cholesky(x)
    return _back(_H(L) if upper else L, out)


def qr(x, /, *, mode="reduced"):
    """QR decomposition; mode "reduced" (Q [..., M, K]), "complete" (Q [..., M, M]) or
    "r" (R only).

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> q, r = enp.linalg.qr(enp.asarray(np.ones((3, 2))))
        >>> q.shape, r.shape
        ((3, 2), (2, 2))
    """
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    x, out = _matrix_input(x, "qr")
    q, r = _la.qr(x, full_matrices=(mode == "complete"))
    if mode == "r":
        return _back(r, out)
    return QRResult(_back(q, out), _back(r, out))


def eigh(x, /, *, UPLO="L", symmetrize_input=True):
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices.

    The input is symmetrised first, (x + x^H) / 2, unless `symmetrize_input` is
    False; then only the `UPLO` triangle is read, as numpy does.  Derivatives
    assume distinct eigenvalues.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.eigh(enp.asarray([[2.0, 0.0], [0.0, 1.0]])).eigenvalues.tolist()
        [1.0, 2.0]
    """
    if UPLO not in ("L", "U"):
        raise ValueError(f"eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    x, out = _matrix_input(x, "eigh", square=True)
    v, w = _la.eigh(x, lower=(UPLO == "L"), symmetrize_input=symmetrize_input)
    return EighResult(_back(w, out), _back(v, out))


def eigvalsh(x, /, *, UPLO="L", symmetrize_input=True):
    """Eigenvalues (ascending) of Hermitian matrices.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.eigvalsh(enp.asarray(np.eye(2))).tolist()
        [1.0, 1.0]
    """
    return eigh(x, UPLO=UPLO, symmetrize_input=symmetrize_input).eigenvalues


def eig(x, /):
    """Eigenvalues and unit-norm right eigenvectors of general square matrices,
    always complex (unlike numpy, which returns real arrays when it can).

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.eig(enp.asarray([[0.0, 1.0], [-1.0, 0.0]])).eigenvalues.tolist()
        [1j, -1j]
    """
    x, _ = _matrix_input(x, "eig", square=True)
    w, v = _la.eig(x)
    return EigResult(w, v)


def eigvals(x, /):
    """Eigenvalues of general square matrices (complex).

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.eigvals(enp.asarray(np.eye(2))).tolist()
        [(1+0j), (1+0j)]
    """
    x, _ = _matrix_input(x, "eigvals", square=True)
    return _la.eig(x, compute_eigenvectors=False)[0]


def svd(x, /, full_matrices=True, compute_uv=True, hermitian=False):
    """Singular value decomposition x = U diag(S) Vh; S only when not `compute_uv`.
    Derivatives assume distinct non-zero singular values (and full_matrices=False
    for non-square x).

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.svd(enp.asarray(np.eye(2))).S.tolist()
        [1.0, 1.0]
    """
    x, out = _matrix_input(x, "svd")
    if not compute_uv:
        return _back(_la.svd(x, compute_uv=False), out)
    s, u, vh = _la.svd(x, full_matrices=bool(full_matrices))
    return SVDResult(_back(u, out), _back(s, out), _back(vh, out))


def svdvals(x, /):
    """Singular values, descending.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.svdvals(enp.asarray([[3.0, 0.0], [0.0, 4.0]])).tolist()
        [4.0, 3.0]
    """
    return svd(x, compute_uv=False)


# --- determinants, solves, inverses -------------------------------------------------------

def _lu_parts(x):
    """(lu, permutation, the permutation's sign, diag(U)) of square matrices."""
    f, piv, perm = _la.lu(x)
    pa = get_aval(piv)
    k = pa.shape[-1]
    swapped = _ew.ne(piv, _sh.broadcast_in_dim(np.arange(k, dtype=pa.dtype), pa.shape,
                                               (pa.ndim - 1,)))
    nswaps = _red.reduce_sum(_cv.convert_element_type(swapped, _dt.int32), (pa.ndim - 1,))
    odd = _ew.eq(_ew.rem(nswaps, const(_dt.int32, 2)), const(_dt.int32, 1))
    dtype = get_aval(f).dtype
    ones = _sh.broadcast_in_dim(const(dtype, 1), get_aval(odd).shape, ())
    sign = _ew.select_n(odd, ones, _ew.neg(ones))
    return f, perm, sign, diagonal(f)


def det(x, /):
    """Determinant of square matrices (from an LU factorization); its derivative,
    the adjugate, stays finite at singular matrices.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.det(enp.asarray(np.eye(3))).item()
        1.0
    """
    from ._linalg_det import determinant   # it builds on this module's helpers
    x, out = _matrix_input(x, "det", square=True)
    return _back(determinant(x), out)


def slogdet(x, /):
    """Sign (or unit-modulus phase) and log|det| of square matrices.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> s, l = enp.linalg.slogdet(enp.asarray([[0.0, 2.0], [3.0, 0.0]]))
        >>> s.item(), round(l.item(), 5)
        (-1.0, 1.79176)
    """
    x, out = _matrix_input(x, "slogdet", square=True)
    _, _, sign, d = _lu_parts(x)
    nd = get_aval(d).ndim
    dtype = get_aval(d).dtype
    absd = _ew.abs(d)
    logabsdet = _red.reduce_sum(_ew.log(absd), (nd - 1,))
    if _dt.kind(dtype) == "c":
        rd = _dt.real_dtype(dtype)
        zero = _ew.eq(absd, const(rd, 0))
        safe = _ew.select_n(zero, absd, _sh.broadcast_in_dim(const(rd, 1), get_aval(absd).shape, ()))
        unit = _ew.div(d, _ew.complex(safe, const(rd, 0)))
        unit = _ew.select_n(zero, unit, _sh.broadcast_in_dim(const(dtype, 0), get_aval(d).shape, ()))
    else:
        unit = _ew.sign(d)
    sign = _ew.mul(sign, _red.reduce_prod(unit, (nd - 1,)))
    return SlogdetResult(_back(sign, out), _back(logabsdet, out))


def _solve_matrices(a, b):
    """a [..., M, M], b [..., M, K] (batch dims broadcast): x with a x = b."""
    aa, ba = get_aval(a), get_aval(b)
    batch = broadcast_shapes(aa.shape[:-2], ba.shape[:-2], op="solve")
    f, _, perm = _la.lu(a)
    if aa.shape[:-2] != batch:
        f = broadcast_to(f, batch + aa.shape[-2:])
        perm = broadcast_to(perm, batch + aa.shape[-1:])
    b = broadcast_to(b, batch + ba.shape[-2:])
    return _la.lu_solve(f, perm, b)


def solve(x1, x2, /):
    """Solve x1 @ x = x2 for square x1 [..., M, M]; x2 is a vector [M] when 1-D, else
    [..., M, K] (batch dims broadcast).  Singular x1 gives inf/NaN.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.solve(enp.asarray([[2.0, 0.0], [0.0, 4.0]]), enp.asarray([2.0, 2.0])).tolist()
        [1.0, 0.5]
    """
    (a, b), dtype = _promote_dtypes("solve", x1, x2)
    aa = get_aval(a)
    if aa.ndim < 2 or aa.shape[-1] != aa.shape[-2]:
        raise shape_error("solve", f"x1 must be square matrices [..., M, M], got {user_str(aa)}")
    compute, out = _inexact_dtype(dtype)
    a, b = _cv.convert_element_type(a, compute), _cv.convert_element_type(b, compute)
    ba = get_aval(b)
    m = get_aval(a).shape[-1]
    if ba.ndim == 1:
        if ba.shape[0] != m:
            raise shape_error("solve", f"x2 {user_str(ba)} does not match x1 {user_str(get_aval(a))}")
        x = _solve_matrices(a, _sh.reshape(b, (m, 1)))
        xa = get_aval(x)
        return _back(_sh.reshape(x, xa.shape[:-1]), out)
    if ba.shape[-2] != m:
        raise shape_error("solve", f"x2 {user_str(ba)} must have {m} rows to match x1 {user_str(get_aval(a))} "
                          f"(a 1-D x2 is a single vector)")
    return _back(_solve_matrices(a, b), out)


def inv(x, /):
    """Inverse of square matrices (LU with partial pivoting).

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.inv(enp.asarray([[2.0, 0.0], [0.0, 4.0]])).tolist()
        [[0.5, 0.0], [0.0, 0.25]]
    """
    x, out = _matrix_input(x, "inv", square=True)
    a = get_aval(x)
    return _back(_solve_matrices(x, _eye(a.shape[-1], a.dtype, a.shape[:-2])), out)


def matrix_power(x, n, /):
    """x raised to the integer power n by repeated squaring (n < 0 inverts first).

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.matrix_power(enp.asarray([[1, 1], [0, 1]]), 3).tolist()
        [[1, 3], [0, 1]]
    """
    x = _arr(x)
    a = get_aval(x)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise shape_error("matrix_power", f"expected square matrices, got {user_str(a)}")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"matrix_power: the exponent must be an integer, got {n!r}") from None
    if n == 0:
        return _eye(a.shape[-1], a.dtype, a.shape[:-2])
    if n < 0:
        x = inv(x)
        n = -n
    result = None
    base = x
    while n:
        if n & 1:
            result = base if result is None else _bmm(result, base)
        n >>= 1
        if n:
            base = _bmm(base, base)
    return result


def pinv(x, /, rcond=None, hermitian=False, *, rtol=None):
    """Moore-Penrose pseudo-inverse from the SVD; singular values below
    rtol * max(S) are dropped (default rtol = max(M, N) * eps; `rcond` is numpy's
    name for it).  Derivatives assume distinct singular values.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.pinv(enp.asarray([[2.0, 0.0], [0.0, 0.0]])).tolist()
        [[0.5, 0.0], [0.0, 0.0]]
    """
    x, out = _matrix_input(x, "pinv")
    a = get_aval(x)
    m, n = a.shape[-2:]
    if rtol is None:
        rtol = rcond
    s, u, vh = _la.svd(x, full_matrices=False)
    s_inv = _inverse_above(s, _cutoff(s, rtol, m, n))
    v = _H(vh)
    vs = _ew.mul(v, _sh.broadcast_in_dim(_cv.convert_element_type(s_inv, a.dtype), get_aval(v).shape,
                                        tuple(range(a.ndim - 2)) + (a.ndim - 1,)))
    return _back(_bmm(vs, _H(u)), out)


def _cutoff(s, rtol, m, n):
    """rtol * max(s) per matrix, broadcast like s."""
    sa = get_aval(s)
    rd = sa.dtype
    if rtol is None:
        rtol = max(m, n) * _eps(rd)
    if sa.shape[-1] == 0:
        return _sh.broadcast_in_dim(const(rd, 0), sa.shape, ())
    smax = _red.reduce_max(s, (sa.ndim - 1,))
    if not isinstance(rtol, (Array, Tracer)) and np.ndim(rtol) == 0:
        cut = _ew.mul(smax, const(rd, rtol))
    else:
        r = _cv.convert_element_type(_arr(rtol), rd)
        cut = _ew.mul(smax, broadcast_to(r, get_aval(smax).shape))
    return _sh.broadcast_in_dim(cut, sa.shape, tuple(range(sa.ndim - 1)))


def _inverse_above(s, cutoff):
    """1/s where s > cutoff, else 0 (without dividing by zero anywhere)."""
    sa = get_aval(s)
    keep = _ew.gt(s, cutoff)
    one = _sh.broadcast_in_dim(const(sa.dtype, 1), sa.shape, ())
    zero = _sh.broadcast_in_dim(const(sa.dtype, 0), sa.shape, ())
    safe = _ew.select_n(keep, one, s)
    return _ew.select_n(keep, zero, _ew.div(one, safe))


def matrix_rank(x, /, tol=None, hermitian=False, *, rtol=None):
    """Number of singular values above max(S) * rtol (default max(M, N) * eps), or
    above the absolute `tol` (numpy's argument); int32.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.matrix_rank(enp.asarray([[1.0, 2.0], [2.0, 4.0]])).item()
        1
    """
    x, _ = _matrix_input(x, "matrix_rank")
    m, n = get_aval(x).shape[-2:]
    s = _la.svd(x, compute_uv=False)
    sa = get_aval(s)
    if tol is not None:
        t = _cv.convert_element_type(_arr(tol), sa.dtype)
        ta = get_aval(t)
        cut = _sh.broadcast_in_dim(broadcast_to(t, sa.shape[:-1]), sa.shape,
                                   tuple(range(sa.ndim - 1))) if ta.ndim else \
            _sh.broadcast_in_dim(t, sa.shape, ())
    else:
        cut = _cutoff(s, rtol, m, n)
    above = _cv.convert_element_type(_ew.gt(s, cut), _dt.int32)
    return _red.reduce_sum(above, (sa.ndim - 1,))


def lstsq(a, b, rcond=None):
    """Least-squares solution of a @ x = b for a [M, N] and b [M] or [M, K], via the SVD.

    Returns (x, residuals, rank, s) like numpy.  Because shapes cannot depend on
    values, residuals (the squared 2-norm of b - a x per column, shape [K] or [1])
    are returned whenever M > N, even when a is rank-deficient (numpy then returns
    an empty array); for M <= N they are empty.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> x, res, rank, s = enp.linalg.lstsq(np.array([[1.0], [1.0]]), np.array([1.0, 3.0]))
        >>> np.round(np.asarray(x), 6).tolist(), np.round(np.asarray(res), 6).tolist(), rank.item()
        ([2.0], [2.0], 1)
    """
    a, out = _matrix_input(a, "lstsq")
    aa = get_aval(a)
    b = _arr(b)
    (a, b), dtype = _promote_dtypes("lstsq", a, b)
    compute, _ = _inexact_dtype(dtype)
    a, b = _cv.convert_element_type(a, compute), _cv.convert_element_type(b, compute)
    aa, ba = get_aval(a), get_aval(b)
    if aa.ndim != 2 or ba.ndim not in (1, 2) or ba.shape[0] != aa.shape[0]:
        raise shape_error("lstsq", f"expected a [M, N] and b [M] or [M, K], got {user_str(aa)} and {user_str(ba)}")
    m, n = aa.shape
    vec = ba.ndim == 1
    b2 = _sh.reshape(b, (m, 1)) if vec else b
    s, u, vh = _la.svd(a, full_matrices=False)
    if rcond is None:
        rcond = max(m, n) * _eps(compute)
    cut = _cutoff(s, rcond, m, n)
    s_inv = _inverse_above(s, cut)
    rank = _red.reduce_sum(_cv.convert_element_type(_ew.gt(s, cut), _dt.int32), (0,))
    uhb = _dot.dot_general(_H(u), b2, (((1,), (0,)), ((), ())))
    k = get_aval(uhb).shape[1]
    scaled = _ew.mul(uhb, _sh.broadcast_in_dim(_cv.convert_element_type(s_inv, compute),
                                              (get_aval(s).shape[0], k), (0,)))
    x = _dot.dot_general(_H(vh), scaled, (((1,), (0,)), ((), ())))
    if m > n:
        r = _ew.sub(b2, _dot.dot_general(a, x, (((1,), (0,)), ((), ()))))
        resid = _red.reduce_sum(_abs_squared(r), (0,))
    else:
        resid = asarray(np.zeros((0,), _dt.real_dtype(compute)))
    if vec:
        x = _sh.reshape(x, (n,))
    return _back(x, out), _back(resid, out), rank, _back(s, out)


# --- norms -------------------------------------------------------------------------------

def _norm_input(x):
    x = _arr(x)
    d = get_aval(x).dtype
    compute, out = _inexact_dtype(d)
    return _cv.convert_element_type(x, compute), out


def _abs_squared(x):
    """|x|^2 as x * x (re^2 + im^2 for complex x): smooth at 0, where abs(x) * abs(x)
    is not to ember's autodiff (abs has derivative sign(0) = 0 there, so the second
    derivative of the product at a zero element came out 0 instead of 2)."""
    if _dt.kind(get_aval(x).dtype) == "c":
        re, im = _ew.real(x), _ew.imag(x)
        return _ew.add(_ew.mul(re, re), _ew.mul(im, im))
    return _ew.mul(x, x)


def _vector_norm_axes(x, axes, ord):
    a = get_aval(x)
    ax = _ew.abs(x)
    rd = get_aval(ax).dtype
    if ord == 2:
        return _ew.sqrt(_red.reduce_sum(_abs_squared(x), axes))
    if ord == 1:
        return _red.reduce_sum(ax, axes)
    if ord == math.inf:
        return _red.reduce_max(ax, axes)
    if ord == -math.inf:
        return _red.reduce_min(ax, axes)
    if ord == 0:
        nz = _ew.ne(x, const(a.dtype, 0))
        return _red.reduce_sum(_cv.convert_element_type(nz, rd), axes)
    if isinstance(ord, str):
        raise ValueError(f"vector_norm: invalid ord {ord!r} for vectors")  # noqa: TRY004 (numpy's)
    p = const(rd, ord)
    if float(ord).is_integer() and ord > 0 and ord % 2 == 0 and _dt.kind(a.dtype) != "c":
        # |x|^p = x^p for even p, smooth at 0 (through abs, derivatives of order p
        # and beyond are lost at zero elements)
        powers = _ew.integer_pow(x, int(ord))
    else:
        powers = _ew.pow(ax, p)
    return _ew.pow(_red.reduce_sum(powers, axes), const(rd, 1.0 / ord))


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """The `ord`-norm of vectors along `axis` (all axes when None): 2, 1, inf, -inf, 0
    (count of non-zeros) or any other real p.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.vector_norm(enp.asarray([3.0, 4.0])).item()
        5.0
    """
    x, out = _norm_input(x)
    a = get_aval(x)
    if axis is None:
        axes = tuple(range(a.ndim))
    elif isinstance(axis, (tuple, list)):
        axes = tuple(sorted(_axis(ax, a.ndim, "vector_norm") for ax in axis))
        if len(set(axes)) != len(axes):
            raise ValueError(f"vector_norm: repeated axis in {axis}")
    else:
        axes = (_axis(axis, a.ndim, "vector_norm"),)
    r = _vector_norm_axes(x, axes, ord)
    if keepdims:
        r = _keepdims(r, a.shape, axes)
    return _back(r, out)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """Matrix norm over the last two dims: "fro", "nuc", 1, -1, 2, -2, inf, -inf.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.matrix_norm(enp.asarray([[3.0, 0.0], [0.0, 4.0]])).item()
        5.0
    """
    x, out = _norm_input(x)
    a = get_aval(x)
    if a.ndim < 2:
        raise shape_error("matrix_norm", f"expected rank >= 2, got {user_str(a)}")
    nd = a.ndim
    if ord in ("fro", None):
        r = _vector_norm_axes(x, (nd - 2, nd - 1), 2)
    elif ord == "nuc":
        r = _red.reduce_sum(_la.svd(_lapack(x), compute_uv=False), (nd - 2,))
    elif ord in (2, -2):
        s = _la.svd(_lapack(x), compute_uv=False)
        r = (_red.reduce_max if ord == 2 else _red.reduce_min)(s, (nd - 2,))
    elif ord in (1, -1):
        cols = _red.reduce_sum(_ew.abs(x), (nd - 2,))
        r = (_red.reduce_max if ord == 1 else _red.reduce_min)(cols, (nd - 2,))
    elif ord in (math.inf, -math.inf):
        rows = _red.reduce_sum(_ew.abs(x), (nd - 1,))
        r = (_red.reduce_max if ord > 0 else _red.reduce_min)(rows, (nd - 2,))
    else:
        raise ValueError(f"matrix_norm: invalid ord {ord!r}; expected 'fro', 'nuc', 1, -1, 2, "
                         f"-2, inf or -inf")
    if keepdims:
        r = _keepdims(r, a.shape, (nd - 2, nd - 1))
    return _back(r, out)


def _lapack(x):
    d = get_aval(x).dtype
    return x if d in (_dt.float32, _dt.float64, _dt.complex64, _dt.complex128) else \
        _cv.convert_element_type(x, _dt.float32)


def norm(x, ord=None, axis=None, keepdims=False):
    """numpy's norm: a vector norm (1-D input, or an int `axis`), a matrix norm (2-D
    input, or a 2-tuple `axis`), or the 2-norm of the flattened array (ord=None,
    axis=None).

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.norm(enp.asarray([[1.0, 2.0], [2.0, 4.0]])).item()
        5.0
    """
    x = _arr(x)
    nd = get_aval(x).ndim
    if axis is None:
        if ord is None:
            return vector_norm(x, axis=None, keepdims=keepdims, ord=2)
        if nd == 1:
            return vector_norm(x, axis=0, keepdims=keepdims, ord=ord)
        if nd == 2:
            return matrix_norm(x, keepdims=keepdims, ord=ord)
        raise ValueError(f"norm: improper number of dimensions ({nd}) for ord={ord!r}; "
                         f"pass axis")
    if isinstance(axis, (tuple, list)) and len(axis) == 1:
        axis = axis[0]
    if not isinstance(axis, (tuple, list)):
        return vector_norm(x, axis=axis, keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axis) != 2:
        raise ValueError(f"norm: axis must be an int or a 2-tuple, got {axis}")
    r0, c0 = (_axis(ax, nd, "norm") for ax in axis)
    if r0 == c0:
        raise ValueError(f"norm: duplicate axes {axis}")
    # Move (rows, cols) to the end, keeping the order given.
    rest = [i for i in range(nd) if i not in (r0, c0)]
    xt = _sh.transpose(x, tuple(rest) + (r0, c0))
    r = matrix_norm(xt, keepdims=False, ord="fro" if ord is None else ord)
    if keepdims:
        shape = get_aval(x).shape
        r = _keepdims(r, shape, (r0, c0))
    return r


def cond(x, p=None):
    """Condition number: s_max / s_min for p in (None, 2), s_min / s_max for -2, else
    norm(x, p) * norm(inv(x), p).

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> enp.linalg.cond(enp.asarray([[2.0, 0.0], [0.0, 1.0]])).item()
        2.0
    """
    x, out = _matrix_input(x, "cond")
    nd = get_aval(x).ndim
    if p in (None, 2, -2):
        s = _la.svd(x, compute_uv=False)
        hi = _red.reduce_max(s, (nd - 2,))
        lo = _red.reduce_min(s, (nd - 2,))
        return _back(_ew.div(hi, lo) if p != -2 else _ew.div(lo, hi), out)
    return _back(_ew.mul(matrix_norm(x, ord=p), matrix_norm(inv(x), ord=p)), out)

from ._multi_dot import multi_dot  # noqa: E402  (its own file: a chain-order planner)

__all__ = __all__ + ["multi_dot"]


def tensorinv(a, ind=2):
    """The inverse of `a` seen as a linear map from its last `ndim - ind` axes to its first
    `ind` axes (numpy's tensorinv): `tensordot(tensorinv(a, ind), a, ind)` is the identity.
    The result has shape `a.shape[ind:] + a.shape[:ind]`.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> a = enp.asarray(np.eye(4).reshape(4, 2, 2) * 2.0)
        >>> enp.linalg.tensorinv(a, ind=1).shape
        (2, 2, 4)
    """
    import math
    import operator
    x = _arr(a)
    shape = get_aval(x).shape
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"tensorinv: ind must be a positive integer, got {ind}")
    rows, cols = math.prod(shape[:ind]), math.prod(shape[ind:])
    if rows != cols:
        raise ValueError(f"tensorinv: the first {ind} axes (product {rows}) and the rest "
                         f"(product {cols}) of {get_aval(x).str_user()} must have equal "
                         f"products, so that the tensor is a square matrix")
    return inv(x.reshape((rows, cols))).reshape(shape[ind:] + shape[:ind])


def tensorsolve(a, b, axes=None):
    """The `x` with `tensordot(a, x, x.ndim) == b` (numpy's tensorsolve): `x` has the shape
    of `a`'s trailing axes after the `b.ndim` leading ones; `axes` first moves those axes of
    `a` to the end.

    Example:
        >>> import numpy as np, ember.numpy as enp
        >>> a = enp.asarray(np.eye(6).reshape(2, 3, 6) * 2.0)
        >>> enp.linalg.tensorsolve(a, enp.ones((2, 3))).shape
        (6,)
    """
    import math
    (x, y), _ = _promote_dtypes("tensorsolve", _arr(a), _arr(b))
    an = get_aval(x).ndim
    if axes is not None:
        order = list(range(an))
        for k in axes:
            k = _axis(k, an, "tensorsolve")
            order.remove(k)
            order.append(k)
        x = x.transpose(tuple(order))
    bn = get_aval(y).ndim
    xshape = get_aval(x).shape[bn:]
    n = math.prod(xshape)
    if math.prod(get_aval(x).shape[:bn]) != n or get_aval(x).shape[:bn] != get_aval(y).shape:
        raise ValueError(f"tensorsolve: a's leading axes must match b's shape and have the "
                         f"product of its remaining axes: got a {get_aval(x).str_user()} and "
                         f"b {get_aval(y).str_user()}")
    return solve(x.reshape((n, n)), y.reshape((n,))).reshape(xshape)
