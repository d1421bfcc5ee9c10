"""Eager rules of the elementwise primitives (`fx/prims/elementwise.py`) over an
array module `xp`: each is the reference impl's arithmetic with `xp` for `np`.

Real dtypes only for the math functions (complex operands, whose special cases
the reference patches by hand, run compiled); half precision is computed in
float32 and rounded back once, exactly where the reference does (`lowp=True`).

Example:
    >>> import numpy as np
    >>> from ember.fx.prims.elementwise import div_p
    >>> from .eager import run_rule
    >>> run_rule(np, div_p, [np.array([7, -7, 1], np.int32), np.array([2, 2, 0], np.int32)], {}).tolist()
    [3, -3, -1]
"""
from __future__ import annotations

import numpy as np

from ...fx.prims import elementwise as E
from .eager import NOT_COVERED, eager_rule, is_float, is_lowp, quiet, special


def _math(fn, lowp=True, out_dtype=None, real_only=True):
    """A rule computing `fn(xp, *xs)` with the reference's dtype handling (`_exact`)."""
    def rule(xp, *xs, **params):
        d = xs[0].dtype
        if real_only and d.kind == "c":
            return NOT_COVERED
        od = d if out_dtype is None else out_dtype(d)
        if lowp and is_lowp(d):
            xs = [x.astype(np.float32) for x in xs]
        with quiet(xp):
            out = xp.asarray(fn(xp, *xs, **params))
            if out.dtype != od:
                out = out.astype(od)
        return out
    return rule


def _named(name):
    return lambda xp, *xs: getattr(xp, name)(*xs)


def _sp(name):
    return lambda xp, *xs: getattr(special(xp), name)(*xs)


_BOOL = lambda d: np.dtype(np.bool_)  # noqa: E731

# exact operations (integers and complex included: numpy and CuPy agree bit for bit)
for _p, _f in ((E.add_p, "add"), (E.sub_p, "subtract"), (E.mul_p, "multiply")):
    eager_rule(_p)(_math(_named(_f), lowp=False, real_only=False))
for _p, _f in ((E.and_p, "bitwise_and"), (E.or_p, "bitwise_or"), (E.xor_p, "bitwise_xor")):
    eager_rule(_p)(_math(_named(_f), lowp=False, real_only=False))
for _p, _f in ((E.eq_p, "equal"), (E.ne_p, "not_equal"), (E.lt_p, "less"), (E.le_p, "less_equal"),
               (E.gt_p, "greater"), (E.ge_p, "greater_equal")):
    eager_rule(_p)(_math(_named(_f), lowp=False, out_dtype=_BOOL, real_only=False))
eager_rule(E.neg_p)(_math(_named("negative"), lowp=False, real_only=False))
eager_rule(E.square_p)(_math(_named("square"), lowp=False, real_only=False))
eager_rule(E.not_p)(_math(_named("invert"), lowp=False))
eager_rule(E.abs_p)(_math(_named("abs"), lowp=False))
eager_rule(E.is_finite_p)(_math(_named("isfinite"), lowp=False, out_dtype=_BOOL))

# rounding and sign: exact, computed in float32 for half precision as the reference does
for _p, _f in ((E.sign_p, "sign"), (E.floor_p, "floor"), (E.ceil_p, "ceil"), (E.round_p, "rint")):
    eager_rule(_p)(_math(_named(_f)))

# transcendentals: the library's correctly-or-nearly rounded functions (CUDA's libm on
# the GPU: within its documented ulp bounds of numpy's)
for _p, _f in ((E.exp_p, "exp"), (E.exp2_p, "exp2"), (E.log_p, "log"), (E.log1p_p, "log1p"),
               (E.expm1_p, "expm1"), (E.tanh_p, "tanh"), (E.sin_p, "sin"), (E.cos_p, "cos"),
               (E.tan_p, "tan"), (E.asin_p, "arcsin"), (E.acos_p, "arccos"), (E.atan_p, "arctan"),
               (E.sinh_p, "sinh"), (E.cosh_p, "cosh"), (E.asinh_p, "arcsinh"),
               (E.acosh_p, "arccosh"), (E.atanh_p, "arctanh"), (E.sqrt_p, "sqrt"),
               (E.cbrt_p, "cbrt"), (E.atan2_p, "arctan2")):
    eager_rule(_p)(_math(_named(_f)))
