"""Linear solves, inverses and determinants with SciPy's argument conventions
(`solve_triangular`, `cho_factor`/`cho_solve`, `lu_factor`/`lu_solve`, `solve`, `inv`,
`det`), as thin wrappers over ember's linalg primitives.  `overwrite_*`,
`check_finite` and `debug` are accepted and ignored, as in JAX: arrays are immutable
and failures give inf/NaN instead of raising."""
from __future__ import annotations

import numpy as np

from ... import numpy as enp
from ...fx.core import Tracer
from ...fx.prims import linalg as _la
from ...fx.prims.linalg import _pivots_to_permutation
from ...transforms.control_flow import fori_loop
from ...numpy import linalg as _nla
from ...numpy import _core as _core
from .decompositions import cholesky
from ._util import (back, broadcast_batch, check_matrix, check_square, inexact, parse_trans,
                    shape_of, unvector)

__all__ = ["cho_factor", "cho_solve", "det", "inv", "lu_factor", "lu_solve", "solve",
           "solve_triangular"]


def _triangular(name, a, b, trans, lower, unit_diagonal):
    (a, b), out = inexact(name, a, b)
    check_square(name, "a", a)
    a, b, vec = broadcast_batch(name, a, b, "ndim")
    transpose_a, conjugate_a = parse_trans(name, trans)
    x = _la.triangular_solve(a, b, left_side=True, lower=bool(lower), transpose_a=transpose_a,
                             conjugate_a=conjugate_a, unit_diagonal=bool(unit_diagonal))
    return back(unvector(x, vec), out)


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     debug=None, check_finite=True):
    """Solve op(a) x = b for triangular `a` (scipy.linalg.solve_triangular): op is the
    identity (`trans` 0 or 'N'), the transpose (1, 'T') or the conjugate transpose (2,
    'C').  Only the `lower` (default: upper) triangle of `a` is read, and with
    `unit_diagonal` its diagonal is taken to be ones.  `a` is [..., N, N]; `b` is
    [..., N] (one dim fewer than `a`: vectors) or [..., N, K], batch dims broadcasting.

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import solve_triangular
        >>> a = np.array([[2.0, 0.0], [1.0, 1.0]])
        >>> solve_triangular(a, np.array([2.0, 3.0]), lower=True).tolist()
        [1.0, 2.0]
    """
    return _triangular("solve_triangular", a, b, trans, lower, unit_diagonal)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """Cholesky factorization for `cho_solve` (scipy.linalg.cho_factor): returns
    (c, lower) with c the `lower` (default: upper) factor.  Unlike SciPy, the other
    triangle of c holds zeros, not whatever was in `a`.

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import cho_factor
        >>> c, low = cho_factor(np.array([[4.0, 2.0], [2.0, 5.0]]))
        >>> c.tolist(), low
        ([[2.0, 1.0], [0.0, 2.0]], False)
    """
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """Solve a x = b given `cho_factor(a)` = (c, lower) (scipy.linalg.cho_solve).  `b`
    is [..., N] (one dim fewer than c) or [..., N, K].

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import cho_factor, cho_solve
        >>> a = np.array([[4.0, 2.0], [2.0, 5.0]])
        >>> np.round(np.asarray(cho_solve(cho_factor(a), np.array([6.0, 7.0]))), 6).tolist()
        [1.0, 1.0]
    """
    try:
        c, lower = c_and_lower
    except (TypeError, ValueError):
        raise TypeError("cho_solve: c_and_lower must be the pair (c, lower) that cho_factor "
                        "returns") from None
    name = "cho_solve"
    (c, b), out = inexact(name, c, b)
    check_square(name, "c", c)
    c, b, vec = broadcast_batch(name, c, b, "ndim")
    lower = bool(lower)
    # a = L L^H (or U^H U): one solve by the factor's (conjugate) transpose, one by the factor.
    y = _la.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=not lower,
                             conjugate_a=not lower)
    x = _la.triangular_solve(c, y, left_side=True, lower=lower, transpose_a=lower,
                             conjugate_a=lower)
    return back(unvector(x, vec), out)


def lu_factor(a, overwrite_a=False, check_finite=True):
    """LU factorization with partial pivoting for `lu_solve` (scipy.linalg.lu_factor):
    returns (lu, piv) with L (unit diagonal, below) and U (on and above the diagonal)
    in `lu`, and row i swapped with row piv[i] (int32, 0-based).

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import lu_factor
        >>> lu, piv = lu_factor(np.array([[1.0, 2.0], [3.0, 4.0]]))
        >>> piv.tolist()
        [1, 1]
    """
    (a,), out = inexact("lu_factor", a)
    check_matrix("lu_factor", "a", a)
    lu, piv, _ = _la.lu(a)
    return back(lu, out), piv


