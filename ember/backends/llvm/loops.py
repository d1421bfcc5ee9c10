"""Small hand-written loop kernels that follow the kernel ABI.

The scheduler generates the real kernels; these helpers build the simplest
shapes -- a 1-d elementwise map and a row reduction -- for tests, benchmarks
and as a worked example of the ABI (``void k(i64 start, i64 stop, i8** args)``).

Example::

    import llvmlite.ir as ir
    from ember.backends.llvm import loops, mathlib, compile_ir, KernelLauncher
    m = ir.Module()
    f32 = ir.FloatType()
    loops.elementwise_kernel(m, "expk", 1, f32,
                             lambda b, xs: [mathlib.emit(b, "exp", xs, f32)])
    cm = compile_ir(str(m), ["expk"])
    KernelLauncher(cm["expk"], 2).prepare([x, y]).run(x.size)
"""

from __future__ import annotations

from typing import Callable, Sequence

import llvmlite.ir as ir

from .runtime import declare_kernel, kernel_arg

__all__ = ["elementwise_kernel", "row_sum_kernel"]

_I64 = ir.IntType(64)


def elementwise_kernel(module: ir.Module, name: str, n_inputs: int, ty: ir.Type,
                       body: Callable[[ir.IRBuilder, list], Sequence[ir.Value]],
                       n_outputs: int = 1, out_type: ir.Type | None = None) -> ir.Function:
    """Define ``name``: for i in [start, stop): outs[i] = body(ins[i]).

    Buffers ``0 .. n_inputs-1`` of ``args`` are the inputs, then the
    ``n_outputs`` outputs (runtime.py's ABI: each entry points at the slot
    holding the buffer's data pointer), all of element type ``ty`` (outputs
    ``out_type`` if given).
    ``body(builder, [x0, x1, ...])`` returns the ``n_outputs`` values.

    Example::

        elementwise_kernel(m, "axpy", 2, f64, lambda b, v: [b.fadd(b.fmul(v[0], c), v[1])])
    """
    out_type = out_type or ty
    fn, start, stop, args = declare_kernel(module, name)
    entry = fn.append_basic_block("entry")
    loop = fn.append_basic_block("loop")
    done = fn.append_basic_block("done")
    b = ir.IRBuilder(entry)
    ins = [kernel_arg(b, args, j, ty, f"in{j}") for j in range(n_inputs)]
    outs = [kernel_arg(b, args, n_inputs + j, out_type, f"out{j}") for j in range(n_outputs)]
    b.cbranch(b.icmp_signed("<", start, stop), loop, done)
    b.position_at_end(loop)
    i = b.phi(_I64, name="i")
    i.add_incoming(start, entry)
    xs = [b.load(b.gep(p, [i], inbounds=True)) for p in ins]
    ys = list(body(b, xs))
    if len(ys) != n_outputs:
        raise ValueError(f"body returned {len(ys)} values, expected {n_outputs}")
    for p, y in zip(outs, ys):
        b.store(y, b.gep(p, [i], inbounds=True))
    nxt = b.add(i, ir.Constant(_I64, 1), name="i.next")
    i.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_signed("<", nxt, stop), loop, done)
    b.position_at_end(done)
    b.ret_void()
    return fn


def row_sum_kernel(module: ir.Module, name: str, ty: ir.Type, ncols: int,
                   reassoc: bool = True) -> ir.Function:
    """Define ``name``: out[r] = sum(x[r*ncols : (r+1)*ncols]) for r in [start, stop).

    ``args = [x, out]``.  ``reassoc=True`` puts the ``reassoc`` flag on the
    accumulating ``fadd`` -- the only way LLVM vectorises a float sum (it
    then keeps several partial sums, i.e. a different rounding order than a
    sequential loop).  No other fast-math flag is used, so NaN/inf propagate.

    Example::

        row_sum_kernel(m, "rowsum", ir.FloatType(), 1024)
    """
    fn, start, stop, args = declare_kernel(module, name)
    entry = fn.append_basic_block("entry")
    rows = fn.append_basic_block("rows")
    cols = fn.append_basic_block("cols") if ncols > 0 else None
    row_end = fn.append_basic_block("row_end")
    done = fn.append_basic_block("done")
    b = ir.IRBuilder(entry)
    x = kernel_arg(b, args, 0, ty, "x")
    out = kernel_arg(b, args, 1, ty, "out")
    n = ir.Constant(_I64, ncols)
    b.cbranch(b.icmp_signed("<", start, stop), rows, done)
    b.position_at_end(rows)
    r = b.phi(_I64, name="r")
    r.add_incoming(start, entry)
    base = b.gep(x, [b.mul(r, n)], inbounds=True)
    if ncols > 0:
        b.branch(cols)
        b.position_at_end(cols)
        j = b.phi(_I64, name="j")
        acc = b.phi(ty, name="acc")
        j.add_incoming(ir.Constant(_I64, 0), rows)
        acc.add_incoming(ir.Constant(ty, 0.0), rows)
        v = b.load(b.gep(base, [j], inbounds=True))
        acc2 = b.fadd(acc, v, flags=("reassoc",) if reassoc else ())
        j2 = b.add(j, ir.Constant(_I64, 1))
        j.add_incoming(j2, cols)
        acc.add_incoming(acc2, cols)
        b.cbranch(b.icmp_signed("<", j2, n), cols, row_end)
        b.position_at_end(row_end)
        total = b.phi(ty)
        total.add_incoming(acc2, cols)
    else:
        b.branch(row_end)
        b.position_at_end(row_end)
        total = ir.Constant(ty, 0.0)
    b.store(total, b.gep(out, [r], inbounds=True))
    r2 = b.add(r, ir.Constant(_I64, 1))
    r.add_incoming(r2, row_end)
    b.cbranch(b.icmp_signed("<", r2, stop), rows, done)
    b.position_at_end(done)
    b.ret_void()
    return fn
