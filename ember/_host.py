"""Host conversion: Python data, numpy arrays and DLPack producers into an
`Array` (dtype defaults, integer range checks, copy semantics).  It lives with
`Array`, below `ember.numpy`, so that the transforms and `device_put` convert
their inputs without importing the numpy layer.

Example:
    >>> from ember._host import from_host
    >>> from_host([1, 2]).dtype, from_host(2.5).dtype
    (dtype('int32'), dtype('float32'))
"""
from __future__ import annotations

import numpy as np

from . import dtypes as _dt
from .array import Array, wrap_buffer
from .fx.core import int_overflow_error, user_source


def _first_out_of_range(obj, dtype, ints_only=False):
    """The first number (Python int with `ints_only`) in nested Python data outside
    `dtype`'s range (iterative walk)."""
    info = np.iinfo(dtype)
    kinds = (int, np.integer) if ints_only else (int, float, np.number)
    stack = [obj]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(reversed(v))
        elif isinstance(v, kinds) and not isinstance(v, bool):
            try:
                iv = int(v)
            except (OverflowError, ValueError):  # inf / nan
                continue
            if not info.min <= iv <= info.max:
                return v
    return None


def _holds_float(obj) -> bool:
    """Whether nested Python data holds a float (then ints in it are promoted, not checked)."""
    stack = [obj]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, (float, np.floating)):
            return True
    return False


def _python_data_as_int(obj, dtype) -> np.ndarray:
    """Python data in an integer dtype.  numpy's constructor refuses values out of range
    (astype would wrap 300 to 44 in int8); the error names the value and the dtype."""
    try:
        return np.array(obj, dtype=dtype)
    except ValueError:
        raise TypeError(f"cannot convert {type(obj).__name__} to an ember array of {dtype}: "
                        f"ragged or non-numeric data") from None
    except OverflowError:
        bad = _first_out_of_range(obj, dtype)
        if bad is None:
            raise
        raise int_overflow_error(bad, dtype, "asarray", "pass a wider dtype, e.g. int64") from None


def _host_array(obj, dtype) -> np.ndarray:
    if isinstance(obj, np.ndarray) or isinstance(obj, np.generic):
        a = np.array(obj, copy=True)
        if dtype is not None:
            a = a.astype(dtype)
        return a
    if hasattr(obj, "__dlpack__") and not isinstance(obj, (list, tuple)):
        a = np.array(np.from_dlpack(obj), copy=True)
        return a.astype(dtype) if dtype is not None else a
    if dtype is not None and _dt.kind(dtype) in "iu":
        return _python_data_as_int(obj, dtype)
    try:
        a = np.array(obj)
    except ValueError:  # numpy's message for ragged nesting speaks of "sequence" elements
        raise TypeError(f"cannot convert {type(obj).__name__} to an ember array: ragged nested "
                        f"sequences (every level must have equal lengths)") from None
    if dtype is None and a.dtype.kind in "iuO" and a.size:
        info = np.iinfo(_dt.default_int)
        exact = a.dtype.kind != "O" and info.min <= a.min() and a.max() <= info.max
        bad = None if exact else _first_out_of_range(obj, _dt.default_int)
        if bad is not None:
            raise int_overflow_error(bad, _dt.default_int, "asarray",
                                "pass dtype=ember.numpy.int64 (the default integer is int32)")
    if dtype is None and a.dtype.kind == "f" and a.size and np.abs(a).max() >= 2.0 ** 63:
        # numpy makes float64 of ints beyond int64 mixed with negatives ([2**63, -1]);
        # those ints must not become float32 silently (a NaN max compares False, but
        # data holding a NaN holds a float, which the check below accepts anyway)
        bad = None if _holds_float(obj) else _first_out_of_range(obj, _dt.default_int,
                                                                   ints_only=True)
        if bad is not None:
            raise int_overflow_error(bad, _dt.default_int, "asarray",
                                "pass dtype=ember.numpy.int64 (the default integer is int32)")
    if a.dtype == object:
        raise TypeError(f"cannot convert {type(obj).__name__} to an ember array: "
                        f"ragged or non-numeric data")
    if dtype is not None:
        return a.astype(dtype)
    # Python data: floats default to float32, ints to int32, complex to complex64.
    k = a.dtype.kind
    if k == "f":
        return a.astype(_dt.default_float)
    if k in "iu":
        return a.astype(_dt.default_int)
    if k == "c":
        return a.astype(_dt.default_complex)
    if k == "U" or k == "S":
        raise TypeError("ember arrays cannot hold strings")
    return a


