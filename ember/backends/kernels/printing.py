"""Readable dumps of scheduled programs (EMBER_DUMP_KERNELS=1 prints them).

Example:
    >>> format_index(("+", ("*", ("v", 0), 4), ("v", 1)))
    'i0*4 + i1'
"""
from __future__ import annotations

from ...dtypes import short_name
from .loop_ir import LibraryStep, MapKernel, Program, ReduceKernel


def format_index(e) -> str:
    t = e[0]
    if t == "v":
        return f"i{e[1]}"
    if t == "c":
        return str(e[1])
    if t == "+":
        return f"{format_index(e[1])} + {format_index(e[2])}"
    if t == "*":
        return f"{_paren(e[1])}*{e[2]}"
    if t == "/":
        return f"{_paren(e[1])}//{e[2]}"
    if t == "%":
        return f"{_paren(e[1])}%{e[2]}"
    if t == "clamp":
        return f"clamp({format_index(e[1])}, {e[2]}, {e[3]})"
    if t == "val":
        return f"int({format_value(e[1])})"
    return str(e)


def _paren(e):
    s = format_index(e)
    return f"({s})" if e[0] == "+" else s


def format_value(e) -> str:
    t = e[0]
    if t == "load":
        return f"b{e[1]}[{format_index(e[2])}]"
    if t == "const":
        return repr(e[1])
    if t == "index":
        return f"{short_name(e[2])}({format_index(e[1])})"
    if t == "op":
        params = "".join(f"[{k}={v}]" for k, v in e[2])
        return f"{e[1]}{params}({', '.join(format_value(a) for a in e[4:])})"
    return str(e)


def format_program(prog: Program) -> str:
    lines = []
    for i, b in enumerate(prog.buffers):
        lines.append(f"  b{i}: {short_name(b.dtype)}{list(b.shape)} {b.kind}")
    for s in prog.steps:
        if isinstance(s, MapKernel):
            lines.append(f"kernel {s.name}: b{s.out}{list(s.shape)} = {format_value(s.body)}")
        elif isinstance(s, ReduceKernel):
            lines.append(f"kernel {s.name}: b{s.out}{list(s.shape)} = {s.op} over axes {s.axes} of "
                         f"space {list(s.space)}: {format_value(s.body)}")
        elif isinstance(s, LibraryStep):
            ins = ", ".join(f"b{a}" if not isinstance(a, tuple) else repr(a[1]) for a in s.inputs)
            outs = ", ".join(f"b{o}" for o in s.outputs)
            lines.append(f"library {s.eq.prim.name}: {outs} = {s.eq.prim.name}({ins})")
    lines.append("outputs: " + ", ".join(f"b{o}" if not isinstance(o, tuple) else repr(o[1])
                                         for o in prog.outputs))
    return "\n".join(lines)
