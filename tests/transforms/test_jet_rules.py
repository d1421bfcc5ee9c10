"""ember.jet's Taylor rules, primitive by primitive: every rule against nested jvp (each
order an independent derivative; nested jvp costs 2^order, so the table stops at order
6), every elementwise rule against mpmath's high-precision derivatives to order 10, and
the coverage of the rule table (every differentiable primitive has a rule and a row)."""
import math

import numpy as np
import pytest

import ember
import ember.nn  # noqa: F401  (registers its primitives, if any)
import ember.numpy as enp
import ember.random  # noqa: F401
from ember import lax
from ember.fx.core import PRIMITIVES as _REGISTRY, Primitive
from ember.transforms.jet import install_jvp_derived_rules, jet
from ember.fx.prims.linalg_hessenberg import hessenberg as _hessenberg
from ember.fx.prims.linalg_qr_pivots import qr_pivots as _qr_pivots
from ember.fx.prims.linalg_sqrtm import sqrtm as _sqrtm


def _ember_primitives() -> dict:
    """The primitives ember's own modules define (the registry also holds those that
    tests and docstring examples register)."""
    import importlib
    import pkgutil
    found = {}
    for info in pkgutil.walk_packages(ember.__path__, "ember."):
        for v in vars(importlib.import_module(info.name)).values():
            if isinstance(v, Primitive) and _REGISTRY.get(v.name) is v:
                found[v.name] = v
    return found


PRIMITIVES = _ember_primitives()

install_jvp_derived_rules()

R = np.random.default_rng(0)


def _vec(n=4, lo=0.2, hi=0.8):
    return np.linspace(lo, hi, n)


def _spd(n=3):
    a = np.random.default_rng(n).normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


def nested_coefficients(f, args, dirs, order):
    """D^k h(0), k = 1..order, of h(t) = f(args + t dirs) by nested jvp in t."""
    def h(t):
        return f(*[a + t * d for a, d in zip(args, dirs)])

    out, g = [], h
    for _ in range(order):
        g = (lambda g: lambda t: ember.jvp(g, (t,), (np.float64(1.0),))[1])(g)
        out.append(np.asarray(g(np.float64(0.0))))
    return out


NESTED_ORDER = 6


def check(f, args, order=10, rtol=1e-12, dirs=None):
    args = [np.asarray(a, dtype=np.float64) for a in args]
    if dirs is None:
        dirs = [R.uniform(0.5, 1.0, size=a.shape) for a in args]
    zeros = [np.zeros_like(d) for d in dirs]
    y, ys = jet(f, tuple(args), tuple([d] + [z] * (order - 1) for d, z in zip(dirs, zeros)))
    np.testing.assert_allclose(np.asarray(y), np.asarray(f(*args)), rtol=1e-15, atol=0)
    ref = nested_coefficients(f, args, dirs, min(order, NESTED_ORDER))
    for k, (a, b) in enumerate(zip(ys, ref), start=1):
        a = np.asarray(a)
        scale = max(1.0, float(np.max(np.abs(b))) if b.size else 1.0)
        assert a.shape == b.shape, (k, a.shape, b.shape)
        err = float(np.max(np.abs(a - b))) / scale if b.size else 0.0
        assert err <= rtol, f"order {k}: relative error {err:.3g} > {rtol:g}"


# name -> (function of float64 arrays, arguments, order, tolerance)
UNARY = {
    "exp": (lax.exp, _vec()), "exp2": (lax.exp2, _vec()), "expm1": (lax.expm1, _vec()),
    "log": (lax.log, _vec(lo=1.0, hi=2.0)), "log1p": (lax.log1p, _vec()),
    "tanh": (lax.tanh, _vec()), "logistic": (lax.logistic, _vec()), "tan": (lax.tan, _vec()),
    "sin": (lax.sin, _vec()), "cos": (lax.cos, _vec()), "sinh": (lax.sinh, _vec()),
    "cosh": (lax.cosh, _vec()), "sqrt": (lax.sqrt, _vec(lo=1.0, hi=2.0)),
    "rsqrt": (lax.rsqrt, _vec(lo=1.0, hi=2.0)), "cbrt": (lax.cbrt, _vec(lo=1.0, hi=2.0)),
    "erf": (lax.erf, _vec()), "erfc": (lax.erfc, _vec()), "erf_inv": (lax.erf_inv, _vec(lo=-0.3, hi=0.3)),
    "asin": (lax.asin, _vec(lo=-0.3, hi=0.3)), "acos": (lax.acos, _vec(lo=-0.3, hi=0.3)),
    "atan": (lax.atan, _vec()), "asinh": (lax.asinh, _vec()), "acosh": (lax.acosh, _vec(lo=1.5, hi=2.0)),
    "atanh": (lax.atanh, _vec(lo=-0.3, hi=0.3)), "lgamma": (lax.lgamma, _vec(lo=2.0, hi=3.0)),
    "digamma": (lax.digamma, _vec(lo=2.0, hi=3.0)),
    "polygamma": (lambda x: lax.polygamma(1, x), _vec(lo=2.0, hi=3.0)),
    "square": (lax.square, _vec()), "integer_pow": (lambda x: lax.integer_pow(x, 5), _vec(lo=-0.5)),
    "abs": (lax.abs, _vec(lo=-0.8, hi=-0.2)), "neg": (lax.neg, _vec()),
}


