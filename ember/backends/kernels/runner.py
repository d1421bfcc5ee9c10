"""The backend-neutral half of running a scheduled `Program`: the arena plan
(buffer lifetimes -> byte offsets), reduction identities and the buffers they
pre-fill, the work estimates a backend's threading decisions read, and the
binding of library steps to the host (numpy) implementations.

A native backend's executable (backends/llvm/executable.py) adds only what is
its own: how kernels are launched and buffers bound.

Example:
    >>> import ember, numpy as np
    >>> from ember import lax
    >>> from ember.backends.kernels import schedule
    >>> from ember.backends.llvm.kernel_target import cpu_target
    >>> g = ember.make_graph(lambda x: lax.reduce_max(lax.exp(x), (0,)))(np.ones((8, 3), np.float32))
    >>> prog = schedule(g, cpu_target())
    >>> [reduction_inits(s, prog.buffers) for s in prog.steps]
    [[(1, -inf)]]
"""
from __future__ import annotations

import math

import numpy as np

from ...fx.core import PRIMITIVES
from ...fx.prims.reduce import reduction_identity
from ...fx.drivers import driver
from .kinds import is_expensive
from .loop_ir import (CollectiveProgress, CollectiveStart, CollectiveWait, ConvKernel, GemmKernel, LibraryStep,
                      MapKernel, ReduceKernel, RowKernel, ScatterKernel, loop_space)
from .walk import unique_nodes

KERNELS = (MapKernel, ReduceKernel, GemmKernel, RowKernel, ScatterKernel, ConvKernel)
# relative cost of one expensive operation (a transcendental, a division) in an
# expression, against 1 for the element's loads, stores and cheap operations
EXPENSIVE_COST = 8


def reduction_inits(step, buffers) -> list:
    """(buffer, identity) for the reductions of `step` that accumulate into a
    pre-filled output (those without a register accumulator).

    Example:
        >>> reduction_inits(MapKernel("k", 0, (1,), None, []), [])
        []
    """
    members = step.members if isinstance(step, RowKernel) else [step]
    return [(m.out, reduction_identity(m.op, buffers[m.out].dtype)) for m in members
            if isinstance(m, ReduceKernel) and not m.register_accumulator]


def work(kernel) -> int:
    """The number of loop iterations of a map/reduce/scatter kernel's space.

    Example:
        >>> work(MapKernel("k", 0, (4, 5), None, []))
        20
    """
    return int(math.prod(loop_space(kernel)))


def expression_cost(body) -> int:
    """Relative cost of evaluating an expression once (1, plus EXPENSIVE_COST per
    expensive operation; shared sub-expressions count once).

    Example:
        >>> from ember.backends.kernels.loop_ir import E
        >>> x = E("load", 0, E("v", 0), np.dtype(np.float32))
        >>> expression_cost(E("op", "exp", (), np.dtype(np.float32), x))
        9
    """
    cost = 1
    for e in unique_nodes(body):
        if e[0] == "op" and is_expensive(PRIMITIVES[e[1]]):
            cost += EXPENSIVE_COST
    return cost


def parallel_range(step) -> tuple[int, int]:
    """(extent of the kernel's parallel range, work per index of it): what a
    backend splits across threads, and how much each index is worth.

    Example:
        >>> from ember.backends.kernels.loop_ir import E
        >>> parallel_range(MapKernel("k", 1, (4, 5), E("load", 0, E("v", 0), np.dtype(np.float32)), [0]))
        (4, 5)
    """
    if isinstance(step, GemmKernel):
        blocks = step.tasks // step.batch
        per_task = 2 * step.m * step.n * step.k // blocks // 32
        per_task += sum(work(e) * expression_cost(e.body) for e in step.epilogue) // blocks
        return step.tasks, per_task
    if isinstance(step, RowKernel):
        total = sum(work(m) * expression_cost(m.body) for m in step.members)
        return step.outer[0], total // max(step.outer[0], 1)
    if isinstance(step, ScatterKernel):
        return 1, work(step)
    if isinstance(step, ConvKernel):
        per_image = 2 * step.groups * step.og * step.k * step.p // 32 + work(step.cols) // step.n
        return step.n, per_image
    total_work = work(step) * expression_cost(step.body)
    if isinstance(step, MapKernel):
        if not step.shape:
            return 1, total_work
    elif step.register_accumulator:
        if not step.kept:
            return 1, total_work
        total = step.space[step.kept[0]]
        return total, total_work // max(total, 1)
    elif 0 not in step.kept:
        return 1, total_work
    total = loop_space(step)[0]
    return total, total_work // max(total, 1)


