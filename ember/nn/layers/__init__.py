"""The layer families of `ember.nn` (re-exported from `ember.nn`)."""
from .activation import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .container import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .embedding import *  # noqa: F401,F403
from .fold import *  # noqa: F401,F403
from .lazy import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .recurrent import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .vision import *  # noqa: F401,F403

from . import (activation as _a, attention as _at, container as _c, conv as _cv, dropout as _d,  # noqa: E402
               embedding as _e, fold as _f, lazy as _lz, linear as _l, normalization as _n,
               padding as _pd, pooling as _p, recurrent as _r, transformer as _t, vision as _v)

__all__ = sorted({n for m in (_a, _at, _c, _cv, _d, _e, _f, _lz, _l, _n, _pd, _p, _r, _t, _v) for n in m.__all__})
