"""Higher-order derivatives of elementwise functions at their special points (pow, sinc, remainder)."""
import math

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax


def _pow2(v):
    return lax.pow(v[0], v[1])


# ---- pow: d/dx x**y = y * x**(y-1), d/dy = x**y * log(x) -------------------------------------

@pytest.mark.parametrize("y,want", [(1.0, 1.0), (2.0, 0.0), (3.0, 0.0), (0.5, math.inf)])
def test_pow_grad_x_at_zero(y, want):
    # JAX: y * 0**(y-1)
    assert float(ember.grad(lambda x: lax.pow(x, enp.asarray(y, "float64")))(enp.asarray(0.0, "float64"))) == want


def test_pow_grad_x_at_zero_zero_is_zero():
    # x**0 is the constant 1 (torch gives 0 too; JAX 0.10 gives nan there)
    g = ember.grad(_pow2)(enp.asarray([0.0, 0.0], "float64"))
    np.testing.assert_array_equal(np.asarray(g), [0.0, 0.0])


@pytest.mark.parametrize("y", [2.0, 0.5, 0.0])
def test_pow_grad_y_at_zero_base(y):
    g = ember.grad(lambda y: lax.pow(enp.asarray(0.0, "float64"), y))(enp.asarray(y, "float64"))
    assert float(g) == 0.0


def _pow_hessian(x, y):
    p = x ** y
    lx = math.log(x)
    dxx = y * (y - 1) * x ** (y - 2)
    dxy = x ** (y - 1) * (1 + y * lx)
    dyy = p * lx * lx
    return np.array([[dxx, dxy], [dxy, dyy]])


@pytest.mark.parametrize("x,y", [(2.0, 0.0), (1.0, 1.0), (2.0, 1.0), (1.5, 2.5), (0.5, -1.0), (3.0, 2.0)])
@pytest.mark.parametrize("hess", ["fwd", "rev"])
def test_pow_hessian_symmetric_and_exact(x, y, hess):
    # the y == 0 / y == 1 points: the derivative of y*x**(y-1) w.r.t. y used to be dropped there
    h = ember.hessian(_pow2) if hess == "fwd" else ember.jacrev(ember.jacrev(_pow2))
    got = np.asarray(h(enp.asarray([x, y], "float64")))
    np.testing.assert_allclose(got, _pow_hessian(x, y), rtol=1e-12, atol=1e-14)


# third derivatives d^3 x**y / d v_i d v_j d v_k, v = (x, y), flattened (JAX 0.10 values)
THIRD = {
    (2.0, 0.0): [0.0, -0.25, -0.25, 0.6931471805599453, -0.25, 0.6931471805599453,
                 0.6931471805599453, 0.33302465198892944],
    (1.0, 1.0): [0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0],
    (2.0, 1.0): [0.0, 0.5, 0.5, 1.8667473750380918, 0.5, 1.8667473750380918, 1.8667473750380918,
                 0.6660493039778589],
    (1.5, 2.5): [1.5309310892394863, 6.76119690438027, 6.761196904380269, 2.2448381220914224,
                 6.76119690438027, 2.2448381220914224, 2.2448381220914224, 0.1836913093361368],
}


