"""Small helpers shared by the transforms: argument conversion and checks."""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..fx.core import AbstractArray, Tracer, user_source


def as_ember(x, dtype=None):
    """Arrays and tracers pass through; numpy and Python values become Arrays."""
    from ..array import Array
    if isinstance(x, (Array, Tracer)):
        if dtype is not None and x.dtype != dtype:
            from ..fx.prims.convert import convert_element_type
            return convert_element_type(x, dtype)
        return x
    if isinstance(x, np.ndarray) and x.dtype == _dt.float0:
        return x
    from ..numpy._core import asarray
    try:
        return asarray(x, dtype=dtype)
    except TypeError:
        raise TypeError(f"{type(x).__name__} is not a valid argument to a transformed function: "
                        f"only arrays, numpy arrays, Python scalars and pytrees of them are; "
                        f"mark it with static_argnums if it is configuration"
                        + (f"\n  at {user_source()}" if user_source() else "")) from None


def float0_zeros(aval: AbstractArray):
    return np.zeros(aval.shape, dtype=_dt.float0)


def check_same_structure(what, t1, t2, n1, n2):
    if t1 != t2:
        raise TypeError(f"{what}: {n1} and {n2} must have the same pytree structure, got\n"
                        f"  {n1}: {t1}\n  {n2}: {t2}")


def normalize_argnums(argnums, nargs, what="argnums"):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    out = []
    for a in nums:
        if not isinstance(a, int):
            raise TypeError(f"{what} must be an int or a tuple of ints, got {argnums!r}")
        if not -nargs <= a < nargs:
            raise ValueError(f"{what}={a} is out of range for a function called with {nargs} "
                             f"positional arguments")
        out.append(a % nargs)
    return single, tuple(out)
