"""The CUDA C lowering of each elementwise primitive, keyed by the primitive object.

A lowering is ``fn(em, vals, in_dt, dtype, params) -> str``: `em` is the kernel
body being written (`em.tmp(dtype, expr)` binds a local, `em.convert` converts),
`vals` the operands' names (locals of their compute type: `float` for float16,
bfloat16 and float32, `double`, `bool`, the integer's C type), `in_dt` the first
operand's dtype, `dtype` the result's; it returns a C expression of the result's
compute type.  As in `backends/llvm/ops.py`, an elementwise primitive with no
lowering is listed in `LIBRARY_STEPS` with the reason, and the coverage test
(tests/backends/test_lowering_coverage.py) holds both to that.

Arithmetic on floats goes through CUDA's `__fadd_rn`-style intrinsics, which
the compiler never contracts into a fused multiply-add, so `-fmad` cannot
change a result; integer arithmetic wraps through unsigned types (signed
overflow is undefined in C++).  Transcendentals are CUDA's math library
(`expf`, `tanhf`, ...; float64: `exp`, ...), whose ulp bounds are NVIDIA's
(CUDA Math API, "Mathematical Functions" appendix), not ember's mathlib.

Example:
    >>> from ember.fx.prims import elementwise as ew
    >>> ew.exp_p in LOWERINGS, ew.digamma_p in LIBRARY_STEPS
    (True, True)
    >>> ctype("bfloat16"), storage_ctype("bfloat16")
    ('float', '__nv_bfloat16')
"""
from __future__ import annotations


import numpy as np

from ... import dtypes as _dt
from ...fx.core import PRIMITIVES, Primitive
from ...fx.prims import convert as _cv, elementwise as ew
from ..kernels.lowerings import LoweringTable, renders

LOWERINGS = LoweringTable("CUDA")
# Elementwise primitives this backend runs as library steps on purpose.
LIBRARY_STEPS: dict[Primitive, str] = {
    ew.digamma_p: "the CUDA math library has no digamma: cupyx.scipy.special's, on device buffers "
                  "(the eager rule)",
    ew.polygamma_p: "the CUDA math library has no polygamma: cupyx.scipy.special's, on device buffers "
                    "(the eager rule)",
    ew.nextafter_p: "CUDA's nextafterf steps in float32: the eager rule steps half precision bit patterns "
                    "on device buffers",
    ew.real_p: "complex values are not supported in CUDA kernels (its operand is complex)",
    ew.imag_p: "complex values are not supported in CUDA kernels (its operand is complex)",
    ew.complex_p: "complex values are not supported in CUDA kernels (its result is complex)",
}
_NATIVE_DTYPES = set(_dt.ALL_DTYPES) - set(_dt.COMPLEX)
# cuBLAS gemm dtypes (cublasGemmEx: f16/bf16 with float32 accumulation, f32, f64)
GEMM_DTYPES = (np.dtype(np.float16), np.dtype(_dt.bfloat16), np.dtype(np.float32), np.dtype(np.float64))

_CTYPES = {"bool": "bool", "int8": "signed char", "uint8": "unsigned char", "int16": "short",
           "uint16": "unsigned short", "int32": "int", "uint32": "unsigned int", "int64": "long long",
           "uint64": "unsigned long long", "float16": "float", "bfloat16": "float", "float32": "float",
           "float64": "double"}
_STORAGE = dict(_CTYPES, bool="unsigned char", float16="__half", bfloat16="__nv_bfloat16")


def _name(dtype) -> str:
    d = np.dtype(dtype)
    return "bfloat16" if d == _dt.bfloat16 else d.name


def ctype(dtype) -> str:
    """The C type kernels compute `dtype` values in (half precision: float).

    Example:
        >>> ctype("float16"), ctype("uint8"), ctype(bool)
        ('float', 'unsigned char', 'bool')
    """
    return _CTYPES[_name(dtype)]


