"""The forward Laplacian of a PINN-style tanh MLP, compiled natively (where the
scheduler stacks the value, Jacobian and Laplacian products into one gemm), vs
trace(hessian) in float32 and float64, under jit(vmap), and differentiated."""
import numpy as np
import pytest

import ember
import ember.numpy as enp


def _params(sizes, dtype, seed):
    rng = np.random.default_rng(seed)
    return [((rng.standard_normal((m, n)) / np.sqrt(m)).astype(dtype), (rng.standard_normal(n) * 0.1).astype(dtype))
            for m, n in zip(sizes, sizes[1:])]


def _u(params):
    def u(x):
        for i, (w, b) in enumerate(params):
            x = x @ w + b
            if i < len(params) - 1:
                x = enp.tanh(x)
        return x[0]
    return u


@pytest.mark.parametrize("dtype,tol", [("float32", 2e-4), ("float64", 1e-11)])
@pytest.mark.parametrize("sizes", [(3, 16, 16, 1), (2, 8, 8, 8, 1)])
def test_jit_vmap_laplacian_vs_trace_of_hessian(dtype, tol, sizes):
    u = _u(_params(sizes, dtype, 0))
    pts = np.random.default_rng(1).standard_normal((37, sizes[0])).astype(dtype)
    lap = ember.jit(ember.vmap(ember.laplacian(u)))(pts)
    ref = ember.vmap(lambda z: enp.trace(ember.hessian(u)(z)))(pts)
    assert lap.dtype == np.dtype(dtype) and lap.shape == (37,)
    np.testing.assert_allclose(np.asarray(lap), np.asarray(ref), rtol=tol, atol=tol)


def test_grad_of_a_pinn_loss_matches_trace_of_hessian():
    params = _params((3, 8, 8, 1), "float64", 2)
    pts = np.random.default_rng(3).standard_normal((11, 3))

    def loss(params, laplace):
        return enp.mean(ember.vmap(laplace(_u(params)))(pts) ** 2)
    fwd = ember.jit(ember.grad(lambda p: loss(p, ember.laplacian)))(params)
    ref = ember.grad(lambda p: loss(p, lambda u: lambda z: enp.trace(ember.hessian(u)(z))))(params)
    for a, b in zip(ember.tree.leaves(fwd), ember.tree.leaves(ref)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-11)
