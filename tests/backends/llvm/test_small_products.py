"""Small matrix products written out in hot programs (loop bodies):
products.`_small_product` against the packed gemm (bitwise, for the row and
column forms, which sum every element in k order as it does), against float64
(the dot form), and the overflow recomputation on their report."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember.backends.kernels import GemmKernel, schedule
from ember.backends.llvm.codegen import render_program
from ember.backends.llvm.executable import compile_graph
from ember.backends.llvm.kernel_target import cpu_target
from ember.backends.llvm import packed_gemm
from ember.backends.llvm.products import SMALL_ROW_MIN


def _product(ta, tb):
    def f(a, b):
        return (a.T if ta else a) @ (b.T if tb else b)
    return f


def _operands(rng, m, n, k, ta, tb, dtype, batch=()):
    a = rng.standard_normal(batch + ((k, m) if ta else (m, k))).astype(dtype)
    b = rng.standard_normal(batch + ((n, k) if tb else (k, n))).astype(dtype)
    if batch:
        a, b = (np.swapaxes(a, -1, -2) if ta else a), (np.swapaxes(b, -1, -2) if tb else b)
        return a, b
    return a, b


def _run(f, a, b, hot):
    g = ember.make_graph(f)(a, b)
    return np.asarray(compile_graph(g, hot=hot)(a, b)[0])


def _is_dot_form(g, ta, tb):
    gemms = [s for s in schedule(g, cpu_target()).steps if isinstance(s, GemmKernel)]
    return any(s.n < SMALL_ROW_MIN and not s.trans_a and (s.trans_b or s.n == 1) for s in gemms)


@settings(max_examples=15, deadline=None)
@given(m=st.integers(1, 40), n=st.integers(1, 40), k=st.integers(1, 40), ta=st.booleans(), tb=st.booleans(),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_small_products_match_the_packed_gemm(m, n, k, ta, tb, dtype):
    rng = np.random.default_rng(m * 10000 + n * 100 + k)
    a, b = _operands(rng, m, n, k, ta, tb, dtype)
    f = _product(ta, tb)
    hot, cold = _run(f, a, b, True), _run(f, a, b, False)
    prog = schedule(ember.make_graph(f)(a, b), cpu_target())
    if any(isinstance(s, GemmKernel) for s in prog.steps):   # (k = 1 fuses as an expression)
        assert "@ember_gemm_f" not in render_program(prog, "m", hot=True)[0]   # the written-out path ran
    exact = (a.astype(np.float64).T if ta else a.astype(np.float64)) @ (b.astype(np.float64).T if tb else
                                                                         b.astype(np.float64))
    if _is_dot_form(ember.make_graph(f)(a, b), ta, tb) or packed_gemm.use_blas():   # (BLAS sums in its own order)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(hot, exact, rtol=tol * 10, atol=tol * np.sqrt(k) * 10)
    else:
        np.testing.assert_array_equal(hot, cold)


def test_batched_and_vector_products():
    rng = np.random.default_rng(0)
    for batch, m, n, k in [((3,), 4, 9, 5), ((2, 2), 7, 1, 6), ((3,), 1, 12, 8)]:
        a, b = _operands(rng, m, n, k, False, False, np.float32, batch)
        f = _product(False, False)
        np.testing.assert_allclose(_run(f, a, b, True), _run(f, a, b, False), rtol=1e-6, atol=1e-6)
    A, x = rng.standard_normal((64, 64)).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    for f in (lambda A, x: A @ x, lambda A, x: x @ A, lambda A, x: A.T @ x):
        np.testing.assert_allclose(_run(f, A, x, True), f(A.astype(np.float64), x.astype(np.float64)),
                                   rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("n", [1, 16])
def test_overflowing_partial_sums_are_recomputed(n):
    """Partial sums overflow float32 though the exact result is finite: the
    recomputation the report triggers gives the exact values, as the reference does."""
    a = np.full((3, 4), 1e30, np.float32)
    a[:, 1] = a[:, 3] = -1e30
    b = np.empty((4, n), np.float32)
    b[:] = np.array([1e10, 1e10, 2e8, 1e8], np.float32)[:, None]   # exact: 1e38
    f = _product(False, False)
    hot = _run(f, a, b, True)
    want = np.asarray(ember.jit(f, backend="reference")(a, b))
    assert np.isfinite(hot).all()
    np.testing.assert_allclose(hot, want, rtol=1e-6)
    c = a.copy()
    c[0, 0] = np.inf   # a non-finite operand stays non-finite
    assert np.isinf(_run(f, c, b, True)[0]).all()


def test_small_products_inside_loops():
    rng = np.random.default_rng(1)
    W = rng.standard_normal((16, 16)).astype(np.float32) * 0.3
    A = rng.standard_normal((24, 24)).astype(np.float32) * 0.2

    def f(h, x):
        def body(c, _):
            h, x = c
            return (np.float32(0.5) * (h @ W) + 1.0, A @ x + 0.25), (h @ W.T).sum()
        return ember.scan(body, (h, x), None, length=5)

    h, x = rng.standard_normal((3, 16)).astype(np.float32), rng.standard_normal(24).astype(np.float32)
    got = [np.asarray(o) for o in ember.tree.tree_flatten(ember.jit(f)(h, x))[0]]
    want = [np.asarray(o) for o in ember.tree.tree_flatten(ember.jit(f, backend="reference")(h, x))[0]]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