def _m(x):
    return x.reshape(2, 3)


TABLE = dict(
    {k: (f, [x], 10, 1e-12) for k, (f, x) in UNARY.items()},
    add=(lax.add, [_vec(), _vec()[::-1]], 10, 1e-12),
    sub=(lax.sub, [_vec(), _vec()[::-1]], 10, 1e-12),
    mul=(lambda a, b: lax.mul(lax.sin(a), b), [_vec(), _vec()[::-1]], 10, 1e-12),
    div=(lax.div, [_vec(), _vec(lo=1.0, hi=2.0)], 10, 1e-12),
    pow=(lax.pow, [_vec(lo=1.0, hi=2.0), _vec()], 10, 1e-12),
    max=(lambda a, b: lax.mul(lax.max(a, b), a), [_vec(), _vec()[::-1] + 0.01], 10, 1e-12),
    min=(lambda a, b: lax.mul(lax.min(a, b), a), [_vec(), _vec()[::-1] + 0.01], 10, 1e-12),
    atan2=(lax.atan2, [_vec(), _vec(lo=1.0, hi=2.0)], 10, 1e-12),
    rem=(lambda a, b: lax.rem(lax.exp(a), b), [_vec(lo=1.0), _vec(lo=0.7, hi=0.9)], 10, 1e-12),
    select_n=(lambda a, b: lax.select_n(lax.gt(a, 0.5), lax.exp(a), lax.sin(b)), [_vec(), _vec()], 10, 1e-12),
    clamp=(lambda a: lax.clamp(np.float64(0.4), lax.exp(a) - 1.0, np.float64(0.9)), [_vec(lo=0.1, hi=0.9)], 10, 1e-12),
    complex=(lambda a, b: lax.real(lax.mul(lax.complex(a, b), lax.complex(b, a))), [_vec(), _vec()], 10, 1e-12),
    real=(lambda a: lax.real(lax.exp(lax.complex(a, a))), [_vec()], 10, 1e-12),
    imag=(lambda a: lax.imag(lax.exp(lax.complex(a, a))), [_vec()], 10, 1e-12),
    conj=(lambda a: lax.imag(lax.conj(lax.exp(lax.complex(a, a)))), [_vec()], 10, 1e-12),
    convert_element_type=(lambda a: lax.convert_element_type(lax.exp(a), "float32").astype("float64"),
                          [_vec()], 3, 1e-6),
    dot_general=(lambda a, b: lax.dot_general(lax.sin(_m(a)), _m(b), (((1,), (1,)), ((), ()))),
                 [_vec(6), _vec(6)], 10, 1e-12),
    broadcast_in_dim=(lambda a: lax.exp(lax.broadcast_in_dim(a, (2, 4), (1,))), [_vec()], 10, 1e-12),
    reshape=(lambda a: lax.exp(lax.reshape(a, (2, 2))), [_vec()], 10, 1e-12),
    transpose=(lambda a: lax.exp(lax.transpose(_m(a), (1, 0))), [_vec(6)], 10, 1e-12),
    squeeze=(lambda a: lax.exp(lax.squeeze(a.reshape(1, 4), (0,))), [_vec()], 10, 1e-12),
    expand_dims=(lambda a: lax.exp(lax.expand_dims(a, (0,))), [_vec()], 10, 1e-12),
    rev=(lambda a: lax.exp(lax.rev(a, (0,))), [_vec()], 10, 1e-12),
    pad=(lambda a, b: lax.exp(lax.pad(a, lax.reduce_sum(b, (0,)), ((1, 2, 1),))), [_vec(), _vec(2)], 10, 1e-12),
    concatenate=(lambda a, b: lax.exp(lax.concatenate([a, b], 0)), [_vec(), _vec(2)], 10, 1e-12),
    slice=(lambda a: lax.exp(lax.slice(a, (1,), (3,))), [_vec()], 10, 1e-12),
    dynamic_slice=(lambda a: lax.exp(lax.dynamic_slice(a, (np.int32(1),), (2,))), [_vec()], 10, 1e-12),
    dynamic_update_slice=(lambda a, b: lax.exp(lax.dynamic_update_slice(a, lax.sin(b), (np.int32(1),))),
                          [_vec(), _vec(2)], 10, 1e-12),
    gather=(lambda a: lax.exp(enp.take(a, np.array([2, 0, 2]))), [_vec()], 10, 1e-12),
    scatter_add=(lambda a, b: lax.exp(enp.asarray(a).at[np.array([1, 1, 3])].add(lax.sin(b))), [_vec(), _vec(3)], 10, 1e-12),
    scatter=(lambda a, b: lax.exp(enp.asarray(a).at[np.array([1, 3])].set(lax.sin(b))), [_vec(), _vec(2)], 10, 1e-12),
    scatter_mul=(lambda a, b: enp.asarray(a).at[np.array([1, 3, 1])].multiply(lax.sin(b)), [_vec(), _vec(3)], 10, 1e-12),
    scatter_max=(lambda a, b: lax.exp(enp.asarray(a).at[np.array([1, 3])].max(b)), [_vec(), _vec(2) * 2], 10, 1e-12),
    scatter_min=(lambda a, b: lax.exp(enp.asarray(a).at[np.array([1, 3])].min(b)), [_vec(), _vec(2) / 2], 10, 1e-12),
    take_along_axis=(lambda a: lax.exp(enp.take_along_axis(a, np.array([3, 1]), 0)), [_vec()], 10, 1e-12),
    reduce_sum=(lambda a: lax.exp(lax.reduce_sum(_m(a), (1,))), [_vec(6)], 10, 1e-12),
    reduce_max=(lambda a: lax.exp(lax.reduce_max(_m(a), (1,))), [_vec(6)], 10, 1e-12),
    reduce_min=(lambda a: lax.exp(lax.reduce_min(_m(a), (1,))), [_vec(6)], 10, 1e-12),
    reduce_prod=(lambda a: lax.reduce_prod(lax.exp(a), (0,)), [_vec()], 10, 1e-12),
    cumsum=(lambda a: lax.exp(lax.cumsum(a, 0)), [_vec()], 10, 1e-12),
    cumprod=(lambda a: lax.cumprod(lax.sin(a), 0), [_vec()], 10, 1e-12),
    cummax=(lambda a: lax.exp(lax.cummax(a * np.array([1, -1, 2, 0.5]), 0)), [_vec()], 10, 1e-12),
    cummin=(lambda a: lax.exp(lax.cummin(a * np.array([1, -1, 2, 0.5]), 0)), [_vec()], 10, 1e-12),
    cumlogsumexp=(lambda a: lax.cumlogsumexp(a, 0), [_vec()], 10, 1e-12),
    sort=(lambda a: lax.exp(enp.sort(a * np.array([1, -1, 2, 0.5]))), [_vec()], 10, 1e-12),
    top_k=(lambda a: lax.exp(lax.top_k(a * np.array([1, -1, 2, 0.5]), 2)[0]), [_vec()], 10, 1e-12),
    conv_general_dilated=(lambda a, b: lax.conv_general_dilated(lax.sin(a.reshape(1, 1, 6)), b.reshape(1, 1, 3),
                                                                (1,), "VALID"),
                          [_vec(6), _vec(3)], 10, 1e-12),
    reduce_window_sum=(lambda a: lax.exp(lax.reduce_window_sum(a, (2,), (1,))), [_vec()], 10, 1e-12),
    reduce_window_max=(lambda a: lax.exp(lax.reduce_window_max(a * np.array([1, -1, 2, 0.5]), (2,), (1,))),
                       [_vec()], 10, 1e-12),
    reduce_window_min=(lambda a: lax.exp(lax.reduce_window_min(a * np.array([1, -1, 2, 0.5]), (2,), (1,))),
                       [_vec()], 10, 1e-12),
    fft=(lambda a: lax.real(enp.fft.fft(lax.exp(lax.complex(a, a)))), [_vec()], 10, 1e-12),
    triangular_solve=(lambda a, b: lax.linalg.triangular_solve(_spd() + lax.sin(a).reshape(3, 3), b.reshape(3, 1),
                                                               left_side=True, lower=True),
                      [_vec(9), _vec(3)], 10, 1e-12),
    cholesky=(lambda a: lax.linalg.cholesky(_spd() + enp.outer(a, a)), [_vec(3)], 6, 1e-11),
    eigh=(lambda a: lax.linalg.eigh(_spd() + enp.diag(a * np.array([1.0, 2.0, 3.0])))[1], [_vec(3)], 5, 1e-10),
    qr=(lambda a: lax.linalg.qr(_spd() + enp.outer(a, a))[1], [_vec(3)], 5, 1e-10),
    svd=(lambda a: lax.linalg.svd(_spd() + enp.outer(a, a), full_matrices=False, compute_uv=False),
         [_vec(3)], 5, 1e-10),
    lu=(lambda a: lax.linalg.lu(_spd() + enp.outer(a, a))[0], [_vec(3)], 5, 1e-10),
)

