"""The neutral program runner (backends/kernels/runner.py) and the shared
control-flow drivers (fx/drivers.py): arena plans never overlap live buffers,
reduction identities are identities, library steps bind to the host impls or
to a driver whose bodies are compiled once by the caller's compiler."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember import lax
from ember.backends.kernels import LibraryStep, schedule
from ember.backends.kernels.runner import (KERNELS, host_library_step, parallel_range, plan_arena,
                                           reduction_identity, reduction_inits)
from ember.backends.llvm.executable import compile_graph
from ember.backends.llvm.kernel_target import cpu_target
from ember.fx import drivers

INTS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def _plan(prog):
    out_ids = {o for o in prog.outputs if type(o) is int}
    kernel_out = {}
    for i, s in enumerate(prog.steps):
        if isinstance(s, KERNELS):
            for o in s.outputs:
                kernel_out.setdefault(o, i)
    return kernel_out, out_ids, plan_arena(prog, kernel_out, out_ids)


def _chain(x, depth, reduce_every):
    y = x
    for i in range(depth):
        y = lax.exp(lax.neg(lax.mul(y, y)))
        if i % reduce_every == 0:
            s = lax.reduce_sum(y, (1,))
            y = lax.sub(y, lax.broadcast_in_dim(s, y.shape, (0,)))
    return y


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(1, 40), st.integers(1, 3))
def test_arena_plan_never_overlaps_live_buffers(depth, n, reduce_every):
    x = np.ones((n, 7), np.float32)
    prog = schedule(ember.make_graph(lambda v: _chain(v, depth, reduce_every))(x), cpu_target(), fuse_rows=False)
    kernel_out, out_ids, (offsets, top) = _plan(prog)
    assert set(offsets) == {b for b in kernel_out if b not in out_ids}
    last_read = {}
    for i, s in enumerate(prog.steps):
        for b in s.inputs:
            if type(b) is int:
                last_read[b] = i
    spans = {}
    for b, off in offsets.items():
        nbytes = prog.buffers[b].size * prog.buffers[b].dtype.itemsize
        assert off % 64 == 0 and off + nbytes <= top
        spans[b] = (kernel_out[b], max(last_read.get(b, kernel_out[b]), kernel_out[b]), off, off + nbytes)
    for a, (s0, e0, lo0, hi0) in spans.items():
        for b, (s1, e1, lo1, hi1) in spans.items():
            if a < b and s0 <= e1 and s1 <= e0:     # both live at some step
                assert hi0 <= lo1 or hi1 <= lo0, (a, b)


@pytest.mark.parametrize("op,ufunc", [("sum", np.add), ("prod", np.multiply), ("max", np.maximum),
                                      ("min", np.minimum), ("and", np.bitwise_and), ("or", np.bitwise_or)])
@pytest.mark.parametrize("dtype", INTS + [np.bool_, np.float16, np.float32, np.float64, ml_dtypes.bfloat16],
                         ids=str)
def test_reduction_identity_is_an_identity(op, ufunc, dtype):
    d = np.dtype(dtype)
    if op in ("and", "or") and d.kind == "f" or (op in ("and", "or") and d == ml_dtypes.bfloat16):
        pytest.skip("bitwise reductions are for integers and bools")
    rng = np.random.default_rng(3)
    x = (rng.integers(0, 2, 50).astype(d) if d == np.bool_ else
         rng.standard_normal(50).astype(d) if d.kind == "f" or d == ml_dtypes.bfloat16 else
         rng.integers(np.iinfo(d).min, np.iinfo(d).max, 50, dtype=d, endpoint=True))
    ident = np.array(reduction_identity(op, d)).astype(d)
    if d == ml_dtypes.bfloat16:
        x32, i32 = x.astype(np.float32), ident.astype(np.float32)
        np.testing.assert_array_equal(ufunc(i32, x32), x32)
    else:
        np.testing.assert_array_equal(ufunc(ident, x), x)


@pytest.mark.parametrize("dtype", INTS, ids=str)
@pytest.mark.parametrize("axes", [(0,), (1,), (0, 1)])
def test_integer_and_or_reductions_under_jit_match_numpy(dtype, axes):
    # the accumulators used to start from the dtype's maximum for `or`
    rng = np.random.default_rng(4)
    x = rng.integers(0, 64, (9, 37)).astype(dtype)
    for f, ref in ((lax.reduce_or, np.bitwise_or.reduce), (lax.reduce_and, np.bitwise_and.reduce)):
        want = x
        for a in sorted(axes, reverse=True):
            want = ref(want, axis=a)
        np.testing.assert_array_equal(ember.jit(lambda v: f(v, axes))(x), want)
        np.testing.assert_array_equal(f(x, axes), want)


def test_reduction_inits_and_parallel_range():
    x = np.ones((64, 32), np.float32)
    prog = schedule(ember.make_graph(lambda v: lax.reduce_max(lax.exp(v), (0,)))(x), cpu_target())
    (step,) = prog.steps
    assert reduction_inits(step, prog.buffers) == [(step.out, -np.inf)]
    total, per = parallel_range(step)
    assert total == 1 and per == 64 * 32 * 9    # a column reduction: not split over its rows; exp costs 8


def test_host_library_step_runs_the_numpy_impl():
    x = np.array([3.0, -1.0, 2.0], np.float32)
    prog = schedule(ember.make_graph(lambda v: lax.sort(v))(x), cpu_target())
    (step,) = [s for s in prog.steps if isinstance(s, LibraryStep)]
    np.testing.assert_array_equal(host_library_step(step, compile=None)(x)[0], np.sort(x))


def _counting(compile):
    calls = []

    def c(closed):
        calls.append(closed)
        return compile(closed)
    return c, calls


@pytest.mark.parametrize("compile", [drivers.interpret, compile_graph], ids=["interpret", "llvm"])
def test_one_driver_per_control_flow_primitive_compiles_each_body_once(compile):
    xs = np.arange(12, dtype=np.float32).reshape(6, 2)

    def f(c, xs):
        def body(carry, x):
            carry = ember.cond(lax.gt(x[0], 4.0), lambda t: lax.mul(t, 2.0), lambda t: lax.add(t, x), carry)
            return carry, lax.reduce_sum(carry, (0,))
        c, ys = ember.scan(body, c, xs)
        n = ember.while_loop(lambda s: lax.lt(s[0], 50.0), lambda s: (lax.add(s[0], s[1]), s[1]),
                             (lax.reduce_sum(c, (0,)), 3.0))
        return c, ys, n[0]

    c0 = np.ones(2, np.float32)
    want = f(c0, xs)
    g = ember.make_graph(f)(c0, xs)
    prog = schedule(g, cpu_target())
    steps = [s for s in prog.steps if isinstance(s, LibraryStep)]
    assert {s.eq.prim.name for s in steps} == {"scan", "while_loop"}
    count, calls = _counting(compile)
    env = {}
    for s in steps:
        run = host_library_step(s, count)
        assert s.eq.prim in drivers.DRIVERS
        env[s.eq.prim.name] = run
    # scan: its body, which holds the cond (compiled natively inside it, or
    # interpreted); while: its condition and body -- never once per iteration
    assert len(calls) == 3
    c, ys = env["scan"](c0, xs)
    np.testing.assert_allclose(c, want[0])
    np.testing.assert_allclose(ys, want[1])
    assert len(calls) == 3
    got_n = env["while_loop"](np.float32(np.sum(c)), np.float32(3.0))
    np.testing.assert_allclose(got_n[0], want[2])
    assert len(calls) == 3
    np.testing.assert_allclose(ember.jit(f)(c0, xs)[2], want[2])


def test_reference_impls_are_the_drivers():
    from ember.transforms.control_flow.cond import cond_p
    from ember.transforms.control_flow.loops import while_p
    from ember.transforms.control_flow.scan import scan_p
    for p in (cond_p, while_p, scan_p):
        assert p in drivers.DRIVERS
    x = np.float32(1.0)
    assert float(ember.jit(lambda v: ember.while_loop(lambda s: lax.lt(s, 9.0), lambda s: lax.mul(s, 3.0), v),
                           backend="reference")(x)) == 9.0
