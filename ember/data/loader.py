"""DataLoader: batches from a dataset, optionally produced by worker processes.

Semantics and argument names follow ``torch.utils.data.DataLoader``. The
sampler (and so the batch order) always runs in the main process; workers only
fetch and collate, so for map-style datasets the same ``seed`` gives the same
batches whatever ``num_workers`` is.

Multi-process mode (``num_workers > 0``):

* tasks ``(generation, task index, sample indices)`` go round-robin to
  per-worker index queues, at most ``prefetch_factor`` per worker in flight;
* workers send batches back through shared memory (:mod:`ember.data.shm`): the
  result queue carries only small metadata, constant in the batch size, and every
  message fits one atomic pipe write (longer ones, such as large non-array leaves
  or long tracebacks, are spilled to a segment), so a worker killed mid-send never
  leaves a partial message for the main process to wait on;
* the main process restores order with a reorder buffer keyed by task index;
* while waiting it polls the result queue with short timeouts and checks that
  every worker is alive, so a crashed worker raises a ``RuntimeError`` naming
  it and its exit code instead of hanging (``timeout > 0`` additionally bounds
  the wait for any one batch);
* shutdown (end of epoch, ``break``, garbage collection, KeyboardInterrupt,
  interpreter exit, errors) joins or terminates every worker and unlinks every
  shared-memory segment the pool created; it is driven by
  ``weakref.finalize`` on the iterator so it runs exactly once.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import numbers
import os
import queue
import signal
import sys
import time
import weakref
from multiprocessing import resource_tracker
from typing import Callable

import numpy as np

from . import shm
from .collate import _map_arrays, _to_ember, default_collate, default_convert
from .datasets import IterableDataset
from .pin import loader_allocator, pin_array
from .samplers import BatchSampler, RandomSampler, SequentialSampler
from .worker import (
    ExceptionWrapper,
    Reset,
    StopFlag,
    WorkerConfig,
    WorkerDone,
    _worker_loop,
    fetch_and_collate,
    make_fetcher,
    worker_seed,
)

__all__ = ["DataLoader"]

# Main-process poll interval while waiting for a batch: bounds how long a dead
# worker goes unnoticed when timeout=0.
_POLL_S = 0.1
# How long shutdown lets busy workers finish their current task before
# terminating them (idle workers exit at once on the shutdown message).
_JOIN_S = 0.5


def _default_context():
    # fork starts workers in milliseconds; everything also works under
    # "spawn" (pass multiprocessing_context="spawn") as long as the dataset,
    # collate_fn and worker_init_fn are picklable.
    if sys.platform.startswith("linux") and "fork" in mp.get_all_start_methods():
        return mp.get_context("fork")
    return mp.get_context()


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _describe_exit(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"exit code {code} (killed by signal {signal.Signals(-code).name})"
        except ValueError:
            pass
    return f"exit code {code}"


class DataLoader:
    """Iterate over ``dataset`` in batches.

    Args:
        dataset: a map-style :class:`~ember.data.Dataset` or an
            :class:`~ember.data.IterableDataset`.
        batch_size: samples per batch; ``None`` disables automatic batching
            (each sample goes through ``collate_fn``, default
            :func:`~ember.data.default_convert`).
        shuffle: reshuffle every epoch (map-style only).
        sampler: custom index sampler (exclusive with ``shuffle``).
        batch_sampler: yields lists of indices (exclusive with ``batch_size``,
            ``shuffle``, ``sampler`` and ``drop_last``).
        num_workers: worker processes; 0 loads in the main process.
        collate_fn: merges a list of samples; default
            :func:`~ember.data.default_collate`.
        pin_memory: put batches in page-locked memory (needs CuPy and a GPU;
            otherwise it warns, as PyTorch does, and is a no-op). CuPy is imported
            only when this is True.
        drop_last: drop the final short batch.
        timeout: seconds to wait for one batch from workers (0 = forever, but a
            dead worker is still detected within ~0.1 s).
        worker_init_fn: called as ``worker_init_fn(worker_id)`` in each worker
            after seeding.
        prefetch_factor: batches in flight per worker (default 2; only with
            ``num_workers > 0``, ValueError otherwise, as PyTorch).
        persistent_workers: keep the worker pool between epochs.
        seed: base seed for shuffling and for worker RNGs; with a seed the
            whole sequence of epochs is reproducible.
        generator: a ``numpy.random.Generator`` to draw shuffles and worker
            base seeds from instead (exclusive with ``seed``).
        multiprocessing_context: ``"fork"``, ``"spawn"``, ``"forkserver"`` or a
            context object; default fork on Linux.

    Batches are ember arrays (see :func:`~ember.data.default_collate`). Each
    worker seeds Python's ``random`` and numpy's global RNG with
    ``get_worker_info().seed``, derived from the base seed, the epoch and the
    worker id.

    Example::

        >>> import numpy as np
        >>> from ember.data import ArrayDataset
        >>> ds = ArrayDataset(np.arange(10, dtype=np.float32), np.arange(10))
        >>> loader = DataLoader(ds, batch_size=4, shuffle=True, seed=0)
        >>> [np.asarray(y).shape for _, y in loader]
        [(4,), (4,), (2,)]
    """

    _LOCKED = frozenset({"dataset", "batch_size", "batch_sampler", "sampler", "drop_last", "persistent_workers"})

    def __init__(
        self,
        dataset,
        batch_size: int | None = 1,
        shuffle: bool | None = False,
        sampler=None,
        batch_sampler=None,
        num_workers: int = 0,
        collate_fn: Callable | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable | None = None,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        seed: int | None = None,
        generator: np.random.Generator | None = None,
        *,
        multiprocessing_context=None,
    ):
        if not _is_int(num_workers) or num_workers < 0:
            raise ValueError(
                "num_workers option should be a non-negative integer; "
                "use num_workers=0 to disable multiprocessing."
            )
        if not isinstance(timeout, numbers.Real) or timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if prefetch_factor is not None and num_workers == 0:
            # PyTorch refuses it: without workers nothing is prefetched, so the option
            # would silently do nothing
            raise ValueError(
                f"prefetch_factor option could only be specified in multiprocessing (got "
                f"prefetch_factor={prefetch_factor!r} with num_workers=0); let num_workers > 0 "
                f"to enable multiprocessing, otherwise set prefetch_factor to None."
            )
        if prefetch_factor is None:
            prefetch_factor = 2
        if not _is_int(prefetch_factor) or prefetch_factor < 1:
            raise ValueError(f"prefetch_factor option should be a positive integer, got {prefetch_factor!r}")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if seed is not None and generator is not None:
            raise ValueError("seed and generator options are mutually exclusive")
        if seed is not None and (not _is_int(seed) or seed < 0):
            raise ValueError(f"seed should be a non-negative integer, got {seed!r}")
        if generator is not None and not isinstance(generator, np.random.Generator):
            raise TypeError(f"generator should be a numpy.random.Generator, got {type(generator).__name__}")
        if collate_fn is not None and not callable(collate_fn):
            raise TypeError(f"collate_fn should be callable, got {type(collate_fn).__name__}")
        if worker_init_fn is not None and not callable(worker_init_fn):
            raise TypeError(f"worker_init_fn should be callable, got {type(worker_init_fn).__name__}")

        is_iterable = isinstance(dataset, IterableDataset)
        if is_iterable:
            if shuffle not in (False, None):
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}"
                )
            if sampler is not None:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified sampler option, but got sampler={sampler}"
                )
            if batch_sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                    f"but got batch_sampler={batch_sampler}"
                )
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None:
            if drop_last:
                raise ValueError(
                    "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"
                )
        elif not _is_int(batch_size) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size!r}")

        if not is_iterable and sampler is None:
            if shuffle:
                sampler = RandomSampler(dataset, generator=generator, seed=seed)
            else:
                sampler = SequentialSampler(dataset)
        if not is_iterable and batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        if isinstance(multiprocessing_context, str):
            multiprocessing_context = mp.get_context(multiprocessing_context)

        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = int(num_workers)
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_size is not None or batch_sampler is not None else default_convert
        )
        self.pin_memory = bool(pin_memory)
        self.timeout = float(timeout)
        self.worker_init_fn = worker_init_fn
        self.prefetch_factor = int(prefetch_factor)
        self.persistent_workers = bool(persistent_workers)
        self.seed = seed
        self.generator = generator
        self.multiprocessing_context = multiprocessing_context
        self._is_iterable = is_iterable
        self._auto_collation = batch_sampler is not None or (is_iterable and batch_size is not None)
        # Without seed/generator, worker seeds still need a base: one random
        # draw per loader (like an unseeded torch generator).
        self._base_seed = seed if seed is not None else int(np.random.SeedSequence().entropy % 2**63)
        self._epoch = 0
        self._iterator = None
        self._initialized = True

    def __setattr__(self, name, value):
        if name in self._LOCKED and getattr(self, "_initialized", False):
            raise ValueError(f"{name} attribute should not be set after DataLoader is initialized")
        super().__setattr__(name, value)

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    @property
    def epoch(self) -> int:
        """The epoch the next ``iter()`` will run (advances on every ``iter()``)."""
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """Make the next ``iter()`` run epoch ``epoch`` (also forwarded to the
        sampler and batch sampler if they have ``set_epoch``)."""
        self._epoch = int(epoch)
        for s in (self.sampler, self.batch_sampler):
            if hasattr(s, "set_epoch"):
                s.set_epoch(epoch)

    def _worker_config(self, shm_prefix: str) -> WorkerConfig:
        default = self.collate_fn is default_collate or self.collate_fn is default_convert
        return WorkerConfig(
            dataset=self.dataset,
            is_iterable=self._is_iterable,
            auto_collation=self._auto_collation,
            batch_size=self.batch_size,
            drop_last=self.drop_last,
            # None selects the numpy-only built-in collate in the worker.
            collate_fn=None if default else self.collate_fn,
            worker_init_fn=self.worker_init_fn,
            num_workers=self.num_workers,
            shm_prefix=shm_prefix,
        )

    def _next_epoch(self):
        """Start an epoch: returns (index iterator, base seed, epoch)."""
        if self._is_iterable:
            index_iter = itertools.repeat(self.batch_size)
        else:
            index_iter = iter(self._index_sampler)
        # Drawn whether or not there are workers, so a shared generator
        # advances identically for every num_workers.
        base = int(self.generator.integers(0, 2**63)) if self.generator is not None else self._base_seed
        epoch = self._epoch
        self._epoch += 1
        return index_iter, base, epoch

    def __iter__(self):
        from .. import profiler
        if profiler.active:  # ember.profiler: each batch's wait is an event (checked once per epoch)
            return profiler.timed_batches(self._batches())
        return self._batches()

    def _batches(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if self.persistent_workers:
            it = self._iterator
            if it is None or it._pool.closed:
                self._iterator = _MultiProcessIter(self)
            else:
                it._reset(self)
            return self._iterator
        return _MultiProcessIter(self)

    def __len__(self) -> int:
        if self._is_iterable:
            n = len(self.dataset)  # TypeError for unsized streams, as in PyTorch
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)


def _finisher(pin_alloc):
    """Main-process leaf function: optional pinning, then ember conversion."""
    if pin_alloc is None:
        return _to_ember
    # the pinned copy is the loader's own buffer: wrapped as is, so a GPU default
    # device copies from page-locked memory
    return lambda a: _to_ember(pin_array(a, pin_alloc), owned=True)


class _SingleProcessIter:
    def __init__(self, loader: DataLoader):
        self._index_iter, _, _ = loader._next_epoch()
        self._cfg = loader._worker_config(shm_prefix="")
        self._fetcher = make_fetcher(self._cfg)
        self._pin = loader_allocator() if loader.pin_memory else None
        self._leaf = _finisher(self._pin)
        self._length = loader.__len__

    def __iter__(self):
        return self

    def __len__(self):
        return self._length()

    def __next__(self):
        index = next(self._index_iter)
        out = fetch_and_collate(self._cfg, self._fetcher, index, numpy_leaf=self._leaf)
        if self._cfg.collate_fn is not None and self._pin is not None:
            out = _map_arrays(lambda a: pin_array(a, self._pin), out)
        return out


class _WorkerPool:
    """Worker processes plus their queues; ``shutdown`` is idempotent."""

    def __init__(self, ctx, cfg: WorkerConfig, seeds: list[int]):
        self._owner = os.getpid()
        self.prefix = cfg.shm_prefix
        self.closed = False
        self.workers: list = []
        self.index_queues: list = []
        # Start the resource tracker before forking so workers share it
        # instead of each starting (and, on exit, "cleaning up") their own.
        resource_tracker.ensure_running()
        self.result_queue = ctx.Queue()
        self.stop = StopFlag(ctx)
        try:
            for wid, seed in enumerate(seeds):
                iq = ctx.Queue()
                # Never block interpreter exit flushing tasks to a dead worker.
                iq.cancel_join_thread()
                self.index_queues.append(iq)
                w = ctx.Process(
                    target=_worker_loop,
                    args=(cfg, wid, seed, iq, self.result_queue, self.stop, self._owner),
                    name=f"ember-data-worker-{wid}",
                    daemon=True,
                )
                w.start()
                self.workers.append(w)
        except BaseException:
            self.shutdown()
            raise

    def dead_worker(self):
        for wid, w in enumerate(self.workers):
            if w.exitcode is not None:
                return wid, w
        return None

    def _drain(self):
        while True:
            try:
                wire = self.result_queue.get_nowait()
            except Exception:  # empty, or the pipe is already closed/broken
                return
            try:
                _gen, _idx, payload = shm.receive(wire)
            except Exception:  # a spilled message whose segment a sweep took already
                continue
            shm.discard(payload)

    def shutdown(self) -> None:
        if self.closed or os.getpid() != self._owner:
            # Already done, or a forked copy of this object in a child process.
            return
        self.closed = True
        try:
            self.stop.set()
            for q in self.index_queues:
                try:
                    q.put(None)
                except (OSError, ValueError):
                    pass
            deadline = time.monotonic() + _JOIN_S
            while time.monotonic() < deadline and any(w.is_alive() for w in self.workers):
                # Draining lets workers blocked on a full result pipe finish.
                self._drain()
                for w in self.workers:
                    w.join(timeout=0.01)
            for w in self.workers:
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=1.0)
                if w.is_alive():
                    w.kill()
                    w.join()
            self._drain()
            for q in self.index_queues:
                q.close()
            self.result_queue.close()
        finally:
            if self.prefix:
                shm.sweep(self.prefix)


def _close_iterator(pool: _WorkerPool, stash: dict) -> None:
    for info in stash.values():
        if len(info) == 2:
            shm.discard(info[1])
    stash.clear()
    pool.shutdown()


class _MultiProcessIter:
    def __init__(self, loader: DataLoader):
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        # Weak: a persistent loader holds this iterator, and a strong
        # back-reference would delay shutdown until the cycle collector runs.
        self._loader_ref = weakref.ref(loader)
        self._pin = loader_allocator() if loader.pin_memory else None
        self._gen = 0
        # Reorder buffer: task index -> (worker id,) while pending, or
        # (worker id, payload) once arrived out of order.
        self._task_info: dict = {}
        self._outstanding = 0
        self._finished = False
        index_iter, base, epoch = loader._next_epoch()
        ctx = loader.multiprocessing_context or _default_context()
        cfg = loader._worker_config(shm.new_prefix())
        seeds = [worker_seed(base, epoch, w) for w in range(self._num_workers)]
        self._pool = _WorkerPool(ctx, cfg, seeds)
        self._finalizer = weakref.finalize(self, _close_iterator, self._pool, self._task_info)
        self._start_epoch(index_iter)

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of this iterator's workers (for introspection and tests)."""
        return [w.pid for w in self._pool.workers]

    def __iter__(self):
        return self

    def __len__(self):
        loader = self._loader_ref()
        if loader is None:
            raise TypeError("len() of a DataLoader iterator whose DataLoader no longer exists")
        return len(loader)

    def _start_epoch(self, index_iter) -> None:
        self._index_iter = index_iter
        self._send_idx = 0
        self._rcvd_idx = 0
        self._active = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        self._finished = False
        for _ in range(self._prefetch * self._num_workers):
            self._try_put_index()

    def _reset(self, loader: DataLoader) -> None:
        """New epoch on a persistent pool."""
        # Results of the previous epoch still being computed would collide
        # with the new task numbering: wait for them and drop them.
        self._gen += 1
        while self._outstanding > 0:
            _gen, _idx, payload = self._get_data()
            self._outstanding -= 1
            shm.discard(payload)
        for info in self._task_info.values():
            if len(info) == 2:
                shm.discard(info[1])
        self._task_info.clear()
        index_iter, base, epoch = loader._next_epoch()
        for wid, q in enumerate(self._pool.index_queues):
            q.put(Reset(worker_seed(base, epoch, wid)))
        self._start_epoch(index_iter)

    def _try_put_index(self) -> None:
        if self._outstanding >= self._prefetch * self._num_workers:
            return
        for _ in range(self._num_workers):
            wid = next(self._worker_cycle)
            if self._active[wid]:
                break
        else:
            return  # every worker's stream has ended
        try:
            index = next(self._index_iter)
        except StopIteration:
            return
        self._pool.index_queues[wid].put((self._gen, self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._outstanding += 1
        self._send_idx += 1

    def _shutdown(self) -> None:
        self._finished = True
        self._finalizer()

    def _get_data(self):
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = _POLL_S if deadline is None else max(0.0, min(_POLL_S, deadline - time.monotonic()))
            try:
                wire = self._pool.result_queue.get(timeout=wait)
            except queue.Empty:
                pass
            else:
                return shm.receive(wire)
            dead = self._pool.dead_worker()
            if dead is not None:
                wid, w = dead
                self._shutdown()
                raise RuntimeError(
                    f"DataLoader worker {wid} (pid {w.pid}) exited unexpectedly with "
                    f"{_describe_exit(w.exitcode)}"
                )
            if deadline is not None and time.monotonic() >= deadline:
                self._shutdown()
                raise RuntimeError(
                    f"DataLoader timed out after {self._timeout:g} seconds waiting for a batch from its workers"
                )

    def __next__(self):
        if self._finished:
            raise StopIteration
        try:
            return self._next_data()
        except KeyboardInterrupt:
            self._shutdown()
            raise

    def _next_data(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._active[info[0]]):
                    break
                # Task of a worker whose stream ended; it will never produce data.
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown()
                self._finished = True
                raise StopIteration

            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process(info[1])

            gen, idx, payload = self._get_data()
            self._outstanding -= 1
            if gen != self._gen or idx not in self._task_info:
                shm.discard(payload)
                self._try_put_index()
                continue
            if isinstance(payload, WorkerDone):
                self._active[payload.worker_id] = False
                del self._task_info[idx]
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (payload,)
                continue
            del self._task_info[idx]
            self._rcvd_idx += 1
            return self._process(payload)

    def _process(self, payload):
        self._try_put_index()
        if isinstance(payload, ExceptionWrapper):
            payload.reraise()
        # decoded leaves are fresh buffers from `alloc` (pinned views when pinning)
        to_ember = _to_ember if self._pin is None else (lambda a: _to_ember(a, owned=True))
        return shm.decode(payload, to_ember=to_ember, alloc=self._pin)
