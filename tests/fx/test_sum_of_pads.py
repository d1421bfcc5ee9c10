"""Reverse mode accumulates the gradients of slices of one array as a sum of
zero-pads (`add(pad(g1), pad(g2), ...)`): the simplification pass turns the sum of
disjoint slabs into a concatenate of `g + 0` (the same bits: -0 + 0 is +0, as the
sum with the other pads' zeros gives) with zero fillers, which the native backends
write slab by slab.  Checked bitwise against the unsimplified graph on special
values, and on the native backend against the reference interpreter."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.lax as lax
import ember.numpy as enp
from ember.backends.kernels import MapKernel, schedule
from ember.backends.llvm.executable import compile_graph
from ember.backends.llvm.kernel_target import cpu_target
from ember.fx.interpreter import run_graph_numpy
from ember.fx.ir import ClosedGraph, typecheck
from ember.fx.passes import dce, simplify

SPECIAL = [0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 2.5]


def _bits(a):
    a = np.asarray(a)
    return np.where(np.isnan(a.astype(np.float64)), 0, 1), a[~np.isnan(a.astype(np.float64))].tobytes()


def _pads(pieces, n, axis=0, dtype=np.float32):
    """f(*xs) = sum of pad(x_j) at the given starts along `axis` of a length-n axis."""
    def f(*xs):
        total = None
        for (start, x) in zip(pieces, xs):
            cfg = [(0, 0, 0)] * x.ndim
            cfg[axis] = (start, n - start - x.shape[axis], 0)
            p = lax.pad(x, np.zeros((), dtype), cfg)
            total = p if total is None else total + p
        return total
    return f


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("starts,lengths,n,axis", [
    ((0, 3), (3, 2), 5, 0),          # abutting, covering
    ((1, 6), (2, 3), 10, 0),         # gaps before, between and after
    ((4, 0, 7), (3, 2, 1), 8, 0),    # out of order
    ((0, 2), (2, 3), 5, 1),          # along a later axis
])
def test_disjoint_pads_become_a_concatenate_with_the_same_bits(dtype, starts, lengths, n, axis):
    rng = np.random.default_rng(0)
    xs = []
    for length in lengths:
        shape = [2, 3]
        shape[axis] = length
        v = rng.choice(np.array(SPECIAL), size=shape) if np.dtype(dtype).kind == "f" else rng.integers(-5, 5, shape)
        xs.append(v.astype(dtype))
    g = ember.make_graph(_pads(starts, n, axis, dtype))(*xs)
    s = dce(simplify(g.graph))
    names = [e.prim.name for e in s.equations]
    assert "concatenate" in names and "pad" not in names, names
    ref = run_graph_numpy(g.graph, g.consts_as_buffers(), xs)[0]
    got = run_graph_numpy(s, g.consts_as_buffers(), xs)[0]
    assert np.asarray(got).dtype == np.asarray(ref).dtype
    assert _bits(got)[0].tolist() == _bits(ref)[0].tolist() and _bits(got)[1] == _bits(ref)[1]
    # and natively: one kernel per slab, no element evaluates another slab
    closed = ClosedGraph(s, g.consts, g.in_tree, g.out_tree)
    typecheck(closed)
    native = compile_graph(closed)(*xs)[0]
    assert _bits(native)[1] == _bits(ref)[1]
    steps = schedule(closed, cpu_target()).steps
    assert all(isinstance(k, MapKernel) and k.store is not None for k in steps), steps


def test_overlapping_or_nonzero_pads_are_left_alone():
    x = np.ones(3, np.float32)
    over = ember.make_graph(_pads((0, 2), 6))(x, x)                   # slabs [0,3) and [2,5) overlap
    assert "pad" in [e.prim.name for e in dce(simplify(over.graph)).equations]
    ones = ember.make_graph(lambda a, b: lax.pad(a, np.float32(1), [(0, 3, 0)]) + lax.pad(b, np.float32(0), [(3, 0, 0)]))(x, x)
    assert "pad" in [e.prim.name for e in dce(simplify(ones.graph)).equations]
    two_axes = ember.make_graph(lambda a, b: lax.pad(a, np.float32(0), [(0, 1, 0), (0, 0, 0)])
                                + lax.pad(b, np.float32(0), [(0, 0, 0), (1, 0, 0)]))(np.ones((2, 3), np.float32),
                                                                                     np.ones((3, 2), np.float32))
    assert "pad" in [e.prim.name for e in dce(simplify(two_axes.graph)).equations]


def test_the_gradient_of_a_flat_parameter_vector_is_written_slab_by_slab():
    rng = np.random.default_rng(1)
    theta = rng.normal(size=3 * 4 + 4 + 4 * 2).astype(np.float32)
    x = rng.normal(size=(5, 3)).astype(np.float32)

    def loss(t):
        w1, b1, w2 = t[:12].reshape(3, 4), t[12:16], t[16:].reshape(4, 2)
        return enp.sum(enp.tanh(x @ w1 + b1) @ w2)

    g = ember.make_graph(ember.grad(loss))(theta)
    f = ember.jit(ember.grad(loss))
    np.testing.assert_allclose(np.asarray(f(theta)),
                               run_graph_numpy(g.graph, g.consts_as_buffers(), [theta])[0], rtol=2e-6, atol=1e-6)
    text = f.lower(theta).as_text("kernels")
    assert "pad" not in text and text.count("_concatenate") == 3, text


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=2, max_size=4), st.integers(0, 3), st.data())
def test_random_slab_layouts_match_the_reference(lengths, gap, data):
    starts, pos = [], 0
    for length in lengths:
        pos += data.draw(st.integers(0, gap))
        starts.append(pos)
        pos += length
    n = pos + data.draw(st.integers(0, gap))
    order = data.draw(st.permutations(range(len(lengths))))
    xs = [np.full((lengths[i], 2), float(i + 1) * (-1) ** i, np.float32) for i in order]
    f = _pads([starts[i] for i in order], n)
    g = ember.make_graph(f)(*xs)
    ref = run_graph_numpy(g.graph, g.consts_as_buffers(), xs)[0]
    np.testing.assert_array_equal(np.asarray(ember.jit(f)(*xs)), ref)


@pytest.mark.parametrize("d", [0, 1])
def test_movement_after_a_concatenate_moves_into_its_operands(d):
    # transpose(concatenate) and a unit-axis reshape of it become concatenates of the
    # moved operands (the full Hessian's transposed output is then written slab by slab)
    rng = np.random.default_rng(2)
    xs = [rng.normal(size=(3, 4) if d == 0 else (4, 3)).astype(np.float32),
          rng.normal(size=(2, 4) if d == 0 else (4, 2)).astype(np.float32)]
    def f(a, b):
        c = lax.concatenate([a, b], d)
        return lax.transpose(lax.reshape(c, (1,) + c.shape), (2, 0, 1))

    g = ember.make_graph(f)(*xs)
    s = dce(simplify(g.graph))
    typecheck(ClosedGraph(s, g.consts, g.in_tree, g.out_tree))
    names = [e.prim.name for e in s.equations]
    assert names[-1] == "concatenate" and names.count("transpose") == 2 and names.count("reshape") == 2, names
    ref = run_graph_numpy(g.graph, g.consts_as_buffers(), xs)[0]
    np.testing.assert_array_equal(run_graph_numpy(s, g.consts_as_buffers(), xs)[0], ref)
    np.testing.assert_array_equal(np.asarray(ember.jit(f)(*xs)), ref)
