"""Native loops (backends/llvm/native_loops.py + loop_vm.py): scan and while_loop
bodies run by the native loop interpreter inside compiled programs, checked
against the reference interpreter (every loop there is the shared Python
driver over interpreted bodies), and the fallback to the driver."""
import threading

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember import lax
from ember.tree import tree_flatten
from ember.backends.llvm import loop_vm
from ember.backends.llvm.executable import compile_graph

BF16 = np.dtype(ml_dtypes.bfloat16)


def native_and_reference(f, *args):
    """(the native executable's results, the reference backend's, loop paths)."""
    g = ember.make_graph(f)(*args)
    exe = compile_graph(g)
    got = [np.asarray(o) for o in exe(*[np.asarray(a) for a in args])]
    want = [np.asarray(o) for o in tree_flatten(ember.jit(f, backend="reference")(*args))[0]]
    return got, want, exe.loop_paths()


def assert_same(got, want, exact=True):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
        if exact:
            # bfloat16 widens to float32 exactly (numpy's comparison cannot take it)
            np.testing.assert_array_equal(a.astype(np.float32) if a.dtype == BF16 else a,
                                          b.astype(np.float32) if b.dtype == BF16 else b)
        else:
            np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=2e-5, atol=1e-6)


# --- scan -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("length", [0, 1, 5])
def test_scan_lengths_and_direction(length, reverse):
    xs = np.arange(length * 3, dtype=np.float32).reshape(length, 3)

    def f(c, xs):
        return ember.scan(lambda c, x: (c * 0.5 + x, (c + 1.0, x.sum())), c, xs, reverse=reverse)

    got, want, paths = native_and_reference(f, np.ones(3, np.float32), xs)
    assert paths == [("scan", "native")]
    assert_same(got, want)


@settings(max_examples=25, deadline=None)
@given(dtype=st.sampled_from([np.float32, np.float64, np.float16, BF16, np.int32, np.int8, np.uint16]),
       length=st.integers(0, 6), reverse=st.booleans(), width=st.integers(1, 5))
def test_scan_dtypes(dtype, length, reverse, width):
    dt = np.dtype(dtype)
    rng = np.random.default_rng(length * 7 + width)
    xs = rng.integers(-3, 4, (length, width)).astype(dt)
    c0 = np.asarray(rng.integers(-2, 3), dt)   # a 0-d carry

    def f(c, xs):
        def body(c, x):
            y = x * c + x
            return c + x.sum().astype(dt), (y, x > 0)
        return ember.scan(body, c, xs, reverse=reverse)

    got, want, paths = native_and_reference(f, c0, xs)
    assert paths == [("scan", "native")]
    assert_same(got, want)


def test_scan_carry_swap_passthrough_const_and_literal_outputs():
    """Carries that are each other's old values (a swap), a carry passed through,
    a stacked output that is an input, a constant, a literal, or the same buffer twice."""
    w = np.array([2.0, -1.0], np.float32)

    def f(a, b, k, xs):
        def body(c, x):
            a, b, k = c
            s = a * x + w
            return (b, a, k), (s, s, x, a, w, np.float32(3.0))
        return ember.scan(body, (a, b, k), xs)

    args = (np.array([1.0, 2.0], np.float32), np.array([5.0, 7.0], np.float32), np.int32(4),
            np.arange(8, dtype=np.float32).reshape(4, 2))
    got, want, paths = native_and_reference(f, *args)
    assert paths == [("scan", "native")]
    assert_same(got, want)


def test_scan_unroll_and_fori_loop():
    def f(x):
        a, ys = ember.scan(lambda c, t: (c * 1.5 - t, c), x, enp.arange(6.0, dtype=np.float32), unroll=2)
        b = ember.fori_loop(0, 7, lambda i, v: v + i.astype(np.float32) * v, x)
        return a, ys, b

    got, want, paths = native_and_reference(f, np.float32(0.25))
    assert paths == [("scan", "native"), ("scan", "native")]
    assert_same(got, want)


def test_reductions_refilled_every_iteration():
    """A reduction that accumulates into its pre-filled output (the column max of
    a row-major matrix) gets its identity again before every iteration."""
    def f(xs):
        def body(c, x):
            m = x.max(axis=0) + x.sum(axis=0)
            return c + m, m
        return ember.scan(body, np.zeros(3, np.float32), xs)

    xs = np.random.default_rng(0).standard_normal((5, 40, 3)).astype(np.float32)
    got, want, paths = native_and_reference(f, xs)
    assert paths == [("scan", "native")]
    assert_same(got, want, exact=False)


