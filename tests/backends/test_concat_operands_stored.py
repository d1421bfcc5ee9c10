"""Scheduling rules read from the cost of a kernel: the operands of a fused
concatenate whose expressions are large are stored (each computed once, not at
every element of the concatenation), and a product's blocks count the work of the
epilogues fused onto them.  Native results agree with the reference on both sides
of each rule."""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.backends.kernels.loop_ir import GemmKernel, MapKernel
from ember.backends.kernels.policy import STORE_RELOAD_OPS, _concat_operands_to_store
from ember.backends.kernels.schedule import schedule
from ember.backends.llvm.kernel_target import cpu_target
from ember.fx.prims import shape as sh

T2 = cpu_target(threads=2)


def _series(x, steps, terms):
    """A recurrence like a Taylor rule's: y_k from every y_j before it."""
    ys = [x]
    for k in range(1, steps):
        acc = ys[-1] * x
        for j in range(max(0, k - terms), k):
            acc = acc + ys[j] * ys[k - 1 - j] * (1.0 / (j + 1))
        ys.append(acc)
    return ys


def _stored(f, *args):
    g = ember.make_graph(f)(*args).graph
    producer = {v: e for e in g.equations for v in e.outputs}
    (cat,) = [e for e in g.equations if e.prim.name == "concatenate"]
    return _concat_operands_to_store(cat, producer, set(g.inputs) | set(g.constvars))


def _check_native(f, x):
    np.testing.assert_allclose(np.asarray(ember.jit(f)(x)), np.asarray(ember.jit(f, backend="reference")(x)),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("steps", [6, 10])
def test_large_concatenated_series_are_stored(steps):
    x = np.linspace(-0.5, 0.5, 96).reshape(8, 12)
    f = lambda x: sh.concatenate([sh.expand_dims(y, (0,)) for y in _series(x, steps, steps)], 0)  # noqa: E731
    stored = _stored(f, x)
    assert len(stored) == steps - 1               # every computed y_k; x is an input
    # the concatenation itself is then a copy of buffers (a kernel per operand)
    prog = schedule(ember.make_graph(f)(x), T2)
    cats = [s for s in prog.steps if isinstance(s, MapKernel) and "concatenate" in s.name]
    assert len(cats) == steps and all("mul" not in repr(c.body) for c in cats)
    _check_native(f, x)


def test_cheap_operands_stay_fused():
    x = np.linspace(-1, 1, 40).reshape(4, 10)
    f = lambda x: sh.concatenate([sh.expand_dims(x * 2.0, (0,)), sh.expand_dims(x + 1.0, (0,))], 0)  # noqa: E731
    assert _stored(f, x) == []                    # one op each: (2 - 1) * 1 < STORE_RELOAD_OPS
    prog = schedule(ember.make_graph(f)(x), T2)
    # one kernel per operand, each computing its operand where it writes it
    assert [type(s).__name__ for s in prog.steps] == ["MapKernel", "MapKernel"]
    assert all(s.store is not None and s.body[0] == "op" for s in prog.steps)
    _check_native(f, x)


def test_threshold_is_the_store_and_reload_cost():
    # a two-operand concatenation wastes (2n - n) * c: stored iff c > STORE_RELOAD_OPS
    x = np.linspace(0.1, 0.9, 16)

    def chain(c):
        def f(x):
            y = x
            for i in range(c):
                y = y * x + float(i)   # two ops per step
            return sh.concatenate([x, y], 0)
        return f
    below, above = chain(STORE_RELOAD_OPS // 2), chain(STORE_RELOAD_OPS // 2 + 1)
    assert _stored(below, x) == [] and len(_stored(above, x)) == 1
    _check_native(below, x)
    _check_native(above, x)


def test_gemm_blocks_count_an_expensive_epilogue():
    a, w = np.ones((1000, 64)), np.full((64, 64), 0.01)
    plain = schedule(ember.make_graph(lambda a, w: a @ w)(a, w), T2)
    tanh = schedule(ember.make_graph(lambda a, w: enp.tanh(a @ w))(a, w), T2)
    (g0,) = [s for s in plain.steps if isinstance(s, GemmKernel)]
    (g1,) = [s for s in tanh.steps if isinstance(s, GemmKernel)]
    assert g0.tasks == 1 and g1.epilogue and g1.tasks == 2
    f = lambda a, w: enp.tanh(a @ w)  # noqa: E731
    np.testing.assert_allclose(np.asarray(ember.jit(f)(a, w)), np.tanh(a @ w), rtol=1e-12)


def test_a_concatenate_of_many_operands_feeding_a_reduction_is_stored():
    # fused into the sum, every element would evaluate all four operands; stored, each
    # operand's kernel writes its slab and the sum reads one buffer
    rng = np.random.default_rng(5)
    parts = [rng.normal(size=(3, n)).astype(np.float32) for n in (5, 2, 4, 1)]
    z = rng.normal(size=(3, 12)).astype(np.float32)
    f = lambda a, b, c, d, z: enp.sum(enp.concatenate([a * 2.0, b, c + 1.0, d], 1) * z)  # noqa: E731
    prog = schedule(ember.make_graph(f)(*parts, z), T2)
    cats = [s for s in prog.steps if isinstance(s, MapKernel) and s.store is not None]
    assert len(cats) == 4, [s.name for s in prog.steps]
    got = ember.jit(f)(*parts, z)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ember.jit(f, backend="reference")(*parts, z)), rtol=1e-5)


def test_two_operands_stay_fused_into_their_consumer():
    a, b = np.ones((2, 3), np.float32), np.ones((2, 2), np.float32)
    prog = schedule(ember.make_graph(lambda a, b: enp.sum(enp.concatenate([a, b], 1)))(a, b), T2)
    assert not [s for s in prog.steps if isinstance(s, MapKernel) and s.store is not None]


def test_a_large_expression_shared_by_a_gemm_layout_copy_is_stored_in_its_own_layout():
    # e is used by a reduction and, transposed, by a product: computed once in its own
    # layout; the product's layout copy reads it back transposed
    rng = np.random.default_rng(6)
    x = rng.normal(size=(4, 6, 8)).astype(np.float32)
    y = rng.normal(size=(4, 6, 8)).astype(np.float32)
    w = rng.normal(size=(6, 5)).astype(np.float32)

    def f(x, y, w):
        e = (x * y + x * x * 0.5 - y * 3.0 + x * y * y) * (x - y) + y * 0.25   # cheap ops only
        return enp.sum(e, axis=1), enp.einsum("abc,bd->acd", e, w)        # rows (a, c), k = b

    prog = schedule(ember.make_graph(f)(x, y, w), T2)
    layouts = [s for s in prog.steps if isinstance(s, MapKernel) and "layout" in s.name]
    assert layouts and all(s.body[0] == "load" for s in layouts), [s.body[:2] for s in layouts]
    got = ember.jit(f)(x, y, w)
    ref = ember.jit(f, backend="reference")(x, y, w)
    for g_, r_ in zip(got, ref):
        np.testing.assert_allclose(np.asarray(g_), np.asarray(r_), rtol=2e-5, atol=2e-5)
