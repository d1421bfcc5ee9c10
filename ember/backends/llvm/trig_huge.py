"""Payne-Hanek reduction for sin/cos/tan of huge arguments, emitted out of line.

``mathlib``'s sin/cos/tan reduce by a three-part pi/2 (Cody-Waite), which is
exact only while ``k = rint(x * 2/pi)`` is small.  Beyond ``FAST_LIMIT`` the
argument takes this path instead: ``x * 2/pi mod 4`` computed in integers
with the 192 bits of 2/pi that matter for x's exponent (a table lookup), so
the reduced argument is good to ~2^-137 absolute for every finite double --
far below the smallest |x mod pi/2| of any double (~2^-61).

The slow path must not cost the fast one its vectorisation, so it is a
*branch* to a scalar function (``noinline``) whose call site names masked
vector variants (the LLVM ``vector-function-abi-variant`` attribute): the
loop vectoriser widens the call into one call per vector that returns at
once unless a lane is huge, and only then runs the scalar function on those
lanes.  float32 arguments are reduced and evaluated in double and rounded
once.  The per-vector call is not free: on an AVX2 host it made a float32 sin
loop 0.86 -> 1.13 ns per element and float64 1.84 -> 2.45 ns (a callee with
``preserve_allcc`` was slower still: it saves every vector register).

API (used by ``mathlib``)::

    y = call_huge(m, "sin", x, fast_value)   # fast_value where |x| <= FAST_LIMIT
"""

from __future__ import annotations

import llvmlite.ir as ir

__all__ = ["FAST_LIMIT", "TWO_OVER_PI_BITS", "call_huge", "two_over_pi_window"]

# beyond these |x| the Cody-Waite reduction is replaced (its error grows with
# k; below them it keeps the documented ulp bounds, hard cases included)
FAST_LIMIT = {"f32": 2.0 ** 17, "f64": 2.0 ** 30}

_NB = 1280          # bits of 2/pi kept: 971 (largest double exponent) + 190 + margin
_WORDS = 3          # 192-bit window per exponent
_E_LO = 1023        # table rows from biased exponent 1023 (|x| >= 1) to 2046
_VFS = (2, 4, 8, 16)

_I1, _I32, _I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
_I128, _I192 = ir.IntType(128), ir.IntType(192)
_F32, _F64 = ir.FloatType(), ir.DoubleType()


def _pi_fixed(bits: int) -> int:
    """floor(pi * 2**bits) (to within one unit), by Machin's formula in integers."""
    guard = 32
    one = 1 << (bits + guard)

    def atan_inv(n):
        # atan(1/n) = sum (-1)^k / ((2k+1) n^(2k+1)), in fixed point
        total, power, k = 0, one // n, 0
        while power:
            term = power // (2 * k + 1)
            total += -term if k & 1 else term
            power //= n * n
            k += 1
        return total

    return (16 * atan_inv(5) - 4 * atan_inv(239)) >> guard


def _two_over_pi_bits() -> int:
    # 2/pi * 2^NB = 2^(NB+1) / pi; 64 guard bits make the floor exact (a test
    # checks it against mpmath)
    p = _NB + 64
    return (1 << (_NB + 1 + p)) // _pi_fixed(p)


TWO_OVER_PI_BITS = _two_over_pi_bits()   # floor(2/pi * 2**1280)


def two_over_pi_window(e: int) -> int:
    """The 192-bit window W of 2/pi for x = M * 2**e (M a 53-bit integer).

    ``M * W * 2**-190`` equals ``x * 2/pi`` modulo 4 up to less than
    ``M * 2**-190``: the bits of 2/pi whose products with x are multiples of
    4 are dropped above, those below 2**-190 relative are dropped below.

    Example::

        W = two_over_pi_window(100)
        (W * 1 >> 190) & 3    # quadrant of 2**100 (mod 4)
    """
    shift = _NB - (e + 190)
    return (TWO_OVER_PI_BITS >> shift) & ((1 << 192) - 1)


def _table_rows():
    rows = []
    for big_e in range(_E_LO, 2047):
        w = two_over_pi_window(big_e - 1075)
        rows.append([(w >> (64 * j)) & ((1 << 64) - 1) for j in range(_WORDS)])
    return rows


