"""A `DeviceRuntime` for tests without a GPU: numpy arrays are the device
memory, a module's kernels are compiled by g++ through host_emulation.py (one
emulated thread per launch, or blocks of real threads with `threads=True`),
gemm is numpy's matmul (half precision widened to float32 and rounded once, as
the reference), and library steps get numpy as their namespace.  It runs
ember.backends.cuda.executable unchanged, so the launch list, arena, views,
library bindings and control-flow drivers are tested as the GPU runs them.

Example::

    rt = EmulatedRuntime()
    exe = compile_graph(closed, runtime=rt)
    outs = exe(*args)            # numpy arrays
    with rt.batch():             # many programs' modules compiled by one g++ run
        exes = [compile_graph(g, runtime=rt) for g in graphs]
"""
from __future__ import annotations

import ctypes

import numpy as np

import host_emulation as he
from ember.backends.cuda.runtime import DeviceRuntime, round_trip_gemm


class EmulatedRuntime(DeviceRuntime):
    name = "host emulation"
    library_namespace = np

    def __init__(self, threads=False, max_launch=(3, 64)):
        self.threads = threads
        self.max_launch = max_launch
        self.launches = 0      # kernels launched (tests count them)
        self.transfers = 0     # host <-> device copies
        self._pending = None   # modules waiting for one g++ run (DeviceRuntime.batch)

    def _load_functions(self, functions, kernels):
        lib = he.build(functions, kernels if self.threads else None)
        out = {"__module__": lib}   # keeps the library loaded
        for k in kernels:
            if self.threads:
                out[k.name] = getattr(lib, f"launch_{k.name}")
            else:
                fn = getattr(lib, k.name)
                fn.restype = None
                out[k.name] = fn
        return out

    def empty(self, shape, dtype):
        return np.empty(tuple(shape), dtype)

    def asarray(self, x):
        x = np.asarray(x)   # (np.ascontiguousarray would make a 0-d array 1-d)
        return x if x.flags.c_contiguous else np.ascontiguousarray(x)

    def view(self, arena, offset, shape, dtype):
        return np.ndarray(tuple(shape), dtype, buffer=arena, offset=int(offset))

    def to_device(self, host):
        self.transfers += 1
        return np.array(host, copy=True, order="C")

    def to_host(self, buf, dtype=None):
        self.transfers += 1
        return np.array(buf, copy=True)

    def launch(self, handle, grid, block, args):
        self.launches += 1
        ptrs = [ctypes.c_void_p(a.ctypes.data) for a in args]
        if not self.threads:
            handle(*ptrs)
            return
        table = (ctypes.c_void_p * max(len(ptrs), 1))(*ptrs)
        handle(table, ctypes.c_uint(min(grid, self.max_launch[0])), ctypes.c_uint(min(block, self.max_launch[1])))

    def gemm(self, a, b, out):
        with np.errstate(all="ignore"):
            return round_trip_gemm(np, a, b, out)