from ember.fx.prims import random as _rp  # noqa: E402
from ember.fx.prims import window as _win  # noqa: E402
from ember.transforms.checkpoint import checkpoint_name  # noqa: E402

def _first(r):
    return r[0] if isinstance(r, (tuple, list)) else r


_PERM = np.array([1, -1, 2, 0.5])


@ember.custom_jvp
def _softplus(x):
    return enp.log1p(enp.exp(x))


_softplus.defjvps(lambda t, ans, x: t * lax.logistic(x))


TABLE.update(
    select_and_gather_add=(lambda a, b: lax.exp(_win.select_and_gather_add(lax.sin(a), b * _PERM, "max", (2,))),
                           [_vec(), _vec()], 10, 1e-12),
    select_and_scatter_add=(lambda a, b: lax.exp(_win.select_and_scatter_add(lax.sin(a), b * _PERM, "max", (2,))),
                            [_vec(3), _vec()], 10, 1e-12),
    scatter_add_along_axis=(lambda a: lax.exp(enp.put_along_axis(enp.zeros(4, dtype='float64'), np.array([3, 1]), a, 0,
                                                                inplace=False))
                            if hasattr(enp, "put_along_axis") else lax.exp(a), [_vec(2)], 10, 1e-12),
    eig=(lambda a: lax.real(_first(lax.linalg.eig(_spd() + enp.diag(a * np.array([1.0, 2.0, 3.0])),
                                                  compute_eigenvectors=False))),
         [_vec(3)], 4, 1e-9),
    hessenberg=(lambda a: _hessenberg(_spd() + enp.outer(a, a))[1], [_vec(3)], 4, 1e-9),
    sqrtm=(lambda a: lax.real(_sqrtm(_spd() + enp.diag(a * np.array([1.0, 2.0, 3.0])))), [_vec(3)], 4, 1e-9),
    sampler_math=(lambda a: _rp.sampler_math("log1p", a), [_vec()], 10, 1e-12),
    checkpoint_name=(lambda a: lax.exp(checkpoint_name(lax.sin(a), "h")), [_vec()], 10, 1e-12),
    jit_call=(ember.jit(lambda a, b: lax.exp(a) * lax.sin(b)), [_vec(), _vec()], 8, 1e-12),
    remat=(ember.checkpoint(lambda a: lax.sin(lax.exp(a))), [_vec()], 8, 1e-12),
    cond=(lambda a: ember.lax.cond(a[0] > 0.0, lambda x: lax.sin(x) * x, lambda x: lax.exp(x), a),
          [_vec()], 8, 1e-12),
    scan=(lambda a: ember.lax.scan(lambda c, x: (lax.tanh(c * x + 0.5), lax.sin(c)), a[0], a)[1],
          [_vec()], 8, 1e-12),
    while_loop=(lambda a: ember.lax.while_loop(lambda c: c[1] < 3, lambda c: (lax.sin(c[0]) * 1.5, c[1] + 1),
                                               (a, 0))[0], [_vec()], 8, 1e-12),
    custom_jvp_call=(_softplus, [_vec()], 8, 1e-12),
    # the float64 layout itself: linear, and exact, so the orders compare to rounding
    reduce_precision=(lambda a: lax.reduce_precision(lax.exp(a), 11, 52) * a, [_vec()], 10, 1e-12),
)


