"""The LLVM lowering of each elementwise primitive, keyed by the primitive object.

A lowering is ``fn(em, vals, in_dt, dtype, params) -> ir.Value``: `em` is the
kernel emitter (its builder `em.b`, `em.intrinsic`, `em.convert`), `vals` the
operands' compute-type values, `in_dt` the first operand's dtype, `dtype` the
result's and `params` the expression's static parameters.  The code generator
finds the lowering of an ``("op", name, ...)`` expression through `lowering_of`;
an elementwise primitive with no lowering must be listed in `LIBRARY_STEPS`,
with the reason, and then runs as a library step (its numpy impl): the
coverage test (tests/backends/test_lowering_coverage.py) holds both to that.

`supports(eq)` is the backend's answer to the scheduler's "can this equation be
a kernel here?".

Example:
    >>> from ember.fx.prims import elementwise as ew
    >>> ew.exp_p in LOWERINGS, ew.lgamma_p in LIBRARY_STEPS
    (True, True)
"""
from __future__ import annotations


import numpy as np
import llvmlite.ir as ir

from ... import dtypes as _dt
from ...fx.core import PRIMITIVES, Primitive
from ...fx.prims import convert as _cv, elementwise as ew
from ..kernels.lowerings import LoweringTable, renders
from . import blas, mathlib, packed_gemm

I1, I8, I16, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()

LOWERINGS = LoweringTable("LLVM")
# Elementwise primitives this backend runs as library steps on purpose.
LIBRARY_STEPS: dict[Primitive, str] = {
    ew.lgamma_p: "mathlib.py has no vectorisable lgamma with a measured ulp bound",
    ew.digamma_p: "mathlib.py has no vectorisable digamma with a measured ulp bound",
    ew.polygamma_p: "mathlib.py has no vectorisable polygamma with a measured ulp bound",
    ew.erf_inv_p: "mathlib.py has no vectorisable erf_inv with a measured ulp bound",
    ew.real_p: "complex values are not supported in kernels (its operand is complex)",
    ew.imag_p: "complex values are not supported in kernels (its operand is complex)",
    ew.complex_p: "complex values are not supported in kernels (its result is complex)",
}
_NATIVE_DTYPES = set(_dt.ALL_DTYPES) - set(_dt.COMPLEX)
# primitives whose lowering is a mathlib function of the same name
_MATH = (ew.exp_p, ew.exp2_p, ew.log_p, ew.log1p_p, ew.expm1_p, ew.tanh_p, ew.logistic_p, ew.sin_p, ew.cos_p,
         ew.tan_p, ew.asin_p, ew.acos_p, ew.atan_p, ew.sinh_p, ew.cosh_p, ew.asinh_p, ew.acosh_p, ew.atanh_p,
         ew.cbrt_p, ew.erf_p, ew.erfc_p, ew.pow_p, ew.atan2_p)


# registration and lookup by name: one mechanism for every backend (kernels/lowerings.py)
lowering = LOWERINGS.register
lowering_of = LOWERINGS.of


def supports(eq) -> bool:
    """Can this backend render the (fusible) equation?  Complex values and
    primitives without a lowering here go to library steps.

    Example:
        >>> import ember, numpy as np
        >>> from ember import lax
        >>> g = ember.make_graph(lambda x: lax.lgamma(lax.exp(x)))(np.ones(3, np.float32))
        >>> [supports(eq) for eq in g.equations]
        [True, False]
    """
    return renders(eq, _NATIVE_DTYPES, LOWERINGS, lambda e: _gemm_available(),
                   lambda prim: prim not in _MATH or mathlib.supported(prim.name))


def _gemm_available() -> bool:
    return blas.available() if packed_gemm.use_blas() else True


def storage_type(dtype) -> ir.Type:
    """The LLVM type a buffer of `dtype` stores its elements as."""
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
    """The LLVM type kernels compute `dtype` values in (half precision: float32)."""
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


def _intrinsic_int(em, name, ty, args):
    """Call the integer intrinsic `name.iN` (ctpop, ctlz) with `args`."""
    full = f"{name}.i{ty.width}"
    fn = em.m.globals.get(full)
    if fn is None:
        fn = ir.Function(em.m, ir.FunctionType(ty, [a.type for a in args]), name=full)
    return em.b.call(fn, args)


# --- math ----------------------------------------------------------------------------

