"""ember: a functional, JAX-style array framework.

Example:
    >>> import ember, ember.numpy as enp
    >>> ember.grad(lambda x: enp.sin(x) * x)(1.0)
"""
__version__ = "0.1.0"

from . import dtypes  # noqa: F401
from .fx import prims as _prims  # noqa: F401  (registers every primitive)
from .array import Array  # noqa: F401
from .fx.core import ConcretizationError, UnexpectedTracerError  # noqa: F401
from .fx.staging import make_graph, ShapeDtypeStruct  # noqa: F401
from . import tree  # noqa: F401
