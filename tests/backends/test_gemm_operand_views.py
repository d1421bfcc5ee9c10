"""Matrix operands that are contiguous slices of a larger buffer (a weight matrix
unpacked from a flat parameter vector by slice + reshape, as Hessian and HVP code
does) are read in place by the gemm at an element offset, never copied; an operand
that is not such a view is copied into its layout once, however many products
read it.  Values are checked against the reference interpreter."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.backends.kernels import GemmKernel, MapKernel, RowKernel, schedule
from ember.backends.llvm.executable import compile_graph
from ember.backends.llvm.kernel_target import cpu_target
from ember.fx.interpreter import run_graph_numpy

SIZES = [(5, 7), (7, 3)]


def _unpack(theta):
    out, o = [], 0
    for a, b in SIZES:
        out.append((theta[o:o + a * b].reshape(a, b), theta[o + a * b:o + a * b + b]))
        o += a * b + b
    return out


N = sum(a * b + b for a, b in SIZES)


def _mlp(theta, x):
    h = x
    for i, (w, b) in enumerate(_unpack(theta)):
        h = h @ w + b
        h = enp.tanh(h) if i == 0 else h
    return enp.sum(h ** 2)


def _check(f, *args, rtol):
    g = ember.make_graph(f)(*args)
    got = compile_graph(g)(*args)
    ref = run_graph_numpy(g.graph, g.consts_as_buffers(), list(args))
    for a, r in zip(got, ref):
        np.testing.assert_allclose(np.asarray(a), np.asarray(r), rtol=rtol, atol=rtol)
    return schedule(g, cpu_target()).steps


def _layout_copies(steps):
    return [s for s in steps if isinstance(s, MapKernel) and "_layout" in s.name]


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 2e-5), (np.float64, 1e-12)])
def test_flat_parameter_slices_are_read_in_place(dtype, rtol):
    rng = np.random.default_rng(0)
    theta = rng.normal(size=N).astype(dtype)
    x = rng.normal(size=(4, 5)).astype(dtype)
    v = rng.normal(size=N).astype(dtype)
    hvp = lambda t, v: ember.jvp(ember.grad(_mlp), (t, x), (v, np.zeros_like(x)))[1]  # noqa: E731
    for f, args in ((_mlp, (theta, x)), (ember.grad(_mlp), (theta, x)), (hvp, (theta, v))):
        steps = _check(f, *args, rtol=rtol)
        gemms = [s for s in steps if isinstance(s, GemmKernel)]
        assert gemms and not _layout_copies(steps), [s.name for s in steps]
        # the second weight matrix starts after the first layer's 5*7 + 7 values
        assert any(42 in (s.a_offset, s.b_offset) for s in gemms), [(s.a_offset, s.b_offset) for s in gemms]


def test_batched_slices_and_transposed_views():
    rng = np.random.default_rng(1)
    flat = rng.normal(size=3 + 2 * 4 * 6).astype(np.float32)
    y = rng.normal(size=(2, 6, 5)).astype(np.float32)

    def f(flat, y):
        a = flat[3:].reshape(2, 4, 6)
        prod = lax.dot_general(a, y, (((2,), (1,)), ((0,), (0,))))          # [2,4,5]
        trans = lax.dot_general(a, a, (((1,), (1,)), ((0,), (0,))))         # a^T a: [2,6,6]
        return prod, trans

    steps = _check(f, flat, y, rtol=2e-5)
    assert not _layout_copies(steps)
    assert {3} <= {s.a_offset for s in steps if isinstance(s, GemmKernel)}


def test_a_strided_slice_is_copied_once_for_all_its_products():
    rng = np.random.default_rng(2)
    m = rng.normal(size=(6, 8)).astype(np.float32)
    x = rng.normal(size=(3, 4)).astype(np.float32)

    def f(m, x):
        w = m[1:5, 2:7]             # not contiguous: rows 8 apart, 5 wide
        return x @ w, enp.tanh(x) @ w

    steps = _check(f, m, x, rtol=2e-5)
    copies = [s for s in steps if isinstance(s, MapKernel) and s.inputs == [0]]   # kernels reading m
    assert len(copies) == 1, [s.name for s in steps]
    assert all(s.a_offset == s.b_offset == 0 for s in steps if isinstance(s, GemmKernel))


def test_the_program_printout_shows_the_offset():
    theta = np.ones(N, np.float32)
    x = np.ones((4, 5), np.float32)
    text = ember.jit(_mlp).lower(theta, x).as_text("kernels")
    assert "[42:]" in text, text


def test_an_operand_in_another_layout_is_copied_once_for_all_its_products():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(4, 3, 2)).astype(np.float32)         # batch dim last: no gemm layout
    b1, b2 = (rng.normal(size=(4, 5, 2)).astype(np.float32) for _ in range(2))
    dims = (((0,), (0,)), ((2,), (2,)))

    def f(a, b1, b2):
        return lax.dot_general(a, b1, dims), lax.dot_general(a, b2, dims)

    steps = _check(f, a, b1, b2, rtol=2e-5)
    kernels = [m for s in steps for m in (s.members if isinstance(s, RowKernel) else [s])]
    reads_a = [s for s in kernels if isinstance(s, MapKernel) and 0 in s.inputs]
    assert len(reads_a) == 1, [s.name for s in steps]
