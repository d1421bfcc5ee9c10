"""A tiny native interpreter that runs a loop's kernels without Python per iteration.

`native_loops.py` translates a scan, while_loop or cond/switch (the scheduled
programs of its body, condition or branches) into a short *loop code*: fixed-width instructions over a
table of int64 *slots* (data pointers, counters).  This module compiles, once
per process (and disk-cached like every module), the function that executes
it: ``void ember_loop_run(i64 code, i64 slots, i8** args)``, the kernel ABI of
runtime.py with the code and slot table's addresses for start and stop, so a
compiled program calls a loop like any kernel, passing its own buffer table.  Per iteration the work is
a handful of instruction dispatches, the body's kernel calls (the kernel ABI
of runtime.py: each kernel's table entry points at the slot holding its
buffer's data pointer, so moving a scanned input or output to the next row is
one slot write) and small `memcpy`s for carries.

An instruction is `WIDTH` int64 words, ``[op, a, b, c, d, e]``:

  END                                    return
  CALL     fn, start, stop, table        fn(start, stop, table)
  COPY     dst, src, nbytes              memcpy(slot[dst], slot[src], nbytes)
  SET      s, value                      slot[s] = value
  OFFSET   dst, base, stride, ctr, rev   slot[dst] = slot[base] + i * stride, with
                                         i = slot[ctr], or rev - 1 - slot[ctr] if rev > 0
  BRGE     s, n, target                  if slot[s] >= n: jump to instruction target
  INC      s                             slot[s] += 1
  JUMP     target
  BRFALSE  s, target                     if the byte at slot[s] is 0: jump
  DEREF    dst, src                      slot[dst] = *(i64*)slot[src]
  MOVE     dst, src                      slot[dst] = slot[src]
  BIND     dst, b                        slot[dst] = the data pointer of buffer b of the
                                         caller's table (args[b] points at its slot)
  SWITCH   s, n, table, width, signed    jump to instruction table + min(max(i, 0), n - 1),
                                         i the `width`-byte integer at slot[s] (signed if
                                         `signed`): cond/switch's clamped branch index
                                         (at `table`, n JUMPs to the branches' code)

DEREF turns a numpy array's address (``id(a)`` plus the data field's offset,
which Python writes without touching the array) into its data pointer.

Example:
    >>> import numpy as np
    >>> code = np.array([SET, 0, 7, 0, 0, 0, END, 0, 0, 0, 0, 0], np.int64)
    >>> slots = np.zeros(1, np.int64)
    >>> run_loop_code(code, slots)
    >>> int(slots[0])
    7
"""
from __future__ import annotations

import ctypes
import functools

import llvmlite.ir as ir
import numpy as np

from . import compiler
from .runtime import kernel_type

__all__ = ["END", "CALL", "COPY", "SET", "OFFSET", "BRGE", "INC", "JUMP", "BRFALSE", "DEREF", "MOVE", "BIND", "SWITCH",
           "WIDTH",
           "run_loop_code", "loop_function", "loop_address"]

END, CALL, COPY, SET, OFFSET, BRGE, INC, JUMP, BRFALSE, DEREF, MOVE, BIND, SWITCH = range(13)
WIDTH = 6

_I1, _I8, _I64 = ir.IntType(1), ir.IntType(8), ir.IntType(64)
_I8P = _I8.as_pointer()
_P64 = _I64.as_pointer()