def _table(module: ir.Module) -> ir.GlobalVariable:
    name = "ember.two_over_pi.windows"
    g = module.globals.get(name)
    if g is None:
        rows = _table_rows()
        row_ty = ir.ArrayType(_I64, _WORDS)
        ty = ir.ArrayType(row_ty, len(rows))
        g = ir.GlobalVariable(module, ty, name)
        g.linkage = "internal"
        g.global_constant = True
        g.initializer = ir.Constant(ty, [ir.Constant(row_ty, r) for r in rows])
    return g


def _reduce(m, x):
    """x = (4j + k) * pi/2 + (r + rl) for a finite double x with |x| >= 1;
    returns (k as i64, r, rl).

    T = M * W (mod 2^192, in i192 from three exact i128 products); the top two
    bits of T + 2^189 are k, the rest minus 2^189 is the signed fraction f in
    [-1/2, 1/2), turned into a double-double by normalising with ctlz and
    converting two 53-bit slices (exact), then multiplied by pi/2."""
    from . import _coefficients as C
    b = m.b
    bits = b.bitcast(x, _I64)
    big_e = b.and_(b.lshr(bits, ir.Constant(_I64, 52)), ir.Constant(_I64, 0x7FF))
    mant = b.or_(b.and_(bits, ir.Constant(_I64, (1 << 52) - 1)), ir.Constant(_I64, 1 << 52))
    row = b.sub(big_e, ir.Constant(_I64, _E_LO))
    row = b.select(b.icmp_signed("<", row, ir.Constant(_I64, 0)), ir.Constant(_I64, 0), row)
    table = _table(m.module)
    mant128 = b.zext(mant, _I128)
    t = ir.Constant(_I192, 0)
    for j in range(_WORDS):
        w = b.load(b.gep(table, [ir.Constant(_I32, 0), row, ir.Constant(_I32, j)], inbounds=True))
        prod = b.mul(mant128, b.zext(w, _I128))        # < 2^117: exact
        t = b.add(t, b.shl(b.zext(prod, _I192), ir.Constant(_I192, 64 * j)))   # wraps mod 2^192
    t = b.add(t, ir.Constant(_I192, 1 << 189))
    k = b.trunc(b.lshr(t, ir.Constant(_I192, 190)), _I64)
    g = b.and_(t, ir.Constant(_I192, (1 << 190) - 1))
    s = b.sub(g, ir.Constant(_I192, 1 << 189))
    neg = b.icmp_signed("<", s, ir.Constant(_I192, 0))
    a = b.select(neg, b.neg(s), s)
    ctlz = m.module.globals.get("llvm.ctlz.i192")
    if ctlz is None:
        ctlz = ir.Function(m.module, ir.FunctionType(_I192, [_I192, _I1]), name="llvm.ctlz.i192")
    n = b.call(ctlz, [a, ir.Constant(_I1, 0)])
    # a == 0 cannot happen (pi is irrational, the window exact): still keep the shift defined
    n = b.select(b.icmp_unsigned(">", n, ir.Constant(_I192, 191)), ir.Constant(_I192, 191), n)
    norm = b.shl(a, n)                                   # top bit at 191
    hi_i = b.trunc(b.lshr(norm, ir.Constant(_I192, 139)), _I64)
    lo_i = b.and_(b.trunc(b.lshr(norm, ir.Constant(_I192, 86)), _I64), ir.Constant(_I64, (1 << 53) - 1))
    n64 = b.trunc(n, _I64)
    # f = +-(hi_i * 2^139 + lo_i * 2^86) * 2^-n * 2^-190
    scale_hi = m.from_bits(b.shl(b.sub(ir.Constant(_I64, 1023 - 51), n64), ir.Constant(_I64, 52)))
    scale_lo = m.from_bits(b.shl(b.sub(ir.Constant(_I64, 1023 - 104), n64), ir.Constant(_I64, 52)))
    fh = m.mul(b.sitofp(hi_i, _F64), scale_hi)
    fl = m.mul(b.sitofp(lo_i, _F64), scale_lo)
    p0, p1 = C.PIO2_F64[0], C.PIO2_F64[1]
    rh = m.mul(fh, m.c(p0))
    rl = m.add(m.fma(fh, m.c(p0), m.neg(rh)), m.mad(fh, m.c(p1), m.mul(fl, m.c(p0))))
    r = m.add(rh, rl)
    rl = m.sub(rl, m.sub(r, rh))
    # the window reduced |x|: a negative x negates k and the fraction too
    flip = b.xor(neg, m.signbit(x))
    r = m.sel(flip, m.neg(r), r)
    rl = m.sel(flip, m.neg(rl), rl)
    k = b.select(m.signbit(x), b.neg(k), k)
    return k, r, rl


