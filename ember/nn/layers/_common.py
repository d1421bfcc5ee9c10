"""Helpers shared by the layer families: initialisation keys and dtypes."""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ... import random


def check_sizes(layer: str, minimum: int = 0, **sizes) -> None:
    """Each keyword is a size argument as the user passed it: an int (or a sequence
    of ints) >= `minimum`; anything else is an error naming the argument and value,
    raised before it turns into a shape error deep inside an initialiser."""
    for name, v in sizes.items():
        if v is None:
            continue
        vals = tuple(v) if isinstance(v, (tuple, list)) else (v,)
        what = "an integer" if not isinstance(v, (tuple, list)) else "integers"
        if not all(isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)) for x in vals):
            raise TypeError(f"{layer}: {name} must be {what}, got {name}={v!r}")
        if any(x < minimum for x in vals):
            bound = "positive" if minimum == 1 else f">= {minimum}"
            raise ValueError(f"{layer}: {name} must be {bound}, got {name}={v!r}")


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
    d = _dt.canonicalize(dtype) if dtype is not None else _dt.default_float
    if not _dt.is_float(d):
        raise TypeError(f"layer parameters must be floating point, got dtype {d}")
    return d


def place(x, device):
    if device is None:
        return x
    from ...api_device import device_put
    return device_put(x, device)
