"""Render scheduled loop kernels (ember.backends.kernels) as LLVM IR.

Every kernel follows the runtime ABI `void k(i64 start, i64 stop, i8** args)`
with `args` = the kernel's input buffers then its output buffer; [start, stop)
ranges over the outermost loop, which the runtime splits across threads.

Numeric semantics match the numpy reference: float16/bfloat16 are stored in
their format, computed in float32 and rounded after every primitive; integer
division by zero gives -1 (remainder: the dividend); float->int conversion
truncates and saturates with NaN -> 0; max/min propagate NaN.  Reductions put
`reassoc` on the accumulating operation only (so they vectorise) and no other
fast-math flags anywhere.

Example:
    >>> import ember, numpy as np
    >>> from ember import lax
    >>> from ember.backends.kernels import schedule
    >>> g = ember.make_graph(lambda x: lax.exp(x))(np.ones(4, np.float32))
    >>> "k1_exp" in render_program(schedule(g, supports), "m")[0]
    True
"""
from __future__ import annotations

import numpy as np
import llvmlite.ir as ir

from ... import dtypes as _dt
from ..kernels.loop_ir import E, MapKernel, ReduceKernel, iadd, imul, linearize
from ..kernels.schedule import ELEMENTWISE, MOVEMENT, REDUCERS
from . import mathlib
from .runtime import declare_kernel, kernel_arg

I1, I8, I16, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()