def storage_ctype(dtype) -> str:
    """The C type a buffer of `dtype` holds (numpy's layout: bool is one byte).

    Example:
        >>> storage_ctype("float16"), storage_ctype(bool)
        ('__half', 'unsigned char')
    """
    return _STORAGE[_name(dtype)]


def unsigned_ctype(dtype) -> str:
    """The unsigned C type of an integer dtype's width (wrapping arithmetic).

    Example:
        >>> unsigned_ctype("int16")
        'unsigned short'
    """
    return {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}[
        np.dtype(dtype).itemsize]


def _wide_unsigned(dtype) -> str:
    # C promotes narrower operands to int: do the arithmetic in unsigned int or wider
    return "unsigned long long" if np.dtype(dtype).itemsize == 8 else "unsigned int"


# registration and lookup by name: one mechanism for every backend (kernels/lowerings.py)
lowering = LOWERINGS.register
lowering_of = LOWERINGS.of


def supports(eq) -> bool:
    """Can the CUDA renderer handle the (fusible) equation?  Complex values,
    convolutions of non-gemm dtypes, half-precision and bool scatters
    and primitives without a lowering here go to library steps.

    Example:
        >>> import ember, numpy as np
        >>> from ember import lax
        >>> g = ember.make_graph(lambda x: lax.digamma(lax.exp(x)))(np.ones(3, np.float32))
        >>> [supports(eq) for eq in g.equations]
        [True, False]
    """
    # convolutions too go to cuBLAS (im2col: the patch matrix is a map kernel)
    return renders(eq, _NATIVE_DTYPES, LOWERINGS,
                   lambda e: np.dtype(e.outputs[0].aval.dtype) in GEMM_DTYPES)


def _is_float(d) -> bool:
    return _dt.is_float(np.dtype(d))


def _is_signed(d) -> bool:
    return np.dtype(d).kind == "i"


def _is_double(d) -> bool:
    return np.dtype(d) == _dt.float64


# --- math ------------------------------------------------------------------------------

# primitive -> CUDA math function (float name; the float64 one drops the "f")
_MATH = {ew.exp_p: "expf", ew.exp2_p: "exp2f", ew.log_p: "logf", ew.log1p_p: "log1pf", ew.expm1_p: "expm1f",
         ew.tanh_p: "tanhf", ew.sin_p: "sinf", ew.cos_p: "cosf", ew.tan_p: "tanf", ew.asin_p: "asinf",
         ew.acos_p: "acosf", ew.atan_p: "atanf", ew.sinh_p: "sinhf", ew.cosh_p: "coshf", ew.asinh_p: "asinhf",
         ew.acosh_p: "acoshf", ew.atanh_p: "atanhf", ew.cbrt_p: "cbrtf", ew.erf_p: "erff", ew.erfc_p: "erfcf",
         ew.pow_p: "powf", ew.atan2_p: "atan2f", ew.floor_p: "floorf", ew.ceil_p: "ceilf",
         # round: half to even, as numpy's round and llvm.rint
         ew.round_p: "rintf", ew.sqrt_p: "sqrtf", ew.lgamma_p: "lgammaf", ew.erf_inv_p: "erfinvf"}


def _math(fname):
    def fn(em, vals, in_dt, dtype, params):
        f = fname[:-1] if _is_double(in_dt) else fname
        return f"{f}({', '.join(vals)})"
    return fn


for _p, _f in _MATH.items():
    LOWERINGS[_p] = _math(_f)


@lowering(ew.logistic_p)
def _logistic(em, vals, in_dt, dtype, params):
    return f"ember_logistic({vals[0]})"


@lowering(ew.rsqrt_p)
def _rsqrt(em, vals, in_dt, dtype, params):
    # a correctly rounded division by the correctly rounded root, as the CPU does
    # (CUDA's rsqrtf is an approximation)
    (x,) = vals
    return f"(1.0 / sqrt({x}))" if _is_double(in_dt) else f"__fdiv_rn(1.0f, sqrtf({x}))"


# --- structure ------------------------------------------------------------------------

