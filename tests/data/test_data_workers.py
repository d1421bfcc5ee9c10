"""DataLoader with worker processes: determinism, order, failures, cleanup."""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from ember.data import DataLoader, default_collate, get_worker_info
from _data_helpers import (
    FakeEmberArray,
    FailingDataset,
    PidDataset,
    RandomDrawDataset,
    RangeDataset,
    ShardedStream,
    SleepyDataset,
    SuicideDataset,
    assert_clean,
    collate_sum,
    shm_snapshot,
    worker_init_fail,
)


@pytest.fixture
def clean():
    """Every test here must leave no worker processes and no shm segments."""
    before = shm_snapshot()
    yield
    gc.collect()
    assert_clean(before)


def batches(loader):
    return [tuple(np.asarray(x).tolist() for x in b) for b in loader]


@pytest.mark.parametrize("shuffle", [False, True])
def test_same_batches_for_any_worker_count(clean, shuffle):
    results = []
    for nw in (0, 1, 2):
        loader = DataLoader(RangeDataset(37), batch_size=5, shuffle=shuffle, seed=4, num_workers=nw)
        results.append([batches(loader), batches(loader)])  # two epochs
    assert results[0] == results[1] == results[2]
    first_epoch_labels = [b[1] for b in results[0][0]]
    assert sorted(sum(first_epoch_labels, [])) == list(range(37))
    if shuffle:
        assert results[0][0] != results[0][1]
    else:
        assert first_epoch_labels[0] == [0, 1, 2, 3, 4]


def test_order_preserved_with_uneven_workers(clean):
    # Worker speed varies per sample, so batches arrive out of order.
    ds = PidDataset(40, delay=0.002)
    loader = DataLoader(ds, batch_size=3, num_workers=2, prefetch_factor=3)
    got = [np.asarray(i).tolist() for i, _ in loader]
    assert sum(got, []) == list(range(40))
    assert len(got) == len(loader) == 14


def test_drop_last_with_workers(clean):
    loader = DataLoader(RangeDataset(10), batch_size=4, drop_last=True, num_workers=2)
    assert [b[1] for b in batches(loader)] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_batches_are_used_by_both_workers(clean):
    pids = {int(p) for _, ps in DataLoader(PidDataset(16, delay=0.005), batch_size=2, num_workers=2)
            for p in np.asarray(ps)}
    assert len(pids) == 2 and os.getpid() not in pids


def test_custom_collate_and_unbatched(clean):
    assert [int(np.asarray(x)) for x in DataLoader(RangeDataset(6), batch_size=None, num_workers=2,
                                                   collate_fn=lambda s: s[1])] == list(range(6))
    loader = DataLoader(FailingDataset(6, bad=-1), batch_size=3, num_workers=2, collate_fn=collate_sum,
                        multiprocessing_context="fork")
    assert [int(np.asarray(x)) for x in loader] == [3, 12]
    nb = [np.asarray(x[0]).tolist() for x in DataLoader(RangeDataset(3, dim=2), batch_size=None, num_workers=1)]
    assert nb == [[0, 0], [1, 1], [2, 2]]


def test_nested_structures_survive_transport(clean):
    class Nested(RangeDataset):
        def __getitem__(self, i):
            return {"a": (np.full((2, 2), i, np.int16), f"s{i}"), "b": [float(i), np.bool_(i % 2)]}

    out = list(DataLoader(Nested(4), batch_size=2, num_workers=2))
    assert np.asarray(out[1]["a"][0]).dtype.kind == "i"
    assert np.asarray(out[1]["a"][0]).shape == (2, 2, 2)
    assert out[1]["a"][1] == ["s2", "s3"]
    assert np.asarray(out[0]["b"][1]).tolist() == [False, True]


def test_worker_exception_is_reraised_with_traceback(clean):
    loader = DataLoader(FailingDataset(20, bad=7), batch_size=2, num_workers=2)
    it = iter(loader)
    assert [int(v) for v in np.asarray(next(it))] == [0, 1]
    with pytest.raises(ValueError) as info:
        for _ in it:
            pass
    msg = str(info.value)
    assert "in DataLoader worker process 1" in msg
    assert "Traceback (most recent call last)" in msg
    assert "sample 7 is corrupt" in msg and "_data_helpers.py" in msg
    # Like PyTorch, the iterator stays usable after a dataset error.
    assert [int(v) for v in np.asarray(next(it))] == [8, 9]
    del it


def test_worker_init_fn_error(clean):
    loader = DataLoader(RangeDataset(4), batch_size=2, num_workers=1, worker_init_fn=worker_init_fail)
    with pytest.raises(RuntimeError, match="init failed in 0"):
        list(loader)


