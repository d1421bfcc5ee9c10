"""`ember.nn.functional`: stateless layers, activations and losses (PyTorch's
`torch.nn.functional` names and arguments), composed from `ember.numpy` and
`ember.lax` so that grad, vmap and jit apply to all of them.

Example:
    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.softmax(enp.asarray([0.0, 0.0]), dim=-1).tolist()
    [0.5, 0.5]
"""
from .activation import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .embedding import *  # noqa: F401,F403
from .vision import *  # noqa: F401,F403
from .sampling import *  # noqa: F401,F403
from .ctc import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .loss_margin import *  # noqa: F401,F403
from .loss_linear import *  # noqa: F401,F403
from .recurrent import *  # noqa: F401,F403
import importlib as _il  # noqa: E402

# Several submodules share their name with a function they define (linear, conv, dropout,
# ...), so the package attribute is the function; read the modules from importlib.
__all__ = sorted({name for _m in ("activation", "linear", "conv", "pooling", "normalization",
                                  "dropout", "embedding", "vision", "attention", "loss",
                                  "loss_margin", "loss_linear", "recurrent", "sampling", "ctc")
                  for name in _il.import_module(f"{__name__}.{_m}").__all__})
del _il
