"""Shared-memory transport for batches travelling from worker to main process.

A worker *encodes* a batch: the batch is pickled with a ``persistent_id`` hook
that pulls every numpy array (and ember array) out of the object graph, the
array payloads are copied into one ``multiprocessing.shared_memory`` segment,
and the only thing that goes through the result queue is a small
:class:`Encoded` record: the segment name, the pickled structure (with arrays
replaced by integer references) and a table of ``(dtype, flag, offset+shape)``.
The record's size depends on the batch's structure, never on its batch size,
because shapes are packed as fixed-width integers.

The main process *decodes*: it attaches to the segment, copies every array out
into private memory (so the segment can be unlinked right away and nothing
outlives it), unlinks, and unpickles the structure with a ``persistent_load``
hook that substitutes the arrays.

Segment names are ``ember_<owner pid>_<pool token>_<worker>_<counter>``, so a pool can
:func:`sweep` segments its workers created but never handed over (a worker
killed mid-batch, results still queued at shutdown).
"""

from __future__ import annotations

import io
import os
import pickle
import secrets
import struct
from dataclasses import dataclass
from multiprocessing import resource_tracker
from multiprocessing.shared_memory import SharedMemory
from typing import Any, Callable

import numpy as np

from .collate import _is_ember_array

__all__ = [
    "ATOMIC_MESSAGE_BYTES",
    "SHM_PREFIX",
    "Encoded",
    "SegmentWriter",
    "Spilled",
    "decode",
    "discard",
    "list_segments",
    "new_prefix",
    "owner_prefix",
    "receive",
    "sweep",
]

#: Every segment this module creates has a name starting with this.
SHM_PREFIX = "ember_"

_SHM_DIR = "/dev/shm"
_ALIGN = 64  # cache-line alignment keeps every dtype aligned and copies fast
_FLAG_EMBER = 0  # main process converts the leaf to an ember array
_FLAG_NUMPY = 1  # leaf stays a numpy array
#: The largest pickled message a worker sends through its result pipe itself.  A
#: pipe write of at most PIPE_BUF (4096 bytes on Linux, 512 by POSIX's minimum) is
#: atomic, so a worker killed while sending leaves all of such a message or none
#: of it; a longer one could be cut, and the main process would block forever
#: reading its rest.  Longer messages (large non-array leaves, long tracebacks)
#: travel in a segment, and the pipe carries a :class:`Spilled` naming it.
ATOMIC_MESSAGE_BYTES = 3072
_STRINGLIKE_KINDS = frozenset("USV")


def owner_prefix(pid: int | None = None) -> str:
    """Prefix shared by all segments of pools owned by process ``pid`` (default: this one)."""
    return f"{SHM_PREFIX}{os.getpid() if pid is None else pid:x}_"


def new_prefix() -> str:
    """A fresh segment-name prefix for one worker pool: ``ember_<owner pid>_<random>_``.

    Kept short (full names stay under 30 characters) because some platforms
    cap POSIX shm names at 31.
    """
    return f"{owner_prefix()}{secrets.token_hex(3)}_"


@dataclass(frozen=True)
class Encoded:
    """What a worker sends per batch: small metadata only, no array payloads."""

    segment: str | None  # None when the batch holds no array bytes
    structure: bytes  # pickled batch with arrays replaced by table indices
    table: tuple  # per array: (dtype or dtype.str, flag, packed offset/shape)


_dtype_wire_cache: dict = {}


def _dtype_on_wire(dt: np.dtype):
    # dtype.str is compact but loses structured fields and extension dtypes
    # (e.g. ml_dtypes' bfloat16 reads back as '<V2'); send those as objects.
    wire = _dtype_wire_cache.get(dt)
    if wire is None:
        try:
            wire = dt.str if np.dtype(dt.str) == dt else dt
        except TypeError:
            wire = dt
        _dtype_wire_cache[dt] = wire
    return wire


