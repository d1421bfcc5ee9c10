"""Devices: listing them and moving arrays between them.

Example:
    >>> import ember, ember.numpy as enp
    >>> ember.device_put(enp.ones(2), ember.devices()[0]).device
    cpu:0
"""
from __future__ import annotations

import numpy as np

from .backends.base import Device, get_backend


def devices(backend: str | None = None) -> list[Device]:
    """The devices of a backend (default: cpu, plus cuda when a GPU is usable).

    Example:
        >>> [str(d) for d in devices()]
        ['cpu:0']
    """
    if backend is not None:
        return list(get_backend(backend).devices())
    return list(get_backend("cpu").devices())


def default_device() -> Device:
    return devices()[0]


def device_put(x, device: Device | str | None = None):
    """Copy an array (or a pytree of arrays) onto `device`.

    Example:
        >>> import ember.numpy as enp
        >>> device_put(enp.ones(1)).tolist()
        [1.0]
    """
    from .array import Array, wrap_buffer
    from .numpy._core import asarray
    from .tree import tree_map
    if device is None:
        device = default_device()
    elif isinstance(device, str):
        name, _, idx = device.partition(":")
        matches = [d for d in devices(name if name != "cpu" else None) if str(d) == f"{name}:{idx or 0}"]
        if not matches:
            raise ValueError(f"unknown device {device!r}; available: {[str(d) for d in devices()]}")
        device = matches[0]

    def put(v):
        a = v if isinstance(v, Array) else asarray(v)
        if a.device == device:
            return a
        host = np.asarray(a)
        return wrap_buffer(device.backend.put(host, device), device)

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
