"""Native programs against the reference interpreter: BLAS products called from
compiled code, split reductions, row-fused kernels, and the executable's buffer
reuse (arena, recycled outputs, concurrent calls)."""
import gc
import threading

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.backends.kernels import GemmKernel, RowKernel, schedule
from ember.backends.llvm import KernelLauncher, blas
from ember.backends.llvm.kernel_target import cpu_target
from ember.backends.llvm.executable import compile_graph
from ember.backends.llvm.pool import NativePool, get_native_pool
from ember.fx.interpreter import run_graph_numpy


def run_both(f, *args):
    g = ember.make_graph(f)(*args)
    exe = compile_graph(g)
    got = exe(*args)
    ref = run_graph_numpy(g.graph, g.consts_as_buffers(), list(args))
    return got, ref, g


def close(got, ref, rtol=2e-5, atol=2e-5):
    assert len(got) == len(ref)
    for a, b in zip(got, ref):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol)


def kinds(g, **kw):
    return [type(s).__name__ for s in schedule(g, cpu_target(), **kw).steps]


# --- dot_general through BLAS ------------------------------------------------------------

DOTS = [
    # (lhs shape, rhs shape, ((lc, rc), (lb, rb)))
    ((5, 7), (7, 3), (((1,), (0,)), ((), ()))),          # A @ B
    ((7, 5), (7, 3), (((0,), (0,)), ((), ()))),          # A^T @ B
    ((5, 7), (3, 7), (((1,), (1,)), ((), ()))),          # A @ B^T
    ((7, 5), (3, 7), (((0,), (1,)), ((), ()))),          # A^T @ B^T
    ((4, 5, 7), (4, 7, 3), (((2,), (1,)), ((0,), (0,)))),  # batched
    ((4, 7, 5), (4, 3, 7), (((1,), (2,)), ((0,), (0,)))),  # batched, both transposed
    ((5, 4, 7), (7, 4, 3), (((2,), (0,)), ((1,), (1,)))),  # batch dim in the middle: copies
    ((2, 3, 4, 5), (4, 5, 6), (((2, 3), (0, 1)), ((), ()))),  # two contracting dims
    ((3, 2, 5), (5, 4, 2), (((2,), (0,)), ((), ()))),      # several free dims
    ((6,), (6,), (((0,), (0,)), ((), ()))),                # vector dot
    ((6,), (6, 4), (((0,), (0,)), ((), ()))),              # vector @ matrix
    ((1, 6), (6, 1), (((1,), (0,)), ((), ()))),            # unit dims
    ((3, 1, 4), (3, 4, 1), (((2,), (1,)), ((0,), (0,)))),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("ls,rs,dn", DOTS)
def test_dot_general_is_native_and_matches(ls, rs, dn, dtype):
    # float products are BLAS calls; outer products (k <= 2) fused expressions
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(ls) * (10 if dtype == np.int32 else 1)).astype(dtype)
    y = (rng.standard_normal(rs) * (10 if dtype == np.int32 else 1)).astype(dtype)
    got, ref, g = run_both(lambda a, b: lax.dot_general(a, b, dn), x, y)
    tol = {np.float32: 1e-5, np.float64: 1e-12, np.int32: 0}[dtype]
    close(got, ref, rtol=tol, atol=tol)
    (lc, _), _ = dn
    fused = int(np.prod([ls[i] for i in lc])) <= cpu_target().dot_fuse_max_k
    assert ("GemmKernel" in kinds(g)) == (not fused and dtype != np.int32)
    assert ("LibraryStep" in kinds(g)) == (not fused and dtype == np.int32)


def test_outer_products_fuse_into_their_consumer():
    rng = np.random.default_rng(24)
    x = rng.standard_normal((256, 64)).astype(np.float32)
    d = rng.standard_normal((256, 32)).astype(np.float32)
    # per-example outer products (vmap of a gradient), then transposed
    got, ref, g = run_both(lambda a, b: lax.transpose(lax.dot_general(
        a[:, :, None], b[:, None, :], (((2,), (1,)), ((0,), (0,)))), (0, 2, 1)), x, d)
    close(got, ref)
    assert kinds(g) == ["MapKernel"]


def test_dot_general_of_fused_operands_and_transposed_result():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((60, 90)).astype(np.float32)
    y = rng.standard_normal((90, 40)).astype(np.float32)

    def f(a, b):
        # operands are fused expressions (one of them read transposed); the product's
        # only use is a transpose, so it is computed transposed
        p = lax.dot_general(lax.tanh(a), lax.transpose(lax.mul(b, np.float32(2)), (1, 0)),
                            (((1,), (1,)), ((), ())))
        return lax.add(lax.transpose(p, (1, 0)), np.float32(1))
    got, ref, g = run_both(f, x, y)
    close(got, ref)
    steps = schedule(g, cpu_target()).steps
    (gemm,) = [s for s in steps if isinstance(s, GemmKernel)]
    assert (gemm.m, gemm.n) == (40, 60)   # the transposed product


