"""Dataset types: the things a DataLoader reads samples from.

Two protocols, as in PyTorch:

* map-style :class:`Dataset` — ``__getitem__(i)`` and ``__len__``; optionally
  ``__getitems__(indices)`` to fetch a whole batch's samples in one call;
* :class:`IterableDataset` — ``__iter__``; in worker processes every worker
  iterates its own copy, so shard with :func:`~ember.data.get_worker_info`.

Plus the combinators :class:`ArrayDataset` (alias ``TensorDataset``),
:class:`Subset`, :class:`ConcatDataset`, :class:`ChainDataset` and
:func:`random_split`. The built-in datasets (``load_digits``) and on-disk
datasets (``load_npz``, ``MemmapDataset``) live in ``builtin.py`` and
``memmap.py`` and are re-exported here lazily.
"""

from __future__ import annotations

import bisect
import itertools
import math
import numbers
import warnings
from typing import Any, Iterable, Sequence

import numpy as np

__all__ = [
    "Dataset",
    "IterableDataset",
    "ArrayDataset",
    "TensorDataset",
    "Subset",
    "ConcatDataset",
    "ChainDataset",
    "random_split",
    "load_digits",  # noqa: F822 (lazy, see __getattr__)
    "load_npz",  # noqa: F822
    "MemmapDataset",  # noqa: F822
]


class Dataset:
    """Base class of map-style datasets.

    Subclasses implement ``__getitem__(index)`` and usually ``__len__``. They
    may also implement ``__getitems__(indices) -> list of samples`` to fetch a
    batch at once; the DataLoader then uses it. ``a + b`` concatenates.

    Example::

        class Squares(Dataset):
            def __len__(self):
                return 10
            def __getitem__(self, i):
                return i * i
    """

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """Base class of datasets that are streams: implement ``__iter__``.

    With ``num_workers > 0`` each worker iterates its own copy, so without
    sharding every sample comes out ``num_workers`` times. ``a + b`` chains.

    Example::

        class Count(IterableDataset):
            def __init__(self, n):
                self.n = n
            def __iter__(self):
                info = get_worker_info()
                if info is None:
                    return iter(range(self.n))
                return iter(range(info.id, self.n, info.num_workers))
    """

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other: "IterableDataset") -> "ChainDataset":
        return ChainDataset([self, other])


class ArrayDataset(Dataset):
    """Dataset over arrays that share their first dimension; sample ``i`` is
    ``tuple(a[i] for a in arrays)``.

    Arrays may be numpy arrays, ember arrays or anything ``np.asarray`` accepts;
    they are held as numpy arrays (zero-copy where possible) so samples are
    cheap numpy views, and the DataLoader's collate turns batches into ember
    arrays. ``TensorDataset`` is the PyTorch-named alias.

    Example::

        >>> ds = ArrayDataset(np.zeros((5, 3)), np.arange(5))
        >>> len(ds), int(ds[2][1])
        (5, 2)
    """

    def __init__(self, *arrays):
        if not arrays:
            raise ValueError("ArrayDataset needs at least one array")
        self.arrays = tuple(np.asarray(a) for a in arrays)
        for i, a in enumerate(self.arrays):
            if a.ndim == 0:
                raise ValueError(f"ArrayDataset: array {i} is 0-d; arrays need a sample axis")
        n = self.arrays[0].shape[0]
        if any(a.shape[0] != n for a in self.arrays):
            sizes = [a.shape[0] for a in self.arrays]
            raise ValueError(f"Size mismatch between arrays: first dimensions are {sizes}")

    @property
    def tensors(self) -> tuple:
        """PyTorch-compatible name for :attr:`arrays`."""
        return self.arrays

    def __getitem__(self, index):
        return tuple(a[index] for a in self.arrays)

    def __getitems__(self, indices) -> list:
        if type(self).__getitem__ is not ArrayDataset.__getitem__:
            # A subclass redefined samples; the vectorised path would bypass it.
            return [self[i] for i in indices]
        idx = np.asarray(indices, dtype=np.intp)
        columns = [a[idx] for a in self.arrays]
        return list(zip(*columns))

    def __len__(self) -> int:
        return self.arrays[0].shape[0]