def test_keyerror_in_worker_keeps_message_readable(clean):
    class Missing(RangeDataset):
        def __getitem__(self, i):
            return {}["key%d" % i]

    with pytest.raises(RuntimeError, match="Caught KeyError in DataLoader worker process 0"):
        list(DataLoader(Missing(2), num_workers=1))


@pytest.mark.parametrize("how", ["kill", "segv"])
def test_dead_worker_raises_not_hangs(clean, how):
    loader = DataLoader(SuicideDataset(64, bad=20, how=how), batch_size=2, num_workers=2)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker [01] \(pid \d+\) exited unexpectedly") as info:
        for _ in loader:
            pass
    assert time.monotonic() - start < 10
    expected = "SIGKILL" if how == "kill" else "SIGSEGV"
    assert expected in str(info.value)


def test_worker_killed_from_outside_mid_epoch(clean):
    loader = DataLoader(PidDataset(200, delay=0.01), batch_size=2, num_workers=2, timeout=30)
    it = iter(loader)
    _, pids = next(it)
    victim = int(np.asarray(pids)[0])
    os.kill(victim, signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=f"pid {victim}.*SIGKILL"):
        for _ in it:
            pass
    assert time.monotonic() - start < 10
    del it


# A worker that dies at the worst moment: holding every lock of the pool it can
# reach (queue locks, and an Event's lock if the pool had one). The main process
# must still notice, raise and clean up; a lock shared with the main process
# would hang it forever, so the scenario runs in its own process group.
_DIES_HOLDING_EVERY_LOCK = r"""
import gc, multiprocessing, os, signal, time
from multiprocessing.synchronize import SemLock
import numpy as np
from ember.data import DataLoader, Dataset

class GrabsEveryLockThenDies(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        if i == 9:
            for obj in gc.get_objects():
                if isinstance(obj, SemLock):
                    obj.acquire(False)
            os.kill(os.getpid(), signal.SIGKILL)
        return np.float32(i)

start = time.monotonic()
try:
    for _ in DataLoader(GrabsEveryLockThenDies(), batch_size=4, num_workers=2, timeout=30):
        pass
except RuntimeError as e:
    print(e)
print("seconds", time.monotonic() - start)
print("children", len(multiprocessing.active_children()))
"""


def test_worker_dying_while_holding_locks_does_not_hang(tmp_path):
    log = tmp_path / "log.txt"
    with open(log, "w") as f:
        p = subprocess.Popen([sys.executable, "-c", _DIES_HOLDING_EVERY_LOCK], stdout=f,
                             stderr=subprocess.STDOUT, start_new_session=True)
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            pytest.fail("the DataLoader hung after its worker died holding a lock:\n" + log.read_text())
    out = log.read_text()
    assert p.returncode == 0, out
    assert "exited unexpectedly with exit code -9 (killed by signal SIGKILL)" in out, out
    lines = dict(line.split(" ", 1) for line in out.splitlines()[-2:])
    assert float(lines["seconds"]) < 10 and lines["children"] == "0", out


def test_timeout(clean):
    loader = DataLoader(SleepyDataset(4, delay=2.0), batch_size=1, num_workers=1, timeout=0.3)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="timed out after 0.3 seconds"):
        next(iter(loader))
    assert time.monotonic() - start < 2.0


def test_break_out_of_loop_cleans_up(clean):
    before = shm_snapshot()
    loader = DataLoader(PidDataset(400, delay=0.001), batch_size=4, num_workers=2, prefetch_factor=4)
    gc.disable()  # the for-loop's iterator must go by reference counting alone
    try:
        for i, _ in enumerate(loader):
            if i == 2:
                break
        assert_clean(before)
    finally:
        gc.enable()


def test_iterator_garbage_collection_cleans_up(clean):
    it = iter(DataLoader(RangeDataset(100), batch_size=2, num_workers=2))
    next(it)
    pids = set(it.worker_pids)
    assert len(pids) == 2
    del it
    gc.collect()
    assert not pids & {p.pid for p in multiprocessing.active_children()}


def test_keyboard_interrupt_cleans_up(clean):
    # A process started in the background by a non-interactive shell (as CI may be)
    # inherits SIGINT as ignored; install Python's handler for the test's duration.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    loader = DataLoader(SleepyDataset(100, delay=0.05), batch_size=1, num_workers=2)
    timer = threading.Timer(0.4, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            for _ in loader:
                pass
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)


