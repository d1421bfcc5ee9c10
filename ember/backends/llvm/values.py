"""One kernel function and the scalar values computed in it: the walk over a
kernel's index and value expressions, loads and stores, constants and dtype
conversions (the operations themselves are ops.py's lowerings).

Numeric semantics match the numpy reference: float16/bfloat16 are stored in
their format, computed in float32 and rounded after every primitive (float64 and
32/64-bit integers convert to them with one rounding: to odd into float32 first,
then to nearest even, as the reference does); float->int conversion truncates
and saturates with NaN -> 0.

Example:
    >>> import llvmlite.ir as ir, numpy as np
    >>> from ember.backends.kernels import Buffer
    >>> from ember.backends.kernels.loop_ir import E
    >>> em = ValueEmitter(ir.Module(), "k", [0], [Buffer((4,), np.dtype(np.float32), "input")])
    >>> str(em.value(E("const", 2.0, np.dtype(np.float32))))
    'float 0x4000000000000000'
"""
from __future__ import annotations

import numpy as np
import llvmlite.ir as ir

from ... import dtypes as _dt
from ..kernels.affine import split_constant
from ..kernels.loop_ir import iadd, iconst
from ..kernels.walk import postorder
from .ops import F16, F32, F64, I1, I8, I16, I32, I64, _is_float, _is_signed, compute_type, lowering_of, storage_type
from .runtime import declare_kernel, kernel_arg


