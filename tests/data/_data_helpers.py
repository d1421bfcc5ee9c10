"""Datasets and callables shared by the ember.data tests.

They live in an importable module (not inside test functions) so that
"spawn" worker processes can unpickle them.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time

import numpy as np

from ember.data import Dataset, IterableDataset, get_worker_info
from ember.data import shm


class RangeDataset(Dataset):
    """Sample i is ``(float32 vector filled with i, int i)``."""

    def __init__(self, n: int, dim: int = 3):
        self.n = n
        self.dim = dim

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return np.full(self.dim, i, dtype=np.float32), i


class PidDataset(Dataset):
    """Sample i is ``(i, pid of the process that loaded it)``; optionally slow."""

    def __init__(self, n: int, delay: float = 0.0):
        self.n = n
        self.delay = delay

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.delay:
            time.sleep(self.delay)
        return i, os.getpid()


class FailingDataset(Dataset):
    """Raises ``ValueError`` for index ``bad``."""

    def __init__(self, n: int, bad: int):
        self.n = n
        self.bad = bad

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            raise ValueError(f"sample {i} is corrupt")
        return np.int64(i)


class SuicideDataset(Dataset):
    """The worker loading index ``bad`` dies: SIGKILL or a real segfault."""

    def __init__(self, n: int, bad: int, how: str = "kill", delay: float = 0.0):
        self.n = n
        self.bad = bad
        self.how = how
        self.delay = delay

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.delay:
            time.sleep(self.delay)
        if i == self.bad and get_worker_info() is not None:
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            else:
                import ctypes
                import faulthandler

                faulthandler.disable()  # keep pytest's crash dump out of the test log
                ctypes.string_at(0)  # segfault
        return i


class SleepyDataset(Dataset):
    def __init__(self, n: int, delay: float):
        self.n = n
        self.delay = delay

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.delay)
        return i


class RandomDrawDataset(Dataset):
    """Returns draws from the worker's global RNGs (numpy and random)."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        wid = -1 if info is None else info.id
        seed = -1 if info is None else info.seed
        return np.random.randint(0, 2**31), random.randrange(2**31), wid, seed


class ShardedStream(IterableDataset):
    """0..n-1 split between workers with get_worker_info."""

    def __init__(self, n: int, sized: bool = True):
        self.n = n
        self.sized = sized

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self):
        if not self.sized:
            raise TypeError("unsized stream")
        return self.n


class UnsizedStream(IterableDataset):
    def __init__(self, n: int):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))


class FakeEmberArray:
    """Stands in for ember.Array: same module root, has __array__."""

    __module__ = "ember.fake"

    def __init__(self, data):
        self._data = np.asarray(data)

    def __array__(self, dtype=None, copy=None):
        return self._data if dtype is None else self._data.astype(dtype)


def worker_init_fail(worker_id: int) -> None:
    raise RuntimeError(f"init failed in {worker_id}")


def collate_sum(batch):
    return np.sum(np.asarray(batch))


def shm_snapshot() -> set:
    # Only this process's pools, so concurrent test runs don't interfere.
    return set(shm.list_segments(shm.owner_prefix()))


def assert_clean(before: set, timeout: float = 3.0) -> None:
    """No new ember shm segments and no live child processes."""
    deadline = time.monotonic() + timeout
    while True:
        leaked = shm_snapshot() - before
        children = multiprocessing.active_children()
        if not leaked and not children:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"leaked segments {sorted(leaked)}, live children {children}")
        time.sleep(0.02)
