"""The dtype names of `ember.numpy` (`enp.float32`, ...) as objects that are both a dtype and
a constructor, as in JAX: `enp.float32(1.0)` makes an array, `x.astype(enp.float32)` and
`x.dtype == enp.float32` treat it as the dtype; and `enp.ndarray` for isinstance checks.

Example:
    >>> import ember.numpy as enp
    >>> enp.float32(1.5).dtype == enp.float32, enp.int32([1, 2]).tolist()
    (True, [1, 2])
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt

__all__ = ["bool", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
           "uint64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
           "ndarray",
           "single", "double", "csingle", "cdouble", "float_", "complex_", "int_", "uint"]


class ScalarType:
    """A dtype name that is also callable: `t(x)` is `asarray(x, dtype=t)`.

    numpy reads its `dtype` attribute, so `np.dtype(t)`, `np.zeros(2, dtype=t)` and
    `dtype == t` see the dtype; other attributes (`name`, `itemsize`, `kind`) forward to it.

    Example:
        >>> import numpy as np
        >>> import ember.numpy as enp
        >>> np.dtype(enp.bfloat16).name, enp.bool_([1, 0]).tolist()
        ('bfloat16', [True, False])
    """
    __slots__ = ("dtype", "__name__")

    def __init__(self, dtype, name):
        self.dtype = dtype
        self.__name__ = name

    def __call__(self, x):
        from ._core import asarray
        return asarray(x, dtype=self.dtype)

    def __getattr__(self, name):
        # Only reached for names the slots lack: forward the dtype's attributes so code that
        # used the former plain dtype (`enp.float32.itemsize`) keeps working.
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(object.__getattribute__(self, "dtype"), name)

    def __eq__(self, other):
        if isinstance(other, ScalarType):
            return self.dtype == other.dtype
        try:
            return bool(self.dtype == other)
        except TypeError:
            return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash(self.dtype)

    def __repr__(self):
        return f"ember.numpy.{self.__name__}"

    def __reduce__(self):
        return (_by_name, (self.__name__,))


def _by_name(name):
    return _TYPES[name]


_TYPES = {n: ScalarType(_dt.canonicalize(n), n) for n in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128")}
_TYPES["bool_"] = ScalarType(_dt.bool_, "bool_")

bool = _TYPES["bool"]  # noqa: A001
bool_ = _TYPES["bool_"]
int8, int16, int32, int64 = (_TYPES[n] for n in ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = (_TYPES[n] for n in ("uint8", "uint16", "uint32", "uint64"))
float16, bfloat16 = _TYPES["float16"], _TYPES["bfloat16"]
float32, float64 = _TYPES["float32"], _TYPES["float64"]
complex64, complex128 = _TYPES["complex64"], _TYPES["complex128"]
# numpy's C-style and default-type aliases, the same objects as in jax.numpy (float_ is
# float64 and int_ int64 there too, even though ember's defaults are 32-bit)
single, double, csingle, cdouble = float32, float64, complex64, complex128
float_, complex_, int_, uint = float64, complex128, int64, uint64


class _NdarrayMeta(type):
    def __instancecheck__(cls, obj):
        from ..array import Array
        from ..fx.core import Tracer
        return isinstance(obj, (Array, Tracer))


class ndarray(metaclass=_NdarrayMeta):
    """The type to test against: `isinstance(x, enp.ndarray)` is true for ember arrays and
    for the tracers that stand for them under `jit`, `grad` and `vmap` (not numpy arrays).

    Example:
        >>> import numpy as np
        >>> import ember.numpy as enp
        >>> isinstance(enp.ones(2), enp.ndarray), isinstance(np.ones(2), enp.ndarray)
        (True, False)
    """

    def __new__(cls, *args, **kwargs):
        raise TypeError("enp.ndarray is for isinstance checks; make arrays with "
                        "enp.asarray(...), enp.zeros(shape, dtype) and friends")
