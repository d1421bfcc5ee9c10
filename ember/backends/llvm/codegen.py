"""Render scheduled loop kernels (ember.backends.kernels) as LLVM IR.

Every kernel follows the runtime ABI `void k(i64 start, i64 stop, i8** args)`;
`args` is the program's table indexed by buffer id, whose entry `b` points at
the place holding buffer `b`'s data pointer (one indirection, so binding a
numpy array costs no address lookup; see executable.py); [start, stop) ranges
over the outermost loop, which the runtime splits across threads.

Numeric semantics match the numpy reference: float16/bfloat16 are stored in
their format, computed in float32 and rounded after every primitive (float64 and
32/64-bit integers convert to them with one rounding: to odd into float32 first,
then to nearest even, as the reference does); integer
division by zero gives -1 (remainder: the dividend); float->int conversion
truncates and saturates with NaN -> 0; max/min are IEEE 754-2019 maximum/minimum
(NaN propagates, -0.0 < +0.0).  Reductions put
`reassoc` on the accumulating operation only (so they vectorise) and no other
fast-math flags anywhere.

Example:
    >>> import ember, numpy as np
    >>> from ember import lax
    >>> from ember.backends.kernels import schedule
    >>> from ember.backends.llvm.ops import supports
    >>> g = ember.make_graph(lambda x: lax.exp(x))(np.ones(4, np.float32))
    >>> "k1_exp" in render_program(schedule(g, supports), "m")[0]
    True
"""
from __future__ import annotations

import functools

import numpy as np
import llvmlite.ir as ir

from ... import dtypes as _dt
from ...fx.prims.contraction import overflow_exponent as _overflow_exponent
from ..kernels.loop_ir import E, operands, ConvKernel, GemmKernel, MapKernel, ReduceKernel, RowKernel, ScatterKernel, linearize
from . import blas, packed_gemm
from .ops import (F16, F32, F64, I1, I8, I16, I32, I64, _is_float, _is_signed, compute_type, lowering_of, minmax,
                  storage_type)
from .runtime import declare_kernel, kernel_arg

