"""Settings that change what a function traces to (e.g. `ember.amp.autocast`):
`jit` keys its cache on them, so a program traced under one setting is never
reused under another.

A setting registers a getter; `key()` is the tuple of their current values.
`override()` brackets a non-default value so that while none is active anywhere
`key()` is `()` at the cost of one integer test (jit's fast path stays fast).

Example:
    >>> import contextvars
    >>> mode = contextvars.ContextVar("mode", default=None)
    >>> register("mode", mode.get)
    >>> with override():
    ...     token = mode.set("half"); k = key(); mode.reset(token)
    >>> ("mode", "half") in k, key()
    (True, ())
"""
from __future__ import annotations

import contextlib
import threading

_GETTERS: dict = {}
_lock = threading.Lock()
_active = [0]      # overrides in effect in any thread


def register(name: str, getter) -> None:
    """Make `getter()` (hashable, None when unset) part of every jit cache key."""
    _GETTERS[name] = getter


def active() -> bool:
    """Whether any registered setting may be away from its default."""
    return _active[0] != 0


def key() -> tuple:
    """The non-default settings as ((name, value), ...); () when none is set."""
    if not _active[0]:
        return ()
    return tuple((n, v) for n, g in _GETTERS.items() if (v := g()) is not None)


@contextlib.contextmanager
def override():
    """Bracket the span in which a registered setting is set."""
    with _lock:
        _active[0] += 1
    try:
        yield
    finally:
        with _lock:
            _active[0] -= 1