def _over_lanes(f):
    """`f` per lane of a named vmap axis, so its collectives have members."""
    return lambda a: ember.vmap(f, axis_name="i")(a)


_M = lambda: R.uniform(0.5, 1.0, size=(4, 4))
TABLE.update(
    psum=(_over_lanes(lambda v: lax.psum(lax.sin(v), "i") * v), [_M()], 6, 1e-12),
    pmax=(_over_lanes(lambda v: lax.pmax(lax.sin(v) * v, "i")), [_M()], 6, 1e-12),
    pmin=(_over_lanes(lambda v: lax.pmin(lax.exp(v) * v, "i")), [_M()], 6, 1e-12),
    all_gather=(_over_lanes(lambda v: lax.all_gather(lax.sin(v), "i") * v), [_M()], 6, 1e-12),
    all_to_all=(_over_lanes(lambda v: lax.all_to_all(lax.sin(v), "i", 0, 0) * v), [_M()], 6, 1e-12),
    ppermute=(_over_lanes(lambda v: lax.ppermute(lax.sin(v), "i", [(0, 1), (1, 2), (2, 3), (3, 0)]) * v),
              [_M()], 6, 1e-12),
    axis_index=(_over_lanes(lambda v: v * lax.convert_element_type(lax.axis_index("i"), v.dtype)),
                [_M()], 6, 1e-12),
    custom_linear_solve=(lambda b: ember.lax.custom_linear_solve(
        lambda x: 3.0 * x, lax.sin(b) * b, lambda mv, r: r / 3.0, symmetric=True), [_vec()], 6, 1e-12),
)


