"""Collation: turning a list of samples into one batch.

``default_collate`` follows PyTorch's rules: arrays (numpy or ember) are stacked
along a new leading axis, Python ints/floats/bools become 1-D arrays, strings
stay lists, and containers (tuples, lists, dicts, namedtuples, dataclasses) are
collated field by field. ``default_convert`` does the same conversion without
batching (it is the collate function when auto-batching is off).

The recursion itself is numpy-only (``_collate`` / ``_convert`` take a ``leaf``
function applied to every batched array). DataLoader worker processes run it
with the identity so only numpy crosses process boundaries; the main process
turns leaves into ember arrays through :func:`_to_ember`, the one place where
that conversion happens.

Also here: :func:`pad_sequence` and :func:`lengths_to_mask` for variable-length
data.
"""

from __future__ import annotations

import collections.abc
import dataclasses
from typing import Any, Callable

import numpy as np

__all__ = ["default_collate", "default_convert", "pad_sequence", "lengths_to_mask"]


def _to_ember(x: np.ndarray, owned: bool = False):
    """Wrap a numpy batch leaf as an ember array (the single conversion point).

    The loader owns every batch buffer it builds (freshly collated or copied out
    of shared memory), so it is wrapped without a copy and frozen read-only;
    `owned` says so for a buffer that is a view (a pinned block), which on a GPU
    default device is then the source of the host-to-device copy.
    """
    from ember.array import wrap_buffer
    from ember.numpy import asarray
    if isinstance(x, np.ndarray) and (owned or x.flags.owndata) and x.dtype.kind in "biufc?":
        try:
            return wrap_buffer(x)
        except TypeError:  # a dtype ember does not support: let asarray explain
            pass
    return asarray(x)


def _identity(x):
    return x


def _is_ember_array(x: Any) -> bool:
    # Checked by module rather than by class so that worker processes (and
    # importing ember.data) never need to import the array core.
    t = type(x)
    return (
        not isinstance(x, np.ndarray)
        and t.__module__.split(".", 1)[0] == "ember"
        and hasattr(x, "__array__")
    )


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _is_dataclass_instance(x: Any) -> bool:
    return dataclasses.is_dataclass(x) and not isinstance(x, type)


def _rebuild_dataclass(template: Any, values: dict) -> Any:
    cls = type(template)
    fields = dataclasses.fields(cls)
    if all(f.init for f in fields):
        return cls(**values)
    # Fields with init=False cannot go through __init__; set them directly
    # (object.__setattr__ also works for frozen dataclasses).
    out = object.__new__(cls)
    for name, value in values.items():
        object.__setattr__(out, name, value)
    return out


def _rebuild_mapping(template: collections.abc.Mapping, values: dict) -> Any:
    try:
        if isinstance(template, collections.abc.MutableMapping):
            # Keeps subclass state such as defaultdict's default_factory.
            import copy

            out = copy.copy(template)
            out.update(values)
            return out
        return type(template)(values)
    except TypeError:
        # The mapping type cannot be rebuilt from a dict; fall back like PyTorch.
        return values


_STRINGLIKE_KINDS = frozenset("OUSV")


def _promote(dtypes: list) -> np.dtype:
    """PyTorch's promotion across a batch: a floating (complex) dtype wins over any
    integer or bool one without widening (int32 with float32 is float32; numpy's
    `result_type` would give float64), within a category the wider dtype wins."""
    inexact = [d for d in dtypes if d.kind in "fc"]
    if inexact:
        try:
            return np.result_type(*inexact)
        except TypeError:  # ml_dtypes' bfloat16 with float16: PyTorch's float32
            return np.dtype(np.float32)
    return np.result_type(*dtypes)


