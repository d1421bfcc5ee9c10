"""The numpy reference backend: numpy buffers, eager numpy impls, and a graph
interpreter.

It runs each primitive's numpy `impl` and interprets graphs equation by
equation: it is the oracle native backends are tested against.  Its device,
`reference:cpu:0`, is a device of its own: arrays placed on it run eagerly here,
and `jit` of a function of them interprets rather than compiles.

Example:
    >>> import ember, ember.numpy as enp
    >>> x = ember.device_put(enp.arange(3.0), "reference:cpu:0")
    >>> (x * 2).device, ember.jit(lambda v: v + 1)(x).tolist()
    (reference:cpu:0, [1.0, 2.0, 3.0])
"""
from __future__ import annotations

import numpy as np

from ...fx.interpreter import run_graph_numpy
from ..base import Backend, Device, Executable, execute_impl


class InterpretedExecutable(Executable):
    """Runs a closed graph with the numpy impls, without any tracing machinery."""

    def __init__(self, closed_graph):
        self.closed = closed_graph

    def __call__(self, *buffers):
        return run_graph_numpy(self.closed.graph, self.closed.consts_as_buffers(), buffers)


class ReferenceBackend(Backend):
    """Eager ops and compiled graphs both run the primitives' numpy impls.

    Example:
        >>> ReferenceBackend().devices()
        [reference:cpu:0]
    """
    name = "reference"
    platform = "cpu"
    host_buffers = True

    def __init__(self):
        self._devices = [Device(self.platform, 0, self)]

    def devices(self):
        return self._devices

    def put(self, value, device):
        v = np.array(value, copy=True)
        v.flags.writeable = False
        return v

    def get(self, buffer):
        return buffer

    # the numpy impl, which the eager trace recognises and calls itself
    execute = execute_impl

    def compile(self, closed_graph, device):
        return InterpretedExecutable(closed_graph)