@pytest.mark.parametrize("name", sorted(TABLE))
def test_taylor_rule_matches_nested_jvp(name):
    f, args, order, rtol = TABLE[name]
    check(f, args, order, rtol)


def test_custom_vjp_uses_the_primal_function():
    @ember.custom_vjp
    def g(x):
        return lax.sin(x) * x

    g.defvjp(lambda x: (g(x), x), lambda r, ct: (ct * 0.0,))   # a deliberately wrong rule
    x, v = _vec(), np.ones(4)
    zs = [np.zeros(4)] * 5
    _, ys = jet(g, (x,), ([v] + zs,))
    _, ref = jet(lambda x: lax.sin(x) * x, (x,), ([v] + zs,))
    for a, b in zip(ys, ref):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-14)
    # x sin x along x + t: the 6th derivative is -6 cos x... closed form: d^n = x sin^(n) + n sin^(n-1)
    sin_d = [np.sin, np.cos, lambda t: -np.sin(t), lambda t: -np.cos(t)]
    for n, a in enumerate(ys, start=1):
        np.testing.assert_allclose(np.asarray(a), x * sin_d[n % 4](x) + n * sin_d[(n - 1) % 4](x), rtol=1e-12)


# Primitives whose outputs are integer/bool or piecewise constant: every Taylor term is zero.
ZERO_SERIES = {"and", "argmax", "argmin", "bitcast_convert_type", "ceil", "clz", "eq", "floor", "ge", "gt",
               "iota", "is_finite", "le", "lt", "ne", "nextafter", "not", "or", "population_count",
               "reduce_and", "reduce_or", "reduce_xor", "round", "shift_left", "shift_right_arithmetic",
               "shift_right_logical", "sign", "stop_gradient", "xor", "threefry2x32", "qr_pivots"}
COVERED_ELSEWHERE = {"custom_vjp_call",   # test_custom_vjp_uses_the_primal_function
                     "pure_callback",    # tests/debug/test_pure_callback.py: no derivative, a clear error
                     "debug_callback"}   # tests/debug/test_callbacks.py::test_jet_prints_primal


def test_every_primitive_has_a_taylor_rule():
    missing = sorted(n for n, p in PRIMITIVES.items() if p.taylor is None and "taylor" not in p.not_applicable)
    assert missing == [], f"primitives without a Taylor rule: {missing}"
    # only non-differentiable ones may opt out
    opted_out = sorted(n for n, p in PRIMITIVES.items() if "taylor" in p.not_applicable)
    assert opted_out == ["custom_lin"]