def pivots_to_permutation(piv, m):
    """The permutation [..., m] that applying the row swaps i <-> piv[..., i] in order
    makes of arange(m), traced (so it works under jit and vmap).

    Example:
        >>> import numpy as np
        >>> pivots_to_permutation(np.array([2, 2, 2], np.int32), 3).tolist()
        [2, 0, 1]
    """
    if not isinstance(piv, Tracer):  # concrete pivots: the reference's host loop
        return _core.asarray(_pivots_to_permutation(np.asarray(piv, np.int32), m))
    batch, k = shape_of(piv)[:-1], shape_of(piv)[-1]
    idx = _core.broadcast_to(_core.asarray(np.arange(m, dtype=np.int32)), batch + (m,))
    piv = piv.astype(np.int32)
    if k == 0 or m == 0:
        return idx

    def swap(i, perm):
        j = enp.sum(enp.where(enp.arange(k, dtype=np.int32) == i, piv, 0), axis=-1, keepdims=True)
        pi = enp.sum(enp.where(idx == i, perm, 0), axis=-1, keepdims=True)
        pj = enp.sum(enp.where(idx == j, perm, 0), axis=-1, keepdims=True)
        return enp.where(idx == i, pj, enp.where(idx == j, pi, perm))

    return fori_loop(0, k, swap, idx)


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """Solve a x = b (`trans` 0/'N'), a^T x = b (1/'T') or a^H x = b (2/'C') given
    `lu_factor(a)` = (lu, piv) (scipy.linalg.lu_solve).  `b` is [..., N] (one dim
    fewer than lu) or [..., N, K].

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import lu_factor, lu_solve
        >>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
        >>> np.round(np.asarray(lu_solve(lu_factor(a), np.array([5.0, 11.0]))), 6).tolist()
        [1.0, 2.0]
    """
    name = "lu_solve"
    try:
        lu, piv = lu_and_piv
    except (TypeError, ValueError):
        raise TypeError("lu_solve: lu_and_piv must be the pair (lu, piv) that lu_factor "
                        "returns") from None
    (lu, b), out = inexact(name, lu, b)
    check_square(name, "lu", lu)
    n = shape_of(lu)[-1]
    piv = _core.asarray(piv)
    if shape_of(piv) != shape_of(lu)[:-1]:
        raise TypeError(f"lu_solve: piv must have shape {shape_of(lu)[:-1]} to match lu of "
                        f"shape {shape_of(lu)}, got shape {shape_of(piv)}")
    transpose_a, conjugate_a = parse_trans(name, trans)
    perm = pivots_to_permutation(piv, n)
    lu, b, vec = broadcast_batch(name, lu, b, "ndim")
    perm = _core.broadcast_to(perm, shape_of(lu)[:-1])
    x = _la.lu_solve(lu, perm, b, trans=2 if conjugate_a else int(transpose_a))
    return back(unvector(x, vec), out)


_ASSUME = {"gen": "gen", "general": "gen", "sym": "gen", "symmetric": "gen", "her": "gen",
           "hermitian": "gen", "pos": "pos", "positive definite": "pos",
           "lower triangular": "lower", "upper triangular": "upper"}


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, debug=False,
          check_finite=True, assume_a="gen"):
    """Solve a x = b for square `a` (scipy.linalg.solve).  `assume_a`: 'gen', 'sym' and
    'her' use LU with partial pivoting on the whole of `a` (as JAX does), 'pos' a
    Cholesky factorization of its `lower` (default: upper) triangle; SciPy's long
    names ('general', 'positive definite', 'lower triangular', ...) are accepted too.
    `b` is a vector [N] when 1-D, else [..., N, K] with batch dims broadcasting.
    A singular `a` gives inf/NaN.

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import solve
        >>> solve(np.array([[2.0, 0.0], [0.0, 4.0]]), np.array([2.0, 2.0])).tolist()
        [1.0, 0.5]
    """
    name = "solve"
    kind = _ASSUME.get(assume_a) if isinstance(assume_a, str) else None
    if kind is None:
        raise ValueError(f"solve: assume_a must be one of 'gen', 'sym', 'her', 'pos' (or "
                         f"SciPy's long names), got {assume_a!r}")
    (a, b), out = inexact(name, a, b)
    check_square(name, "a", a)
    a, b, vec = broadcast_batch(name, a, b, "1d")
    if kind == "pos":
        x = cho_solve(cho_factor(a, lower=lower), b)
    elif kind in ("lower", "upper"):
        x = _la.triangular_solve(a, b, left_side=True, lower=kind == "lower")
    else:
        f, _, perm = _la.lu(a)
        x = _la.lu_solve(f, perm, b)
    return back(unvector(x, vec), out)


def inv(a, overwrite_a=False, check_finite=True):
    """Inverse of square matrices [..., N, N] (scipy.linalg.inv), from an LU
    factorization; a singular matrix gives inf/NaN.

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import inv
        >>> inv(np.array([[2.0, 0.0], [0.0, 4.0]])).tolist()
        [[0.5, 0.0], [0.0, 0.25]]
    """
    (a,), out = inexact("inv", a)
    check_square("inv", "a", a)
    return back(_nla.inv(a), out)


def det(a, overwrite_a=False, check_finite=True):
    """Determinant of square matrices [..., N, N] (scipy.linalg.det), from an LU
    factorization.

    Example:
        >>> import numpy as np
        >>> from ember.scipy.linalg import det
        >>> round(float(det(np.array([[1.0, 2.0], [3.0, 4.0]]))), 6)
        -2.0
    """
    (a,), out = inexact("det", a)
    check_square("det", "a", a)
    return back(_nla.det(a), out)