def _math(name):
    def fn(em, vals, in_dt, dtype, params):
        return mathlib.emit(em.b, name, vals, vals[0].type)
    return fn


for _p in _MATH:
    LOWERINGS[_p] = _math(_p.name)


def _float_intrinsic(name):
    def fn(em, vals, in_dt, dtype, params):
        return em.intrinsic(name, vals[0].type, vals)
    return fn


for _p, _name in ((ew.floor_p, "llvm.floor"), (ew.ceil_p, "llvm.ceil"), (ew.round_p, "llvm.rint")):
    LOWERINGS[_p] = _float_intrinsic(_name)

LOWERINGS[ew.sqrt_p] = _float_intrinsic("llvm.sqrt")


@lowering(ew.rsqrt_p)
def _rsqrt(em, vals, in_dt, dtype, params):
    ty = vals[0].type
    return em.b.fdiv(ir.Constant(ty, 1.0), em.intrinsic("llvm.sqrt", ty, vals))


# --- structure ----------------------------------------------------------------------

@lowering(ew.select_n_p)
def _select_n(em, vals, in_dt, dtype, params):
    b = em.b
    which, *cases = vals
    if len(cases) == 1:
        return cases[0]
    if which.type == I1:
        return b.select(which, cases[1], cases[0])
    res = cases[0]
    # an unsigned selector with its top bit set is a large index (the last case), not a
    # negative one
    cmp = b.icmp_signed if _is_signed(in_dt) else b.icmp_unsigned
    for i, c in enumerate(cases[1:], 1):
        cond = cmp(">=", which, ir.Constant(which.type, i))
        res = b.select(cond, c, res)
    return res


@lowering(_cv.convert_element_type_p)
def _convert(em, vals, in_dt, dtype, params):
    return em.convert(vals[0], in_dt, dtype)


@lowering(ew.clamp_p)
def _clamp(em, vals, in_dt, dtype, params):
    lo, x, hi = vals
    return minmax(em, "min", minmax(em, "max", x, lo, in_dt), hi, in_dt)


@lowering(ew.conj_p)
def _identity(em, vals, in_dt, dtype, params):
    # conj: supports() admits only real operands, whose conjugate is themselves
    return vals[0]


# --- arithmetic -----------------------------------------------------------------------

def _arith(name):
    def fn(em, vals, in_dt, dtype, params):
        b = em.b
        if in_dt == _dt.bool_:
            return b.or_(*vals) if name == "add" else (b.and_(*vals) if name == "mul" else b.xor(*vals))
        if _is_float(in_dt):
            return {"add": b.fadd, "sub": b.fsub, "mul": b.fmul}[name](*vals)
        return {"add": b.add, "sub": b.sub, "mul": b.mul}[name](*vals)
    return fn


for _p in (ew.add_p, ew.sub_p, ew.mul_p):
    LOWERINGS[_p] = _arith(_p.name)


@lowering(ew.div_p)
def _div(em, vals, in_dt, dtype, params):
    return em.b.fdiv(*vals) if _is_float(in_dt) else _int_div(em, vals[0], vals[1], in_dt)


@lowering(ew.rem_p)
def _rem(em, vals, in_dt, dtype, params):
    return em.b.frem(*vals) if _is_float(in_dt) else _int_rem(em, vals[0], vals[1], in_dt)


@lowering(ew.neg_p)
def _neg(em, vals, in_dt, dtype, params):
    return em.b.fneg(vals[0]) if _is_float(in_dt) else em.b.neg(vals[0])


def _max_min(name):
    def fn(em, vals, in_dt, dtype, params):
        return minmax(em, name, vals[0], vals[1], in_dt)
    return fn


for _p in (ew.max_p, ew.min_p):
    LOWERINGS[_p] = _max_min(_p.name)

_PRED = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _compare(name):
    pred = _PRED[name]

    def fn(em, vals, in_dt, dtype, params):
        b = em.b
        x, y = vals
        if _is_float(in_dt):
            if name == "ne":
                return b.fcmp_unordered("!=", x, y)
            return b.fcmp_ordered(pred, x, y)
        if _is_signed(in_dt):
            return b.icmp_signed(pred, x, y)
        return b.icmp_unsigned(pred, x, y)
    return fn


for _p in (ew.eq_p, ew.ne_p, ew.lt_p, ew.le_p, ew.gt_p, ew.ge_p):
    LOWERINGS[_p] = _compare(_p.name)


