"""A native worker pool that runs kernel chunks without the GIL.

The Python ``ThreadPool`` (runtime.py) wakes a worker through a queue for every
job: the worker then needs the futex wake-up, the GIL and a few Python calls
before it claims a chunk -- about 60 us on this project's VMs, a sizeable
part of a 0.3 ms matrix-product block.  Here the job lives in a small shared
table and the workers run a compiled loop (through a ctypes call, so without
the GIL) that spins for a short while after each job, claims chunks with an
atomic counter and calls the kernel directly.  A worker that found nothing to
do for ``SPIN_SECONDS`` (timed with the time stamp counter: how long a
``pause`` takes varies between CPUs and hypervisors) returns to Python and
sleeps on a queue; posting a job wakes the sleepers.  The caller takes chunks too and then waits, so a job
completes however late the workers are.

Like ``ThreadPool`` it is adaptive: after ``MISSES`` jobs in a row where the
caller waited for the workers longer than it worked itself, or awake workers
ran no chunk (the other cores are busy), the next ``SERIAL_JOBS`` jobs run on
the caller alone.  A job that had to wake sleeping workers and finished before
they arrived does not count.

Kernels follow the ABI of runtime.py: ``void k(i64 start, i64 stop, i8** args)``.

Example::

    pool = get_native_pool()
    pool.run(kernel_address, args_address, total=1024, min_per_thread=64)
"""
from __future__ import annotations

import ctypes
import os
import queue
import threading

import llvmlite.ir as ir

from . import compiler, target
from .process_local import ProcessLocal
from .runtime import get_pool, kernel_type, num_threads

__all__ = ["NativePool", "get_native_pool"]

_I64 = ir.IntType(64)
_I8P = ir.IntType(8).as_pointer()

# slots of the shared table (int64); hot counters on their own cache lines
_SEQ, _NEXT, _DONE = 0, 8, 16
_NCHUNKS, _CHUNK, _TOTAL, _FN, _ARGS, _STOP, _WCHUNKS = 24, 25, 26, 27, 28, 29, 30
_WORKER = 32          # worker w: sleeping flag at _WORKER + 8 w, last seen job at + 1
_MAX_WORKERS = 63


