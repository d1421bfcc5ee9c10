"""`ember.lax`: thin wrappers that bind one primitive each, JAX-lax style.

No promotion and no implicit broadcasting beyond rank-0 operands: that is
`ember.numpy`'s job.  Use this layer to write new composites.

Example:
    >>> import ember.numpy as enp
    >>> from ember import lax
    >>> lax.add(enp.ones(2), enp.ones(2)).tolist()
    [2.0, 2.0]
"""
from .fx.prims.elementwise import *  # noqa: F401,F403
from .fx.prims.elementwise import (abs, add, max, min, pow, round, complex)  # noqa: F401
from .fx.prims.convert import bitcast_convert_type, convert_element_type  # noqa: F401
from .fx.prims.shape import *  # noqa: F401,F403
from .fx.prims.reduce import *  # noqa: F401,F403
