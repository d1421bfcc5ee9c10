"""Kernel launching and the worker pool."""

from __future__ import annotations

import ctypes
import os
import threading
import time

import llvmlite.ir as ir
import numpy as np
import pytest

from ember.backends.llvm import (KERNEL_SIGNATURE, KernelLauncher, ThreadPool, compile_ir, get_pool,
                                 loops, mathlib, num_threads, parallel_for, runtime)


def _tanh_module():
    m = ir.Module()
    f32 = ir.FloatType()
    loops.elementwise_kernel(m, "tanh_k", 1, f32, lambda b, xs: [mathlib.emit(b, "tanh", xs, f32)])
    loops.row_sum_kernel(m, "rowsum", f32, 1000)
    return compile_ir(str(m), ["tanh_k", "rowsum"])


@pytest.fixture(scope="module")
def cm():
    return _tanh_module()


def test_abi_is_documented():
    assert KERNEL_SIGNATURE == "void kernel(i64 start, i64 stop, i8** args)"
    assert str(runtime.kernel_type()) == "void (i64, i64, i8**)"


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_results_identical_for_any_thread_count(cm, threads):
    x = np.random.default_rng(0).standard_normal(1_000_003).astype(np.float32)
    ref = np.empty_like(x)
    KernelLauncher(cm["tanh_k"], 2).prepare([x, ref])(0, x.size)  # one call, inline
    out = np.full_like(x, np.nan)
    pool = ThreadPool(threads)
    try:
        KernelLauncher(cm["tanh_k"], 2).prepare([x, out]).run(x.size, min_per_thread=10_000, align=16,
                                                               pool=pool)
    finally:
        pool.shutdown()
    np.testing.assert_array_equal(out, ref)


def test_row_reduction_parallel_matches(cm):
    x = np.random.default_rng(1).random((5000, 1000), dtype=np.float32)
    out1, out2 = np.empty(5000, np.float32), np.empty(5000, np.float32)
    KernelLauncher(cm["rowsum"], 2).prepare([x, out1])(0, 5000)
    pool = ThreadPool(2)
    KernelLauncher(cm["rowsum"], 2).prepare([x, out2]).run(5000, min_per_thread=50, pool=pool)
    pool.shutdown()
    np.testing.assert_array_equal(out1, out2)  # each row is summed by one thread
    np.testing.assert_allclose(out1, x.astype(np.float64).sum(1), rtol=1e-5)


def _python_kernel(record):
    """A ctypes callback with the kernel ABI, to observe how launches happen."""
    proto = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)

    def kernel(start, stop, args):
        record.append((start, stop, threading.get_ident()))

    cb = proto(kernel)
    return cb, ctypes.cast(cb, ctypes.c_void_p).value


def test_small_work_runs_inline():
    record = []
    cb, addr = _python_kernel(record)
    call = KernelLauncher(addr, 1).prepare([0])
    call.run(1000, min_per_thread=1000)
    assert record == [(0, 1000, threading.get_ident())]
    call.run(0)
    assert len(record) == 1


def test_chunks_cover_range_exactly_once():
    for total, minpt, align in [(10, 1, 1), (1000, 10, 16), (12345, 100, 64), (7, 3, 1), (1 << 20, 1 << 12, 8)]:
        pool = ThreadPool(2)
        seen = []
        lock = threading.Lock()

        def fn(a, b):
            with lock:
                seen.append((a, b))

        pool.parallel_for(fn, total, minpt, align=align)
        pool.shutdown()
        seen.sort()
        assert seen[0][0] == 0 and seen[-1][1] == total
        assert all(p[1] == q[0] for p, q in zip(seen, seen[1:]))
        assert all(a % align == 0 for a, _ in seen)


def test_worker_exception_propagates_and_pool_survives():
    pool = ThreadPool(2)
    main = threading.get_ident()

    def fn(a, b):
        if a > 0:  # every chunk but the first raises, whoever runs it
            raise ValueError(f"chunk {a}")

    with pytest.raises(ValueError, match="chunk"):
        pool.parallel_for(fn, 100, 10)
    # and an exception raised on a worker thread specifically
    ran_on = []

    def fn2(a, b):
        ran_on.append(threading.get_ident())
        if threading.get_ident() != main:
            raise KeyError("worker")
        time.sleep(0.01)  # give the worker a chance to claim a chunk

    for _ in range(20):
        try:
            pool.parallel_for(fn2, 8, 1)
        except KeyError:
            break
    out = []
    pool.parallel_for(lambda a, b: out.append((a, b)), 100, 10)
    assert sum(b - a for a, b in out) == 100
    pool.shutdown()
    with pytest.raises(RuntimeError):
        pool.parallel_for(lambda a, b: None, 100, 10)


