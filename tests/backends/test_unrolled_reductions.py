"""Sums and products over a few elements written out in their reader's kernel
(`Target.unrolled_reduce_max`), and the slabs of a stored concatenate run inside a
row group: the schedule they give, and the values, native (also on forced AVX2
targets, `EMBER_CPU=haswell` in a subprocess) and through the CUDA renderer's host
emulation, against numpy and against the same program scheduled without them."""
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember import lax
from ember.backends.kernels import schedule
from ember.backends.kernels.loop_ir import MapKernel, ReduceKernel, RowKernel
from ember.backends.llvm.kernel_target import cpu_target

HERE = os.path.dirname(os.path.abspath(__file__))


def _steps(f, *args):
    out = []
    for s in schedule(ember.make_graph(f)(*args), cpu_target()).steps:
        out.extend(s.members if isinstance(s, RowKernel) else [s])
    return out


def _kinds(f, *args):
    return [type(s).__name__ for s in _steps(f, *args)]


def _weighted_sum(y, x):
    return (y * (1 - x[:, None, :] ** 2)).sum(1) * 2.0


def test_a_small_sum_read_once_fuses_into_its_reader():
    y, x = np.ones((6, 3, 8), np.float32), np.ones((6, 8), np.float32)
    assert _kinds(_weighted_sum, y, x) == ["MapKernel"]
    # beyond the target's limit, read twice, or a program output: a reduction kernel
    assert "ReduceKernel" in _kinds(_weighted_sum, np.ones((6, 9, 8), np.float32), x)
    assert "ReduceKernel" in _kinds(lambda y: (lambda s: s * s + s)(y.sum(1)), y)
    assert _kinds(lambda y: y.sum(1), y) == ["ReduceKernel"]


def test_a_broadcast_reader_unrolls_only_cheap_terms():
    # through a broadcast the reader evaluates the terms at every broadcast element:
    # a sum of squares, yes; a sum of exponentials (8 per element again), no
    y = np.ones((6, 3, 8), np.float32)
    assert _kinds(lambda y: y * (y * y).sum(1, keepdims=True), y) == ["MapKernel"]
    assert "ReduceKernel" in _kinds(lambda y: y * enp.exp(y).sum(1, keepdims=True), y)
    # read at its own elements, a transcendental operand is evaluated once either way
    assert _kinds(lambda y: enp.exp(y).sum(1) * 2.0, y) == ["MapKernel"]


def test_nested_small_sums_unroll_only_once():
    y = np.ones((4, 3, 3, 8), np.float32)
    got = ember.jit(lambda y: (y * 3.0).sum(1).sum(1) * 2.0)(np.arange(4 * 9 * 8, dtype=np.float32).reshape(4, 3, 3, 8))
    ref = (np.arange(4 * 9 * 8, dtype=np.float32).reshape(4, 3, 3, 8) * 3.0).sum((1, 2)) * 2.0
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-6)
    sched = _kinds(lambda y: (y * 3.0).sum(1).sum(1) * 2.0, y)
    assert sched.count("ReduceKernel") == 1   # the inner sum is written out, the outer one is not


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 40), n=st.integers(1, 8), cols=st.integers(1, 70),
       dtype=st.sampled_from(["float32", "float64", "int32"]), prod=st.booleans(), seed=st.integers(0, 99))
def test_unrolled_values_match_numpy_and_the_reduction_kernel(rows, n, cols, dtype, prod, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(-3, 4, (rows, n, cols)).astype(dtype) if dtype == "int32" else \
        rng.standard_normal((rows, n, cols)).astype(dtype)
    red = lax.reduce_prod if prod else lax.reduce_sum

    def f(y):
        return red(y * 2, (1,)) + 1
    got = np.asarray(ember.jit(f)(y))
    ref = (np.prod if prod else np.sum)(y * 2, axis=1) + 1
    if dtype == "int32":
        np.testing.assert_array_equal(got, ref.astype(dtype))
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-5 if dtype == "float32" else 1e-13, atol=1e-6)
    # the same order as the reduction kernel: identical bits with the fusion off
    steps = _steps(f, y)
    assert not any(isinstance(s, ReduceKernel) for s in steps)
    kernel = np.asarray(ember.jit(lambda y: (lambda s: s + 1 + 0 * s)(red(y * 2, (1,))))(y))
    np.testing.assert_array_equal(got, kernel)


def test_signed_zeros_follow_the_reduction_kernel():
    # a sum starts from +0.0: all -0.0 terms give +0.0, as the kernel gives
    y = np.full((3, 4, 5), -0.0, np.float32)
    got = np.asarray(ember.jit(lambda y: y.sum(1) * 1.0)(y))
    assert not np.signbit(got).any()
    got = np.asarray(ember.jit(lambda y: lax.reduce_prod(y, (1,)) * 1.0)(np.full((3, 3, 5), -1.0, np.float32)))
    np.testing.assert_array_equal(got, np.full((3, 5), -1.0, np.float32))


