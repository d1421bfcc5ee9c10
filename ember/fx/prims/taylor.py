"""Taylor rules (`Primitive.taylor`, used by `ember.jet`): truncated power-series
arithmetic and the recurrence of each differentiable primitive.

A series here is a list [x0, x1, ..., xK] of *normalised* coefficients,
x(t) = sum_k x_k t^k, with None for a coefficient known to be zero (x0, the
primal, is never None).  A rule receives `series[i] = [x1, ..., xK]` per operand
and returns the output's [y1, ..., yK].  The recurrences come from the ODE each
function satisfies, e.g. y = exp(x): y' = y x', so k y_k = sum_{j=1..k} j x_j y_{k-j};
they cost O(K^2) operations per primitive.  Every rule calls the wrapper
functions, so jit, vmap and grad apply to the coefficients.

Example:
    >>> import numpy as np
    >>> from ember.fx.prims.elementwise import exp_p
    >>> y0, ys = exp_p.taylor([np.float64(0.0)], [[np.float64(1.0), None, None]])
    >>> [round(float(t), 6) for t in ys]   # e^t = 1 + t + t^2/2 + t^3/6
    [1.0, 0.5, 0.166667]
"""
from __future__ import annotations

import math

import numpy as np

from ..core import PRIMITIVES, const_like, get_aval
from . import elementwise as ew
from .rules import aval_of, broadcast_to_shape, linear_taylor, zeros

P = PRIMITIVES


def _sum(terms):
    acc = None
    for t in terms:
        if t is not None:
            acc = t if acc is None else ew.add(acc, t)
    return acc


def _scale(t, v):
    if t is None:
        return None
    if v == 1:
        return t
    if v == -1:
        return ew.neg(t)
    return ew.mul(t, const_like(t, v))


def _mul(a, b):
    return None if a is None or b is None else ew.mul(a, b)


# --- series arithmetic (full series: index 0 is the primal) -----------------------------

def s_add(a, b):
    """Sum of two series of equal length.

    Example:
        >>> [float(t) for t in s_add([np.float64(1), None], [np.float64(2), np.float64(3)])]
        [3.0, 3.0]
    """
    return [_sum([x, y]) for x, y in zip(a, b)]


def s_neg(a):
    """Negated series.

    Example:
        >>> [float(t) for t in s_neg([np.float64(1.0), np.float64(2.0)])]
        [-1.0, -2.0]
    """
    return [_scale(t, -1) for t in a]


def s_const(a, v):
    """`a` + the constant v (changes the primal only).

    Example:
        >>> [float(t) for t in s_const([np.float64(1.0), np.float64(2.0)], 3.0)]
        [4.0, 2.0]
    """
    return [ew.add(a[0], const_like(a[0], v))] + list(a[1:])


def s_mul(a, b):
    """Cauchy product: (ab)_k = sum_j a_j b_{k-j}.

    Example:
        >>> [float(t) for t in s_mul([np.float64(1), np.float64(1)], [np.float64(1), np.float64(1)])]
        [1.0, 2.0]
    """
    n = min(len(a), len(b))
    return [_sum([_mul(a[j], b[k - j]) for j in range(k + 1)]) for k in range(n)]


def s_div(a, b):
    """a / b: y_k = (a_k - sum_{j=1..k} b_j y_{k-j}) / b_0.

    Example:
        >>> [float(t) for t in s_div([np.float64(1), None, None], [np.float64(1), np.float64(-1), None])]
        [1.0, 1.0, 1.0]
    """
    n = min(len(a), len(b))
    y = [ew.div(a[0], b[0])]
    for k in range(1, n):
        acc = _sum([_mul(b[j], y[k - j]) for j in range(1, k + 1)])
        num = a[k] if acc is None else (ew.neg(acc) if a[k] is None else ew.sub(a[k], acc))
        y.append(None if num is None else ew.div(num, b[0]))
    return y


def s_deriv(a):
    """The series of the derivative: (a')_m = (m+1) a_{m+1}; one term shorter.

    Example:
        >>> [float(t) for t in s_deriv([np.float64(5.0), np.float64(1.0), np.float64(1.0)])]
        [1.0, 2.0]
    """
    return [_scale(a[m + 1], m + 1) if a[m + 1] is not None else None for m in range(len(a) - 1)] \
        if len(a) > 1 else []