def _scalar_f64(module: ir.Module, name: str) -> ir.Function:
    """``ember.<name>.huge.f64(double) -> double`` (defined once per module)."""
    from . import mathlib
    fname = f"ember.{name}.huge.f64"
    fn = module.globals.get(fname)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(_F64, [_F64]), name=fname)
    fn.linkage = "internal"
    for a in ("noinline", "nounwind", "readnone"):
        fn.attributes.add(a)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    m = mathlib._M(b, _F64)
    x = fn.args[0]
    k, r, rl = _reduce(m, x)
    s, c = mathlib._sincos_poly(m, r)
    # sin(r + rl) = sin r + rl cos r, cos(r + rl) = cos r - rl sin r
    s, c = m.mad(rl, c, s), m.mad(m.neg(rl), s, c)
    if name == "cos":
        k = b.add(k, ir.Constant(_I64, 1))
    odd = b.icmp_unsigned("!=", b.and_(k, ir.Constant(_I64, 1)), ir.Constant(_I64, 0))
    if name == "tan":
        v = m.div(m.sel(odd, c, s), m.sel(odd, s, c))
        v = m.sel(odd, m.neg(v), v)
    else:
        flip = b.icmp_unsigned("!=", b.and_(k, ir.Constant(_I64, 2)), ir.Constant(_I64, 0))
        v = m.sel(odd, c, s)
        v = m.sel(flip, m.neg(v), v)
    # inf (and NaN, though the caller sends only |x| > limit) -> NaN
    b.ret(m.sel(m.cmp("<", m.fabs(x), m.inf), v, m.nan))
    return fn


def _scalar(module: ir.Module, name: str, ty: ir.Type) -> ir.Function:
    if isinstance(ty, ir.DoubleType):
        return _scalar_f64(module, name)
    fname = f"ember.{name}.huge.f32"
    fn = module.globals.get(fname)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(_F32, [_F32]), name=fname)
    fn.linkage = "internal"
    for a in ("noinline", "nounwind", "readnone"):
        fn.attributes.add(a)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    # the double result is within ~1 double ulp: rounding it once is < 0.5 float32 ulp + 2^-29
    d = b.call(_scalar_f64(module, name), [b.fpext(fn.args[0], _F64)])
    b.ret(b.fptrunc(d, _F32))
    return fn


def _lanes(module: ir.Module, scalar: ir.Function, ty: ir.Type, n: int) -> ir.Function:
    """The scalar function on the lanes of ``x`` whose ``mask`` bit is set."""
    vname = f"{scalar.name}.lanes{n}"
    fn = module.globals.get(vname)
    if fn is not None:
        return fn
    vt, mt = ir.VectorType(ty, n), ir.VectorType(_I1, n)
    fn = ir.Function(module, ir.FunctionType(vt, [vt, mt]), name=vname)
    fn.linkage = "internal"
    for a in ("noinline", "nounwind"):
        fn.attributes.add(a)
    x, mask = fn.args
    entry, head, lane, nxt, done = (fn.append_basic_block(s) for s in ("entry", "head", "lane", "next", "done"))
    b = ir.IRBuilder(entry)
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(_I32)
    acc = b.phi(vt)
    i.add_incoming(ir.Constant(_I32, 0), entry)
    acc.add_incoming(x, entry)
    b.cbranch(b.extract_element(mask, i), lane, nxt)
    b.position_at_end(lane)
    with_y = b.insert_element(acc, b.call(scalar, [b.extract_element(x, i)]), i)
    b.branch(nxt)
    b.position_at_end(nxt)
    acc2 = b.phi(vt)
    acc2.add_incoming(acc, head)
    acc2.add_incoming(with_y, lane)
    i2 = b.add(i, ir.Constant(_I32, 1))
    i.add_incoming(i2, nxt)
    acc.add_incoming(acc2, nxt)
    b.cbranch(b.icmp_unsigned("<", i2, ir.Constant(_I32, n)), head, done)
    b.position_at_end(done)
    b.ret(acc2)
    return fn