def test_get_worker_info_and_seeds(clean):
    def draws(nw, seed, epochs=2):
        loader = DataLoader(RandomDrawDataset(), batch_size=None, num_workers=nw, seed=seed)
        return [[tuple(int(np.asarray(v)) for v in s) for s in loader] for _ in range(epochs)]

    a, b, c = draws(2, 5), draws(2, 5), draws(2, 6)
    assert a == b  # deterministic given the seed
    assert a != c
    assert a[0] != a[1]  # reseeded each epoch
    worker_ids = {s[2] for s in a[0]}
    worker_seeds = {s[3] for s in a[0]}
    assert worker_ids == {0, 1} and len(worker_seeds) == 2
    assert {s[2] for s in draws(0, 5, 1)[0]} == {-1}  # main process: get_worker_info() is None


def test_iterable_sharding_without_duplicates(clean):
    loader = DataLoader(ShardedStream(23), batch_size=4, num_workers=2)
    got = sum((np.asarray(b).tolist() for b in loader), [])
    assert sorted(got) == list(range(23)) and len(got) == 23
    unbatched = [int(np.asarray(x)) for x in DataLoader(ShardedStream(9), batch_size=None, num_workers=2)]
    assert sorted(unbatched) == list(range(9))
    dropped = [np.asarray(b).tolist() for b in DataLoader(ShardedStream(23), batch_size=4, num_workers=2,
                                                          drop_last=True)]
    # Each worker drops its own short tail: 12 items -> 3 batches, 11 -> 2.
    assert all(len(b) == 4 for b in dropped) and len(dropped) == 5


def test_persistent_workers_reuse_processes(clean):
    loader = DataLoader(PidDataset(12), batch_size=3, num_workers=2, persistent_workers=True, shuffle=True, seed=0)
    epochs = [[(np.asarray(i).tolist(), set(np.asarray(p).tolist())) for i, p in loader] for _ in range(3)]
    pids = [set().union(*(p for _, p in e)) for e in epochs]
    assert pids[0] == pids[1] == pids[2] and len(pids[0]) == 2
    orders = [sum((i for i, _ in e), []) for e in epochs]
    assert all(sorted(o) == list(range(12)) for o in orders) and orders[0] != orders[1]
    ref = DataLoader(PidDataset(12), batch_size=3, shuffle=True, seed=0)

    def ref_epoch(e):
        ref.set_epoch(e)
        return sum((np.asarray(i).tolist() for i, _ in ref), [])

    assert orders == [ref_epoch(e) for e in range(3)]
    # Breaking out of epoch 3 and starting epoch 4 must not mix in stale batches.
    for k, _ in enumerate(loader):
        if k == 1:
            break
    epoch4 = [(np.asarray(i).tolist(), set(np.asarray(p).tolist())) for i, p in loader]
    assert sum((i for i, _ in epoch4), []) == ref_epoch(4)
    assert set().union(*(p for _, p in epoch4)) == pids[0]
    del loader, epochs


def test_persistent_workers_iterable_restart(clean):
    loader = DataLoader(ShardedStream(10), batch_size=3, num_workers=2, persistent_workers=True)
    for _ in range(3):
        got = sum((np.asarray(b).tolist() for b in loader), [])
        assert sorted(got) == list(range(10))
    del loader


def test_spawn_context(clean):
    loader = DataLoader(RangeDataset(9), batch_size=4, num_workers=2, shuffle=True, seed=1,
                        multiprocessing_context="spawn")
    ref = DataLoader(RangeDataset(9), batch_size=4, shuffle=True, seed=1)
    assert batches(loader) == batches(ref)


def test_explicit_default_collate_uses_numpy_path(clean):
    loader = DataLoader(RangeDataset(4), batch_size=2, num_workers=1, collate_fn=default_collate)
    assert [b[1] for b in batches(loader)] == [[0, 1], [2, 3]]


def test_len_with_workers(clean):
    loader = DataLoader(RangeDataset(10), batch_size=3, num_workers=2)
    it = iter(loader)
    assert len(loader) == len(it) == 4
    del it
    assert len(DataLoader(ShardedStream(10), batch_size=3, num_workers=2)) == 4


def test_unpicklable_under_spawn_fails_cleanly(clean):
    loader = DataLoader(RangeDataset(4), batch_size=2, num_workers=2, collate_fn=lambda b: b,
                        multiprocessing_context="spawn")
    with pytest.raises(Exception, match="pickle"):
        list(loader)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_batches_become_ember_arrays_in_the_main_process_only(clean, monkeypatch, num_workers):
    import ember.array
    import ember.numpy as enp

    def fake_asarray(x, *args, **kwargs):
        if get_worker_info() is not None:
            raise AssertionError("ember conversion must not happen in a worker")
        return FakeEmberArray(x)

    # Both conversion routes (zero-copy wrapping of owned buffers, and asarray) are faked.
    monkeypatch.setattr(enp, "asarray", fake_asarray, raising=False)
    monkeypatch.setattr(ember.array, "wrap_buffer", fake_asarray)
    out = list(DataLoader(RangeDataset(6), batch_size=3, num_workers=num_workers))
    assert all(type(x) is FakeEmberArray and type(y) is FakeEmberArray for x, y in out)
    assert np.asarray(out[1][1]).tolist() == [3, 4, 5]
    custom = list(DataLoader(RangeDataset(4), batch_size=2, num_workers=num_workers,
                             collate_fn=lambda b: (np.stack([s[0] for s in b]), FakeEmberArray([len(b)]))))
    # A custom collate's numpy leaves stay numpy; its ember leaves stay ember.
    assert type(custom[0][0]) is np.ndarray and type(custom[0][1]) is FakeEmberArray