eager_rule(E.rsqrt_p)(_math(lambda xp, x: 1 / xp.sqrt(x)))
for _p, _f in ((E.logistic_p, "expit"), (E.erf_p, "erf"), (E.erfc_p, "erfc"),
               (E.lgamma_p, "gammaln"), (E.erf_inv_p, "erfinv")):
    eager_rule(_p)(_math(_sp(_f)))
del _p, _f
eager_rule(E.digamma_p)(_math(_sp("psi")))
eager_rule(E.polygamma_p)(_math(lambda xp, x, *, m: special(xp).polygamma(m, x)))


@eager_rule(E.nextafter_p)
def _nextafter(xp, x, y):
    """The next representable value of x's own dtype towards y: the module's for
    float32/float64; half precision steps its 16-bit pattern (sign-magnitude, so
    +1 moves away from zero), which no float32 computation would give."""
    d = x.dtype
    if d.kind == "c":
        return NOT_COVERED
    if not is_lowp(d):
        return xp.nextafter(x, y)
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    bits = x.view(np.uint16).astype(np.int32)
    step = xp.where((xf > 0) == (yf > xf), 1, -1)
    from_zero = xp.where(yf > xf, 0x0001, 0x8001)
    out = xp.where(xf == 0, from_zero, bits + step).astype(np.uint16).view(d)
    with quiet(xp):
        nan = (xf + yf).astype(d)
    # equal operands (-0.0 and +0.0 too) give y, as C's nextafter and the reference
    return xp.where(xf == yf, y, xp.where(xp.isnan(xf) | xp.isnan(yf), nan, out))


# --- division, remainder, power: the reference's integer and zero conventions --------

