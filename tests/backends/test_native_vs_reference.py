"""Differential tests: the LLVM backend against the numpy reference interpreter,
primitive by primitive over dtypes and shapes, and on random fused graphs."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember import lax
from ember.backends.kernels import MapKernel, ReduceKernel, RowKernel, schedule
from ember.backends.llvm.kernel_target import cpu_target
from ember.backends.llvm.executable import compile_graph
from ember.fx.interpreter import run_graph_numpy

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
INTS = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64)]
TRANSCENDENTAL = {"exp", "log", "tanh", "logistic", "sin", "cos", "erf", "log1p", "expm1", "atan",
                  "pow", "sinh", "asinh", "atan2", "cbrt", "tan"}


def run_both(f, *args):
    g = ember.make_graph(f)(*args)
    got = compile_graph(g)(*args)
    ref = run_graph_numpy(g.graph, g.consts_as_buffers(), list(args))
    return got, ref, g


def assert_same(got, ref, transcendental=False):
    for a, b in zip(got, ref):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
        if a.dtype.kind in "fc" or a.dtype == BF16:
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            np.testing.assert_array_equal(np.isnan(a64), np.isnan(b64))
            if transcendental or a.dtype in (np.float16, BF16):
                tol = {np.dtype(np.float16): 2e-3, BF16: 1.6e-2, np.dtype(np.float32): 4e-6,
                       np.dtype(np.float64): 1e-13}[a.dtype]
                np.testing.assert_allclose(a64, b64, rtol=tol, atol=tol)
            else:
                np.testing.assert_array_equal(a64, b64)
                # signed zeros too
                np.testing.assert_array_equal(np.signbit(a64[a64 == 0]), np.signbit(b64[a64 == 0]))
        else:
            np.testing.assert_array_equal(a, b)


def _data(dtype, shape, rng, special=True):
    d = np.dtype(dtype)
    if d == np.bool_:
        return rng.random(shape) < 0.5
    if d.kind in "iu":
        info = np.iinfo(d)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape, endpoint=True).astype(d)
    x = rng.standard_normal(shape) * 3
    if special and x.size >= 6:
        flat = x.reshape(-1)
        flat[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30]
    return x.astype(d)


UNARY = ["neg", "abs", "sign", "floor", "ceil", "round", "exp", "log", "tanh", "logistic", "sin",
         "cos", "sqrt", "erf", "log1p", "expm1", "atan", "is_finite", "square", "sinh", "asinh", "cbrt"]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_unary_float(name, dtype):
    rng = np.random.default_rng(0)
    x = _data(dtype, (3, 37), rng)
    fn = getattr(lax, name)
    with np.errstate(all="ignore"):
        got, ref, _ = run_both(fn, x)
    assert_same(got, ref, transcendental=name in TRANSCENDENTAL or name in ("sqrt",))


BINARY = ["add", "sub", "mul", "div", "max", "min", "eq", "ne", "lt", "le", "gt", "ge", "rem", "pow", "atan2"]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_binary_float(name, dtype):
    rng = np.random.default_rng(1)
    x, y = _data(dtype, (5, 11), rng), _data(dtype, (5, 11), rng)
    y.reshape(-1)[-1] = x.reshape(-1)[-1]  # an exact tie for max/min/eq
    fn = getattr(lax, name)
    with np.errstate(all="ignore"):
        got, ref, _ = run_both(fn, x, y)
    assert_same(got, ref, transcendental=name in TRANSCENDENTAL or name in ("div", "rem"))


INT_BINARY = ["add", "sub", "mul", "div", "rem", "max", "min", "and", "or", "xor", "lt", "eq",
              "shift_left", "shift_right_arithmetic", "shift_right_logical"]


@pytest.mark.parametrize("name", INT_BINARY)
@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_binary_int_wraps_like_numpy(name, dtype):
    rng = np.random.default_rng(2)
    info = np.iinfo(dtype)
    x = _data(dtype, (40,), rng)
    y = _data(dtype, (40,), rng)
    x[:4] = [info.max, info.min, info.max, 0]
    y[:4] = [info.max, 1, 0, 0]  # overflow, division by zero
    if name.startswith("shift"):
        y = (np.abs(y.astype(np.int64)) % (info.bits + 3)).astype(dtype)
    fn = getattr(lax, {"and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor"}.get(name, name))
    got, ref, _ = run_both(fn, x, y)
    assert_same(got, ref)


@pytest.mark.parametrize("src", FLOATS + INTS + [np.dtype(bool)], ids=str)
@pytest.mark.parametrize("dst", FLOATS + INTS + [np.dtype(bool)], ids=str)
def test_convert_element_type(src, dst):
    rng = np.random.default_rng(3)
    x = _data(src, (64,), rng)
    if np.dtype(src).kind == "f" or src == BF16:
        x = (x.astype(np.float64) * 50).astype(src)
    with np.errstate(all="ignore"):
        got, ref, _ = run_both(lambda v: lax.convert_element_type(v, dst), x)
    assert_same(got, ref)


@pytest.mark.parametrize("shape,axes", [((7,), (0,)), ((4, 9), (1,)), ((4, 9), (0,)), ((3, 4, 5), (0, 2)),
                                        ((3, 4, 5), (1,)), ((0, 3), (0,)), ((3, 0), (1,)), ((2, 3), (0, 1))])
@pytest.mark.parametrize("op", ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"])
@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32),
                                   np.dtype(np.float16), BF16], ids=str)
def test_reductions(shape, axes, op, dtype):
    rng = np.random.default_rng(4)
    x = _data(dtype, shape, rng, special=False)
    if op == "reduce_prod" and np.dtype(dtype).kind == "f":
        x = (np.abs(x.astype(np.float64)) * 0.1 + 0.95).astype(dtype)
    got, ref, _ = run_both(lambda v: getattr(lax, op)(v, axes), x)
    assert_same(got, ref, transcendental=op in ("reduce_sum", "reduce_prod"))


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.float64])
@pytest.mark.parametrize("op", ["reduce_max", "reduce_min"])
def test_float_extrema_with_nan_inf_and_signed_zeros(op, dtype):
    # max/min reductions run on integer order keys: NaN anywhere wins, infinities
    # order, and a row of zeros keeps IEEE's -0 < +0 (the sign numpy leaves open)
    rows = [[1.0, np.nan, 3.0, -2.0], [-np.inf, -np.inf, -np.inf, -np.inf], [np.inf, 1.0, -np.inf, 0.0],
            [-0.0, 0.0, -0.0, -0.0], [-0.0, -0.0, -0.0, -0.0], [np.nan, np.nan, np.nan, np.nan],
            [-5.0, -3.0, -7.0, -1e-3], [2.0, 1e4, 3.0, np.nan]]
    x = np.array(rows * 9, np.float64)[:, [0, 1, 2, 3] * 5].astype(dtype)   # (72, 20)
    for axes in ((1,), (0,), (0, 1)):
        got, ref, _ = run_both(lambda v: getattr(lax, op)(v, axes), x)
        a, b = np.asarray(got[0]).astype(np.float64), np.asarray(ref[0]).astype(np.float64)
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_array_equal(a[~np.isnan(a)], b[~np.isnan(b)])
    (m,) = run_both(lambda v: getattr(lax, op)(v, (1,)), x)[0]
    zeros = np.asarray(m).astype(np.float64)[3::8]
    assert np.all(zeros == 0) and np.all(np.signbit(zeros) == (op == "reduce_min"))


def test_bool_reductions_and_select():
    x = np.random.default_rng(5).random((5, 6)) < 0.5
    for op in ("reduce_and", "reduce_or"):
        got, ref, _ = run_both(lambda v: getattr(lax, op)(v, (1,)), x)
        assert_same(got, ref)
    y = np.arange(30, dtype=np.float32).reshape(5, 6)
    got, ref, _ = run_both(lambda p, v: lax.select_n(p, v, lax.neg(v)), x, y)
    assert_same(got, ref)


def test_movement_chains_and_scalars():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)

    def f(v):
        t = lax.transpose(v, (2, 0, 1))                       # (5, 3, 4)
        s = lax.slice(t, (1, 0, 1), (5, 3, 4), (2, 1, 2))     # (2, 3, 2)
        r = lax.rev(s, (0, 2))
        p = lax.pad(r, np.float32(-1), ((1, 0, 1), (0, -1, 0), (2, 1, 0)))
        c = lax.concatenate([p, lax.mul(p, np.float32(2))], 1)
        b = lax.broadcast_in_dim(lax.reduce_sum(c, (1,)), (2,) + lax.reduce_sum(c, (1,)).shape, (1, 2))
        return lax.add(lax.reshape(b, (-1,) if False else (b.size,)), np.float32(1)), lax.expand_dims(lax.squeeze(
            lax.slice(v, (0, 0, 0), (1, 4, 5)), (0,)), (1,))
    got, ref, _ = run_both(f, x)
    assert_same(got, ref, transcendental=True)
    got, ref, _ = run_both(lambda a: lax.add(a, np.float32(3)), np.float32(2.0))
    assert_same(got, ref)
    got, ref, _ = run_both(lambda a: lax.iota(np.int32, (3, 4), 1), np.float32(0))
    assert_same(got, ref)


def test_softmax_schedule_materialises_reductions_once():
    x = np.random.default_rng(7).standard_normal((6, 33)).astype(np.float32)

    def softmax(v):
        m = lax.reduce_max(v, (1,))
        e = lax.exp(lax.sub(v, lax.broadcast_in_dim(m, v.shape, (0,))))
        return lax.div(e, lax.broadcast_in_dim(lax.reduce_sum(e, (1,)), v.shape, (0,)))
    got, ref, g = run_both(softmax, x)
    assert_same(got, ref, transcendental=True)
    prog = schedule(g, cpu_target(), fuse_rows=False)
    kinds = [type(s).__name__ for s in prog.steps]
    assert kinds == ["ReduceKernel", "MapKernel", "ReduceKernel", "MapKernel"]
    # the exp is computed once, in its own kernel, not duplicated into its two consumers
    assert sum(repr(s.body).count("'exp'") for s in prog.steps if isinstance(s, (MapKernel, ReduceKernel))) == 1
    # by default the four run in one pass over the rows
    (row,) = schedule(g, cpu_target()).steps
    assert isinstance(row, RowKernel) and row.outer == (6,)
    assert [type(m).__name__ for m in row.members] == kinds


def test_shared_expensive_value_stays_fused_when_its_uses_meet_in_one_kernel():
    x = np.random.default_rng(9).standard_normal((5, 40)).astype(np.float32)

    def one_kernel(v):           # sin used three times, all elementwise into one output
        s = lax.sin(v)
        return lax.add(lax.mul(s, v), lax.sub(lax.mul(s, s), lax.cos(v)))

    def two_kernels(v):          # e feeds an output and a reduction: two kernels read it
        e = lax.exp(v)
        return lax.mul(e, np.float32(2)), lax.reduce_sum(e, (1,))

    def moved(v):                # e read at two indices (a reversal): stored once
        e = lax.exp(v)
        return lax.add(e, lax.rev(e, (1,)))

    def summed(v):               # every use flows into one reduction: fused into it
        t = lax.tanh(v)
        return lax.reduce_sum(lax.mul(t, lax.add(t, np.float32(1))), (1,))

    for f, kernels, exps in ((one_kernel, 1, 0), (two_kernels, 3, 1), (moved, 2, 1), (summed, 1, 0)):
        got, ref, g = run_both(f, x)
        assert_same(got, ref, transcendental=True)
        steps = schedule(g, cpu_target(), fuse_rows=False).steps
        assert len(steps) == kernels, (f.__name__, [type(s).__name__ for s in steps])
        # the shared value gets a buffer of its own only where two kernels (or two
        # indices) read it
        stored = [s for s in steps if isinstance(s, MapKernel) and s.body[0] == "op"
                  and s.body[1] in ("exp", "sin", "tanh")]
        assert len(stored) == exps, f.__name__


def test_library_steps_inside_native_program():
    x = np.random.default_rng(8).standard_normal((40, 50)).astype(np.float32)
    got, ref, g = run_both(lambda v: lax.tanh(lax.dot_general(v, v, (((1,), (1,)), ((), ())))), x)
    assert_same(got, ref, transcendental=True)
    steps = schedule(g, cpu_target()).steps
    assert [type(s).__name__ for s in steps] == ["GemmKernel"]   # the tanh runs on each block
    assert [type(e).__name__ for e in steps[0].epilogue] == ["MapKernel"]


def test_jit_uses_native_backend_and_matches_reference_backend():
    x = np.random.default_rng(9).standard_normal((64, 40)).astype(np.float32)
    f = lambda v: lax.reduce_sum(lax.tanh(v), (1,))
    native = ember.jit(f)(x)
    ref = ember.jit(f, backend="reference")(x)
    np.testing.assert_allclose(native, ref, rtol=1e-5, atol=1e-5)


def test_parallel_split_matches_single_thread():
    x = np.random.default_rng(10).standard_normal((1 << 17,)).astype(np.float32)
    got, ref, _ = run_both(lambda v: lax.mul(lax.exp(v), np.float32(2)), x)
    assert_same(got, ref, transcendental=True)
    m = x.reshape(512, 256)
    got, ref, _ = run_both(lambda v: lax.reduce_sum(v, (1,)), m)
    assert_same(got, ref, transcendental=True)


# --- random fused graphs -------------------------------------------------------------------

_U = ["neg", "abs", "exp_small", "tanh", "sin", "logistic", "sqrt_abs", "square"]
_B = ["add", "sub", "mul", "max", "min", "div_safe"]


def _unary(name, v):
    if name == "exp_small":
        return lax.exp(lax.tanh(v))
    if name == "sqrt_abs":
        return lax.sqrt(lax.abs(v))
    return getattr(lax, name)(v)


def _binary(name, a, b):
    if name == "div_safe":
        return lax.div(a, lax.add(lax.abs(b), np.float32(1)))
    return getattr(lax, name)(a, b)


@st.composite
def random_programs(draw):
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    n_ops = draw(st.integers(1, 8))
    ops = []
    for _ in range(n_ops):
        kind = draw(st.sampled_from(["u", "b", "move", "reduce"]))
        if kind == "u":
            ops.append(("u", draw(st.sampled_from(_U)), draw(st.integers(0, 10))))
        elif kind == "b":
            ops.append(("b", draw(st.sampled_from(_B)), draw(st.integers(0, 10)), draw(st.integers(0, 10))))
        elif kind == "move":
            ops.append(("m", draw(st.sampled_from(["rev", "transpose", "pad", "slice", "bcast_reduce"])),
                        draw(st.integers(0, 10))))
        else:
            ops.append(("r", draw(st.sampled_from(["reduce_sum", "reduce_max"])), draw(st.integers(0, 10))))
    seed = draw(st.integers(0, 2 ** 16))
    return shape, ops, seed


def _build(shape, ops):
    def f(x, y):
        vals = [x, y]
        for op in ops:
            pick = lambda k: vals[k % len(vals)]  # noqa: E731
            if op[0] == "u":
                out = _unary(op[1], pick(op[2]))
            elif op[0] == "b":
                a, b = pick(op[2]), pick(op[3])
                if a.shape != b.shape:
                    b = a
                out = _binary(op[1], a, b)
            elif op[0] == "m":
                a = pick(op[2])
                nd = a.ndim
                if op[1] == "rev":
                    out = lax.rev(a, tuple(range(nd)))
                elif op[1] == "transpose":
                    out = lax.reshape(lax.transpose(a, tuple(reversed(range(nd)))), a.shape) if nd else a
                elif op[1] == "pad":
                    out = lax.slice(lax.pad(a, np.float32(0.5), ((1, 1, 1),) * nd), (1,) * nd,
                                    tuple(2 * s for s in a.shape[:]) if nd else (), (2,) * nd) if nd else a
                elif op[1] == "slice":
                    out = lax.pad(lax.slice(a, (0,) * nd, a.shape), np.float32(0), ((0, 0, 0),) * nd)
                else:
                    s = lax.reduce_sum(a, (nd - 1,)) if nd else a
                    out = lax.broadcast_in_dim(s, a.shape, tuple(range(nd - 1))) if nd else a
            else:
                a = pick(op[2])
                if a.ndim == 0:
                    continue
                red = getattr(lax, op[1])(a, (a.ndim - 1,))
                out = lax.broadcast_in_dim(red, a.shape, tuple(range(a.ndim - 1)))
            vals.append(out)
        return vals[-1], vals[len(vals) // 2]
    return f


def _check_random(program):
    shape, ops, seed = program
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.standard_normal(shape).astype(np.float32)
    with np.errstate(all="ignore"):
        got, ref, _ = run_both(_build(shape, ops), x, y)
    for a, b in zip(got, ref):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        assert a.shape == b.shape
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


@settings(max_examples=40, deadline=None)
@given(random_programs())
def test_random_fused_graphs(program):
    _check_random(program)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None)
@given(random_programs())
def test_random_fused_graphs_many(program):
    _check_random(program)


def test_control_flow_bodies_compile_natively():
    from ember.fx.drivers import driver
    x = np.linspace(-1, 1, 8).astype(np.float32)

    def f(v):
        c, ys = ember.scan(lambda c, r: (lax.add(lax.mul(c, np.float32(0.9)), lax.sin(r)), lax.exp(c)), v, lax.broadcast_in_dim(v, (3, 8), (1,)))
        w = ember.while_loop(lambda s: lax.lt(lax.reduce_sum(s, (0,)), np.float32(50)), lambda s: lax.mul(s, np.float32(1.5)), lax.abs(c) + np.float32(1))
        return ember.cond(lax.gt(c[0], np.float32(0)), lambda a: lax.tanh(a), lambda a: lax.neg(a), w), ys
    got = ember.jit(f)(x)
    ref = ember.jit(f, backend="reference")(x)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    g = ember.make_graph(f)(x)
    names = {eq.prim.name for eq in g.equations}
    assert {"scan", "while_loop", "cond"} <= names
    assert all(driver(eq.prim, eq.params, compile_graph) is not None
               for eq in g.equations if eq.prim.name in ("scan", "while_loop", "cond"))
