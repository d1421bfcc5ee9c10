"""Kernel ABI, kernel launchers and the persistent worker pool.

Kernel ABI (fixed; every generated kernel has exactly this signature)::

    void kernel(i64 start, i64 stop, i8** args)

* The kernel computes the outputs for indices ``start <= i < stop`` of its
  outermost parallel dimension (output rows, or flat elements for a 1-d
  loop).  Any two disjoint ranges may run concurrently on different threads,
  so a kernel must write only the outputs that belong to its range.
* ``args`` is a table indexed by buffer number whose entry ``b`` points at
  the slot holding buffer ``b``'s data pointer (one indirection: a compiled
  program's slot for a numpy array is the data field inside the array object,
  so binding an array costs no address lookup, see executable.py; a hand-built
  call's slots are an array `PreparedCall` keeps).  Generated programs number
  buffers program-wide; hand-written kernels (loops.py) use their inputs then
  outputs.  Scalars and shapes are either baked into the code or passed in a
  small buffer like any other input.
* The kernel returns nothing and must not fail: errors are detected before the
  launch (shape checks) or signalled through an output buffer.
* An empty range (``start >= stop``) must be a no-op.

``declare_kernel`` creates a function with this signature in an llvmlite
module, ``kernel_arg`` loads one typed buffer pointer through ``args``.

Launching: ``KernelLauncher(address, n_args)`` builds the ctypes prototype
once; ``launcher.prepare(buffers)`` builds the pointer array once and returns
a ``PreparedCall`` whose ``__call__(start, stop)`` costs about a microsecond
and whose ``run(total, min_per_thread)`` either calls the kernel inline (small
work) or splits ``[0, total)`` into chunks claimed dynamically by the calling
thread and the workers of a persistent pool.  ctypes releases the GIL during
the native call, so the workers run in parallel.

Environment: ``EMBER_NUM_THREADS`` sets the pool size (default
``os.cpu_count()``); it is read when the pool is first created.

Example::

    cm = compile_ir(text, ["k"])
    call = KernelLauncher(cm["k"], 2).prepare([x.ctypes.data, y.ctypes.data])
    call.run(x.size, min_per_thread=1 << 16)   # y[i] = f(x[i]) on all cores
"""

from __future__ import annotations

import ctypes
import itertools
import os
import queue
import threading
import time
from typing import Callable, Sequence

import llvmlite.ir as ir

from .process_local import ProcessLocal

__all__ = [
    "KERNEL_SIGNATURE",
    "kernel_type",
    "declare_kernel",
    "kernel_arg",
    "KernelLauncher",
    "PreparedCall",
    "ThreadPool",
    "get_pool",
    "parallel_for",
    "num_threads",
]

KERNEL_SIGNATURE = "void kernel(i64 start, i64 stop, i8** args)"

_I64 = ir.IntType(64)
_I8PP = ir.IntType(8).as_pointer().as_pointer()


def kernel_type() -> ir.FunctionType:
    """The llvmlite type of a kernel: ``void (i64, i64, i8**)``.

    Example::

        fn = ir.Function(module, kernel_type(), name="k")
    """
    return ir.FunctionType(ir.VoidType(), [_I64, _I64, _I8PP])


def declare_kernel(module: ir.Module, name: str) -> tuple[ir.Function, ir.Argument, ir.Argument, ir.Argument]:
    """Add a kernel function with the ABI signature to ``module``.

    Returns ``(function, start, stop, args)``.  The function is marked
    ``nounwind`` and its ``args`` parameter ``noalias`` (the pointer array
    itself is not aliased by any buffer the kernel writes).

    Example::

        fn, start, stop, args = declare_kernel(module, "k")
        builder = ir.IRBuilder(fn.append_basic_block("entry"))
    """
    fn = ir.Function(module, kernel_type(), name=name)
    fn.attributes.add("nounwind")
    start, stop, args = fn.args
    start.name, stop.name, args.name = "start", "stop", "args"
    args.add_attribute("noalias")
    return fn, start, stop, args