def test_busy_worker_does_not_stall_the_caller():
    """Chunks are claimed dynamically: if the worker is stuck, the caller
    does the remaining chunks itself."""
    pool = ThreadPool(2)
    main = threading.get_ident()
    done_by_main = []

    def fn(a, b):
        if threading.get_ident() != main:
            time.sleep(0.3)
        else:
            done_by_main.append((a, b))

    pool.parallel_for(fn, 8 * 1000, 1000)
    pool.shutdown()
    nchunks = 8
    assert len(done_by_main) >= nchunks - 1


def test_concurrent_callers_share_a_pool():
    pool = ThreadPool(2)
    results = {}

    def user(k):
        acc = np.zeros(10_000, np.int64)

        def fn(a, b):
            acc[a:b] += k

        for _ in range(20):
            pool.parallel_for(fn, acc.size, 100)
        results[k] = acc

    ts = [threading.Thread(target=user, args=(k,)) for k in (1, 2, 3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    pool.shutdown()
    for k in (1, 2, 3):
        assert np.all(results[k] == 20 * k)


def test_num_threads_env(monkeypatch):
    monkeypatch.setenv("EMBER_NUM_THREADS", "3")
    assert num_threads() == 3
    assert ThreadPool().n_threads == 3
    monkeypatch.setenv("EMBER_NUM_THREADS", "junk")
    assert num_threads() == max(1, os.cpu_count() or 1)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_pool_works_after_fork(cm):
    x = np.random.default_rng(2).standard_normal(200_000).astype(np.float32)
    ref = np.tanh(x.astype(np.float64))
    parent_pool = get_pool()
    parallel_for(lambda a, b: None, 1000, 10)  # make sure worker threads exist
    call = KernelLauncher(cm["tanh_k"], 2)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: the parent's worker threads do not exist here
        ok = False
        try:
            pool = get_pool()
            out = np.empty_like(x)
            call.prepare([x, out]).run(x.size, min_per_thread=1000, pool=ThreadPool(2))
            call.prepare([x, out]).run(x.size, min_per_thread=1000)
            seen = []
            pool.parallel_for(lambda a, b: seen.append((a, b)), 1000, 10)
            ok = (pool is not parent_pool and pool.pid == os.getpid()
                  and np.abs(out - ref).max() < 1e-6 and sum(b - a for a, b in seen) == 1000)
        finally:
            os.write(w, b"1" if ok else b"0")
            os._exit(0)
    os.close(w)
    status = os.read(r, 1)
    os.waitpid(pid, 0)
    os.close(r)
    assert status == b"1"
    assert get_pool() is parent_pool


def test_prepare_checks_arity_and_keeps_arrays_alive(cm):
    launcher = KernelLauncher(cm["tanh_k"], 2)
    with pytest.raises(ValueError):
        launcher.prepare([1])
    with pytest.raises(ValueError):
        KernelLauncher(0, 1)
    x = np.ones(16, np.float32)
    out = np.zeros(16, np.float32)
    call = launcher.prepare([x, out])
    del x
    call(0, 16)
    np.testing.assert_allclose(out, np.tanh(np.float32(1)), rtol=1e-6)
    launcher(0, 8, [np.zeros(16, np.float32), out])
    assert np.all(out[:8] == 0) and np.all(out[8:] != 0)


def test_adaptive_pool_goes_serial_when_workers_do_not_help_and_comes_back():
    pool = ThreadPool(2)
    main = threading.get_ident()
    threads = []

    def fn(a, b):
        threads.append(threading.get_ident())
        if threading.get_ident() != main:
            time.sleep(0.002)          # a worker that holds its chunk without computing
        else:
            t = time.thread_time() + 0.0005
            while time.thread_time() < t:
                pass

    try:
        for _ in range(ThreadPool.MISSES):
            pool.parallel_for(fn, 8, 1)
        threads.clear()
        for _ in range(ThreadPool.SERIAL_JOBS):
            pool.parallel_for(fn, 8, 1)
        assert set(threads) == {main}   # all serial, whole range in one call
        assert len(threads) == ThreadPool.SERIAL_JOBS
        threads.clear()
        pool.parallel_for(fn, 8, 1)     # probing in parallel again
        assert len(threads) > 1
    finally:
        pool.shutdown()
    steady = ThreadPool(2, adaptive=False)
    try:
        for _ in range(ThreadPool.MISSES + 1):
            steady.parallel_for(fn, 8, 1)
        threads.clear()
        steady.parallel_for(fn, 8, 1)
        assert len(threads) > 1
    finally:
        steady.shutdown()
