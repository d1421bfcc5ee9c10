"""A jitted program on an NVIDIA GPU: `compile_graph(closed) -> CudaExecutable`.

`compile_graph` schedules the graph with `cuda_target()`, renders all its
kernels into one CUDA module (render.py), has the runtime compile it once
(CuPy's `RawModule`: NVRTC, cached on disk by CuPy keyed by source, options,
arch and versions; an identical module loads once per process), plans one
device arena for the intermediates (the neutral `kernels.runner.plan_arena`)
and prepares the launch list (launch.py) as bound calls.  A call binds the
argument buffers and fresh output buffers into the buffer table and walks the
list: per kernel one call with its grid, block and argument tuple (spelled
out in one generated function per executable); products through
the runtime's gemm (cuBLAS) on views of the buffers; library steps as
library.py binds them (control flow: the shared drivers with bodies compiled
by this same `compile_graph`; CuPy functions; or a host round trip).

Reductions need no pre-filled output here: the renderer folds every reduction
from its identity in registers (`render._fold_elements`), so the neutral
`reduction_inits` are not launched.

*CUDA graphs are not captured:* a call's inputs and outputs are new device
pointers each time, so a captured graph would need its inputs copied into
fixed buffers and outputs copied out (two extra passes over the data), and
host-side steps (drivers, round trips) break a capture; the launch list
already costs one Python call per kernel.  Capture pays off for programs of
many tiny kernels called with the same buffers, which this executable does not
see yet.

Everything device-specific is a `runtime.DeviceRuntime` (CuPy on a GPU; the
test suite's host emulation elsewhere).

Example::

    exe = compile_graph(ember.make_graph(lambda x: lax.exp(x))(np.zeros(3, np.float32)))
    exe(cupy.zeros(3, cupy.float32))      # [cupy array of ones]
"""
from __future__ import annotations

import sys
import threading

import numpy as np

from ... import config
from ..base import Executable
from ..kernels import format_program, schedule
from ..kernels.runner import KERNELS, plan_arena
from .launch import GemmLaunch, KernelLaunch, LibraryLaunch, describe, launch_list
from .library import bind_library_step, check_round_trips
from .render import render_program
from .target import cuda_target

_ALIGN = 256   # cuBLAS and vector loads like 256-byte aligned buffers


class _State:
    """The per-call machinery: the arena, the buffer table template, the bound
    launch list and `run`, the call as straight-line code over it.  One is kept
    per executable; a concurrent call builds its own."""
    __slots__ = ("arena", "table", "calls", "run")


