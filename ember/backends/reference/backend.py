"""The numpy reference backend and the eager CPU backend built on it.

`reference` runs each primitive's numpy `impl` and interprets graphs equation
by equation: it is the oracle native backends are tested against.  `cpu` is
the default device: its eager ops are the same numpy impls (numpy is fast for
single ops); its `compile` goes to the native LLVM backend when that is
available and to the interpreter otherwise.
"""
from __future__ import annotations

import numpy as np

from ..base import Backend, Device, Executable


class InterpretedExecutable(Executable):
    """Runs a closed graph with the numpy impls, without any tracing machinery."""

    def __init__(self, closed_graph):
        self.closed = closed_graph

    def __call__(self, *buffers):
        from ...fx.interpreter import run_graph_numpy
        return run_graph_numpy(self.closed.graph, self.closed.consts_as_buffers(), buffers)


class ReferenceBackend(Backend):
    name = "reference"
    platform = "cpu"

    def __init__(self):
        self._devices = [Device("cpu", 0, self)]

    def devices(self):
        return self._devices

    def put(self, value, device):
        v = np.array(value, copy=True)
        v.flags.writeable = False
        return v

    def get(self, buffer):
        return buffer

    def execute(self, prim, buffers, params, device):
        return prim.impl(*buffers, **params)

    def compile(self, closed_graph, device):
        return InterpretedExecutable(closed_graph)


class CpuBackend(ReferenceBackend):
    """Eager ops on numpy; `compile` generates native code through LLVM."""
    name = "cpu"

    def compile(self, closed_graph, device):
        from ..llvm.executable import compile_graph
        return compile_graph(closed_graph)