def _build_ir() -> str:
    m = ir.Module(name="ember_pool")
    p_ty = _I64.as_pointer()
    kty = kernel_type()
    yield_fn = ir.Function(m, ir.FunctionType(ir.IntType(32), []), name="ember_sched_yield")
    if target.host_triple().startswith(("x86_64", "i386", "i686")):
        pause = ir.Function(m, ir.FunctionType(ir.VoidType(), []), name="llvm.x86.sse2.pause")
    else:  # a plain spin elsewhere
        pause = ir.Function(m, ir.FunctionType(ir.VoidType(), []), name="ember_pool_nop")
        ir.IRBuilder(pause.append_basic_block()).ret_void()
    cycles = ir.Function(m, ir.FunctionType(_I64, []), name="llvm.readcyclecounter")
    c = lambda v: ir.Constant(_I64, v)  # noqa: E731

    def slot(b, p, i):
        return b.gep(p, [i if isinstance(i, ir.Value) else c(i)], inbounds=True)

    def load(b, p, i):
        return b.load_atomic(slot(b, p, i), "seq_cst", 8)

    def store(b, p, i, v):
        b.store_atomic(v, slot(b, p, i), "seq_cst", 8)

    def func(name, ret, args):
        f = ir.Function(m, ir.FunctionType(ret, [p_ty] + [_I64] * (len(args) - 1)), name=name)
        f.attributes.add("nounwind")
        for a, n in zip(f.args, args):
            a.name = n
        return f, ir.IRBuilder(f.append_basic_block("entry"))

    # i64 chunks(p): claim and run chunks of the posted job; returns how many
    chunks, b = func("ember_pool_chunks", _I64, ["p"])
    p = chunks.args[0]
    head, body, done = (chunks.append_basic_block(n) for n in ("claim", "run", "done"))
    entry = b.block
    b.branch(head)
    b.position_at_end(head)
    count = b.phi(_I64, "count")
    count.add_incoming(c(0), entry)
    i = b.atomic_rmw("add", slot(b, p, _NEXT), c(1), "seq_cst")
    b.cbranch(b.icmp_signed("<", i, load(b, p, _NCHUNKS)), body, done)
    b.position_at_end(body)
    chunk, total = load(b, p, _CHUNK), load(b, p, _TOTAL)
    start = b.mul(i, chunk)
    stop = b.add(start, chunk)
    stop = b.select(b.icmp_signed("<", stop, total), stop, total)
    fn = b.inttoptr(load(b, p, _FN), kty.as_pointer())
    b.call(fn, [start, stop, b.inttoptr(load(b, p, _ARGS), _I8P.as_pointer())])
    b.atomic_rmw("add", slot(b, p, _DONE), c(1), "seq_cst")
    count.add_incoming(b.add(count, c(1)), body)
    b.branch(head)
    b.position_at_end(done)
    b.ret(count)

    # i64 worker(p, w, spin): run posted jobs; 1 once `spin` cycles (time stamp
    # counter) passed without one, 2 on stop
    worker, b = func("ember_pool_worker", _I64, ["p", "w", "spin"])
    p, w, spin = worker.args
    seen_slot = b.add(c(_WORKER + 1), b.mul(w, c(8)))
    entry = b.block
    loop, stopped, check, job, idle, give_up = (worker.append_basic_block(n) for n in
                                                ("loop", "stopped", "check", "job", "idle", "give_up"))
    first = b.add(b.call(cycles, []), spin)
    b.branch(loop)
    b.position_at_end(loop)
    deadline = b.phi(_I64, "deadline")
    deadline.add_incoming(first, entry)
    b.cbranch(b.icmp_signed("!=", load(b, p, _STOP), c(0)), stopped, check)
    b.position_at_end(stopped)
    b.ret(c(2))
    b.position_at_end(check)
    seq = load(b, p, _SEQ)
    b.cbranch(b.icmp_signed("!=", seq, load(b, p, seen_slot)), job, idle)
    b.position_at_end(job)
    store(b, p, seen_slot, seq)
    ran = b.call(chunks, [p])
    b.atomic_rmw("add", slot(b, p, _WCHUNKS), ran, "seq_cst")
    deadline.add_incoming(b.add(b.call(cycles, []), spin), job)
    b.branch(loop)
    b.position_at_end(idle)
    b.call(pause, [])
    deadline.add_incoming(deadline, idle)
    b.cbranch(b.icmp_signed("<", b.call(cycles, []), deadline), loop, give_up)
    b.position_at_end(give_up)
    b.ret(c(1))

    # i64 cycles(): the time stamp counter, to calibrate the spin
    now, b = func("ember_pool_cycles", _I64, ["p"])
    b.ret(b.call(cycles, []))

    # i64 sleep(p, w): mark worker w asleep; 0 (stay awake) if a job arrived meanwhile
    sleep, b = func("ember_pool_sleep", _I64, ["p", "w"])
    p, w = sleep.args
    flag = b.add(c(_WORKER), b.mul(w, c(8)))
    store(b, p, flag, c(1))
    pending = b.icmp_signed("!=", load(b, p, _SEQ), load(b, p, b.add(flag, c(1))))
    with b.if_then(pending):
        b.atomic_rmw("xchg", slot(b, p, flag), c(0), "seq_cst")
        b.ret(c(0))
    b.ret(c(1))

    # i64 post(p, fn, args, total, chunk, nchunks, nworkers): publish a job and
    # return the mask of sleeping workers to wake
    post, b = func("ember_pool_post", _I64, ["p", "fn", "args", "total", "chunk", "nchunks", "nworkers"])
    p, fn, args, total, chunk, nchunks, nworkers = post.args
    for s, v in ((_FN, fn), (_ARGS, args), (_TOTAL, total), (_CHUNK, chunk), (_NCHUNKS, nchunks),
                 (_WCHUNKS, c(0)), (_DONE, c(0)), (_NEXT, c(0))):
        store(b, p, s, v)
    b.atomic_rmw("add", slot(b, p, _SEQ), c(1), "seq_cst")
    entry = b.block
    head, body, done = (post.append_basic_block(n) for n in ("w", "wake", "posted"))
    b.branch(head)
    b.position_at_end(head)
    wi = b.phi(_I64, "wi")
    mask = b.phi(_I64, "mask")
    wi.add_incoming(c(0), entry)
    mask.add_incoming(c(0), entry)
    b.cbranch(b.icmp_signed("<", wi, nworkers), body, done)
    b.position_at_end(body)
    old = b.atomic_rmw("xchg", slot(b, p, b.add(c(_WORKER), b.mul(wi, c(8)))), c(0), "seq_cst")
    mask.add_incoming(b.or_(mask, b.shl(old, wi)), body)
    wi.add_incoming(b.add(wi, c(1)), body)
    b.branch(head)
    b.position_at_end(done)
    b.ret(mask)

    # void finish(p, out): take chunks, wait for the rest; out = [chunks taken,
    # cycles working, cycles waiting]
    finish = ir.Function(m, ir.FunctionType(ir.VoidType(), [p_ty, p_ty]), name="ember_pool_finish")
    finish.attributes.add("nounwind")
    p, out = finish.args
    b = ir.IRBuilder(finish.append_basic_block("entry"))
    t0 = b.call(cycles, [])
    mine = b.call(chunks, [p])
    t1 = b.call(cycles, [])
    entry = b.block
    head, spin_b, yield_b, done = (finish.append_basic_block(n) for n in ("wait", "spin", "yield", "done"))
    b.branch(head)
    b.position_at_end(head)
    n = b.phi(_I64, "n")
    n.add_incoming(c(0), entry)
    b.cbranch(b.icmp_signed("<", load(b, p, _DONE), load(b, p, _NCHUNKS)), spin_b, done)
    b.position_at_end(spin_b)
    n1 = b.add(n, c(1))
    b.call(pause, [])
    b.cbranch(b.icmp_signed(">", n1, c(2000)), yield_b, head)
    n.add_incoming(n1, spin_b)
    b.position_at_end(yield_b)
    # a long wait: the worker is descheduled; let it (or anyone) have the core
    b.call(yield_fn, [])
    n.add_incoming(n1, yield_b)
    b.branch(head)
    b.position_at_end(done)
    t2 = b.call(cycles, [])
    b.store(mine, out)
    b.store(b.sub(t1, t0), b.gep(out, [c(1)]))
    b.store(b.sub(t2, t1), b.gep(out, [c(2)]))
    b.ret_void()
    return str(m)


