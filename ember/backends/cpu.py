"""The CPU backend: eager ops are the primitives' numpy impls (numpy is fast for
single ops); `compile` schedules the graph into fused kernels and generates
native code through LLVM (`backends/llvm`, imported at the first compile, so
eager-only programs never load llvmlite).

Example:
    >>> from ember.backends.base import get_backend
    >>> b = get_backend("cpu")
    >>> b.name, b.host_buffers
    ('cpu', True)
"""
from __future__ import annotations

from .reference.backend import ReferenceBackend


class CpuBackend(ReferenceBackend):
    """Eager ops on numpy (the reference impls); `compile` generates native code.

    Example:
        >>> CpuBackend().devices()
        [cpu:0]
    """
    name = "cpu"

    def compile(self, closed_graph, device):
        # imported here on purpose: llvmlite loads at the first compile, not at import
        from .llvm.executable import compile_graph
        return compile_graph(closed_graph)
