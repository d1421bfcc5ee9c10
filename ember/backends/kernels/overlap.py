"""Overlap reductions across processes with the rest of a program (PyTorch DDP's
bucketed all-reduce, in the scheduler).

On a target with `async_collectives`, a collective that has a `start_impl`
(psum, pmax, pmin) is scheduled as two host steps: a `CollectiveStart` that
posts the reduction and returns, and a `CollectiveWait` that blocks for its
result (`split_collective`).  `overlap_collectives` then reorders the steps:

- each start runs as soon as what it depends on has run: it and its ancestors
  (for a gradient bucket, the kernels that compute and pack the bucket's
  gradients) are pulled ahead of the steps that do not feed it (the backward
  pass of earlier layers), starts taken in program order;
- each wait runs just before the first step that depends on it (the
  optimiser's update), or at the end;
- every other step keeps its relative order;
- after each long step (a product, a convolution, a host library step) that
  runs while reductions are in flight, a `CollectiveProgress` step lets the
  communicator move them on: MPI without a progress thread advances a large
  message only inside MPI calls, so without these the transfer would wait for
  the wait.

Dependencies are those of the buffers each step reads and writes (read after
write, write after read, write after write), so the new order computes the same
values: the kernels are the same kernels, only when they run changes.  Steps
with an effect (a host callback, a collective, a loop whose body holds either)
also keep their order among themselves, so every rank still posts its
collectives in one order and callbacks run in program order.

Example:
    >>> import ember, ember.numpy as enp
    >>> from ember import distributed as dist, lax
    >>> f = ember.jit(lambda x: lax.psum(enp.sin(x), "batch") * enp.sum(enp.cos(x)))
    >>> with dist.process_axis("batch"):
    ...     text = f.lower(enp.ones(3)).as_text("kernels")
    >>> [l.split(":")[0] for l in text.splitlines() if l.startswith(("kernel", "library"))]
    ['kernel k1_sin', 'library psum (start)', 'kernel k2_reduce_sum', 'library psum (wait)', 'kernel k3_mul']
"""
from __future__ import annotations

import numpy as np

from ...fx.ir import ClosedGraph
from .loop_ir import CollectiveProgress, CollectiveStart, CollectiveWait, ConvKernel, GemmKernel, LibraryStep


def splits(eq, target) -> bool:
    """Whether `schedule` emits `eq` as a start and a wait on `target`.

    Example:
        >>> import dataclasses
        >>> from ember.backends.llvm.kernel_target import cpu_target
        >>> from ember.fx.ir import Equation
        >>> from ember.fx.prims.collective import psum_p
        >>> splits(Equation(psum_p, [], [], {}), dataclasses.replace(cpu_target(), async_collectives=False))
        False
    """
    return target.async_collectives and getattr(eq.prim, "start_impl", None) is not None


def split_collective(eq, args, outputs, add_buf) -> list:
    """[start, wait] for the collective `eq` whose operands are `args` (buffer ids
    or ("lit", value)) and results the buffers `outputs`; `add_buf(shape, dtype,
    kind)` makes the token buffer that joins the two.

    Example:
        >>> from ember.fx.ir import Equation
        >>> from ember.fx.prims.collective import psum_p
        >>> bufs = []
        >>> start, wait = split_collective(Equation(psum_p, [], [], {}), [0], [1],
        ...                                lambda *b: bufs.append(b) or 2)
        >>> start.outputs, wait.args, wait.outputs, bufs[0][2]
        ([2], [2], [1], 'token')
    """
    token = add_buf((), np.dtype(object), "token")
    return [CollectiveStart(eq, list(args), [token]), CollectiveWait(eq, [token], list(outputs))]


def _has_effect(eq) -> bool:
    """Whether running `eq` has an effect beyond its results: an effectful or
    collective primitive, or a sub-graph (at any depth) holding one."""
    stack, seen = [eq], set()
    while stack:
        e = stack.pop()
        if e.prim.effectful or e.prim.kind == "collective":
            return True
        for v in e.params.values():
            for g in (v if isinstance(v, (tuple, list)) else (v,)):
                if isinstance(g, ClosedGraph) and id(g) not in seen:
                    seen.add(id(g))
                    stack.extend(g.graph.equations)
    return False