def test_half_precision_sums_stay_reduction_kernels():
    y = np.ones((4, 3, 8), np.float16)
    assert "ReduceKernel" in _kinds(lambda y: lax.reduce_sum(y, (1,)) * 2, y)


def _stacked_rows(x, w):
    # a vmapped forward-Laplacian layer's operand: value, 3 Jacobian rows, Laplacian
    t = enp.tanh(x)
    d = 1 - t * t
    jac = d[:, None, :] * w[None]
    lap = (-2 * t * d) * (jac * jac).sum(1)
    return enp.concatenate([t[:, None], jac, lap[:, None]], axis=1)


def test_slabs_of_a_stored_concatenate_join_the_row_group():
    x, w = np.random.default_rng(0).standard_normal((50, 16)), np.random.default_rng(1).standard_normal((3, 16))
    steps = schedule(ember.make_graph(_stacked_rows)(x, w), cpu_target()).steps
    rows = [s for s in steps if isinstance(s, RowKernel)]
    assert len(rows) == 1 and len(steps) == 1
    # (the members writing one row of scratch store within the row too)
    assert sum(1 for m in rows[0].members
               if isinstance(m, MapKernel) and m.store is not None and m.out not in rows[0].scratch) == 3
    got = np.asarray(ember.jit(_stacked_rows)(x, w))
    ref = np.asarray(ember.jit(_stacked_rows, backend="reference")(x, w))
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-13)


def test_a_slab_leaving_its_row_does_not_join():
    # concatenated along the rows themselves: each slab's row is not the group's row
    def f(x):
        t = enp.tanh(x)
        return enp.concatenate([t, t * 2, t * 3], axis=0)
    x = np.random.default_rng(2).standard_normal((20, 8))
    steps = schedule(ember.make_graph(f)(x), cpu_target()).steps
    for s in steps:
        if isinstance(s, RowKernel):
            assert all(getattr(m, "store", None) is None for m in s.members)
    np.testing.assert_allclose(np.asarray(ember.jit(f)(x)), np.concatenate([np.tanh(x) * k for k in (1, 2, 3)]),
                               rtol=1e-13)


_SUBPROCESS = r"""
import numpy as np, ember, sys
sys.path.insert(0, {here!r})
from test_unrolled_reductions import _stacked_rows, _weighted_sum
rng = np.random.default_rng(0)
for dt in ("float32", "float64"):
    x, w = rng.standard_normal((33, 20)).astype(dt), rng.standard_normal((3, 20)).astype(dt)
    np.testing.assert_allclose(np.asarray(ember.jit(_stacked_rows)(x, w)),
                               np.asarray(ember.jit(_stacked_rows, backend="reference")(x, w)), rtol=2e-5, atol=2e-6)
    y = rng.standard_normal((33, 3, 20)).astype(dt)
    np.testing.assert_allclose(np.asarray(ember.jit(_weighted_sum)(y, x)), ((y * (1 - x[:, None] ** 2)).sum(1) * 2),
                               rtol=2e-5, atol=2e-6)
print("ok")
"""


@pytest.mark.parametrize("cpu", ["haswell", "x86-64"])
def test_forced_targets(cpu):
    env = dict(os.environ, EMBER_CPU=cpu)
    r = subprocess.run([sys.executable, "-c", _SUBPROCESS.format(here=HERE)], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]


def test_cuda_renderer_writes_slabs_inside_row_kernels():
    sys.path.insert(0, os.path.join(HERE, "cuda"))
    import host_emulation as he
    if not he.available():
        pytest.skip("no g++ for the host emulation")
    from emulated_runtime import EmulatedRuntime
    from ember.backends.cuda.executable import compile_graph
    from ember.backends.cuda.target import cuda_target
    from ember.fx.interpreter import run_graph_numpy
    rt = EmulatedRuntime()
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((21, 16)), rng.standard_normal((3, 16))
    closed = ember.make_graph(_stacked_rows)(x, w)
    assert any(isinstance(s, RowKernel) and any(getattr(m, "store", None) is not None for m in s.members)
               for s in schedule(closed, cuda_target()).steps)
    exe = compile_graph(closed, runtime=rt)
    (out,) = exe(rt.to_device(x), rt.to_device(w))
    got = rt.to_host(out, np.dtype(np.float64))
    (ref,) = run_graph_numpy(closed.graph, closed.consts_as_buffers(), [x, w])
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


def test_a_small_sum_of_a_transcendental_read_by_a_callback():
    # the callback is a host step with no outputs: the read-once walk stops there
    seen = []

    @ember.jit
    def f(x):
        s = enp.sin(x).sum()
        ember.debug.callback(lambda v: seen.append(float(v)), s)
        return s * 2.0

    x = np.array([0.5, 1.0], np.float32)
    out = f(x)
    want = float(np.sin(x, dtype=np.float32).sum(dtype=np.float32))
    assert seen == [pytest.approx(want, rel=1e-6)] and float(out) == pytest.approx(2 * want, rel=1e-6)
