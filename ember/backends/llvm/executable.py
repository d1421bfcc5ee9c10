"""A jitted program on the CPU: scheduled steps, compiled kernels, one executable.

`compile_graph` schedules a closed graph (ember.backends.kernels), renders
its kernels to LLVM IR in one module, compiles it (disk-cached, looked up by a
fingerprint of the scheduled program so a hit builds no IR), and returns a
`NativeExecutable` whose call runs the steps in order: kernels (fused loops,
BLAS products, convolutions, scatters) through prepared ctypes calls, large
ones split over the native worker pool (pool.py); scan and while_loop as
native loops (native_loops.py: the loop code interpreter called like a kernel)
when their bodies allow, else library steps on the host
(`kernels.runner.host_library_step`: the numpy impl, or the shared
control-flow driver with its bodies compiled here).  The arena plan,
reduction inits and work estimates are the neutral `kernels.runner`'s; this
module keeps the ctypes binding and the threading policy.  The per-call
Python work is one generated straight-line function per executable.

Buffers.  Every kernel of a program finds its buffers in one table indexed by
buffer id: entry `b` holds the address of a pointer to buffer `b`'s data.  For a
numpy array that pointer is the `data` field inside the array object itself,
so binding an array to a slot costs an `id()` and an addition (reading an
array's address through `__array_interface__` costs ~1.5 us).  Intermediate
results of kernels live in one arena per executable, laid out once from their
lifetimes and reused by every call (no allocation, no page faults on fresh
memory); program outputs are fresh arrays, except that a large output array the
caller has dropped (no reference left but ours) is reused by the next call.  A
call that finds the executable busy in another thread runs with a private
arena.

Example:
    >>> import ember, numpy as np
    >>> from ember import lax
    >>> exe = compile_graph(ember.make_graph(lambda x: lax.exp(x))(np.zeros(3, np.float32)))
    >>> exe(np.zeros(3, np.float32))[0].tolist()
    [1.0, 1.0, 1.0]
"""
from __future__ import annotations

import ctypes
import functools
import sys
import threading

import numpy as np

from ... import config
from ..base import Executable
from ..kernels import (ConvKernel, GemmKernel, MapKernel, ReduceKernel, RowKernel, ScatterKernel, fingerprint,
                       format_program, schedule)
from ..kernels.runner import KERNELS, parallel_range, plan_arena, reduction_inits, work
from . import blas, loop_vm, packed_gemm
from .codegen import kernel_names, render_program
from .native_loops import LoopFallback, NativeLoop, bind_library_step
from .fingerprint import generator_fingerprint
from .compiler import compile_ir, compile_lazy
from .pool import get_native_pool
from .kernel_target import cpu_target
from .runtime import KernelLauncher, num_threads

# Work (elements, weighted by the cost of their expression) below which a kernel
# runs on the calling thread only; larger kernels are split over the native
# worker pool (pool.py).
MIN_PER_THREAD = 1 << 16
# Programs whose largest kernel is smaller than this are compiled without
# optimisation: O3 costs ~4x the compile time (0.05 -> 0.19 s for a few kernels),
# while tests and small models compile many tiny programs.  From a few thousand
# elements on it pays: a 64x64 map took 20 us at O0 and 0.18 us at O3 (O1 is
# no better than O0: it does not vectorise), a tanh + row sum 155 vs 10-14 us.
SMALL_PROGRAM = 1 << 12
# Output arrays of at least this many bytes are reused across calls once the
# caller has dropped them (smaller ones come from malloc's free lists anyway).
RECYCLE_BYTES = 1 << 17
_ALIGN = 64


def _data_offset():
    """Offset of the data pointer inside a numpy array object, or None."""
    try:
        for off in range(8, 129, 8):
            ok = True
            for n in (1, 7, 1000):
                a = np.arange(n, dtype=np.float64)
                if ctypes.c_void_p.from_address(id(a) + off).value != a.__array_interface__["data"][0]:
                    ok = False
                    break
            if ok:
                return off
    except Exception:  # noqa: BLE001 - an unusual interpreter: use real addresses
        pass
    return None


