"""Passes over a program's steps that merge kernels: elementwise epilogues into
the gemm they read, kernels over the same rows into one `RowKernel`, and a row
group's intermediates stored in the output that reads them last or kept one row
at a time in the loop's own memory.

Example:
    >>> _fuse_rows([])
    []
"""
from __future__ import annotations

import dataclasses
import math

from .loop_ir import E, GemmKernel, MapKernel, ReduceKernel, RowKernel, linearize, loop_space, split_row
from .policy import _gemm_blocks
from .runner import expression_cost, work


def _fuse_epilogues(steps, target=None):
    """Move map kernels that read a (non-batched) product elementwise into its
    GemmKernel, when everything else they read exists before the product.  With a
    `target`, a product that took epilogues is cut into blocks again counting their
    work (the epilogues run per block: a one-block product would run them on one
    thread where their own kernel would have used them all)."""
    produced_at = {}
    for i, s in enumerate(steps):
        for o in s.outputs:
            produced_at[o] = i
    taken = set()
    for i, g in enumerate(steps):
        if not isinstance(g, GemmKernel) or g.batch != 1:
            continue
        ready = {o for o, j in produced_at.items() if j < i} | set(g.outputs)
        elem = linearize((E("v", 0), E("v", 1)), (g.m, g.n))
        for j in range(i + 1, len(steps)):
            m = steps[j]
            if (j in taken or not isinstance(m, MapKernel) or m.store is not None
                    or tuple(m.shape) != (g.m, g.n)):
                continue
            loads = _loads(m.body)
            if not any(b == g.out for b, _ in loads):
                continue
            if any(b in g.outputs and idx is not elem for b, idx in loads):
                continue
            if not all(b in ready or b not in produced_at for b in m.inputs):
                continue
            g.epilogue.append(m)
            ready.add(m.out)
            taken.add(j)
        if target is not None and g.epilogue:
            # the runner's work units: a product's per-task work is 2 m n k / 32
            extra = 32 * sum(work(e) * expression_cost(e.body) for e in g.epilogue)
            g.mblock, g.nblock = _gemm_blocks(g.batch, g.m, g.n, g.k, target, extra)
    return [s for j, s in enumerate(steps) if j not in taken]


def _row_outer(step):
    """The leading dimensions a step can share with a row group, and whether it can
    start one: a reduction over trailing axes with a register accumulator, or a
    map kernel over rows (its first axis, when it has more than one row and more
    axes: a series of map kernels each reading the ones before at the same element,
    a Taylor recurrence's coefficients, is then one loop over rows, one compiled
    kernel instead of one per coefficient)."""
    if isinstance(step, ReduceKernel):
        kept = step.kept
        if kept and step.register_accumulator and kept == tuple(range(len(kept))):
            return step.space[:len(kept)]
        return None
    if (isinstance(step, MapKernel) and step.store is None and len(step.shape) >= 2
            and step.shape[0] > 1):
        return tuple(step.shape[:1])
    return None


def _loads(expr):
    """(buffer, index expression) of every load in a value expression."""
    out, seen, stack = [], set(), [expr]
    while stack:
        e = stack.pop()
        if type(e) is not E or id(e) in seen:
            continue
        seen.add(id(e))
        if e[0] == "load":
            out.append((e[1], e[2]))
        stack.extend(x for x in e if type(x) is E)
    return out


def _joins(step, outer, produced, buffers=None):
    """Can `step` run inside a row group over `outer` whose members wrote `produced`
    (buffer -> shape)?  A kernel writing a slab of a stored concatenate joins when
    its slab of each row lies in that row of the concatenate (`buffers`: the
    program's buffers, for the concatenate's shape): the slabs of one row are then
    written while the row's operands are in cache."""
    if isinstance(step, ReduceKernel):
        if _row_outer(step) != outer:
            return False
        space = step.space
    elif isinstance(step, MapKernel):
        space = step.shape
        if tuple(space[:len(outer)]) != tuple(outer) or (step.store is not None and buffers is None):
            return False
    else:
        return False
    r = len(outer)
    ranges = {i: n for i, n in enumerate(space)}
    row = linearize(tuple(E("v", i) for i in range(r)), outer)
    if isinstance(step, MapKernel) and step.store is not None:
        inner = math.prod(buffers[step.out].shape) // max(math.prod(outer), 1)
        split = split_row(step.store, inner, ranges) if inner else None
        if split is None or split[0] is not row:
            return False
    for buf, idx in _loads(step.body):
        if buf not in produced:
            continue
        inner = math.prod(produced[buf]) // max(math.prod(outer), 1)
        if inner == 0:
            return False
        split = split_row(idx, inner, ranges)
        if split is None or split[0] is not row:
            return False
    return True