class _KernelEmitter:
    """Emits one kernel: the ABI function `name` loads the buffer pointers it uses
    from the program's pointer table (`args[buffer id]`) and calls `name.body`, an
    internal function taking them as `noalias` arguments (no two buffers a kernel
    touches overlap, so loads may be hoisted and loops vectorised without checks)."""

    def __init__(self, module, name, buffer_ids, buffers):
        self.m = module
        self.buffers = buffers
        self.args = sorted(set(buffer_ids))
        abi, start, stop, argv = declare_kernel(module, name)
        tys = [storage_type(buffers[bid].dtype).as_pointer() for bid in self.args]
        self.fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64, I64] + tys), name=name + ".body")
        self.fn.linkage = "internal"
        self.fn.attributes.add("nounwind")
        self.fn.attributes.add("alwaysinline")
        for a in self.fn.args[2:]:
            a.add_attribute("noalias")
        wb = ir.IRBuilder(abi.append_basic_block("entry"))
        ptrs = [table_ptr(wb, argv, bid, storage_type(buffers[bid].dtype), f"b{bid}") for bid in self.args]
        wb.call(self.fn, [start, stop] + ptrs)
        wb.ret_void()
        self.start, self.stop = self.fn.args[0], self.fn.args[1]
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.ptrs = {bid: self.fn.args[2 + j] for j, bid in enumerate(self.args)}
        self.vars = {}
        self.memo = {}
        self.imemo = {}

    # --- loops --------------------------------------------------------------------------
    def loop(self, lo, hi, body, name, step=1):
        """for v in [lo, hi) by `step`: body(v); lo/hi are i64 values."""
        b = self.b
        pre = b.block
        head = self.fn.append_basic_block(f"{name}.body")
        exit_ = self.fn.append_basic_block(f"{name}.exit")
        b.cbranch(b.icmp_signed("<", lo, hi), head, exit_)
        b.position_at_end(head)
        v = b.phi(I64, name=name)
        v.add_incoming(lo, pre)
        body(v)
        nxt = b.add(v, ir.Constant(I64, step))
        v.add_incoming(nxt, b.block)
        b.cbranch(b.icmp_signed("<", nxt, hi), head, exit_)
        b.position_at_end(exit_)

    def nest(self, dims, inner, first_parallel=True, k=0, ids=None):
        """Loops over `dims` binding loop variables `ids` (default 0, 1, ...); the
        first loop runs over [start, stop) when `first_parallel`."""
        ids = list(range(len(dims))) if ids is None else list(ids)
        if k == len(dims):
            inner()
            return
        if k == 0 and first_parallel:
            lo, hi = self.start, self.stop
        else:
            lo, hi = ir.Constant(I64, 0), ir.Constant(I64, dims[k])

        def body(v):
            self.vars[ids[k]] = v
            self.nest(dims, inner, first_parallel, k + 1, ids)
        self.loop(lo, hi, body, f"i{ids[k]}")

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
        """Emit `root` and every sub-expression not emitted yet, operands first, with
        an explicit stack: fused chains are far deeper than Python's recursion limit.
        Once a node's operands are in the memo tables, `_index_node`/`_value_node`
        (which ask `index`/`value` for them) do not recurse."""
        stack = [root]
        while stack:
            e = stack[-1]
            memo = self.imemo if e[0] in _INDEX_TAGS else self.memo
            if e in memo:
                stack.pop()
                continue
            todo = [c for c in operands(e) if c not in (self.imemo if c[0] in _INDEX_TAGS else self.memo)]
            if todo:
                # reversed: the first operand is emitted first, as a recursive walk
                # would (the instruction order LLVM starts from changes its schedule)
                stack.extend(reversed(todo))
                continue
            stack.pop()
            memo[e] = self._index_node(e) if memo is self.imemo else self._value_node(e)

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

    # --- values ------------------------------------------------------------------------------
    def load(self, bid, idx_expr, dtype):
        b = self.b
        p = b.gep(self.ptrs[bid], [self.index(idx_expr)], inbounds=True)
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

    # --- kernels -----------------------------------------------------------------------------------
    def _forget(self):
        # values computed inside a finished loop do not dominate what follows it
        self.memo.clear()
        self.imemo.clear()

    def _map_element(self, k):
        v = self.value(k.body)
        self.store(k.out, self.index(_lin(k.shape)), v, self.buffers[k.out].dtype)

    def _once(self, body):
        """Run `body` once, in whichever range contains index 0 (rank-0 work)."""
        b = self.b
        run = self.fn.append_basic_block("scalar")
        done = self.fn.append_basic_block("done")
        b.cbranch(b.icmp_signed("<", self.start, self.stop), run, done)
        b.position_at_end(run)
        body()
        b.branch(done)
        b.position_at_end(done)

    def emit_map(self, k):
        if not k.shape:
            self._once(lambda: self._map_element(k))
        else:
            j = _transposed_dim(k)
            if j is None:
                self.nest(k.shape, lambda: self._map_element(k))
            else:
                self._tiled_nest(k, j)
        self.b.ret_void()

    def _tiled_nest(self, k, j):
        """The loop nest with dimension j and the last one walked in TILE x TILE
        tiles: the output is written along the last dimension while some input is
        read along dimension j (a transpose); a tile of both stays in cache."""
        b = self.b
        last = len(k.shape) - 1
        c64 = lambda v: ir.Constant(I64, v)  # noqa: E731

        def rng(d):
            return (self.start, self.stop) if d == 0 else (c64(0), c64(k.shape[d]))

        def tile_end(lo, hi):
            e = b.add(lo, c64(TILE))
            return b.select(b.icmp_signed("<", e, hi), e, hi)

        def tile(jb, lb):
            def along_j(vj):
                self.vars[j] = vj

                def along_last(vl):
                    self.vars[last] = vl
                    self._map_element(k)
                self.loop(lb, tile_end(lb, rng(last)[1]), along_last, "tl")
            self.loop(jb, tile_end(jb, rng(j)[1]), along_j, "tj")

        def level(d, jb):
            lo, hi = rng(d)
            if d == last:
                self.loop(lo, hi, lambda lb: tile(jb, lb), "bl", step=TILE)
            elif d == j:
                self.loop(lo, hi, lambda v: level(d + 1, v), "bj", step=TILE)
            else:
                def body(v):
                    self.vars[d] = v
                    level(d + 1, jb)
                self.loop(lo, hi, body, f"i{d}")
        level(0, None)

    def _order_key(self, x, op):
        """The float `x` as a signed integer whose order is IEEE 754's maximum/minimum
        order (-0 < +0), NaN mapped to the integer that wins `op`.  A float max
        (min) reduction runs on these keys: one integer max per element with a
        one-cycle dependency, where `llvm.maximum` is a chain of six instructions
        (signed zeros and NaN) that bounds the loop by latency.  The map is its own
        inverse on non-NaN keys (`_from_order_key`)."""
        ity = _key_type(x.type)
        nan_key = ir.Constant(ity, (1 << (ity.width - 1)) - 1 if op == "max" else 1 << (ity.width - 1))
        return self.b.select(self.b.fcmp_unordered("uno", x, x), nan_key, self._flip_negatives(self.b.bitcast(x, ity)))

    def _from_order_key(self, key, ty):
        return self.b.bitcast(self._flip_negatives(key), ty)

    def _flip_negatives(self, i):
        """Negative values with all bits but the sign inverted: maps float bit
        patterns to order keys and back."""
        b, ity = self.b, i.type
        return b.xor(i, b.and_(b.ashr(i, ir.Constant(ity, ity.width - 1)), ir.Constant(ity, (1 << (ity.width - 1)) - 1)))

    def _reduce_row(self, k):
        """A register-accumulated reduction for the kept index bound in `self.vars`."""
        b = self.b
        acc_dt = _acc_dtype(k.dtype)
        keyed = k.op in ("max", "min") and _is_float(acc_dt)
        ty = compute_type(acc_dt)
        acc = self._alloca(_key_type(ty) if keyed else ty)

        def inner_red():
            v = self.value(k.body)
            v = self.convert(v, self.dtype_of(k.body), acc_dt) if self.dtype_of(k.body) != acc_dt else v
            if keyed:
                key, cur = self._order_key(v, k.op), b.load(acc)
                b.store(b.select(b.icmp_signed(">" if k.op == "max" else "<", key, cur), key, cur), acc)
            else:
                b.store(self.combine(k.op, b.load(acc), v, acc_dt), acc)

        init = self.identity(k.op, acc_dt)
        b.store(self._order_key(init, k.op) if keyed else init, acc)
        self._forget()
        self.nest([k.space[i] for i in k.axes], inner_red, first_parallel=False, ids=k.axes)
        self._forget()
        res = self._from_order_key(b.load(acc), ty) if keyed else b.load(acc)
        kept = k.kept
        out_idx = self.index(linearize(tuple(E("v", i) for i in kept), [k.space[i] for i in kept]))
        self.store(k.out, out_idx, self.convert(res, acc_dt, k.dtype), k.dtype)

    def emit_reduce(self, k):
        b = self.b
        acc_dt = _acc_dtype(k.dtype)
        kept = k.kept
        if k.register_accumulator:
            # A register accumulator per output element (strided reads when the reduced
            # axes are not innermost); half-precision sums accumulate in float32.
            if kept:
                self.nest([k.space[i] for i in kept], lambda: self._reduce_row(k), ids=kept)
            else:
                self._once(lambda: self._reduce_row(k))
        else:
            # Accumulate into the (pre-initialised) output in the input's row-major order,
            # so the innermost loop runs over contiguous kept elements and vectorises.
            def inner_all():
                v = self.value(k.body)
                v = self.convert(v, self.dtype_of(k.body), acc_dt) if self.dtype_of(k.body) != acc_dt else v
                lin = linearize(tuple(E("v", ax) for ax in kept), [k.space[ax] for ax in kept])
                idx = self.index(lin)
                cur = self.load(k.out, lin, k.dtype)
                cur = self.convert(cur, k.dtype, acc_dt) if k.dtype != acc_dt else cur
                new = self.combine(k.op, cur, v, acc_dt)
                self.store(k.out, idx, self.convert(new, acc_dt, k.dtype) if k.dtype != acc_dt else new, k.dtype)
            self.nest(list(k.space), inner_all, first_parallel=0 in kept)
        b.ret_void()

    def emit_scatter(self, k):
        b = self.b

        def element():
            v = self.value(k.body)
            t = self.index(k.target)
            ok = self.value(k.valid) if k.valid is not None else None
            if ok is not None:
                run = self.fn.append_basic_block("update")
                skip = self.fn.append_basic_block("next")
                b.cbranch(ok, run, skip)
                b.position_at_end(run)
            if k.op == "set":
                new = v
            else:
                cur = self.load(k.out, k.target, k.dtype)
                new = self._combine_scatter(k.op, cur, v, k.dtype)
            self.store(k.out, t, new, k.dtype)
            if ok is not None:
                b.branch(skip)
                b.position_at_end(skip)
            self._forget()

        if k.space:
            self._once(lambda: self.nest(k.space, element, first_parallel=False))
        else:
            self._once(element)
        b.ret_void()

    def _combine_scatter(self, op, cur, v, dt):
        b = self.b
        if op in ("min", "max"):
            return minmax(self, op, cur, v, dt)
        if _is_float(dt):
            return b.fadd(cur, v) if op == "add" else b.fmul(cur, v)
        return b.add(cur, v) if op == "add" else b.mul(cur, v)

    def _product(self, dt):
        """``emit(trans_a, trans_b, m, n, k, A, lda, B, ldb, C, ldc)``: code for
        ``C = op(A) @ op(B)`` through ember's packed gemm (or BLAS with EMBER_GEMM=blas),
        returning what the packed gemm reports for `_fix_nonfinite` (an i1 "some
        element of C is not finite" and the i64 largest exponents of A and of B), or
        None from BLAS, which reports nothing."""
        b = self.b
        if packed_gemm.use_blas():
            fn = blas.declare_gemm(self.m, dt)

            def emit(ta, tb, m, n, k, A, lda, B, ldb, C, ldc):
                i32 = lambda x: b.trunc(x, I32) if isinstance(x, ir.Value) else x  # noqa: E731
                blas.emit_gemm_call(b, fn, dt, ta, tb, i32(m), i32(n), i32(k), 1.0, A, lda, B, ldb, 0.0, C, ldc)
                return None
        else:
            fn = packed_gemm.declare(self.m, dt)

            def emit(ta, tb, m, n, k, A, lda, B, ldb, C, ldc):
                exps = self._alloca(ir.ArrayType(I64, 2))
                first = b.gep(exps, [ir.Constant(I32, 0), ir.Constant(I32, 0)], inbounds=True)
                bad = packed_gemm.emit_call(b, fn, ta, tb, m, n, k, A, lda, B, ldb, C, ldc, first)
                return (b.icmp_unsigned("!=", bad, ir.Constant(I32, 0)), b.load(first),
                        b.load(b.gep(exps, [ir.Constant(I32, 0), ir.Constant(I32, 1)], inbounds=True)))
        return emit

    def emit_gemm(self, k):
        """For each task t in [start, stop): one gemm call computing one block of one
        product, then the epilogue kernels on that block."""
        b = self.b
        dt = np.dtype(k.dtype)
        product = self._product(dt)
        A, B, C = self.ptrs[k.a], self.ptrs[k.b], self.ptrs[k.out]
        m, n, kk = k.m, k.n, k.k
        nr, nc = k.grid
        lda = m if k.trans_a else kk
        ldb = kk if k.trans_b else n
        c64 = lambda v: ir.Constant(I64, v)  # noqa: E731

        def span(idx, block, extent):
            lo = b.mul(idx, c64(block))
            cnt = b.sub(c64(extent), lo)
            return lo, b.select(b.icmp_signed("<", cnt, c64(block)), cnt, c64(block))

        def block(bi, r0, rows, c0, cols):
            a_off = b.add(b.mul(bi, c64(m * kk)), b.mul(r0, c64(1 if k.trans_a else kk)))
            b_off = b.add(b.mul(bi, c64(kk * n)), b.mul(c0, c64(kk if k.trans_b else 1)))
            c_off = b.add(b.add(b.mul(bi, c64(m * n)), b.mul(r0, c64(n))), c0)
            ab, bb, cb = b.gep(A, [a_off], inbounds=True), b.gep(B, [b_off], inbounds=True), b.gep(C, [c_off], inbounds=True)
            report = product(k.trans_a, k.trans_b, rows, cols, kk, ab, lda, bb, ldb, cb, n)
            self._fix_nonfinite(dt, rows, cols, kk, ab, lda, k.trans_a, bb, ldb, k.trans_b, cb, n, report)
            # the epilogues over the block: rows outer, columns inner (contiguous)
            for e in k.epilogue:
                self._forget()

                def outer(v, e=e):
                    self.vars[0] = v

                    def inner(w):
                        self.vars[1] = w
                        self._map_element(e)
                    self.loop(c0, b.add(c0, cols), inner, "e1")
                self.loop(r0, b.add(r0, rows), outer, "e0")
            self._forget()

        def task(t):
            r0, rows = span(b.srem(b.sdiv(t, c64(nc)), c64(nr)), k.mblock, m)
            c0, cols = span(b.srem(t, c64(nc)), k.nblock, n)
            block(b.sdiv(t, c64(nr * nc)), r0, rows, c0, cols)

        if nr * nc > 1:
            # the whole range on one thread: one call per product packs each operand once
            whole = b.and_(b.icmp_signed("==", self.start, c64(0)), b.icmp_signed("==", self.stop, c64(k.tasks)))
            with b.if_else(whole) as (then, otherwise):
                with then:
                    self.loop(c64(0), c64(k.batch), lambda bi: block(bi, c64(0), c64(m), c64(0), c64(n)), "prod")
                with otherwise:
                    self.loop(self.start, self.stop, task, "task")
        else:
            self.loop(self.start, self.stop, task, "task")
        b.ret_void()

    def _fix_nonfinite(self, dt, rows, cols, kk, A, lda, ta, B, ldb, tb, C, ldc, report=None):
        """After a gemm of a rows x cols block: recompute, with the reference's
        arithmetic (contraction.`_recompute_nonfinite`), every element that is not
        finite or whose partial sums could overflow (the exponents of its row's and
        column's largest finite magnitudes, plus log2(k), reach the format's
        maximum), so an infinity or NaN comes only from an overflowing exact result
        or from the operands, never from the FMA accumulation's partial sums, and
        which elements are recomputed does not depend on the accumulation order.
        ``report`` is what the packed gemm returns (`_product`): whether C has a
        non-finite element and the block operands' largest exponents, found in its
        registers and while packing, so ordinary blocks pay no scan at all; without
        it (BLAS) they pay a vectorised scan of the block and of its operands."""
        b = self.b
        ty = compute_type(dt)
        c64 = lambda v: ir.Constant(I64, v)  # noqa: E731
        inf = ir.Constant(ty, float("inf"))
        limit = c64(_overflow_exponent(dt, kk))

        def at(p, ld, trans, i, j):   # element (i, j) of op(p), stored row-major with stride ld
            return b.gep(p, [b.add(b.mul(j, c64(ld)), i) if trans else b.add(b.mul(i, c64(ld)), j)], inbounds=True)

        def nonfinite(x):
            return b.fcmp_unordered("uge", self.intrinsic("llvm.fabs", ty, [x]), inf)

        if report is not None:
            any_bad, ea_all, eb_all = report
        else:
            flag = self._alloca(I32)
            b.store(ir.Constant(I32, 0), flag)

            def scan_row(r):
                self.loop(c64(0), cols, lambda c: b.store(
                    b.or_(b.load(flag), b.zext(nonfinite(b.load(at(C, ldc, False, r, c))), I32)), flag), "nf1")
            self.loop(c64(0), rows, scan_row, "nf0")
            any_bad = b.icmp_unsigned("!=", b.load(flag), ir.Constant(I32, 0))

            # could any element's partial sums overflow?  (the block's largest operands,
            # visited in memory order)
            def block_walk(p, ld, trans, n_i, n_j, name):
                # op(p) is n_i x n_j; stored row-major as n_j x n_i when transposed
                def walk(f):
                    if trans:
                        self.loop(c64(0), n_j, lambda j: self.loop(c64(0), n_i, lambda i: f(at(p, ld, True, i, j)),
                                                                   name + "1"), name + "0")
                    else:
                        self.loop(c64(0), n_i, lambda i: self.loop(c64(0), n_j, lambda j: f(at(p, ld, False, i, j)),
                                                                   name + "1"), name + "0")
                return walk
            ea_all = self._max_exponent(dt, block_walk(A, lda, ta, rows, c64(kk), "nfa"))
            eb_all = self._max_exponent(dt, block_walk(B, ldb, tb, c64(kk), cols, "nfb"))
        risky = b.icmp_signed(">=", b.add(ea_all, eb_all), limit)
        with b.if_then(b.or_(any_bad, risky), likely=False):
            def fix(r, c):
                p = at(C, ldc, False, r, c)
                bad = nonfinite(b.load(p))
                with b.if_then(b.or_(bad, risky)):
                    ea = self._max_exponent(dt, lambda f: self.loop(c64(0), c64(kk), lambda t: f(at(A, lda, ta, r, t)),
                                                                    "nfr"))
                    eb = self._max_exponent(dt, lambda f: self.loop(c64(0), c64(kk), lambda t: f(at(B, ldb, tb, t, c)),
                                                                    "nfc"))
                    with b.if_then(b.or_(bad, b.icmp_signed(">=", b.add(ea, eb), limit))):
                        v = self._scaled_dot(kk, ea, eb, lambda t: at(A, lda, ta, r, t), lambda t: at(B, ldb, tb, t, c))
                        b.store(v if ty == F64 else b.fptrunc(v, ty), p)
            self.loop(c64(0), rows, lambda r: self.loop(c64(0), cols, lambda c: fix(r, c), "nf3"), "nf2")

    def _load_f64(self, p):
        x = self.b.load(p)
        return self.b.fpext(x, F64) if x.type != F64 else x

    def _max_exponent(self, dt, walk):
        """The exponent e (frexp's: m = f * 2**e, 0.5 <= f < 1), at least 0, of the
        largest finite magnitude among the elements `walk(visit)` visits (pointers).
        The maximum is taken over the magnitudes' bit patterns, an integer max that
        vectorises (for finite floats the orders agree)."""
        b = self.b
        ity = _key_type(compute_type(dt))
        m = self._alloca(ity)
        b.store(ir.Constant(ity, 0), m)

        def visit(p):
            mag = packed_gemm.finite_magnitude_bits(b, b.load(p))
            cur = b.load(m)
            b.store(b.select(b.icmp_unsigned(">", mag, cur), mag, cur), m)
        walk(visit)
        return packed_gemm.frexp_exponent(b, b.load(m))

    def _scaled_dot(self, kk, ea, eb, a_ptr, b_ptr):
        """sum_t a[t] * b[t] in float64 with the vectors scaled by 2**-ea and 2**-eb
        (each as two normal factors) so no product or partial sum overflows, scaled
        back at the end by three normal factors; the same operations in the same
        order as contraction.`_recompute_nonfinite`."""
        b = self.b
        c64 = lambda v: ir.Constant(I64, v)  # noqa: E731

        def pow2(e):
            return b.bitcast(b.shl(b.add(e, c64(1023)), c64(52)), F64)

        def halves(e):
            h = b.ashr(e, c64(1))
            return pow2(b.neg(h)), pow2(b.neg(b.sub(e, h)))

        (a1, a2), (b1, b2) = halves(ea), halves(eb)
        acc = self._alloca(F64)
        b.store(ir.Constant(F64, 0.0), acc)

        def step(t):
            x = b.fmul(b.fmul(self._load_f64(a_ptr(t)), a1), a2)
            y = b.fmul(b.fmul(self._load_f64(b_ptr(t)), b1), b2)
            b.store(b.fadd(b.load(acc), b.fmul(x, y)), acc)
        self.loop(c64(0), c64(kk), step, "nfs")
        e = b.add(ea, eb)
        e1 = b.sdiv(e, c64(3))
        e2 = b.sdiv(b.sub(e, e1), c64(2))
        e3 = b.sub(b.sub(e, e1), e2)
        return b.fmul(b.fmul(b.fmul(b.load(acc), pow2(e1)), pow2(e2)), pow2(e3))

    def emit_conv(self, k):
        """For each image n in [start, stop): its patch matrices, then one gemm per group."""
        b = self.b
        c = k.cols
        dt = np.dtype(k.dtype)
        product = self._product(dt)
        X, W, C = self.ptrs[c.out], self.ptrs[k.w], self.ptrs[k.out]
        c64 = lambda v: ir.Constant(I64, v)  # noqa: E731

        def image(n):
            self._forget()
            self.nest(c.shape[1:], lambda: self._map_element(c), first_parallel=False,
                      ids=range(1, len(c.shape)))
            self._forget()
            for g in range(k.groups):
                cols = b.gep(X, [b.add(b.mul(n, c64(k.groups * k.k * k.p)), c64(g * k.k * k.p))], inbounds=True)
                w = b.gep(W, [c64(g * k.og * k.k)], inbounds=True)
                if k.channels_last:
                    # out[n] is P x O: rows p, columns g*Og .. (g+1)*Og
                    out = b.gep(C, [b.add(b.mul(n, c64(k.p * k.og * k.groups)), c64(g * k.og))], inbounds=True)
                    product(True, True, k.p, k.og, k.k, cols, k.p, w, k.k, out, k.og * k.groups)
                else:
                    out = b.gep(C, [b.add(b.mul(n, c64(k.groups * k.og * k.p)), c64(g * k.og * k.p))],
                                inbounds=True)
                    product(False, False, k.og, k.p, k.k, w, k.k, cols, k.p, out, k.p)

        def body(n):
            self.vars[0] = n
            image(n)
        self.loop(self.start, self.stop, body, "img")
        b.ret_void()

    def emit_rows(self, rk):
        r = len(rk.outer)
        for x, target in rk.aliases.items():
            self.ptrs[x] = self.ptrs[target]

        def row():
            for m in rk.members:
                self._forget()
                if isinstance(m, ReduceKernel):
                    self._reduce_row(m)
                else:
                    n = len(m.shape)
                    self.nest(m.shape[r:], lambda m=m: self._map_element(m), first_parallel=False,
                              ids=range(r, n))
            self._forget()
        self.nest(rk.outer, row)
        self.b.ret_void()

    def _alloca(self, ty):
        entry = self.fn.entry_basic_block
        with self.b.goto_block(entry):
            self.b.position_at_start(entry)
            a = self.b.alloca(ty)
        return a

    def identity(self, op, dt):
        dt = np.dtype(dt)
        ty = compute_type(dt)
        if ty == I1:
            return ir.Constant(I1, 1 if op in ("and", "min", "prod") else 0)
        if _is_float(dt):
            return ir.Constant(ty, {"sum": 0.0, "prod": 1.0, "max": float("-inf"), "min": float("inf")}[op])
        if op == "sum":
            return ir.Constant(ty, 0)
        if op == "prod":
            return ir.Constant(ty, 1)
        info = np.iinfo(dt)
        val = info.min if op == "max" else info.max
        return ir.Constant(ty, int(val) & ((1 << ty.width) - 1))

    def combine(self, op, acc, v, dt):
        b = self.b
        fl = _is_float(dt)
        if acc.type == I1:
            if op in ("or", "max", "sum"):
                return b.or_(acc, v)
            return b.and_(acc, v)
        if op == "sum":
            return b.fadd(acc, v, flags=("reassoc",)) if fl else b.add(acc, v)
        if op == "prod":
            return b.fmul(acc, v, flags=("reassoc",)) if fl else b.mul(acc, v)
        if op in ("max", "min"):
            if fl:
                return self.intrinsic("llvm.maximum" if op == "max" else "llvm.minimum", acc.type, [acc, v])
            return minmax(self, op, acc, v, dt)
        if op == "and":
            return b.and_(acc, v)
        if op == "or":
            return b.or_(acc, v)
        raise NotImplementedError(op)


