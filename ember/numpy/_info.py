"""Data types and introspection: dtype objects, constants, isdtype / result_type /
can_cast / finfo / iinfo / astype, and `__array_namespace_info__`.

Example:
    >>> import ember.numpy as enp
    >>> enp.__array_namespace_info__().default_dtypes()["indexing"]
    dtype('int32')
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..array import cpu_device
from ..fx.core import get_aval
from ._core import ensure_array
from ._util import const, device_put

__all__ = [
    "bool", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128", "single", "double",
    "csingle", "cdouble", "float_", "complex_", "int_", "uint", "e", "pi", "inf",
    "nan", "newaxis", "euler_gamma", "isdtype", "result_type", "can_cast", "finfo", "iinfo",
    "astype", "promote_types", "issubdtype", "dtype", "generic", "number", "integer",
    "signedinteger", "unsignedinteger", "inexact", "floating", "complexfloating",
    "__array_namespace_info__", "__array_api_version__",
]

__array_api_version__ = "2024.12"

# dtype names that are also constructors (`enp.float32(1.0)`), as in JAX
from ._scalar_types import ScalarType, bool, bool_  # noqa: E402,A004
from ._scalar_types import int8, int16, int32, int64, uint8, uint16, uint32, uint64  # noqa: E402
from ._scalar_types import float16, bfloat16, float32, float64, complex64, complex128  # noqa
from ._scalar_types import single, double, csingle, cdouble, float_, complex_, int_, uint  # noqa

e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None
euler_gamma = 0.5772156649015329

# numpy's abstract scalar types, for issubdtype(x.dtype, enp.floating) and friends
generic = np.generic
number = np.number
integer = np.integer
signedinteger = np.signedinteger
unsignedinteger = np.unsignedinteger
inexact = np.inexact
floating = np.floating
complexfloating = np.complexfloating


def dtype(obj):
    """The ember dtype for a name, numpy type or dtype (`float` -> float32, `int` -> int32).

    Example:
        >>> import ember.numpy as enp
        >>> enp.dtype("bfloat16").name
        'bfloat16'
    """
    return _dt.canonicalize(obj)


def _dtype_of(x):
    if hasattr(x, "aval"):
        return x.aval.dtype
    if isinstance(x, (np.ndarray, np.generic)):
        return _dt.canonicalize(x.dtype)
    return _dt.canonicalize(x)


def isdtype(dtype, kind):  # noqa: A002
    """Whether `dtype` is of `kind` (an array API kind name, a dtype, or a tuple of them).

    Example:
        >>> import ember.numpy as enp
        >>> enp.isdtype(enp.int8, "integral"), enp.isdtype(enp.float32, ("bool", "numeric"))
        (True, True)
    """
    if isinstance(dtype, ScalarType):
        dtype = dtype.dtype
    if not isinstance(dtype, np.dtype):
        raise TypeError(f"isdtype: expected a dtype, got {type(dtype).__name__}")
    return _dt.isdtype(dtype, kind)


def result_type(*arrays_and_dtypes):
    """The dtype that combining these arrays, dtypes and Python scalars produces.

    Example:
        >>> import ember.numpy as enp
        >>> enp.result_type(enp.int8, enp.uint8), enp.result_type(enp.float32, 1.0)
        (dtype('int16'), dtype('float32'))
    """
    return _dt.result_type(*arrays_and_dtypes)


def promote_types(type1, type2):
    """The promoted dtype of two dtypes.

    Example:
        >>> import ember.numpy as enp
        >>> enp.promote_types("int8", "float32")
        dtype('float32')
    """
    return _dt.result_type(_dt.canonicalize(type1), _dt.canonicalize(type2))


def can_cast(from_, to, /, casting="safe"):
    """Whether `from_` (a dtype or array) converts to `to` under the promotion rules.

    Example:
        >>> import ember.numpy as enp
        >>> enp.can_cast(enp.int8, enp.int16), enp.can_cast(enp.float64, enp.float32)
        (True, False)
    """
    if casting not in ("safe", "same_kind", "unsafe", "no", "equiv"):
        raise ValueError(f"can_cast: unknown casting {casting!r}")
    f = _dtype_of(from_)
    t = _dt.canonicalize(to)
    if casting == "unsafe":
        return True
    if casting in ("no", "equiv"):
        return f == t
    if casting == "same_kind":
        order = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
        return _dt.can_cast(f, t) or order[_dt.kind(f)] <= order[_dt.kind(t)]
    return _dt.can_cast(f, t)


class finfo_object:
    """Machine limits of a floating dtype with Python-float attributes (array API)."""
    __slots__ = ("bits", "eps", "max", "min", "smallest_normal", "tiny", "resolution",
                 "precision", "dtype", "nmant", "nexp", "maxexp", "minexp", "epsneg")

    def __init__(self, d):
        info = _dt.finfo(d)
        self.dtype = _dt.real_dtype(d)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.epsneg = float(info.epsneg)
        self.max = float(info.max)
        self.min = float(info.min)
        self.smallest_normal = float(info.smallest_normal)
        self.tiny = self.smallest_normal
        self.resolution = float(info.resolution)
        self.precision = int(info.precision)
        self.nmant = int(info.nmant)
        self.nexp = int(info.nexp)
        self.maxexp = int(info.maxexp)
        self.minexp = int(info.minexp)

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, "
                f"dtype={self.dtype})")


def finfo(type, /):  # noqa: A002
    """Limits of a floating dtype (complex: of its real component).

    Example:
        >>> import ember.numpy as enp
        >>> enp.finfo(enp.float32).bits, enp.finfo(enp.complex128).dtype
        (32, dtype('float64'))
    """
    d = _dtype_of(type)
    if not _dt.is_inexact(d):
        raise TypeError(f"finfo needs a floating dtype, got {d}; use iinfo for integers")
    return finfo_object(d)


def iinfo(type, /):  # noqa: A002
    """Limits of an integer dtype (bits, min, max, dtype).

    Example:
        >>> import ember.numpy as enp
        >>> enp.iinfo(enp.uint8).max
        255
    """
    d = _dtype_of(type)
    if not _dt.is_integer(d):
        raise TypeError(f"iinfo needs an integer dtype, got {d}; use finfo for floats")
    return np.iinfo(d)


def issubdtype(arg1, arg2):
    """numpy's issubdtype, aware of bfloat16 (a floating type here).

    Example:
        >>> import ember.numpy as enp
        >>> enp.issubdtype(enp.bfloat16, enp.floating)
        True
    """
    try:
        d = _dt.canonicalize(arg1)
    except TypeError:
        return np.issubdtype(arg1, arg2)
    if d == _dt.bfloat16:
        if arg2 in (np.floating, np.inexact, np.number, np.generic):
            return True
        try:
            return _dt.canonicalize(arg2) == _dt.bfloat16
        except TypeError:
            return False
    if isinstance(arg2, type) and issubclass(arg2, np.generic):
        return np.issubdtype(d, arg2)
    try:
        return d == _dt.canonicalize(arg2)
    except TypeError:
        return np.issubdtype(d, arg2)


def astype(x, dtype, /, *, copy=True, device=None):  # noqa: A002
    """`x` converted to `dtype` (to bool: x != 0; float to int truncates).

    Example:
        >>> import ember.numpy as enp
        >>> enp.astype(enp.asarray([1.7, -0.2]), enp.int32).tolist()
        [1, 0]
    """
    x = ensure_array(x)
    d = _dt.canonicalize(dtype)
    a = get_aval(x)
    if a.dtype == d and not a.weak_type:
        return device_put(x, device)
    if d == _dt.bool_:
        y = lax.ne(x, const(a.dtype, 0))
    else:
        y = lax.convert_element_type(x, d)
    return device_put(y, device)


class _Info:
    """The array API inspection namespace returned by `__array_namespace_info__()`."""

    def capabilities(self):
        """Boolean indexing and data-dependent shapes work eagerly (not under jit)."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": None}

    def default_device(self):
        return cpu_device()

    def devices(self):
        return [cpu_device()]

    def default_dtypes(self, *, device=None):
        return {"real floating": _dt.default_float, "complex floating": _dt.default_complex,
                "integral": _dt.default_int, "indexing": _dt.int32}

    def dtypes(self, *, device=None, kind=None):
        names = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float32", "float64", "complex64", "complex128"]
        table = {n: _dt.canonicalize(n) for n in names}
        if kind is None:
            return table
        return {n: d for n, d in table.items() if _dt.isdtype(d, kind)}


_INFO = _Info()


def __array_namespace_info__():
    """The array API inspection utilities (capabilities, devices, default dtypes, dtypes).

    Example:
        >>> import ember.numpy as enp
        >>> sorted(enp.__array_namespace_info__().dtypes(kind="complex floating"))
        ['complex128', 'complex64']
    """
    return _INFO