def test_large_products_split_into_parallel_blocks(monkeypatch):
    get_native_pool()                               # (sized before the variable changes)
    monkeypatch.setenv("EMBER_NUM_THREADS", "8")   # grids of up to 8 blocks, whatever this machine has
    rng = np.random.default_rng(2)
    for m, n, k in [(600, 150, 200), (150, 600, 200), (517, 523, 129), (1000, 1000, 64)]:
        x = rng.standard_normal((m, k)).astype(np.float32)
        y = rng.standard_normal((k, n)).astype(np.float32)
        got, ref, g = run_both(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))), x, y)
        close(got, ref, rtol=1e-4, atol=1e-4)
        (gemm,) = [s for s in schedule(g, cpu_target(threads=8)).steps if isinstance(s, GemmKernel)]
        assert gemm.tasks > 1


def test_degenerate_and_half_precision_products():
    x = np.ones((3, 0), np.float32)
    y = np.ones((0, 4), np.float32)
    got, ref, g = run_both(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))), x, y)
    close(got, ref)                                    # an empty sum: zeros, in a fused kernel
    assert kinds(g) == ["MapKernel"]
    h = np.ones((2, 3), np.float16)
    got, ref, g = run_both(lambda a: lax.dot_general(a, a, (((1,), (1,)), ((), ()))), h)
    np.testing.assert_array_equal(got[0], ref[0])
    # widened to the float32 gemm between converts (kernels/widen.py), as the reference computes
    assert "GemmKernel" in kinds(g) and "LibraryStep" not in kinds(g)


def test_blas_runs_single_threaded_under_native_code(monkeypatch):
    if not blas.available():
        pytest.skip("no scipy BLAS")
    monkeypatch.setenv("EMBER_GEMM", "blas")
    x = np.ones((64, 64), np.float32)
    blas._limited.clear()
    compile_graph(ember.make_graph(lambda a: lax.dot_general(a, a, (((1,), (0,)), ((), ()))))(x))(x)
    assert blas._thread_setter() is None or blas._limited[-1] == 1
    blas._limited.clear()
    y = np.ones((1, 1, 4, 4), np.float32)
    compile_graph(ember.make_graph(lambda a: lax.conv_general_dilated(a, a, (1, 1), "SAME"))(y))(y)
    assert blas._thread_setter() is None or blas._limited[-1] == 1


# --- split reductions ------------------------------------------------------------------------

