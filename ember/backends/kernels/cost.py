"""Estimated work of a scheduled program's steps: flops and bytes moved per step
(what `Lowered.cost_analysis()` reports and the profiler attaches to each step).

Flops count one per arithmetic node of a kernel's value expression (hash-consed,
so a shared sub-expression counts once) per element of its iteration space, plus
one per element folded by a reduction; a product counts 2 m n k per matrix.
Bytes are the sizes of the buffers a step reads and writes (each once: a fused
kernel may read an input element more than once, from cache).

Example:
    >>> import ember, ember.numpy as enp
    >>> from ember.backends.kernels import schedule
    >>> from ember.backends.llvm.kernel_target import cpu_target
    >>> g = ember.make_graph(lambda x: enp.sin(x) * 2.0)(enp.ones(8))
    >>> [(c["kind"], c["flops"], c["bytes"]) for c in program_costs(schedule(g, cpu_target()))]
    [('map', 16, 64)]
"""
from __future__ import annotations

from .loop_ir import (CollectiveProgress, CollectiveStart, CollectiveWait, ConvKernel, GemmKernel, LibraryStep,
                      MapKernel, ReduceKernel, RowKernel, ScatterKernel, operands)


def _ops(body) -> int:
    """Arithmetic nodes ("op") of a value expression, each distinct node once."""
    seen, stack, n = set(), [body], 0
    while stack:
        e = stack.pop()
        if not isinstance(e, tuple) or id(e) in seen or not e:
            continue
        seen.add(id(e))
        if e[0] == "op":
            n += 1
        stack.extend(operands(e))
    return n


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _flops(step) -> int | None:
    # an explicit worklist: row kernels and gemms hold member kernels
    total, todo = 0, [step]
    while todo:
        s = todo.pop()
        if isinstance(s, MapKernel):
            total += _size(s.shape) * _ops(s.body)
        elif isinstance(s, ReduceKernel):
            total += _size(s.space) * (_ops(s.body) + 1)
        elif isinstance(s, ScatterKernel):
            total += _size(s.space) * (_ops(s.body) + 1)
        elif isinstance(s, RowKernel):
            todo.extend(s.members)
        elif isinstance(s, GemmKernel):
            total += 2 * s.batch * s.m * s.n * s.k
            todo.extend(s.epilogue)
        elif isinstance(s, ConvKernel):
            total += 2 * s.n * s.groups * s.og * s.k * s.p
            todo.append(s.cols)
        else:
            return None   # a library step: numpy's work is not modelled
    return total


_KIND = {MapKernel: "map", ReduceKernel: "reduce", ScatterKernel: "scatter", RowKernel: "rows",
         GemmKernel: "gemm", ConvKernel: "conv", LibraryStep: "library",
         CollectiveStart: "collective start", CollectiveWait: "collective wait",
         CollectiveProgress: "collective progress"}


def step_name(step) -> str:
    """A step's name: the kernel's function name, or `library <primitive>`.

    Example:
        >>> from ember.backends.kernels.loop_ir import MapKernel
        >>> step_name(MapKernel("k3_sin", 0, (2,), ("const", 0.0, "float32")))
        'k3_sin'
    """
    if isinstance(step, (CollectiveStart, CollectiveWait, CollectiveProgress)):
        half = {CollectiveStart: "start", CollectiveWait: "wait", CollectiveProgress: "progress"}[type(step)]
        return f"library {step.eq.prim.name} ({half})"
    if isinstance(step, LibraryStep):
        return f"library {step.eq.prim.name}"
    return step.name


def step_cost(step, buffers) -> dict:
    """`{"name", "kind", "flops", "bytes"}` of one step (`flops` is None for library
    steps, whose host work is not modelled).

    Example:
        >>> from ember.backends.kernels.loop_ir import Buffer, MapKernel
        >>> import numpy as np
        >>> bufs = [Buffer((4,), np.dtype("float32"), "input"), Buffer((4,), np.dtype("float32"), "temp")]
        >>> body = ("op", "exp", (), "float32", ("load", 0, ("v", 0), "float32"))
        >>> step_cost(MapKernel("k", 1, (4,), body, [0]), bufs)["bytes"]
        32
    """
    touched = set(step.inputs) | set(step.outputs)
    nbytes = sum(buffers[b].size * buffers[b].dtype.itemsize for b in touched)
    return {"name": step_name(step), "kind": _KIND.get(type(step), type(step).__name__),
            "flops": _flops(step), "bytes": int(nbytes)}


def program_costs(prog) -> list:
    """`step_cost` of every step of a scheduled program, in order.

    Example:
        >>> program_costs.__name__
        'program_costs'
    """
    return [step_cost(s, prog.buffers) for s in prog.steps]
