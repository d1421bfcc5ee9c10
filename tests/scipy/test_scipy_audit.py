"""Regressions from the differential audit of ember.scipy against jax.scipy / scipy, and
the complex-input gaps (logsumexp, cg, gmres).  References are numpy, scipy or closed
forms: no JAX needed."""
import math

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.scipy import special, stats
from ember.scipy.sparse.linalg import cg, gmres

sps = pytest.importorskip("scipy.special")
scipy_stats = pytest.importorskip("scipy.stats")


def _np_lse(a, b=None, axis=None):
    e = np.exp(a) if b is None else b * np.exp(a)
    return np.log(np.sum(e, axis=axis))


# ---------------------------------------------------------------------------------------
# complex logsumexp

RNG = np.random.default_rng(0)
A_C = RNG.normal(size=(3, 4)) + 3j * RNG.normal(size=(3, 4))
B_R = RNG.normal(size=(3, 4))
B_C = B_R + 1j * RNG.normal(size=(3, 4))


@pytest.mark.parametrize("b", [None, B_R, B_C])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_logsumexp_complex_values(b, axis):
    out = np.asarray(special.logsumexp(A_C, axis=axis, b=b))
    ref = _np_lse(A_C, b, axis)
    assert out.dtype == np.complex128
    # the principal branch: compare exp (log's imaginary part is modulo 2 pi)
    np.testing.assert_allclose(np.exp(out), np.exp(ref), rtol=1e-12)
    assert np.all(np.abs(out.imag) <= math.pi)


def test_logsumexp_complex_return_sign_and_keepdims():
    out, sign = special.logsumexp(A_C, axis=1, b=B_C, keepdims=True, return_sign=True)
    s = np.sum(B_C * np.exp(A_C), axis=1, keepdims=True)
    assert np.asarray(out).dtype == np.float64 and np.asarray(sign).dtype == np.complex128
    assert out.shape == (3, 1)
    np.testing.assert_allclose(np.asarray(out), np.log(np.abs(s)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(sign), s / np.abs(s), rtol=1e-12)


def test_logsumexp_complex_large_and_complex64():
    a = np.array([1000.0 + 1.0j, 1000.0 - 1.0j])
    out = complex(special.logsumexp(a))
    assert out == pytest.approx(1000.0 + math.log(2 * math.cos(1.0)), rel=1e-14)
    o32 = special.logsumexp(a.astype(np.complex64))
    assert np.asarray(o32).dtype == np.complex64


def test_logsumexp_complex_derivatives_vs_fd():
    a = A_C[0]
    t = RNG.normal(size=4) + 1j * RNG.normal(size=4)
    f = lambda x: special.logsumexp(x, b=B_C[0])
    _, tan = ember.jvp(f, (a,), (t,))
    h = 1e-6
    fd = (complex(f(a + h * t)) - complex(f(a - h * t))) / (2 * h)
    assert complex(tan) == pytest.approx(fd, rel=1e-7)
    # holomorphic: the derivative is softmax-like weights b e^a / sum
    w = B_C[0] * np.exp(a) / np.sum(B_C[0] * np.exp(a))
    np.testing.assert_allclose(np.asarray(ember.grad(f, holomorphic=True)(a)), w, rtol=1e-12)
    # a real loss L of a complex input: JAX's convention, dL/dx - i dL/dy; for
    # L = Re f + 2 Im f that is (1 - 2i) f'
    g = np.asarray(ember.grad(lambda x: enp.real(f(x)) + 2.0 * enp.imag(f(x)))(a))
    np.testing.assert_allclose(g, (1.0 - 2.0j) * w, rtol=1e-12)
    # second order through jvp-of-grad against differences of the first derivative
    gf = ember.grad(f, holomorphic=True)
    _, h2 = ember.jvp(gf, (a,), (t,))
    fd2 = (np.asarray(gf(a + h * t)) - np.asarray(gf(a - h * t))) / (2 * h)
    np.testing.assert_allclose(np.asarray(h2), fd2, rtol=1e-6, atol=1e-9)


def test_logsumexp_complex_jit_vmap():
    f = lambda x: special.logsumexp(x, axis=-1)
    eager = np.asarray(f(A_C))
    np.testing.assert_allclose(np.asarray(ember.jit(f)(A_C)), eager, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(ember.vmap(special.logsumexp)(A_C)), eager, rtol=1e-14)


def test_logsumexp_zero_weight_where_and_empty():
    # a zero weight removes its term even where a is inf (scipy, JAX)
    assert float(special.logsumexp(np.array([np.inf, 0.0]), b=np.array([0.0, 1.0]))) == 0.0
    # where= masks entries out
    a = np.array([1.0, 2.0, 3.0])
    out = float(special.logsumexp(a, where=np.array([True, False, True])))
    assert out == pytest.approx(_np_lse(a[[0, 2]]), rel=1e-14)
    with pytest.raises(TypeError, match="boolean"):
        special.logsumexp(a, where=np.ones(3))
    # an empty sum is log(0) = -inf
    assert float(special.logsumexp(np.zeros((0,)))) == -np.inf
    np.testing.assert_array_equal(np.asarray(special.logsumexp(np.zeros((0, 2)), axis=0)), [-np.inf] * 2)


# ---------------------------------------------------------------------------------------
# complex cg / gmres

N = 5
X_ = RNG.normal(size=(N, N)) + 1j * RNG.normal(size=(N, N))
H_ = X_ @ X_.conj().T + N * np.eye(N)                 # Hermitian positive definite
G_ = RNG.normal(size=(N, N)) + 1j * RNG.normal(size=(N, N)) + 3 * np.eye(N)
BV = RNG.normal(size=N) + 1j * RNG.normal(size=N)
X0 = RNG.normal(size=N) + 1j * RNG.normal(size=N)
PREC = np.diag(1.0 / np.diag(H_).real).astype(complex)


@pytest.mark.parametrize("kw", [{}, {"x0": X0}, {"M": PREC}, {"M": PREC, "x0": X0}])
@pytest.mark.parametrize("solver,mat", [(cg, H_), (gmres, G_)])
def test_complex_solvers_values(solver, mat, kw):
    x, info = solver(mat, BV, tol=1e-12, **kw)
    assert info is None and np.asarray(x).dtype == np.complex128
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(mat, BV), rtol=1e-9, atol=1e-11)