def test_every_rule_is_in_the_table():
    untested = sorted(n for n in PRIMITIVES if n not in TABLE and n not in ZERO_SERIES
                      and n not in COVERED_ELSEWHERE and "taylor" not in PRIMITIVES[n].not_applicable)
    assert untested == [], f"Taylor rules without a row in TABLE: {untested}"


@pytest.mark.parametrize("name", sorted(ZERO_SERIES - {"iota", "threefry2x32", "bitcast_convert_type"}))
def test_zero_series_primitives(name):
    fns = {"stop_gradient": ember.stop_gradient, "sign": lax.sign, "floor": lax.floor, "ceil": lax.ceil,
           "round": lax.round, "is_finite": lax.is_finite, "nextafter": lambda x: lax.nextafter(x, 2.0)}
    x = _vec() * 3
    if name in fns:
        f = fns[name]
    elif name in ("eq", "ne", "lt", "le", "gt", "ge"):
        f = lambda x: getattr(lax, name)(x, 1.0)  # noqa: E731
    elif name in ("argmax", "argmin"):
        f = lambda x: getattr(lax, name)(x, 0, np.int32)  # noqa: E731
    elif name == "qr_pivots":
        f = lambda x: _qr_pivots(enp.outer(x, x) + enp.diag(x))  # noqa: E731
    else:   # integer/bool primitives: reached from a float through a conversion
        f = {"and": lambda x: lax.bitwise_and(lax.convert_element_type(x, "int32"), 3),
             "or": lambda x: lax.bitwise_or(lax.convert_element_type(x, "int32"), 3),
             "xor": lambda x: lax.bitwise_xor(lax.convert_element_type(x, "int32"), 3),
             "not": lambda x: lax.bitwise_not(lax.convert_element_type(x, "int32")),
             "clz": lambda x: lax.clz(lax.convert_element_type(x, "int32")),
             "population_count": lambda x: lax.population_count(lax.convert_element_type(x, "int32")),
             "shift_left": lambda x: lax.shift_left(lax.convert_element_type(x, "int32"), 1),
             "shift_right_arithmetic": lambda x: lax.shift_right_arithmetic(lax.convert_element_type(x, "int32"), 1),
             "shift_right_logical": lambda x: lax.shift_right_logical(lax.convert_element_type(x, "int32"), 1),
             "reduce_and": lambda x: lax.reduce_and(lax.gt(x, 1.0), (0,)),
             "reduce_or": lambda x: lax.reduce_or(lax.gt(x, 1.0), (0,)),
             "reduce_xor": lambda x: lax.reduce_xor(lax.gt(x, 1.0), (0,))}[name]
    y, ys = jet(f, (x,), ([np.ones(4), np.ones(4)],))
    np.testing.assert_array_equal(np.asarray(y), np.asarray(f(x)))
    for t in ys:
        assert not np.any(np.asarray(t).astype(np.float64) if np.asarray(t).dtype != ember.dtypes.float0 else 0)


# --- order 10 against mpmath (independent, 40-digit derivatives) -----------------------

mpmath = pytest.importorskip("mpmath")
mp = mpmath.mp

