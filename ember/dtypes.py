"""Data types, type promotion and weak (Python-scalar) types.

ember's dtypes are numpy dtype objects (bfloat16 comes from ml_dtypes), so
they interoperate with numpy without translation.  Promotion follows the
Python array API standard's table and extends it the way JAX does for the
cases the standard leaves open (mixed int/float, uint64 with a signed int).

Python scalars are *weakly typed*: they take the dtype of the array they meet
(`f32_array * 2.0` stays float32, `int8_array + 1` stays int8).  Alone they
default to the default float (float32 unless `ember.config.update("default_float",
"float64")`, `EMBER_DEFAULT_FLOAT` or `ember.default_float(...)` say otherwise) / int32.
Arrays given explicitly as float64 or int64 stay 64-bit everywhere.

Example:
    >>> import ember.dtypes as dt
    >>> dt.result_type(dt.int8, dt.uint8)
    dtype('int16')
"""
from __future__ import annotations

import builtins
import os

import ml_dtypes
import numpy as np

bool_ = np.dtype(np.bool_)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
uint16 = np.dtype(np.uint16)
uint32 = np.dtype(np.uint32)
uint64 = np.dtype(np.uint64)
float16 = np.dtype(np.float16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

# float0 marks the tangent/cotangent of an integer or boolean value: it has no
# derivative, and a distinct dtype makes that visible instead of silently zero.
float0 = np.dtype([("float0", np.void, 0)])

ALL_DTYPES = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
              float16, bfloat16, float32, float64, complex64, complex128)
SIGNED = (int8, int16, int32, int64)
UNSIGNED = (uint8, uint16, uint32, uint64)
INTEGER = SIGNED + UNSIGNED
FLOATING = (float16, bfloat16, float32, float64)
COMPLEX = (complex64, complex128)
INEXACT = FLOATING + COMPLEX
NUMERIC = INTEGER + INEXACT

default_float = float32
default_int = int32
default_complex = complex64

_BY_NAME = {str(d): d for d in ALL_DTYPES}
_BY_NAME.update({"bool": bool_, "float": float32, "int": int32, "complex": complex64})
# numpy dtype -> ember dtype, for the dtypes ember supports: the hot path of
# `canonicalize` (code generators ask per emitted operation), where `str(dtype)`
# costs ~30 us (numpy builds the name through `issubdtype`) and a dict hit ~50 ns
_BY_DTYPE = {d: d for d in ALL_DTYPES}

# Bumped on every change of the default float: caches of traced programs (jit) key on it,
# because a constructor inside a traced function reads the default at trace time.
default_epoch = 0


__all__ = ["bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "bfloat16", "float32", "float64", "complex64", "complex128", "float0",
           "canonicalize", "promote", "result_type", "can_cast", "isdtype", "finfo", "iinfo",
           "is_float", "is_inexact", "is_integer", "kind", "default_float", "default_int",
           "default_complex"]


def canonicalize(dtype) -> np.dtype:
    """Turn anything dtype-like (a name, a numpy type, a dtype) into an ember dtype.

    Example:
        >>> canonicalize("float32") is float32
        True
    """
    if isinstance(dtype, np.dtype):
        hit = _BY_DTYPE.get(dtype)
        if hit is not None:
            return hit
        d = dtype
    elif dtype is builtins.bool:
        return bool_
    elif dtype is builtins.int:
        return default_int
    elif dtype is builtins.float:
        return default_float
    elif dtype is builtins.complex:
        return default_complex
    elif isinstance(dtype, str) and dtype in _BY_NAME:
        return _BY_NAME[dtype]
    else:
        try:
            d = np.dtype(dtype)
        except TypeError:
            raise TypeError(f"{dtype!r} is not a dtype; expected one of "
                            f"{', '.join(sorted(_BY_NAME))}") from None
    if d == float0:
        return float0
    key = str(d)
    if key not in _BY_NAME:
        raise TypeError(f"dtype {d} is not supported by ember; supported dtypes: "
                        f"{', '.join(str(x) for x in ALL_DTYPES)}")
    return _BY_NAME[key]


def kind(dtype) -> str:
    """'b' bool, 'i' signed, 'u' unsigned, 'f' real floating, 'c' complex."""
    d = canonicalize(dtype)
    if d == bfloat16:
        return "f"
    return d.kind


# the order of the kinds, for "does a Python scalar of this type fit this dtype's kind"
# (promotion fast paths, lax's refusal to truncate a scalar)
KIND_RANK = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}
PY_KIND_RANK = {builtins.bool: 0, builtins.int: 1, builtins.float: 2, builtins.complex: 3}


def is_float(dtype) -> bool:
    """True for real floating dtypes (float16, bfloat16, float32, float64)."""
    return kind(dtype) == "f"