def kernel_arg(builder: ir.IRBuilder, args: ir.Value, index: int, elem_type: ir.Type,
               name: str = "") -> ir.Value:
    """Buffer ``index``'s data pointer as ``elem_type*``: ``args[index]`` points at
    the slot holding it (the ABI above).

    Example::

        x = kernel_arg(b, args, 0, ir.FloatType(), "x")   # float* x
    """
    entry = builder.gep(args, [ir.Constant(_I64, index)], inbounds=True)
    raw = builder.load(entry, name=name + ".slot.raw" if name else "")
    slot = builder.bitcast(raw, _I8PP, name=name + ".slot" if name else "")
    data = builder.load(slot, name=name + ".data" if name else "")
    return builder.bitcast(data, elem_type.as_pointer(), name=name)


# ---------------------------------------------------------------------------
# launching

_PROTO = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)


class KernelLauncher:
    """Callable wrapper for a kernel at ``address`` taking ``n_args`` buffers.

    Keep a reference to the ``CompiledModule`` that owns ``address`` for as
    long as the launcher is used.

    Example::

        launcher = KernelLauncher(cm["k"], 2)
        call = launcher.prepare([x, y])            # numpy arrays or int addresses
        call(0, x.size)
    """

    __slots__ = ("address", "n_args", "_fn")

    def __init__(self, address: int, n_args: int):
        if not address:
            raise ValueError("null kernel address")
        self.address = int(address)
        self.n_args = int(n_args)
        self._fn = _PROTO(self.address)

    def prepare(self, buffers: Sequence[object]) -> "PreparedCall":
        """Build the ``args`` pointer array once.

        Each buffer is an integer address or an object with
        ``.ctypes.data`` (a numpy array, kept alive by the returned call).

        Example::

            call = launcher.prepare([x.ctypes.data, y.ctypes.data])
        """
        if len(buffers) != self.n_args:
            raise ValueError(f"kernel takes {self.n_args} buffers, got {len(buffers)}")
        addrs, keep = [], []
        for b in buffers:
            if isinstance(b, int):
                addrs.append(b)
            else:
                addrs.append(b.ctypes.data)
                keep.append(b)
        return PreparedCall(self._fn, addrs, keep)

    def __call__(self, start: int, stop: int, buffers: Sequence[object]) -> None:
        """One-off call: ``kernel(start, stop, buffers)`` (prepare for loops)."""
        self.prepare(buffers)(start, stop)


class PreparedCall:
    """A kernel with its argument array bound; call it repeatedly.

    Example::

        call(0, n)                              # inline, this thread
        call.run(n, min_per_thread=1 << 15)     # in parallel when worth it
    """

    __slots__ = ("_fn", "_slots", "_argv", "_argp", "_keep", "__weakref__")

    def __init__(self, fn, addresses: Sequence[int], keep=()):
        self._fn = fn
        n = max(1, len(addresses))
        self._slots = (ctypes.c_void_p * n)(*addresses)
        base, size = ctypes.addressof(self._slots), ctypes.sizeof(ctypes.c_void_p)
        self._argv = (ctypes.c_void_p * n)(*[base + i * size for i in range(n)])
        self._argp = ctypes.addressof(self._argv)
        self._keep = tuple(keep)

    @property
    def args_address(self) -> int:
        """The ``args`` table to pass to the kernel (e.g. to a worker pool).

        Example::

            get_native_pool().run(address, call.args_address, n)
        """
        return self._argp

    def __call__(self, start: int, stop: int) -> None:
        self._fn(start, stop, self._argp)

    def run(self, total: int, min_per_thread: int = 1 << 15, *, align: int = 1,
            pool: "ThreadPool | None" = None) -> None:
        """Compute indices ``[0, total)``.

        Runs inline when ``total < 2 * min_per_thread`` or the pool has one
        thread; otherwise splits the range into chunks (multiples of
        ``align``) executed by this thread and the pool's workers.

        Example::

            call.run(x.size, min_per_thread=1 << 16, align=64)
        """
        if total <= 0:
            return
        if total < 2 * min_per_thread:
            self._fn(0, total, self._argp)
            return
        (pool or get_pool()).parallel_for(self, total, min_per_thread, align=align)