MP_UNARY = {
    "exp": (lax.exp, mpmath.exp, 0.5), "exp2": (lax.exp2, lambda x: mpmath.power(2, x), 0.5),
    "expm1": (lax.expm1, mpmath.expm1, 0.5), "log": (lax.log, mpmath.log, 1.5),
    "log1p": (lax.log1p, mpmath.log1p, 0.5), "tanh": (lax.tanh, mpmath.tanh, 0.5),
    "logistic": (lax.logistic, lambda x: 1 / (1 + mpmath.exp(-x)), 0.5), "tan": (lax.tan, mpmath.tan, 0.5),
    "sin": (lax.sin, mpmath.sin, 0.5), "cos": (lax.cos, mpmath.cos, 0.5), "sinh": (lax.sinh, mpmath.sinh, 0.5),
    "cosh": (lax.cosh, mpmath.cosh, 0.5), "sqrt": (lax.sqrt, mpmath.sqrt, 1.5),
    "rsqrt": (lax.rsqrt, lambda x: 1 / mpmath.sqrt(x), 1.5), "cbrt": (lax.cbrt, mpmath.cbrt, 1.5),
    "erf": (lax.erf, mpmath.erf, 0.5), "erfc": (lax.erfc, mpmath.erfc, 0.5),
    "erf_inv": (lax.erf_inv, mpmath.erfinv, 0.2), "asin": (lax.asin, mpmath.asin, 0.2),
    "acos": (lax.acos, mpmath.acos, 0.2), "atan": (lax.atan, mpmath.atan, 0.5),
    "asinh": (lax.asinh, mpmath.asinh, 0.5), "acosh": (lax.acosh, mpmath.acosh, 1.7),
    "atanh": (lax.atanh, mpmath.atanh, 0.2), "lgamma": (lax.lgamma, mpmath.loggamma, 2.5),
    "digamma": (lax.digamma, mpmath.digamma, 2.5),
    "polygamma": (lambda x: lax.polygamma(2, x), lambda x: mpmath.psi(2, x), 2.5),
    "square": (lax.square, lambda x: x * x, 0.5),
    "integer_pow": (lambda x: lax.integer_pow(x, -3), lambda x: x ** -3, 1.5),
    "abs": (lax.abs, lambda x: abs(x), -0.5),
}
MP_BINARY = {
    "div": (lax.div, lambda a, b: a / b), "pow": (lax.pow, mpmath.power),
    "atan2": (lax.atan2, mpmath.atan2), "mul": (lax.mul, lambda a, b: a * b),
    "rem": (lax.rem, mpmath.fmod),
}


def _mp_derivatives(h, order):
    with mp.workdps(40):
        return [float(d) for d in mpmath.diffs(h, 0, order)][1:]


def _compare(ys, ref, rtol=1e-12):
    for k, (a, b) in enumerate(zip(ys, ref), start=1):
        err = abs(float(np.asarray(a)) - b) / max(1.0, abs(b))
        assert err <= rtol, f"order {k}: {float(np.asarray(a))!r} vs {b!r} (relative error {err:.3g})"


@pytest.mark.parametrize("name", sorted(MP_UNARY))
def test_unary_rules_to_order_10_against_mpmath(name):
    f, g, x0 = MP_UNARY[name]
    v = 0.7
    order = 10
    _, ys = jet(f, (np.float64(x0),), ([np.float64(v)] + [np.float64(0.0)] * (order - 1),))
    _compare(ys, _mp_derivatives(lambda t: g(mpmath.mpf(x0) + t * mpmath.mpf(v)), order))


@pytest.mark.parametrize("name", sorted(MP_BINARY))
def test_binary_rules_to_order_10_against_mpmath(name):
    f, g = MP_BINARY[name]
    a0, b0, va, vb = 1.3, 0.6, 0.5, -0.3
    order = 10
    z = [np.float64(0.0)] * (order - 1)
    _, ys = jet(f, (np.float64(a0), np.float64(b0)), ([np.float64(va)] + z, [np.float64(vb)] + z))
    h = lambda t: g(mpmath.mpf(a0) + t * mpmath.mpf(va), mpmath.mpf(b0) + t * mpmath.mpf(vb))  # noqa: E731
    _compare(ys, _mp_derivatives(h, order))


def test_jax_convention_closed_forms():
    # JAX's documented example: x^3 at 2 along (1, 0, 0) gives the first three derivatives
    f0, (f1, f2, f3) = jet(lambda x: x ** 3, (2.0,), ((1.0, 0.0, 0.0),))
    assert [float(f0), float(f1), float(f2), float(f3)] == [8.0, 12.0, 12.0, 6.0]
    # a curve with a second-order term: x(t) = x0 + h1 t + h2 t^2 / 2
    h0, h1, h2 = 2.0, 1.0, 3.0
    _, (g1, g2) = jet(lambda x: x ** 3, (h0,), ((h1, h2),))
    assert float(g1) == 3 * h0 ** 2 * h1
    assert float(g2) == 6 * h0 * h1 ** 2 + 3 * h0 ** 2 * h2
    # exp and sin along a line to order 10: D^k exp(x0 + t v) = v^k exp(x0)
    x0, v = np.float64(0.3), np.float64(1.7)
    _, ys = jet(enp.exp, (x0,), ([v] + [np.float64(0)] * 9,))
    _compare(ys, [v ** k * math.exp(x0) for k in range(1, 11)], 1e-14)
    _, ys = jet(enp.sin, (x0,), ([v] + [np.float64(0)] * 9,))
    _compare(ys, [v ** k * math.sin(x0 + k * math.pi / 2) for k in range(1, 11)], 1e-14)