class CudaExecutable(Executable):
    """Runs a scheduled program on a `DeviceRuntime`: `exe(*buffers)` -> list of
    device buffers (see the module docstring).

    Example::

        exe = compile_graph(closed, runtime=rt)
        outs = exe(*[rt.to_device(a) for a in args])
    """

    def __init__(self, program, module, runtime, compile):
        self.program = program
        self.module = module
        self.runtime = runtime
        self.launches = launch_list(program, module, runtime)
        self._compile = compile
        bufs = program.buffers
        self._handles = runtime.load_module(module) if module.kernels else {}
        self._consts = [(b, runtime.to_device(np.ascontiguousarray(_host(c)).astype(bufs[b].dtype, copy=False)))
                        for b, c in program.consts]
        self._inputs = list(program.inputs)
        self._outputs = list(program.outputs)
        out_ids = {o for o in self._outputs if type(o) is int}
        kernel_out, lib_out = {}, set()
        for i, step in enumerate(program.steps):
            for o in step.outputs:
                if isinstance(step, KERNELS):
                    kernel_out.setdefault(o, i)   # the first writer allocates it
                else:
                    lib_out.add(o)
        self._fresh = [(b, bufs[b].shape, bufs[b].dtype) for b in sorted(kernel_out) if b in out_ids]
        self._lib_outputs = sorted(lib_out & out_ids)
        self._offsets, self._arena_bytes = plan_arena(program, kernel_out, out_ids, _ALIGN)
        self._lits = {j: runtime.to_device(np.asarray(o[1])) for j, o in enumerate(self._outputs) if type(o) is not int}
        self._lib = {r.step: bind_library_step(program.steps[r.step], runtime, compile, bufs)
                     for r in self.launches if isinstance(r, LibraryLaunch)}
        self._fixed = set(self._offsets) | {b for b, _ in self._consts}
        self._lock = threading.Lock()
        self._state = None

    # --- preparation -----------------------------------------------------------------------
    def _new_state(self) -> _State:
        rt, bufs = self.runtime, self.program.buffers
        st = _State()
        st.arena = rt.arena(self._arena_bytes)
        st.table = [None] * len(bufs)
        for b, off in self._offsets.items():
            st.table[b] = rt.view(st.arena, off, bufs[b].shape, bufs[b].dtype)
        for b, c in self._consts:
            st.table[b] = c
        # kernels are launched by the generated runner itself
        st.calls = [None if isinstance(r, KernelLaunch) else self._bind(st, r) for r in self.launches]
        st.run = self._make_runner(st)
        return st

    def _make_runner(self, st):
        """`run(buffers)`: `_run` written out for this program, so a kernel launch
        is one call with its argument tuple spelled out (arena buffers and
        constants are names bound once; inputs and fresh outputs locals)."""
        env = {"asarray": self.runtime.asarray, "empty": self.runtime.empty, "launch": self.runtime.launch,
               "T": st.table, "lits": self._lits, "detach": self._detach, "st": st}
        local = {}
        lines = ["def run(args):", "    table = list(T)"]
        for j, b in enumerate(self._inputs):
            lines += [f"    x{j} = table[{b}] = asarray(args[{j}])"]
            local.setdefault(b, f"x{j}")
        for b, shape, dtype in self._fresh:
            env[f"S{b}"], env[f"D{b}"] = shape, dtype
            lines.append(f"    o{b} = table[{b}] = empty(S{b}, D{b})")
            local[b] = f"o{b}"
        for b in self._fixed:
            env[f"V{b}"] = st.table[b]
            local[b] = f"V{b}"
        for i, (rec, call) in enumerate(zip(self.launches, st.calls)):
            if isinstance(rec, KernelLaunch):
                env[f"h{i}"] = self._handles[rec.kernel]
                # a library result is a new buffer each call: read it from the table
                args = [local.get(p, f"table[{p}]") for p in rec.params]
                tup = ", ".join(args) + ("," if len(args) == 1 else "")
                lines.append(f"    launch(h{i}, {rec.grid}, {rec.block}, ({tup}))")
            else:
                env[f"c{i}"] = call
                lines.append(f"    c{i}(table)")
        outs = [f"lits[{j}]" if type(o) is not int else local.get(o, f"table[{o}]")
                for j, o in enumerate(self._outputs)]
        lines.append(f"    outs = [{', '.join(outs)}]")
        if self._lib_outputs:
            lines.append("    outs = detach(st, outs)")
        lines.append("    return outs")
        exec("\n".join(lines), env)  # noqa: S102 - our own text, built from the program
        return env["run"]

    def _bind(self, st, rec):
        """A gemm or library launch record as a callable(table)."""
        rt = self.runtime
        if isinstance(rec, GemmLaunch):
            return _gemm_call(rt, rec, st.table, self._fixed)
        step = self.program.steps[rec.step]
        run = self._lib[rec.step]
        args, outputs = step.args, step.outputs
        multiple = step.eq.prim.multiple_results
        # (None: a collective's token, a host object that stays as it is)
        needs = [None if self.program.buffers[o].kind == "token" else self.program.buffers[o].dtype
                 for o in outputs]
        asarray = rt.asarray

        def library(table):
            vals = [table[a] if type(a) is int else a[1] for a in args]
            res = run(*vals)
            if not multiple and not isinstance(res, (list, tuple)):
                res = [res]
            for o, r, d in zip(outputs, res, needs):
                if d is None:
                    table[o] = r
                    continue
                r = asarray(r)
                if np.dtype(r.dtype) != d and not _same_storage(rt, r, d):
                    r = r.astype(d)
                table[o] = r
        return library

    # --- calls -----------------------------------------------------------------------------
    def __call__(self, *buffers):
        if len(buffers) != len(self._inputs):
            bufs = self.program.buffers
            want = ", ".join(f"{bufs[b].dtype.name}[{', '.join(map(str, bufs[b].shape))}]" for b in self._inputs)
            raise TypeError(f"CUDA executable: expected {len(self._inputs)} buffers ({want}), got "
                            f"{len(buffers)}; hint: pass one device buffer per input of the compiled graph, "
                            "in order")
        if self._lock.acquire(False):
            try:
                st = self._state
                if st is None:
                    st = self._state = self._new_state()
                return st.run(buffers)
            finally:
                self._lock.release()
        return self._new_state().run(buffers)

    def _detach(self, st, outs):
        """Copy library results that are views of the arena (the next call
        reuses it): a control-flow body may return the buffer it was given."""
        in_arena = self.runtime.in_arena
        for j, o in enumerate(self._outputs):
            if type(o) is int and o in self._lib_outputs and in_arena(outs[j], st.arena):
                outs[j] = outs[j].copy()
        return outs

    def close(self):
        """Drop the arena kept between calls (rebuilt on the next call)."""
        with self._lock:
            self._state = None