_MATH = {"exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "asin",
         "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "cbrt", "erf", "erfc"}
_NATIVE_DTYPES = set(_dt.ALL_DTYPES) - set(_dt.COMPLEX)


def supports(eq) -> bool:
    """Can this backend render the (fusible) equation?  Complex values and
    functions without a vectorisable implementation go to library steps."""
    for v in list(eq.inputs) + list(eq.outputs):
        if v.aval.dtype not in _NATIVE_DTYPES:
            return False
    n = eq.prim.name
    if n in _MATH:
        return mathlib.supported(n)
    return n in ELEMENTWISE or n in MOVEMENT or n in REDUCERS


def storage_type(dtype) -> ir.Type:
    d = np.dtype(dtype)
    if d == _dt.bool_:
        return I8
    if d == _dt.bfloat16:
        return I16
    if d == _dt.float16:
        return F16
    if d == _dt.float32:
        return F32
    if d == _dt.float64:
        return F64
    return ir.IntType(d.itemsize * 8)


def compute_type(dtype) -> ir.Type:
    d = np.dtype(dtype)
    if d == _dt.bool_:
        return I1
    if d in (_dt.float16, _dt.bfloat16, _dt.float32):
        return F32
    if d == _dt.float64:
        return F64
    return ir.IntType(d.itemsize * 8)


def _is_float(d):
    return _dt.is_float(np.dtype(d))


def _is_signed(d):
    return np.dtype(d).kind == "i"


class _KernelEmitter:
    def __init__(self, module, kernel, buffers):
        self.m = module
        self.k = kernel
        self.buffers = buffers
        self.args = list(kernel.inputs) + [kernel.out]
        self.fn, self.start, self.stop, self.argv = declare_kernel(module, kernel.name)
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.ptrs = {}
        for j, bid in enumerate(self.args):
            self.ptrs[bid] = kernel_arg(self.b, self.argv, j, storage_type(buffers[bid].dtype), f"b{bid}")
        self.vars = {}
        self.memo = {}
        self.imemo = {}

    # --- loops --------------------------------------------------------------------------
    def loop(self, lo, hi, body, name):
        """for v in [lo, hi): body(v); lo/hi are i64 values."""
        b = self.b
        pre = b.block
        head = self.fn.append_basic_block(f"{name}.body")
        exit_ = self.fn.append_basic_block(f"{name}.exit")
        b.cbranch(b.icmp_signed("<", lo, hi), head, exit_)
        b.position_at_end(head)
        v = b.phi(I64, name=name)
        v.add_incoming(lo, pre)
        body(v)
        nxt = b.add(v, ir.Constant(I64, 1))
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

    # --- index expressions -----------------------------------------------------------------
    def index(self, e):
        hit = self.imemo.get(e)
        if hit is not None:
            return hit
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
        self.imemo[e] = r
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

    def value(self, e):
        hit = self.memo.get(e)
        if hit is not None:
            return hit
        t = e[0]
        if t == "load":
            r = self.load(e[1], e[2], e[3])
        elif t == "const":
            r = self.const(e[1], e[2])
        elif t == "index":
            r = self.convert(self.index(e[1]), np.dtype(np.int64), e[2])
        elif t == "op":
            r = self.op(e[1], dict(e[2]), e[3], e[4:])
            if np.dtype(e[3]) in (_dt.float16, _dt.bfloat16):
                r = self.round_lowp(r, e[3])
        else:
            raise ValueError(f"unknown value expression {e!r}")
        self.memo[e] = r
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
        b = self.b
        vals = [self.value(a) for a in arg_exprs]
        in_dt = self.dtype_of(arg_exprs[0]) if arg_exprs else np.dtype(dtype)
        if name == "select_n":
            which, *cases = vals
            if len(cases) == 1:
                return cases[0]
            if which.type == I1:
                return b.select(which, cases[1], cases[0])
            res = cases[0]
            for i, c in enumerate(cases[1:], 1):
                cond = b.icmp_signed(">=", which, ir.Constant(which.type, i))
                res = b.select(cond, c, res)
            return res
        if name == "convert_element_type":
            return self.convert(vals[0], in_dt, dtype)
        if name == "clamp":
            lo, x, hi = vals
            return self._minmax("min", self._minmax("max", x, lo, in_dt), hi, in_dt)
        fl = _is_float(in_dt)
        ty = vals[0].type if vals else compute_type(dtype)
        if name in _MATH:
            return mathlib.emit(b, name, vals, ty)
        if name in ("add", "sub", "mul"):
            if in_dt == _dt.bool_:
                return b.or_(*vals) if name == "add" else (b.and_(*vals) if name == "mul" else b.xor(*vals))
            if fl:
                return {"add": b.fadd, "sub": b.fsub, "mul": b.fmul}[name](*vals)
            return {"add": b.add, "sub": b.sub, "mul": b.mul}[name](*vals)
        if name == "div":
            return b.fdiv(*vals) if fl else self._int_div(vals[0], vals[1], in_dt)
        if name == "rem":
            return b.frem(*vals) if fl else self._int_rem(vals[0], vals[1], in_dt)
        if name == "neg":
            return b.fneg(vals[0]) if fl else b.neg(vals[0])
        if name in ("max", "min"):
            return self._minmax(name, vals[0], vals[1], in_dt)
        if name in ("eq", "ne", "lt", "le", "gt", "ge"):
            x, y = vals
            if fl:
                pred = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[name]
                if name == "ne":
                    return b.fcmp_unordered("!=", x, y)
                return b.fcmp_ordered(pred, x, y)
            pred = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[name]
            if _is_signed(in_dt):
                return b.icmp_signed(pred, x, y)
            return b.icmp_unsigned(pred, x, y)
        if name == "and":
            return b.and_(*vals)
        if name == "or":
            return b.or_(*vals)
        if name == "xor":
            return b.xor(*vals)
        if name == "not":
            return b.not_(vals[0])
        if name in ("shift_left", "shift_right_arithmetic", "shift_right_logical"):
            x, y = vals
            bits = ir.Constant(ty, ty.width)
            big = b.icmp_unsigned(">=", y, bits)  # negative counts are huge as unsigned
            safe = b.select(big, ir.Constant(ty, 0), y)
            if name == "shift_left":
                return b.select(big, ir.Constant(ty, 0), b.shl(x, safe))
            if name == "shift_right_logical":
                return b.select(big, ir.Constant(ty, 0), b.lshr(x, safe))
            fill = b.ashr(x, ir.Constant(ty, ty.width - 1))
            return b.select(big, fill, b.ashr(x, safe))
        if name == "abs":
            if fl:
                return self.intrinsic("llvm.fabs", ty, vals)
            if not _is_signed(in_dt):
                return vals[0]
            x = vals[0]
            return b.select(b.icmp_signed("<", x, ir.Constant(ty, 0)), b.neg(x), x)
        if name == "sign":
            x = vals[0]
            if fl:
                one, mone, zero = ir.Constant(ty, 1.0), ir.Constant(ty, -1.0), ir.Constant(ty, 0.0)
                # numpy: sign(+-0) = +0, sign(NaN) = NaN
                r = b.select(b.fcmp_ordered("==", x, zero), zero, x)
                r = b.select(b.fcmp_ordered("<", x, zero), mone, r)
                return b.select(b.fcmp_ordered(">", x, zero), one, r)
            zero, one = ir.Constant(ty, 0), ir.Constant(ty, 1)
            if not _is_signed(in_dt):
                return b.select(b.icmp_unsigned(">", x, zero), one, zero)
            r = b.select(b.icmp_signed("<", x, zero), ir.Constant(ty, -1), zero)
            return b.select(b.icmp_signed(">", x, zero), one, r)
        if name in ("floor", "ceil", "round"):
            return self.intrinsic({"floor": "llvm.floor", "ceil": "llvm.ceil", "round": "llvm.rint"}[name], ty, vals)
        if name == "sqrt":
            return self.intrinsic("llvm.sqrt", ty, vals)
        if name == "rsqrt":
            return b.fdiv(ir.Constant(ty, 1.0), self.intrinsic("llvm.sqrt", ty, vals))
        if name == "is_finite":
            a = self.intrinsic("llvm.fabs", ty, vals)
            return b.fcmp_ordered("<", a, ir.Constant(ty, float("inf")))
        if name == "square":
            return b.fmul(vals[0], vals[0]) if fl else b.mul(vals[0], vals[0])
        if name == "integer_pow":
            return self._ipow(vals[0], params["y"], fl, ty)
        if name == "pow":
            return mathlib.emit(b, "pow", vals, ty)
        if name == "atan2":
            return mathlib.emit(b, "atan2", vals, ty)
        raise NotImplementedError(f"LLVM lowering of {name}")

    def _minmax(self, name, x, y, dt):
        b = self.b
        if _is_float(dt):
            # numpy semantics: NaN propagates; otherwise the comparison picks.
            keep_x = b.fcmp_ordered(">=" if name == "max" else "<=", x, y)
            keep_x = b.or_(keep_x, b.fcmp_unordered("uno", x, x))
            return b.select(keep_x, x, y)
        if x.type == I1:
            return b.or_(x, y) if name == "max" else b.and_(x, y)
        cmp = b.icmp_signed if _is_signed(dt) else b.icmp_unsigned
        return b.select(cmp(">" if name == "max" else "<", x, y), x, y)

    def _int_div(self, x, y, dt):
        b = self.b
        ty = x.type
        zero = ir.Constant(ty, 0)
        y0 = b.icmp_unsigned("==", y, zero)
        if _is_signed(dt):
            mn = ir.Constant(ty, -(1 << (ty.width - 1)))
            ovf = b.and_(b.icmp_signed("==", x, mn), b.icmp_signed("==", y, ir.Constant(ty, -1)))
            safe = b.select(b.or_(y0, ovf), ir.Constant(ty, 1), y)
            q = b.sdiv(x, safe)
            q = b.select(ovf, mn, q)
        else:
            safe = b.select(y0, ir.Constant(ty, 1), y)
            q = b.udiv(x, safe)
        return b.select(y0, ir.Constant(ty, -1), q)

    def _int_rem(self, x, y, dt):
        b = self.b
        ty = x.type
        zero = ir.Constant(ty, 0)
        y0 = b.icmp_unsigned("==", y, zero)
        if _is_signed(dt):
            mn = ir.Constant(ty, -(1 << (ty.width - 1)))
            ovf = b.and_(b.icmp_signed("==", x, mn), b.icmp_signed("==", y, ir.Constant(ty, -1)))
            safe = b.select(b.or_(y0, ovf), ir.Constant(ty, 1), y)
            r = b.select(ovf, zero, b.srem(x, safe))
        else:
            safe = b.select(y0, ir.Constant(ty, 1), y)
            r = b.urem(x, safe)
        return b.select(y0, x, r)

    def _ipow(self, x, n, fl, ty):
        b = self.b
        one = ir.Constant(ty, 1.0 if fl else 1)
        mul = b.fmul if fl else b.mul
        if n == 0:
            return one
        acc, base, k = None, x, abs(n)
        while k:
            if k & 1:
                acc = base if acc is None else mul(acc, base)
            k >>= 1
            if k:
                base = mul(base, base)
        if n < 0:
            return b.fdiv(one, acc)
        return acc

    # --- kernels -----------------------------------------------------------------------------------
    def emit_map(self):
        k = self.k
        out_dt = self.buffers[k.out].dtype

        def inner():
            v = self.value(k.body)
            idx = self.index(_lin(k.shape))
            self.store(k.out, idx, v, out_dt)

        if not k.shape:
            # rank 0: one element, done by whichever range contains 0
            b = self.b
            run = self.fn.append_basic_block("scalar")
            done = self.fn.append_basic_block("done")
            b.cbranch(b.icmp_signed("<", self.start, self.stop), run, done)
            b.position_at_end(run)
            inner()
            b.branch(done)
            b.position_at_end(done)
        else:
            self.nest(k.shape, inner)
        self.b.ret_void()

    def emit_reduce(self):
        k = self.k
        b = self.b
        acc_dt = np.dtype(np.float32) if k.dtype in (_dt.float16, _dt.bfloat16) else k.dtype
        aty = compute_type(acc_dt)
        kept = k.kept
        if k.register_accumulator:
            # A register accumulator per output element (strided reads when the reduced
            # axes are not innermost); half-precision sums accumulate in float32.
            acc = self._alloca(aty)
            kept_dims = [k.space[i] for i in kept]
            red_dims = [k.space[i] for i in k.axes]

            def inner_red():
                v = self.value(k.body)
                v = self.convert(v, self.dtype_of(k.body), acc_dt) if self.dtype_of(k.body) != acc_dt else v
                b.store(self.combine(k.op, b.load(acc), v, acc_dt), acc)

            def per_output():
                b.store(self.identity(k.op, acc_dt), acc)
                self.memo.clear()
                self.imemo.clear()
                self.nest(red_dims, inner_red, first_parallel=False, ids=k.axes)
                # values memoised inside the reduction loop do not dominate what follows
                self.memo.clear()
                self.imemo.clear()
                res = b.load(acc)
                from ..kernels.loop_ir import linearize
                out_idx = self.index(linearize(tuple(E("v", i) for i in kept), [k.space[i] for i in kept]))
                self.store(k.out, out_idx, self.convert(res, acc_dt, k.dtype), k.dtype)

            if kept_dims:
                self.nest(kept_dims, per_output, ids=kept)
            else:
                run = self.fn.append_basic_block("scalar")
                done = self.fn.append_basic_block("done")
                b.cbranch(b.icmp_signed("<", self.start, self.stop), run, done)
                b.position_at_end(run)
                per_output()
                b.branch(done)
                b.position_at_end(done)
        else:
            # Accumulate into the (pre-initialised) output in the input's row-major order,
            # so the innermost loop runs over contiguous kept elements and vectorises.
            pos = {ax: j for j, ax in enumerate(kept)}

            def inner_all():
                v = self.value(k.body)
                v = self.convert(v, self.dtype_of(k.body), acc_dt) if self.dtype_of(k.body) != acc_dt else v
                lin = E("c", 0)
                from ..kernels.loop_ir import iadd, imul
                for ax in kept:
                    lin = iadd(imul(lin, k.space[ax]), E("v", ax))
                idx = self.index(lin)
                cur = self.load(k.out, lin, k.dtype)
                cur = self.convert(cur, k.dtype, acc_dt) if k.dtype != acc_dt else cur
                new = self.combine(k.op, cur, v, acc_dt)
                self.store(k.out, idx, self.convert(new, acc_dt, k.dtype) if k.dtype != acc_dt else new, k.dtype)
            self.nest(list(k.space), inner_all, first_parallel=0 in pos)
        b.ret_void()

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
            return self._minmax(op, acc, v, dt)
        if op == "and":
            return b.and_(acc, v)
        if op == "or":
            return b.or_(acc, v)
        raise NotImplementedError(op)


def _lin(shape):
    from ..kernels.loop_ir import linearize
    return linearize(tuple(E("v", i) for i in range(len(shape))), shape)


def render_program(prog, module_name: str) -> tuple[str, list[str]]:
    """LLVM IR text for every kernel of `prog`, and the kernel names."""
    module = ir.Module(name=module_name)
    names = []
    for step in prog.steps:
        if isinstance(step, MapKernel):
            _KernelEmitter(module, step, prog.buffers).emit_map()
            names.append(step.name)
        elif isinstance(step, ReduceKernel):
            _KernelEmitter(module, step, prog.buffers).emit_reduce()
            names.append(step.name)
    return str(module), names
