"""Backend, Device and Executable interfaces, and the backend registry.

A backend owns buffers on its devices and runs primitives on them: eagerly one
at a time (`execute`) or as a whole compiled graph (`compile`).  The reference
backend (numpy) is always present and is the oracle for the others.  Backends
register a lazy factory by name (`register_backend`): nothing of a backend is
imported until it is first asked for, so `import ember` loads no code
generator.

Example:
    >>> from ember.backends.base import get_backend
    >>> get_backend("reference").name
    'reference'
"""
from __future__ import annotations

import importlib
from typing import Callable

import numpy as np


class Device:
    """One device of a backend, e.g. `cpu:0`.

    Two devices are equal when they are the same device of the same backend: the
    reference backend's `reference:cpu:0` is not the CPU backend's `cpu:0`, although
    both keep their buffers in host memory.  `execute(prim, buffers, params)` runs
    one primitive eagerly through the backend (the eager trace calls it); the
    backend's `host_buffers` says whether its buffers are numpy arrays.

    Example:
        >>> import ember
        >>> str(ember.devices()[0])
        'cpu:0'
        >>> ember.devices()[0] == ember.devices("reference")[0]
        False
    """
    __slots__ = ("platform", "id", "backend", "host_buffers", "_key", "_execute")

    def __init__(self, platform: str, id: int, backend: "Backend"):
        self.platform = platform
        self.id = id
        self.backend = backend
        self.host_buffers = bool(getattr(backend, "host_buffers", False))
        self._key = (backend.name, platform, id)
        # bound once: the eager trace calls this for every primitive; None when the
        # backend's execute is `execute_impl`, whose work the trace then does itself
        # (one Python frame less on the hot path)
        self._execute = None if type(backend).execute is execute_impl else backend.execute

    def execute(self, prim, buffers, params):
        """Run `prim` eagerly on buffers of this device (see `Backend.execute`).

        Example:
            >>> import numpy as np, ember
            >>> from ember.fx.prims.elementwise import add_p
            >>> ember.devices()[0].execute(add_p, [np.float32(1), np.float32(2)], {}).item()
            3.0
        """
        return self.backend.execute(prim, buffers, params, self)

    def __repr__(self):
        if self.backend.name == self.platform:
            return f"{self.platform}:{self.id}"
        return f"{self.backend.name}:{self.platform}:{self.id}"

    def __eq__(self, other):
        return isinstance(other, Device) and self._key == other._key

    def __hash__(self):
        return hash(self._key)


class Executable:
    """A compiled graph: call it with backend buffers, get a list of buffers back."""

    def __call__(self, *buffers):  # pragma: no cover - interface
        raise NotImplementedError


class Backend:
    """Interface every backend implements.

    `host_buffers = True` declares that its buffers are read-only numpy arrays in
    host memory (the reference and CPU backends): arrays on it convert to numpy
    without a copy and results of its impls are sealed read-only when wrapped.
    A backend whose eager execution is the primitives' numpy impls sets
    `execute = execute_impl`, which the eager trace recognises and inlines.
    """
    name: str = "?"
    platform: str = "?"
    host_buffers: bool = False

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

    def unavailable_reason(self) -> str | None:
        """Why `devices()` is empty (no runtime, no driver), for error messages."""
        return None

    def needs_private_copy(self, buffer) -> bool:
        """Whether `buffer` must be copied before it is shared with another library
        (DLPack, the CUDA array interface): a broadcast (stride-0) view, where one
        write by the consumer would change many elements."""
        return buffer.size > 1 and 0 in buffer.strides

    def block_until_ready(self, buffer) -> None:
        """Wait until the work producing `buffer` has finished (asynchronous backends)."""
        return None


def execute_impl(backend, prim, buffers, params, device):
    """`Backend.execute` of a backend whose eager operations are the primitives'
    numpy impls (the caller has validated the call through abstract_eval).

    Example:
        >>> import numpy as np
        >>> from ember.fx.prims.elementwise import add_p
        >>> execute_impl(None, add_p, [np.float32(1), np.float32(2)], {}, None).item()
        3.0
    """
    return prim.impl(*buffers, **params)


