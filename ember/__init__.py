"""ember: a functional, JAX-style array framework.

Pure functions over immutable arrays, transformed by `grad`, `jvp`, `vjp`,
`vmap`, `jit` and friends, traced into a printable primitive IR and compiled
to native code.

Example:
    >>> import ember, ember.numpy as enp
    >>> round(float(ember.grad(lambda x: enp.sin(x) * x)(1.0)), 4)
    1.3818
"""
__version__ = "0.1.0"

from . import config, dtypes, tree, tree_util  # noqa: F401
from .default_dtype import default_float, get_default_dtype, set_default_dtype  # noqa: F401
from .fx import prims as _prims  # noqa: F401  (registers every primitive)
from .array import Array  # noqa: F401
from .fx.core import ConcretizationError, UnexpectedTracerError  # noqa: F401
from .fx.staging import ShapeDtypeStruct  # noqa: F401
from .api_device import default_device, device_get, device_put, devices  # noqa: F401
from .api_device import (block_until_ready, default_backend, device_count, local_device_count,  # noqa: F401
                         local_devices, process_count, process_index)

# transforms
from .transforms.graph_api import make_graph, make_jaxpr  # noqa: F401
from .transforms.jvp import jvp  # noqa: F401
from .transforms.linearize import linearize  # noqa: F401
from .transforms.transpose import linear_transpose  # noqa: F401
from .transforms.vjp import grad, value_and_grad, vjp  # noqa: F401
from .transforms.batching import vmap  # noqa: F401
from .transforms.jit import disable_jit, jit  # noqa: F401
from .transforms.jacobians import hessian, jacfwd, jacobian, jacrev  # noqa: F401
from .transforms.control_flow import cond, fori_loop, scan, switch, while_loop  # noqa: F401
from .transforms.control_flow import map  # noqa: F401,A004
from .transforms.custom_derivatives import custom_jvp, custom_vjp  # noqa: F401
from .transforms.custom_gradient import custom_gradient  # noqa: F401
from .transforms.checkpoint import (checkpoint, checkpoint_name, dots_saveable,  # noqa: F401
                                    everything_saveable, nothing_saveable, remat,
                                    save_only_these_names, saved_residuals)
from .transforms.misc import eval_shape, stop_gradient  # noqa: F401
from .transforms.pure_callback import pure_callback  # noqa: F401
from .transforms.closure import closure_convert  # noqa: F401
from .transforms.jet import jet  # noqa: F401
from .transforms import taylor  # noqa: F401  (ember.taylor.derivatives)
from .transforms.taylor import hvp, laplacian  # noqa: F401

# libraries on top
from . import autograd, testing  # noqa: F401,E402
from . import flatten_util  # noqa: F401,E402
from . import scipy  # noqa: F401,E402
from .serialization import load, save  # noqa: F401,E402
from . import nn, random  # noqa: F401,E402
from .numpy._creation import from_dlpack  # noqa: F401,E402  (DLPack producers, CPU or GPU)
from . import amp, distributed  # noqa: F401,E402  (mpi4py is imported only by distributed.init)
from . import export  # noqa: F401,E402
from . import debug, profiler  # noqa: F401,E402  (ember.debug.print, callbacks; ember.profiler.trace)