def table_ptr(b, argv, bid, ty, name):
    """Buffer `bid`'s data pointer: `args[bid]` points at the place holding it (the
    data field of the numpy array bound to the buffer, see executable.py)."""
    slot = kernel_arg(b, argv, bid, I8.as_pointer(), name + ".slot")
    return b.bitcast(b.load(slot, name=name + ".data"), ty.as_pointer(), name=name)


TILE = 16


_INDEX_TAGS = frozenset({"v", "c", "+", "*", "/", "%", "clamp", "val"})


def _affine(e):
    """{loop variable: coefficient} of an affine index expression, None otherwise."""
    # terms of the sum with their multipliers, walked with a stack
    out: dict = {}
    stack = [(e, 1)]
    while stack:
        x, k = stack.pop()
        t = x[0]
        if t == "v":
            out[x[1]] = out.get(x[1], 0) + k
        elif t == "+":
            stack.extend(((x[1], k), (x[2], k)))
        elif t == "*":
            stack.append((x[1], k * x[2]))
        elif t != "c":
            return None
    return out


def _transposed_dim(k):
    """For a map kernel that reads some buffer across its innermost loop (stride >=
    16 elements) and along another loop j (stride 1), that j: the nest is tiled."""
    n = len(k.shape)
    if n < 2 or k.shape[-1] < TILE:
        return None
    best = None
    stack, seen = [k.body], set()
    while stack:
        e = stack.pop()
        if type(e) is not E or id(e) in seen:
            continue
        seen.add(id(e))
        if e[0] == "load":
            co = _affine(e[2])
            if co is not None and abs(co.get(n - 1, 0)) >= 16:
                for j in range(n - 2, -1, -1):
                    if co.get(j) == 1 and k.shape[j] >= TILE:
                        best = j if best is None else max(best, j)
                        break
        stack.extend(x for x in e if type(x) is E)
    return best


