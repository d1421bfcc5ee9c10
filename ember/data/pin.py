"""Page-locked ("pinned") host memory for ``DataLoader(pin_memory=True)``.

Pinned buffers let a later host-to-GPU copy run asynchronously. They come from
CuPy (``cupy.cuda.alloc_pinned_memory``) and are used only when CuPy imports
*and* reports at least one GPU; otherwise pinning is a documented no-op and
batches live in ordinary memory. CuPy is imported only when a loader with
``pin_memory=True`` first needs it.
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np

__all__ = ["pinned_allocator"]


@functools.lru_cache(maxsize=1)
def _cupy_alloc_pinned():
    try:
        import cupy
    except Exception:
        return None
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
    except Exception:  # no driver / no device
        return None
    return cupy.cuda.alloc_pinned_memory


def pinned_allocator() -> Callable[[tuple, np.dtype], np.ndarray] | None:
    """``alloc(shape, dtype)`` returning numpy arrays in page-locked memory, or None.

    ``None`` means pinning is unavailable (no CuPy or no GPU).

    Example::

        >>> alloc = pinned_allocator()
        >>> a = alloc((4,), np.float32) if alloc else np.empty((4,), np.float32)
    """
    raw = _cupy_alloc_pinned()
    if raw is None:
        return None

    def alloc(shape, dtype):
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        mem = raw(max(count * dtype.itemsize, 1))
        # The array's base keeps the pinned block alive.
        return np.frombuffer(mem, dtype=dtype, count=count).reshape(shape)

    return alloc


def pin_array(x, alloc: Callable) -> np.ndarray:
    """Copy ``x`` into a buffer from ``alloc``."""
    src = np.asarray(x)
    out = alloc(src.shape, src.dtype)
    out[...] = src
    return out
