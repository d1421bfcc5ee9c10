"""`Array`: an immutable n-dimensional array on a device.

An Array holds a backend buffer (a read-only numpy array on the CPU) and its
abstract value.  It never changes after creation: functional updates go
through `x.at[idx].set(v)`.

Example:
    >>> import ember.numpy as enp
    >>> x = enp.asarray([1.0, 2.0])
    >>> x
    Array([1., 2.], dtype=float32)
"""
from __future__ import annotations

import os

import numpy as np

from . import dtypes as _dt
from .backends import base as _base
from .backends.base import Device, get_backend
from .fx import core as _core
from .fx.core import AbstractArray
from .ops_mixin import ArrayOps

_CPU: Device | None = None
_DEFAULT: Device | None = None


def cpu_device() -> Device:
    """The CPU backend's device.

    Example:
        >>> cpu_device()
        cpu:0
    """
    global _CPU
    if _CPU is None:
        _CPU = get_backend("cpu").devices()[0]
    return _CPU


def default_device() -> Device:
    """Where arrays made from host data, and operations on no array, are placed.
    Chosen once, at the first need (never at `import ember`): the device named by
    `EMBER_DEFAULT_DEVICE` (`cpu`, `cuda`, `cuda:1`), else the first GPU when one is
    usable (as in JAX), else the CPU.  The GPU check imports CuPy only when
    `backends.cuda.backend.gpu_may_be_present()` (no import) says a GPU may be there.
    `ember.default_device(d)` overrides it inside a `with` block.

    Example:
        >>> default_device()
        cpu:0
    """
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = _initial_default()
    return _DEFAULT


def _initial_default() -> Device:
    spec = os.environ.get("EMBER_DEFAULT_DEVICE", "").strip()
    if spec:
        return _base.lookup_device(spec, what="EMBER_DEFAULT_DEVICE")
    from .backends.cuda.backend import gpu_may_be_present
    if gpu_may_be_present():
        devs = get_backend("cuda").devices()
        if devs:
            return devs[0]
    return get_backend(_base.DEFAULT_BACKEND).devices()[0]


def set_default_device(device: Device | None) -> Device | None:
    """Make `device` the default (None: choose again at the next need); returns the
    previous setting.  `ember.default_device(d)` is the scoped form.

    Example:
        >>> prev = set_default_device(cpu_device())
        >>> _ = set_default_device(prev)
    """
    global _DEFAULT
    prev, _DEFAULT = _DEFAULT, device
    return prev