def _key_type(float_type) -> ir.IntType:
    return ir.IntType(64 if float_type == F64 else 32)


def _acc_dtype(dtype):
    return np.dtype(np.float32) if np.dtype(dtype) in (_dt.float16, _dt.bfloat16) else np.dtype(dtype)


def _lin(shape):
    return linearize(tuple(E("v", i) for i in range(len(shape))), shape)


def generator_fingerprint() -> str:
    """`_sources_fingerprint` plus the matrix-product provider (EMBER_GEMM), which
    changes the code generated for products."""
    return _sources_fingerprint() + ("+blas" if packed_gemm.use_blas() else "")


@functools.lru_cache(maxsize=None)
def _sources_fingerprint() -> str:
    """A hash of the code that turns a scheduled program into machine code (this
    module, the toolkit pieces it emits through, the target attributes and the
    optimisation pipeline), part of the cache key of programs that are looked up
    before their IR is built."""
    import hashlib
    import importlib
    h = hashlib.sha256()
    for name in ("codegen", "ops", "mathlib", "_coefficients", "blas", "packed_gemm", "runtime", "target", "compiler"):
        with open(importlib.import_module(f"{__package__}.{name}").__file__, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def kernel_names(prog) -> list[str]:
    """The names of the functions `render_program` defines for `prog`."""
    return [s.name for s in prog.steps if isinstance(s, (MapKernel, ReduceKernel, RowKernel, ConvKernel,
                                                          ScatterKernel, GemmKernel))]


def render_program(prog, module_name: str) -> tuple[str, list[str]]:
    """LLVM IR text for every kernel of `prog`, and the kernel names.  Kernels
    find their buffers in one pointer table indexed by buffer id."""
    module = ir.Module(name=module_name)
    names = []
    for step in prog.steps:
        if isinstance(step, MapKernel):
            _KernelEmitter(module, step.name, step.inputs + [step.out], prog.buffers).emit_map(step)
        elif isinstance(step, ReduceKernel):
            _KernelEmitter(module, step.name, step.inputs + [step.out], prog.buffers).emit_reduce(step)
        elif isinstance(step, RowKernel):
            _KernelEmitter(module, step.name, step.inputs + step.outs, prog.buffers).emit_rows(step)
        elif isinstance(step, ConvKernel):
            _KernelEmitter(module, step.name, step.inputs + [step.cols.out, step.out],
                           prog.buffers).emit_conv(step)
        elif isinstance(step, ScatterKernel):
            _KernelEmitter(module, step.name, step.inputs + [step.out], prog.buffers).emit_scatter(step)
        elif isinstance(step, GemmKernel):
            _KernelEmitter(module, step.name, step.inputs + step.outs, prog.buffers).emit_gemm(step)
        else:
            continue
        names.append(step.name)
    return str(module), names
