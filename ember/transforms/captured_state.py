"""Mutable state a jitted function read while it was traced.

`jit` bakes the arrays a function reads from its enclosing scope into the
compiled program.  For plain closures that is documented behaviour; for library
objects whose state is *meant* to change between calls (an `nn.Module` whose
parameters an optimiser updates) it is a silent wrong answer.  Such objects
report what they read with `note(guard)` while a `jit` trace is recording, and
every later call of that compiled entry checks the guards and warns once when
the state it captured has changed since tracing.

A guard is any object with `changed() -> bool` and `describe() -> str`.

Example:
    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> m = nn.Linear(2, 1)
    >>> f = ember.jit(lambda x: m(x))
    >>> _ = f(enp.ones((1, 2)))
    >>> m.bias = m.bias + 1.0              # f still holds the old bias: the next call warns
"""
from __future__ import annotations

import contextlib
import contextvars
import warnings

__all__ = ["StaleCaptureWarning", "note", "recording", "is_recording", "check"]

_RECORDING: contextvars.ContextVar = contextvars.ContextVar("ember_jit_captured_state", default=None)


class StaleCaptureWarning(UserWarning):
    """A jitted function runs with state (e.g. module parameters) that changed after it
    was traced; the compiled program still uses the values from trace time."""


def note(guard) -> None:
    """Record `guard` for the `jit` trace in progress (a no-op outside one).

    Example:
        >>> note(None)   # nothing is recording
    """
    guards = _RECORDING.get()
    if guards is not None and guard is not None:
        guards.append(guard)


def is_recording() -> bool:
    """Is a `jit` trace collecting guards (so building one is worth it)?

    Example:
        >>> is_recording()
        False
    """
    return _RECORDING.get() is not None


@contextlib.contextmanager
def recording():
    """Collect the guards noted while the body runs (one `jit` trace).

    Example:
        >>> with recording() as guards:
        ...     pass
        >>> guards
        []
    """
    guards: list = []
    token = _RECORDING.set(guards)
    try:
        yield guards
    finally:
        _RECORDING.reset(token)


def check(entry, name: str) -> None:
    """Warn (once per compiled entry) when state captured by its trace has changed.

    Example:
        >>> class E: guards, warned = (), False
        >>> check(E(), "f")
    """
    if entry.warned:
        return
    stale = [g.describe() for g in entry.guards if g.changed()]
    if stale:
        entry.warned = True
        warnings.warn(StaleCaptureWarning(
            f"jit: {name} was traced with {'; '.join(stale)}, which changed since; the compiled "
            f"program still uses the values from trace time. Pass changing state as arguments "
            f"(nn.functional_call(model, params, x)), or compile the module itself: "
            f"ember.jit(model) / nn.compile_forward(model) read the current parameters on "
            f"every call."), stacklevel=3)