def _variant(module: ir.Module, scalar: ir.Function, ty: ir.Type, n: int) -> ir.Function:
    """Masked vector variant: returns at once unless a lane is set, else runs
    the scalar function on the set lanes (in ``_lanes``)."""
    vname = f"{scalar.name}.v{n}"
    fn = module.globals.get(vname)
    if fn is not None:
        return fn
    vt, mt = ir.VectorType(ty, n), ir.VectorType(_I1, n)
    fn = ir.Function(module, ir.FunctionType(vt, [vt, mt]), name=vname)
    fn.linkage = "internal"
    for a in ("noinline", "nounwind"):
        fn.attributes.add(a)
    x, mask = fn.args
    entry, slow, fast = (fn.append_basic_block(s) for s in ("entry", "slow", "fast"))
    b = ir.IRBuilder(entry)
    anyset = b.icmp_unsigned("!=", b.bitcast(mask, ir.IntType(n)), ir.Constant(ir.IntType(n), 0))
    b.cbranch(anyset, slow, fast)
    b.position_at_end(fast)
    b.ret(x)
    b.position_at_end(slow)
    b.ret(b.call(_lanes(module, scalar, ty, n), [x, mask]))
    return fn


def _keep_alive(module: ir.Module, fns) -> None:
    """List ``fns`` in ``llvm.compiler.used``: the variants are referenced only
    by name from an attribute, and global DCE would drop them before the loop
    vectoriser looks for them."""
    kept = module.__dict__.setdefault("_ember_compiler_used", [])
    new = [f for f in fns if f not in kept]
    if not new:
        return
    kept.extend(new)
    ptr = ir.IntType(8).as_pointer()
    ty = ir.ArrayType(ptr, len(kept))
    g = module.globals.get("llvm.compiler.used")
    if g is None:
        g = ir.GlobalVariable(module, ty, "llvm.compiler.used")
        g.linkage = "appending"
        g.section = "llvm.metadata"
    # a module has one such global: it is grown in place as functions add variants
    g.value_type = ty
    g.type = ty.as_pointer()
    g.initializer = ir.Constant(ty, [f.bitcast(ptr) for f in kept])


def call_huge(m, name: str, x, fast):
    """``fast`` where |x| <= FAST_LIMIT (and for NaN), else ``name``'s
    Payne-Hanek value, through a branch the loop vectoriser keeps.

    Example::

        v = call_huge(m, "sin", x, fast_sin)    # m: mathlib._M, in a kernel body
    """
    b = m.b
    module = m.module
    scalar = _scalar(module, name, m.ty)
    variants = [_variant(module, scalar, m.ty, n) for n in _VFS]
    _keep_alive(module, variants)
    big = m.cmp(">", m.fabs(x), m.c(FAST_LIMIT[m.tag]))
    pre = b.block
    slow = b.function.append_basic_block(f"{name}.huge")
    join = b.function.append_basic_block(f"{name}.join")
    b.cbranch(big, slow, join)
    b.position_at_end(slow)
    y = b.call(scalar, [x])
    for a in ("nounwind", "readnone"):
        y.attributes.add(a)
    abi = ",".join(f"_ZGV_LLVM_M{n}v_{scalar.name}({scalar.name}.v{n})" for n in _VFS)
    # llvmlite validates attribute names against a fixed list; this string
    # attribute is how the vectoriser finds the variants
    set.add(y.attributes, f'"vector-function-abi-variant"="{abi}"')
    b.branch(join)
    b.position_at_end(join)
    res = b.phi(m.ty)
    res.add_incoming(fast, pre)
    res.add_incoming(y, slow)
    return res
