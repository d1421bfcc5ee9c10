"""cond/switch run natively (backends/llvm/native_loops.py: the loop VM's SWITCH
instruction): at the top level of a program and inside scan / while_loop /
fori_loop bodies, their transposes, vmap and nested loops.  Results are checked
bitwise against the shared Python driver over the same compiled kernels (the
fallback path, forced), and against the reference interpreter (bitwise where
the body has only exactly rounded operations)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember import lax
from ember.tree import tree_flatten
from ember.backends.llvm import loop_vm, native_loops
from ember.backends.llvm.executable import compile_graph


def _native(f, *args):
    g = ember.make_graph(f)(*args)
    exe = compile_graph(g)
    return [np.asarray(o) for o in exe(*[np.asarray(a) for a in tree_flatten(args)[0]])], exe.loop_paths()


def _reference(f, *args):
    return [np.asarray(o) for o in tree_flatten(ember.jit(f, backend="reference")(*args))[0]]


def _driver(f, *args):
    """The same program with every loop and branch run by the Python driver over
    the same compiled bodies (what a body that cannot run natively does)."""
    mp = pytest.MonkeyPatch()
    mp.setattr(native_loops, "_unsupported", lambda exe, what="body": "forced by the test")
    try:
        out, paths = _native(f, *args)
    finally:
        mp.undo()
    assert paths and all(p.startswith("fallback") for _, p in paths), paths
    return out


def check(f, *args, exact=True):
    """Native results == driver results bitwise, and == (or close to) the
    reference interpreter's; returns the loop paths."""
    got, paths = _native(f, *args)
    same(got, _driver(f, *args), exact=True)
    same(got, _reference(f, *args), exact=exact)
    return paths


def same(got, want, exact):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
        if exact:
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=2e-5, atol=1e-6)


def sub_graph_prims(g, prim_name):
    """The equations named `prim_name` anywhere in `g` (an explicit stack over sub-graphs)."""
    found, stack, seen = [], [g], set()
    while stack:
        c = stack.pop()
        if id(c) in seen:
            continue
        seen.add(id(c))
        for e in c.graph.equations if hasattr(c, "graph") else c.equations:
            if e.prim.name == prim_name:
                found.append(e)
            for v in e.params.values():
                for p in v if isinstance(v, tuple) else (v,):
                    if hasattr(p, "graph") and hasattr(p, "consts"):
                        stack.append(p)
    return found


# --- the instruction ------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(dtype=st.sampled_from([np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                              np.uint64, np.bool_]),
       value=st.integers(-2 ** 63, 2 ** 64 - 1), n=st.integers(1, 5))
def test_switch_instruction_clamps_like_the_driver(dtype, value, n):
    dt = np.dtype(dtype)
    info = np.iinfo(dt) if dt.kind != "b" else None
    v = bool(value & 1) if info is None else min(max(value, info.min), info.max)
    x = np.array([v], dt)
    W = loop_vm.WIDTH

    def ins(*w):
        return list(w) + [0] * (W - len(w))
    # SWITCH into n JUMPs; arm k: SET slot 1 = k, END
    code = ins(loop_vm.SWITCH, 0, n, 1, dt.itemsize, int(dt.kind == "i"))
    code += sum((ins(loop_vm.JUMP, 1 + n + 2 * k) for k in range(n)), [])
    code += sum((ins(loop_vm.SET, 1, k) + ins(loop_vm.END) for k in range(n)), [])
    slots = np.array([x.ctypes.data, -1], np.int64)
    loop_vm.run_loop_code(np.array(code, np.int64), slots)
    assert int(slots[1]) == min(max(int(x[0]), 0), n - 1)


# --- top level ------------------------------------------------------------------------------------

@pytest.mark.parametrize("index", [-3, 0, 1, 2, 7])
def test_top_level_switch_clamps_the_index(index):
    w = np.array([1.5, -2.0, 3.0], np.float32)

    def f(i, x):
        return lax.switch(i, [lambda u: (u * 2.0, u),               # an input passed through
                              lambda u: (u - w, np.float32(4.0) + 0 * u),
                              lambda u: (u * u + 1.0, w)], x)        # a constant as a result

    paths = check(f, np.int32(index), np.arange(3, dtype=np.float32))
    assert paths == [("cond", "native")]


@pytest.mark.parametrize("pred", [True, False])
def test_top_level_cond_with_operands_of_several_dtypes(pred):
    def f(p, x, k):
        return lax.cond(p, lambda x, k: (x.sum(axis=0), k + 1, x[0] > 0),
                        lambda x, k: (x.max(axis=0), k * 2, x[1] > 1), x, k)

    x = np.random.default_rng(0).standard_normal((70, 3)).astype(np.float32)
    paths = check(f, pred, x, np.int64(5), exact=False)
    assert paths == [("cond", "native")]