def _build_ir() -> str:
    m = ir.Module(name="ember_loop_vm")
    memcpy = ir.Function(m, ir.FunctionType(ir.VoidType(), [_I8P, _I8P, _I64, _I1]),
                         name="llvm.memcpy.p0i8.p0i8.i64")
    kptr = kernel_type().as_pointer()
    fn = ir.Function(m, kernel_type(), name="ember_loop_run")
    fn.attributes.add("nounwind")
    code_i, slots_i, args = fn.args
    code_i.name, slots_i.name, args.name = "code", "slots", "args"
    c = lambda v: ir.Constant(_I64, v)  # noqa: E731
    entry = fn.append_basic_block("entry")
    head = fn.append_basic_block("dispatch")
    done = fn.append_basic_block("done")
    b = ir.IRBuilder(entry)
    code, slots = b.inttoptr(code_i, _P64), b.inttoptr(slots_i, _P64)
    b.branch(head)
    b.position_at_end(head)
    pc = b.phi(_I64, "pc")
    pc.add_incoming(c(0), entry)
    base = b.mul(pc, c(WIDTH))

    def word(bb, k):
        return bb.load(bb.gep(code, [bb.add(base, c(k))], inbounds=True))

    def slot_ptr(bb, s):
        return bb.gep(slots, [s], inbounds=True)

    op = word(b, 0)
    blocks = {k: fn.append_basic_block(n) for k, n in
              ((CALL, "call"), (COPY, "copy"), (SET, "set"), (OFFSET, "offset"), (BRGE, "brge"),
               (INC, "inc"), (JUMP, "jump"), (BRFALSE, "brfalse"), (DEREF, "deref"), (MOVE, "move"), (BIND, "bind"),
               (SWITCH, "switch"))}
    sw = b.switch(op, done)
    for k, blk in blocks.items():
        sw.add_case(c(k), blk)

    def go(bb, target):
        pc.add_incoming(target, bb.block)
        bb.branch(head)

    # CALL
    bb = ir.IRBuilder(blocks[CALL])
    f = bb.inttoptr(word(bb, 1), kptr)
    bb.call(f, [word(bb, 2), word(bb, 3), bb.inttoptr(word(bb, 4), _I8P.as_pointer())])
    go(bb, bb.add(pc, c(1)))
    # COPY
    bb = ir.IRBuilder(blocks[COPY])
    dst = bb.inttoptr(bb.load(slot_ptr(bb, word(bb, 1))), _I8P)
    src = bb.inttoptr(bb.load(slot_ptr(bb, word(bb, 2))), _I8P)
    bb.call(memcpy, [dst, src, word(bb, 3), ir.Constant(_I1, 0)])
    go(bb, bb.add(pc, c(1)))
    # SET
    bb = ir.IRBuilder(blocks[SET])
    bb.store(word(bb, 2), slot_ptr(bb, word(bb, 1)))
    go(bb, bb.add(pc, c(1)))
    # OFFSET
    bb = ir.IRBuilder(blocks[OFFSET])
    i = bb.load(slot_ptr(bb, word(bb, 4)))
    rev = word(bb, 5)
    i = bb.select(bb.icmp_signed(">", rev, c(0)), bb.sub(bb.sub(rev, c(1)), i), i)
    val = bb.add(bb.load(slot_ptr(bb, word(bb, 2))), bb.mul(i, word(bb, 3)))
    bb.store(val, slot_ptr(bb, word(bb, 1)))
    go(bb, bb.add(pc, c(1)))
    # BRGE
    bb = ir.IRBuilder(blocks[BRGE])
    ge = bb.icmp_signed(">=", bb.load(slot_ptr(bb, word(bb, 1))), word(bb, 2))
    go(bb, bb.select(ge, word(bb, 3), bb.add(pc, c(1))))
    # INC
    bb = ir.IRBuilder(blocks[INC])
    p = slot_ptr(bb, word(bb, 1))
    bb.store(bb.add(bb.load(p), c(1)), p)
    go(bb, bb.add(pc, c(1)))
    # JUMP
    bb = ir.IRBuilder(blocks[JUMP])
    go(bb, word(bb, 1))
    # BRFALSE
    bb = ir.IRBuilder(blocks[BRFALSE])
    byte = bb.load(bb.inttoptr(bb.load(slot_ptr(bb, word(bb, 1))), _I8P))
    go(bb, bb.select(bb.icmp_unsigned("==", byte, ir.Constant(_I8, 0)), word(bb, 2), bb.add(pc, c(1))))
    # DEREF
    bb = ir.IRBuilder(blocks[DEREF])
    v = bb.load(bb.inttoptr(bb.load(slot_ptr(bb, word(bb, 2))), _P64))
    bb.store(v, slot_ptr(bb, word(bb, 1)))
    go(bb, bb.add(pc, c(1)))

    # MOVE
    bb = ir.IRBuilder(blocks[MOVE])
    bb.store(bb.load(slot_ptr(bb, word(bb, 2))), slot_ptr(bb, word(bb, 1)))
    go(bb, bb.add(pc, c(1)))

    # BIND
    bb = ir.IRBuilder(blocks[BIND])
    entry_p = bb.load(bb.gep(args, [word(bb, 2)], inbounds=True))
    bb.store(bb.load(bb.bitcast(entry_p, _P64)), slot_ptr(bb, word(bb, 1)))
    go(bb, bb.add(pc, c(1)))

    # SWITCH: load the index at its width, extend it, clamp it into [0, n)
    bb = ir.IRBuilder(blocks[SWITCH])
    src = bb.load(slot_ptr(bb, word(bb, 1)))
    n, table, signed = word(bb, 2), word(bb, 3), bb.icmp_signed("!=", word(bb, 5), c(0))
    merge = fn.append_basic_block("switch_clamp")
    width_sw = bb.switch(word(bb, 4), merge)
    loads = []
    for nbytes in (1, 2, 4, 8):
        blk = fn.append_basic_block(f"switch_i{8 * nbytes}")
        width_sw.add_case(c(nbytes), blk)
        lb = ir.IRBuilder(blk)
        v = lb.load(lb.inttoptr(src, ir.IntType(8 * nbytes).as_pointer()))
        if nbytes < 8:
            v = lb.select(signed, lb.sext(v, _I64), lb.zext(v, _I64))
        lb.branch(merge)
        loads.append((v, blk))
    bb = ir.IRBuilder(merge)
    v = bb.phi(_I64, "index")
    v.add_incoming(c(0), blocks[SWITCH])    # (an unknown width: the first branch)
    for val, blk in loads:
        v.add_incoming(val, blk)
    low = bb.and_(signed, bb.icmp_signed("<", v, c(0)))
    high = bb.select(signed, bb.icmp_signed(">=", v, n), bb.icmp_unsigned(">=", v, n))
    i = bb.select(low, c(0), bb.select(high, bb.sub(n, c(1)), v))
    go(bb, bb.add(table, i))

    ir.IRBuilder(done).ret_void()
    return str(m)