DATA_OFFSET = _data_offset()

_K_INLINE, _K_PARALLEL, _LIB, _K_LOOP = range(4)   # _K_LOOP: a native loop (native_loops.py)


class _Step:
    """What one step needs at run time (shared by every state of an executable)."""
    __slots__ = ("kind", "fn", "addr", "total", "min_rows", "init", "inputs", "outputs", "multiple", "addr_out",
                 "loop", "step")   # step: the program step it runs (ember.profiler names and costs it)


class _State:
    """The per-call machinery: pointer table, buffer views, arena and bound calls.
    One is kept per executable and reused; concurrent calls build their own."""
    __slots__ = ("table", "argp", "views", "arena", "holders", "calls", "recycled", "run", "loops")


class NativeExecutable(Executable):
    """Runs a scheduled program: see the module docstring."""

    def __init__(self, program, addresses, module=None, hot=False):
        self.program = program
        self._module = module  # keeps the compiled code alive
        self.n_buffers = len(program.buffers)
        bufs = program.buffers
        self.const_slots = [(b, np.ascontiguousarray(_host(c))) for b, c in program.consts]
        self._inputs = list(program.inputs)
        out_ids = {o for o in program.outputs if not isinstance(o, tuple)}
        read_by_kernel = set()
        kernel_out, lib_out = {}, {}
        # library steps bound first: a native loop runs like a kernel (its results
        # are buffers of this program, its operands read through the table)
        bound = {i: bind_library_step(step, _compile_hot if hot else compile_graph, _compile_hot)
                 for i, step in enumerate(program.steps) if not isinstance(step, KERNELS)}
        loops = {i for i, fn in bound.items() if isinstance(fn, NativeLoop) and DATA_OFFSET is not None}
        for i, step in enumerate(program.steps):
            if isinstance(step, KERNELS) or i in loops:
                read_by_kernel.update(step.inputs)
                for o in step.outputs:
                    kernel_out.setdefault(o, i)  # the first writer allocates it
            else:
                for o in step.outputs:
                    lib_out[o] = i
        self._fresh = [(b, bufs[b].shape, bufs[b].dtype, bufs[b].size * bufs[b].dtype.itemsize >= RECYCLE_BYTES)
                       for b in sorted(kernel_out) if b in out_ids]
        self._lib_outputs = [o for o in sorted(lib_out) if o in out_ids]
        # buffers that hold arrays of one call only: forgotten when it returns
        self._transient = sorted(set(self._inputs) | {b for b, *_ in self._fresh} | set(lib_out))
        self._outputs = list(program.outputs)
        self._offsets, self._arena_bytes = plan_arena(program, kernel_out, out_ids, _ALIGN)

        self._steps = []
        gemm = False
        for i, step in enumerate(program.steps):
            d = _Step()
            d.step = step
            if i in loops:
                d.kind, d.loop = _K_LOOP, bound[i]
                d.addr, d.fn = loop_vm.loop_address(), loop_vm.loop_function()
                d.total, d.init, d.outputs = 1, [], step.outputs
            elif isinstance(step, KERNELS):
                d.addr = addresses[step.name]
                d.fn = KernelLauncher(d.addr, 1)._fn
                d.total, row_work = parallel_range(step)
                d.min_rows = max(1, -(-MIN_PER_THREAD // max(row_work, 1)))
                d.outputs = step.outputs
                d.init = reduction_inits(step, bufs)
                if all(bufs[o].size == 0 for o in d.outputs) or d.total == 0:
                    continue  # (an empty member of a row group still runs: its siblings may not be)
                gemm |= isinstance(step, (GemmKernel, ConvKernel))
                d.kind = _K_INLINE if d.total < 2 * d.min_rows or num_threads() <= 1 else _K_PARALLEL
            else:
                d.kind = _LIB
                d.fn = bound[i]
                d.inputs = step.args
                d.outputs = step.outputs
                d.multiple = step.eq.prim.multiple_results
                d.addr_out = [(o, bufs[o].dtype) if o in read_by_kernel else None for o in step.outputs]
            self._steps.append(d)
        if gemm and packed_gemm.use_blas():
            blas.limit_threads(1)
        self._lock = threading.Lock()
        self._state = None

    # --- states ------------------------------------------------------------------------------
    def _new_state(self) -> _State:
        st = _State()
        n = max(self.n_buffers, 1)
        st.table = (ctypes.c_void_p * n)()
        st.argp = ctypes.addressof(st.table)
        st.views = [None] * n
        st.recycled = {}
        if DATA_OFFSET is None:
            st.holders = (ctypes.c_void_p * n)()
            base = ctypes.addressof(st.holders)
            for b in range(n):
                st.table[b] = base + b * ctypes.sizeof(ctypes.c_void_p)
        else:
            st.holders = None
        raw = np.empty(self._arena_bytes + _ALIGN, np.uint8)
        skip = (-raw.__array_interface__["data"][0]) % _ALIGN
        st.arena = raw[skip:skip + self._arena_bytes]
        bufs = self.program.buffers
        for b, off in self._offsets.items():
            self._bind(st, b, np.ndarray(bufs[b].shape, bufs[b].dtype, buffer=st.arena, offset=off))
        for b, c in self.const_slots:
            self._bind(st, b, c)
        st.loops = []
        st.calls = [self._make_call(st, d) for d in self._steps]
        st.run = self._make_runner(st) if st.holders is None else functools.partial(self._run, st)
        return st

    def _make_runner(self, st):
        """`run(args)`: `_run` as straight-line code for this program (the per-call
        Python work is most of a tiny program's time).  Arrays only kernels touch
        stay in local names; `views` holds what library steps and fills read."""
        env = {"ndarray": np.ndarray, "contiguous": _contiguous, "empty": np.empty, "recycled": _recycled,
               "views": st.views, "table": st.table, "rec": st.recycled, "OFF": DATA_OFFSET,
               "asarray": np.asarray, "detach": self._detach, "st": st}
        viewed = set(self._lib_outputs)
        for d in self._steps:
            if d.kind == _LIB:
                viewed.update(a for a in d.inputs if type(a) is int)
            elif d.init:
                viewed.update(b for b, _ in d.init)
        local = {}
        lines = ["def run(args):"]
        for j, b in enumerate(self._inputs):
            lines += [f"    x{j} = args[{j}]",
                      f"    if type(x{j}) is not ndarray or not x{j}.flags.c_contiguous:",
                      f"        x{j} = contiguous(x{j})",
                      f"    table[{b}] = id(x{j}) + OFF"]
            if b in viewed:
                lines.append(f"    views[{b}] = x{j}")
            local.setdefault(b, f"x{j}")
        for b, shape, dtype, recycle in self._fresh:
            env[f"S{b}"], env[f"D{b}"] = shape, dtype
            lines += [f"    o{b} = recycled(rec, {b}, S{b}, D{b})" if recycle else f"    o{b} = empty(S{b}, D{b})",
                      f"    table[{b}] = id(o{b}) + OFF"]
            if b in viewed:
                lines.append(f"    views[{b}] = o{b}")
            local[b] = f"o{b}"
        outs = []
        for j, o in enumerate(self._outputs):
            if type(o) is not int:
                env[f"L{j}"] = o[1]
                outs.append(f"asarray(L{j})")
            else:
                outs.append(local.get(o, f"views[{o}]"))
        cleared = sorted(b for b in self._transient if b in viewed or b not in local)
        if cleared:
            lines.append("    try:")
        pad = "        " if cleared else "    "
        for i, call in enumerate(st.calls):
            env[f"c{i}"] = call
            lines.append(f"{pad}c{i}()")
        lines.append(f"{pad}outs = [{', '.join(outs)}]")
        if self._lib_outputs:
            lines.append(f"{pad}outs = detach(st, outs)")
        if cleared:
            lines.append("    finally:")
            lines += [f"        views[{b}] = None" for b in cleared]
        lines.append("    return outs")
        exec("\n".join(lines), env)  # noqa: S102 - our own text, built from the program
        return env["run"]

    @staticmethod
    def _bind(st, b, arr):
        st.views[b] = arr
        if st.holders is None:
            st.table[b] = id(arr) + DATA_OFFSET
        else:
            st.holders[b] = arr.__array_interface__["data"][0]

    def _make_call(self, st, d):
        argp = st.argp
        if d.kind == _LIB:
            return functools.partial(_run_library, self, st, d)
        if d.kind == _K_LOOP:
            loop = d.loop.kernel_state()   # code and slots of this state's own
            st.loops.append(loop)
            return functools.partial(d.fn, loop.code.ctypes.data, loop.slots.ctypes.data, argp)
        fn, total = d.fn, d.total
        if d.kind == _K_INLINE:
            call = functools.partial(fn, 0, total, argp)
        else:
            call = functools.partial(_run_parallel, d.addr, argp, total, d.min_rows)
        if d.init:
            views = st.views
            inits = d.init

            def with_init():
                for b, v in inits:
                    views[b].fill(v)
                call()
            return with_init
        return call

    # --- calls -------------------------------------------------------------------------------
    def __call__(self, *args):
        if self._lock.acquire(False):
            try:
                st = self._state
                if st is None:
                    st = self._state = self._new_state()
                return st.run(args)
            finally:
                self._lock.release()
        return self._new_state().run(args)

    def _run(self, st, args):
        views = st.views
        if st.holders is None:
            table, off = st.table, DATA_OFFSET
            for b, x in zip(self._inputs, args):
                if type(x) is not np.ndarray or not x.flags.c_contiguous:
                    x = _contiguous(x)
                views[b] = x
                table[b] = id(x) + off
            rec = st.recycled
            for b, shape, dtype, recycle in self._fresh:
                a = None
                if recycle:
                    a = _recycled(rec, b, shape, dtype)
                else:
                    a = np.empty(shape, dtype)
                views[b] = a
                table[b] = id(a) + off
        else:
            for b, x in zip(self._inputs, args):
                self._bind(st, b, _contiguous(x))
            for b, shape, dtype, _ in self._fresh:
                self._bind(st, b, np.empty(shape, dtype))
        try:
            for call in st.calls:
                call()
            outs = [views[o] if type(o) is int else np.asarray(o[1]) for o in self._outputs]
            if self._lib_outputs:
                outs = self._detach(st, outs)
        finally:
            for b in self._transient:
                views[b] = None
        return outs

    def _detach(self, st, outs):
        """Copy library results that are views of the arena (the next call reuses it)."""
        for j, o in enumerate(self._outputs):
            if type(o) is int and o in self._lib_outputs:
                root = outs[j]
                while isinstance(root, np.ndarray) and root.base is not None:
                    root = root.base
                if root is st.arena or (isinstance(root, np.ndarray) and root is st.arena.base):
                    outs[j] = np.array(outs[j], copy=True)
        return outs

    def loop_paths(self) -> list:
        """(primitive name, "native" or "fallback: <reason>") for each scan,
        while_loop, cond/switch and call of a sub-graph (jit_call, remat, custom
        rules) of this program (native_loops.py), in program order.

        Example:
            >>> import ember, numpy as np
            >>> g = ember.make_graph(lambda x: ember.fori_loop(0, 3, lambda i, v: v * 2.0, x))(np.float32(1))
            >>> compile_graph(g).loop_paths()
            [('scan', 'native')]
        """
        out = []
        for d in self._steps:
            if d.kind == _K_LOOP or isinstance(d.fn, NativeLoop):
                out.append((d.step.eq.prim.name, "native"))
            elif isinstance(d.fn, LoopFallback):
                out.append((d.step.eq.prim.name, "fallback: " + d.fn.reason))
        return out

    def close(self):
        """Drop the arena kept between calls (it is rebuilt on the next call)."""
        with self._lock:
            self._state = None


def _contiguous(x):
    x = np.asarray(x)
    return x if x.flags.c_contiguous else np.ascontiguousarray(x)  # (0-d arrays stay 0-d)


def _recycled(rec, b, shape, dtype):
    """An output array for buffer `b`: one of the last two returned for it if the
    caller has dropped it, else a new one (two, so that `y = f(x)` in a loop, which
    still holds the previous result during the call, reuses the one before)."""
    slots = rec.get(b)
    if slots is None:
        slots = rec[b] = []
    for a in slots:
        # the list, the loop name and getrefcount's argument: nobody else holds it
        if sys.getrefcount(a) == 3:
            a.flags.writeable = True
            return a
    a = np.empty(shape, dtype)
    slots.insert(0, a)
    del slots[2:]
    return a


def _run_parallel(addr, argp, total, min_rows):
    get_native_pool().run(addr, argp, total, min_rows)


def _run_library(exe, st, d):
    views = st.views
    vals = [views[a] if type(a) is int else a[1] for a in d.inputs]
    res = d.fn(*vals)
    if not d.multiple:
        res = (res,)
    for o, r, need in zip(d.outputs, res, d.addr_out):
        r = np.asarray(r)
        if need is not None:
            # a kernel reads it: contiguous, of the buffer's dtype, with a table entry
            if r.dtype != need[1]:
                r = r.astype(need[1])
            elif not r.flags.c_contiguous:
                r = np.ascontiguousarray(r)
            exe._bind(st, o, r)
        else:
            views[o] = r


def _host(c):
    v = getattr(c, "_value", None)
    return v if v is not None else np.asarray(c)


def compile_graph(closed, target=None, hot=False) -> NativeExecutable:
    """Schedule, render and compile a closed graph for this CPU (under `target`,
    by default `kernel_target.cpu_target()`).  A `hot` graph (a loop body, run
    many times per call) is optimised however small its kernels are, and so are
    the sub-graphs of its library steps."""
    prog = schedule(closed, cpu_target() if target is None else target)
    if config.dump_kernels():
        print(f"[ember] program for {len(closed.equations)} equations:\n{format_program(prog)}",
              file=sys.stderr)
    names = kernel_names(prog)
    if not names:
        return NativeExecutable(prog, {}, hot=hot)
    loops = []
    for s in prog.steps:
        loops.extend(s.members if isinstance(s, RowKernel) else [s.cols] if isinstance(s, ConvKernel)
                     else s.epilogue if isinstance(s, GemmKernel)
                     else [s] if isinstance(s, (MapKernel, ReduceKernel, ScatterKernel)) else [])
    work_max = max((work(m) for m in loops), default=0)
    opt = 3 if work_max >= SMALL_PROGRAM or hot else 0
    symbols = blas.SYMBOLS if packed_gemm.use_blas() else packed_gemm.SYMBOLS
    externals = sorted({symbols[np.dtype(s.dtype)] for s in prog.steps if isinstance(s, (GemmKernel, ConvKernel))})
    try:
        source = fingerprint(prog) + "\n" + generator_fingerprint() + ("\nhot" if hot else "")
    except OSError:  # the generator's sources cannot be read: key by the IR itself
        source = None
    # a fixed module name keeps the IR text, and so the disk-cache key, deterministic
    if source is None:
        cm = compile_ir(render_program(prog, "ember", hot)[0], names, opt=opt)
    else:
        cm = compile_lazy(source, lambda: render_program(prog, "ember", hot)[0], names, opt=opt, externals=externals)
    return NativeExecutable(prog, {n: cm[n] for n in names}, cm, hot=hot)


def _compile_hot(closed) -> NativeExecutable:
    return compile_graph(closed, hot=True)