def test_complex_solvers_function_operator_and_pytree():
    x, _ = cg(lambda v: H_ @ v, BV, tol=1e-12)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(H_, BV), rtol=1e-9)
    d = np.array([2.0, 3.0 + 0j])
    b = {"a": BV[:2], "b": BV[2:]}
    x, _ = gmres(lambda t: {"a": t["a"] * d, "b": t["b"] * (1.0 + 1.0j)}, b, tol=1e-12)
    np.testing.assert_allclose(np.asarray(x["a"]), BV[:2] / d, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(x["b"]), BV[2:] / (1.0 + 1.0j), rtol=1e-12)


def _loss(x):
    return enp.sum(enp.abs(x) ** 2 + enp.real(x))


@pytest.mark.parametrize("solver,mat", [(cg, H_), (gmres, G_)])
def test_complex_solvers_derivatives(solver, mat):
    inv = np.linalg.inv(mat)
    # grad of a real loss in b (JAX's convention, dL/dRe b - i dL/dIm b) against central
    # differences along the real and imaginary directions
    f = lambda b: _loss(solver(mat, b, tol=1e-13)[0])
    g = np.asarray(ember.grad(f)(BV))
    h = 1e-6
    for k in range(N):
        e = np.zeros(N, complex)
        e[k] = 1.0
        dre = (float(f(BV + h * e)) - float(f(BV - h * e))) / (2 * h)
        dim = (float(f(BV + 1j * h * e)) - float(f(BV - 1j * h * e))) / (2 * h)
        assert g[k] == pytest.approx(dre - 1j * dim, rel=1e-6, abs=1e-8)
    # jvp in b and in the matrix: d(A^-1 b) = A^-1 (db - dA x)
    tb = RNG.normal(size=N) + 1j * RNG.normal(size=N)
    _, t = ember.jvp(lambda b: solver(mat, b, tol=1e-13)[0], (BV,), (tb,))
    np.testing.assert_allclose(np.asarray(t), inv @ tb, rtol=1e-8, atol=1e-10)
    dA = 0.1 * (RNG.normal(size=(N, N)) + 1j * RNG.normal(size=(N, N)))
    if solver is cg:
        dA = dA + dA.conj().T
    _, t = ember.jvp(lambda m: solver(m, BV, tol=1e-13)[0], (mat,), (dA,))
    np.testing.assert_allclose(np.asarray(t), -inv @ dA @ inv @ BV, rtol=1e-7, atol=1e-9)
    # reverse mode in the matrix agrees with forward mode
    ga = np.asarray(ember.grad(lambda m: _loss(solver(m, BV, tol=1e-13)[0]))(mat))
    _, tl = ember.jvp(lambda m: _loss(solver(m, BV, tol=1e-13)[0]), (mat,), (dA,))
    # dL = Re(sum(g * dA)) in that convention
    assert float(np.real(np.sum(ga * dA))) == pytest.approx(float(tl), rel=1e-6)


