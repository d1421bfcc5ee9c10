"""Page-locked ("pinned") host memory for ``DataLoader(pin_memory=True)``.

Pinned buffers let a later host-to-GPU copy run asynchronously. They come from
CuPy (``cupy.cuda.alloc_pinned_memory``, what ``cupyx.empty_pinned`` allocates
with) and are used only when ember's ``cuda`` backend has a device; otherwise,
as PyTorch does without CUDA, the loader warns (once per call site, Python's
default warning filter) and batches live in ordinary memory. CuPy is imported
only when a loader with ``pin_memory=True`` first needs it, and not at all when
no NVIDIA device node exists (``backends.cuda.backend.gpu_may_be_present``).
"""

from __future__ import annotations

import functools
import warnings
from typing import Callable

import numpy as np

__all__ = ["pinned_allocator"]


@functools.lru_cache(maxsize=1)
def _cupy_alloc_pinned():
    from ember.backends.cuda.backend import device_count, gpu_may_be_present
    if not gpu_may_be_present() or device_count() < 1:   # the backend's cached answer
        return None
    import cupy
    return cupy.cuda.alloc_pinned_memory


NO_ACCELERATOR = ("'pin_memory' argument is set as true but no accelerator is found, "
                  "then device pinned memory won't be used.")


def loader_allocator() -> Callable | None:
    """`pinned_allocator()` for a loader with ``pin_memory=True``: warns, as PyTorch
    does without CUDA, when there is no GPU to pin memory for."""
    alloc = pinned_allocator()
    if alloc is None:
        warnings.warn(NO_ACCELERATOR, UserWarning, stacklevel=4)
    return alloc


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