def s_integrate(x, g, y0):
    """y with y' = g(t) x'(t) and y(0) = y0: y_k = (1/k) sum_{j=1..k} j x_j g_{k-j}
    (g needs K terms, g_0..g_{K-1}).

    Example:
        >>> [float(t) for t in s_integrate([np.float64(0.0), np.float64(1.0), None, None], [np.float64(1.0)] * 3, np.float64(0.0))]   # y' = 1 + t + t^2
        [0.0, 1.0, 0.5, 0.3333333333333333]
    """
    jx = [None] + [_scale(x[j], j) for j in range(1, len(x))]
    y = [y0]
    for k in range(1, len(x)):
        y.append(_scale(_sum([_mul(jx[j], g[k - j]) for j in range(1, k + 1)]), 1.0 / k))
    return y


def s_riccati(x, y0, a, b, c):
    """y with y' = (a + b y + c y^2) x', y(0) = y0 (exp: 0,1,0; tanh: 1,0,-1;
    logistic: 0,1,-1; tan: 1,0,1), building y and g = a + b y + c y^2 together.

    Example:
        >>> [round(float(t), 6) + 0.0 for t in s_riccati([np.float64(0.0), np.float64(1.0), None, None], np.float64(0.0), 1, 0, -1)[1:]]  # tanh t
        [1.0, 0.0, -0.333333]
    """
    jx = [None] + [_scale(x[j], j) for j in range(1, len(x))]
    y, g = [y0], []
    for k in range(1, len(x)):
        m = k - 1
        sq = _square_coef(y, m) if c else None
        gm = _sum([_scale(y[m], b) if b else None, _scale(sq, c) if c else None])
        if m == 0 and a:
            gm = ew.add(gm, const_like(y0, a)) if gm is not None else ew.add(ew.mul(y0, const_like(y0, 0)), const_like(y0, a))
        g.append(gm)
        y.append(_scale(_sum([_mul(jx[j], g[k - j]) for j in range(1, k + 1)]), 1.0 / k))
    return y