class DeviceNotFoundError(ValueError, RuntimeError):
    """A device was asked for that this process does not have (a `ValueError`, as
    unknown device names always were, and a `RuntimeError`, as JAX raises for a
    backend without devices)."""


# JAX's platform name for any GPU ("gpu") names ember's one GPU backend
PLATFORM_ALIASES = {"gpu": "cuda"}

GPU_HINT = 'to use an NVIDIA GPU, install CuPy with the gpu extra: pip install -e ".[gpu]"'


def lookup_device(spec: str, what: str = "device") -> Device:
    """The device a name denotes: `"cpu"`, `"cpu:0"`, `"cuda"`, `"cuda:1"`,
    `"reference:cpu:0"` (a backend's name alone is its first device; `"gpu"`, as
    in JAX, is `"cuda"`).  An unknown
    name or a backend without devices raises `DeviceNotFoundError` naming what was
    asked for, the devices there are and, for a GPU, how to get one.

    Example:
        >>> lookup_device("cpu:0")
        cpu:0
        >>> try:
        ...     lookup_device("tpu")
        ... except DeviceNotFoundError as e:
        ...     print(str(e).split(";")[0])
        unknown device 'tpu'
    """
    name, _, rest = spec.strip().partition(":")
    name = PLATFORM_ALIASES.get(name, name)
    factory_known = name in _FACTORIES
    devs = get_backend(name).devices() if factory_known else []
    want = f"{name}:{rest}" if rest else None
    for d in devs:
        if want is None or str(d) == want or f"{name}:{d.platform}:{d.id}" == want \
                or f"{name}:{d.id}" == want:
            return d
    known = [str(d) for b in available_backends() for d in get_backend(b).devices()]
    if factory_known and not devs:
        why = getattr(get_backend(name), "unavailable_reason", lambda: None)()
        msg = (f"{what} {spec!r} is not available: the {name} backend has no devices"
               + (f" ({why})" if why else "") + f"; available: {known}")
        if name == "cuda":
            msg += f"; {GPU_HINT}"
        raise DeviceNotFoundError(msg)
    raise DeviceNotFoundError(f"unknown device {spec!r}; available: {known}")


_BACKENDS: dict[str, Backend] = {}
_FACTORIES: dict[str, Callable[[], Backend] | str] = {}
DEFAULT_BACKEND = "cpu"


def register_backend(name: str, factory: Callable[[], Backend] | str):
    """Register a backend by name; it is created on first use.  `factory` is a
    callable returning the backend, or `"module:Class"`, imported only then (so a
    backend's dependencies load when it is first used, not at `import ember`).

    Example:
        >>> register_backend("reference2", "ember.backends.reference:ReferenceBackend")
        >>> get_backend("reference2").name
        'reference'
    """
    _FACTORIES[name] = factory
    _BACKENDS.pop(name, None)


def get_backend(name: str) -> Backend:
    """The backend registered as `name`, created on first use.

    Example:
        >>> get_backend("cpu").devices()
        [cpu:0]
    """
    b = _BACKENDS.get(name)
    if b is None:
        factory = _FACTORIES.get(name)
        if factory is None:
            raise ValueError(f"unknown backend {name!r}; available: {sorted(_FACTORIES)}")
        if isinstance(factory, str):
            module, _, attr = factory.partition(":")
            factory = getattr(importlib.import_module(module), attr)
        b = _BACKENDS[name] = factory()
    return b


def available_backends() -> list[str]:
    """The registered backends whose runtime is present (they list a device).

    Example:
        >>> "reference" in available_backends()
        True
    """
    out = []
    for name in _FACTORIES:
        try:
            if get_backend(name).devices():
                out.append(name)
        except Exception:  # a backend whose runtime is missing is simply absent
            continue
    return out