@pytest.mark.parametrize("shape,axes,op", [
    ((1 << 17,), (0,), "reduce_sum"),
    ((100003,), (0,), "reduce_max"),       # no chunk count divides it: a guarded tail
    ((100003,), (0,), "reduce_min"),
    ((3001, 37), (0,), "reduce_sum"),      # a column sum over many rows
    ((3001, 37), (0, 1), "reduce_sum"),
    ((513, 4, 33), (0, 2), "reduce_max"),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_large_reductions_split_into_partials(shape, axes, op, dtype):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 100).astype(dtype)
    got, ref, g = run_both(lambda v: getattr(lax, op)(v, axes), x)
    close(got, ref, rtol=1e-5, atol=1e-2)
    names = [s.name for s in schedule(g, cpu_target()).steps]
    assert len(names) == 2 and names[0].endswith("_part")


def test_split_reduction_keeps_nan_and_bool():
    x = np.ones(1 << 17, np.float32)
    x[-1] = np.nan
    got, ref, _ = run_both(lambda v: lax.reduce_max(v, (0,)), x)
    assert np.isnan(got[0]) and np.isnan(ref[0])
    b = np.ones(1 << 17, bool)
    b[12345] = False
    for op in ("reduce_and", "reduce_or"):
        got, ref, _ = run_both(lambda v: getattr(lax, op)(v, (0,)), b)
        np.testing.assert_array_equal(got[0], ref[0])


# --- row fusion ----------------------------------------------------------------------------------

def test_layernorm_runs_in_one_row_loop():
    x = np.random.default_rng(4).standard_normal((37, 65)).astype(np.float32)

    def layernorm(v):
        mu = lax.div(lax.reduce_sum(v, (1,)), np.float32(65))
        c = lax.sub(v, lax.broadcast_in_dim(mu, v.shape, (0,)))
        var = lax.div(lax.reduce_sum(lax.mul(c, c), (1,)), np.float32(65))
        return lax.mul(c, lax.broadcast_in_dim(lax.rsqrt(lax.add(var, np.float32(1e-5))), v.shape, (0,)))
    got, ref, g = run_both(layernorm, x)
    close(got, ref, rtol=1e-4, atol=1e-5)
    steps = schedule(g, cpu_target()).steps
    assert [type(s).__name__ for s in steps] == ["RowKernel"]


def test_rows_read_in_another_order_are_not_fused():
    x = np.random.default_rng(5).standard_normal((9, 16)).astype(np.float32)

    def f(v):
        s = lax.reduce_sum(lax.exp(v), (1,))
        # reads the row sums in reverse row order: cannot run row by row
        return lax.div(v, lax.broadcast_in_dim(lax.rev(s, (0,)), v.shape, (0,)))
    got, ref, g = run_both(f, x)
    close(got, ref)
    assert "RowKernel" not in kinds(g)


def test_row_group_members_of_several_ranks():
    x = np.random.default_rng(6).standard_normal((4, 6, 10)).astype(np.float32)

    def f(v):
        m = lax.reduce_max(v, (2,))
        e = lax.exp(lax.sub(v, lax.broadcast_in_dim(m, v.shape, (0, 1))))
        s = lax.reduce_sum(e, (2,))
        return lax.log(s), lax.div(e, lax.broadcast_in_dim(s, v.shape, (0, 1)))
    got, ref, g = run_both(f, x)
    close(got, ref)
    (row,) = [s for s in schedule(g, cpu_target()).steps if isinstance(s, RowKernel)]
    assert row.outer == (4, 6)


def test_row_fusion_is_parallel_over_rows_and_matches():
    x = np.random.default_rng(7).standard_normal((2048, 96)).astype(np.float32)

    def softmax(v):
        e = lax.exp(lax.sub(v, lax.broadcast_in_dim(lax.reduce_max(v, (1,)), v.shape, (0,))))
        return lax.div(e, lax.broadcast_in_dim(lax.reduce_sum(e, (1,)), v.shape, (0,)))
    got, ref, _ = run_both(softmax, x)
    close(got, ref, rtol=1e-5, atol=1e-7)


# --- buffers across calls ------------------------------------------------------------------------

def _chain(v):
    a = lax.exp(lax.tanh(v))
    b = lax.reduce_sum(a, (1,))
    c = lax.mul(a, lax.broadcast_in_dim(b, v.shape, (0,)))
    return lax.add(c, np.float32(1)), lax.reduce_max(c, (1,))


def test_outputs_survive_later_calls():
    rng = np.random.default_rng(8)
    x1 = rng.standard_normal((300, 200)).astype(np.float32)
    x2 = rng.standard_normal((300, 200)).astype(np.float32)
    exe = compile_graph(ember.make_graph(_chain)(x1))
    r1 = [np.array(o) for o in exe(x1)]
    held = exe(x1)
    for _ in range(3):
        exe(x2)
    for a, b in zip(held, r1):
        np.testing.assert_array_equal(a, b)
    ref2 = run_graph_numpy(ember.make_graph(_chain)(x2).graph, [], [x2])
    close(exe(x2), ref2, rtol=1e-5, atol=1e-4)


def test_dropped_outputs_are_recycled_and_held_ones_are_not():
    x = np.random.default_rng(9).standard_normal((512, 256)).astype(np.float32)
    exe = compile_graph(ember.make_graph(lambda v: lax.mul(v, np.float32(2)))(x))
    first = exe(x)[0]
    addr = first.__array_interface__["data"][0]
    second = exe(x)[0]
    assert second.__array_interface__["data"][0] != addr     # `first` is still held
    del first
    gc.collect()
    third = exe(-x)[0]
    assert third.__array_interface__["data"][0] == addr      # reused
    np.testing.assert_array_equal(second, x * 2)
    np.testing.assert_array_equal(third, -x * 2)
    # the loop pattern: the previous result is still bound while the next call runs
    y = exe(x)[0]
    addrs = set()
    for _ in range(4):
        y = exe(x)[0]
        addrs.add(y.__array_interface__["data"][0])
    assert len(addrs) <= 2
    small = compile_graph(ember.make_graph(lambda v: lax.mul(v, np.float32(2)))(x[:4]))
    np.testing.assert_array_equal(small(x[:4])[0], x[:4] * 2)


def test_concurrent_calls_use_separate_buffers():
    rng = np.random.default_rng(10)
    xs = [rng.standard_normal((200, 300)).astype(np.float32) for _ in range(4)]
    g = ember.make_graph(_chain)(xs[0])
    exe = compile_graph(g)
    refs = [run_graph_numpy(g.graph, [], [x]) for x in xs]
    errors = []

    def work(i):
        try:
            for _ in range(20):
                close(exe(xs[i]), refs[i], rtol=1e-5, atol=1e-4)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_library_results_that_view_intermediates_are_copied():
    x = np.random.default_rng(11).standard_normal((64, 64)).astype(np.float32)

    def f(v):
        t = lax.tanh(v)                                      # an arena buffer
        r = ember.cond(lax.gt(v[0, 0], np.float32(-100)), lambda a: a, lambda a: lax.neg(a), t)
        return r, lax.reduce_sum(t, (0,))
    exe = compile_graph(ember.make_graph(f)(x))
    first = exe(x)[0]
    keep = np.array(first)
    exe(-x)
    np.testing.assert_array_equal(first, keep)
    np.testing.assert_allclose(first, np.tanh(x), rtol=1e-5, atol=1e-6)


# --- gather fused as indexed loads ----------------------------------------------------------------

def _gather_cases():
    import ember.numpy as enp
    rng = np.random.default_rng(12)
    x = rng.standard_normal((7, 5)).astype(np.float32)
    rows = np.array([3, -1, 9, 0, 6, 2, -9], np.int32)        # out of range: clip / fill
    yield "take_along_axis", lambda v, i: enp.take_along_axis(v, i[:, None] % 5, axis=1), (x, rows)
    yield "take rows", lambda v, i: enp.take(v, i, axis=0, mode="clip"), (x, rows)
    yield "take fill", lambda v, i: enp.take(v, i, axis=0, mode="fill", fill_value=-7.0), (x, rows)
    yield "index", lambda v, i: v[i % 7, 1:4], (x, rows)
    yield "2d index", lambda v, i: v[i % 7, (i * 3) % 5], (x, rows.astype(np.int64))
    yield "tanh of rows", lambda v, i: lax.tanh(v)[i % 7] * 2.0, (x, rows.astype(np.uint8))


@pytest.mark.parametrize("name,f,args", list(_gather_cases()), ids=[c[0] for c in _gather_cases()])
def test_gather_fuses_and_matches(name, f, args):
    got, ref, g = run_both(f, *args)
    close(got, ref)
    assert "gather" in {eq.prim.name for eq in g.equations}
    assert "LibraryStep" not in kinds(g)


def _scatter_cases():
    import ember.numpy as enp
    rng = np.random.default_rng(13)
    x = rng.standard_normal((7, 5)).astype(np.float32)
    u = rng.standard_normal((6, 5)).astype(np.float32)
    i = np.array([3, 1, 3, 9, -1, 0], np.int32)           # repeats and out-of-range rows
    yield "add", lambda a, b, j: a.at[j].add(b), (x, u, i)
    yield "add clip", lambda a, b, j: a.at[j].add(b, mode="clip"), (x, u, i)
    yield "set", lambda a, b, j: a.at[j].set(b * 2.0), (x, u, i)
    yield "mul", lambda a, b, j: a.at[j].multiply(b), (x, u, i)
    yield "min", lambda a, b, j: a.at[j].min(b), (x, u, i)
    yield "max", lambda a, b, j: a.at[j].max(b), (x, u, i.astype(np.int64))
    yield "cols", lambda a, b, j: a.at[:, j[:4] % 5].add(lax.tanh(a[:, 1:5])), (x, u, i)
    yield "int", lambda a, b, j: a.at[j].add(b), (x.astype(np.int32), u.astype(np.int32) * 3, i)
    yield "f64", lambda a, b, j: a.at[j].add(b), (x.astype(np.float64), u.astype(np.float64), i)
    yield "grad of take", lambda a, b, j: ember.grad(lambda t: enp.sum(enp.take(t, j % 7, axis=0) * b))(a), (x, u, i)


@pytest.mark.parametrize("name,f,args", list(_scatter_cases()), ids=[c[0] for c in _scatter_cases()])
def test_scatter_runs_natively_and_matches(name, f, args):
    got, ref, g = run_both(f, *args)
    close(got, ref, rtol=1e-6, atol=1e-6)
    assert any(eq.prim.name.startswith("scatter") for eq in g.equations)
    assert "LibraryStep" not in kinds(g)


# --- convolutions: im2col + BLAS per image ---------------------------------------------------------

CONVS = [
    # (lhs shape, rhs shape, kwargs)
    ((2, 3, 9, 8), (4, 3, 3, 3), dict(window_strides=(1, 1), padding="SAME")),
    ((2, 3, 9, 8), (4, 3, 3, 2), dict(window_strides=(2, 3), padding="VALID")),
    ((2, 3, 9, 8), (4, 3, 3, 3), dict(window_strides=(1, 2), padding=((2, 1), (0, 3)))),
    ((2, 3, 9, 8), (4, 3, 3, 3), dict(window_strides=(1, 1), padding=((-1, 2), (1, -2)))),
    ((2, 3, 7, 6), (4, 3, 2, 3), dict(window_strides=(1, 1), padding="SAME", rhs_dilation=(2, 1))),
    ((2, 3, 5, 6), (4, 3, 3, 3), dict(window_strides=(1, 1), padding=((2, 2), (1, 2)), lhs_dilation=(2, 3))),
    ((2, 6, 7, 7), (8, 3, 3, 3), dict(window_strides=(1, 1), padding="SAME", feature_group_count=2)),
    ((2, 6, 7, 7), (6, 1, 3, 3), dict(window_strides=(2, 2), padding="SAME", feature_group_count=6)),
    ((2, 9, 8, 3), (3, 3, 3, 4), dict(window_strides=(1, 1), padding="SAME",
                                      dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ((2, 9, 8, 6), (3, 3, 3, 4), dict(window_strides=(2, 1), padding="SAME", feature_group_count=2,
                                      dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ((2, 3, 9, 8), (4, 3, 3, 3), dict(window_strides=(1, 1), padding="SAME",
                                      dimension_numbers=("NCHW", "OIHW", "NHWC"))),
    ((2, 3, 9, 8), (4, 3, 3, 3), dict(window_strides=(1, 1), padding="SAME",
                                      dimension_numbers=("NCHW", "OIHW", "CNHW"))),
    ((3, 4, 11), (5, 4, 3), dict(window_strides=(2,), padding="SAME")),                   # 1-d
    ((2, 2, 5, 4, 6), (3, 2, 2, 3, 2), dict(window_strides=(1, 1, 2), padding="SAME")),  # 3-d
    ((2, 3, 4, 4), (4, 3, 4, 4), dict(window_strides=(1, 1), padding="VALID")),          # one position
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ls,rs,kw", CONVS)
def test_conv_is_native_and_matches(ls, rs, kw, dtype):
    rng = np.random.default_rng(14)
    x = rng.standard_normal(ls).astype(dtype)
    w = rng.standard_normal(rs).astype(dtype)
    got, ref, g = run_both(lambda a, b: lax.conv_general_dilated(a, b, **kw), x, w)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    close(got, ref, rtol=tol, atol=tol)
    assert "ConvKernel" in kinds(g) and "LibraryStep" not in kinds(g)


def test_conv_of_fused_operands_and_its_gradient():
    rng = np.random.default_rng(15)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)

    def loss(a, b):
        y = lax.conv_general_dilated(lax.tanh(a), lax.mul(b, np.float32(0.5)), (2, 2), "SAME")
        return lax.reduce_sum(lax.mul(y, y), (0, 1, 2, 3))
    got, ref, _ = run_both(lambda a, b: ember.grad(loss, argnums=(0, 1))(a, b), x, w)
    close(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m,k,n", [(300, 200, 80), (80, 200, 300), (65, 33, 47), (333, 150, 271), (700, 300, 500)])
def test_gemm_epilogues_run_on_each_block(m, k, n, monkeypatch):
    get_native_pool()
    monkeypatch.setenv("EMBER_NUM_THREADS", "6")
    rng = np.random.default_rng(16)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)

    def f(a, b, c):
        h = lax.dot_general(a, b, (((1,), (0,)), ((), ())))
        z = lax.add(h, lax.broadcast_in_dim(c, h.shape, (1,)))
        r = lax.max(z, np.float32(0))                          # bias + relu: epilogues
        mask = lax.convert_element_type(lax.gt(z, np.float32(0)), np.float32)
        t = lax.transpose(lax.tanh(h), (1, 0))                 # reads the product transposed: not fused
        return r, lax.mul(mask, np.float32(3)), t
    got, ref, g = run_both(f, x, w, bias)
    close([got[0], got[2]], [ref[0], ref[2]])
    # the mask may flip where z rounds across zero (another summation order)
    z = x.astype(np.float64) @ w + bias
    clear = np.abs(z) > 1e-3
    np.testing.assert_array_equal(np.asarray(got[1])[clear], np.asarray(ref[1])[clear])
    (gemm,) = [s for s in schedule(g, cpu_target()).steps if isinstance(s, GemmKernel)]
    assert len(gemm.epilogue) == 2


def test_products_of_several_tasks_on_one_thread(monkeypatch):
    # inline, the kernel gets the whole task range and makes one BLAS call per product
    monkeypatch.setenv("EMBER_NUM_THREADS", "1")
    rng = np.random.default_rng(17)
    x = rng.standard_normal((700, 300)).astype(np.float32)
    w = rng.standard_normal((300, 500)).astype(np.float32)
    got, ref, g = run_both(lambda a, b: lax.tanh(lax.dot_general(a, b, (((1,), (0,)), ((), ())))), x, w)
    close(got, ref, rtol=1e-4, atol=1e-4)
    (gemm,) = [s for s in schedule(g, cpu_target(threads=4)).steps if isinstance(s, GemmKernel)]
    assert gemm.tasks > 1 and len(gemm.epilogue) == 1


def _softmax_like(kind):
    def f(v):
        m = lax.reduce_max(v, (1,))
        e = lax.exp(lax.sub(v, lax.broadcast_in_dim(m, v.shape, (0,))))
        s = lax.broadcast_in_dim(lax.reduce_sum(e, (1,)), v.shape, (0,))
        if kind == "plain":
            return lax.div(e, s)
        if kind == "reversed":                      # reads e at another element of the row
            return lax.div(lax.rev(e, (1,)), s)
        if kind == "needed later":                  # e is also a program output
            return lax.div(e, s), e
        b = lax.tanh(e)                             # b and e would both live in the result
        return lax.add(lax.add(e, b), lax.mul(b, s))
    return f


@pytest.mark.parametrize("kind,aliased", [("plain", True), ("reversed", False), ("needed later", False),
                                          ("two intermediates", None)])
def test_row_intermediates_stored_in_the_result_only_when_safe(kind, aliased):
    x = np.random.default_rng(18).standard_normal((33, 70)).astype(np.float32)
    f = _softmax_like(kind)
    got, ref, g = run_both(f, x)
    close(got, ref, rtol=1e-5, atol=1e-6)
    (row,) = [s for s in schedule(g, cpu_target()).steps if isinstance(s, RowKernel)]
    if aliased is True:
        assert len(row.aliases) == 1
    elif aliased is False:
        assert not row.aliases
    else:
        assert len(row.aliases) == 1    # b is; e (read by the member writing b) is not


@pytest.mark.parametrize("kind,scratch", [("plain", 0), ("reversed", 1), ("needed later", 0),
                                          ("two intermediates", 0)])
def test_row_intermediates_only_members_read_are_one_row_of_scratch(kind, scratch):
    # e is scratch where it is neither aliased into the result nor read after the rows
    x = np.random.default_rng(23).standard_normal((2048, 70)).astype(np.float32)   # rows on both threads
    f = _softmax_like(kind)
    got, ref, g = run_both(f, x)
    close(got, ref, rtol=1e-5, atol=1e-6)
    (row,) = [s for s in schedule(g, cpu_target()).steps if isinstance(s, RowKernel)]
    assert list(row.scratch.values()) == [70] * scratch
    assert not set(row.scratch) & set(row.outputs)


def test_row_scratch_keeps_to_its_byte_budget_and_to_the_targets_that_have_it():
    import dataclasses
    x = np.random.default_rng(24).standard_normal((8, 5000)).astype(np.float64)   # 40 kB rows
    f = _softmax_like("reversed")
    got, ref, g = run_both(f, x)
    close(got, ref, rtol=1e-12, atol=1e-12)

    def scratch(target):
        (row,) = [s for s in schedule(g, target).steps if isinstance(s, RowKernel)]
        return row.scratch
    assert scratch(cpu_target()) == {min(scratch(cpu_target())): 5000}
    assert not scratch(dataclasses.replace(cpu_target(), row_scratch_bytes=32_000))
    assert not scratch(dataclasses.replace(cpu_target(), row_scratch_bytes=0))


def test_forward_laplacian_rows_keep_activations_in_scratch():
    # the tanh values and their derivative of each layer are read only inside their row
    rng = np.random.default_rng(25)
    w1, w2 = rng.standard_normal((3, 16)), rng.standard_normal((16, 1))

    def u(z):
        return (enp.tanh(z @ w1) @ w2)[0]
    pts = rng.standard_normal((50, 3))
    f = ember.jit(ember.vmap(ember.laplacian(u)))
    got = np.asarray(f(pts))
    ref = np.asarray(ember.vmap(lambda z: enp.trace(ember.hessian(u)(z)))(pts))
    np.testing.assert_allclose(got, ref, rtol=1e-11, atol=1e-11)
    assert "one row of scratch" in f.lower(pts).as_text("kernels")


# --- the native worker pool --------------------------------------------------------------------------

def _tanh_kernel():
    import llvmlite.ir as ir
    from ember.backends.llvm import compile_ir, loops, mathlib
    m = ir.Module()
    f32 = ir.FloatType()
    loops.elementwise_kernel(m, "tanh_k", 1, f32, lambda b, xs: [mathlib.emit(b, "tanh", xs, f32)])
    return compile_ir(str(m), ["tanh_k"])


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_native_pool_covers_every_chunk(threads):
    cm = _tanh_kernel()
    x = np.random.default_rng(19).standard_normal(300_007).astype(np.float32)
    pool = NativePool(threads, adaptive=False)
    try:
        for total, minpt in [(x.size, 1000), (x.size, 1), (17, 1), (1, 1), (0, 1)]:
            y = np.full_like(x, np.nan)
            call = KernelLauncher(cm["tanh_k"], 2).prepare([x, y])
            pool.run(cm["tanh_k"], call.args_address, total, minpt)
            np.testing.assert_allclose(y[:total], np.tanh(x[:total]), rtol=1e-5, atol=1e-6)
            assert np.isnan(y[total:]).all()
    finally:
        pool.shutdown()


def test_native_pool_from_several_threads_and_after_idle():
    import time
    cm = _tanh_kernel()
    pool = NativePool(2)
    errors = []

    def user(seed):
        try:
            x = np.random.default_rng(seed).standard_normal(200_000).astype(np.float32)
            for _ in range(30):
                y = np.empty_like(x)
                call = KernelLauncher(cm["tanh_k"], 2).prepare([x, y])
                pool.run(cm["tanh_k"], call.args_address, x.size, 1000)
                np.testing.assert_allclose(y, np.tanh(x), rtol=1e-5, atol=1e-6)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    try:
        ts = [threading.Thread(target=user, args=(s,)) for s in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        time.sleep(0.05)             # the workers went to sleep: the next job wakes them
        user(7)
        assert not errors, errors[0]
        assert pool.jobs > 0
    finally:
        pool.shutdown()


def test_native_pool_goes_serial_when_workers_do_not_help():
    import ctypes
    import time
    main = threading.get_ident()
    seen = []

    @ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
    def kernel(start, stop, args):
        seen.append(threading.get_ident())
        if threading.get_ident() != main:
            time.sleep(0.01)           # a worker that holds its chunk without computing
        else:
            t = time.perf_counter() + 0.0003
            while time.perf_counter() < t:
                pass
    addr = ctypes.cast(kernel, ctypes.c_void_p).value
    pool = NativePool(2)
    try:
        # MISSES unhelpful jobs in a row switch to serial; a loaded machine can make
        # one job look helpful (the caller descheduled mid-chunk), so allow retries
        for _ in range(20 * NativePool.MISSES):
            pool.run(addr, 0, 8, 1)
            if pool._serial_left:
                break
        assert pool._serial_left == NativePool.SERIAL_JOBS
        seen.clear()
        before = pool.serial_jobs
        for _ in range(NativePool.SERIAL_JOBS):
            pool.run(addr, 0, 8, 1)
        assert set(seen) == {main} and len(seen) == NativePool.SERIAL_JOBS   # whole range per call
        assert pool.serial_jobs - before == NativePool.SERIAL_JOBS
    finally:
        pool.shutdown()


def test_native_pool_stays_parallel_when_it_only_had_to_wake_its_workers():
    # short jobs after idle spells: the workers are asleep, the caller finishes
    # before they arrive.  That costs the caller nothing and must not start serial
    # spells (they let the workers fall asleep again: a quiet machine got locked
    # into running on one thread).  A loaded machine can still make one attempt
    # look unhelpful (a spinning worker descheduled with a chunk), so retry.
    import ctypes
    import time

    @ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
    def kernel(start, stop, args):
        pass
    addr = ctypes.cast(kernel, ctypes.c_void_p).value
    serial = []
    for _ in range(3):
        pool = NativePool(2)
        try:
            pool.run(addr, 0, 8, 1)
            for _ in range(40):
                time.sleep(3 * NativePool.SPIN_SECONDS)   # the workers go to sleep
                pool.run(addr, 0, 8, 1)
            serial.append(pool.serial_jobs)
        finally:
            pool.shutdown()
        if serial[-1] == 0:
            break
    assert serial[-1] == 0, serial


def test_programs_run_without_the_array_data_offset(monkeypatch):
    # an interpreter whose array objects we cannot read: buffers are bound by address
    from ember.backends.llvm import executable
    monkeypatch.setattr(executable, "DATA_OFFSET", None)
    rng = np.random.default_rng(20)
    x = rng.standard_normal((64, 48)).astype(np.float32)
    w = rng.standard_normal((48, 32)).astype(np.float32)

    def f(a, b):
        h = lax.tanh(lax.dot_general(a, b, (((1,), (0,)), ((), ()))))
        s = lax.reduce_sum(h, (1,))
        r = ember.cond(lax.gt(s[0], np.float32(-1e9)), lambda t: lax.mul(t, np.float32(2)), lambda t: t, h)
        return lax.add(r, lax.broadcast_in_dim(s, h.shape, (0,))), s
    for _ in range(2):
        got, ref, _ = run_both(f, x, w)
        close(got, ref, rtol=1e-4, atol=1e-4)


def test_kernels_run_on_the_python_pool_when_the_native_one_cannot_be_built(monkeypatch):
    from ember.backends.llvm import pool
    monkeypatch.setattr(pool._NATIVE, "_obj", None)
    monkeypatch.setattr(pool, "NativePool", lambda: (_ for _ in ()).throw(OSError("no sched_yield")))
    try:
        x = np.random.default_rng(21).standard_normal((1 << 18,)).astype(np.float32)
        got, ref, _ = run_both(lambda v: lax.mul(lax.tanh(v), np.float32(3)), x)
        close(got, ref, rtol=1e-5, atol=1e-6)
        assert isinstance(pool.get_native_pool(), pool._ThreadPoolRunner)
    finally:
        if pool._NATIVE._obj is not None:
            pool._NATIVE._obj.shutdown()
        pool._NATIVE._obj = None


@pytest.mark.parametrize("shape,perm", [((70, 45), (1, 0)), ((33, 40, 50), (0, 2, 1)), ((40, 3, 50), (2, 1, 0)),
                                        ((17, 64, 20, 33), (0, 3, 1, 2)), ((1024, 48), (1, 0))])
def test_transposed_reads_are_tiled_and_match(shape, perm):
    from ember.backends.llvm.codegen import _transposed_dim
    x = np.random.default_rng(22).standard_normal(shape).astype(np.float32)
    got, ref, g = run_both(lambda v: lax.add(lax.transpose(v, perm), np.float32(1)), x)
    close(got, ref)
    (k,) = schedule(g, cpu_target()).steps
    assert _transposed_dim(k) is not None


def test_batched_product_computed_transposed():
    rng = np.random.default_rng(23)
    x = rng.standard_normal((3, 50, 70)).astype(np.float32)
    y = rng.standard_normal((3, 70, 40)).astype(np.float32)

    def f(a, b):
        p = lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,))))     # (3, 5, 4)
        return lax.exp(lax.transpose(p, (0, 2, 1)))
    got, ref, g = run_both(f, x, y)
    close(got, ref, rtol=1e-5, atol=1e-5)
    (gemm,) = [s for s in schedule(g, cpu_target()).steps if isinstance(s, GemmKernel)]
    assert (gemm.batch, gemm.m, gemm.n) == (3, 40, 50)


def test_row_group_with_empty_rows_still_reduces():
    x = np.zeros((5, 0), np.float32)

    def f(v):
        m = lax.reduce_max(v, (1,))
        e = lax.exp(lax.sub(v, lax.broadcast_in_dim(m, v.shape, (0,))))
        return lax.reduce_sum(e, (1,)), m, e
    got, ref, g = run_both(f, x)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)


# --- random products: dimension numbers, operand layouts, fused consumers -------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402


@st.composite
def _random_dots(draw):
    nb, nc, nl, nr = (draw(st.integers(0, 2)), draw(st.integers(0, 2)), draw(st.integers(0, 2)),
                      draw(st.integers(0, 2)))
    sizes = lambda k: [draw(st.integers(1, 5)) for _ in range(k)]  # noqa: E731
    bs, cs, ls, rs = sizes(nb), sizes(nc), sizes(nl), sizes(nr)
    # operand dims in a random order
    lhs_dims = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("l", i) for i in range(nl)]
    rhs_dims = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("r", i) for i in range(nr)]
    lhs_dims = draw(st.permutations(lhs_dims))
    rhs_dims = draw(st.permutations(rhs_dims))
    size = {("b", i): s for i, s in enumerate(bs)} | {("c", i): s for i, s in enumerate(cs)}
    size |= {("l", i): s for i, s in enumerate(ls)} | {("r", i): s for i, s in enumerate(rs)}
    dn = ((tuple(lhs_dims.index(("c", i)) for i in range(nc)), tuple(rhs_dims.index(("c", i)) for i in range(nc))),
          (tuple(lhs_dims.index(("b", i)) for i in range(nb)), tuple(rhs_dims.index(("b", i)) for i in range(nb))))
    epilogue = draw(st.sampled_from(["none", "tanh", "transpose"]))
    return ([size[d] for d in lhs_dims], [size[d] for d in rhs_dims], dn, epilogue, draw(st.integers(0, 1000)))