def _python_number_dtype(values: list) -> np.dtype:
    # All samples decide: a bool-only batch stays bool, any float makes it float64
    # (PyTorch gives float64 when the first sample is a float and float32 when an
    # int comes first; ember does not let the first sample's type pick).
    if all(isinstance(v, bool) for v in values):
        return np.dtype(np.bool_)
    if all(isinstance(v, int) for v in values):
        return np.dtype(np.int64)
    if any(isinstance(v, complex) for v in values):
        return np.dtype(np.complex128)
    return np.dtype(np.float64)


def _is_python_number(x: Any) -> bool:
    # numpy's float64/complex128 subclass float/complex, but carry a dtype of their own
    return isinstance(x, (int, float, complex)) and not isinstance(x, np.generic)


def _check_numeric(batch: list, what: str, lists_ok: bool = False) -> None:
    kinds = (int, float, complex, np.generic, np.ndarray) + ((list, tuple) if lists_ok else ())
    for i, b in enumerate(batch):
        ok = isinstance(b, kinds) or _is_ember_array(b)
        if not ok or (isinstance(b, (np.generic, np.ndarray)) and b.dtype.kind in _STRINGLIKE_KINDS):
            raise TypeError(
                f"default_collate: entry 0 of the batch is {what} but entry {i} is "
                f"{type(b).__name__}{' of dtype ' + str(b.dtype) if hasattr(b, 'dtype') else ''}; "
                f"every sample must have the same structure (or pass a collate_fn)"
            )


def _stack(arrays: list, leaf: Callable, weak: tuple = ()) -> Any:
    """Stack equal-shaped arrays; `weak` holds the Python numbers of the batch, which
    (as in PyTorch) do not widen the arrays' dtype, only lift ints/bools to floats."""
    first = arrays[0]
    if first.dtype.kind in _STRINGLIKE_KINDS:
        raise TypeError(
            "default_collate: batch must contain arrays, numbers, dicts or lists; "
            f"found an array of dtype {first.dtype}"
        )
    shape = first.shape
    for i, a in enumerate(arrays):
        if a.shape != shape:
            raise ValueError(
                "default_collate: stack expects each array to be equal size, but got "
                f"{shape} at entry 0 and {a.shape} at entry {i}; pad the samples (pad_sequence) "
                f"or pass a collate_fn"
            )
    strong = [a.dtype for a, w in zip(arrays, weak or (False,) * len(arrays)) if not w]
    dtype = _promote(strong) if strong else _python_number_dtype([a.item() for a in arrays])
    if weak and any(weak):
        kinds = {type(a.item()) for a, w in zip(arrays, weak) if w}
        if dtype.kind in "biu" and float in kinds:
            dtype = np.dtype(np.float64)
        elif dtype.kind == "b" and int in kinds:
            dtype = np.dtype(np.int64)
    return leaf(np.stack([a.astype(dtype, copy=False) for a in arrays]))


