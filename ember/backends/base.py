"""Backend, Device and Executable interfaces, and the backend registry.

A backend owns buffers on its devices and runs primitives on them: eagerly one
at a time (`execute`) or as a whole compiled graph (`compile`).  The reference
backend (numpy) is always present and is the oracle for the others.

Example:
    >>> from ember.backends.base import get_backend
    >>> get_backend("reference").name
    'reference'
"""
from __future__ import annotations

from typing import Callable

import numpy as np


class Device:
    """One device of a backend, e.g. `cpu:0`.

    Example:
        >>> import ember
        >>> str(ember.devices()[0])
        'cpu:0'
    """
    __slots__ = ("platform", "id", "backend")

    def __init__(self, platform: str, id: int, backend: "Backend"):
        self.platform = platform
        self.id = id
        self.backend = backend

    def __repr__(self):
        return f"{self.platform}:{self.id}"

    def __eq__(self, other):
        return isinstance(other, Device) and (self.platform, self.id) == (other.platform, other.id)

    def __hash__(self):
        return hash((self.platform, self.id))


class Executable:
    """A compiled graph: call it with backend buffers, get a list of buffers back."""

    def __call__(self, *buffers):  # pragma: no cover - interface
        raise NotImplementedError


class Backend:
    """Interface every backend implements."""
    name: str = "?"
    platform: str = "?"

    def devices(self) -> list[Device]:
        raise NotImplementedError

    def put(self, value: np.ndarray, device: Device):
        """Copy a host numpy array onto `device` and return the backend buffer."""
        raise NotImplementedError

    def get(self, buffer) -> np.ndarray:
        """Return a host numpy view/copy of a buffer."""
        raise NotImplementedError

    def execute(self, prim, buffers, params, device):
        """Run one primitive eagerly on buffers of this backend."""
        raise NotImplementedError

    def compile(self, closed_graph, device) -> Executable:
        """Compile a closed graph into an executable over buffers of this backend."""
        raise NotImplementedError


_BACKENDS: dict[str, Backend] = {}
_FACTORIES: dict[str, Callable[[], Backend]] = {}


def register_backend(name: str, factory: Callable[[], Backend]):
    """Register a backend factory; backends are created on first use."""
    _FACTORIES[name] = factory


def get_backend(name: str) -> Backend:
    b = _BACKENDS.get(name)
    if b is None:
        if name not in _FACTORIES:
            raise ValueError(f"unknown backend {name!r}; available: {sorted(_FACTORIES)}")
        b = _BACKENDS[name] = _FACTORIES[name]()
    return b


def available_backends() -> list[str]:
    out = []
    for name in _FACTORIES:
        try:
            if get_backend(name).devices():
                out.append(name)
        except Exception:  # a backend whose runtime is missing is simply absent
            continue
    return out