def _ordered(step) -> bool:
    # a wait is free to move: MPI and NCCL complete requests in any order
    return isinstance(step, LibraryStep) and not isinstance(step, CollectiveWait) and _has_effect(step.eq)


def _predecessors(steps) -> list:
    """For each step, the earlier steps it must follow (buffer hazards and the
    chain of ordered steps)."""
    preds = []
    last_writer: dict = {}
    readers: dict = {}
    prev_ordered = None
    in_flight: dict = {}   # token -> the operands its start posted
    for i, s in enumerate(steps):
        p = set()
        reads = list(s.inputs)
        if isinstance(s, CollectiveStart):
            in_flight[s.outputs[0]] = reads
        elif isinstance(s, CollectiveWait):
            # the communicator reads the operands until the wait: a step that
            # overwrites one must follow the wait, not just the start
            reads += in_flight.get(s.args[0], [])
        for b in reads:
            if b in last_writer:
                p.add(last_writer[b])
        for b in s.outputs:
            if b in last_writer:
                p.add(last_writer[b])
            p.update(readers.get(b, ()))
        if _ordered(s):
            if prev_ordered is not None:
                p.add(prev_ordered)
            prev_ordered = i
        p.discard(i)
        preds.append(sorted(p))
        for b in reads:
            readers.setdefault(b, []).append(i)
        for b in s.outputs:
            last_writer[b] = i
            readers[b] = []
    return preds


def overlap_collectives(steps: list) -> list:
    """`steps` reordered so that each `CollectiveStart` runs as early and each
    `CollectiveWait` as late as the dependencies allow (see the module docstring);
    a program without split collectives comes back as it is.

    Example:
        >>> overlap_collectives([])
        []
    """
    n = len(steps)
    starts = [i for i, s in enumerate(steps) if isinstance(s, CollectiveStart)]
    if not starts:
        return steps
    preds = _predecessors(steps)
    # 1. each start with its not yet placed ancestors, in program order
    placed = [False] * n
    order = []
    for t in starts:
        if placed[t]:
            continue
        group, stack = [], [t]
        placed[t] = True
        while stack:
            i = stack.pop()
            group.append(i)
            for p in preds[i]:
                if not placed[p]:
                    placed[p] = True
                    stack.append(p)
        order.extend(sorted(group))
    order.extend(i for i in range(n) if not placed[i])
    # 2. each wait just before its first dependent in that order
    waits = {i for i in range(n) if isinstance(steps[i], CollectiveWait)}
    rest = [i for i in order if i not in waits]
    position = {i: k for k, i in enumerate(rest)}
    due: dict = {}
    first = {w: len(rest) for w in waits}
    for j in rest:
        for p in preds[j]:
            if p in waits:
                first[p] = min(first[p], position[j])
    for w in sorted(waits):
        due.setdefault(first[w], []).append(w)
    ordered = []
    for k, i in enumerate(rest):
        ordered.extend(steps[w] for w in due.get(k, ()))
        ordered.append(steps[i])
    ordered.extend(steps[w] for w in due.get(len(rest), ()))
    return _with_progress(ordered)


def _long(step) -> bool:
    return isinstance(step, (GemmKernel, ConvKernel)) or (
        isinstance(step, LibraryStep) and not isinstance(step, (CollectiveStart, CollectiveWait)))


def _with_progress(steps) -> list:
    """A `CollectiveProgress` over the tokens in flight after each long step."""
    out, flying = [], {}   # token -> its start
    for s in steps:
        out.append(s)
        if isinstance(s, CollectiveStart):
            flying[s.outputs[0]] = s
        elif isinstance(s, CollectiveWait):
            flying.pop(s.args[0], None)
        elif flying and _long(s):
            first = next(iter(flying.values()))
            out.append(CollectiveProgress(first.eq, list(flying), []))
    return out