def _square_coef(y, m):
    """Coefficient m of y^2, using the symmetry y_i y_{m-i} = y_{m-i} y_i."""
    terms = [_mul(y[i], y[m - i]) for i in range((m + 1) // 2)]
    acc = _scale(_sum(terms), 2)
    if m % 2 == 0:
        acc = _sum([acc, _mul(y[m // 2], y[m // 2])])
    return acc


def s_sincos(x, s0, c0, hyperbolic=False):
    """(sin x, cos x) jointly: s' = c x', c' = -s x' (cosh' = +sinh x').

    Example:
        >>> s, c = s_sincos([np.float64(0.0), np.float64(1.0), None, None], np.float64(0.0), np.float64(1.0))
        >>> [round(float(t), 6) + 0.0 for t in s[1:]], [round(float(t), 6) + 0.0 for t in c[1:]]
        ([1.0, 0.0, -0.166667], [0.0, -0.5, 0.0])
    """
    jx = [None] + [_scale(x[j], j) for j in range(1, len(x))]
    s, c = [s0], [c0]
    for k in range(1, len(x)):
        sk = _sum([_mul(jx[j], c[k - j]) for j in range(1, k + 1)])
        ck = _sum([_mul(jx[j], s[k - j]) for j in range(1, k + 1)])
        s.append(_scale(sk, 1.0 / k))
        c.append(_scale(ck, (1.0 if hyperbolic else -1.0) / k))
    return s, c


def s_log(x, y0):
    """log x: x_0 k y_k = k x_k - sum_{j=1..k-1} j y_j x_{k-j}.

    Example:
        >>> [round(float(t), 6) for t in s_log([np.float64(1.0), np.float64(1.0), None, None], np.float64(0.0))[1:]]
        [1.0, -0.5, 0.333333]
    """
    y = [y0]
    for k in range(1, len(x)):
        acc = _sum([_mul(_scale(y[j], j / k), x[k - j]) for j in range(1, k)])
        num = x[k] if acc is None else (ew.neg(acc) if x[k] is None else ew.sub(x[k], acc))
        y.append(None if num is None else ew.div(num, x[0]))
    return y


def s_pow_const(x, a, y0):
    """x ** a for an exponent without series: x y' = a x' y gives
    k x_0 y_k = sum_{j=1..k} (a j - (k - j)) x_j y_{k-j}.

    Example:
        >>> [float(t) for t in s_pow_const([np.float64(1.0), np.float64(1.0), None], 2.0, np.float64(1.0))]
        [1.0, 2.0, 1.0]
    """
    y = [y0]
    for k in range(1, len(x)):
        terms = []
        for j in range(1, k + 1):
            if x[j] is None or y[k - j] is None:
                continue
            w = ew.add(ew.mul(a, const_like(a, j)), const_like(a, j - k)) if not isinstance(a, (int, float)) \
                else const_like(x[0], a * j - (k - j))
            terms.append(ew.mul(w, ew.mul(x[j], y[k - j])))
        acc = _sum(terms)
        y.append(None if acc is None else ew.div(acc, ew.mul(x[0], const_like(x[0], k))))
    return y


def s_sqrt(x, y0):
    """sqrt x: 2 y_0 y_k = x_k - sum_{j=1..k-1} y_j y_{k-j}.

    Example:
        >>> [float(t) for t in s_sqrt([np.float64(4.0), np.float64(4.0), None], np.float64(2.0))]
        [2.0, 1.0, -0.25]
    """
    y = [y0]
    for k in range(1, len(x)):
        acc = _sum([_mul(y[j], y[k - j]) for j in range(1, k)])
        num = x[k] if acc is None else (ew.neg(acc) if x[k] is None else ew.sub(x[k], acc))
        y.append(None if num is None else ew.div(num, ew.mul(y0, const_like(y0, 2))))
    return y


def s_compose(x, derivs):
    """f(x(t)) from the derivatives f^(j)(x_0), j = 0..K (Faa di Bruno through the
    powers of x(t) - x_0): y = sum_j f^(j)(x_0)/j! (x - x_0)^j.

    Example:
        >>> [float(t) for t in s_compose([np.float64(0.0), np.float64(1.0), None, None], [np.float64(1.0)] * 4)]   # exp(t)
        [1.0, 1.0, 0.5, 0.16666666666666666]
    """
    n = len(x)
    d = [None] + list(x[1:])
    y = [derivs[0]] + [None] * (n - 1)
    power = d
    for j in range(1, n):
        coef = _scale(derivs[j], 1.0 / math.factorial(j))
        for k in range(j, n):
            y[k] = _sum([y[k], _mul(coef, power[k])])
        if j + 1 < n:
            power = [None] * (j + 1) + [_sum([_mul(power[i], d[k - i]) for i in range(j, k)])
                                        for k in range(j + 1, n)]
    return y


def s_int_pow(x, n):
    """x ** n for an integer n by repeated squaring (exact at x_0 = 0).

    Example:
        >>> [float(t) for t in s_int_pow([np.float64(1.0), np.float64(1.0), None, None], 3)]
        [1.0, 3.0, 3.0, 1.0]
    """
    if n == 0:
        return [ew.add(ew.mul(x[0], const_like(x[0], 0)), const_like(x[0], 1))] + [None] * (len(x) - 1)
    if n < 0:
        p = s_int_pow(x, -n)
        return s_div([const_like(x[0], 1)] + [None] * (len(x) - 1), p)
    result, base = None, x
    while True:
        if n & 1:
            result = base if result is None else s_mul(result, base)
        n >>= 1
        if not n:
            return result
        base = s_mul(base, base)


# --- registering rules ---------------------------------------------------------------

def _finish(ans, s):
    shape = get_aval(ans).shape
    return ans, [None if t is None else broadcast_to_shape(t, shape) for t in s[1:]]


def _full(p, s):
    return [p] + list(s)


def defunary(prim, fn):
    """Register `fn(x_series, y0, **params) -> y_series` as `prim`'s Taylor rule.

    Example:
        >>> from ember.fx.core import Primitive
        >>> defunary(Primitive("demo_exp"), _riccati(0, 1, 0)).taylor is not None
        True
    """
    def taylor(primals, series, **params):
        y0 = prim.bind(primals[0], **params)
        return _finish(y0, fn(_full(primals[0], series[0]), y0, **params))
    prim.taylor = taylor
    return prim


def defbinary(prim, fn):
    """Register `fn(x_series, y_series, ans) -> series` for a binary primitive.

    Example:
        >>> from ember.fx.core import Primitive
        >>> defbinary(Primitive("demo_div"), lambda a, b, ans: [ans] + s_div(a, b)[1:]).taylor is not None
        True
    """
    def taylor(primals, series, **params):
        ans = prim.bind(*primals, **params)
        return _finish(ans, fn(_full(primals[0], series[0]), _full(primals[1], series[1]), ans))
    prim.taylor = taylor
    return prim


def _bilinear_rule(prim, primals, series, params):
    a, b = _full(primals[0], series[0]), _full(primals[1], series[1])
    ans = prim.bind(a[0], b[0], **params)
    out = []
    for k in range(1, len(a)):
        out.append(_sum([prim.bind(a[j], b[k - j], **params)
                         for j in range(k + 1) if a[j] is not None and b[k - j] is not None]))
    return _finish(ans, [ans] + out)


def defbilinear(prim):
    """Taylor rule of a bilinear primitive (mul, dot_general, conv): the Cauchy
    product with the primitive as the multiplication.

    Example:
        >>> y, ys = P["mul"].taylor([np.float64(2.0), np.float64(3.0)], [[np.float64(1.0)], [np.float64(1.0)]])
        >>> float(y), float(ys[0])
        (6.0, 5.0)
    """
    prim.taylor = lambda primals, series, **params: _bilinear_rule(prim, primals, series, params)
    return prim


def _riccati(a, b, c):
    return lambda x, y0: s_riccati(x, y0, a, b, c)


def _via_derivative(gfun):
    """y' = g(x) x', with g's series computed from x's (one order lower)."""
    return lambda x, y0: s_integrate(x, gfun(x[:-1]) if len(x) > 1 else [], y0)


def _one_plus_sq(x, sign_sq=1.0, const=1.0):
    sq = s_mul(x, x)
    return s_const(s_neg(sq) if sign_sq < 0 else sq, const)


def _expm1(x, y0):
    e = s_riccati(x, ew.add(y0, const_like(y0, 1)), 0, 1, 0)
    return [y0] + e[1:]


def _exp2(x, y0):
    return s_riccati([x[0]] + [_scale(t, math.log(2)) for t in x[1:]], y0, 0, 1, 0)


def _sin(x, y0):
    return s_sincos(x, y0, ew.cos(x[0]))[0]


def _cos(x, y0):
    return s_sincos(x, ew.sin(x[0]), y0)[1]


def _sinh(x, y0):
    return s_sincos(x, y0, ew.cosh(x[0]), True)[0]


def _cosh(x, y0):
    return s_sincos(x, ew.sinh(x[0]), y0, True)[1]


def _log1p(x, y0):
    return s_log(s_const(x, 1), y0)


def _rsqrt_of(s):
    return s_pow_const(s, -0.5, ew.rsqrt(s[0]))


def _erf_g(x, scale):
    e = s_neg(s_mul(x, x))
    return [_scale(t, scale) for t in s_riccati(e, ew.exp(e[0]), 0, 1, 0)]


def _polygamma_tower(m):
    # d^j/dx^j of polygamma(m, x) is polygamma(m + j, x); m = -1 is lgamma, 0 digamma
    def fn(x, y0, **params):
        mm = params.get("m", m)
        derivs = [y0]
        for j in range(1, len(x)):
            order = mm + j
            derivs.append(ew.digamma(x[0]) if order == 0 else ew.polygamma(order, x[0]))
        return s_compose(x, derivs)
    return fn


def _integer_pow(x, y0, *, y):
    s = s_int_pow(x, y)
    return [y0] + s[1:]


def _pow_rule(primals, series, **params):
    x, y = primals
    ans = ew.pow(x, y)
    xs, ys = _full(x, series[0]), _full(y, series[1])
    if all(t is None for t in ys[1:]):
        return _finish(ans, s_pow_const(xs, y, ans))
    # x ** y = exp(y log x) when the exponent varies too
    lg = s_log(xs, ew.log(x))
    return _finish(ans, s_riccati(s_mul(ys, lg), ans, 0, 1, 0))


def _atan2(a, b, ans):
    # d atan2(a, b) = (b da - a db) / (a^2 + b^2)
    if len(a) == 1:
        return [ans]
    da, db = s_deriv(a), s_deriv(b)
    n = len(da)
    num = s_add(s_mul(b[:n], da), s_neg(s_mul(a[:n], db)))
    g = s_div(num, s_add(s_mul(a[:n], a[:n]), s_mul(b[:n], b[:n])))
    return [ans] + [_scale(g[k - 1], 1.0 / k) for k in range(1, len(a))]


def _inst(t, like):
    return zeros(aval_of(like).strip_weak()) if t is None else t


def _minmax(pick):
    def fn(a, b, ans):
        win = pick(a[0], b[0])
        tie = ew.eq(a[0], b[0])
        out = [ans]
        for k in range(1, len(a)):
            if a[k] is None and b[k] is None:
                out.append(None)
                continue
            ak, bk = _inst(a[k], a[0]), _inst(b[k], b[0])
            # ties split evenly, as the jvp rule does
            half = ew.mul(ew.add(ak, bk), const_like(ak, 0.5))
            out.append(ew.select_n(tie, ew.select_n(win, bk, ak), half))
        return out
    return fn


def _abs_real(x, y0):
    sg = ew.sign(x[0])
    return [y0] + [_mul(sg, t) for t in x[1:]]


def _rem(a, b, ans):
    q = ew.div(a[0], b[0])
    trunc = ew.mul(ew.sign(q), ew.floor(ew.abs(q)))
    return [ans] + [_sum([a[k], _scale(_mul(trunc, b[k]), -1)]) for k in range(1, len(a))]


def _select_rule(primals, series):
    return linear_taylor(P["select_n"], tuple(range(1, len(primals))))(primals, series)


def _clamp_rule(primals, series):
    lo, x, hi = primals
    ans = ew.clamp(lo, x, hi)
    below, above = ew.lt(x, lo), ew.gt(x, hi)
    out = []
    for k in range(len(series[1])):
        tl, tx, th = series[0][k], series[1][k], series[2][k]
        if tl is None and tx is None and th is None:
            out.append(None)
            continue
        t = ew.select_n(above, _inst(tx, x), _inst(th, hi))
        out.append(ew.select_n(below, t, _inst(tl, lo)))
    return _finish(ans, [ans] + out)


defunary(P["exp"], _riccati(0, 1, 0))
defunary(P["exp2"], _exp2)
defunary(P["expm1"], _expm1)
defunary(P["log"], s_log)
defunary(P["log1p"], _log1p)
defunary(P["tanh"], _riccati(1, 0, -1))
defunary(P["logistic"], _riccati(0, 1, -1))
defunary(P["tan"], _riccati(1, 0, 1))
defunary(P["sin"], _sin)
defunary(P["cos"], _cos)
defunary(P["sinh"], _sinh)
defunary(P["cosh"], _cosh)
defunary(P["sqrt"], s_sqrt)
defunary(P["rsqrt"], lambda x, y0: s_pow_const(x, -0.5, y0))
defunary(P["cbrt"], lambda x, y0: s_pow_const(x, 1.0 / 3.0, y0))
defunary(P["square"], lambda x, y0: [y0] + s_mul(x, x)[1:])
defunary(P["integer_pow"], _integer_pow)
defunary(P["asin"], _via_derivative(lambda x: _rsqrt_of(_one_plus_sq(x, -1.0, 1.0))))
defunary(P["acos"], _via_derivative(lambda x: s_neg(_rsqrt_of(_one_plus_sq(x, -1.0, 1.0)))))
defunary(P["atan"], _via_derivative(lambda x: s_div([const_like(x[0], 1)] + [None] * (len(x) - 1),
                                                    _one_plus_sq(x))))
defunary(P["asinh"], _via_derivative(lambda x: _rsqrt_of(_one_plus_sq(x))))
defunary(P["acosh"], _via_derivative(lambda x: _rsqrt_of(_one_plus_sq(x, 1.0, -1.0))))
defunary(P["atanh"], _via_derivative(lambda x: s_div([const_like(x[0], 1)] + [None] * (len(x) - 1),
                                                     _one_plus_sq(x, -1.0, 1.0))))
defunary(P["erf"], _via_derivative(lambda x: _erf_g(x, 2 / math.sqrt(math.pi))))
defunary(P["erfc"], _via_derivative(lambda x: _erf_g(x, -2 / math.sqrt(math.pi))))
defunary(P["lgamma"], _polygamma_tower(-1))
defunary(P["digamma"], _polygamma_tower(0))
defunary(P["polygamma"], _polygamma_tower(None))
defunary(P["abs"], _abs_real)   # complex abs: jet.py wraps it with the jvp-derived rule

defbilinear(P["mul"])
defbilinear(P["dot_general"])
defbilinear(P["conv_general_dilated"])
defbinary(P["div"], lambda a, b, ans: [ans] + s_div(a, b)[1:])
defbinary(P["atan2"], _atan2)
defbinary(P["max"], _minmax(ew.gt))
defbinary(P["min"], _minmax(ew.lt))
defbinary(P["rem"], _rem)
P["pow"].taylor = _pow_rule
P["select_n"].taylor = _select_rule
P["clamp"].taylor = _clamp_rule

def _add_sub(sign):
    def fn(a, b, ans):
        return [ans] + [_sum([x, _scale(y, sign)]) for x, y in zip(a[1:], b[1:])]
    return fn


defbinary(P["add"], _add_sub(1))
defbinary(P["sub"], _add_sub(-1))
for _name in ("neg", "convert_element_type", "real", "imag", "conj", "complex",
              "reduce_window_sum"):
    P[_name].taylor = linear_taylor(P[_name])
# linear in the operands listed; the other operands only select (indices, the argmax)
for _name, _args in (("dynamic_slice", (0,)), ("dynamic_update_slice", (0, 1)), ("gather", (0,)),
                     ("scatter_add", (0, 2)), ("scatter", (0, 2)), ("take_along_axis", (0,)),
                     ("scatter_add_along_axis", (0,)), ("select_and_gather_add", (0,)),
                     ("select_and_scatter_add", (0,))):
    P[_name].taylor = linear_taylor(P[_name], _args)


def _triangular_solve_rule(primals, series, **params):
    # op(A) x = b, so op(A_0) x_k = b_k - sum_{j>=1} op(A_j) x_{k-j}: one solve per order
    from . import linalg as la
    a, b = primals
    x = [P["triangular_solve"].bind(a, b, **params)]
    sa, sb = series
    k0 = -1 if params["unit_diagonal"] else 0
    ta = [None if t is None else (la._tril(t, k0) if params["lower"] else la._triu(t, -k0)) for t in sa]
    opa = [None if t is None else la._op(t, params["transpose_a"], params["conjugate_a"]) for t in ta]
    for k in range(1, len(sa) + 1):
        corr = _sum([None if opa[j - 1] is None or x[k - j] is None else
                     (la._matmul(opa[j - 1], x[k - j]) if params["left_side"] else la._matmul(x[k - j], opa[j - 1]))
                     for j in range(1, k + 1)])
        rhs = sb[k - 1] if corr is None else (ew.neg(corr) if sb[k - 1] is None else ew.sub(sb[k - 1], corr))
        x.append(None if rhs is None else P["triangular_solve"].bind(a, rhs, **params))
    return x[0], x[1:]


P["triangular_solve"].taylor = _triangular_solve_rule


def _dot_general_rule(primals, series, *, dimension_numbers, preferred_element_type):
    # With one operand constant (a weight matrix), the K+1 products y_k = a_k . W are one
    # product of the stacked a_k: one gemm with K+1 times the rows, not K+1 gemms.
    from . import shape as sh
    a, b = _full(primals[0], series[0]), _full(primals[1], series[1])
    params = dict(dimension_numbers=dimension_numbers, preferred_element_type=preferred_element_type)
    a_const, b_const = all(t is None for t in a[1:]), all(t is None for t in b[1:])
    if not (a_const or b_const):
        return _bilinear_rule(P["dot_general"], primals, series, params)
    (lc, rc), (lb, rb) = dimension_numbers
    vary = a if b_const else b
    ans = P["dot_general"].bind(a[0], b[0], **params)
    # the primal stays a product of its own: under vmap (laplacian's columns) the terms
    # are batched and the primal is not
    idx = [k for k, t in enumerate(vary) if t is not None and k > 0]
    if len(idx) == 1:
        k = idx[0]
        t = P["dot_general"].bind(a[k], b[0], **params) if b_const else P["dot_general"].bind(a[0], b[k], **params)
        return ans, [t if j == k else None for j in range(1, len(vary))]
    stacked = sh.concatenate([sh.expand_dims(vary[k], (0,)) for k in idx], 0)
    shift = lambda ds: tuple(d + 1 for d in ds)  # noqa: E731
    if b_const:
        dn = ((shift(lc), rc), (shift(lb), rb))
        out = P["dot_general"].bind(stacked, b[0], dimension_numbers=dn, preferred_element_type=preferred_element_type)
        axis = len(lb)
    else:
        dn = ((lc, shift(rc)), (lb, shift(rb)))
        out = P["dot_general"].bind(a[0], stacked, dimension_numbers=dn, preferred_element_type=preferred_element_type)
        axis = len(lb) + get_aval(a[0]).ndim - len(lc) - len(lb)
    terms = [None] * len(vary)
    for i, k in enumerate(idx):
        terms[k] = sh.index_in_dim(out, i, axis, keepdims=False)
    return ans, terms[1:]


P["dot_general"].taylor = _dot_general_rule


