"""Samplers: which indices a map-style dataset is read at, and in what order.

Index samplers (:class:`SequentialSampler`, :class:`RandomSampler`,
:class:`SubsetRandomSampler`, :class:`WeightedRandomSampler`,
:class:`DistributedSampler`) yield single indices; batch samplers
(:class:`BatchSampler`, :class:`BucketBatchSampler`) yield lists of indices.

Randomness: every random sampler takes either a ``seed`` or a numpy
``generator``. With a seed, epoch ``e`` draws from
``Generator(PCG64(SeedSequence([seed, e])))``, so each epoch's order is
reproducible on its own. The epoch advances by one on every ``iter()``
(except :class:`DistributedSampler`, which like PyTorch's needs
``set_epoch``), and ``set_epoch(e)`` sets it explicitly. With a generator the
sampler draws from it directly and the generator's state carries the
sequence. With neither, a seed is drawn from OS entropy once at construction.

``iter(sampler)`` draws the epoch's order immediately, not lazily, so the
random stream is consumed in the same order however the indices are used.
"""

from __future__ import annotations

import math
import numbers
from typing import Iterable, Iterator, Sequence

import numpy as np

__all__ = [
    "Sampler",
    "SequentialSampler",
    "RandomSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "BatchSampler",
    "DistributedSampler",
    "BucketBatchSampler",
]


def _check_positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value!r}")
    return int(value)


def _check_bool(name: str, value) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} should be a boolean value, but got {name}={value!r}")
    return value


class Sampler:
    """Base class: an iterable over dataset indices (or over batches of them).

    Subclasses implement ``__iter__`` and, where the count is known,
    ``__len__``.

    Example::

        class EvensFirst(Sampler):
            def __init__(self, n):
                self.n = n
            def __iter__(self):
                return iter(list(range(0, self.n, 2)) + list(range(1, self.n, 2)))
            def __len__(self):
                return self.n
    """

    def __init__(self, data_source=None):
        # Accepts (and ignores) PyTorch's legacy argument so subclasses that
        # call super().__init__(data_source) keep working.
        pass

    def __iter__(self) -> Iterator:
        raise NotImplementedError


class _Seeded:
    """Shared epoch/seed bookkeeping of the random samplers."""

    def _init_rng(self, seed, generator) -> None:
        if seed is not None and generator is not None:
            raise ValueError("pass either seed or generator, not both")
        if generator is not None and not isinstance(generator, np.random.Generator):
            raise TypeError(f"generator must be a numpy.random.Generator, got {type(generator).__name__}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0):
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        self.generator = generator
        self.seed = int(seed) if seed is not None else int(np.random.SeedSequence().entropy % 2**63)
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Use ``epoch``'s order on the next ``iter()``."""
        self.epoch = int(epoch)

    def _rng_for_epoch(self, advance: bool = True) -> np.random.Generator:
        if self.generator is not None:
            return self.generator
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([self.seed, self.epoch])))
        if advance:
            self.epoch += 1
        return rng