def _same_storage(rt, r, d):
    """bfloat16 kept as its bits (a CuPy without bfloat16 arrays)."""
    return np.dtype(r.dtype) == np.uint16 and getattr(rt, "_bf16", None) == np.dtype(np.uint16) and \
        d.name == "bfloat16"


def _gemm_call(rt, rec: GemmLaunch, fixed_table, fixed):
    """The call of one product: each operand's view built once when its buffer
    is in the arena (or a constant), else per call from the table."""
    gemm = rt.gemm

    def view_of(spec):
        b, shape, t, off = spec
        n = int(np.prod(shape))

        def make(x):
            # an operand may be a contiguous slice of a larger buffer (GemmKernel.a_offset)
            v = x.reshape(shape) if off == 0 and x.size == n else x.reshape(-1)[off:off + n].reshape(shape)
            if t == "channels_last":   # the (N, P, G, Og) image as the product's (N, G, Og, P)
                return v.transpose(0, 2, 3, 1)
            return v.swapaxes(-1, -2) if t else v
        if b in fixed:
            v = make(fixed_table[b])
            return lambda table: v
        return lambda table: make(table[b])
    a, b, o = view_of(rec.a), view_of(rec.b), view_of(rec.out)
    return lambda table: gemm(a(table), b(table), o(table))


def _host(c):
    v = getattr(c, "_value", None)
    return v if v is not None else np.asarray(c)


def describe_launches(closed, target=None) -> list:
    """The launch list `compile_graph` would prepare for `closed`, one line per
    launch (kernels with grid and block, gemms with their views, library
    steps with their binding); needs no device.

    Example:
        >>> import ember, numpy as np
        >>> f = lambda x, w: ember.numpy.sum(ember.numpy.exp(x @ w), axis=1)
        >>> for line in describe_launches(ember.make_graph(f)(np.ones((64, 8), np.float32),
        ...                                                   np.ones((8, 300), np.float32))):
        ...     print(line)
        gemm b2[64, 300] = b0[64, 8] @ b1[8, 300] (float32)
        kernel ember_k2_reduce_sum<<<64, 256>>>(b2, b3)
    """
    prog = schedule(closed, cuda_target() if target is None else target)
    return [describe(r) for r in launch_list(prog, render_program(prog, prefix="ember_"))]


def compile_graph(closed, target=None, runtime=None) -> CudaExecutable:
    """Schedule, render and compile a closed graph for a CUDA device (`target`:
    by default `cuda_target()`; `runtime`: by default the CuPy runtime of the
    current device).  Control-flow bodies compile through this same function
    on the same runtime.

    Example::

        exe = compile_graph(ember.make_graph(f)(*args))
        outs = exe(*device_buffers)          # a list of device buffers
    """
    if runtime is None:
        from .runtime import default_runtime  # noqa: PLC0415
        runtime = default_runtime()
    target = cuda_target() if target is None else target
    prog = schedule(closed, target)
    if config.dump_kernels():
        print(f"[ember] CUDA program for {len(closed.equations)} equations:\n{format_program(prog)}",
              file=sys.stderr)
    check_round_trips(prog, runtime)
    module = render_program(prog, prefix="ember_")

    def compile_body(body):
        return compile_graph(body, target, runtime)
    return CudaExecutable(prog, module, runtime, compile_body)
