"""`ember.scipy.linalg`: SciPy's dense linear algebra (JAX's `jax.scipy.linalg` names
and semantics) as thin wrappers over ember's linalg primitives, so grad, jvp, vmap
and jit apply to every function.

SciPy's conventions are kept where they differ from numpy's: `cholesky` and
`cho_factor` default to the upper factor, `solve_triangular`/`lu_solve` take
`trans` (0/'N', 1/'T', 2/'C'), `lu` returns (p, l, u) with a = p @ l @ u, and
`qr(mode='r')` returns a 1-tuple.  As in JAX, `sqrtm` is always complex and `eigh`
symmetrises its input.  `overwrite_*` and `check_finite` are accepted and ignored.
Integer inputs compute in the default float; failures give inf/NaN instead of
raising.  Not provided: `schur`, `rsf2csf` and the rest of SciPy's
matrix constructors.

Example:
    >>> import numpy as np
    >>> from ember.scipy import linalg
    >>> linalg.cholesky(np.array([[4.0, 2.0], [2.0, 5.0]]), lower=True).tolist()
    [[2.0, 0.0], [1.0, 2.0]]
"""
from .decompositions import cholesky, eigh, eigh_tridiagonal, hessenberg, lu, polar, qr, svd
from .matrix_functions import expm, expm_frechet, sqrtm
from .solves import cho_factor, cho_solve, det, inv, lu_factor, lu_solve, solve, solve_triangular
from .special_matrices import block_diag, circulant, hankel, toeplitz

__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "det", "eigh",
           "eigh_tridiagonal", "expm", "expm_frechet", "hankel", "hessenberg", "inv", "lu",
           "lu_factor", "lu_solve", "polar", "qr", "solve", "solve_triangular", "sqrtm", "svd",
           "toeplitz"]
