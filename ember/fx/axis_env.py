"""Named axes in scope: what a collective (`psum(x, "i")`) reduces over.

A name is bound by `vmap(..., axis_name="i")` while its function is traced (the
lanes of the batch are the members) or by `ember.distributed` around a
data-parallel step (the processes are the members: `comm` performs the
reduction). Collectives look their axis up here when they are traced (an
unbound name is an error then, as in JAX) and, for process axes, when they run.

Example:
    >>> with bind_axis("i", 4):
    ...     lookup("i", "psum").size
    4
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass


@dataclass(frozen=True)
class AxisFrame:
    """One bound axis: its name, its size, and (for process axes) the
    communicator whose members are the processes."""
    name: object
    size: int
    comm: object = None


_FRAMES: contextvars.ContextVar[tuple[AxisFrame, ...]] = contextvars.ContextVar("ember_axes", default=())


@contextlib.contextmanager
def bind_axis(name, size: int, comm=None):
    """Bind `name` (innermost wins) for the duration of the block."""
    token = _FRAMES.set(_FRAMES.get() + (AxisFrame(name, int(size), comm),))
    try:
        yield
    finally:
        _FRAMES.reset(token)


def bound_names() -> tuple:
    return tuple(f.name for f in _FRAMES.get())


def find(name) -> AxisFrame | None:
    """The innermost frame binding `name`, or None."""
    for frame in reversed(_FRAMES.get()):
        if frame.name == name:
            return frame
    return None


def lookup(name, op: str) -> AxisFrame:
    """The frame binding `name`; a clear NameError naming the collective if none does."""
    frame = find(name)
    if frame is None:
        bound = bound_names()
        where = (f"the axes in scope are {', '.join(map(repr, bound))}" if bound
                 else "no axis is in scope")
        raise NameError(
            f"{op}: unbound axis name {name!r} ({where}). A collective reduces over a named "
            f"axis: call it inside ember.vmap(..., axis_name={name!r}) or a step wrapped by "
            f"ember.distributed.data_parallel(..., axis_name={name!r}).")
    return frame