@functools.lru_cache(maxsize=None)
def _compiled():
    cm = compiler.compile_ir(_build_ir(), ["ember_loop_run"], opt=2)
    return cm, ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)(cm["ember_loop_run"])


def loop_address() -> int:
    """The address of ``ember_loop_run`` (compiled on first use), for loop code's CALLs.

    Example:
        >>> loop_address() != 0
        True
    """
    return _compiled()[0]["ember_loop_run"]


def loop_function():
    """The ctypes function ``ember_loop_run(code, slots, args)`` (compiled on first use).

    Example:
        >>> callable(loop_function())
        True
    """
    return _compiled()[1]


def run_loop_code(code: np.ndarray, slots: np.ndarray, args: int = 0) -> None:
    """Execute loop `code` (int64, `WIDTH` words per instruction) over `slots`
    (int64), both C-contiguous and kept alive by the caller; `args` is the
    address of the buffer table BIND reads.

    Example:
        >>> code = np.array([INC, 0, 0, 0, 0, 0, BRGE, 0, 3, 3, 0, 0, JUMP, 0, 0, 0, 0, 0,
        ...                  END, 0, 0, 0, 0, 0], np.int64)
        >>> slots = np.zeros(1, np.int64)
        >>> run_loop_code(code, slots)
        >>> int(slots[0])
        3
    """
    loop_function()(code.ctypes.data, slots.ctypes.data, args)