@pytest.mark.parametrize("solver,mat", [(cg, H_), (gmres, G_)])
def test_complex_solvers_jit_vmap(solver, mat):
    f = lambda b: solver(mat, b, tol=1e-12)[0]
    np.testing.assert_allclose(np.asarray(ember.jit(f)(BV)), np.linalg.solve(mat, BV), rtol=1e-9)
    bs = np.stack([BV, X0])
    np.testing.assert_allclose(np.asarray(ember.vmap(f)(bs)), np.linalg.solve(mat, bs.T).T,
                               rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("solver", [cg, gmres])
def test_solver_errors_name_dtypes_and_shapes(solver):
    with pytest.raises(TypeError, match=r"complex128 b: pass b.astype\(complex128\)"):
        solver(H_, np.ones(N))
    with pytest.raises(TypeError, match=r"`M` must be 5 x 5 .* float64\[2,2\]"):
        solver(np.eye(N), np.ones(N), M=np.eye(2))
    with pytest.raises(TypeError, match=r"pass x0.astype\(float64\)"):
        solver(np.eye(N), np.ones(N), x0=np.ones(N, np.float32))
    with pytest.raises(TypeError, match="maxiter must be"):
        solver(np.eye(N), np.ones(N), maxiter="10")
    with pytest.raises(TypeError, match=r"float64 b: pass b.astype\(float64\)"):
        solver(np.eye(N), np.arange(N))


# ---------------------------------------------------------------------------------------
# special: silent wrong answers found by the audit


def test_xlogy_xlog1py_nan_y_propagates():
    assert np.isnan(float(special.xlogy(0.0, np.nan)))
    assert np.isnan(float(special.xlog1py(0.0, np.nan)))
    assert float(special.xlogy(0.0, 0.0)) == 0.0
    assert float(special.xlog1py(0.0, -1.0)) == 0.0
    # the derivative in x at x = 0 is still log(y)
    g = ember.grad(special.xlogy)(np.float64(0.0), np.float64(2.0))
    assert float(g) == pytest.approx(math.log(2.0))


def test_betaln_infinite_argument():
    for a, b in [(np.inf, 1.0), (1.0, np.inf), (np.inf, 2.5)]:
        assert float(special.betaln(a, b)) == float(sps.betaln(a, b)) == -np.inf
    assert np.isnan(float(special.betaln(np.inf, np.inf)))


def test_zeta_infinite_s():
    assert float(special.zeta(np.float64(np.inf), 1.0)) == 1.0
    assert float(special.zeta(np.float64(np.inf), 0.5)) == np.inf
    assert float(special.zeta(np.float64(np.inf), 2.0)) == 0.0
    assert float(special.zeta(np.float64(np.inf))) == 1.0


def test_softmax_family_empty_and_inf():
    for f in (special.softmax, special.log_softmax):
        assert f(np.zeros((0,))).shape == (0,)
        assert f(np.zeros((2, 0)), axis=1).shape == (2, 0)
    # a +inf entry: NaN, as scipy (not a mix of NaN and 0)
    np.testing.assert_array_equal(np.isnan(np.asarray(special.softmax(np.array([np.inf, 1.0])))),
                                  [True, True])
    np.testing.assert_allclose(np.asarray(special.softmax(np.array([-np.inf, 0.0]))), [0.0, 1.0])


# ---------------------------------------------------------------------------------------
# stats: silent wrong answers found by the audit


def test_cauchy_logpdf_far_tail():
    for x in [1e300, -1e300, 1e160, 3.0, 0.5]:
        assert float(stats.cauchy.logpdf(np.float64(x))) == pytest.approx(
            scipy_stats.cauchy.logpdf(x), rel=1e-14)
    assert float(stats.cauchy.logpdf(np.float32(1e30))) == pytest.approx(
        scipy_stats.cauchy.logpdf(1e30), rel=1e-6)
    g = ember.grad(stats.cauchy.logpdf)(np.float64(2.0))
    assert float(g) == pytest.approx(-0.8, rel=1e-14)


@pytest.mark.parametrize("fn", ["logpdf", "pdf", "cdf", "sf"])
def test_t_infinite_df_is_normal(fn):
    xs = np.array([-3.0, -0.5, 0.0, 1.0, 2.5, np.inf])
    out = np.asarray(getattr(stats.t, fn)(xs, np.inf, loc=0.5, scale=2.0))
    ref = getattr(scipy_stats.norm, fn)(xs, loc=0.5, scale=2.0)
    np.testing.assert_allclose(out, ref, rtol=1e-13, atol=1e-300)


def test_t_logpdf_large_df():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    for df in [9.0, 25.0, 1e4, 1e10]:
        for x in [0.0, 1.0, 2.5]:
            ref = (mp.loggamma((df + 1) / 2) - mp.loggamma(df / 2) - mp.log(mp.pi * df) / 2
                   - (df + 1) / 2 * mp.log1p(mp.mpf(x) ** 2 / df))
            # scipy itself is 2e-12 off at df = 1e4; the plain lgamma difference 6e-7 at 1e10
            assert float(stats.t.logpdf(np.float64(x), np.float64(df))) == pytest.approx(
                float(ref), rel=1e-14, abs=1e-15)
    # continuous across the switch to Stirling's series at df = 20, derivative included
    lo, hi = (float(stats.t.logpdf(1.3, np.float64(20.0 + s))) for s in (-1e-9, 1e-9))
    assert abs(hi - lo) < 1e-10
    g = float(ember.grad(lambda d: stats.t.logpdf(1.3, d))(np.float64(25.0)))
    h = 1e-5
    fd = (scipy_stats.t.logpdf(1.3, 25 + h) - scipy_stats.t.logpdf(1.3, 25 - h)) / (2 * h)
    assert g == pytest.approx(fd, rel=1e-6)