def test_cond_whose_branch_has_a_library_step_falls_back():
    def f(p, x):
        return lax.cond(p, lambda u: enp.sort(u), lambda u: u * 2.0, x)

    x = np.array([3.0, 1.0, 2.0], np.float32)
    got, paths = _native(f, True, x)
    assert paths == [("cond", "fallback: the branch has a library step (sort)")]
    same(got, _reference(f, True, x), exact=True)

    def g(xs):   # ... and so does a scan around it, naming the cond
        return ember.scan(lambda c, x: (lax.cond(c > 0, lambda u: enp.sort(u), lambda u: -u, x)[0] + c, c),
                          np.float32(1.0), xs)

    xs = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    got, paths = _native(g, xs)
    assert paths == [("scan", "fallback: the body has a library step (cond)")]
    same(got, _reference(g, xs), exact=True)


# --- inside loops ---------------------------------------------------------------------------------

def piecewise_rnn(W, xs, h0):
    """A piecewise RNN cell: which update runs depends on the state."""
    def step(h, x):
        h = lax.cond(h.sum() > 0, lambda h: enp.tanh(h @ W + x), lambda h: h * 0.5 - x, h)
        return h, h.sum()
    return ember.scan(step, h0, xs)


def rnn_data(T=12, n=5, seed=2):
    rng = np.random.default_rng(seed)
    return ((rng.standard_normal((n, n)) * 0.5).astype(np.float32),
            rng.standard_normal((T, n)).astype(np.float32), np.full(n, 0.1, np.float32))


def test_piecewise_rnn_cell_in_scan():
    W, xs, h0 = rnn_data()
    paths = check(piecewise_rnn, W, xs, h0, exact=False)
    assert paths == [("scan", "native")]
    ys = _native(piecewise_rnn, W, xs, h0)[0][1]
    assert (ys > 0).any() and (ys <= 0).any()    # both branches ran


def test_exact_cond_body_matches_the_reference_bitwise():
    def f(c, xs):
        def body(c, x):
            c = lax.cond(c.sum() > 2.0, lambda c: c * 0.5 - x, lambda c: c + x * x, c)
            return c, (c.sum(), c > 0)
        return ember.scan(body, c, xs, reverse=True)

    xs = np.random.default_rng(3).standard_normal((9, 4)).astype(np.float32)
    assert check(f, np.ones(4, np.float32), xs) == [("scan", "native")]


def test_grad_of_scan_with_cond_runs_the_transposed_cond_natively():
    W, xs, h0 = rnn_data(T=10)

    def loss(W, h0):
        h, ys = piecewise_rnn(W, xs, h0)
        return (h ** 2).sum() + ys.sum()

    grad = ember.grad(loss, argnums=(0, 1))
    g = ember.make_graph(grad)(W, h0)
    assert len(sub_graph_prims(g, "cond")) >= 2    # the forward cond and its transpose
    paths = check(grad, W, h0, exact=False)
    assert paths == [("scan", "native"), ("scan", "native")]
    ember.testing.check_grads(lambda W: loss(W, h0.astype(np.float64)), (W.astype(np.float64),),
                              order=1, modes=("rev",))