@lowering(ew.select_n_p)
def _select_n(em, vals, in_dt, dtype, params):
    which, *cases = vals
    if len(cases) == 1:
        return cases[0]
    if np.dtype(in_dt) == _dt.bool_:
        return f"({which} ? {cases[1]} : {cases[0]})"
    res = cases[0]
    for i, c in enumerate(cases[1:], 1):
        res = em.tmp(dtype, f"({which} >= {i} ? {c} : {res})")
    return res


@lowering(_cv.convert_element_type_p)
def _convert(em, vals, in_dt, dtype, params):
    return em.convert(vals[0], in_dt, dtype)


@lowering(ew.clamp_p)
def _clamp(em, vals, in_dt, dtype, params):
    lo, x, hi = vals
    return minmax("min", em.tmp(dtype, minmax("max", x, lo, in_dt)), hi, in_dt)


@lowering(ew.conj_p)
def _identity(em, vals, in_dt, dtype, params):
    # conj: supports() admits only real operands, whose conjugate is themselves
    return vals[0]


# --- arithmetic ------------------------------------------------------------------------

_FLOAT_ARITH = {"add": "__fadd_rn", "sub": "__fsub_rn", "mul": "__fmul_rn"}
_INT_ARITH = {"add": "+", "sub": "-", "mul": "*"}


def _arith(name):
    def fn(em, vals, in_dt, dtype, params):
        x, y = vals
        if np.dtype(in_dt) == _dt.bool_:
            return {"add": f"({x} || {y})", "mul": f"({x} && {y})", "sub": f"({x} != {y})"}[name]
        if _is_float(in_dt):
            f = _FLOAT_ARITH[name]
            return f"{f.replace('__f', '__d') if _is_double(in_dt) else f}({x}, {y})"
        u = _wide_unsigned(in_dt)
        return f"(({ctype(in_dt)})(({u}){x} {_INT_ARITH[name]} ({u}){y}))"
    return fn


for _p in (ew.add_p, ew.sub_p, ew.mul_p):
    LOWERINGS[_p] = _arith(_p.name)


@lowering(ew.div_p)
def _div(em, vals, in_dt, dtype, params):
    x, y = vals
    if _is_float(in_dt):
        return f"{'__ddiv_rn' if _is_double(in_dt) else '__fdiv_rn'}({x}, {y})"
    return f"ember_idiv({x}, {y})"


@lowering(ew.rem_p)
def _rem(em, vals, in_dt, dtype, params):
    x, y = vals
    if _is_float(in_dt):
        return f"{'fmod' if _is_double(in_dt) else 'fmodf'}({x}, {y})"
    return f"ember_irem({x}, {y})"


@lowering(ew.neg_p)
def _neg(em, vals, in_dt, dtype, params):
    (x,) = vals
    if _is_float(in_dt):
        return f"(-{x})"
    return f"(({ctype(in_dt)})(0u - ({_wide_unsigned(in_dt)}){x}))"


def minmax(name, x, y, dt) -> str:
    """max/min of two compute values of dtype `dt` (floats: IEEE 754-2019
    maximum/minimum, NaN propagates and -0.0 < +0.0: the prelude's
    `ember_fmax`/`ember_fmin`).

    Example:
        >>> minmax("max", "a", "b", "float32"), minmax("min", "a", "b", "int8")
        ('ember_fmax(a, b)', '(a < b ? a : b)')
    """
    if _is_float(dt):
        return f"ember_f{name}({x}, {y})"
    if np.dtype(dt) == _dt.bool_:
        return f"({x} || {y})" if name == "max" else f"({x} && {y})"
    return f"({x} {'>' if name == 'max' else '<'} {y} ? {x} : {y})"


def _max_min(name):
    def fn(em, vals, in_dt, dtype, params):
        return minmax(name, vals[0], vals[1], in_dt)
    return fn


for _p in (ew.max_p, ew.min_p):
    LOWERINGS[_p] = _max_min(_p.name)