def is_inexact(dtype) -> bool:
    """True for floating and complex dtypes."""
    return kind(dtype) in "fc"


def is_integer(dtype) -> bool:
    """True for signed and unsigned integer dtypes (not bool)."""
    return kind(dtype) in "iu"


# --- promotion --------------------------------------------------------------
# A lattice: each dtype lists the dtypes directly above it.  The result type of
# two dtypes is their least upper bound.  Weak types sit just above their kind's
# bottom so that any strong dtype of the same kind absorbs them.
_i, _u, _f, _c = "i*", "u*", "f*", "c*"  # weak int, (unused) weak uint, weak float, weak complex
_LATTICE = {
    bool_: [_i],
    _i: [uint8, int8],
    uint8: [int16, uint16],
    uint16: [int32, uint32],
    uint32: [int64, uint64],
    uint64: [_f],
    int8: [int16],
    int16: [int32],
    int32: [int64],
    int64: [_f],
    _f: [float16, bfloat16],
    float16: [float32],
    bfloat16: [float32],
    float32: [float64, complex64],
    float64: [complex128],
    complex64: [complex128],
    complex128: [],
}
_LATTICE[_f] = [float16, bfloat16, _c]
_LATTICE[float32] = [float64, complex64]
_LATTICE[_c] = [complex64]


def _upper_sets():
    ups = {}

    def visit(n):
        if n in ups:
            return ups[n]
        s = {n}
        for m in _LATTICE[n]:
            s |= visit(m)
        ups[n] = frozenset(s)
        return ups[n]

    for n in _LATTICE:
        visit(n)
    return ups


_UP = _upper_sets()
_WEAK_DEFAULT = {_i: int32, _f: float32, _c: complex64}
_promote_cache: dict = {}


def _node(dtype, weak: bool):
    if not weak:
        return dtype
    k = kind(dtype)
    return {"b": bool_, "i": _i, "u": _i, "f": _f, "c": _c}[k]


def _join(a, b):
    common = _UP[a] & _UP[b]
    # the least upper bound is the common node whose own upper set is largest
    return max(common, key=lambda n: len(_UP[n]))


def promote(dtypes, weak_flags) -> tuple[np.dtype, bool]:
    """Result dtype and weak flag for an operation over the given operands.

    Example:
        >>> promote([float32, float64], [False, True])
        (dtype('float32'), False)
    """
    key = (tuple(dtypes), tuple(weak_flags))
    hit = _promote_cache.get(key)
    if hit is not None:
        return hit
    nodes = [_node(canonicalize(d), w) for d, w in zip(dtypes, weak_flags)]
    n = nodes[0]
    for m in nodes[1:]:
        n = _join(n, m)
    # Mixed signed/unsigned 64-bit ints meet at the weak float node: the result is
    # a weakly typed default float, which keeps promotion associative (JAX does the same).
    res = (_WEAK_DEFAULT.get(n, n), all(weak_flags) or n in _WEAK_DEFAULT)
    _promote_cache[key] = res
    return res


def set_default_float(dtype) -> np.dtype:
    """Make `dtype` (a floating dtype) the dtype of Python floats, float constructors and
    samplers; complex defaults follow (complex128 with float64).  Returns the previous
    default.  The public spellings are `ember.config.update("default_float", ...)`,
    `ember.set_default_dtype` and the `ember.default_float(...)` context manager.

    Example:
        >>> old = set_default_float("float64"); result_type(1.5)
        dtype('float64')
        >>> _ = set_default_float(old); result_type(1.5)
        dtype('float32')
    """
    global default_float, default_complex, default_epoch
    try:
        d = canonicalize(dtype)
    except TypeError:
        d = None
    if d is None or d not in FLOATING:
        raise TypeError(f"the default float dtype must be one of float16, bfloat16, float32, "
                        f"float64; got {dtype!r}")
    old = default_float
    if d is not old:
        default_float = d
        default_complex = complex128 if d == float64 else complex64
        _BY_NAME["float"] = d
        _BY_NAME["complex"] = default_complex
        _WEAK_DEFAULT[_f] = d
        _WEAK_DEFAULT[_c] = default_complex
        _promote_cache.clear()
        default_epoch += 1
    return old


def _default_from_env():
    v = os.environ.get("EMBER_DEFAULT_FLOAT", "").strip()
    if v:
        try:
            set_default_float(v)
        except TypeError as e:
            raise TypeError(f"EMBER_DEFAULT_FLOAT={v!r}: {e}") from None


