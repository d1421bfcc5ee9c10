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
from .backends.base import Device, available_backends, get_backend
from .tree import tree_map


def devices(backend: str | None = None) -> list[Device]:
    """The devices of a backend (default: cpu, plus cuda when a GPU is usable).

    Example:
        >>> [str(d) for d in devices()]
        ['cpu:0']
        >>> devices("reference")
        [reference:cpu:0]
    """
    if backend is not None:
        return list(get_backend(backend).devices())
    return list(get_backend("cpu").devices())


def default_device() -> Device:
    """The device arrays made from host data go to (the CPU's).

    Example:
        >>> default_device()
        cpu:0
    """
    return _default_device()


def _parse_device(spec: str) -> Device:
    # "cpu", "cpu:0", "reference", "reference:cpu:0": a backend name, then its device
    name, _, rest = spec.partition(":")
    try:
        devs = get_backend(name).devices()
    except ValueError:
        devs = []
    want = f"{name}:{rest}" if rest else None
    for d in devs:
        if want is None or str(d) == want or f"{name}:{d.platform}:{d.id}" == want \
                or f"{name}:{d.id}" == want:
            return d
    known = [str(d) for b in available_backends() for d in get_backend(b).devices()]
    raise ValueError(f"unknown device {spec!r}; available: {known}")


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
        device = _parse_device(device)
    elif not isinstance(device, Device):
        raise TypeError(f"device_put: device must be an ember Device or its name (e.g. 'cpu:0'), "
                        f"got {type(device).__name__}")

    def put(v):
        a = v if isinstance(v, Array) else from_host(v)
        if a.device == device:
            return a
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