class SequentialSampler(Sampler):
    """Indices ``0 .. len(data_source) - 1`` in order.

    Example::

        >>> list(SequentialSampler(range(3)))
        [0, 1, 2]
    """

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(_Seeded, Sampler):
    """Random order over ``data_source``.

    Without replacement this is a permutation (several concatenated ones if
    ``num_samples > len(data_source)``, then a prefix of one more); with
    replacement, ``num_samples`` uniform draws.

    Example::

        >>> s = RandomSampler(range(5), seed=0)
        >>> sorted(s) == [0, 1, 2, 3, 4], list(s) != list(RandomSampler(range(5), seed=0))
        (True, True)
    """

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None,
                 generator: np.random.Generator | None = None, seed: int | None = None):
        self.data_source = data_source
        self.replacement = _check_bool("replacement", replacement)
        self._num_samples = num_samples
        if num_samples is not None:
            _check_positive_int("num_samples", num_samples)
        self._init_rng(seed, generator)

    @property
    def num_samples(self) -> int:
        # Computed on demand: the dataset may change size after construction.
        return len(self.data_source) if self._num_samples is None else int(self._num_samples)

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        rng = self._rng_for_epoch()
        k = self.num_samples
        if n == 0:
            return iter([])
        if self.replacement:
            return iter(rng.integers(0, n, size=k).tolist())
        parts = [rng.permutation(n) for _ in range(k // n)]
        if k % n:
            parts.append(rng.permutation(n)[: k % n])
        return iter(np.concatenate(parts).tolist() if parts else [])

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(_Seeded, Sampler):
    """The given ``indices`` in random order, without replacement.

    Example::

        >>> sorted(SubsetRandomSampler([4, 7, 9], seed=1))
        [4, 7, 9]
    """

    def __init__(self, indices: Sequence[int], generator: np.random.Generator | None = None,
                 seed: int | None = None):
        self.indices = indices
        self._init_rng(seed, generator)

    def __iter__(self) -> Iterator[int]:
        order = self._rng_for_epoch().permutation(len(self.indices))
        return iter([self.indices[i] for i in order.tolist()])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(_Seeded, Sampler):
    """``num_samples`` indices drawn with probability proportional to ``weights``.

    ``weights`` need not sum to one. Without replacement, each index appears at
    most once, so ``num_samples`` cannot exceed the number of non-zero weights.

    Example::

        >>> s = WeightedRandomSampler([0.0, 1.0, 3.0], num_samples=4000, seed=0)
        >>> counts = np.bincount(list(s), minlength=3)
        >>> int(counts[0]), bool(abs(counts[2] / counts[1] - 3) < 0.3)
        (0, True)
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: np.random.Generator | None = None, seed: int | None = None):
        self.num_samples = _check_positive_int("num_samples", num_samples)
        self.replacement = _check_bool("replacement", replacement)
        w = np.asarray(weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1-d sequence but given weights have shape {w.shape}")
        if w.size == 0 or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError("weights must be finite, non-negative and have a positive sum")
        if not replacement and self.num_samples > int(np.count_nonzero(w)):
            raise ValueError(
                f"cannot draw num_samples={self.num_samples} without replacement from "
                f"{int(np.count_nonzero(w))} non-zero weights"
            )
        self.weights = w
        self._init_rng(seed, generator)

    def __iter__(self) -> Iterator[int]:
        rng = self._rng_for_epoch()
        p = self.weights / self.weights.sum()
        return iter(rng.choice(len(p), size=self.num_samples, replace=self.replacement, p=p).tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Group another sampler's indices into lists of ``batch_size``.

    The last, shorter batch is kept unless ``drop_last``. ``sampler`` can be
    any iterable of indices.

    Example::

        >>> list(BatchSampler(range(5), batch_size=2, drop_last=False))
        [[0, 1], [2, 3], [4]]
        >>> list(BatchSampler(range(5), batch_size=2, drop_last=True))
        [[0, 1], [2, 3]]
    """

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool):
        self.sampler = sampler
        self.batch_size = _check_positive_int("batch_size", batch_size)
        self.drop_last = _check_bool("drop_last", drop_last)

    def __iter__(self) -> Iterator[list[int]]:
        # iter(self.sampler) runs now so random samplers draw at iter() time.
        return self._batches(iter(self.sampler))

    def _batches(self, it: Iterator[int]) -> Iterator[list[int]]:
        bs = self.batch_size
        while True:
            batch = [idx for _, idx in zip(range(bs), it)]
            if not batch or (self.drop_last and len(batch) < bs):
                return
            yield batch
            if len(batch) < bs:
                return

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class DistributedSampler(_Seeded, Sampler):
    """The share of ``dataset`` that replica ``rank`` of ``num_replicas`` reads.

    Every replica gets ``ceil(N / num_replicas)`` indices; the order (shuffled
    with ``seed`` and the epoch, identically on every replica) is padded by
    repeating its beginning so it divides evenly, then replica ``r`` takes
    positions ``r, r + num_replicas, ...``. With ``drop_last`` the tail is
    dropped instead (``floor(N / num_replicas)`` each). Call
    ``set_epoch(epoch)`` before each epoch to reshuffle: like PyTorch's, the
    epoch does not advance by itself, because every replica must agree on it.
    ``num_replicas``/``rank`` default to ``ember.distributed``'s world when it
    is initialised, else the ``WORLD_SIZE``/``RANK`` environment variables,
    else 1 and 0.

    Example::

        >>> [list(DistributedSampler(range(5), num_replicas=2, rank=r, shuffle=False)) for r in (0, 1)]
        [[0, 2, 4], [1, 3, 0]]
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False):
        import os

        from .. import distributed
        if distributed.is_initialized():
            num_replicas = distributed.world_size() if num_replicas is None else num_replicas
            rank = distributed.rank() if rank is None else rank
        if num_replicas is None:
            num_replicas = int(os.environ.get("WORLD_SIZE", 1))
        if rank is None:
            rank = int(os.environ.get("RANK", 0))
        _check_positive_int("num_replicas", num_replicas)
        if isinstance(rank, bool) or not isinstance(rank, numbers.Integral) or not 0 <= rank < num_replicas:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = int(num_replicas)
        self.rank = int(rank)
        self.shuffle = _check_bool("shuffle", shuffle)
        self.drop_last = _check_bool("drop_last", drop_last)
        self._init_rng(seed, None)

    @property
    def num_samples(self) -> int:
        n = len(self.dataset)
        if self.drop_last:
            return n // self.num_replicas
        return -(-n // self.num_replicas)

    @property
    def total_size(self) -> int:
        return self.num_samples * self.num_replicas

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            indices = self._rng_for_epoch(advance=False).permutation(n).tolist()
        else:
            indices = list(range(n))
        total = self.total_size
        if total > n and n > 0:
            pad = total - n
            indices += (indices * math.ceil(pad / n))[:pad]
        else:
            indices = indices[:total]
        return iter(indices[self.rank : total : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples


class BucketBatchSampler(_Seeded, Sampler):
    """Batches of examples with similar lengths, to cut padding.

    Each epoch: shuffle all indices (if ``shuffle``), cut them into buckets of
    ``bucket_size`` examples (default ``batch_size * bucket_size_multiplier``;
    rounded up to a multiple of ``batch_size``), sort each bucket by length,
    slice it into batches of ``batch_size``, then shuffle the order of all
    batches. Batches are therefore random across epochs but each holds
    examples of nearly equal length, so padding them to their own maximum (see
    :func:`~ember.data.pad_sequence`) wastes little. Larger buckets give
    tighter length groups but less randomness; ``bucket_size=len(lengths)``
    sorts globally. Only the final bucket can produce a short batch, so
    ``len()`` is ``ceil(N / batch_size)`` (``floor`` with ``drop_last``), as for
    :class:`BatchSampler`. With ``shuffle=False`` the result is deterministic:
    buckets in index order, each sorted by length.

    Use it as a DataLoader ``batch_sampler``::

        lengths = [len(s) for s in sentences]
        sampler = BucketBatchSampler(lengths, batch_size=32, seed=0)
        loader = DataLoader(ds, batch_sampler=sampler,
                            collate_fn=lambda b: pad_sequence(b, batch_first=True))

    Example::

        >>> s = BucketBatchSampler([5, 1, 4, 2, 3, 1], batch_size=2, shuffle=False)
        >>> list(s)
        [[1, 5], [3, 4], [2, 0]]
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, drop_last: bool = False,
                 shuffle: bool = True, seed: int | None = None,
                 generator: np.random.Generator | None = None,
                 bucket_size_multiplier: int = 100, bucket_size: int | None = None):
        self.lengths = np.asarray(lengths)
        if self.lengths.ndim != 1:
            raise ValueError(f"lengths must be 1-D, got shape {self.lengths.shape}")
        self.batch_size = _check_positive_int("batch_size", batch_size)
        self.drop_last = _check_bool("drop_last", drop_last)
        self.shuffle = _check_bool("shuffle", shuffle)
        if bucket_size is None:
            bucket_size = self.batch_size * _check_positive_int("bucket_size_multiplier", bucket_size_multiplier)
        bucket_size = _check_positive_int("bucket_size", bucket_size)
        self.bucket_size = -(-bucket_size // self.batch_size) * self.batch_size
        self._init_rng(seed, generator)

    def __iter__(self) -> Iterator[list[int]]:
        n = len(self.lengths)
        rng = self._rng_for_epoch() if self.shuffle else None
        order = rng.permutation(n) if rng is not None else np.arange(n)
        batches = []
        for start in range(0, n, self.bucket_size):
            bucket = order[start : start + self.bucket_size]
            # Stable sort keeps the shuffled order among equal lengths.
            bucket = bucket[np.argsort(self.lengths[bucket], kind="stable")]
            for b in range(0, len(bucket), self.batch_size):
                batch = bucket[b : b + self.batch_size]
                if self.drop_last and len(batch) < self.batch_size:
                    continue
                batches.append(batch.tolist())
        if rng is not None:
            batches = [batches[i] for i in rng.permutation(len(batches)).tolist()]
        return iter(batches)

    def __len__(self) -> int:
        n = len(self.lengths)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
