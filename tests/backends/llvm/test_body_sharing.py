"""Kernels that differ only in their buffers (or in where their elements start)
share one rendered loop body (body_sharing.py), and gemm blocks share one cold
non-finite recomputation per module (products.py); results stay those of the
reference interpreter."""
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember.backends.kernels import schedule
from ember.backends.kernels.affine import affine_expr, affine_terms, split_constant
from ember.backends.kernels.loop_ir import E, MapKernel, RowKernel
from ember.backends.llvm import body_sharing, codegen
from ember.backends.llvm.body_sharing import base_offsets
from ember.backends.llvm.kernel_target import cpu_target

F8 = np.dtype(np.float64)


def _ir(f, *args):
    return codegen.render_program(schedule(ember.make_graph(f)(*args), cpu_target()), "m")[0]


def _bodies(text):
    return re.findall(r'^define internal void @"([^"]+\.body)"', text, re.M)


def _check(f, *args, exact=True):
    """Native results vs the reference interpreter's: bit for bit (copies and
    correctly rounded arithmetic), or, for tanh and products, to rounding."""
    got = ember.jit(f)(*args)
    want = ember.jit(f, backend="reference")(*args)
    for g, w in zip(ember.tree.leaves(got), ember.tree.leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        if exact:
            assert g.tobytes() == w.tobytes()
        else:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@pytest.fixture
def checked_text(monkeypatch):
    """Every module rendered meanwhile: `module_text` (stored body texts) must be
    exactly llvmlite's own printing of the module."""
    seen = []

    class Checked(body_sharing.SharedBodies):
        def module_text(self, module):
            text = super().module_text(module)
            assert text == str(module)
            seen.append(text)
            return text
    monkeypatch.setattr(codegen, "SharedBodies", Checked)
    return seen


def test_concatenated_pieces_share_one_body(checked_text):
    xs = [np.linspace(-1, 1, 256 * 64).reshape(256, 64) * (i + 1) for i in range(6)]
    f = lambda *xs: enp.stack(xs)  # noqa: E731
    text = _ir(f, *xs)
    cats = re.findall(r'^define void @"(k\d+_\w+)"', text, re.M)
    assert len(cats) == 6 and len(_bodies(text)) == 1
    assert 'noinline' in re.search(r'^define internal void @"[^"]+\.body".*$', text, re.M).group(0)
    # each piece's pointer starts at its slice: offsets 0, 16384, ... elements
    assert sorted(set(map(int, re.findall(r'getelementptr inbounds double, double\* %"b\d+", i64 (\d+)', text)))) \
        == [16384 * i for i in range(1, 6)]
    _check(f, *xs)


def test_same_kernel_on_different_buffers_shares_a_body(checked_text):
    # two equal layers: the products with their fused epilogues render alike
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal((64, 64)) / 8 for _ in range(2)]
    bs = [rng.standard_normal(64) for _ in range(2)]

    def f(x, w1, b1, w2, b2):
        return enp.tanh(enp.tanh(x @ w1 + b1) @ w2 + b2)
    args = (rng.standard_normal((128, 64)), ws[0], bs[0], ws[1], bs[1])
    text = _ir(f, *args)
    assert len(re.findall(r'^define void', text, re.M)) == 2 and len(_bodies(text)) == 1
    _check(f, *args, exact=False)


def test_different_kernels_keep_their_own_bodies(checked_text):
    def f(a, b):
        return enp.tanh(a) * 2.0, enp.exp(b) * 2.0
    xs = [np.ones((64, 80), np.float32), np.ones((50, 30), np.float32)]
    assert len(_bodies(_ir(f, *xs))) == 2
    # a body used once stays alwaysinline (the IR of a program without repeats is unchanged)
    assert "noinline" not in _ir(lambda a: enp.tanh(a) * 2.0, xs[0])


def test_concatenate_along_an_inner_axis_and_slices(checked_text):
    x = np.arange(12 * 40, dtype=np.float64).reshape(12, 40)
    f = lambda x: enp.concatenate([x[:, 3:13] * 2.0, x[:, 20:30] * 2.0, x[:, 30:40] * 2.0], axis=1)  # noqa: E731
    _check(f, x)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.lists(st.integers(1, 9), min_size=2, max_size=5), st.integers(0, 2),
       st.sampled_from([np.float32, np.float64, np.int32]))
