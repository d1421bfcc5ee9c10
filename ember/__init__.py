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
from .transforms.jvp import jvp  # noqa: F401,E402
from .transforms.linearize import linearize  # noqa: F401,E402
from .transforms.transpose import linear_transpose  # noqa: F401,E402
from .transforms.vjp import vjp, grad, value_and_grad  # noqa: F401,E402
from .transforms.batching import vmap  # noqa: F401,E402
from .transforms.jit import jit  # noqa: F401,E402
from . import config  # noqa: F401,E402
from . import testing  # noqa: F401,E402
from .transforms.jacobians import jacfwd, jacrev, hessian  # noqa: F401,E402
from .transforms.control_flow import cond, switch, scan, while_loop, fori_loop  # noqa: F401,E402
from .transforms.control_flow import map  # noqa: F401,E402,A004
from .transforms.custom_derivatives import custom_jvp, custom_vjp  # noqa: F401,E402
from .transforms.checkpoint import (checkpoint, remat, checkpoint_name, saved_residuals,  # noqa: F401,E402
                                    nothing_saveable, everything_saveable, dots_saveable,
                                    save_only_these_names)
from .transforms.misc import stop_gradient, eval_shape  # noqa: F401,E402
from .api_device import devices, device_put, default_device  # noqa: F401,E402
from .serialization import save, load  # noqa: E402,F401
from . import random, nn  # noqa: E402,F401
