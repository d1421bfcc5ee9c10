"""`ember.nn`: a PyTorch-shaped, stateful shim on ember's functional core.

- `Module` (parameters, buffers, submodules registered by attribute assignment),
  `functional_call` (run a module with other state swapped in, returns updated
  buffers; safe under grad/vmap/jit), `value_and_grad`, `TrainStep`/`compile_step`;
- layers with PyTorch's names, arguments, weight layouts and initialisation
  (`Linear`, `Conv2d`, `LSTM`, `MultiheadAttention`, `TransformerEncoderLayer`, ...);
- `functional` (stateless ops), losses, `init` (functional initialisers), `utils`.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> model = nn.Sequential(nn.Linear(4, 16), nn.GELU(), nn.Linear(16, 2))
    >>> model(enp.ones((8, 4))).shape
    (8, 2)
    >>> model.num_parameters()
    114
"""
from . import functional  # noqa: F401
from . import init  # noqa: F401
from . import utils  # noqa: F401
from . import hooks  # noqa: F401
from .hooks import (RemovableHandle, register_module_forward_pre_hook,  # noqa: F401
                    register_module_forward_hook, register_module_full_backward_pre_hook,
                    register_module_full_backward_hook, grad_hook)
from .module import (Module, ModuleInitError, Parameter, Buffer, ParameterView, functional_call,  # noqa: F401
                     manual_seed, next_rng_key, rng_scope, IncompatibleKeys, flatten_names,
                     unflatten_names)
from .layers import *  # noqa: F401,F403
from .losses import *  # noqa: F401,F403
from .model_summary import summary, ModelSummary  # noqa: F401
from .train import value_and_grad, TrainStep, compile_step, compile_forward, CompiledForward  # noqa: F401

from . import layers as _layers, losses as _losses  # noqa: E402

__all__ = sorted(set(_layers.__all__) | set(_losses.__all__) | {
    "functional", "init", "utils", "Module", "Parameter", "Buffer", "functional_call", "manual_seed",
    "next_rng_key", "rng_scope", "IncompatibleKeys", "flatten_names", "unflatten_names",
    "value_and_grad", "TrainStep", "compile_step", "compile_forward", "CompiledForward",
    "ModuleInitError", "ParameterView"} | {
    "hooks", "RemovableHandle", "register_module_forward_pre_hook", "register_module_forward_hook",
    "register_module_full_backward_pre_hook", "register_module_full_backward_hook", "grad_hook", "summary",
    "ModelSummary"})