# --- while_loop / fori_loop with traced bounds -------------------------------------------------

def test_while_zero_iterations_and_data_dependent_trip_count():
    def collatz(n):
        def body(s):
            n, k = s
            return enp.where(n % 2 == 0, n // 2, 3 * n + 1), k + 1
        return ember.while_loop(lambda s: s[0] != 1, body, (n, np.int32(0)))

    for n in (1, 6, 27):
        got, want, paths = native_and_reference(collatz, np.int32(n))
        assert paths == [("while_loop", "native")]
        assert_same(got, want)
    assert int(native_and_reference(collatz, np.int32(27))[0][1]) == 111


def test_while_literal_condition_and_consts():
    scale = np.array([0.5, 2.0], np.float32)

    def f(x, limit):
        return ember.while_loop(lambda v: v.sum() < limit, lambda v: v * scale + 1.0, x)

    got, want, paths = native_and_reference(f, np.ones(2, np.float32), np.float32(100.0))
    assert paths == [("while_loop", "native")]
    assert_same(got, want)
    never = ember.make_graph(lambda x: ember.while_loop(lambda v: False, lambda v: v + 1.0, x))(np.float32(2))
    assert float(compile_graph(never)(np.float32(2))[0]) == 2.0


def test_fori_loop_traced_bounds():
    def f(lo, hi, x):
        return ember.fori_loop(lo, hi, lambda i, v: v * 0.5 + i.astype(np.float32), x)

    for lo, hi in ((0, 5), (3, 3), (4, 1)):
        got, want, paths = native_and_reference(f, np.int32(lo), np.int32(hi), np.ones(3, np.float32))
        assert paths == [("while_loop", "native")]
        assert_same(got, want)


# --- nesting, fallback, transforms -------------------------------------------------------------

def test_nested_scans_are_native():
    """An inner loop of a native body is called from the outer loop's code."""
    def f(xs):
        def outer(c, row):
            inner_c, ys = ember.scan(lambda a, x: (a * 0.5 + x, a), c, row, reverse=True)
            return inner_c, (inner_c.sum(), ys)
        return ember.scan(outer, np.float32(0.0), xs)

    xs = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    got, want, paths = native_and_reference(f, xs)
    assert paths == [("scan", "native")]
    assert_same(got, want)
    g = ember.make_graph(f)(xs)
    eq = next(e for e in g.equations if e.prim.name == "scan")
    assert compile_graph(eq.params["body"], hot=True).loop_paths() == [("scan", "native")]


def test_three_levels_and_while_inside_scan():
    def f(xs):
        def mid(c, x):
            def inner(v):
                return ember.fori_loop(0, 3, lambda i, u: u * 1.25 + x, v)
            v = ember.while_loop(lambda v: v < x * 10.0 + 20.0, inner, c)
            return v * 0.0 + 1.0, v
        def outer(c, row):
            return ember.scan(mid, c, row)
        return ember.scan(outer, np.float32(1.0), xs)

    xs = np.abs(np.random.default_rng(7).standard_normal((3, 4))).astype(np.float32)
    got, want, paths = native_and_reference(f, xs)
    assert paths == [("scan", "native")]
    assert_same(got, want)


def test_library_step_inside_while_falls_back():
    """(cond/switch bodies run natively: test_native_loop_branches.py.)"""
    def g(x):
        return ember.while_loop(lambda v: v[0] < 100.0, lambda v: enp.sort(v * -3.0 + 1.0), x)

    got, want, paths = native_and_reference(g, np.array([1.0, 2.0], np.float32))
    assert paths == [("while_loop", "fallback: the body has a library step (sort)")]
    assert_same(got, want)

    def h(xs):   # a native loop inside the fallback's body is native
        def body(c, x):
            y = enp.sort(x * c)[0]
            return ember.fori_loop(0, 4, lambda i, v: v * 0.5 + y, y), y
        return ember.scan(body, np.float32(1.0), xs)

    got, want, paths = native_and_reference(h, np.array([[1.0, -2.0], [3.0, 0.5]], np.float32))
    assert paths == [("scan", "fallback: the body has a library step (sort)")]
    assert_same(got, want)


def test_library_step_body_falls_back():
    def f(xs):
        return ember.scan(lambda c, x: (c + enp.sort(x)[0], enp.sort(x)), np.float32(0), xs)

    xs = np.random.default_rng(2).standard_normal((3, 5)).astype(np.float32)
    got, want, paths = native_and_reference(f, xs)
    assert paths == [("scan", "fallback: the body has a library step (sort)")]
    assert_same(got, want)


def test_big_body_uses_the_pool_through_the_driver():
    from ember.backends.llvm.runtime import num_threads
    x = np.random.default_rng(3).standard_normal(1 << 19).astype(np.float32)

    def f(x):
        return ember.fori_loop(0, 2, lambda i, v: enp.exp(v * 0.5) * 0.25, x)

    got, want, paths = native_and_reference(f, x)
    if num_threads() > 1:
        assert paths == [("scan", "fallback: the body's kernel k1_mul is split over the thread pool")] or \
            paths[0][1].startswith("fallback: the body's kernel")
    else:
        assert paths == [("scan", "native")]
    assert_same(got, want, exact=False)


def rnn_loss(W, U, xs, h0):
    def step(h, x):
        h = enp.tanh(h @ W + x @ U)
        return h, h.sum()
    h, ys = ember.scan(step, h0, xs)
    return (h ** 2).sum() + ys.sum()


def test_grad_of_scan_runs_both_scans_natively():
    rng = np.random.default_rng(4)
    W, U = (rng.standard_normal((2, 6, 6)) * 0.3).astype(np.float32)
    xs = rng.standard_normal((7, 3, 6)).astype(np.float32)
    h0 = np.zeros((3, 6), np.float32)
    grad = ember.grad(rnn_loss, argnums=(0, 1))
    got, want, paths = native_and_reference(grad, W, U, xs, h0)
    assert paths == [("scan", "native"), ("scan", "native")]
    assert_same(got, want, exact=False)
    # and against float64 finite differences of the loss
    ember.testing.check_grads(lambda W: rnn_loss(W, U.astype(np.float64), xs.astype(np.float64),
                                                 h0.astype(np.float64)),
                              (W.astype(np.float64),), order=1, modes=("rev",))


def fixed_point_loss(A, b):
    def iterate(f, x0):
        def body(s):
            x, _, k = s
            y = f(x)
            return y, enp.max(enp.abs(y - x)), k + 1
        return ember.while_loop(lambda s: (s[1] > 1e-6) & (s[2] < 100), body,
                                (x0, np.float32(1.0), np.int32(0)))[0]

    @ember.custom_vjp
    def solve(A, b):
        return iterate(lambda x: enp.tanh(A @ x + b), enp.zeros_like(b))

    def fwd(A, b):
        x = solve(A, b)
        return x, (A, x)

    def bwd(res, g):
        A, x = res
        d = 1.0 - x * x
        u = iterate(lambda u: g + A.T @ (d * u), enp.zeros_like(g))
        return enp.outer(d * u, x), d * u

    solve.defvjp(fwd, bwd)
    return (solve(A, b) ** 2).sum()


def test_grad_through_while_via_custom_vjp():
    rng = np.random.default_rng(5)
    A = (rng.standard_normal((8, 8)) * 0.1).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    got = ember.jit(ember.grad(fixed_point_loss, argnums=(0, 1)))(A, b)
    want = ember.jit(ember.grad(fixed_point_loss, argnums=(0, 1)), backend="reference")(A, b)
    for a, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(w), rtol=1e-4, atol=1e-6)
    # the implicit gradient matches a central difference of the loss
    eps = 1e-3
    e = np.zeros_like(b)
    e[2] = eps
    fd = (float(fixed_point_loss(A, b + e)) - float(fixed_point_loss(A, b - e))) / (2 * eps)
    assert abs(float(np.asarray(got[1])[2]) - fd) < 2e-2 * max(1.0, abs(fd))


