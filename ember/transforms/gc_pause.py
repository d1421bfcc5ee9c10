"""The cyclic garbage collector paused while a function is staged and compiled.

A first call allocates on the order of a million short-lived objects (tracers,
equations, kernel expressions, llvmlite IR values), which triggers dozens of
collections, among them full ones that walk every long-lived object of the
process (an imported JAX or torch doubles them): ~10% of a first call's time
for a Taylor-mode MLP.  Almost nothing staging creates is cyclic garbage that
could wait, so the collector is off meanwhile and on again afterwards (when the
outermost pause ends, and only if it was on before); garbage made meanwhile is
collected by the next collection as usual.

Example:
    >>> import gc
    >>> with collector_paused():
    ...     gc.isenabled()
    False
    >>> gc.isenabled()
    True
"""
from __future__ import annotations

import contextlib
import gc
import threading

__all__ = ["collector_paused"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextlib.contextmanager
def collector_paused():
    """Disable `gc` for the block (nested and concurrent pauses: until the last ends).

    Example:
        >>> with collector_paused():
        ...     pass
    """
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
