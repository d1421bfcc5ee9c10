"""Every elementwise `ember.lax` function returns exactly its abstract dtype, eagerly,
under jit and under grad, for Python floats and numpy arrays of every float dtype
(numpy and scipy.special upcast: a Python float to float64, float32 to float64 in
polygamma), and the values match a float64 reference."""
import math

import ml_dtypes
import numpy as np
import pytest
import scipy.special as sp

import ember
from ember import lax

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# name -> (float64 reference, a point in its domain)
UNARY = {
    "abs": (np.abs, -0.5), "acos": (np.arccos, 0.5), "acosh": (np.arccosh, 1.5),
    "asin": (np.arcsin, 0.5), "asinh": (np.arcsinh, 0.5), "atan": (np.arctan, 0.5),
    "atanh": (np.arctanh, 0.5), "cbrt": (np.cbrt, 0.5), "ceil": (np.ceil, 0.5),
    "cos": (np.cos, 0.5), "cosh": (np.cosh, 0.5), "digamma": (sp.psi, 0.5),
    "erf": (sp.erf, 0.5), "erf_inv": (sp.erfinv, 0.5), "erfc": (sp.erfc, 0.5),
    "exp": (np.exp, 0.5), "exp2": (np.exp2, 0.5), "expm1": (np.expm1, 0.5),
    "floor": (np.floor, 0.5), "is_finite": (np.isfinite, 0.5), "lgamma": (sp.gammaln, 0.5),
    "log": (np.log, 0.5), "log1p": (np.log1p, 0.5), "logistic": (sp.expit, 0.5),
    "neg": (np.negative, 0.5), "round": (np.rint, 1.5), "rsqrt": (lambda x: 1 / np.sqrt(x), 0.5),
    "sign": (np.sign, -0.5), "sin": (np.sin, 0.5), "sinh": (np.sinh, 0.5),
    "sqrt": (np.sqrt, 0.5), "square": (np.square, 0.5), "tan": (np.tan, 0.5),
    "tanh": (np.tanh, 0.5),
    "polygamma": (lambda x: sp.polygamma(1, x), 0.5),
    "integer_pow": (lambda x: x ** 3, 0.5),
}
PARAMS = {"polygamma": lambda f: (lambda x: f(1, x)), "integer_pow": lambda f: (lambda x: f(x, 3))}
NOT_SMOOTH = {"ceil", "floor", "round", "sign", "is_finite"}

BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "rem": np.fmod,
    "pow": np.power, "max": np.maximum, "min": np.minimum, "atan2": np.arctan2,
    "nextafter": np.nextafter, "eq": np.equal, "ne": np.not_equal, "lt": np.less,
    "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
}
SMOOTH2 = {"add", "sub", "mul", "div", "pow", "atan2"}

FLOATS = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]
TOL = {np.dtype(np.float16): 2e-3, np.dtype(ml_dtypes.bfloat16): 1.6e-2,
       np.dtype(np.float32): 2e-6, np.dtype(np.float64): 1e-12}


def _lax_unary(name):
    f = getattr(lax, name)
    return PARAMS[name](f) if name in PARAMS else f


def _inputs(v):
    """(value, the dtype its abstract evaluation has): a Python float is weak float32."""
    yield v, np.dtype(np.float32)
    for d in FLOATS:
        yield np.asarray([v, v], d), np.dtype(d)


def _check(got, want_dtype, ref64, floor=0.0):
    got_np = np.asarray(got)
    assert got_np.dtype == want_dtype, (got_np.dtype, want_dtype)
    want = np.asarray(ref64).astype(want_dtype)
    if want_dtype == np.bool_:
        np.testing.assert_array_equal(got_np, want)
    else:
        tol = TOL[np.dtype(want_dtype if want_dtype.kind == "f" or want_dtype == ml_dtypes.bfloat16
                           else np.float32)]
        tol = max(4 * tol, floor)
        np.testing.assert_allclose(got_np.astype(np.float64), want.astype(np.float64),
                                   rtol=tol, atol=tol)


def _abstract_dtype(f, *xs):
    return np.dtype(ember.eval_shape(f, *xs).dtype)


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("mode", ["eager", "jit", "reference"])
def test_unary_dtype_is_the_abstract_one(name, mode):
    ref, v = UNARY[name]
    f = _lax_unary(name)
    g = {"eager": f, "jit": ember.jit(f), "reference": ember.jit(f, backend="reference")}[mode]
    for x, d in _inputs(v):
        want = np.dtype(np.bool_) if name == "is_finite" else d
        assert _abstract_dtype(f, x) == want
        _check(g(x), want, ref(np.asarray(x, np.float64)))


