"""A process-wide object built on first use, rebuilt in a forked child and shut
down at exit: what both worker pools (pool.py's native one and runtime.py's
Python one) need, since a forked child has none of its parent's threads.

Example:
    >>> import os
    >>> class Thing:
    ...     def __init__(self):
    ...         self.pid, self._closed = os.getpid(), False
    ...     def shutdown(self, timeout=1.0):
    ...         self._closed = True
    >>> things = ProcessLocal(Thing)
    >>> t = things.get()
    >>> t is things.get(), t.shutdown(), t is things.get()
    (True, None, False)
"""
from __future__ import annotations

import atexit
import os
import threading
from typing import Callable


class ProcessLocal:
    """Holds the object `factory()` builds (it has `pid`, `_closed` and
    `shutdown(timeout)`); `get()` returns it, building a new one when there is
    none, it was shut down, or it belongs to the parent of a fork."""

    def __init__(self, factory: Callable):
        self._factory = factory
        self._obj = None
        self._lock = threading.Lock()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._after_fork_in_child)
        atexit.register(self._shutdown_at_exit)

    def get(self):
        """The current process's object (built on first use, or again after a
        fork or a shutdown)."""
        p = self._obj
        if p is not None and p.pid == os.getpid() and not p._closed:
            return p
        with self._lock:
            p = self._obj
            if p is None or p.pid != os.getpid() or p._closed:
                p = self._obj = self._factory()
            return p

    def _after_fork_in_child(self) -> None:
        # the parent's worker threads do not exist here; the lock may be held by
        # a thread that vanished with the fork
        self._obj = None
        self._lock = threading.Lock()

    def _shutdown_at_exit(self) -> None:
        p = self._obj
        if p is not None:
            p.shutdown(timeout=0.5)