# C's comparisons are IEEE's: ordered, except != (true for NaN), as the reference
_PRED = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _compare(name):
    def fn(em, vals, in_dt, dtype, params):
        return f"({vals[0]} {_PRED[name]} {vals[1]})"
    return fn


for _p in (ew.eq_p, ew.ne_p, ew.lt_p, ew.le_p, ew.gt_p, ew.ge_p):
    LOWERINGS[_p] = _compare(_p.name)


@lowering(ew.abs_p)
def _abs(em, vals, in_dt, dtype, params):
    (x,) = vals
    if _is_float(in_dt):
        return f"{'fabs' if _is_double(in_dt) else 'fabsf'}({x})"
    if not _is_signed(in_dt):
        return x
    return f"({x} < 0 ? {_neg(em, vals, in_dt, dtype, params)} : {x})"


@lowering(ew.sign_p)
def _sign(em, vals, in_dt, dtype, params):
    (x,) = vals
    t = ctype(in_dt)
    if _is_float(in_dt):
        # numpy: sign(+-0) = +0, sign(NaN) = NaN
        return f"({x} > 0 ? ({t})1 : {x} < 0 ? ({t})-1 : {x} == 0 ? ({t})0 : {x})"
    if not _is_signed(in_dt):
        return f"(({t})({x} > 0))"
    return f"(({t})(({x} > 0) - ({x} < 0)))"


@lowering(ew.is_finite_p)
def _is_finite(em, vals, in_dt, dtype, params):
    return f"ember_isfinite({vals[0]})"


@lowering(ew.square_p)
def _square(em, vals, in_dt, dtype, params):
    return LOWERINGS[ew.mul_p](em, [vals[0], vals[0]], in_dt, dtype, params)


@lowering(ew.integer_pow_p)
def _integer_pow(em, vals, in_dt, dtype, params):
    """Repeated squaring in the order the CPU backend multiplies (so both round
    alike); a negative power divides one by the product."""
    n = params["y"]
    mul = LOWERINGS[ew.mul_p]
    t = ctype(in_dt)
    if n == 0:
        return f"(({t})1)"
    acc, base, k = None, vals[0], abs(n)
    while k:
        if k & 1:
            acc = base if acc is None else em.tmp(in_dt, mul(em, [acc, base], in_dt, dtype, params))
        k >>= 1
        if k:
            base = em.tmp(in_dt, mul(em, [base, base], in_dt, dtype, params))
    if n < 0:
        return _div(em, [f"(({t})1)", acc], in_dt, dtype, params)
    return acc


# --- bits --------------------------------------------------------------------------------

def _bitwise(op, bool_op):
    def fn(em, vals, in_dt, dtype, params):
        x, y = vals
        if np.dtype(in_dt) == _dt.bool_:
            return f"({x} {bool_op} {y})"
        return f"(({ctype(in_dt)})({x} {op} {y}))"
    return fn


LOWERINGS[ew.and_p] = _bitwise("&", "&&")
LOWERINGS[ew.or_p] = _bitwise("|", "||")
LOWERINGS[ew.xor_p] = _bitwise("^", "!=")


@lowering(ew.not_p)
def _not(em, vals, in_dt, dtype, params):
    (x,) = vals
    return f"(!{x})" if np.dtype(in_dt) == _dt.bool_ else f"(({ctype(in_dt)})(~{x}))"


_SIGNED = {1: "signed char", 2: "short", 4: "int", 8: "long long"}


def _shift(name):
    def fn(em, vals, in_dt, dtype, params):
        x, y = vals
        t, u = ctype(in_dt), unsigned_ctype(in_dt)
        bits = np.dtype(in_dt).itemsize * 8
        # counts >= the width (negative ones are huge as unsigned) shift everything out
        big = f"(({u}){y} >= {bits}u)"
        if name == "shift_left":
            return f"({big} ? ({t})0 : ({t})(({_wide_unsigned(in_dt)})({u}){x} << ({u}){y}))"
        if name == "shift_right_logical":
            return f"({big} ? ({t})0 : ({t})(({u}){x} >> ({u}){y}))"
        # arithmetic on the bit pattern, whatever the signedness (LLVM's ashr)
        sx = f"(({_SIGNED[np.dtype(in_dt).itemsize]}){x})"
        return f"({big} ? ({t})({sx} < 0 ? -1 : 0) : ({t})({sx} >> ({u}){y}))"
    return fn


