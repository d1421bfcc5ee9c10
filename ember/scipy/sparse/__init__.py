"""`ember.scipy.sparse`: matrix-free iterative solvers (`linalg.cg`, `linalg.gmres`).

Example:
    >>> import ember.numpy as enp
    >>> from ember.scipy.sparse.linalg import cg
    >>> x, info = cg(enp.asarray([[2.0, 0.0], [0.0, 4.0]]), enp.asarray([2.0, 4.0]))
    >>> [round(v, 5) for v in x.tolist()]
    [1.0, 1.0]
"""
from . import linalg  # noqa: F401