class ValueEmitter:
    """Emits one kernel: the ABI function `name` loads the buffer pointers it uses
    from the program's pointer table (`args[buffer id]`) and calls `name.body`, an
    internal function taking them as `noalias` arguments (no two buffers a kernel
    touches overlap, so loads may be hoisted and loops vectorised without checks).
    This half computes values; the loop nests are codegen.py's `KernelEmitter`."""

    def __init__(self, module, name, buffer_ids, buffers, offsets=None, in_order=False):
        self.m = module
        self.buffers = buffers
        # the body's pointer arguments: in increasing buffer id, or as given (`in_order`)
        self.args = list(dict.fromkeys(buffer_ids)) if in_order else sorted(set(buffer_ids))
        # element offsets the ABI function adds to buffer pointers (body_sharing.py):
        # the body addresses buffer `b` relative to element offsets[b]
        self.offsets = offsets or {}
        self.abi = abi = declare_kernel(module, name)[0]
        start, stop, argv = abi.args
        tys = [storage_type(buffers[bid].dtype).as_pointer() for bid in self.args]
        self.fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64, I64] + tys), name=name + ".body")
        self.fn.linkage = "internal"
        self.fn.attributes.add("nounwind")
        self.fn.attributes.add("alwaysinline")
        for a in self.fn.args[2:]:
            a.add_attribute("noalias")
        wb = ir.IRBuilder(abi.append_basic_block("entry"))
        ptrs = []
        for bid in self.args:
            p = kernel_arg(wb, argv, bid, storage_type(buffers[bid].dtype), f"b{bid}")
            if self.offsets.get(bid):
                p = wb.gep(p, [ir.Constant(I64, self.offsets[bid])], inbounds=True, name=f"b{bid}.base")
            ptrs.append(p)
        self.call = wb.call(self.fn, [start, stop] + ptrs)
        wb.ret_void()
        self.start, self.stop = self.fn.args[0], self.fn.args[1]
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.ptrs = {bid: self.fn.args[2 + j] for j, bid in enumerate(self.args)}
        self.vars = {}
        self.memo = {}
        self.imemo = {}
        self.amemo = {}

    # --- expressions ---------------------------------------------------------------------------
    def index(self, e):
        """The i64 value of index expression `e` (memoised per loop body)."""
        hit = self.imemo.get(e)
        if hit is not None:
            return hit
        self._emit_dag(e)
        return self.imemo[e]

    def value(self, e):
        """The compute-type value of value expression `e` (memoised per loop body)."""
        hit = self.memo.get(e)
        if hit is not None:
            return hit
        self._emit_dag(e)
        return self.memo[e]

    def _emit_dag(self, root):
        """Emit `root` and every sub-expression not emitted yet, operands first
        (walk.postorder: the first operand first, as a recursive walk would).
        Once a node's operands are in the memo tables, `_index_node`/`_value_node`
        (which ask `index`/`value` for them) do not recurse; the one exception is
        the index expression under a value (a load's address, an iota), which its
        node walks itself, so nesting follows gathers (an index computed from a
        loaded value), not the depth of either DAG."""
        imemo, memo = self.imemo, self.memo
        if root[0] in _INDEX_TAGS:
            def done(e):
                return e in (imemo if e[0] in _INDEX_TAGS else memo)
        else:
            # a value walk leaves index expressions to the nodes using them: a load
            # emits its address in canonical form (`address`), not as written
            def done(e):
                return e[0] in _INDEX_TAGS or e in memo
        for e in postorder(root, done):
            if e[0] in _INDEX_TAGS:
                imemo[e] = self._index_node(e)
            else:
                memo[e] = self._value_node(e)

    def _index_node(self, e):
        b = self.b
        t = e[0]
        if t == "v":
            r = self.vars[e[1]]
        elif t == "c":
            r = ir.Constant(I64, e[1])
        elif t == "+":
            r = b.add(self.index(e[1]), self.index(e[2]))
        elif t == "*":
            r = b.mul(self.index(e[1]), ir.Constant(I64, e[2]))
        elif t == "/":
            r = b.sdiv(self.index(e[1]), ir.Constant(I64, e[2]))
        elif t == "%":
            r = b.srem(self.index(e[1]), ir.Constant(I64, e[2]))
        elif t == "clamp":
            x = self.index(e[1])
            lo, hi = ir.Constant(I64, e[2]), ir.Constant(I64, e[3])
            x = b.select(b.icmp_signed("<", x, lo), lo, x)
            r = b.select(b.icmp_signed(">", x, hi), hi, x)
        elif t == "val":
            v = self.value(e[1])
            r = self.convert(v, e[1][-1] if e[1][0] != "op" else e[1][3], np.dtype(np.int64))
        else:
            raise ValueError(f"unknown index expression {e!r}")
        return r

    def address(self, bid, e):
        """The i64 element index into buffer `bid`'s body pointer of index
        expression `e`: an affine `e` in canonical form (kernels.affine) less the
        buffer's offset, so that the rendered body does not depend on where the
        buffer's elements start."""
        key = (bid, e)
        hit = self.amemo.get(key)
        if hit is None:
            split = split_constant(e)
            hit = e if split is None else iadd(split[0], iconst(split[1] - self.offsets.get(bid, 0)))
            self.amemo[key] = hit
        return self.index(hit)

    # --- values ------------------------------------------------------------------------------
    def load(self, bid, idx_expr, dtype):
        b = self.b
        p = b.gep(self.ptrs[bid], [self.address(bid, idx_expr)], inbounds=True)
        raw = b.load(p)
        d = np.dtype(dtype)
        if d == _dt.bool_:
            return b.icmp_unsigned("!=", raw, ir.Constant(I8, 0))
        if d == _dt.float16:
            return b.fpext(raw, F32)
        if d == _dt.bfloat16:
            return b.bitcast(b.shl(b.zext(raw, I32), ir.Constant(I32, 16)), F32)
        return raw

    def store(self, bid, index, value, dtype):
        b = self.b
        d = np.dtype(dtype)
        if d == _dt.bool_:
            value = b.zext(value, I8)
        elif d == _dt.float16:
            value = b.fptrunc(value, F16)
        elif d == _dt.bfloat16:
            value = self.to_bf16_bits(value)
        b.store(value, b.gep(self.ptrs[bid], [index], inbounds=True))

    def to_bf16_bits(self, v):
        """Round a float32 to bfloat16 (nearest even), NaN stays a quiet NaN."""
        b = self.b
        bits = b.bitcast(v, I32)
        lsb = b.and_(b.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 1))
        rounded = b.add(bits, b.add(ir.Constant(I32, 0x7FFF), lsb))
        out = b.trunc(b.lshr(rounded, ir.Constant(I32, 16)), I16)
        isnan = b.fcmp_unordered("uno", v, v)
        nan = b.trunc(b.or_(b.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 0x40)), I16)
        return b.select(isnan, nan, out)

    def round_lowp(self, v, dtype):
        """Round a float32 compute value to float16/bfloat16 precision (one primitive's result)."""
        d = np.dtype(dtype)
        b = self.b
        if d == _dt.float16:
            return b.fpext(b.fptrunc(v, F16), F32)
        if d == _dt.bfloat16:
            return b.bitcast(b.shl(b.zext(self.to_bf16_bits(v), I32), ir.Constant(I32, 16)), F32)
        return v

    def const(self, value, dtype):
        t = compute_type(dtype)
        if t == I1:
            return ir.Constant(I1, int(bool(value)))
        if isinstance(t, ir.IntType):
            v = int(value) & ((1 << t.width) - 1)
            return ir.Constant(t, v)
        v = float(value)
        if np.dtype(dtype) in (_dt.float16, _dt.bfloat16):
            v = float(np.array(v, dtype=dtype).astype(np.float32))
        return ir.Constant(t, v)

    def _value_node(self, e):
        t = e[0]
        if t == "load":
            r = self.load(e[1], e[2], e[3])
        elif t == "const":
            r = self.const(e[1], e[2])
        elif t == "index":
            r = self.convert(self.index(e[1]), np.dtype(np.int64), e[2])
            if np.dtype(e[2]) in (_dt.float16, _dt.bfloat16):
                r = self.round_lowp(r, e[2])
        elif t == "op":
            r = self.op(e[1], dict(e[2]), e[3], e[4:])
            if np.dtype(e[3]) in (_dt.float16, _dt.bfloat16):
                r = self.round_lowp(r, e[3])
        else:
            raise ValueError(f"unknown value expression {e!r}")
        return r

    @staticmethod
    def dtype_of(e):
        t = e[0]
        if t == "load":
            return np.dtype(e[3])
        if t in ("const", "index"):
            return np.dtype(e[2])
        return np.dtype(e[3])

    # --- conversions ---------------------------------------------------------------------------
    def convert(self, v, src, dst):
        b = self.b
        src, dst = np.dtype(src), np.dtype(dst)
        ts, td = compute_type(src), compute_type(dst)
        if src == dst:
            return v
        if dst == _dt.bool_:
            if _is_float(src):
                return b.fcmp_unordered("une", v, ir.Constant(ts, 0.0))
            return b.icmp_unsigned("!=", v, ir.Constant(ts, 0))
        if src == _dt.bool_:
            if _is_float(dst):
                return b.uitofp(v, td)
            return b.zext(v, td)
        if dst in (_dt.float16, _dt.bfloat16) and (src == _dt.float64 or (not _is_float(src) and ts.width > 16)):
            # one rounding to the half format: round to odd into float32 (exact, or
            # inexact with the sticky last bit set), then the caller's float32 -> half
            # rounding to nearest even is the correctly rounded result (float32 keeps
            # more than the half format's bits + 2, which is what round-to-odd needs)
            return self._to_f32_odd(v, src)
        if _is_float(src) and _is_float(dst):
            if ts == td:
                return v
            return b.fpext(v, td) if td == F64 else b.fptrunc(v, td)
        if _is_float(src):
            name = "llvm.fptosi.sat" if _is_signed(dst) else "llvm.fptoui.sat"
            full = f"{name}.i{td.width}.{'f32' if ts == F32 else 'f64'}"
            fn = self.m.globals.get(full)
            if fn is None:
                fn = ir.Function(self.m, ir.FunctionType(td, [ts]), name=full)
            return b.call(fn, [v])
        if _is_float(dst):
            return b.sitofp(v, td) if _is_signed(src) else b.uitofp(v, td)
        if td.width == ts.width:
            return v
        if td.width < ts.width:
            return b.trunc(v, td)
        return b.sext(v, td) if _is_signed(src) else b.zext(v, td)

    def _to_f32_odd(self, v, src):
        """`v` (float64, or an integer of 32/64 bits) rounded to float32 *to odd*:
        truncated toward zero with the last bit set when inexact.  NaN stays NaN."""
        b = self.b
        if _is_float(src):
            t = b.fptrunc(v, F32)
            back = b.fpext(t, F64)
            inexact = b.fcmp_ordered("!=", back, v)
            toward_zero = b.fcmp_ordered(">", self.intrinsic("llvm.fabs", F64, [back]),
                                         self.intrinsic("llvm.fabs", F64, [v]))
            bits = b.bitcast(t, I32)
            bits = b.select(toward_zero, b.sub(bits, ir.Constant(I32, 1)), bits)
            bits = b.select(inexact, b.or_(bits, ir.Constant(I32, 1)), bits)
            return b.bitcast(bits, F32)
        # integers: keep the top 24 significant bits of |v|, or-ing the dropped
        # ones into the last kept bit, and scale back by the dropped power of two
        ty = v.type
        w = ty.width
        neg = b.icmp_signed("<", v, ir.Constant(ty, 0)) if _is_signed(src) else ir.Constant(I1, 0)
        a = b.select(neg, b.neg(v), v) if _is_signed(src) else v
        ctlz = self.m.globals.get(f"llvm.ctlz.i{w}")
        if ctlz is None:
            ctlz = ir.Function(self.m, ir.FunctionType(ty, [ty, I1]), name=f"llvm.ctlz.i{w}")
        shift = b.sub(ir.Constant(ty, w - 24), b.call(ctlz, [a, ir.Constant(I1, 0)]))
        shift = b.select(b.icmp_signed("<", shift, ir.Constant(ty, 0)), ir.Constant(ty, 0), shift)
        dropped = b.and_(a, b.sub(b.shl(ir.Constant(ty, 1), shift), ir.Constant(ty, 1)))
        m = b.or_(b.lshr(a, shift), b.zext(b.icmp_unsigned("!=", dropped, ir.Constant(ty, 0)), ty))
        f = b.uitofp(m, F32)
        # 2**shift (shift <= 40) as a float32 built from its exponent field
        biased = b.add(shift, ir.Constant(ty, 127))
        biased = b.trunc(biased, I32) if w > 32 else biased
        scale = b.bitcast(b.shl(biased, ir.Constant(I32, 23)), F32)
        f = b.fmul(f, scale)
        return b.select(neg, b.fneg(f), f)

    # --- primitives ------------------------------------------------------------------------------
    def intrinsic(self, name, ty, args):
        """Call an overloaded intrinsic `name.<type>` taking and returning `ty`."""
        suffix = {F32: "f32", F64: "f64"}[ty]
        full = f"{name}.{suffix}"
        fn = self.m.globals.get(full)
        if fn is None:
            fn = ir.Function(self.m, ir.FunctionType(ty, [ty] * len(args)), name=full)
        return self.b.call(fn, args)

    def op(self, name, params, dtype, arg_exprs):
        vals = [self.value(a) for a in arg_exprs]
        in_dt = self.dtype_of(arg_exprs[0]) if arg_exprs else np.dtype(dtype)
        return lowering_of(name)(self, vals, in_dt, dtype, params)

    def _alloca(self, ty):
        entry = self.fn.entry_basic_block
        with self.b.goto_block(entry):
            self.b.position_at_start(entry)
            a = self.b.alloca(ty)
        return a

    def _forget(self):
        # values computed inside a finished loop do not dominate what follows it
        self.memo.clear()
        self.imemo.clear()


_INDEX_TAGS = frozenset({"v", "c", "+", "*", "/", "%", "clamp", "val"})



def _key_type(float_type) -> ir.IntType:
    return ir.IntType(64 if float_type == F64 else 32)
