"""Products sharing a weight are one gemm (kernels/merge_products.py): the native
result agrees with the reference interpreter, and the pass stacks exactly the
products that may be stacked (not a chain, not a product reading another, not
products that each fill the threads already)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember.backends.kernels.loop_ir import GemmKernel
from ember.backends.kernels.merge_products import merge_shared_operand_products
from ember.backends.kernels.schedule import schedule
from ember.backends.llvm.kernel_target import cpu_target

T2 = cpu_target(threads=2)


def _products(closed, target=T2):
    return sum(e.prim.name == "dot_general" for e in merge_shared_operand_products(closed, target).graph.equations)


def _native_vs_reference(f, *args, rtol):
    native = ember.jit(f)(*args)
    ref = ember.jit(f, backend="reference")(*args)
    for a, b in zip(ember.tree.leaves(native), ember.tree.leaves(ref)):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=rtol)


@settings(max_examples=12, deadline=None)
@given(rows=st.lists(st.integers(1, 40), min_size=2, max_size=4), k=st.integers(2, 33), n=st.integers(1, 20),
       dtype=st.sampled_from(["float32", "float64"]), seed=st.integers(0, 1000))
def test_stacked_products_native_equal_reference(rows, k, n, dtype, seed):
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal((r, k)).astype(dtype) for r in rows]
    w = rng.standard_normal((k, n)).astype(dtype)
    f = lambda w, *xs: [enp.tanh(x @ w) * (i + 1) for i, x in enumerate(xs)]  # noqa: E731
    g = ember.make_graph(f)(w, *xs)
    assert _products(g) == 1                      # small products: one stacked gemm
    _native_vs_reference(f, w, *xs, rtol=1e-5 if dtype == "float32" else 1e-12)


def test_operands_of_other_ranks_stack_along_their_first_differing_axis():
    # a vmapped forward Laplacian's value [p, 1, k], Jacobian [p, 3, 1, k], Laplacian [p, 1, k]
    rng = np.random.default_rng(0)
    u, j, l = rng.standard_normal((50, 1, 16)), rng.standard_normal((50, 3, 1, 16)), rng.standard_normal((50, 1, 16))
    w = rng.standard_normal((16, 8))
    f = lambda w, u, j, l: (u @ w, j @ w, enp.sin(l @ w))  # noqa: E731
    g = merge_shared_operand_products(ember.make_graph(f)(w, u, j, l), T2)
    (cat,) = [e for e in g.graph.equations if e.prim.name == "concatenate"]
    assert cat.outputs[0].aval.shape == (50, 5, 16) and cat.params["dimension"] == 1
    _native_vs_reference(f, w, u, j, l, rtol=1e-12)


def test_chains_and_dependent_products_are_not_stacked():
    x, w = np.ones((4, 8)), np.full((8, 8), 0.1)
    chain = ember.make_graph(lambda x, w: (x @ w) @ w)(x, w)
    assert merge_shared_operand_products(chain, T2) is chain
    # b reads a's product: a and c stack, b does not
    f = lambda x, y, w: (lambda a: (a, enp.tanh(a) @ w, y @ w))(x @ w)  # noqa: E731
    g = ember.make_graph(f)(x, x * 2, w)
    assert _products(g) == 2
    _native_vs_reference(f, x, x * 2, w, rtol=1e-12)


def test_products_that_fill_the_threads_stay_apart():
    x, w = np.ones((512, 256), np.float32), np.ones((256, 256), np.float32)
    g = ember.make_graph(lambda a, b, w: (a @ w, b @ w))(x, x, w)
    assert _products(g) == 2                      # each already 2 blocks on 2 threads
    assert _products(g, cpu_target(threads=1)) == 2
    small = ember.make_graph(lambda a, b, w: (a @ w, b @ w))(x[:8], x[:8], w)
    assert _products(small) == 1


def test_one_gemm_step_for_a_vmapped_laplacian_layer():
    rng = np.random.default_rng(1)
    w1, w2 = rng.standard_normal((3, 32)), rng.standard_normal((32, 32))
    u = lambda x: enp.sum(enp.tanh(enp.tanh(x @ w1) @ w2))  # noqa: E731
    closed = ember.jit(ember.vmap(ember.laplacian(u))).lower(rng.standard_normal((200, 3))).closed
    gemms = [s for s in schedule(closed, T2).steps if isinstance(s, GemmKernel)]
    # layer 1: value and identity Jacobian; layer 2: value, Jacobian and Laplacian rows
    assert sorted(s.m for s in gemms) == [203, 1000]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_stacking_keeps_source_order_of_other_work(dtype):
    # readers of the first product sit between the products in the graph
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((6, 5)).astype(dtype), rng.standard_normal((5, 5)).astype(dtype)

    def f(x, w):
        a = x @ w
        s = enp.exp(a).sum()
        return a, s, (x * s) @ w
    g = ember.make_graph(f)(x, w)
    assert _products(g) == 2                      # the second reads the first (through s)
    _native_vs_reference(f, x, w, rtol=1e-5 if dtype == "float32" else 1e-12)


def test_operands_that_would_need_flat_rows_are_not_stacked():
    # a jet's [K, batch, k] stacked coefficients beside its [batch, k] primal
    x, s, w = np.ones((16, 8)), np.ones((4, 16, 8)), np.ones((8, 8))
    g = ember.make_graph(lambda x, s, w: (x @ w, s @ w))(x, s, w)
    assert _products(g) == 2
    g = ember.make_graph(lambda x, s, w: (x @ w, s[0] @ w))(x, s, w)
    assert _products(g) == 1


def test_groups_that_need_each_other_are_not_both_stacked():
    # u = a @ w and y = q @ w share w; q = a @ x and z = u @ x share x: stacked, each
    # product would wait on the other, and the graph lost both (a KeyError when
    # scheduling the jitted Hessian of trace(x @ x @ x))
    rng = np.random.default_rng(0)
    a, w, x = rng.standard_normal((2, 3)), rng.standard_normal((3, 3)), rng.standard_normal((3, 3))

    def f(a, w, x):
        u, q = a @ w, a @ x
        return q @ w, u @ x

    merged = merge_shared_operand_products(ember.make_graph(f)(a, w, x), T2).graph
    computed = set(merged.inputs) | {v for e in merged.equations for v in e.outputs}
    assert all(v in computed for v in merged.outputs)
    assert _products(ember.make_graph(f)(a, w, x)) == 3   # one group stacked, the other not
    _native_vs_reference(f, a, w, x, rtol=1e-12)

    m = rng.standard_normal(9)
    h = ember.jit(ember.hessian(lambda v: enp.trace(v.reshape(3, 3) @ v.reshape(3, 3) @ v.reshape(3, 3))))(m)
    X, eye = m.reshape(3, 3), np.eye(3)
    # d/dX_kl of the gradient 3 (X^T X^T)_ij: 3 (delta_il X_jk + delta_jk X_li)
    expect = 3 * (np.einsum("il,jk->ijkl", eye, X) + np.einsum("jk,li->ijkl", eye, X))
    np.testing.assert_allclose(np.asarray(h), expect.reshape(9, 9), rtol=1e-12, atol=1e-12)