class _CollectingPickler(pickle.Pickler):
    def __init__(self, file, convert_all: bool):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.arrays: list = []
        self.flags: list = []
        self._convert_all = convert_all

    def persistent_id(self, obj):
        # Only exact ndarrays (and memmaps): subclasses like MaskedArray carry
        # extra state that raw bytes would lose, so they pickle normally.
        if type(obj) is np.ndarray or isinstance(obj, np.memmap):
            if obj.dtype.kind == "O":
                return None
            if obj.dtype.kind in _STRINGLIKE_KINDS or not self._convert_all:
                flag = _FLAG_NUMPY
            else:
                flag = _FLAG_EMBER
        elif _is_ember_array(obj):
            obj = np.asarray(obj)
            flag = _FLAG_EMBER
        else:
            return None
        self.arrays.append(obj)
        self.flags.append(flag)
        return len(self.arrays) - 1


class SegmentWriter:
    """Worker-side encoder; names segments ``<prefix><counter>``.

    Example::

        >>> w = SegmentWriter(new_prefix() + "0_")
        >>> enc = w.encode({"x": np.arange(4)}, convert_all=False)
        >>> decode(enc)["x"].tolist()
        [0, 1, 2, 3]
    """

    def __init__(self, prefix: str):
        self.prefix = prefix
        self._counter = 0

    def next_name(self) -> str:
        # Fixed-width counter keeps the record size independent of how many
        # batches came before; it wraps long after older segments are gone.
        name = f"{self.prefix}{self._counter:06x}"
        self._counter = (self._counter + 1) % 16**6
        return name

    def message(self, msg: Any) -> Any:
        """What to put on the result pipe for ``msg``: its pickle when that fits one
        atomic write (:data:`ATOMIC_MESSAGE_BYTES`), else a :class:`Spilled` for a
        segment holding it; :func:`receive` undoes either."""
        return _spill_message(self, msg)

    def encode(self, batch: Any, convert_all: bool) -> Encoded:
        """Move ``batch``'s arrays into a new segment and describe it.

        ``convert_all`` marks every numeric numpy array for conversion to an
        ember array in the main process (used for the default collate, whose
        output is all ember arrays); otherwise only arrays that were ember
        arrays in the worker come back as ember arrays.
        """
        buf = io.BytesIO()
        pickler = _CollectingPickler(buf, convert_all)
        pickler.dump(batch)
        arrays = pickler.arrays
        offsets = []
        total = 0
        for a in arrays:
            total = -(-total // _ALIGN) * _ALIGN
            offsets.append(total)
            total += a.nbytes
        table = tuple(
            (
                _dtype_on_wire(a.dtype),
                flag,
                struct.pack(f"<{2 + a.ndim}q", off, a.ndim, *a.shape),
            )
            for a, flag, off in zip(arrays, pickler.flags, offsets)
        )
        if total == 0:
            return Encoded(None, buf.getvalue(), table)
        name = self.next_name()
        seg = SharedMemory(name=name, create=True, size=total)
        try:
            for a, off in zip(arrays, offsets):
                if a.nbytes:
                    dst = np.ndarray(a.shape, a.dtype, buffer=seg.buf, offset=off)
                    dst[...] = a
                    del dst  # release the buffer export so close() can succeed
        except BaseException:
            seg.close()
            seg.unlink()
            raise
        seg.close()
        return Encoded(name, buf.getvalue(), table)


@dataclass(frozen=True)
class Spilled:
    """A result message too long for one atomic pipe write: its pickle is in ``segment``."""

    segment: str
    nbytes: int


def _spill_message(writer: "SegmentWriter", msg: Any) -> Any:
    data = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
    if len(data) <= ATOMIC_MESSAGE_BYTES:
        return data
    name = writer.next_name()
    seg = SharedMemory(name=name, create=True, size=len(data))
    try:
        seg.buf[: len(data)] = data
    except BaseException:
        seg.close()
        seg.unlink()
        raise
    seg.close()
    return Spilled(name, len(data))


def receive(wire: Any) -> Any:
    """The message a worker sent with :meth:`SegmentWriter.message` (main process):
    unpickled, and read out of its segment (then unlinked) when it was spilled."""
    if isinstance(wire, Spilled):
        seg = SharedMemory(name=wire.segment)
        try:
            data = bytes(seg.buf[: wire.nbytes])
        finally:
            seg.close()
            seg.unlink()
        return pickle.loads(data)
    return pickle.loads(wire)


def _unpack(entry) -> tuple:
    wire, flag, packed = entry
    offset, ndim = struct.unpack_from("<2q", packed)
    shape = struct.unpack_from(f"<{ndim}q", packed, 16)
    return np.dtype(wire), flag, offset, shape


class _SubstitutingUnpickler(pickle.Unpickler):
    def __init__(self, file, leaves: list):
        super().__init__(file)
        self._leaves = leaves

    def persistent_load(self, pid):
        return self._leaves[pid]


def decode(
    enc: Encoded,
    to_ember: Callable[[np.ndarray], Any] | None = None,
    alloc: Callable[[tuple, np.dtype], np.ndarray] | None = None,
) -> Any:
    """Rebuild a batch in the main process and unlink its segment.

    ``alloc(shape, dtype)`` provides destination buffers (e.g. page-locked
    memory for ``pin_memory``); default ``np.empty``. ``to_ember`` is applied to
    leaves flagged for ember conversion.
    """
    alloc = alloc or np.empty
    leaves: list = []
    entries = [_unpack(e) for e in enc.table]
    if enc.segment is not None:
        seg = SharedMemory(name=enc.segment)
        try:
            for dt, _flag, offset, shape in entries:
                out = alloc(shape, dt)
                src = np.ndarray(shape, dt, buffer=seg.buf, offset=offset)
                out[...] = src
                del src  # must not outlive the mapping
                leaves.append(out)
        finally:
            seg.close()
            seg.unlink()
    else:
        leaves = [alloc(shape, dt) for dt, _f, _o, shape in entries]
    if to_ember is not None:
        leaves = [to_ember(a) if e[1] == _FLAG_EMBER else a for a, e in zip(leaves, entries)]
    return _SubstitutingUnpickler(io.BytesIO(enc.structure), leaves).load()


def _unlink_name(name: str) -> None:
    try:
        seg = SharedMemory(name=name)
    except FileNotFoundError:
        return
    except (ValueError, OSError):
        # A segment whose creator died before sizing it cannot be mapped;
        # remove the file directly.
        _force_unlink(name)
        return
    seg.close()
    seg.unlink()


def _force_unlink(name: str) -> None:
    try:
        os.unlink(os.path.join(_SHM_DIR, name))
    except FileNotFoundError:
        return
    # Register first so the unregister below never names an unknown entry
    # (the creator may have died before registering it with the tracker).
    resource_tracker.register("/" + name, "shared_memory")
    resource_tracker.unregister("/" + name, "shared_memory")


def discard(enc: Any) -> None:
    """Free the segment behind an :class:`Encoded` that will never be decoded."""
    if isinstance(enc, Encoded) and enc.segment is not None:
        _unlink_name(enc.segment)


def list_segments(prefix: str = SHM_PREFIX) -> list[str]:
    """Names of existing segments starting with ``prefix`` (Linux; else [])."""
    try:
        return sorted(n for n in os.listdir(_SHM_DIR) if n.startswith(prefix))
    except OSError:
        return []


def sweep(prefix: str) -> int:
    """Unlink every segment whose name starts with ``prefix``; returns the count.

    Only meaningful once no process is still creating segments under
    ``prefix``. Where ``/dev/shm`` cannot be listed this does nothing and the
    multiprocessing resource tracker reclaims leftovers at exit instead.
    """
    if not prefix.startswith(SHM_PREFIX) or len(prefix) <= len(SHM_PREFIX):
        raise ValueError(f"refusing to sweep with the over-broad prefix {prefix!r}")
    names = list_segments(prefix)
    for name in names:
        _unlink_name(name)
    return len(names)