TensorDataset = ArrayDataset


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order.

    Example::

        >>> s = Subset(ArrayDataset(np.arange(10)), [9, 0])
        >>> [int(s[i][0]) for i in range(len(s))]
        [9, 0]
    """

    def __init__(self, dataset: Dataset, indices: Sequence[int]):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices) -> list:
        getitems = getattr(self.dataset, "__getitems__", None)
        mapped = [self.indices[i] for i in indices]
        if getitems is not None:
            return getitems(mapped)
        return [self.dataset[i] for i in mapped]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Map-style datasets one after another.

    Example::

        >>> c = ConcatDataset([ArrayDataset(np.arange(3)), ArrayDataset(np.arange(10, 12))])
        >>> len(c), int(c[3][0]), int(c[-1][0])
        (5, 10, 11)
    """

    @staticmethod
    def cumsum(sequence) -> list[int]:
        out, total = [], 0
        for d in sequence:
            total += len(d)
            out.append(total)
        return out

    def __init__(self, datasets: Iterable[Dataset]):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset (use ChainDataset)")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if not isinstance(idx, numbers.Integral):
            raise TypeError(f"ConcatDataset indices must be integers, got {type(idx).__name__}")
        n = len(self)
        if idx < 0:
            if -idx > n:
                raise IndexError("absolute value of index should not exceed dataset length")
            idx += n
        if idx >= n:
            raise IndexError(f"index {idx} is out of range for ConcatDataset of length {n}")
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another (the chaining happens lazily).

    Example::

        >>> class R(IterableDataset):
        ...     def __init__(self, n): self.n = n
        ...     def __iter__(self): return iter(range(self.n))
        >>> list(ChainDataset([R(2), R(3)]))
        [0, 1, 0, 1, 2]
    """

    def __init__(self, datasets: Iterable[Dataset]):
        self.datasets = list(datasets)
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(
                    f"ChainDataset only supports IterableDataset, got {type(d).__name__}"
                )

    def __iter__(self):
        return itertools.chain.from_iterable(self.datasets)

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


def _split_rng(seed, generator) -> np.random.Generator:
    if seed is not None and generator is not None:
        raise ValueError("pass either seed or generator, not both")
    if generator is not None:
        return generator
    return np.random.Generator(np.random.PCG64(seed))


def random_split(dataset: Dataset, lengths: Sequence, seed: int | None = None, generator=None) -> list[Subset]:
    """Randomly split ``dataset`` into non-overlapping :class:`Subset` s.

    ``lengths`` holds either integer sizes summing to ``len(dataset)`` or
    fractions summing to 1. Fractions are floored and the leftover samples are
    handed out one each, round-robin from the first split (as PyTorch does).
    ``seed`` (or a numpy ``generator``) makes the split reproducible.

    Example::

        >>> train, val = random_split(ArrayDataset(np.arange(10)), [0.8, 0.2], seed=0)
        >>> len(train), len(val)
        (8, 2)
    """
    lengths = list(lengths)
    n = len(dataset)
    if not lengths:
        raise ValueError("lengths must not be empty")
    is_fractions = math.isclose(sum(lengths), 1.0) and sum(lengths) <= 1 + 1e-9 and not all(
        isinstance(x, numbers.Integral) for x in lengths
    )
    if is_fractions:
        for i, frac in enumerate(lengths):
            if not 0 <= frac <= 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1: {frac}")
        sizes = [int(math.floor(n * frac)) for frac in lengths]
        remainder = n - sum(sizes)
        for i in range(remainder):
            sizes[i % len(sizes)] += 1
        for i, size in enumerate(sizes):
            if size == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
        lengths = sizes
    for i, size in enumerate(lengths):
        if not isinstance(size, numbers.Integral) or size < 0:
            raise ValueError(f"split length at index {i} must be a non-negative integer, got {size!r}")
    if sum(lengths) != n:
        raise ValueError(
            f"Sum of input lengths ({sum(lengths)}) does not equal the length of the input dataset ({n})!"
        )
    perm = _split_rng(seed, generator).permutation(n).tolist()
    out, start = [], 0
    for size in lengths:
        out.append(Subset(dataset, perm[start : start + size]))
        start += size
    return out


_LAZY = {"load_digits": "builtin", "load_npz": "memmap", "MemmapDataset": "memmap"}


def __getattr__(name: str) -> Any:
    # Built-in/on-disk datasets import this module, so re-export them lazily.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__package__}.{module}"), name)