@pytest.mark.parametrize("name", sorted(set(UNARY) - NOT_SMOOTH))
@pytest.mark.parametrize("staged", [False, True])
def test_unary_grad_dtype_and_value(name, staged):
    ref, v = UNARY[name]
    f = _lax_unary(name)
    g = ember.grad(f)
    g = ember.jit(g) if staged else g
    h = 1e-6
    slope = (ref(np.float64(v) + h) - ref(np.float64(v) - h)) / (2 * h)
    for x, d in _inputs(v):
        x0 = x if isinstance(x, float) else x[0]
        got = g(x0)
        assert np.asarray(got).dtype == d
        _check(got, d, slope, floor=1e-7)  # central differences are good to ~1e-9


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_binary_dtype_is_the_abstract_one(name, mode):
    ref = BINARY[name]
    f = getattr(lax, name)
    g = f if mode == "eager" else ember.jit(f)
    a, b = 0.75, 0.5
    want_of = (lambda d: np.dtype(np.bool_)) if name in ("eq", "ne", "lt", "le", "gt", "ge") \
        else (lambda d: d)
    for (x, d), (y, _) in zip(_inputs(a), _inputs(b)):
        assert _abstract_dtype(f, x, y) == want_of(d)
        if name == "nextafter":  # one ulp of the operand's own dtype
            want = np.nextafter(np.asarray(x, d), np.asarray(y, d))
            got = np.asarray(g(x, y))
            assert got.dtype == d
            np.testing.assert_array_equal(got, want)
            continue
        _check(g(x, y), want_of(d), ref(np.asarray(x, np.float64), np.asarray(y, np.float64)))
        # a Python float next to an array takes the array's dtype (weak typing)
        if not isinstance(x, float):
            h = (lambda u: f(u, b)) if mode == "eager" else ember.jit(lambda u: f(u, b))
            _check(h(x), want_of(d), ref(np.asarray(x, np.float64), b))


@pytest.mark.parametrize("name", sorted(SMOOTH2))
def test_binary_grad_dtype(name):
    f = getattr(lax, name)
    ref = BINARY[name]
    h = 1e-6
    a, b = 0.75, 0.5
    da = (ref(a + h, b) - ref(a - h, b)) / (2 * h)
    db = (ref(a, b + h) - ref(a, b - h)) / (2 * h)
    for (x, d), (y, _) in zip(_inputs(a), _inputs(b)):
        x0, y0 = (x, y) if isinstance(x, float) else (x[0], y[0])
        gx, gy = ember.grad(f, argnums=(0, 1))(x0, y0)
        _check(gx, d, da, floor=1e-7)
        _check(gy, d, db, floor=1e-7)


def test_polygamma_under_jit_holds_float32_data():
    x = np.asarray([0.5, 2.0], np.float32)
    got = np.asarray(ember.jit(lambda v: lax.polygamma(2, v))(x))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, sp.polygamma(2, x.astype(np.float64)), rtol=1e-6)
    assert math.isclose(float(lax.sin(0.5)), math.sin(0.5), rel_tol=1e-7)


_SIGN_DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]


def test_sign_of_signed_zeros_and_nan_is_numpy_float64s_on_every_dtype_and_path():
    # numpy's float64 sign gives +0.0 for -0.0; ml_dtypes' bfloat16 sign kept -0.0 eagerly
    # and on the reference backend while the native code gave +0.0
    vals = [-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, -2.5, 3.0, 1e-30, -1e-30, 6e-8, -6e-8]
    want64 = np.sign(np.array(vals, np.float64))
    assert np.signbit(want64[:2]).tolist() == [False, False]
    for dtype in _SIGN_DTYPES:
        x = np.array(vals, np.float64).astype(dtype)
        want = np.sign(x.astype(np.float64)).astype(dtype)
        for path, f in [("eager", lax.sign), ("jit", ember.jit(lax.sign)),
                        ("reference", ember.jit(lax.sign, backend="reference"))]:
            got = np.asarray(f(x))
            assert got.dtype == np.dtype(dtype), (path, got.dtype)
            g64, w64 = got.astype(np.float64), want.astype(np.float64)
            np.testing.assert_array_equal(g64, w64, err_msg=f"{np.dtype(dtype)} {path}")
            assert (np.signbit(g64) == np.signbit(w64))[~np.isnan(w64)].all(), (dtype, path, got)
