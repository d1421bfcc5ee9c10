"""The profiler's executable wrapper: times each call and, for the LLVM backend's
executables, each program step (a private state whose step calls are wrapped in
timers, run by the executable's own generated runner).

Example:
    >>> import ember, numpy as np
    >>> from ember.transforms.jit import executable_for
    >>> g = ember.jit(lambda x: x * 2.0).lower(np.ones(3, np.float32)).closed
    >>> p = Profiled(executable_for(g, "cpu"), g, "double", "cpu")
    >>> [float(v) for v in p(np.ones(3, np.float32))[0]]
    [2.0, 2.0, 2.0]
"""
from __future__ import annotations

import functools
import threading
import time

from . import _now_us, _record


def _timed(call, cost, program):
    name = cost["name"]
    args = {"kind": cost["kind"], "flops": cost["flops"], "bytes": cost["bytes"], "program": program}
    clock = time.perf_counter_ns

    def run():
        t0 = clock()
        call()
        t1 = clock()
        _record(name, "step", t0 / 1000.0, (t1 - t0) / 1000.0, args)
    return run


def _step_runner(exe, program):
    """A `run(args)` of the native executable `exe` whose steps record themselves, or
    None when `exe` is not one (reference interpreter, another backend)."""
    steps = getattr(exe, "_steps", None)
    if steps is None or not hasattr(exe, "_new_state") or not all(hasattr(d, "step") for d in steps):
        return None
    from ..backends.kernels.cost import step_cost
    st = exe._new_state()
    bufs = exe.program.buffers
    st.calls = [_timed(c, step_cost(d.step, bufs), program) for c, d in zip(st.calls, steps)]
    st.run = exe._make_runner(st) if st.holders is None else functools.partial(exe._run, st)
    return st.run


class Profiled:
    """An executable that records its calls (`jit <name>` events) and steps.

    Example:
        >>> Profiled.__name__
        'Profiled'
    """

    def __init__(self, exe, graph, name: str, backend: str):
        self.exe, self.graph, self.name, self.backend = exe, graph, name, backend
        inner = getattr(exe, "exe", exe)   # a debug_nans wrapper: time the executable inside
        self._run = _step_runner(inner, name)
        self._checked = inner is not exe
        self._lock = threading.Lock()

    def __call__(self, *args):
        t0 = _now_us()
        if self._run is not None and not self._checked and self._lock.acquire(False):
            try:
                outs = self._run(args)
            finally:
                self._lock.release()
        else:
            outs = self.exe(*args)
        _record(f"jit {self.name}", "call", t0, _now_us() - t0, {"backend": self.backend})
        return outs