def test_while_with_cond_in_the_body():
    def f(x):
        return ember.while_loop(lambda v: v < 100.0,
                                lambda v: lax.cond(v > 10.0, lambda u: u * 3.0, lambda u: u + 4.0, v), x)

    for x0 in (1.0, 50.0, 200.0):
        assert check(f, np.float32(x0)) == [("while_loop", "native")]

    def collatz(n):
        def body(s):
            n, k = s
            return lax.cond(n % 2 == 0, lambda n: n // 2, lambda n: 3 * n + 1, n), k + 1
        return ember.while_loop(lambda s: s[0] != 1, body, (n, np.int32(0)))

    assert check(collatz, np.int32(27)) == [("while_loop", "native")]
    assert int(_native(collatz, np.int32(27))[0][1]) == 111


def test_fori_loop_with_switch_static_and_traced_bounds():
    def body(i, v):
        return lax.switch(i % 3, [lambda u: u * 2.0, lambda u: u - 1.0,
                                  lambda u: u + i.astype(np.float32)], v)

    x = np.ones(3, np.float32)
    assert check(lambda x: ember.fori_loop(0, 8, body, x), x) == [("scan", "native")]
    for lo, hi in ((0, 8), (5, 5), (6, 2)):
        paths = check(lambda lo, hi, x: ember.fori_loop(lo, hi, body, x), np.int32(lo), np.int32(hi), x)
        assert paths == [("while_loop", "native")]


def test_vmap_of_a_scan_with_cond():
    """A batched predicate becomes a select (no cond is left in the body); an
    unbatched one stays a cond of batched branches. Both run natively."""
    W, xs, h0 = rnn_data(T=6, n=4)
    hs = np.stack([h0, -h0, h0 * 3.0])
    batched = ember.vmap(piecewise_rnn, in_axes=(None, None, 0))
    assert not sub_graph_prims(ember.make_graph(batched)(W, xs, hs), "cond")
    assert check(batched, W, xs, hs, exact=False) == [("scan", "native")]

    def by_x(x, xs):   # the predicate reads only an unbatched operand
        def body(c, t):
            return lax.cond(t.sum() > 0, lambda c: c * 2.0 + x, lambda c: c - x, c), c
        return ember.scan(body, x, xs)

    unbatched = ember.vmap(by_x, in_axes=(0, None))
    assert sub_graph_prims(ember.make_graph(unbatched)(hs, xs), "cond")
    assert check(unbatched, hs, xs) == [("scan", "native")]


def test_nested_loops_and_branches():
    def f(xs):
        def inner(a, x):   # a cond in an inner scan
            return lax.cond(a > 1.0, lambda a: a * 0.5, lambda a: a + x * x, a), a

        def outer(c, row):
            c, ys = ember.scan(inner, c, row)
            # a loop inside a branch inside the outer body, and a cond inside a branch
            c = lax.cond(ys.sum() > 3.0,
                         lambda c: ember.fori_loop(0, 3, lambda i, v: v * 0.75 + 0.25, c),
                         lambda c: lax.cond(c > 0.5, lambda u: u - 0.5, lambda u: u + 0.125, c), c)
            return c, ys
        return ember.scan(outer, np.float32(0.5), xs)

    xs = np.random.default_rng(4).standard_normal((5, 6)).astype(np.float32)
    assert check(f, xs) == [("scan", "native")]


def test_jit_call_containing_a_cond_in_a_scan_body():
    cell = ember.jit(lambda h, x: lax.cond(x.sum() > 0, lambda h: h * 0.5 + x, lambda h: h - x * x, h))

    def f(h, xs):
        return ember.scan(lambda h, x: (cell(h, x), h.sum()), h, xs)

    h, xs = np.ones(3, np.float32), np.random.default_rng(5).standard_normal((7, 3)).astype(np.float32)
    g = ember.make_graph(f)(h, xs)
    assert sub_graph_prims(g, "jit_call")
    assert check(f, h, xs) == [("scan", "native")]
    loss = lambda h, xs: f(h, xs)[0].sum()   # noqa: E731
    paths = check(ember.grad(loss), h, xs)
    assert paths and all(p == "native" for _, p in paths)


def test_half_precision_and_integer_branches():
    def f(c, xs):
        def body(c, x):
            a, k = c
            a, k = lax.cond(k % 3 == 0, lambda a, k: (a * x, k + 2), lambda a, k: (a + x, k + 1), a, k)
            return (a, k), a
        return ember.scan(body, c, xs)

    for dt in (np.float16, np.int16):
        xs = np.arange(1, 7, dtype=dt).reshape(3, 2)
        assert check(f, (np.ones(2, dt), np.int32(0)), xs) == [("scan", "native")]


def test_edge_cases():
    """One branch, no operands, empty operands, results that are an operand twice,
    and a branch result that is both the new carry and two stacked outputs."""
    x = np.arange(3, dtype=np.float32)
    assert check(lambda i, x: lax.switch(i, [lambda u: u * 2.0], x), np.int32(3), x) == [("cond", "native")]
    assert check(lambda p: lax.cond(p, lambda: enp.ones(3) * 2.0, lambda: enp.zeros(3)), False) == \
        [("cond", "native")]
    for p in (True, False):
        assert check(lambda p, x: lax.cond(p, lambda u: (u, u), lambda u: (u * 2.0, u * 2.0), x), p, x) == \
            [("cond", "native")]
    empty = np.zeros((0, 3), np.float32)
    assert check(lambda p, e: lax.cond(p, lambda u: u + 1.0, lambda u: u * 2.0, e), True, empty) == \
        [("cond", "native")]

    def g(xs):
        def body(c, x):
            y = lax.switch(x.astype(np.int32), [lambda c: c + x, lambda c: c * x, lambda c: c - x], c)
            return y, (y, y, np.float32(5.0))
        return ember.scan(body, np.float32(1), xs)
    assert check(g, np.array([0.0, 1.0, 2.0, 5.0, -3.0], np.float32)) == [("scan", "native")]
