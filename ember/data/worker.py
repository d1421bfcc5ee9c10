"""What runs inside a DataLoader worker process.

:func:`get_worker_info` lets dataset code find out which worker it runs in
(``None`` in the main process) so an :class:`~ember.data.IterableDataset` can
shard itself. :func:`_worker_loop` is the process target: it seeds Python's and
numpy's global RNGs, runs ``worker_init_fn``, then serves tasks from its index
queue, sending each collated batch back through shared memory
(:mod:`ember.data.shm`). Exceptions travel back as :class:`ExceptionWrapper`
carrying the worker's formatted traceback.

Nothing here imports the ember array core: workers collate with numpy.
"""

from __future__ import annotations

import ctypes
import os
import queue
import random
import signal
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import shm
from .collate import _collate, _convert, _identity

__all__ = ["WorkerInfo", "get_worker_info", "ExceptionWrapper", "worker_seed"]

# How often an idle worker checks whether its parent is still alive.
_PARENT_POLL_S = 0.5


class StopFlag:
    """The pool's "shutting down" flag: one shared byte, read by workers, set by the main process.

    Not a ``multiprocessing.Event``: an Event guards its flag with a lock that
    every process shares, so a worker killed while holding it (SIGKILL lands
    inside ``is_set``) blocks the main process's ``set`` forever, and with it
    the loader's shutdown. A byte with a single writer needs no lock.

    >>> import multiprocessing
    >>> flag = StopFlag(multiprocessing.get_context())
    >>> flag.is_set(), (flag.set(), flag.is_set())[1]
    (False, True)
    """

    __slots__ = ("_byte",)

    def __init__(self, ctx):
        self._byte = ctx.RawValue(ctypes.c_bool, False)

    def set(self) -> None:
        self._byte.value = True

    def is_set(self) -> bool:
        return bool(self._byte.value)


class WorkerInfo:
    """Describes the current worker process; see :func:`get_worker_info`.

    Attributes: ``id`` (0-based worker index), ``num_workers``, ``seed`` (the
    seed this worker's RNGs got for the current epoch) and ``dataset`` (this
    process's copy of the dataset).
    """

    __slots__ = ("id", "num_workers", "seed", "dataset")

    def __init__(self, id: int, num_workers: int, seed: int, dataset: Any):
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "num_workers", num_workers)
        object.__setattr__(self, "seed", seed)
        object.__setattr__(self, "dataset", dataset)

    def __setattr__(self, name, value):
        raise AttributeError(f"WorkerInfo is read-only (cannot set {name!r})")

    def __reduce__(self):
        # The default slot-state pickling would go through __setattr__.
        return (WorkerInfo, (self.id, self.num_workers, self.seed, self.dataset))

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """Return the :class:`WorkerInfo` of the calling worker, or ``None`` in the main process.

    Example (split an iterable dataset between workers)::

        class Numbers(IterableDataset):
            def __iter__(self):
                info = get_worker_info()
                start, step = (0, 1) if info is None else (info.id, info.num_workers)
                return iter(range(start, 100, step))
    """
    return _worker_info


def worker_seed(base_seed: int, epoch: int, worker_id: int) -> int:
    """The seed worker ``worker_id`` uses in ``epoch`` (a 63-bit int).

    Mixed through numpy's ``SeedSequence`` so nearby base seeds, epochs and ids
    give unrelated streams.

    Example::

        >>> worker_seed(0, 0, 0) != worker_seed(0, 0, 1)
        True
    """
    hi, lo = np.random.SeedSequence([base_seed, epoch, worker_id]).generate_state(2, np.uint32)
    return ((int(hi) << 32) | int(lo)) >> 1