def test_vmap_of_loops():
    def f(c, xs):
        s, ys = ember.scan(lambda c, x: (c * x + 1.0, c), c, xs)
        w = ember.while_loop(lambda v: v < 20.0, lambda v: v * 1.5 + 1.0, c)
        return s, ys, w

    cs = np.array([0.5, 1.0, 2.0], np.float32)
    xs = np.random.default_rng(6).standard_normal((3, 4)).astype(np.float32)
    got, want, paths = native_and_reference(ember.vmap(f), cs, xs)
    assert [p for _, p in paths] == ["native", "native"]
    assert_same(got, want, exact=False)


def test_concurrent_calls_use_private_states():
    f = ember.jit(lambda c, xs: ember.scan(lambda c, x: (c + x, c * 2.0), c, xs))
    xs = np.arange(2000, dtype=np.float32).reshape(1000, 2)
    want = [np.asarray(o) for o in f(np.zeros(2, np.float32), xs)]
    errors = []

    def worker():
        for _ in range(30):
            got = f(np.zeros(2, np.float32), xs)
            if not all(np.array_equal(np.asarray(a), b) for a, b in zip(got, want)):
                errors.append(got)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_loop_vm_instructions():
    """The interpreter itself: a countdown with a copy per iteration."""
    src, dst = np.arange(4, dtype=np.int64), np.zeros(4, np.int64)
    slots = np.zeros(4, np.int64)
    slots[1], slots[2] = src.ctypes.data, dst.ctypes.data
    W = loop_vm.WIDTH

    def ins(*w):
        return list(w) + [0] * (W - len(w))
    code = np.array(ins(loop_vm.SET, 0, 0) + ins(loop_vm.BRGE, 0, 3, 5) + ins(loop_vm.COPY, 2, 1, 8 * 4)
                    + ins(loop_vm.INC, 0) + ins(loop_vm.JUMP, 1) + ins(loop_vm.MOVE, 3, 1)
                    + ins(loop_vm.END), np.int64)
    loop_vm.run_loop_code(code, slots)
    assert int(slots[0]) == 3 and int(slots[3]) == src.ctypes.data
    assert dst.tolist() == [0, 1, 2, 3]