@pytest.mark.parametrize("point", sorted(THIRD))
def test_pow_third_derivatives(point):
    v = enp.asarray(point, "float64")
    fwd = np.asarray(ember.jacfwd(ember.hessian(_pow2))(v)).ravel()
    rev = np.asarray(ember.jacrev(ember.jacrev(ember.grad(_pow2)))(v)).ravel()
    np.testing.assert_allclose(fwd, THIRD[point], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(rev, THIRD[point], rtol=1e-12, atol=1e-14)


def test_pow_third_derivative_reverse_at_zero_base_is_finite():
    # d^3/dx^3 x**3 = 6 at 0; the log(0) of the exponent's derivative used to leak a nan
    f = lambda v: lax.pow(v[0], v[1])  # noqa: E731
    t = np.asarray(ember.jacrev(ember.jacrev(ember.grad(f)))(enp.asarray([0.0, 3.0], "float64")))
    assert t[0, 0, 0] == 6.0
    g3 = ember.grad(ember.grad(ember.grad(lambda x: lax.pow(x, enp.asarray(3.0, "float64")))))
    assert float(g3(enp.asarray(0.0, "float64"))) == 6.0


# ---- sinc: even, with f^(2n)(0) = (-1)^n pi^(2n) / (2n + 1) ----------------------------------

def _sinc_deriv_at_zero(k):
    return 0.0 if k % 2 else (-1) ** (k // 2) * math.pi ** k / (k + 1)


def test_sinc_repeated_grad_at_zero_exact_to_order_8():
    g = enp.sinc
    for k in range(1, 9):
        g = ember.grad(g)
        got = float(g(enp.asarray(0.0, "float64")))
        assert got == pytest.approx(_sinc_deriv_at_zero(k), rel=1e-13, abs=0.0), k


def test_sinc_second_and_fourth_derivative_at_zero():
    d2 = ember.grad(ember.grad(enp.sinc))
    d4 = ember.grad(ember.grad(d2))
    assert float(d2(enp.asarray(0.0, "float64"))) == pytest.approx(-math.pi ** 2 / 3, rel=1e-14)
    assert float(d4(enp.asarray(0.0, "float64"))) == pytest.approx(math.pi ** 4 / 5, rel=1e-14)


def test_sinc_jet_at_zero_order_10():
    one, zero = enp.asarray(1.0, "float64"), enp.asarray(0.0, "float64")
    y, terms = ember.jet(enp.sinc, (zero,), ((one,) + (zero,) * 9,))
    assert float(y) == 1.0
    np.testing.assert_allclose([float(t) for t in terms],
                               [_sinc_deriv_at_zero(k) for k in range(1, 11)], rtol=1e-13, atol=0)


def test_sinc_hessian_vmapped_over_zero_and_nonzero_points():
    x = enp.asarray([0.0, -0.0, 1e-3, 0.3, 2.3], "float64")
    got = np.asarray(ember.vmap(ember.grad(ember.grad(enp.sinc)))(x))
    want = [-math.pi ** 2 / 3, -math.pi ** 2 / 3, -3.289858392793072, -2.4584852862661744,
            -1.284938745123593]
    np.testing.assert_allclose(got, want, rtol=1e-12)


# mpmath (40 digits) derivatives 1..4 of sin(pi x)/(pi x)
SINC_NEAR = {
    1e-3: [-0.0032898648867278964, -3.289858392793072, 0.01948179531659038, 19.48174953618773],
    0.3: [-0.9020281301388888, -2.4584852862661744, 5.24749315292437, 13.648773849855683],
    2.3: [0.20687863381331686, -1.284938745123593, -0.846257251108884, 12.378101639604226],
}


@pytest.mark.parametrize("x", sorted(SINC_NEAR))
def test_sinc_derivatives_near_zero_do_not_cancel(x):
    # autodiff of sin(u)/u loses all digits of the first derivatives for small u
    g, got = enp.sinc, []
    for _ in range(4):
        g = ember.grad(g)
        got.append(float(g(enp.asarray(x, "float64"))))
    np.testing.assert_allclose(got, SINC_NEAR[x], rtol=1e-11, atol=1e-15)


@pytest.mark.filterwarnings("ignore:invalid value encountered in sin")
def test_sinc_values_match_numpy():
    x = np.concatenate([np.linspace(-3, 3, 601), [0.0, -0.0, 1e-300, 1 / math.pi, -1 / math.pi]])
    np.testing.assert_allclose(np.asarray(enp.sinc(x)), np.sinc(x), rtol=2e-16, atol=2e-16)
    x32 = x.astype(np.float32)
    np.testing.assert_allclose(np.asarray(enp.sinc(x32)), np.sinc(x32), rtol=0, atol=2e-7)
    assert np.isnan(np.asarray(enp.sinc(np.array([np.nan, np.inf])))).all()


# ---- remainder (float): numpy's value (sign of the divisor), JAX's derivatives -------------

REM_X = np.array([-0.0, 0.0, 3.0, -3.0, 2.5, -2.5, 7.0, 1e-20, -1e-20, 4.25])
REM_Y = np.array([1.0, -1.0, 1.5, -1.5, 3.0])


def _rem_pairs():
    x, y = np.meshgrid(REM_X, REM_Y, indexing="ij")
    return x.ravel(), y.ravel()


@pytest.mark.parametrize("jit", [False, True])
def test_remainder_values_and_signed_zeros_match_numpy(jit):
    x, y = _rem_pairs()
    f = ember.jit(enp.remainder) if jit else enp.remainder
    got = np.asarray(f(x, y))
    want = np.remainder(x, y)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    assert not np.signbit(np.asarray(enp.remainder(enp.asarray(-0.0, "float64"), 1.0)))


@pytest.mark.parametrize("jit", [False, True])
def test_remainder_gradients_at_exact_multiples(jit):
    # JAX: d/dx = 1 everywhere (also where the remainder is 0), d/dy = -floor(x / y)
    x, y = _rem_pairs()
    f = lambda a, b: enp.sum(enp.remainder(a, b))  # noqa: E731
    g = ember.grad(f, (0, 1))
    if jit:
        g = ember.jit(g)
    gx, gy = (np.asarray(t) for t in g(enp.asarray(x), enp.asarray(y)))
    np.testing.assert_array_equal(gx, np.ones_like(x))
    np.testing.assert_array_equal(gy, -np.floor(x / y) + 0.0)


def test_remainder_second_derivatives_are_zero():
    h = ember.hessian(lambda v: enp.remainder(v[0], v[1]))
    for point in ([3.0, 1.5], [2.5, 1.0], [0.0, 1.0]):
        np.testing.assert_array_equal(np.asarray(h(enp.asarray(point, "float64"))), np.zeros((2, 2)))


# ---- hypot: smooth wherever (a, b) != (0, 0), a zero operand included -------------------------

def test_hypot_second_derivatives_with_one_operand_zero():
    # d2/da2 hypot(a, b) = b**2 / h**3: 1/|b| at a == 0 (the abs/max/min primal has kinks
    # there, and abs's derivative sign(0) = 0 made it 0); d2/dadb = -ab / h**3 = 0
    def f(v):
        return enp.hypot(v[0], v[1])

    for b in (2.0, -0.5):
        v = np.array([0.0, b])
        want = [[1 / abs(b), 0.0], [0.0, 0.0]]
        np.testing.assert_allclose(np.asarray(ember.hessian(f)(v)), want, rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(np.asarray(ember.jit(ember.hessian(f))(v)), want, rtol=1e-14, atol=1e-14)
    # hypot(x, x[::-1])**2 = x**2 + x[::-1]**2: Hessian 4 I, zeros included
    x = np.array([0.0, 1.0, 2.0])
    h = ember.hessian(lambda x: enp.sum(enp.hypot(x, x[::-1]) ** 2))(x)
    np.testing.assert_allclose(np.asarray(h), 4 * np.eye(3), rtol=1e-14, atol=1e-14)
    ember.testing.check_grads(lambda x: enp.sum(enp.hypot(x, x[::-1] + 0.5) ** 3), (x,), order=3,
                              modes=("fwd", "rev"))


def test_hypot_gradient_at_apex_and_with_a_zero_operand():
    g = ember.grad(lambda a: enp.sum(enp.hypot(a, a)))(np.array([0.0, 1.0]))
    np.testing.assert_allclose(np.asarray(g), [0.0, math.sqrt(2)])
    np.testing.assert_allclose(np.asarray(ember.grad(lambda b: enp.sum(enp.hypot(np.array([3.0, 0.0]), b)))(4.0)),
                               0.8 + 1.0)