def _row_groups_backwards(steps, outputs):
    """(row group, buffers read by a later step or returned) for each `RowKernel`,
    last first: what the row passes below may not take over."""
    read_later = set(outputs)
    for s in reversed(steps):
        if isinstance(s, RowKernel):
            yield s, read_later
        read_later.update(s.inputs)


def _alias_row_intermediates(steps, outputs, buffers):
    """Store a row group's intermediate in the output of the member that reads it
    last, when nothing else needs it, that member reads it only at the element it
    writes (so each element is read before it is overwritten) and no member in
    between writes there."""
    for s, read_later in _row_groups_backwards(steps, outputs):
        members, aliases = s.members, s.aliases
        for j in range(len(members) - 1, -1, -1):
            a = members[j]
            x = a.out
            if x in read_later or not isinstance(a, MapKernel) or a.store is not None:
                continue
            readers = [k for k in range(j + 1, len(members)) if any(b == x for b, _ in _loads(members[k].body))]
            if not readers:
                continue
            last = members[readers[-1]]
            target = aliases.get(last.out, last.out)
            if (not isinstance(last, MapKernel) or last.store is not None or tuple(last.shape) != tuple(a.shape)
                    or buffers[target].dtype != buffers[x].dtype
                    or any(aliases.get(members[k].out, members[k].out) == target for k in range(j + 1, readers[-1]))):
                continue
            here = linearize(tuple(E("v", i) for i in range(len(last.shape))), last.shape)
            if all(idx is here for b, idx in _loads(last.body) if b == x):
                aliases[x] = target


def _row_scratch(steps, outputs, buffers, limit):
    """Keep a row group's intermediate that nothing after the group reads (and that
    is not aliased) one row at a time in memory of the loop's own
    (`RowKernel.scratch`, at most `limit` bytes a group): its members address it
    within the row, so its writes never leave the cache and the arena does not
    hold it.  A forward Laplacian's tanh values and derivatives are such rows."""
    for s, read_later in _row_groups_backwards(steps, outputs):
        r = len(s.outer)
        row = linearize(tuple(E("v", i) for i in range(r)), s.outer)
        taken = set(s.aliases) | set(s.aliases.values())
        budget, chosen = limit, {}
        for m in s.members:
            x = m.out
            if not isinstance(m, MapKernel) or m.store is not None or x in read_later or x in taken:
                continue
            inner = math.prod(m.shape[r:])
            size = inner * buffers[x].dtype.itemsize
            if inner and size <= budget and _read_within_rows(s.members, x, inner, row):
                chosen[x] = inner
                budget -= size
        if chosen:
            s.members = [_within_rows(m, chosen, r) for m in s.members]
            s.scratch.update(chosen)


def _read_within_rows(members, x, inner, row):
    """Does every load of `x` by `members` read `row * inner + r`, 0 <= r < inner?"""
    for m in members:
        ranges = dict(enumerate(loop_space(m)))
        for b, idx in _loads(m.body):
            if b == x:
                split = split_row(idx, inner, ranges)
                if split is None or split[0] is not row:
                    return False
    return True


def _within_rows(m, chosen, r):
    """Member `m` with its loads of the `chosen` buffers (buffer -> elements per
    row), and its store if it writes one, addressed within the row."""
    ranges = dict(enumerate(loop_space(m)))
    memo: dict = {}
    stack = [m.body]
    while stack:   # post-order rebuild, iterative: bodies can be deep
        e = stack[-1]
        if e in memo:
            stack.pop()
        elif e[0] == "load" and e[1] in chosen:
            memo[stack.pop()] = E(e[0], e[1], split_row(e[2], chosen[e[1]], ranges)[1], *e[3:])
        else:
            todo = [c for c in e if type(c) is E and c not in memo]
            if todo:
                stack.extend(todo)
            else:
                memo[stack.pop()] = E(*[memo[c] if type(c) is E else c for c in e])
    changes = {"body": memo[m.body]}
    if m.out in chosen:
        changes["store"] = linearize(tuple(E("v", i) for i in range(r, len(m.shape))), m.shape[r:])
    return dataclasses.replace(m, **changes)


def _fuse_rows(steps, buffers=None):
    """`steps` with runs of kernels over the same rows as `RowKernel`s (`buffers`:
    the program's, so that kernels writing slabs of a concatenate can join)."""
    out, group, outer, produced = [], [], None, {}

    def flush():
        if len(group) > 1:
            names = "_".join(m.name.split("_", 1)[0] for m in group)
            out.append(RowKernel(f"r_{names}", tuple(outer), list(group)))
        else:
            out.extend(group)

    for s in steps:
        if group and _joins(s, outer, produced, buffers):
            group.append(s)
            produced[s.out] = s.shape if getattr(s, "store", None) is None else buffers[s.out].shape
            continue
        flush()
        group, outer, produced = [], None, {}
        o = _row_outer(s)
        if o is not None:
            group, outer, produced = [s], o, {s.out: s.shape}
        else:
            out.append(s)
    flush()
    return out
