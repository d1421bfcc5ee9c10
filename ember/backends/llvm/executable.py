"""A jitted program on the CPU: scheduled steps, compiled kernels, one executable.

`compile_graph` schedules a closed graph (ember.backends.kernels), renders
its kernels to LLVM IR in one module, compiles it (disk-cached), and returns
a `NativeExecutable` whose call runs the steps in order: kernels through
prepared ctypes calls on the worker pool, library steps with the primitives'
numpy implementations.

Example:
    >>> import ember, numpy as np
    >>> from ember import lax
    >>> exe = compile_graph(ember.make_graph(lambda x: lax.exp(x))(np.zeros(3, np.float32)))
    >>> exe(np.zeros(3, np.float32))[0].tolist()
    [1.0, 1.0, 1.0]
"""
from __future__ import annotations

import ctypes
import sys
import threading

import numpy as np

from ... import config
from ..base import Executable
from ..kernels import MapKernel, ReduceKernel, format_program, schedule
from .codegen import render_program, supports
from .compiler import compile_ir
from .runtime import KernelLauncher, get_pool, num_threads
from .subgraphs import native_impl

# Elements of work below which a kernel runs on the calling thread only.
MIN_PER_THREAD = 1 << 15
# Programs whose largest kernel is smaller than this are compiled without
# optimisation: O3 costs ~10x the compile time and buys nothing measurable on
# a few thousand elements, while tests and small models compile many of them.
SMALL_PROGRAM = 1 << 14


class _KernelStep:
    """One kernel launch: its ctypes function and a reusable pointer array that is
    refilled with the buffers' addresses on every call (no per-call allocation)."""
    __slots__ = ("fn", "argv", "argp", "args", "out", "shape", "dtype", "total", "min_rows", "init",
                 "inline", "lock")

    def __init__(self, kernel, address, prog):
        self.args = list(kernel.inputs)
        self.out = kernel.out
        buf = prog.buffers[kernel.out]
        self.shape, self.dtype = buf.shape, buf.dtype
        self.fn = KernelLauncher(address, len(self.args) + 1)._fn
        self.argv = (ctypes.c_void_p * (len(self.args) + 1))()
        self.argp = ctypes.addressof(self.argv)
        self.lock = threading.Lock()
        self.init = None
        if isinstance(kernel, MapKernel):
            space = kernel.shape
            parallel = bool(space)
        else:
            space = kernel.space
            register_acc = kernel.register_accumulator
            parallel = bool(kernel.kept) and (register_acc or 0 in kernel.kept)
            if register_acc:
                space = tuple(space[i] for i in kernel.kept)
            else:
                self.init = _identity(kernel.op, buf.dtype)
        if parallel:
            self.total = space[0]
            row = int(np.prod(space[1:], dtype=np.int64)) or 1
            self.min_rows = max(1, MIN_PER_THREAD // row)
        else:
            self.total = 1
            self.min_rows = 1
        self.inline = self.total < 2 * self.min_rows or num_threads() <= 1

    def launch(self, bufs, out):
        # The pointer array is shared by concurrent calls of the same executable,
        # hence the lock (uncontended: ~0.1 us).
        with self.lock:
            argv = self.argv
            for j, a in enumerate(self.args):
                argv[j] = bufs[a].__array_interface__["data"][0]
            argv[len(self.args)] = out.__array_interface__["data"][0]
            if self.inline:
                self.fn(0, self.total, self.argp)
            else:
                fn, argp = self.fn, self.argp
                get_pool().parallel_for(lambda a, b: fn(a, b, argp), self.total, self.min_rows)


def _identity(op, dtype):
    d = np.dtype(dtype)
    if d == np.bool_:
        return op in ("and", "min", "prod")
    if d.kind == "f" or d.name == "bfloat16":
        return {"sum": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}[op]
    if op == "sum":
        return 0
    if op == "prod":
        return 1
    info = np.iinfo(d)
    return info.min if op == "max" else info.max


class NativeExecutable(Executable):
    """Runs a scheduled program: see the module docstring."""

    def __init__(self, program, addresses):
        self.program = program
        self.steps = []
        for step in program.steps:
            if isinstance(step, (MapKernel, ReduceKernel)):
                self.steps.append(_KernelStep(step, addresses[step.name], program))
            else:
                self.steps.append(_LibraryCall(step))
        self.n_buffers = len(program.buffers)
        self.const_slots = [(b, np.ascontiguousarray(_host(c))) for b, c in program.consts]

    def __call__(self, *args):
        prog = self.program
        bufs = [None] * self.n_buffers
        for b, c in self.const_slots:
            bufs[b] = c
        for b, x in zip(prog.inputs, args):
            x = np.asarray(x)
            bufs[b] = x if x.flags.c_contiguous else np.ascontiguousarray(x)
        for step in self.steps:
            if type(step) is _KernelStep:
                out = (np.empty(step.shape, step.dtype) if step.init is None
                       else np.full(step.shape, step.init, step.dtype))
                bufs[step.out] = out
                if out.size == 0:
                    continue
                step.launch(bufs, out)
            else:
                vals = [a[1] if isinstance(a, tuple) else bufs[a] for a in step.inputs]
                res = step.fn(*vals)
                if step.multiple:
                    for o, r in zip(step.outputs, res):
                        bufs[o] = np.asarray(r)
                else:
                    bufs[step.outputs[0]] = np.asarray(res)
        return [np.asarray(o[1]) if isinstance(o, tuple) else bufs[o] for o in prog.outputs]


class _LibraryCall:
    """A library step: the primitive's numpy impl, or a natively compiled version
    of its sub-graphs for higher-order primitives (see subgraphs.py)."""
    __slots__ = ("fn", "inputs", "outputs", "multiple")

    def __init__(self, step):
        eq = step.eq
        native = native_impl(eq)
        if native is None:
            impl, params = eq.prim.impl, eq.params
            native = lambda *vals: impl(*vals, **params)  # noqa: E731
        self.fn = native
        self.inputs, self.outputs = step.inputs, step.outputs
        self.multiple = eq.prim.multiple_results


def _work(kernel) -> int:
    space = kernel.shape if isinstance(kernel, MapKernel) else kernel.space
    return int(np.prod(space, dtype=np.int64))


def _host(c):
    v = getattr(c, "_value", None)
    return v if v is not None else np.asarray(c)


def compile_graph(closed) -> NativeExecutable:
    """Schedule, render and compile a closed graph for this CPU."""
    prog = schedule(closed, supports)
    # a fixed module name keeps the IR text, and so the disk-cache key, deterministic
    text, names = render_program(prog, "ember")
    if config.dump_kernels():
        print(f"[ember] program for {len(closed.equations)} equations:\n{format_program(prog)}",
              file=sys.stderr)
    addresses = {}
    if names:
        work = max(_work(s) for s in prog.steps if isinstance(s, (MapKernel, ReduceKernel)))
        cm = compile_ir(text, names, opt=3 if work >= SMALL_PROGRAM else 0)
        addresses = {n: cm[n] for n in names}
        exe = NativeExecutable(prog, addresses)
        exe._module = cm  # keep the engine (and so the code) alive
        return exe
    return NativeExecutable(prog, addresses)