@lowering(ew.abs_p)
def _abs(em, vals, in_dt, dtype, params):
    ty = vals[0].type
    if _is_float(in_dt):
        return em.intrinsic("llvm.fabs", ty, vals)
    if not _is_signed(in_dt):
        return vals[0]
    x = vals[0]
    return em.b.select(em.b.icmp_signed("<", x, ir.Constant(ty, 0)), em.b.neg(x), x)


@lowering(ew.sign_p)
def _sign(em, vals, in_dt, dtype, params):
    b = em.b
    x = vals[0]
    ty = x.type
    if _is_float(in_dt):
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


@lowering(ew.is_finite_p)
def _is_finite(em, vals, in_dt, dtype, params):
    ty = vals[0].type
    a = em.intrinsic("llvm.fabs", ty, vals)
    return em.b.fcmp_ordered("<", a, ir.Constant(ty, float("inf")))


@lowering(ew.square_p)
def _square(em, vals, in_dt, dtype, params):
    x = vals[0]
    return em.b.fmul(x, x) if _is_float(in_dt) else em.b.mul(x, x)


@lowering(ew.integer_pow_p)
def _integer_pow(em, vals, in_dt, dtype, params):
    return _ipow(em, vals[0], params["y"], _is_float(in_dt), vals[0].type)


# --- bits -------------------------------------------------------------------------------

@lowering(ew.and_p)
def _and(em, vals, in_dt, dtype, params):
    return em.b.and_(*vals)


@lowering(ew.or_p)
def _or(em, vals, in_dt, dtype, params):
    return em.b.or_(*vals)


@lowering(ew.xor_p)
def _xor(em, vals, in_dt, dtype, params):
    return em.b.xor(*vals)


@lowering(ew.not_p)
def _not(em, vals, in_dt, dtype, params):
    return em.b.not_(vals[0])


def _shift(name):
    def fn(em, vals, in_dt, dtype, params):
        b = em.b
        x, y = vals
        ty = x.type
        bits = ir.Constant(ty, ty.width)
        big = b.icmp_unsigned(">=", y, bits)  # negative counts are huge as unsigned
        safe = b.select(big, ir.Constant(ty, 0), y)
        if name == "shift_left":
            return b.select(big, ir.Constant(ty, 0), b.shl(x, safe))
        if name == "shift_right_logical":
            return b.select(big, ir.Constant(ty, 0), b.lshr(x, safe))
        fill = b.ashr(x, ir.Constant(ty, ty.width - 1))
        return b.select(big, fill, b.ashr(x, safe))
    return fn


for _p in (ew.shift_left_p, ew.shift_right_arithmetic_p, ew.shift_right_logical_p):
    LOWERINGS[_p] = _shift(_p.name)


@lowering(ew.population_count_p)
def _population_count(em, vals, in_dt, dtype, params):
    return _intrinsic_int(em, "llvm.ctpop", vals[0].type, vals)


@lowering(ew.clz_p)
def _clz(em, vals, in_dt, dtype, params):
    # is_zero_poison = false: clz(0) is the bit width, as the reference says
    return _intrinsic_int(em, "llvm.ctlz", vals[0].type, [vals[0], ir.Constant(I1, 0)])


@lowering(ew.nextafter_p)
def _nextafter(em, vals, in_dt, dtype, params):
    """The next representable value of `in_dt` after x toward y (C's nextafter):
    one step of the bit pattern, taken in the storage format (half precision
    values are exact in their float32 compute values)."""
    b = em.b
    x, y = vals
    d = np.dtype(in_dt)
    width = d.itemsize * 8
    ity = ir.IntType(width)
    if d == _dt.float16:
        bits = b.bitcast(b.fptrunc(x, F16), I16)
    elif d == _dt.bfloat16:
        bits = b.trunc(b.lshr(b.bitcast(x, I32), ir.Constant(I32, 16)), I16)
    else:
        bits = b.bitcast(x, ity)
    zero = ir.Constant(x.type, 0.0)
    up = b.fcmp_ordered(">", y, x)
    positive = b.fcmp_ordered(">", x, zero)
    stepped = b.select(b.icmp_unsigned("==", up, positive), b.add(bits, ir.Constant(ity, 1)),
                       b.sub(bits, ir.Constant(ity, 1)))
    # from +-0 the step is the smallest subnormal with y's sign
    ysign = b.icmp_signed("<", b.bitcast(y, _dt_int(y.type)), ir.Constant(_dt_int(y.type), 0))
    tiny = b.select(ysign, ir.Constant(ity, (1 << (width - 1)) | 1), ir.Constant(ity, 1))
    stepped = b.select(b.fcmp_ordered("==", x, zero), tiny, stepped)
    if d == _dt.float16:
        r = b.fpext(b.bitcast(stepped, F16), F32)
    elif d == _dt.bfloat16:
        r = b.bitcast(b.shl(b.zext(stepped, I32), ir.Constant(I32, 16)), F32)
    else:
        r = b.bitcast(stepped, x.type)
    # equal operands give y (C, XLA: nextafter(+-0, -+0) is -+0)
    r = b.select(b.fcmp_ordered("==", x, y), y, r)
    return b.select(b.fcmp_unordered("uno", x, y), b.fadd(x, y), r)


