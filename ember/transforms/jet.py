"""Taylor mode: the jet trace, `jet`, and `jet_graph` for higher-order primitives.

A `JetTracer` holds a primal and K *normalised* Taylor coefficients
x(t) = x0 + x1 t + ... + xK t^K (x_k = k-th derivative / k!); a coefficient that
is known to be zero is `None`.  Each primitive's `taylor(primals, series, **params)`
rule maps coefficients to coefficients (see `ember/fx/prims/taylor.py`); the
public `jet` converts to and from JAX's convention (derivatives) at the boundary.

Example:
    >>> import ember, ember.numpy as enp
    >>> y, (y1, y2) = ember.jet(enp.exp, (0.0,), ((1.0, 0.0),))
    >>> float(y), float(y1), float(y2)
    (1.0, 1.0, 1.0)
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as _dt
from ..fx.core import (PRIMITIVES, Trace, Tracer, Zero, check_foreign, current_trace, get_aval, new_trace,
                       set_current_trace, tangent_aval, user_source)
from ..fx.ir import ClosedGraph, eval_graph
from ..fx.prims.rules import zero_taylor, zeros
from ..fx.staging import trace_flat
from ..tree import tree_flatten, tree_unflatten
from .util import PrimalTracer, as_ember, as_ember_args, flat_with_aux, float0_zeros, split_aux


class JetTracer(PrimalTracer):
    """A value with its normalised Taylor coefficients `terms` (None = zero).

    Example:
        >>> import ember.numpy as enp
        >>> seen = []
        >>> _ = jet(lambda x: seen.append(type(x).__name__) or x, (1.0,), ([1.0],))
        >>> seen
        ['JetTracer']
    """
    __slots__ = ("primal", "terms")

    def __init__(self, trace, primal, terms):
        self._trace = trace
        self.primal = primal
        self.terms = terms

    def inner_values(self):
        return (self.primal,) + tuple(t for t in self.terms if t is not None)


class JetTrace(Trace):
    """Propagates truncated Taylor series of a fixed order through each primitive's
    `taylor` rule, which runs on the parent trace (so jit/vmap/grad of a jet work).

    Example:
        >>> from ember.fx.core import eval_trace
        >>> JetTrace(eval_trace(), 3).describe()
        'jet (order 3)'
    """

    def __init__(self, parent, order: int):
        super().__init__(parent)
        self.order = order

    def describe(self):
        return f"jet (order {self.order})"

    def lift(self, x, prim=None):
        if isinstance(x, JetTracer) and x._trace is self:
            return x.primal, x.terms
        if isinstance(x, Tracer):
            check_foreign(self, x, prim)
        return x, None

    def process_primitive(self, prim, args, params):
        primals, series, any_s = [], [], False
        none = [None] * self.order
        for x in args:
            p, s = self.lift(x, prim)
            primals.append(p)
            if s is None:
                s = none
            else:
                any_s = True
            series.append(s)
        if not any_s:
            with set_current_trace(self.parent):
                return prim.bind(*primals, **params)
        rule = prim.taylor or late_rule(prim)
        if rule is None:
            raise TypeError(f"ember.jet: the primitive '{prim.name}' has no Taylor rule"
                            + (" (it is not differentiable)" if "taylor" in prim.not_applicable else "")
                            + f"; it was reached{_at()}")
        with set_current_trace(self.parent):
            out, sout = rule(primals, series, **params)
        if prim.multiple_results:
            return [self.wrap(o, s) for o, s in zip(out, sout)]
        return self.wrap(out, sout)

    def wrap(self, primal, terms):
        if terms is None or all(t is None for t in terms):
            return primal
        return JetTracer(self, primal, list(terms))

    def unpack(self, outs):
        ps, ss = [], []
        for o in outs:
            if isinstance(o, JetTracer) and o._trace is self:
                ps.append(o.primal)
                ss.append(list(o.terms))
            else:
                if isinstance(o, Tracer):
                    check_foreign(self, o)
                ps.append(o)
                ss.append([None] * self.order)
        return ps, ss


def _at():
    src = user_source()
    return f" at {src}" if src else ""


def jet_flat(fun, primals, series, order: int):
    """Run `fun` over flat lists under a fresh jet trace of `order`.  `series[i]` is
    a list of `order` normalised coefficients (None = zero) or None; returns
    (outs, out_series) in the same form (lists, None terms where zero).

    Example:
        >>> import numpy as np
        >>> from ember.fx.prims.elementwise import mul
        >>> outs, ss = jet_flat(lambda x: [mul(x, x)], [np.float64(3.0)], [[np.float64(1.0), None]], 2)
        >>> float(outs[0]), [float(t) for t in ss[0]]
        (9.0, [6.0, 1.0])
    """
    if order == 0:
        outs = list(fun(*primals))
        return outs, [[] for _ in outs]
    trace = JetTrace(current_trace(), order)
    with new_trace(trace):
        ins = [x if s is None or all(t is None for t in s) else JetTracer(trace, x, list(s))
               for x, s in zip(primals, series)]
        return trace.unpack(fun(*ins))


def jet_graph(closed: ClosedGraph, nonzeros, order: int, instantiate_out=False):
    """The Taylor propagation of a closed graph as a new closed graph.

    Inputs: the primals, then `order` coefficients for each input marked in
    `nonzeros`.  Outputs: the primal outputs, then `order` coefficients for each
    output marked in the returned `out_nonzeros` (all of them with
    `instantiate_out=True`, or per-output booleans); zero terms are instantiated.

    Example:
        >>> import ember, ember.numpy as enp
        >>> g = ember.make_graph(enp.sin)(1.0)
        >>> jg, out_nz = jet_graph(g, [True], 3)
        >>> len(jg.in_avals), len(jg.out_avals), out_nz
        (4, 4, [True])
    """
    n = len(closed.in_avals)
    s_avals = []
    for a, nz in zip(closed.in_avals, nonzeros):
        if nz:
            s_avals += [tangent_aval(a)] * order
    box = []

    def fun(*args):
        it = iter(args[n:])
        series = [[next(it) for _ in range(order)] if nz else None for nz in nonzeros]
        outs, souts = jet_flat(lambda *xs: eval_graph(closed.graph, closed.consts, *xs),
                               list(args[:n]), series, order)
        inst = instantiate_out if isinstance(instantiate_out, (list, tuple)) else [instantiate_out] * len(outs)
        out_nz = [(any(t is not None for t in s) or bool(i)) and _dt.is_inexact(get_aval(o).dtype)
                  for o, s, i in zip(outs, souts, inst)]
        box.append(out_nz)
        flat = list(outs)
        for o, s, nz in zip(outs, souts, out_nz):
            if nz:
                a = get_aval(o)
                flat += [zeros(a.strip_weak()) if t is None else t for t in s]
        return flat

    g = trace_flat(fun, list(closed.in_avals) + s_avals)
    return g, box[0]


def split_series(flat, nonzeros, avals, order):
    """Regroup a flat list of coefficients (as `jet_graph` lays them out) into one
    list per value, `[None]*order` where the value has no series.

    Example:
        >>> split_series([1, 2], [False, True], [None, None], 2)
        [[None, None], [1, 2]]
    """
    it = iter(flat)
    return [[next(it) for _ in range(order)] if nz else [None] * order for nz in nonzeros]


def series_operands(primals, series, nonzeros):
    """The instantiated terms of each marked series, flat, as `jet_graph` takes them.

    Example:
        >>> import numpy as np
        >>> [float(t) for t in series_operands([np.float64(1.0)], [[np.float64(2.0), None]], [True])]
        [2.0, 0.0]
    """
    out = []
    for p, s, nz in zip(primals, series, nonzeros):
        if nz:
            out += instantiate_series(s, tangent_aval(get_aval(p)))
    return out


def grouped_order(sizes, nonzeros, order):
    """Positions of `jet_graph`'s inputs (or outputs) regrouped as, for each group of
    `sizes`: its primals, then its series: the operand layout of scan/while.

    Example:
        >>> grouped_order([1, 1], [True, True], 2)
        [0, 2, 3, 1, 4, 5]
    """
    n = len(nonzeros)
    at, r = {}, 0
    for i, nz in enumerate(nonzeros):
        if nz:
            at[i] = [n + r * order + k for k in range(order)]
            r += 1
    perm, start = [], 0
    for size in sizes:
        idx = range(start, start + size)
        perm += list(idx)
        for i in idx:
            perm += at.get(i, [])
        start += size
    return perm


def nonzero_series(series):
    """True for each series with at least one nonzero term.

    Example:
        >>> nonzero_series([[None, None], [None, 1.0], None])
        [False, True, False]
    """
    return [s is not None and any(t is not None for t in s) for s in series]


def instantiate_series(series, aval):
    """A series' terms with zeros in place of None.

    Example:
        >>> from ember.fx.core import AbstractArray
        >>> [float(t) for t in instantiate_series([None, 2.0], AbstractArray((), "float64"))]
        [0.0, 2.0]
    """
    return [zeros(aval.strip_weak()) if t is None else t for t in series]


# --- the generic rule: Taylor coefficients from a jvp rule ---------------------------

def taylor_from_jvp(prim):
    """A Taylor rule for any primitive with a jvp rule, by y' = J(x) x':
    the order-(K-1) jet of the jvp rule, with x' as a series of its own, gives
    y'(t), whose coefficients integrate to y_1..y_K.  It re-enters the primitive at
    order K-1, so it costs O(K^3) where a dedicated recurrence costs O(K^2): the
    primitives that matter for speed have their own rules.

    Example:
        >>> import ember, ember.numpy as enp
        >>> _, (d1, d2) = ember.jet(ember.lax.erf_inv, (0.0,), ((1.0, 0.0),))
        >>> round(float(d1), 6), round(float(d2), 6)
        (0.886227, 0.0)
    """
    def taylor(primals, series, **params):
        K = len(series[0]) if series else 0
        nz = nonzero_series(series)
        if K == 0 or not any(nz):
            return prim.bind(*primals, **params), _empty(prim, primals, params, K)
        # derivative series of each input: x'(t) = sum_m (m+1) x_{m+1} t^m
        tangents, dseries = [], []
        for p, s, z in zip(primals, series, nz):
            if not z:
                tangents.append(Zero(tangent_aval(get_aval(p))))
                dseries.append(None)
                continue
            d = [None if t is None else (t if m == 0 else _scale(t, m + 1)) for m, t in enumerate(s)]
            tangents.append(_inst(d[0], p))
            dseries.append(d[1:])
        box = []

        def f(*args):
            n = len(primals)
            xs, ts = list(args[:n]), list(args[n:])
            it = iter(ts)
            tans = [next(it) if z else t for t, z in zip(tangents, nz)]
            out, tout = prim.jvp(xs, tans, **params)
            if not prim.multiple_results:
                out, tout = [out], [tout]
            box.append([type(t) is Zero for t in tout])
            return list(out) + [zeros(t.aval) if type(t) is Zero else t for t in tout]

        ins = list(primals) + [t for t, z in zip(tangents, nz) if z]
        ser = [s[:K - 1] for s in series] + [d for d in dseries if d is not None]
        outs, souts = jet_flat(f, ins, ser, K - 1)
        m = len(outs) // 2
        res_p, res_s = outs[:m], []
        for i in range(m):
            y = res_p[i]
            if box[0][i] or not _dt.is_inexact(get_aval(y).dtype):
                res_s.append([None] * K)
                continue
            dy = [outs[m + i]] + list(souts[m + i])
            res_s.append([None if t is None else (t if k == 0 else _scale(t, 1.0 / (k + 1)))
                          for k, t in enumerate(dy)])
        if prim.multiple_results:
            return res_p, res_s
        return res_p[0], res_s[0]
    return taylor


def _empty(prim, primals, params, K):
    if prim.multiple_results:
        return [[None] * K for _ in prim.abstract_eval(*[get_aval(p) for p in primals], **params)]
    return [None] * K


def _scale(t, c):
    from ..fx.prims.elementwise import mul
    return mul(t, np.array(c, dtype=get_aval(t).dtype)[()])


def _inst(t, like):
    return zeros(tangent_aval(get_aval(like)).strip_weak()) if t is None else t


# Primitives whose Taylor rule is derived from their jvp rule: piecewise-linear ones
# (the series follow the primal's choice), and those whose derivatives have no short
# recurrence (linear algebra, special functions, sorting).
_FROM_JVP = ("erf_inv", "reduce_max", "reduce_min", "reduce_prod", "cummax", "cummin", "cumprod",
             "cumlogsumexp", "sort", "top_k", "scatter_max", "scatter_min",
             "reduce_window_max", "reduce_window_min", "cholesky", "eigh", "eig", "qr", "svd", "lu",
             "sqrtm", "hessenberg", "sampler_math", "pmax", "pmin", "custom_linear_solve")


# Primitives whose outputs carry no series: bit patterns, random bits, constants, and
# stop_gradient (whose derivatives are zero by definition).
_ZERO = ("bitcast_convert_type", "iota", "threefry2x32", "stop_gradient", "axis_index")


def install_jvp_derived_rules():
    """Give each primitive of `_FROM_JVP` (where it exists and has no dedicated rule)
    the jvp-derived Taylor rule.

    Example:
        >>> install_jvp_derived_rules(); PRIMITIVES["cholesky"].taylor is not None
        True
    """
    for name in _FROM_JVP:
        p = PRIMITIVES.get(name)
        if p is not None and p.taylor is None and p.jvp is not None:
            p.taylor = taylor_from_jvp(p)
    for name in _ZERO:
        p = PRIMITIVES.get(name)
        if p is not None and p.taylor is None:
            p.taylor = zero_taylor(p)


install_jvp_derived_rules()


def late_rule(prim):
    """The rule of a primitive registered after this module was imported (ember.random's),
    installed on first use."""
    install_jvp_derived_rules()
    return prim.taylor


def _with_complex_fallback(name):
    """`name`'s rule for real operands; the jvp-derived one for complex operands."""
    p = PRIMITIVES[name]
    real_rule, general = p.taylor, taylor_from_jvp(p)

    def taylor(primals, series, **params):
        if _dt.kind(get_aval(primals[0]).dtype) == "c":
            return general(primals, series, **params)
        return real_rule(primals, series, **params)
    p.taylor = taylor


_with_complex_fallback("abs")


# --- the public API ------------------------------------------------------------------

def _check_leaf(what, x, i):
    leaves, tree = tree_flatten(x)
    if len(leaves) != 1 or leaves[0] is not x:
        raise TypeError(f"jet: {what} at position {i} must be an array, got a {type(x).__name__} "
                        f"(jet takes one array per primal; flatten pytrees with ember.flatten_util."
                        f"ravel_pytree or pass the leaves as separate primals){_at()}")


def jet(fun, primals, series):
    """Taylor-mode propagation, with JAX's signature and convention.

    `primals` is a tuple of arrays x0; `series` a tuple with, per primal, the list
    of its higher-order terms [x1, ..., xK] where x(t) = sum_k x_k t^k / k!
    (x_k is the k-th derivative of the input curve).  Returns
    `(fun(*primals), series_out)` with series_out the output's terms in the same
    convention: for x(t) = x0 + t v, the k-th is D^k f(x0)[v, ..., v].

    Example:
        >>> f = lambda x: x ** 3
        >>> f0, (f1, f2, f3) = jet(f, (2.0,), ((1.0, 0.0, 0.0),))
        >>> float(f0), float(f1), float(f2), float(f3)
        (8.0, 12.0, 12.0, 6.0)
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(series, (tuple, list)):
        raise TypeError("jet: primals and series must be tuples (or lists): primals=(x0, ...), "
                        f"series=([x1, x2, ...], ...), got {type(primals).__name__} and "
                        f"{type(series).__name__}{_at()}")
    if len(primals) != len(series):
        raise TypeError(f"jet: {len(primals)} primals but {len(series)} series (give one list of "
                        f"higher-order terms per primal){_at()}")
    orders = set()
    for i, (x, s) in enumerate(zip(primals, series)):
        _check_leaf("primal", x, i)
        if not isinstance(s, (tuple, list)):
            raise TypeError(f"jet: series[{i}] must be a list of terms [x1, ..., xK], got "
                            f"{type(s).__name__}{_at()}")
        for j, t in enumerate(s):
            _check_leaf(f"series[{i}] term", t, j)
        orders.add(len(s))
    if len(orders) > 1:
        raise TypeError(f"jet: every primal needs the same number of terms, got "
                        f"{[len(s) for s in series]}{_at()}")
    K = orders.pop() if orders else 0
    p_tree = tree_flatten(tuple(primals))[1]
    xs = as_ember_args("jet", fun, list(primals), p_tree)
    norm = []
    for i, (x, s) in enumerate(zip(xs, series)):
        a = get_aval(x)
        terms = []
        for k, t in enumerate(s, start=1):
            ta = get_aval(t)
            if ta.shape != a.shape:
                raise TypeError(f"jet: series[{i}][{k - 1}] has shape {ta.str_user()} but primal {i} is "
                                f"{a.str_user()}: every term has the primal's shape{_at()}")
            if not _dt.is_inexact(a.dtype):
                if _concrete_zero(t):
                    terms.append(None)
                    continue
                raise TypeError(f"jet: primal {i} is {a.str_user()}, an integer/bool value, so its "
                                f"series must be zero; pass a float primal to expand along it{_at()}")
            t = as_ember(t, a.dtype)
            terms.append(None if _concrete_zero(t) else (t if k == 1 else _scale(t, 1.0 / math.factorial(k))))
        norm.append(terms)
    flat, store = flat_with_aux(fun, p_tree, False, "jet")
    outs, souts = jet_flat(flat, xs, norm, K)
    outs, _ = split_aux(store, outs)
    res = []
    for o, s in zip(outs, souts[:store["n_out"]]):
        a = get_aval(o)
        res.append([_jax_term(t, k, a) for k, t in enumerate(s, start=1)])
    out_tree = store["out_tree"]
    return tree_unflatten(out_tree, outs), tree_unflatten(out_tree, res)


def _jax_term(t, k, aval):
    if t is None:
        if not _dt.is_inexact(aval.dtype):
            return float0_zeros(tangent_aval(aval))
        from ..numpy import zeros as _zeros
        return _zeros(aval.shape, aval.dtype)
    return t if k == 1 else _scale(t, float(math.factorial(k)))


def _concrete_zero(t) -> bool:
    """A term whose value is known now and is all zeros: kept symbolic (free)."""
    if isinstance(t, Tracer):
        return False
    v = getattr(t, "_value", t)
    try:
        v = np.asarray(v)
    except Exception:
        return False
    return v.dtype != object and not np.any(v)

from . import jet_scatter_mul  # noqa: E402,F401  (scatter_mul's rule needs lax's loops)