def _collate(batch: list, leaf: Callable) -> Any:
    """Collate ``batch`` (a list of samples); ``leaf`` finalises each batched array."""
    if not isinstance(batch, collections.abc.Sequence) or isinstance(batch, (str, bytes)):
        raise TypeError(f"default_collate expects a list of samples, got {type(batch).__name__}")
    if len(batch) == 0:
        raise ValueError("default_collate: cannot collate an empty batch")
    elem = batch[0]
    if isinstance(elem, (np.ndarray, np.generic)) or _is_ember_array(elem):
        _check_numeric(batch, "an array" if not isinstance(elem, np.generic) else "a numpy scalar",
                       lists_ok=True)
        return _stack([np.asarray(b) for b in batch], leaf, tuple(map(_is_python_number, batch)))
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, (int, float, complex)):
        _check_numeric(batch, f"a Python {type(elem).__name__}")
        if not all(map(_is_python_number, batch)):
            return _stack([np.asarray(b) for b in batch], leaf, tuple(map(_is_python_number, batch)))
        return leaf(np.array(batch, dtype=_python_number_dtype(batch)))
    if isinstance(elem, collections.abc.Mapping):
        for i, d in enumerate(batch):
            missing = [k for k in elem if k not in d]
            if missing:
                raise KeyError(f"default_collate: sample {i} of the batch has no key "
                               f"{missing[0]!r} that sample 0 has (keys {list(elem)[:8]}); every "
                               f"sample must be a dict with the same keys. Hint: fill missing "
                               f"fields in the dataset, or pass collate_fn=")
        values = {key: _collate([d[key] for d in batch], leaf) for key in elem}
        return _rebuild_mapping(elem, values)
    if _is_namedtuple(elem):
        return type(elem)(*(_collate(list(s), leaf) for s in zip(*batch)))
    if _is_dataclass_instance(elem):
        names = [f.name for f in dataclasses.fields(elem)]
        values = {n: _collate([getattr(b, n) for b in batch], leaf) for n in names}
        return _rebuild_dataclass(elem, values)
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(b) != size for b in batch):
            bad = next(i for i, b in enumerate(batch) if len(b) != size)
            raise ValueError(f"default_collate: each element in list of batch should be of equal "
                             f"size, but entry 0 has {size} items and entry {bad} has {len(batch[bad])}")
        columns = [_collate(list(s), leaf) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return tuple(columns)
        if isinstance(elem, list):
            return columns
        try:
            return type(elem)(columns)
        except TypeError:
            return columns
    raise TypeError(
        "default_collate: batch must contain arrays, numbers, strings, dicts, lists, "
        f"tuples, namedtuples or dataclasses; found {type(elem).__name__}"
    )


def _convert(data: Any, leaf: Callable) -> Any:
    """Convert one (unbatched) sample; ``leaf`` finalises each numeric array."""
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, np.ndarray) or _is_ember_array(data):
        arr = np.asarray(data)
        return arr if arr.dtype.kind in _STRINGLIKE_KINDS else leaf(arr)
    if isinstance(data, np.generic):
        return leaf(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {k: _convert(v, leaf) for k, v in data.items()})
    if _is_namedtuple(data):
        return type(data)(*(_convert(d, leaf) for d in data))
    if _is_dataclass_instance(data):
        values = {f.name: _convert(getattr(data, f.name), leaf) for f in dataclasses.fields(data)}
        return _rebuild_dataclass(data, values)
    if isinstance(data, tuple):
        return tuple(_convert(d, leaf) for d in data)
    if isinstance(data, list):
        return [_convert(d, leaf) for d in data]
    return data


def _map_arrays(fn: Callable, data: Any) -> Any:
    """Apply ``fn`` to every numpy/ember array inside nested containers."""
    if isinstance(data, np.ndarray) or _is_ember_array(data):
        return fn(data)
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {k: _map_arrays(fn, v) for k, v in data.items()})
    if _is_namedtuple(data):
        return type(data)(*(_map_arrays(fn, d) for d in data))
    if _is_dataclass_instance(data):
        values = {f.name: _map_arrays(fn, getattr(data, f.name)) for f in dataclasses.fields(data)}
        return _rebuild_dataclass(data, values)
    if isinstance(data, tuple):
        return tuple(_map_arrays(fn, d) for d in data)
    if isinstance(data, list):
        return [_map_arrays(fn, d) for d in data]
    return data


def default_collate(batch: list) -> Any:
    """Merge a list of samples into a batch, PyTorch-style.

    * arrays (numpy or ember) of equal shape -> stacked ember array ``(B, *shape)``
    * Python ``int`` -> int64, ``float`` -> float64, ``bool`` -> bool arrays; the
      dtype comes from every sample (ints with one float give float64)
    * numpy scalars -> arrays of their dtype
    * samples of different dtypes are promoted as PyTorch's ``stack`` does (a float
      dtype wins over ints without widening: int32 with float32 gives float32);
      Python numbers mixed with numpy values do not widen them
    * ``str``/``bytes`` -> the list unchanged
    * tuples, lists, dicts, namedtuples and dataclasses -> the same container
      with each field collated

    Example::

        >>> b = default_collate([(np.zeros(3), 1), (np.ones(3), 2)])
        >>> np.asarray(b[0]).shape, np.asarray(b[1]).tolist()
        ((2, 3), [1, 2])
    """
    return _collate(batch, _to_ember)