for _p in (ew.shift_left_p, ew.shift_right_arithmetic_p, ew.shift_right_logical_p):
    LOWERINGS[_p] = _shift(_p.name)


@lowering(ew.population_count_p)
def _population_count(em, vals, in_dt, dtype, params):
    t, u = ctype(in_dt), unsigned_ctype(in_dt)
    if np.dtype(in_dt).itemsize == 8:
        return f"(({t})__popcll(({u}){vals[0]}))"
    return f"(({t})__popc((unsigned int)({u}){vals[0]}))"


@lowering(ew.clz_p)
def _clz(em, vals, in_dt, dtype, params):
    # clz(0) is the bit width, as the reference says (__clz(0) = 32)
    t, u = ctype(in_dt), unsigned_ctype(in_dt)
    bits = np.dtype(in_dt).itemsize * 8
    if bits == 64:
        return f"(({t})__clzll((long long)({u}){vals[0]}))"
    return f"(({t})(__clz((int)(unsigned int)({u}){vals[0]}) - {32 - bits}))"


_RP_BITS = {"float16": ("__half_as_ushort(__float2half_rn({}))", "__half2float(__ushort_as_half({}))"),
            "bfloat16": ("(unsigned short)(__float_as_uint({}) >> 16)",
                         "__uint_as_float(((unsigned int){}) << 16)"),
            "float32": ("__float_as_uint({})", "__uint_as_float({})"),
            "float64": ("(unsigned long long)__double_as_longlong({})",
                        "__longlong_as_double((long long){})")}


@lowering(_cv.reduce_precision_p)
def _reduce_precision(em, vals, in_dt, dtype, params):
    """XLA's ReducePrecision on the storage format's bit pattern, as the reference
    (convert.py's `_rp_impl`) and the LLVM lowering."""
    (x,) = vals
    name = _name(in_dt)
    _, E, M = _cv.FLOAT_LAYOUT[name]
    e, m = params["exponent_bits"], params["mantissa_bits"]
    if e >= E and m >= M:
        return x
    width = np.dtype(in_dt).itemsize * 8
    u_t = unsigned_ctype(in_dt)
    to_bits, from_bits = _RP_BITS[name]

    def c(v):
        return f"(({u_t}){int(v) & ((1 << width) - 1)}ull)"
    u = em.tmp(in_dt, to_bits.format(x), u_t)
    if m < M:
        shift = M - m
        u = em.tmp(in_dt, f"({u_t})((({u_t})({u} + (({u} >> {shift}) & 1u) + {c((1 << (shift - 1)) - 1)}))"
                          f" & {c(~((1 << shift) - 1))})", u_t)
    if e < E:
        bias, rbias = (1 << (E - 1)) - 1, (1 << (e - 1)) - 1
        field = em.tmp(in_dt, f"({u_t})({u} & {c(((1 << E) - 1) << M)})", u_t)
        zero = em.tmp(in_dt, f"({u_t})({u} & {c(1 << (width - 1))})", u_t)
        u = em.tmp(in_dt, f"({field} > {c((bias + rbias) << M)} ? ({u_t})({zero} | {c(((1 << E) - 1) << M)})"
                          f" : {field} <= {c((bias - rbias) << M)} ? {zero} : {u})", u_t)
    return f"({x} != {x} ? {x} : {from_bits.format(u)})"


# stop_gradient and checkpoint_name are defined in ember.transforms, above the
# backends in the layering, so they are found through the registry (the
# scheduler drops them from expressions; the entries keep the table whole)
for _ident_name in ("stop_gradient", "checkpoint_name"):
    if _ident_name in PRIMITIVES:
        LOWERINGS[PRIMITIVES[_ident_name]] = _identity
