"""`ember.lax.linalg`: the linear-algebra primitives' wrappers (JAX `lax.linalg` names).

Example:
    >>> import numpy as np
    >>> from ember import lax
    >>> lax.linalg.cholesky(np.eye(2)).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
"""
from .fx.prims.linalg import (cholesky, eig, eigh, lu, lu_solve, permutation_matrix, qr,  # noqa: F401
                              svd, symmetrize, triangular_solve)
from .fx.prims.linalg import (cholesky_p, eig_p, eigh_p, lu_p, qr_p, svd_p,  # noqa: F401
                              triangular_solve_p)
