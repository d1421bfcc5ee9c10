"""Readable dumps of scheduled programs (EMBER_DUMP_KERNELS=1 prints them).

Example:
    >>> format_index(("+", ("*", ("v", 0), 4), ("v", 1)))
    'i0*4 + i1'
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ...dtypes import short_name
from ...fx.ir import constant_key
from .loop_ir import operands, CollectiveProgress, CollectiveStart, CollectiveWait, ConvKernel, GemmKernel, LibraryStep, MapKernel, Program, ReduceKernel, RowKernel, ScatterKernel


def format_index(e) -> str:
    """An index expression as text (`i0*4 + i1`)."""
    return _format(e)


def format_value(e) -> str:
    """A value expression as text.

    Example:
        >>> format_value(("op", "exp", (), "float32", ("load", 0, ("v", 0), "float32")))
        'exp(b0[i0])'
    """
    return _format(e)


def _format(root) -> str:
    # post-order with an explicit stack (expressions can be very deep); shared
    # sub-expressions are printed in full wherever they occur
    text: dict = {}
    stack = [root]
    while stack:
        e = stack[-1]
        if id(e) in text:
            stack.pop()
            continue
        todo = [c for c in operands(e) if id(c) not in text]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        text[id(e)] = _format_node(e, [text[id(c)] for c in operands(e)])
    return text[id(root)]


def _format_node(e, kids) -> str:
    t = e[0]
    paren = lambda c, s: f"({s})" if c[0] == "+" else s  # noqa: E731
    if t == "v":
        return f"i{e[1]}"
    if t == "c":
        return str(e[1])
    if t == "+":
        return f"{kids[0]} + {kids[1]}"
    if t == "*":
        return f"{paren(e[1], kids[0])}*{e[2]}"
    if t == "/":
        return f"{paren(e[1], kids[0])}//{e[2]}"
    if t == "%":
        return f"{paren(e[1], kids[0])}%{e[2]}"
    if t == "clamp":
        return f"clamp({kids[0]}, {e[2]}, {e[3]})"
    if t == "val":
        return f"int({kids[0]})"
    if t == "load":
        return f"b{e[1]}[{kids[0]}]"
    if t == "const":
        return repr(e[1])
    if t == "index":
        return f"{short_name(e[2])}({kids[0]})"
    if t == "op":
        params = "".join(f"[{k}={v}]" for k, v in e[2])
        return f"{e[1]}{params}({', '.join(kids)})"
    return str(e)


def _format_kernel(s, suffix=""):
    if isinstance(s, MapKernel):
        at = "" if s.store is None else f" at b{s.out}[{format_index(s.store)}]"
        return f"kernel {s.name}: b{s.out}{list(s.shape)}{at} = {format_value(s.body)}{suffix}"
    return (f"kernel {s.name}: b{s.out}{list(s.shape)} = {s.op} over axes {s.axes} of "
            f"space {list(s.space)}: {format_value(s.body)}{suffix}")


def format_program(prog: Program) -> str:
    lines = []
    for i, b in enumerate(prog.buffers):
        if b.kind == "token":     # a collective's pending reduction (overlap.py)
            lines.append(f"  b{i}: token")
        else:
            lines.append(f"  b{i}: {short_name(b.dtype)}{list(b.shape)} {b.kind}")
    for s in prog.steps:
        if isinstance(s, (MapKernel, ReduceKernel)):
            lines.append(_format_kernel(s))
        elif isinstance(s, RowKernel):
            lines.append(f"row loop {s.name} over {list(s.outer)}: each row runs "
                         + ", ".join(m.name for m in s.members)
                         + "".join(f"; b{x} is stored in b{t}" for x, t in sorted(s.aliases.items()))
                         + "".join(f"; b{x} is one row of scratch" for x in sorted(s.scratch)))
            lines.extend(_format_kernel(m, f"  (in {s.name})") for m in s.members)
        elif isinstance(s, ConvKernel):
            lines.append(_format_kernel(s.cols, f"  (patches of {s.name})"))
            lines.append(f"library conv_general_dilated: b{s.out} = per image n and group g, "
                         f"b{s.w}[g] @ b{s.cols.out}[n, g]{' transposed' if s.channels_last else ''} "
                         f"(the target's gemm: {s.n} x {s.groups} x [{s.og}x{s.k}] @ [{s.k}x{s.p}])")
        elif isinstance(s, ScatterKernel):
            cond = f" if {format_value(s.valid)}" if s.valid is not None else ""
            order = "atomically, in any order" if s.atomic else "serially"
            lines.append(f"kernel {s.name}: for each index of {list(s.space)} ({order}): "
                         f"b{s.out}[{format_index(s.target)}] {s.op}= {format_value(s.body)}{cond}")
        elif isinstance(s, GemmKernel):
            def operand(b, off, t):
                return f"b{b}" + (f"[{off}:]" if off else "") + ("^T" if t else "")
            ops = f"{operand(s.a, s.a_offset, s.trans_a)} @ {operand(s.b, s.b_offset, s.trans_b)}"
            lines.append(f"library dot_general: b{s.out} = {ops} (the target's gemm: "
                         f"{s.batch} x [{s.m}x{s.k}] @ [{s.k}x{s.n}], {s.tasks} task(s))")
            lines.extend(_format_kernel(e, f"  (on each block of {s.name})") for e in s.epilogue)
        elif isinstance(s, LibraryStep):
            ins = ", ".join(f"b{a}" if not isinstance(a, tuple) else repr(a[1]) for a in s.args)
            outs = ", ".join(f"b{o}" for o in s.outputs)
            name = s.eq.prim.name
            half = ("start" if isinstance(s, CollectiveStart) else "wait" if isinstance(s, CollectiveWait)
                    else "progress" if isinstance(s, CollectiveProgress) else "")
            if half:     # the halves of an overlapped collective (overlap.py)
                lines.append(f"library {name} ({half}): {outs + ' = ' if outs else ''}{name}_{half}({ins})")
            else:
                lines.append(f"library {name}: {outs} = {name}({ins})")
    lines.append("outputs: " + ", ".join(f"b{o}" if not isinstance(o, tuple) else repr(o[1])
                                         for o in prog.outputs))
    return "\n".join(lines)


def fingerprint(prog: Program) -> str:
    """A text that identifies the program's kernels exactly (buffers, steps and their
    expressions), linear in the size of the expression DAGs: a cache key for the
    code generated from it.  Library steps are left out (they are not compiled).

    Example:
        >>> fingerprint(Program([], [], [], [], [])) == fingerprint(Program([], [], [], [], []))
        True
    """
    refs: dict = {}   # id(tuple) -> "%n", one line per distinct node
    inline: dict = {}  # id(list or dataclass) -> its text
    lines = [repr([(b.shape, str(b.dtype)) for b in prog.buffers])]

    def composite(x):
        return isinstance(x, (tuple, list)) or (dataclasses.is_dataclass(x) and not isinstance(x, type))

    def children(x):
        if dataclasses.is_dataclass(x):
            return [getattr(x, f.name) for f in dataclasses.fields(x)]
        return list(x)

    def text(x):
        if isinstance(x, tuple):
            return refs[id(x)]
        if composite(x):
            return inline[id(x)]
        if isinstance(x, (float, np.floating)):
            # bits, so -0.0 and NaN payloads are told apart
            return "f" + constant_key(x, np.asarray(x).dtype)[2].hex()
        return repr(x)

    # post-order, left to right, with an explicit stack: expression DAGs can be
    # deeper than Python's recursion limit (long fused chains)
    def render(root):
        stack = [(root, False)]
        while stack:
            x, expanded = stack.pop()
            if id(x) in refs or id(x) in inline:
                continue
            kids = children(x)
            if not expanded:
                stack.append((x, True))
                stack.extend((c, False) for c in reversed(kids) if composite(c))
                continue
            if isinstance(x, tuple):
                r = refs[id(x)] = f"%{len(refs)}"
                lines.append(f"{r}=({','.join(text(c) for c in kids)})")
            elif isinstance(x, list):
                inline[id(x)] = "[" + ",".join(text(c) for c in kids) + "]"
            else:
                inline[id(x)] = type(x).__name__ + "{" + ",".join(
                    f"{f.name}:{text(c)}" for f, c in zip(dataclasses.fields(x), kids)) + "}"
        return text(root)

    for s in prog.steps:
        if not isinstance(s, LibraryStep):
            lines.append(render(s))
    return "\n".join(lines)