# ---------------------------------------------------------------------------
# the worker pool


def num_threads() -> int:
    """Pool size from ``EMBER_NUM_THREADS`` (default ``os.cpu_count()``).

    Example::

        os.environ["EMBER_NUM_THREADS"] = "1"; num_threads()   # 1
    """
    env = os.environ.get("EMBER_NUM_THREADS", "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            pass
    return max(1, os.cpu_count() or 1)


class _Job:
    __slots__ = ("fn", "total", "chunk", "nchunks", "claims", "done", "lock", "finished", "error",
                 "worker_cpu")

    def __init__(self, fn, total, chunk):
        self.worker_cpu = 0.0
        self.fn = fn
        self.total = total
        self.chunk = chunk
        self.nchunks = -(-total // chunk)
        # next() on an itertools.count is atomic under the GIL: a lock-free
        # ticket dispenser, so a stalled thread never holds up the others
        self.claims = itertools.count()
        self.done = 0
        self.lock = threading.Lock()
        self.finished = threading.Event()
        self.error: BaseException | None = None

    def work(self) -> None:
        """Claim and run chunks until none are left (caller and workers)."""
        fn, chunk, total, n = self.fn, self.chunk, self.total, self.nchunks
        while True:
            i = next(self.claims)
            if i >= n:
                return
            if self.error is None:
                start = i * chunk
                try:
                    fn(start, min(start + chunk, total))
                except BaseException as e:  # noqa: BLE001 - re-raised in the caller
                    with self.lock:
                        if self.error is None:
                            self.error = e
            with self.lock:
                self.done += 1
                if self.done == n:
                    self.finished.set()


_STOP = object()


class ThreadPool:
    """A fixed set of worker threads that help the calling thread run
    ``fn(start, stop)`` over chunks of a range.

    Workers are daemon threads created lazily on first use and reused.  The
    calling thread always works too and claims chunks from the same counter,
    so a job completes even if every worker is busy or descheduled.  A pool
    created before ``os.fork()`` is not used in the child: ``get_pool()``
    notices the new pid and builds a fresh pool.  An ``adaptive`` pool runs
    jobs on the caller alone for a while after several jobs in a row got no
    real help from its workers (see the class constants).

    Example::

        pool = ThreadPool(2)
        pool.parallel_for(lambda a, b: out.__setitem__(slice(a, b), 1), 10**6, 10**4)
        pool.shutdown()
    """

    # Adaptivity: a job that ran long enough to judge (JUDGE_SECONDS) but kept the
    # threads busy for less than MIN_PARALLELISM x its wall time got no real help
    # (the other cores run other processes; a parallel job then also waits for a
    # descheduled worker and, for BLAS, packs operands once per chunk).  After
    # MISSES such jobs in a row the next SERIAL_JOBS jobs run on the caller alone.
    JUDGE_SECONDS = 1e-4
    MIN_PARALLELISM = 1.25
    MISSES = 3
    SERIAL_JOBS = 32

    def __init__(self, n_threads: int | None = None, adaptive: bool = True):
        self.adaptive = adaptive
        self._misses = 0
        self._serial_left = 0
        self.n_threads = max(1, int(n_threads if n_threads is not None else num_threads()))
        self.pid = os.getpid()
        self._queues: list[queue.SimpleQueue] = []
        self._threads: list[threading.Thread] = []
        self._start_lock = threading.Lock()
        self._closed = False

    def _ensure_started(self) -> None:
        if self._threads or self.n_threads <= 1:
            return
        with self._start_lock:
            if self._threads:
                return
            for i in range(self.n_threads - 1):
                q: queue.SimpleQueue = queue.SimpleQueue()
                t = threading.Thread(target=self._worker, args=(q,), daemon=True,
                                     name=f"ember-worker-{i}")
                t.start()
                self._queues.append(q)
                self._threads.append(t)

    @staticmethod
    def _worker(q: queue.SimpleQueue) -> None:
        while True:
            job = q.get()
            if job is _STOP:
                return
            c0 = time.thread_time()
            job.work()
            with job.lock:
                job.worker_cpu += time.thread_time() - c0

    def parallel_for(self, fn: Callable[[int, int], None], total: int, min_per_thread: int = 1,
                     *, align: int = 1) -> None:
        """Run ``fn(start, stop)`` over disjoint chunks covering ``[0, total)``.

        At most ``total // min_per_thread`` threads take part (including the
        caller); the range is cut into about four chunks per thread, rounded
        up to a multiple of ``align``, and chunks are claimed dynamically.
        The first exception raised by any chunk is re-raised here after all
        claimed chunks have finished; unclaimed chunks are skipped.

        Example::

            pool.parallel_for(lambda a, b: kernel(a, b), n_rows, min_per_thread=8)
        """
        if total <= 0:
            return
        if self._closed:
            raise RuntimeError("thread pool is shut down")
        min_per_thread = max(1, int(min_per_thread))
        align = max(1, int(align))
        nthreads = min(self.n_threads, total // min_per_thread)
        if nthreads <= 1 or os.getpid() != self.pid:
            fn(0, total)
            return
        self._ensure_started()
        chunk = -(-total // (4 * nthreads))
        chunk = max(chunk, min(min_per_thread, total) // 2 or 1)
        chunk = -(-chunk // align) * align
        job = _Job(fn, total, chunk)
        if job.nchunks <= 1:
            fn(0, total)
            return
        if self._serial_left > 0:
            # recent jobs got no help from the workers (the other cores are busy):
            # run on this thread alone for a while, then look again
            self._serial_left -= 1
            fn(0, total)
            return
        for q in self._queues[: min(nthreads, job.nchunks) - 1]:
            q.put(job)
        t0, c0 = time.perf_counter(), time.thread_time()
        job.work()
        cpu = time.thread_time() - c0
        job.finished.wait()
        wall = time.perf_counter() - t0
        if job.error is not None:
            raise job.error
        if self.adaptive and wall > self.JUDGE_SECONDS:
            with job.lock:
                cpu += job.worker_cpu
            if cpu < self.MIN_PARALLELISM * wall:
                self._misses += 1
                if self._misses >= self.MISSES:
                    self._misses = 0
                    self._serial_left = self.SERIAL_JOBS
            else:
                self._misses = 0

    def shutdown(self, timeout: float = 1.0) -> None:
        """Stop the workers (idempotent); the pool cannot be used afterwards.

        Example::

            pool = ThreadPool(2); ...; pool.shutdown()
        """
        self._closed = True
        if os.getpid() != self.pid:
            return  # the threads belong to the parent process
        for q in self._queues:
            q.put(_STOP)
        for t in self._threads:
            t.join(timeout)
        self._queues, self._threads = [], []


def get_pool() -> ThreadPool:
    """The process-wide pool, created on first use (and again after fork).

    Example::

        get_pool().n_threads
    """
    return _POOL.get()


def parallel_for(fn: Callable[[int, int], None], total: int, min_per_thread: int = 1,
                 *, align: int = 1) -> None:
    """``get_pool().parallel_for(...)``.

    Example::

        parallel_for(lambda a, b: call(a, b), n, min_per_thread=1 << 15)
    """
    get_pool().parallel_for(fn, total, min_per_thread, align=align)


_POOL = ProcessLocal(ThreadPool)