_PROTO = {
    "ember_pool_cycles": ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p),
    "ember_pool_worker": ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64),
    "ember_pool_sleep": ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64),
    "ember_pool_post": ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, *[ctypes.c_int64] * 6),
    "ember_pool_finish": ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p),
}


def _compiled():
    libc = ctypes.CDLL(None)
    compiler.register_symbol("ember_sched_yield", ctypes.cast(libc.sched_yield, ctypes.c_void_p).value)
    cm = compiler.compile_ir(_build_ir(), list(_PROTO), opt=2)
    return cm, {name: proto(cm[name]) for name, proto in _PROTO.items()}


class NativePool:
    """``n_threads - 1`` workers running kernel chunks natively; see the module
    docstring.  ``run`` may be called from several threads: a job that finds
    the pool busy runs on its caller alone.

    Example::

        pool = NativePool(2)
        pool.run(address, argp, total=n_rows, min_per_thread=8)
        pool.shutdown()
    """

    SPIN_SECONDS = 2e-4    # how long an idle worker spins for the next job before sleeping
    MISSES = 3
    SERIAL_JOBS = 32

    def __init__(self, n_threads: int | None = None, adaptive: bool = True):
        self.n_threads = max(1, min(int(n_threads or num_threads()), _MAX_WORKERS + 1))
        self.adaptive = adaptive
        self.pid = os.getpid()
        self._cm, self._fns = _compiled()
        self._spin = max(1, int(self.SPIN_SECONDS * _cycles_per_second(self._fns["ember_pool_cycles"])))
        self._post = self._fns["ember_pool_post"]
        self._finish = self._fns["ember_pool_finish"]
        self._table = (ctypes.c_int64 * (_WORKER + 8 * _MAX_WORKERS + 8))()
        self._p = ctypes.addressof(self._table)
        self._stats = (ctypes.c_int64 * 3)()
        self._sp = ctypes.addressof(self._stats)
        self._busy = threading.Lock()
        self._start_lock = threading.Lock()
        self._queues: list[queue.SimpleQueue] = []
        self._threads: list[threading.Thread] = []
        self._misses = 0
        self._serial_left = 0
        self._closed = False
        self.jobs = self.serial_jobs = 0

    def _start(self):
        with self._start_lock:
            if self._threads or self.n_threads <= 1:
                return
            for w in range(self.n_threads - 1):
                q: queue.SimpleQueue = queue.SimpleQueue()
                t = threading.Thread(target=self._worker, args=(w, q), daemon=True,
                                     name=f"ember-native-worker-{w}")
                self._queues.append(q)
                self._threads.append(t)
                t.start()

    def _worker(self, w, q):
        work, sleep = self._fns["ember_pool_worker"], self._fns["ember_pool_sleep"]
        while True:
            if work(self._p, w, self._spin) == 2:
                return
            if sleep(self._p, w):
                q.get()

    def run(self, fn: int, args: int, total: int, min_per_thread: int = 1) -> None:
        """Run kernel ``fn`` (an address) over ``[0, total)`` with argument table
        ``args`` (an address), in chunks of at least ``min_per_thread / 2``."""
        if total <= 0:
            return
        nthreads = min(self.n_threads, total // max(1, min_per_thread))
        if nthreads <= 1 or self._closed or os.getpid() != self.pid:
            _call(fn, 0, total, args)
            return
        if self._serial_left > 0:
            # recent jobs got no help from the workers: the caller alone for a while
            self._serial_left -= 1
            self.serial_jobs += 1
            _call(fn, 0, total, args)
            return
        if not self._threads:
            self._start()
        if not self._busy.acquire(False):
            _call(fn, 0, total, args)   # another thread's job is running
            return
        try:
            chunk = max(-(-total // (4 * nthreads)), min(min_per_thread, total) // 2 or 1)
            nchunks = -(-total // chunk)
            mask = woke = self._post(self._p, fn, args, total, chunk, nchunks, len(self._threads))
            w = 0
            while mask:
                if mask & 1:
                    self._queues[w].put(None)
                mask >>= 1
                w += 1
            self._finish(self._p, self._sp)
            self.jobs += 1
            if self.adaptive:
                mine, working, waiting = self._stats
                if waiting > working or (mine >= nchunks and not woke):
                    self._misses += 1
                    if self._misses >= self.MISSES:
                        self._misses, self._serial_left = 0, self.SERIAL_JOBS
                elif mine < nchunks:
                    self._misses = 0
                # else: the caller finished before the workers it woke arrived, at no
                # cost to it -- not a sign of busy cores.  Counting it locked the pool
                # into serial spells on a quiet machine: a spell lets the workers fall
                # asleep, so the next jobs' workers are late again.
        finally:
            self._busy.release()

    def shutdown(self, timeout: float = 1.0) -> None:
        """Stop the workers (idempotent)."""
        self._closed = True
        if os.getpid() != self.pid:
            return
        self._table[_STOP] = 1
        for q in self._queues:
            q.put(None)
        for t in self._threads:
            t.join(timeout)
        self._threads, self._queues = [], []


def _cycles_per_second(read) -> float:
    """The time stamp counter's rate, measured against perf_counter over ~2 ms."""
    import time
    t0, c0 = time.perf_counter(), read(0)
    while time.perf_counter() - t0 < 2e-3:
        pass
    t1, c1 = time.perf_counter(), read(0)
    rate = (c1 - c0) / (t1 - t0)
    return rate if rate > 1e6 else 1e9   # no usable counter: count it as 1 GHz


_CALL = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
_calls: dict = {}


def _call(fn, start, stop, args):
    f = _calls.get(fn)
    if f is None:
        f = _calls[fn] = _CALL(fn)
    f(start, stop, args)


class _ThreadPoolRunner:
    """``NativePool.run`` on the Python ``ThreadPool``, where the native pool
    cannot be built (no ``sched_yield``, an unusual target)."""

    def __init__(self):
        self.pid = os.getpid()
        self._closed = False
        self.n_threads = get_pool().n_threads

    def run(self, fn, args, total, min_per_thread=1):
        get_pool().parallel_for(lambda a, b: _call(fn, a, b, args), total, min_per_thread)

    def shutdown(self, timeout=1.0):
        self._closed = True


def get_native_pool() -> NativePool:
    """The process-wide native pool, created on first use (and again after fork).

    Example::

        get_native_pool().n_threads
    """
    return _NATIVE.get()


def _build_pool():
    try:
        return NativePool()
    except Exception:  # noqa: BLE001 - fall back to the Python pool
        return _ThreadPoolRunner()


_NATIVE = ProcessLocal(_build_pool)
