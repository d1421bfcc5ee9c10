"""The default float dtype as PyTorch and JAX users reach for it: a context manager and
`set_default_dtype` / `get_default_dtype` (all three move the one setting in `ember.dtypes`)."""
from __future__ import annotations

import numpy as np

from . import dtypes as _dt

__all__ = ["default_float", "set_default_dtype", "get_default_dtype"]


class default_float:  # noqa: N801 - used as `with ember.default_float("float64"):`
    """Within the `with` block, Python floats, float constructors (`zeros`, `linspace`,
    `arange` of floats, `eye`, `asarray` of Python floats, ...) and `ember.random`
    samplers default to `dtype`; the previous default comes back on exit.  The setting is
    process-wide (like `torch.set_default_dtype`), not per thread.  Integers stay int32.

    Example:
        >>> import ember, ember.numpy as enp
        >>> with ember.default_float("float64"):
        ...     print(enp.linspace(0.0, 1.0, 11).dtype, enp.zeros(2).dtype)
        float64 float64
        >>> enp.zeros(2).dtype
        dtype('float32')
    """

    def __init__(self, dtype):
        self.dtype = dtype
        self._saved = []

    def __enter__(self):
        self._saved.append(_dt.set_default_float(self.dtype))
        return _dt.default_float

    def __exit__(self, *exc):
        _dt.set_default_float(self._saved.pop())
        return False


def set_default_dtype(dtype) -> None:
    """PyTorch's spelling of `ember.config.update("default_float", dtype)`.

    Example:
        >>> import ember, ember.numpy as enp
        >>> ember.set_default_dtype("float64"); enp.ones(1).dtype
        dtype('float64')
        >>> ember.set_default_dtype(enp.float32)
    """
    _dt.set_default_float(dtype)


def get_default_dtype() -> np.dtype:
    """The current default float dtype (float32 unless changed).

    Example:
        >>> import ember
        >>> ember.get_default_dtype()
        dtype('float32')
    """
    return _dt.default_float