def result_type(*arrays_and_dtypes) -> np.dtype:
    """The dtype of an operation over these arrays, dtypes and Python scalars.

    Example:
        >>> result_type(int8, 1.5)
        dtype('float32')
    """
    if not arrays_and_dtypes:
        raise ValueError("result_type needs at least one array or dtype")
    dts, weak = [], []
    for x in arrays_and_dtypes:
        d, w = dtype_and_weak(x)
        dts.append(d)
        weak.append(w)
    return promote(dts, weak)[0]


def dtype_and_weak(x) -> tuple[np.dtype, bool]:
    """The (dtype, weak) pair of a value: a Python scalar is weak."""
    t = type(x)
    if t is builtins.bool:
        return bool_, True
    if t is builtins.int:
        return default_int, True
    if t is builtins.float:
        return default_float, True
    if t is builtins.complex:
        return default_complex, True
    aval = getattr(x, "aval", None)
    if aval is not None:
        return aval.dtype, aval.weak_type
    if isinstance(x, (np.ndarray, np.generic)):
        return canonicalize(x.dtype), False
    return canonicalize(x), False


_default_from_env()


def scalar_type_of(x) -> np.dtype:
    """The default dtype of a Python scalar (bool, int32, float32, complex64)."""
    return dtype_and_weak(x)[0]


def can_cast(from_, to, /) -> bool:
    """True when promoting `from_` with `to` gives `to` (array API semantics).

    Example:
        >>> can_cast(int8, int32), can_cast(float64, float32)
        (True, False)
    """
    f = dtype_and_weak(from_)[0]
    t = canonicalize(to)
    return promote([f, t], [False, False])[0] == t


def isdtype(dtype, kind_) -> bool:
    """Array API `isdtype`: test a dtype against a kind name, dtype, or tuple of them.

    Example:
        >>> isdtype(float32, "real floating")
        True
    """
    d = canonicalize(dtype)
    if isinstance(kind_, tuple):
        return any(isdtype(d, k) for k in kind_)
    if isinstance(kind_, str):
        groups = {
            "bool": (bool_,), "signed integer": SIGNED, "unsigned integer": UNSIGNED,
            "integral": INTEGER, "real floating": FLOATING, "complex floating": COMPLEX,
            "numeric": NUMERIC,
        }
        if kind_ not in groups:
            raise ValueError(f"unknown dtype kind {kind_!r}; expected one of {sorted(groups)}")
        return d in groups[kind_]
    return d == canonicalize(kind_)


def finfo(dtype):
    """Machine limits of a floating dtype (numpy's / ml_dtypes' finfo).

    Example:
        >>> float(finfo(bfloat16).eps)
        0.0078125
    """
    d = canonicalize(dtype) if not hasattr(dtype, "dtype") else canonicalize(dtype.dtype)
    if not is_inexact(d):
        raise TypeError(f"finfo needs a floating dtype, got {d}")
    return ml_dtypes.finfo(d)


def iinfo(dtype):
    """Machine limits of an integer dtype.

    Example:
        >>> iinfo(int8).max
        127
    """
    d = canonicalize(dtype) if not hasattr(dtype, "dtype") else canonicalize(dtype.dtype)
    if not is_integer(d):
        raise TypeError(f"iinfo needs an integer dtype, got {d}")
    return np.iinfo(d)


def to_inexact(dtype) -> np.dtype:
    """The floating dtype an integer/bool is promoted to for float-only functions."""
    d = canonicalize(dtype)
    return d if is_inexact(d) else default_float


def accumulation_dtype(dtype) -> np.dtype:
    """The dtype sums, counts and divisions over `dtype` data are computed in: float32
    for the half-precision floats (float16 tops out at 65504, so a count of 65,520
    elements or a sum of many small terms would overflow), `dtype` itself otherwise.
    This is JAX's rule for sum/prod/mean/var; the result is cast back afterwards.

    Example:
        >>> accumulation_dtype(float16), accumulation_dtype(int8)
        (dtype('float32'), dtype('int8'))
    """
    d = canonicalize(dtype)
    return float32 if d in (float16, bfloat16) else d


def real_dtype(dtype) -> np.dtype:
    d = canonicalize(dtype)
    return {complex64: float32, complex128: float64}.get(d, d)


def complex_dtype(dtype) -> np.dtype:
    d = canonicalize(dtype)
    return complex128 if d in (float64, complex128) else complex64


def short_name(dtype) -> str:
    """Compact names used by the IR printer: f32, i64, bf16, bool, c64..."""
    d = canonicalize(dtype) if dtype != float0 else float0
    if d == float0:
        return "float0"
    if d == bool_:
        return "bool"
    if d == bfloat16:
        return "bf16"
    return {"f": "f", "i": "i", "u": "u", "c": "c"}[d.kind] + str(d.itemsize * 8)
