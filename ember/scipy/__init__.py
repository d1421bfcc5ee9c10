"""`ember.scipy`: the parts of SciPy that JAX users reach for (`special`, `stats`, `linalg`,
`sparse.linalg`, `optimize`), composed from ember primitives so every transform applies.

Example:
    >>> import ember.scipy.special as sps
    >>> float(sps.xlogy(0.0, 0.0))
    0.0
"""
from . import linalg, optimize, sparse, special, stats  # noqa: F401