def default_convert(data: Any) -> Any:
    """Convert one sample's numpy arrays/scalars to ember arrays, keeping structure.

    Used as the collate function when automatic batching is disabled
    (``DataLoader(batch_size=None)``). Strings, Python numbers and unknown
    objects pass through unchanged.

    Example::

        >>> out = default_convert({"x": np.arange(3), "name": "a"})
        >>> np.asarray(out["x"]).tolist(), out["name"]
        ([0, 1, 2], 'a')
    """
    return _convert(data, _to_ember)


def _pad_numpy(sequences, batch_first: bool, padding_value, padding_side: str) -> np.ndarray:
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
    seqs = [np.asarray(s) for s in sequences]
    if not seqs:
        raise ValueError("pad_sequence: received an empty list of sequences")
    trailing = seqs[0].shape[1:]
    for i, s in enumerate(seqs):
        if s.ndim == 0:
            raise ValueError(f"pad_sequence: sequence {i} is 0-d; every sequence needs a length axis")
        if s.shape[1:] != trailing:
            raise ValueError(
                f"pad_sequence: trailing dimensions must match, got {trailing} for sequence 0 "
                f"and {s.shape[1:]} for sequence {i}"
            )
    dtype = np.result_type(*seqs)
    max_len = max(s.shape[0] for s in seqs)
    out = np.full((len(seqs), max_len) + trailing, padding_value, dtype=dtype)
    for i, s in enumerate(seqs):
        n = s.shape[0]
        if padding_side == "right":
            out[i, :n] = s
        elif n:
            out[i, max_len - n :] = s
    return out if batch_first else np.swapaxes(out, 0, 1)


def pad_sequence(sequences, batch_first: bool = False, padding_value=0, padding_side: str = "right"):
    """Pad a list of variable-length arrays to a common length and stack them.

    Each sequence has shape ``(L_i, *rest)``; the result has shape
    ``(max_L, B, *rest)``, or ``(B, max_L, *rest)`` with ``batch_first=True``.
    ``padding_side="left"`` right-aligns the sequences (padding goes first).
    Returns an ember array.

    Example::

        >>> p = pad_sequence([np.array([1, 2, 3]), np.array([4])], batch_first=True)
        >>> np.asarray(p).tolist()
        [[1, 2, 3], [4, 0, 0]]
    """
    out = _pad_numpy(sequences, batch_first, padding_value, padding_side)
    return _to_ember(np.ascontiguousarray(out))


def lengths_to_mask(lengths, max_len: int | None = None, padding_side: str = "right"):
    """Boolean mask ``(B, max_len)``: True marks a real token, False padding.

    Matches the layout produced by :func:`pad_sequence` with ``batch_first=True``
    and the same ``padding_side``, so it can be used directly as an attention
    mask. ``max_len`` defaults to ``max(lengths)``.

    Example::

        >>> np.asarray(lengths_to_mask([3, 1])).tolist()
        [[True, True, True], [True, False, False]]
    """
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
    lens = np.asarray(lengths)
    if lens.ndim != 1:
        raise ValueError(f"lengths must be 1-D, got shape {lens.shape}")
    if lens.size and (lens.dtype.kind not in "iu" or lens.min() < 0):
        raise ValueError("lengths must be non-negative integers")
    if max_len is None:
        max_len = int(lens.max()) if lens.size else 0
    elif lens.size and int(lens.max()) > max_len:
        raise ValueError(f"max_len={max_len} is smaller than the longest length {int(lens.max())}")
    positions = np.arange(max_len)
    if padding_side == "right":
        mask = positions[None, :] < lens[:, None]
    else:
        mask = positions[None, :] >= (max_len - lens)[:, None]
    return _to_ember(mask)