@lowering(_cv.reduce_precision_p)
def _reduce_precision(em, vals, in_dt, dtype, params):
    """XLA's ReducePrecision on the storage format's bit pattern (as the reference:
    convert.py's `_rp_impl`), so half precision subnormals round as float16 does."""
    b = em.b
    (x,) = vals
    d = np.dtype(in_dt)
    ut, E, M = _cv.FLOAT_LAYOUT[d.name]
    e, m = params["exponent_bits"], params["mantissa_bits"]
    if e >= E and m >= M:
        return x
    width = d.itemsize * 8
    ity = ir.IntType(width)

    def c(v):
        return ir.Constant(ity, int(v) & ((1 << width) - 1))
    if d == _dt.float16:
        u = b.bitcast(b.fptrunc(x, F16), I16)
    elif d == _dt.bfloat16:
        u = b.trunc(b.lshr(b.bitcast(x, I32), ir.Constant(I32, 16)), I16)
    else:
        u = b.bitcast(x, ity)
    if m < M:
        shift = M - m
        lsb = b.and_(b.lshr(u, c(shift)), c(1))
        u = b.and_(b.add(b.add(u, lsb), c((1 << (shift - 1)) - 1)), c(~((1 << shift) - 1)))
    if e < E:
        bias, rbias = (1 << (E - 1)) - 1, (1 << (e - 1)) - 1
        field = b.and_(u, c(((1 << E) - 1) << M))
        signed_zero = b.and_(u, c(1 << (width - 1)))
        u = b.select(b.icmp_unsigned("<=", field, c((bias - rbias) << M)), signed_zero, u)
        u = b.select(b.icmp_unsigned(">", field, c((bias + rbias) << M)),
                     b.or_(signed_zero, c(((1 << E) - 1) << M)), u)
    if d == _dt.float16:
        r = b.fpext(b.bitcast(u, F16), F32)
    elif d == _dt.bfloat16:
        r = b.bitcast(b.shl(b.zext(u, I32), ir.Constant(I32, 16)), F32)
    else:
        r = b.bitcast(u, x.type)
    return b.select(b.fcmp_unordered("uno", x, x), x, r)


def _dt_int(float_type):
    return I64 if float_type == F64 else I32


# --- helpers the kernel emitters share ----------------------------------------------------

def minmax(em, name, x, y, dt):
    """max/min of two compute values of dtype `dt` (floats: IEEE 754-2019
    maximum/minimum, NaN propagates and -0.0 < +0.0, the reference's
    ieee_maximum/ieee_minimum)."""
    b = em.b
    if _is_float(dt):
        return em.intrinsic("llvm.maximum" if name == "max" else "llvm.minimum", x.type, [x, y])
    if x.type == I1:
        return b.or_(x, y) if name == "max" else b.and_(x, y)
    cmp = b.icmp_signed if _is_signed(dt) else b.icmp_unsigned
    return b.select(cmp(">" if name == "max" else "<", x, y), x, y)


def _int_div(em, x, y, dt):
    b = em.b
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


def _int_rem(em, x, y, dt):
    b = em.b
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


def _ipow(em, x, n, fl, ty):
    b = em.b
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


# stop_gradient and checkpoint_name are defined in ember.transforms, above the
# backends in the layering, so they are found through the registry (the
# scheduler drops them from expressions; the entries keep the table whole)
for _name in ("stop_gradient", "checkpoint_name"):
    if _name in PRIMITIVES:
        LOWERINGS[PRIMITIVES[_name]] = _identity