def no_copy_error(obj, why):
    return ValueError(f"asarray: copy=False, but {why}, so a copy is needed; pass copy=None "
                      f"(copy only if needed) or copy=True")


def _shared_host_array(obj, dtype):
    """A read-only numpy view of `obj`'s memory for copy=False (the array API: never copy)."""
    if isinstance(obj, np.ndarray):
        a = obj
    elif hasattr(obj, "__dlpack__") and not isinstance(obj, (list, tuple, np.generic)):
        a = np.from_dlpack(obj, copy=False)
    else:
        raise no_copy_error(obj, f"a {type(obj).__name__} has no array buffer to share")
    if dtype is not None and a.dtype != dtype:
        raise no_copy_error(obj, f"its dtype {a.dtype} differs from the requested {dtype}")
    v = a.view()
    v.flags.writeable = False
    return v


def from_host(obj, dtype=None, *, copy=None, device=None) -> Array:
    """An Array of host data (Python data, a numpy array or scalar, a DLPack
    producer) on `device` (a Device; default: the default device).  A DLPack
    producer on a GPU (a CuPy array, a CUDA torch tensor) stays on the GPU.  `dtype` is canonical or None (numpy data keeps
    its dtype; Python floats become float32, ints int32); `copy=False` shares a numpy
    array's memory read-only or raises, otherwise the data is copied (the source may
    change later, an Array never does).

    Example:
        >>> import numpy as np
        >>> from_host(np.arange(3, dtype=np.int8)).dtype
        dtype('int8')
        >>> try:
        ...     from_host([300], np.dtype("int8"))
        ... except OverflowError as e:
        ...     print(str(e).splitlines()[0])
        asarray: Python int 300 is out of range for dtype int8 [-128, 127]; pass a wider dtype, e.g. int64
    """
    if _on_gpu(obj):
        return from_gpu_dlpack(obj, dtype, copy=copy, device=device)
    a = _shared_host_array(obj, dtype) if copy is False else _host_array(obj, dtype)
    _dt.canonicalize(a.dtype)
    if device is None:
        return wrap_buffer(a)
    if device.host_buffers:
        return wrap_buffer(a, device)
    return wrap_buffer(device.backend.put(a, device), device)


_KDL_CUDA, _KDL_CUDA_MANAGED = 2, 13   # DLPack device types of CUDA memory


def _on_gpu(obj) -> bool:
    """Whether `obj` is a DLPack producer whose data is in CUDA memory."""
    dev = getattr(obj, "__dlpack_device__", None)
    if dev is None or isinstance(obj, (np.ndarray, np.generic, Array)):
        return False
    try:
        return dev()[0] in (_KDL_CUDA, _KDL_CUDA_MANAGED)
    except Exception:  # a producer that cannot say: treat it as host data
        return False


def from_gpu_dlpack(obj, dtype=None, *, copy=None, device=None) -> Array:
    """An Array of a DLPack producer in CUDA memory, on its GPU (or `device`):
    copied by default, since the producer may still write to its buffer; with
    `copy=False` the memory is shared (the producer must leave it unchanged, as
    with JAX).  Needs a GPU (ember's `cuda` backend).

    Example:
        >>> import numpy as np
        >>> _on_gpu(np.ones(2))
        False
    """
    from .backends.base import lookup_device
    gpu_id = obj.__dlpack_device__()[1]
    target = device if device is not None else lookup_device(f"cuda:{gpu_id}", what="from_dlpack: device")
    if target.host_buffers:   # asked for on the host: one device-to-host copy
        return from_host(np.asarray(lookup_device("cuda").backend.get(_cupy_view(obj))), dtype,
                         device=target)
    buf = _cupy_view(obj)
    if dtype is not None and buf.dtype != dtype:
        if copy is False:
            raise no_copy_error(obj, f"its dtype {buf.dtype} differs from the requested {dtype}")
        buf = buf.astype(dtype)
    elif copy is not False:
        buf = buf.copy()
    _dt.canonicalize(buf.dtype)
    if getattr(buf.device, "id", target.id) != target.id:
        buf = target.backend.copy_to(buf, target)
    return wrap_buffer(buf, target)


def _cupy_view(obj):
    import cupy  # only reached for data already on a GPU
    return cupy.from_dlpack(obj)