def plan_arena(program, kernel_out: dict, out_ids, align: int = 64) -> tuple[dict, int]:
    """Byte offsets in one arena for the kernels' intermediate buffers, and the
    arena's size: a buffer's bytes are reused once its last reader has run.
    `kernel_out` maps each kernel-written buffer to the step that first writes
    it; program outputs (`out_ids`) get no arena space.

    Example:
        >>> import ember
        >>> from ember import lax
        >>> from ember.backends.kernels import schedule
        >>> from ember.backends.llvm.kernel_target import cpu_target
        >>> g = ember.make_graph(lambda x: lax.exp(lax.reduce_sum(x, (1,))))(np.ones((4, 16), np.float32))
        >>> prog = schedule(g, cpu_target(), fuse_rows=False)
        >>> [type(s).__name__ for s in prog.steps]
        ['ReduceKernel', 'MapKernel']
        >>> plan_arena(prog, {1: 0, 2: 1}, {2})
        ({1: 0}, 64)
    """
    bufs = program.buffers
    n_steps = len(program.steps)
    end = {}
    for i, step in enumerate(program.steps):
        for b in step.inputs:
            if type(b) is int:
                end[b] = i
    # a library result may be a view of its operands: they live as long as it does
    # (a collective start's token too: its operand is read until the wait)
    for i in range(n_steps - 1, -1, -1):
        step = program.steps[i]
        if isinstance(step, LibraryStep):
            last = max((n_steps if o in out_ids else end.get(o, i)) for o in step.outputs) if step.outputs else i
            for b in step.inputs:
                if type(b) is int:
                    end[b] = max(end.get(b, i), last)
    by_step: dict[int, list] = {}
    for b, i in kernel_out.items():
        if b not in out_ids:
            by_step.setdefault(i, []).append(b)
    free: list[tuple[int, int]] = []   # (offset, size)
    top = 0
    offsets = {}
    releases: dict[int, list] = {}
    for i in range(n_steps):
        for b in sorted(by_step.get(i, [])):
            size = -(-bufs[b].size * bufs[b].dtype.itemsize // align) * align
            best = None
            for j, (o, s) in enumerate(free):
                if s >= size and (best is None or s < free[best][1]):
                    best = j
            if best is None:
                offsets[b] = top
                top += size
            else:
                o, s = free.pop(best)
                offsets[b] = o
                if s > size:
                    free.append((o + size, s - size))
            releases.setdefault(max(end.get(b, i), i), []).append((offsets[b], size))
        for o, s in releases.pop(i, []):
            free.append((o, s))
            free.sort()
            merged = []
            for fo, fs in free:
                if merged and merged[-1][0] + merged[-1][1] == fo:
                    merged[-1] = (merged[-1][0], merged[-1][1] + fs)
                else:
                    merged.append((fo, fs))
            free = merged
    return offsets, top


def host_library_step(step, compile):
    """The host callable(*values) -> result(s) a `LibraryStep` runs: for a
    primitive with sub-graphs (cond, while_loop, scan, jit_call, ...) its driver
    (fx/drivers.py) over bodies compiled by `compile(closed_graph)`; otherwise
    the primitive's numpy impl.  A backend whose library steps run elsewhere
    (a device library) supplies its own binding instead.

    Example:
        >>> import ember
        >>> from ember import lax
        >>> from ember.backends.kernels import schedule
        >>> from ember.backends.llvm.kernel_target import cpu_target
        >>> g = ember.make_graph(lambda x: lax.sort(x))(np.ones(3, np.float32))
        >>> step = schedule(g, cpu_target()).steps[0]
        >>> [v.tolist() for v in host_library_step(step, compile=None)(np.array([2.0, 1.0], np.float32))]
        [[1.0, 2.0]]
    """
    eq = step.eq
    if isinstance(step, CollectiveStart):
        return _starter(eq)
    if isinstance(step, CollectiveWait):
        return _wait_token
    if isinstance(step, CollectiveProgress):
        return _progress_tokens
    run = driver(eq.prim, eq.params, compile)
    if run is None:
        impl, params = eq.prim.impl, eq.params
        run = lambda *vals: impl(*vals, **params)  # noqa: E731
    return run


def _starter(eq):
    """A collective's start: post it, and hand its `Pending` on in a token (a 0-d
    object array, so it travels through the program's buffers like any value)."""
    start, params = eq.prim.start_impl, eq.params

    def run(*vals):
        token = np.empty((), dtype=object)
        token[()] = start(*vals, **params)
        return token
    return run


def _wait_token(token):
    return token[()].wait()


def _progress_tokens(*tokens):
    for token in tokens:
        token[()].progress()
