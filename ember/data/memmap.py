"""Datasets over arrays on disk, read through memory maps.

:class:`MemmapDataset` serves rows of ``.npy`` files opened with
``np.load(path, mmap_mode="r")``: only the pages a batch touches are read, and
many worker processes share one page cache. :func:`load_npz` does the same for
the members of an ``.npz`` archive that are stored uncompressed (what
``np.savez`` writes) by mapping each member's bytes inside the zip file;
compressed members (``np.savez_compressed``) cannot be mapped and are loaded
into memory.

Pickling a :class:`MemmapDataset` (as ``spawn`` workers do) sends only file
paths and offsets; each process maps the files itself.
"""

from __future__ import annotations

import os
import struct
import zipfile
from typing import Sequence

import numpy as np

from .datasets import Dataset

__all__ = ["MemmapDataset", "load_npz"]


class _Source:
    """How to (re)open one array in any process."""

    def __init__(self, path: str, offset: int | None = None, dtype=None, shape=None,
                 fortran: bool = False, array: np.ndarray | None = None):
        self.path = path
        self.offset = offset
        self.dtype = dtype
        self.shape = shape
        self.fortran = fortran
        self.array = array  # set for data that could not be memory-mapped

    def open(self) -> np.ndarray:
        if self.array is not None:
            return self.array
        if self.offset is None:
            return np.load(self.path, mmap_mode="r")
        if int(np.prod(self.shape, dtype=np.int64)) == 0:
            return np.empty(self.shape, self.dtype)  # mmap cannot map 0 bytes
        return np.memmap(self.path, dtype=self.dtype, mode="r", offset=self.offset,
                         shape=self.shape, order="F" if self.fortran else "C")


class MemmapDataset(Dataset):
    """Rows of memory-mapped ``.npy`` files; sample ``i`` is ``tuple(a[i] for a in arrays)``.

    All files must share their first dimension. Samples are read-only numpy
    views into the mapping; the DataLoader's collate copies them into batches.

    Example::

        np.save("x.npy", np.random.rand(100_000, 32).astype(np.float32))
        np.save("y.npy", np.arange(100_000))
        ds = MemmapDataset("x.npy", "y.npy")
        loader = DataLoader(ds, batch_size=256, shuffle=True, num_workers=2, seed=0)
    """

    def __init__(self, *paths: str | os.PathLike):
        if not paths:
            raise ValueError("MemmapDataset needs at least one .npy path")
        self._init_sources([_Source(os.fspath(p)) for p in paths])

    @classmethod
    def _from_sources(cls, sources: list[_Source]) -> "MemmapDataset":
        self = cls.__new__(cls)
        self._init_sources(sources)
        return self

    def _init_sources(self, sources: list[_Source]) -> None:
        self._sources = sources
        self._arrays = None
        arrays = self.arrays
        for i, a in enumerate(arrays):
            if a.ndim == 0:
                raise ValueError(f"MemmapDataset: array {i} is 0-d; arrays need a sample axis")
        sizes = [a.shape[0] for a in arrays]
        if len(set(sizes)) != 1:
            raise ValueError(f"Size mismatch between arrays: first dimensions are {sizes}")

    @property
    def arrays(self) -> tuple[np.ndarray, ...]:
        """The mapped arrays (opened on first use in each process)."""
        if self._arrays is None:
            self._arrays = tuple(s.open() for s in self._sources)
        return self._arrays

    def __getstate__(self):
        # Send paths, not mapped data: the receiving process maps on its own.
        state = self.__dict__.copy()
        state["_arrays"] = None
        return state

    def __getitem__(self, index):
        return tuple(np.asarray(a[index]) for a in self.arrays)

    def __getitems__(self, indices) -> list:
        idx = np.asarray(indices, dtype=np.intp)
        return list(zip(*(np.asarray(a[idx]) for a in self.arrays)))

    def __len__(self) -> int:
        return self.arrays[0].shape[0]


_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # zip local file header, 30 bytes


def _member_source(path: str, fh, info: zipfile.ZipInfo) -> _Source | None:
    """A memmap source for an uncompressed ``.npy`` member, or None if impossible."""
    if info.compress_type != zipfile.ZIP_STORED:
        return None
    fh.seek(info.header_offset)
    header = fh.read(_LOCAL_HEADER.size)
    if len(header) != _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
        return None
    fields = _LOCAL_HEADER.unpack(header)
    name_len, extra_len = fields[-2], fields[-1]
    fh.seek(info.header_offset + _LOCAL_HEADER.size + name_len + extra_len)
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
    else:
        return None
    if dtype.hasobject:
        return None
    return _Source(path, fh.tell(), dtype, shape, fortran)


def load_npz(path: str | os.PathLike, keys: Sequence[str] | str | None = None, mmap: bool = True) -> MemmapDataset:
    """A dataset over the arrays of an ``.npz`` file, in the order of ``keys``.

    ``keys`` defaults to every array in the archive (in archive order). With
    ``mmap=True``, members stored uncompressed (``np.savez``) are memory-mapped
    in place; compressed members (``np.savez_compressed``) and ``mmap=False``
    load into memory.

    Example::

        np.savez("data.npz", x=np.zeros((10, 3)), y=np.arange(10))
        ds = load_npz("data.npz", keys=["x", "y"])
        x0, y0 = ds[0]
    """
    path = os.fspath(path)
    with zipfile.ZipFile(path) as zf:
        members = {info.filename[:-4]: info for info in zf.infolist() if info.filename.endswith(".npy")}
    if keys is None:
        keys = list(members)
    elif isinstance(keys, str):
        keys = [keys]
    else:
        keys = list(keys)
    if not keys:
        raise ValueError(f"{path} holds no arrays to load")
    missing = [k for k in keys if k not in members]
    if missing:
        raise KeyError(f"{missing} not found in {path}; available: {sorted(members)}")
    sources: list[_Source] = []
    with open(path, "rb") as fh:
        for k in keys:
            src = _member_source(path, fh, members[k]) if mmap else None
            sources.append(src)
    if any(s is None for s in sources):
        with np.load(path, allow_pickle=False) as npz:
            sources = [s if s is not None else _Source(path, array=npz[k]) for s, k in zip(sources, keys)]
    return MemmapDataset._from_sources(sources)