def _div(xp, x, y):
    if x.dtype.kind in "iu":
        # C semantics: truncate toward zero; x / 0 is -1 (all ones), never a trap
        safe = xp.where(y == 0, xp.asarray(1, x.dtype), y)
        if x.dtype.kind == "i":
            q = xp.floor_divide(x, safe)
            inexact = (x - q * safe) != 0
            q = q + (inexact & ((x < 0) != (safe < 0))).astype(x.dtype)
            return xp.where(y == 0, xp.asarray(-1).astype(x.dtype), q).astype(x.dtype)
        return xp.where(y == 0, xp.asarray(-1).astype(x.dtype), x // safe).astype(x.dtype)
    return xp.true_divide(x, y)


def _rem(xp, x, y):
    if x.dtype.kind in "iu":
        safe = xp.where(y == 0, xp.asarray(1, x.dtype), y)
        return xp.where(y == 0, x, xp.fmod(x, safe)).astype(x.dtype)
    return xp.fmod(x, y)


def _pow(xp, x, y):
    r = xp.asarray(xp.power(x, y))
    # C99's pow(+-0, y): +0 / +inf unless y is an odd integer (numpy's x**0.5 is
    # sqrt(x), which keeps the sign of -0.0)
    zero = x == 0
    odd = (xp.abs(y) % 2 == 1) & xp.signbit(x)
    fixed = xp.where(y < 0, xp.asarray(np.inf, r.dtype), xp.asarray(0.0, r.dtype))
    fixed = xp.where(odd, -fixed, fixed)
    return xp.where(zero & ~xp.isnan(y) & (y != 0), fixed, r)


eager_rule(E.div_p)(_math(_div))
eager_rule(E.rem_p)(_math(_rem))
eager_rule(E.pow_p)(_math(_pow))


@eager_rule(E.integer_pow_p)
def _integer_pow(xp, x, *, y):
    if x.dtype.kind == "c":
        return NOT_COVERED
    if y == 0:
        return xp.ones_like(x)
    d = x.dtype
    if d.kind in "iub":
        if y < 0:
            raise ValueError("integer_pow of an integer array needs a non-negative exponent")
        return xp.power(x, y).astype(d)
    xf = x.astype(np.float32) if is_lowp(d) else x
    # the reference's (and the kernels') square-and-multiply, rounded per product
    with quiet(xp):
        acc = E.power_by_squaring(xf, abs(y))
        if y < 0:
            acc = xp.asarray(1, xf.dtype) / acc
        return xp.asarray(acc).astype(d)


# --- IEEE maximum / minimum: NaN propagates, -0.0 < +0.0 ---------------------------------

def order_keys(xp, x, op):
    """`elementwise.order_keys` over `xp`: floats as integers in IEEE 754-2019 order."""
    ity = np.dtype(f"i{x.dtype.itemsize}")
    bits = x.view(ity)
    top = np.iinfo(ity).max
    keys = bits ^ ((bits >> (8 * ity.itemsize - 1)) & ity.type(top))
    nan = xp.isnan(x.astype(np.float32)) if is_lowp(x.dtype) else xp.isnan(x)
    win = top if op == "max" else np.iinfo(ity).min
    return xp.where(nan, xp.asarray(win, ity), keys).astype(ity)


def from_order_keys(xp, keys, dtype):
    """The floats of `order_keys` (the map is its own inverse on bit patterns)."""
    top = keys.dtype.type(np.iinfo(keys.dtype).max)
    return (keys ^ ((keys >> (8 * keys.dtype.itemsize - 1)) & top)).view(np.dtype(dtype))


def _extremum(name, op):
    def fn(xp, x, y):
        r = xp.asarray(getattr(xp, name)(x, y))
        if is_float(r.dtype):
            # zeros tie by sign in IEEE order; numpy and CuPy keep one argument's zero
            shape = r.shape
            k = getattr(xp, name)(order_keys(xp, xp.broadcast_to(x, shape), op),
                                  order_keys(xp, xp.broadcast_to(y, shape), op))
            r = xp.where(r == 0, from_order_keys(xp, xp.asarray(k), r.dtype), r)
        return r
    return fn


eager_rule(E.max_p)(_math(_extremum("maximum", "max"), lowp=False))
eager_rule(E.min_p)(_math(_extremum("minimum", "min"), lowp=False))


@eager_rule(E.clamp_p)
def _clamp(xp, lo, x, hi):
    if x.dtype.kind == "c":
        return NOT_COVERED
    with quiet(xp):
        out = _extremum("minimum", "min")(xp, _extremum("maximum", "max")(xp, x, lo), hi)
    return xp.asarray(out).astype(x.dtype, copy=False)


# --- shifts: counts outside [0, bits) give 0 (or the sign fill) --------------------------

def _shift_parts(xp, x, y):
    bits = x.dtype.itemsize * 8
    big = (y < 0) | (y >= bits)
    return xp.where(big, xp.asarray(0, y.dtype), y).astype(x.dtype), big


@eager_rule(E.shift_left_p)
def _shl(xp, x, y):
    ys, big = _shift_parts(xp, x, y)
    return xp.where(big, xp.asarray(0, x.dtype), xp.left_shift(x, ys)).astype(x.dtype)


@eager_rule(E.shift_right_arithmetic_p)
def _shr_arith(xp, x, y):
    ys, big = _shift_parts(xp, x, y)
    sx = x.view(np.dtype(f"i{x.dtype.itemsize}"))
    r = xp.right_shift(sx, ys.view(sx.dtype))
    fill = xp.where(sx < 0, xp.asarray(-1, sx.dtype), xp.asarray(0, sx.dtype))
    return xp.where(big, fill, r).astype(sx.dtype).view(x.dtype)


@eager_rule(E.shift_right_logical_p)
def _shr_logical(xp, x, y):
    ys, big = _shift_parts(xp, x, y)
    ux = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    r = xp.right_shift(ux, ys.view(ux.dtype))
    return xp.where(big, xp.asarray(0, ux.dtype), r).astype(ux.dtype).view(x.dtype)


@eager_rule(E.select_n_p)
def _select_n(xp, which, *cases):
    shape = np.broadcast_shapes(which.shape, *(c.shape for c in cases))
    if len(cases) == 1:
        return xp.broadcast_to(cases[0], shape)
    if which.dtype == np.bool_:
        return xp.asarray(xp.where(which, cases[1], cases[0])).astype(cases[0].dtype, copy=False)
    # an integer selector, clipped into range like np.choose(mode="clip")
    # (clipped above in the selector's own dtype first, so a uint64 past 2**63 stays large)
    idx = xp.clip(xp.minimum(which, which.dtype.type(len(cases) - 1)).astype(np.int64),
                  0, len(cases) - 1)
    out = xp.broadcast_to(cases[0], shape)
    for i in range(1, len(cases)):
        out = xp.where(idx == i, cases[i], out)
    return xp.asarray(out).astype(cases[0].dtype, copy=False)