@settings(max_examples=40, deadline=None)
@given(_random_dots())
def test_random_products_match_reference(case):
    ls, rs, dn, epilogue, seed = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(ls).astype(np.float32)
    y = rng.standard_normal(rs).astype(np.float32)

    def f(a, b):
        p = lax.dot_general(lax.mul(a, np.float32(0.5)), b, dn)
        if epilogue == "tanh":
            return lax.tanh(p)
        if epilogue == "transpose" and p.ndim >= 2:
            return lax.transpose(p, tuple(reversed(range(p.ndim))))
        return p
    got, ref, _ = run_both(f, x, y)
    close(got, ref, rtol=1e-5, atol=1e-5)


def test_cached_programs_are_found_without_building_ir(monkeypatch, tmp_path):
    from ember.backends.llvm import codegen, compiler, executable
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    x = np.random.default_rng(25).standard_normal((70, 90)).astype(np.float32)
    g = ember.make_graph(lambda v: lax.reduce_sum(lax.tanh(v), (1,)))(x)
    first = compile_graph(g)(x)
    compiler.clear_memory_cache()
    monkeypatch.setattr(executable, "render_program", lambda *a: (_ for _ in ()).throw(AssertionError("rendered")))
    before = compiler.cache_stats()["disk_hits"]
    again = compile_graph(g)
    assert compiler.cache_stats()["disk_hits"] == before + 1
    np.testing.assert_array_equal(again(x)[0], first[0])
    # a different program is a different key
    g2 = ember.make_graph(lambda v: lax.reduce_sum(lax.sin(v), (1,)))(x)
    monkeypatch.setattr(executable, "render_program", codegen.render_program)
    np.testing.assert_allclose(compile_graph(g2)(x)[0], np.sin(x).sum(1), rtol=1e-5, atol=1e-5)
