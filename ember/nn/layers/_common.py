"""Helpers shared by the layer families: initialisation keys and dtypes."""
from __future__ import annotations

from ... import dtypes as _dt
from ... import random


def init_keys(key, n: int):
    """n keys for a layer's initialisers: split from `key`, or from the global key
    (`nn.manual_seed`) when None."""
    if key is None:
        from ..module import _global_next_key
        key = _global_next_key()
    elif isinstance(key, int):
        key = random.key(key)
    return list(random.split(key, n))


def param_dtype(dtype):
    d = _dt.canonicalize(dtype) if dtype is not None else _dt.float32
    if not _dt.is_float(d):
        raise TypeError(f"layer parameters must be floating point, got dtype {d}")
    return d


def place(x, device):
    if device is None:
        return x
    from ...api_device import device_put
    return device_put(x, device)