def _seed_process(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process as text."""

    def __init__(self, exc_type: type, exc_msg: str, where: str):
        self.exc_type = exc_type
        self.exc_msg = exc_msg
        self.where = where

    @classmethod
    def capture(cls, where: str) -> "ExceptionWrapper":
        exc_type, exc, _tb = sys.exc_info()
        text = "".join(traceback.format_exception(exc))
        # The type must unpickle in the main process; anything exotic becomes
        # a RuntimeError carrying the same text.
        try:
            import pickle

            pickle.loads(pickle.dumps(exc_type))
        except Exception:
            exc_type = RuntimeError
        return cls(exc_type, text, where)

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            # KeyError repr()s its message, which would mangle the traceback.
            raise RuntimeError(msg)
        try:
            exc = self.exc_type(msg)
        except Exception:
            exc = None
        if not isinstance(exc, BaseException):
            raise RuntimeError(msg)
        raise exc


@dataclass(frozen=True)
class WorkerDone:
    """Sent instead of a batch once a worker's iterable dataset is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class Reset:
    """Start a new epoch in a persistent worker: reseed, restart iteration."""

    seed: int


@dataclass
class WorkerConfig:
    """Everything a worker needs, shipped once at process start."""

    dataset: Any
    is_iterable: bool
    auto_collation: bool
    batch_size: int | None
    drop_last: bool
    collate_fn: Callable | None  # None means the built-in numpy collate/convert
    worker_init_fn: Callable | None
    num_workers: int
    shm_prefix: str


class _MapFetcher:
    def __init__(self, cfg: WorkerConfig):
        self.dataset = cfg.dataset
        self.auto_collation = cfg.auto_collation
        self.getitems = getattr(cfg.dataset, "__getitems__", None)

    def fetch(self, index):
        if not self.auto_collation:
            return self.dataset[index]
        if self.getitems is not None:
            return list(self.getitems(index))
        return [self.dataset[i] for i in index]


class _IterFetcher:
    def __init__(self, cfg: WorkerConfig):
        self.it = iter(cfg.dataset)
        self.auto_collation = cfg.auto_collation
        self.drop_last = cfg.drop_last
        self.ended = False

    def fetch(self, n):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return next(self.it)
        items = []
        for _ in range(n):
            try:
                items.append(next(self.it))
            except StopIteration:
                self.ended = True
                break
        if not items or (self.drop_last and len(items) < n):
            raise StopIteration
        return items


def fetch_and_collate(cfg: WorkerConfig, fetcher, index, numpy_leaf: Callable = _identity):
    """Fetch one task's samples and collate them (shared with the in-process path)."""
    data = fetcher.fetch(index)
    if cfg.collate_fn is not None:
        return cfg.collate_fn(data)
    if cfg.auto_collation:
        return _collate(data, numpy_leaf)
    return _convert(data, numpy_leaf)


def make_fetcher(cfg: WorkerConfig):
    return _IterFetcher(cfg) if cfg.is_iterable else _MapFetcher(cfg)


def _worker_loop(
    cfg: WorkerConfig,
    worker_id: int,
    seed: int,
    index_queue,
    result_queue,
    stop: StopFlag,
    parent_pid: int,
) -> None:
    global _worker_info
    # Ctrl-C reaches the whole process group; the main process owns shutdown,
    # so workers ignore SIGINT instead of dying with a traceback each.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _seed_process(seed)
    # CUDA cannot be used in a forked child, and batches travel to the main process
    # as host memory anyway: arrays a dataset makes here live on the CPU
    from ember.array import cpu_device, set_default_device
    set_default_device(cpu_device())
    _worker_info = WorkerInfo(worker_id, cfg.num_workers, seed, cfg.dataset)
    where = f"in DataLoader worker process {worker_id} (pid {os.getpid()})"
    init_error = None
    fetcher = None
    try:
        if cfg.worker_init_fn is not None:
            cfg.worker_init_fn(worker_id)
        fetcher = make_fetcher(cfg)
    except Exception:
        init_error = ExceptionWrapper.capture(where)
    writer = shm.SegmentWriter(f"{cfg.shm_prefix}{worker_id}_")
    default_mode = cfg.collate_fn is None

    while True:
        try:
            msg = index_queue.get(timeout=_PARENT_POLL_S)
        except queue.Empty:
            if os.getppid() != parent_pid:
                break  # orphaned: the main process is gone
            continue
        if msg is None:
            break
        if stop.is_set():
            continue  # shutting down; wait for the final None
        if isinstance(msg, Reset):
            _seed_process(msg.seed)
            _worker_info = WorkerInfo(worker_id, cfg.num_workers, msg.seed, cfg.dataset)
            if init_error is None and cfg.is_iterable:
                try:
                    fetcher = make_fetcher(cfg)
                except Exception:
                    init_error = ExceptionWrapper.capture(where)
            continue
        gen, task_idx, index = msg
        if init_error is not None:
            out: Any = init_error
        else:
            try:
                batch = fetch_and_collate(cfg, fetcher, index)
                out = writer.encode(batch, convert_all=default_mode)
                del batch
            except StopIteration:
                if not cfg.is_iterable:
                    out = ExceptionWrapper.capture(where)
                else:
                    out = WorkerDone(worker_id)
            except Exception:
                out = ExceptionWrapper.capture(where)
        try:
            wire = writer.message((gen, task_idx, out))
        except Exception:  # an unpicklable non-array leaf: say so instead of dropping the batch
            wire = writer.message((gen, task_idx, ExceptionWrapper.capture(where)))
        result_queue.put(wire)
        del out, wire

    if stop.is_set():
        # Don't block exit flushing results nobody will read; the pool sweeps
        # any segments those results referred to.
        result_queue.cancel_join_thread()
    result_queue.close()