def test_persistent_loader_is_freed_without_cycle_collection(clean):
    loader = DataLoader(RangeDataset(6), batch_size=2, num_workers=2, persistent_workers=True)
    list(loader)
    gc.disable()
    try:
        del loader  # reference counting alone must shut the pool down
        deadline = time.monotonic() + 3
        while multiprocessing.active_children() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not multiprocessing.active_children()
    finally:
        gc.enable()


@pytest.mark.parametrize("num_workers", [0, 2])
def test_pin_memory_path_with_fake_allocator(clean, monkeypatch, num_workers):
    import ember.data.pin as pin

    requested = []

    def fake_alloc_pinned(nbytes):
        requested.append(nbytes)
        return bytearray(nbytes)

    monkeypatch.setattr(pin, "_cupy_alloc_pinned", lambda: fake_alloc_pinned)
    out = list(DataLoader(RangeDataset(6, dim=4), batch_size=3, num_workers=num_workers, pin_memory=True))
    assert np.asarray(out[1][1]).tolist() == [3, 4, 5]
    assert np.asarray(out[1][0]).shape == (3, 4)
    assert sorted(set(requested)) == [24, 48]  # int64 labels, float32 vectors
    requested.clear()
    custom = list(DataLoader(RangeDataset(4), batch_size=2, num_workers=num_workers, pin_memory=True,
                             collate_fn=lambda b: np.stack([s[0] for s in b])))
    assert len(custom) == 2 and requested


def test_prefetch_bound(clean):
    nw, pf = 2, 3
    it = iter(DataLoader(PidDataset(60), batch_size=2, num_workers=nw, prefetch_factor=pf))
    for _ in it:
        assert it._outstanding <= nw * pf and len(it._task_info) <= nw * pf
    del it


def test_worker_info_is_read_only_and_picklable():
    import pickle

    from ember.data import WorkerInfo

    info = WorkerInfo(1, 2, 3, None)
    with pytest.raises(AttributeError):
        info.id = 5
    again = pickle.loads(pickle.dumps(info))
    assert (again.id, again.num_workers, again.seed, again.dataset) == (1, 2, 3, None)
    assert get_worker_info() is None


class _BigLeaves(RangeDataset):
    """Samples whose non-array leaves pickle far past one pipe write."""

    def __getitem__(self, i):
        return {"x": np.full(3, i, np.float32), "text": "w%d " % i * 4000}


def test_every_result_message_fits_one_atomic_pipe_write(clean, tmp_path, monkeypatch):
    # A pipe write of at most PIPE_BUF bytes is all-or-nothing, so a worker killed while
    # sending cannot leave half a message that the main process would wait on forever.
    # Large non-array leaves and long tracebacks travel through a segment instead.
    import multiprocessing.queues as mpq
    from multiprocessing.reduction import ForkingPickler

    sizes = tmp_path / "sizes.txt"
    real_put = mpq.Queue.put

    def recording_put(self, obj, *a, **k):
        with open(sizes, "a") as f:
            f.write(f"{len(ForkingPickler.dumps(obj)) + 4}\n")
        return real_put(self, obj, *a, **k)

    monkeypatch.setattr(mpq.Queue, "put", recording_put)
    ctx = multiprocessing.get_context("fork")
    got = list(DataLoader(_BigLeaves(6), batch_size=2, num_workers=2, multiprocessing_context=ctx))
    assert [b["text"][1][:3] for b in got] == ["w1 ", "w3 ", "w5 "]
    np.testing.assert_array_equal(np.asarray(got[2]["x"]), np.full((2, 3), [[4], [5]], np.float32))

    class LongError(RangeDataset):
        def __getitem__(self, i):
            raise ValueError("corrupt " * 2000)

    with pytest.raises(ValueError, match="(corrupt ){100}"):
        list(DataLoader(LongError(2), num_workers=1, multiprocessing_context=ctx))
    written = [int(v) for v in sizes.read_text().split()]
    assert written and max(written) <= 4096, sorted(written)[-5:]
