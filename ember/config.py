"""Runtime configuration: environment variables with programmatic overrides.

Example:
    >>> from ember import config
    >>> config.update("log_compiles", False); config.log_compiles()
    False
"""
from __future__ import annotations

import os

_overrides: dict = {}

_ENV = {
    "log_compiles": ("EMBER_LOG_COMPILES", False),
    "dump_kernels": ("EMBER_DUMP_KERNELS", False),
    "cache": ("EMBER_CACHE", True),
    "typecheck": ("EMBER_TYPECHECK", False),
    "debug_nans": ("EMBER_DEBUG_NANS", False),
    "overlap_collectives": ("EMBER_OVERLAP_COLLECTIVES", True),
}


def _flag(name: str) -> bool:
    if name in _overrides:
        return bool(_overrides[name])
    env, default = _ENV[name]
    v = os.environ.get(env)
    if v is None:
        return default
    return v.strip().lower() not in ("", "0", "false", "no", "off")


def update(name: str, value) -> None:
    """Set an option for this process (overrides the environment variable).

    `update("default_float", "float64")` makes Python floats, float constructors and
    `ember.random` samplers produce float64 (EMBER_DEFAULT_FLOAT=float64 does the same
    from the environment; `ember.default_float(...)` scopes it to a `with` block).

    Example:
        >>> from ember import config
        >>> config.update("default_float", "float64"); config.default_float()
        dtype('float64')
        >>> config.update("default_float", "float32")
    """
    if name == "default_float":
        from . import dtypes
        dtypes.set_default_float(value)
        return
    if name not in _ENV:
        raise KeyError(f"unknown ember config option {name!r}; options: "
                       f"{sorted(list(_ENV) + ['default_float'])}")
    _overrides[name] = value
    if name == "debug_nans":
        from .debug import nans
        nans.enable(bool(value))


def default_float():
    """The dtype Python floats and float constructors default to (float32 unless changed).

    Example:
        >>> from ember import config
        >>> config.default_float()
        dtype('float32')
    """
    from . import dtypes
    return dtypes.default_float


def log_compiles() -> bool:
    """Print every jit compile and why it happened (EMBER_LOG_COMPILES=1)."""
    return _flag("log_compiles")


def dump_kernels() -> bool:
    """Print the loop kernels the native backends generate (EMBER_DUMP_KERNELS=1)."""
    return _flag("dump_kernels")


def typecheck_graphs() -> bool:
    """Typecheck every staged graph as it is built (EMBER_TYPECHECK=1; the test suite sets it)."""
    return _flag("typecheck")


def cache_enabled() -> bool:
    """Use the on-disk cache of compiled code (EMBER_CACHE=0 or update("cache", False) disables it)."""
    return _flag("cache")


def debug_nans() -> bool:
    """Raise FloatingPointError at the first primitive that makes a NaN/Inf from finite
    inputs, eagerly and inside jit (EMBER_DEBUG_NANS=1; see docs/debugging.md)."""
    return _flag("debug_nans")


def overlap_collectives() -> bool:
    """Compile reductions across processes as a start placed early and a wait placed
    late, so a gradient bucket's all-reduce overlaps the rest of the backward pass
    (EMBER_OVERLAP_COLLECTIVES=0 or update("overlap_collectives", False): one
    blocking step where each was traced; the result is the same either way).  Read
    when a program is compiled: programs compiled before a change keep their form."""
    return _flag("overlap_collectives")