def test_called_from_python_with_arrays():
    """A NativeLoop called directly (as a library step would be): operands of any
    layout and dtype spelling are converted, results are fresh arrays."""
    from ember.backends.kernels import LibraryStep, schedule
    from ember.backends.llvm.kernel_target import cpu_target
    from ember.backends.llvm.native_loops import NativeLoop, bind_library_step

    def f(c, xs):
        return ember.scan(lambda c, x: (c + x, c * x), c, xs, reverse=True)

    xs = np.arange(12, dtype=np.float32).reshape(3, 4)
    g = ember.make_graph(f)(np.zeros(4, np.float32), xs)
    step = next(s for s in schedule(g, cpu_target()).steps if isinstance(s, LibraryStep))
    loop = bind_library_step(step, compile_graph)
    assert isinstance(loop, NativeLoop)
    want = [np.asarray(o) for o in tree_flatten(ember.jit(f, backend="reference")(np.ones(4, np.float32), xs))[0]]
    for c in (np.ones(4, np.float32), np.ones(8, np.float64)[::2], [1.0, 1.0, 1.0, 1.0]):
        got = loop(c, np.asfortranarray(xs))
        assert_same([np.asarray(o) for o in got], want)
    a = loop(np.ones(4, np.float32), xs)
    b = loop(np.ones(4, np.float32), xs)
    assert a[0] is not b[0]


def test_calls_of_sub_graphs_are_native_inside_and_outside_loops():
    """jit_call, remat and custom rules' calls run once through the same loop code."""
    inner = ember.jit(lambda h, x: enp.tanh(h * 0.5 + x))

    @ember.custom_vjp
    def clip_grad(x):
        return x * 1.0

    clip_grad.defvjp(lambda x: (x * 1.0, None), lambda _, g: (enp.clip(g, -1.0, 1.0),))

    def f(h, xs):
        def body(c, x):
            c = inner(c, x)
            c = ember.checkpoint(lambda u: enp.sin(u) * 2.0)(c)
            return clip_grad(c), (c, x)
        return ember.scan(body, h, xs)

    h, xs = np.ones(3, np.float32), np.random.default_rng(8).standard_normal((5, 3)).astype(np.float32)
    got, want, paths = native_and_reference(f, h, xs)
    assert paths == [("scan", "native")]
    assert_same(got, want, exact=False)
    got, want, paths = native_and_reference(lambda h, x: inner(h, x), h, xs[0])
    assert paths == [("jit_call", "native")]
    assert_same(got, want)
    loss = lambda h, xs: f(h, xs)[0].sum()  # noqa: E731
    got, want, paths = native_and_reference(ember.grad(loss), h, xs)
    assert all(p == "native" for _, p in paths) and ("scan", "native") in paths
    assert_same(got, want, exact=False)
