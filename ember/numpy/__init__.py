"""`ember.numpy`: the Python array API standard (2024.12) namespace plus the numpy names
users reach for, composed from ember's primitives so every transform applies.

Example:
    >>> import ember.numpy as enp
    >>> enp.sum(enp.arange(4) ** 2).item()
    14
"""
from . import _core, _creation, _elementwise, _indexing, _info, _linear, _manipulation
from . import _reductions, _searching, _sets, _sorting, _utility
from ._core import asarray, array, broadcast_shapes, broadcast_to  # noqa: F401
from ._creation import *  # noqa: F401,F403
from ._elementwise import *  # noqa: F401,F403
from ._indexing import *  # noqa: F401,F403
from ._info import *  # noqa: F401,F403
from ._info import __array_api_version__, __array_namespace_info__  # noqa: F401
from ._scalar_types import ndarray  # noqa: F401
from ._linear import *  # noqa: F401,F403
from ._manipulation import *  # noqa: F401,F403
from ._reductions import *  # noqa: F401,F403
from ._searching import *  # noqa: F401,F403
from ._sets import *  # noqa: F401,F403
from ._sorting import *  # noqa: F401,F403
from ._utility import *  # noqa: F401,F403
# numpy families beyond the array API, one file each
from . import _convolve, _float_parts, _functional, _gradient, _histograms, _polynomial  # noqa
from . import _bits, _index_tricks, _statistics, _windows  # noqa: E402
from ._index_tricks import *  # noqa: F401,F403
from ._bits import *  # noqa: F401,F403
from ._convolve import *  # noqa: F401,F403
from ._float_parts import *  # noqa: F401,F403
from ._functional import *  # noqa: F401,F403
from ._gradient import *  # noqa: F401,F403
from ._histograms import *  # noqa: F401,F403
from ._polynomial import *  # noqa: F401,F403
from ._statistics import *  # noqa: F401,F403
from ._windows import *  # noqa: F401,F403

__all__ = sorted(set(
    ["asarray", "array", "broadcast_shapes", "broadcast_to", "ndarray"]
    + _creation.__all__ + _elementwise.__all__ + _indexing.__all__ + _info.__all__
    + _linear.__all__ + _manipulation.__all__ + _reductions.__all__ + _searching.__all__
    + _sets.__all__ + _sorting.__all__ + _utility.__all__
    + _convolve.__all__ + _float_parts.__all__ + _functional.__all__ + _gradient.__all__
    + _histograms.__all__ + _polynomial.__all__ + _statistics.__all__ + _windows.__all__
    + _bits.__all__ + _index_tricks.__all__))

# Arrays and tracers get their operators from this namespace (the core, which
# defines Tracer, does not import the numpy layer).
import sys as _sys  # noqa: E402

from .. import ops_mixin as _ops_mixin  # noqa: E402
from ..fx.core import Tracer as _Tracer  # noqa: E402

_ops_mixin.install(_sys.modules[__name__], _Tracer)
# concrete Arrays' operators take the memoised eager path first (_eager_memo)
from .. import array as _array  # noqa: E402
from . import _eager_memo  # noqa: E402

_eager_memo.install(_sys.modules[__name__], _array.Array, _ops_mixin.ArrayOps)
del _sys, _ops_mixin, _Tracer, _array

# `linalg` and `fft` are separate modules (other owners); import them when present.
import importlib.util as _ilu  # noqa: E402

for _sub in ("linalg", "fft"):
    if _ilu.find_spec(f"{__name__}.{_sub}") is not None:
        globals()[_sub] = __import__(f"{__name__}.{_sub}", fromlist=[_sub])
del _ilu, _sub