def test_concatenations_match_the_reference(rows, widths, axis, dtype):
    rng = np.random.default_rng(len(widths) * 7 + axis)
    shape = lambda w: [(w, rows, 3), (rows, w, 3), (rows, 3, w)][axis]  # noqa: E731
    xs = [(rng.standard_normal(shape(w)) * 10).astype(dtype) for w in widths]
    _check(lambda *xs: enp.concatenate([x * 3 for x in xs], axis=axis), *xs)
    _check(lambda *xs: enp.concatenate(xs, axis=axis) + 1, *xs)


def test_base_offsets():
    v0, v1 = E("v", 0), E("v", 1)
    load = lambda b, i: E("load", b, i, F8)  # noqa: E731
    at = lambda c: E("+", E("*", v0, 8), E("+", v1, E("c", c)))  # noqa: E731
    k = MapKernel("k", 2, (4, 8), E("op", "add", (), F8, load(0, at(5)), load(0, at(3))), store=at(64))
    assert base_offsets(k) == {0: 3, 2: 64}
    # a non-affine address fixes the buffer where it is
    gather = E("/", at(16), 2)
    k2 = MapKernel("k", 2, (4, 8), E("op", "add", (), F8, load(0, at(5)), load(0, gather)), store=at(64))
    assert base_offsets(k2) == {2: 64}
    # row-group buffers sharing memory (aliases) keep their pointers
    row = RowKernel("r", (4,), [k], aliases={2: 1})
    assert base_offsets(row) == {0: 3}


def test_affine_forms():
    v0, v1 = E("v", 0), E("v", 1)
    e = E("*", E("+", E("+", E("*", v1, 3), E("c", 2)), v0), 5)      # (3 v1 + 2 + v0) * 5
    assert affine_terms(e) == ({1: 15, 0: 5}, 10)
    rel, c = split_constant(e)
    assert c == 10 and rel is affine_expr({0: 5, 1: 15})
    assert affine_terms(E("+", E("*", v0, 2), E("*", v0, -2))) == ({}, 0)
    assert split_constant(E("%", v0, 3)) is None
    deep = v0
    for _ in range(5000):                       # deeper than the recursion limit
        deep = E("+", deep, E("c", 1))
    assert affine_terms(deep) == ({0: 1}, 5000)


def test_one_recomputation_function_per_module():
    def f(a, b, c):      # two products of different shapes: two bodies
        return (a @ b) @ c
    xs = [np.random.default_rng(i).standard_normal(s) for i, s in enumerate([(96, 96), (96, 96), (96, 40)])]
    text = _ir(f, *xs)
    fns = re.findall(r'^define internal void @"(ember\.recompute_nonfinite[^"]*)"', text, re.M)
    assert len(fns) == len(set(fns)) == 1 and len(_bodies(text)) == 2
    calls = re.findall(r'call void @"ember\.recompute_nonfinite', text)
    assert len(calls) > len(fns)
    big = [x * 1e154 for x in xs]             # products overflow: the recomputation runs
    _check(f, *big, exact=False)
    _check(f, *xs, exact=False)


def test_shared_bodies_in_a_loop_body(checked_text):
    # a scan body (a hot program, run by the native loop) stacking stored pieces
    # for a product, as a Taylor rule does: the copies into the stack share a body
    from ember import lax
    w = np.random.default_rng(4).standard_normal((16, 16)) / 4

    def f(c0, xs):
        def step(c, x):
            ys = [enp.tanh(c + x)]
            for k in range(1, 4):
                ys.append(enp.tanh(ys[-1] * ys[0] + ys[k - 1] * (1.0 / k)) * x)
            h = enp.stack(ys) @ w
            return enp.tanh(h[0] + h[3]), enp.sum(h)
        return lax.scan(step, c0, xs)
    c0 = np.linspace(-1, 1, 16).reshape(1, 16)
    xs = np.random.default_rng(3).standard_normal((6, 1, 16))
    _check(f, c0, xs, exact=False)
    assert any(len(_bodies(t)) < len(re.findall(r'^define void', t, re.M)) for t in checked_text)
