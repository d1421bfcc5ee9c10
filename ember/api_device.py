"""Devices: listing them and moving arrays between them.

Example:
    >>> import ember, ember.numpy as enp
    >>> ember.device_put(enp.ones(2), ember.devices()[0]).device
    cpu:0
"""
from __future__ import annotations

import numpy as np

from ._host import from_host
from .array import Array, wrap_buffer
from .array import default_device as _default_device
from .backends.base import PLATFORM_ALIASES, Device, get_backend, lookup_device
from .tree import tree_map


def devices(backend: str | None = None) -> list[Device]:
    """The devices of a backend; without a name, those of the default device's
    backend (JAX's `jax.devices()`: the GPUs when one is usable, else the CPU).  A
    backend without devices (`devices("cuda")` with no GPU) raises a
    `DeviceNotFoundError` (a RuntimeError, as in JAX) that says why.

    Example:
        >>> [str(d) for d in devices()]
        ['cpu:0']
        >>> devices("reference")
        [reference:cpu:0]
    """
    if backend is None:
        return list(_default_device().backend.devices())
    backend = PLATFORM_ALIASES.get(backend, backend)
    found = list(get_backend(backend).devices())
    if not found:
        lookup_device(backend, what="backend")   # raises, naming why and the hint
    return found


class _DefaultDevice:
    """`with ember.default_device(d):` — `d` is the default device inside the block."""

    def __init__(self, device):
        self.device = _as_device(device)
        self._prev = []

    def __enter__(self):
        from .array import set_default_device
        self._prev.append(set_default_device(self.device))
        return self.device

    def __exit__(self, *exc):
        from .array import set_default_device
        set_default_device(self._prev.pop())
        return False


_UNSET = object()


def default_device(device=_UNSET):
    """The default device (no argument), or a context manager that makes `device`
    the default inside a `with` block (JAX's `jax.default_device`).  The default
    is chosen at the first need: `EMBER_DEFAULT_DEVICE` (`cpu`, `cuda`, `cuda:1`),
    else the first GPU when one is usable, else the CPU.  The setting is process
    wide, not per thread.

    Example:
        >>> default_device()
        cpu:0
        >>> import ember.numpy as enp
        >>> with default_device("reference"):
        ...     enp.zeros(2).device
        reference:cpu:0
    """
    if device is _UNSET:
        return _default_device()
    return _DefaultDevice(device)


def _as_device(device) -> Device:
    if isinstance(device, str):
        return lookup_device(device)
    if not isinstance(device, Device):
        raise TypeError(f"device must be an ember Device or its name (e.g. 'cpu:0', 'cuda'), "
                        f"got {type(device).__name__}")
    return device


def device_put(x, device: Device | str | None = None):
    """Copy an array (or a pytree of arrays) onto `device` (a Device, or its name as
    printed: `"cpu:0"`, `"reference:cpu:0"`, or just the backend's name).

    Example:
        >>> import ember.numpy as enp
        >>> device_put(enp.ones(1)).tolist()
        [1.0]
        >>> device_put(enp.ones(1), "reference").device
        reference:cpu:0
    """
    if device is None:
        device = _default_device()
    elif isinstance(device, str):
        device = lookup_device(device, what="device_put: device")
    elif not isinstance(device, Device):
        raise TypeError(f"device_put: device must be an ember Device or its name (e.g. 'cpu:0', "
                        f"'cuda'), got {type(device).__name__}")

    def put(v):
        a = v if isinstance(v, Array) else from_host(v, device=device)
        if a.device == device:
            return a
        if not a.device.host_buffers and not device.host_buffers and \
                a.device.backend is device.backend:
            # between GPUs of one backend: a device-to-device copy
            return wrap_buffer(device.backend.copy_to(a._value, device), device, a.aval)
        host = np.asarray(a)
        return wrap_buffer(device.backend.put(host, device), device, a.aval)

    return tree_map(put, x)


def device_get(x):
    """A pytree's ember arrays as numpy arrays on the host (`jax.device_get`); other leaves
    pass through. Each result is a fresh, writable copy, so writing to it never touches the
    (immutable) ember array.

    Example:
        >>> import ember, ember.numpy as enp
        >>> out = ember.device_get({"w": enp.ones(2), "step": 3})
        >>> type(out["w"]).__name__, out["w"].tolist(), out["step"]
        ('ndarray', [1.0, 1.0], 3)
    """
    from .array import Array
    from .fx.core import Tracer
    from .tree import tree_map

    def get(v):
        if isinstance(v, Tracer):
            raise TypeError(f"device_get got a traced value ({v.aval.str_user()}) inside a "
                            "transformed function; return it from the function and call "
                            "device_get on the result")
        if isinstance(v, Array):
            return np.array(v._host(), copy=True)
        return v

    return tree_map(get, x)


def device_count(backend: str | None = None) -> int:
    """How many devices `devices(backend)` lists (jax.device_count).

    Example:
        >>> device_count()
        1
    """
    return len(devices(backend))


def local_devices(process_index: int | None = None, backend: str | None = None) -> list[Device]:
    """The devices of this process (jax.local_devices): every process of ember's
    data-parallel mapping drives its own devices, so these are `devices(backend)`.

    Example:
        >>> [str(d) for d in local_devices()]
        ['cpu:0']
    """
    return devices(backend)


def local_device_count(backend: str | None = None) -> int:
    """`len(local_devices(backend=backend))` (jax.local_device_count).

    Example:
        >>> local_device_count()
        1
    """
    return len(local_devices(backend=backend))


def default_backend() -> str:
    """The platform of the default device: "cpu", or "gpu" when a GPU is the default
    (jax.default_backend).

    Example:
        >>> default_backend()
        'cpu'
    """
    platform = _default_device().platform
    return "gpu" if platform == "cuda" else platform


def process_index() -> int:
    """This process's rank in `ember.distributed` (0 before `distributed.init()`), as
    jax.process_index.

    Example:
        >>> process_index()
        0
    """
    from . import distributed
    return distributed.rank() if distributed.is_initialized() else 0


def process_count() -> int:
    """The number of processes in `ember.distributed` (1 before `distributed.init()`),
    as jax.process_count.

    Example:
        >>> process_count()
        1
    """
    from . import distributed
    return distributed.world_size() if distributed.is_initialized() else 1


def block_until_ready(x):
    """Wait until every array in the pytree `x` is computed, and return `x`
    (jax.block_until_ready): for timing asynchronous GPU work.

    Example:
        >>> import ember.numpy as enp
        >>> block_until_ready({"a": enp.ones(2)})["a"].tolist()
        [1.0, 1.0]
    """
    tree_map(lambda a: a.block_until_ready() if isinstance(a, Array) else a, x)
    return x