class Array(ArrayOps):
    """An immutable array.  Create one with `ember.numpy.asarray` and friends."""
    __slots__ = ("_value", "_aval", "_device", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, *a, **k):
        raise TypeError("ember.Array cannot be constructed directly; "
                        "use ember.numpy.asarray(...) or ember.numpy.array(...)")

    # --- abstract information ---
    @property
    def aval(self) -> AbstractArray:
        a = self._aval
        if a is None:
            v = self._value
            a = self._aval = AbstractArray(v.shape, _dt.canonicalize(v.dtype))
        return a

    @property
    def shape(self) -> tuple:
        return self._value.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return self._value.ndim

    @property
    def size(self) -> int:
        return self._value.size

    @property
    def weak_type(self) -> bool:
        return self.aval.weak_type

    @property
    def device(self) -> Device:
        return self._device

    def to_device(self, device, /, *, stream=None) -> "Array":
        from .api_device import device_put  # api_device imports this module
        return device_put(self, device)

    # --- conversion to host values ---
    def _host(self) -> np.ndarray:
        d = self._device
        if d.host_buffers:
            return self._value
        v = d.backend.get(self._value)
        a = self._aval
        if a is not None and v.dtype != a.dtype and a.dtype == _dt.bfloat16 and v.dtype == np.uint16:
            # the CUDA executable keeps bfloat16 as its uint16 bits on a CuPy without
            # bfloat16 arrays (backends/cuda/runtime.py): read them back as what they are
            v = v.view(_dt.bfloat16)
        return v

    def __array__(self, dtype=None, copy=None):
        if copy is False and not self._device.host_buffers:
            raise ValueError(f"np.asarray(x, copy=False): x lives on {self._device}, so converting "
                             f"it to numpy copies it to the host; pass copy=None or copy=True")
        v = self._host()
        if copy:
            return np.array(v, dtype=dtype, copy=True)
        if dtype is not None and np.dtype(dtype) != v.dtype:
            if copy is False:
                raise ValueError("cannot convert dtype without a copy")
            return v.astype(dtype)
        return v

    @property
    def __cuda_array_interface__(self):
        """The CUDA array interface of an array on a GPU (absent on the CPU, so
        `hasattr` tells consumers such as PyTorch and Numba where it lives); shared,
        not copied: as with JAX, the consumer must not write to it.

        Example:
            >>> import ember.numpy as enp
            >>> hasattr(enp.ones(2), "__cuda_array_interface__")
            False
        """
        d = self._device
        if d.host_buffers or not hasattr(self._value, "__cuda_array_interface__"):
            raise AttributeError(f"__cuda_array_interface__: this array lives on {d}, not on a GPU")
        return self._exportable().__cuda_array_interface__

    def _exportable(self):
        """The device buffer, first copied when the backend says a consumer must not
        see it (a broadcast, stride-0 view, where one write changes many elements;
        memory the backend shares between arrays).  The copy replaces the buffer (the
        same values: an Array never changes), so later exports share it."""
        v = self._value
        if self._device.backend.needs_private_copy(v):
            v = self._value = v.copy()
        return v

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export as a DLPack capsule without letting the consumer write into this
        immutable array: a DLPack >= 1.0 consumer gets the buffer flagged read-only; a
        consumer of the old, unversioned capsule (which cannot say read-only) gets a
        copy, and so does a broadcast (stride-0) array, where one write would change
        every element.  copy=True always copies; copy=False raises BufferError where
        a copy would be needed.

        Example:
            >>> import numpy as np, ember.numpy as enp
            >>> y = np.from_dlpack(enp.arange(3))
            >>> y.tolist(), y.flags.writeable
            ([0, 1, 2], False)
        """
        if not self._device.host_buffers:
            return self._device_dlpack(stream, max_version, dl_device, copy)
        v = self._host()
        if stream is not None:
            raise BufferError(f"__dlpack__: ember arrays live on the CPU, where stream must be "
                              f"None (got stream={stream!r})")
        versioned = max_version is not None and tuple(max_version) >= (1, 0)
        broadcast = v.size > 1 and 0 in v.strides
        if copy is True or (copy is None and (not versioned or broadcast)):
            v = np.array(v, copy=True)
            copy = None
        elif copy is False and not versioned:
            raise BufferError("__dlpack__: copy=False needs a DLPack >= 1.0 consumer "
                              "(max_version=(1, 0)): an unversioned capsule cannot mark this "
                              "immutable array read-only, so it can only be exported as a copy")
        if max_version is None:
            if dl_device is not None:
                return v.__dlpack__(max_version=(0, 8), dl_device=dl_device, copy=copy)
            return v.__dlpack__()
        return v.__dlpack__(max_version=max_version, dl_device=dl_device, copy=copy)

    def _device_dlpack(self, stream, max_version, dl_device, copy):
        # a GPU buffer is exported by its own library (CuPy), zero-copy unless
        # copy=True; as with JAX, the consumer must not write to it
        v = self._value.copy() if copy else self._exportable()
        if max_version is not None:
            try:
                return v.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device,
                                    copy=copy)
            except TypeError:   # a library without the DLPack 1.0 keywords
                pass
        return v.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        if not self._device.host_buffers:
            return self._value.__dlpack_device__()
        return self._host().__dlpack_device__()

    def item(self):
        if self.size != 1:
            raise ValueError(f"item() needs an array of size 1, got shape {self.shape}")
        return self._host().item()

    def tolist(self):
        return self._host().tolist()

    def _scalar(self, what):
        if self.size != 1 or self.ndim != 0:
            if self.size != 1:
                raise TypeError(f"{what} needs an array of size 1 (got shape {self.shape}); "
                                f"use .any() / .all() for arrays")
        return self._host().item()

    def __bool__(self):
        return bool(self._scalar("bool()"))

    def __int__(self):
        return int(self._scalar("int()"))

    def __float__(self):
        return float(self._scalar("float()"))

    def __complex__(self):
        return complex(self._scalar("complex()"))

    def __index__(self):
        if not _dt.is_integer(self.dtype) and self.dtype != _dt.bool_:
            raise TypeError(f"only integer arrays can be used as an index, got {self.dtype}")
        return int(self._scalar("__index__"))

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self):
        raise TypeError("unhashable type: 'Array' (arrays are mutable-looking values; "
                        "use a tuple or mark the argument static only if it is a Python value)")

    def __repr__(self):
        v = self._host()
        body = np.array2string(v, separator=", ", prefix="Array(")
        return f"Array({body}, dtype={self.dtype})"

    def __str__(self):
        return str(self._host())

    def __format__(self, spec):
        if self.ndim == 0:
            return format(self._host().item(), spec)
        return format(str(self), spec)

    def __reduce__(self):
        return (_rebuild, (np.array(self._host()), self.aval.weak_type))

    def block_until_ready(self) -> "Array":
        d = self._device
        if not d.host_buffers:
            d.backend.block_until_ready(self._value)
        return self

    def copy(self) -> "Array":
        return self


def _rebuild(value, weak):
    # an unpickled array goes to the default device (wrap_buffer copies it there)
    return wrap_buffer(value, None, AbstractArray(value.shape, _dt.canonicalize(value.dtype), weak))


def wrap_buffer(buf, device: Device | None = None, aval: AbstractArray | None = None) -> Array:
    """Wrap a backend buffer (numpy on CPU) as an Array without copying.

    `aval`, when given, is the buffer's abstract value (with its weak type).
    Without `device`, the buffer is host data for the default device, copied there
    when that is not host memory.
    """
    a = object.__new__(Array)
    if device is None:
        device = _DEFAULT or default_device()
        if not device.host_buffers and isinstance(buf, (np.ndarray, np.generic)):
            # host data for a default device off the host (a GPU): copy it there
            buf = device.backend.put(buf, device)
    if device.host_buffers:
        if type(buf) is not np.ndarray:
            buf = np.asarray(buf)
        buf.setflags(False)   # write=False (positional: keyword parsing is slower)
    a._value = buf
    a._aval = aval
    a._device = device
    return a


_core.register_value_type(Array, wrap_buffer, default_device)
