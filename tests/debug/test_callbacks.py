"""ember.debug.print / callback / print_grad: eager, jit, vmap, grad, scan, while."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember.fx.passes import cse, dce, optimize


def _f(x):
    ember.debug.print("a {}", x)
    y = x * 2.0
    ember.debug.print("b {}", y)
    return y.sum()


def _lines(capsys):
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("wrap", [lambda f: f, ember.jit, lambda f: ember.jit(f, backend="reference")])
def test_print_in_program_order(capsys, wrap):
    out = wrap(_f)(enp.asarray([1.0, 2.0]))
    assert float(out) == 6.0
    assert _lines(capsys) == ["a [1. 2.]", "b [2. 4.]"]


def test_jit_prints_on_every_call_not_at_trace(capsys):
    f = ember.jit(_f)
    for v in (1.0, 3.0):
        f(enp.asarray([v]))
    assert _lines(capsys) == ["a [1.]", "b [2.]", "a [3.]", "b [6.]"]
    assert f.compile_count == 1


def test_survives_dce_and_cse():
    def g(x):
        ember.debug.print("same {}", x)
        ember.debug.print("same {}", x)
        return x + 1.0
    closed = ember.make_graph(g)(1.0)
    names = [e.prim.name for e in optimize(closed).equations]
    assert names.count("debug_callback") == 2
    assert [e.prim.name for e in dce(cse(closed.graph)).equations].count("debug_callback") == 2


@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 4), axis=st.integers(0, 1))
def test_vmap_one_call_with_the_batch(n, axis):
    seen = []
    x = np.arange(n * 3, dtype=np.float32).reshape((n, 3) if axis == 0 else (3, n))
    out = ember.vmap(lambda v: (ember.debug.callback(seen.append, v), v * 2.0)[1], in_axes=axis)(x)
    assert len(seen) == 1
    # the batch axis comes first in what the callback sees
    np.testing.assert_array_equal(np.asarray(seen[0]), np.moveaxis(x, axis, 0))
    np.testing.assert_allclose(np.asarray(out), np.moveaxis(x, axis, 0) * 2.0)


def test_jit_of_vmap(capsys):
    ember.jit(ember.vmap(_f))(enp.ones((2, 1)))
    assert _lines(capsys) == ["a [[1.]", " [1.]]", "b [[2.]", " [2.]]"]


@pytest.mark.parametrize("wrap", [lambda f: f, ember.jit])
def test_grad_prints_primal_in_forward_pass(capsys, wrap):
    g = wrap(ember.grad(_f))(enp.asarray([1.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(g), [2.0, 2.0])
    assert _lines(capsys) == ["a [1. 2.]", "b [2. 4.]"]


def test_jvp_prints_primal(capsys):
    p, t = ember.jvp(_f, (enp.asarray([1.0]),), (enp.asarray([1.0]),))
    assert (float(p), float(t)) == (2.0, 2.0)
    assert _lines(capsys) == ["a [1.]", "b [2.]"]


@pytest.mark.parametrize("wrap", [lambda f: f, ember.jit])
def test_print_grad_prints_cotangent_in_backward_pass(capsys, wrap):
    def f(x):
        y = ember.debug.print_grad("ct {:.1f}", x * 3.0)
        ember.debug.print("fwd {:.1f}", y)
        return enp.sin(y)
    g = wrap(ember.grad(f))(0.5)
    np.testing.assert_allclose(float(g), 3.0 * np.cos(1.5), rtol=1e-6)
    # forward first, then the cotangent cos(1.5) in the backward pass
    assert _lines(capsys) == ["fwd 1.5", f"ct {np.cos(1.5):.1f}"]


def _body(c, t):
    ember.debug.print("it {} {}", c, t)
    return c + t, c


@pytest.mark.parametrize("wrap", [lambda f: f, ember.jit])
def test_scan_every_iteration(capsys, wrap):
    c, ys = wrap(lambda xs: ember.lax.scan(_body, 0.0, xs))(enp.arange(3.0))
    assert float(c) == 3.0
    assert _lines(capsys) == ["it 0.0 0.0", "it 0.0 1.0", "it 1.0 2.0"]


def test_grad_of_scan_prints_forward_iterations(capsys):
    g = ember.grad(lambda x: ember.lax.scan(_body, x, enp.arange(3.0))[0])(1.0)
    assert float(g) == 1.0
    assert _lines(capsys) == ["it 1.0 0.0", "it 1.0 1.0", "it 2.0 2.0"]


@pytest.mark.parametrize("wrap", [lambda f: f, ember.jit])
def test_while_every_iteration(capsys, wrap):
    def body(c):
        ember.debug.print("w {}", c)
        return c + 1
    out = wrap(lambda n: ember.lax.while_loop(lambda c: c < n, body, 0))(3)
    assert int(out) == 3
    assert _lines(capsys) == ["w 0", "w 1", "w 2"]


def test_callback_gets_ember_arrays_and_pytrees():
    seen = []
    ember.jit(lambda d: ember.debug.callback(lambda t, k=None: seen.append((t, k)), d["a"], k=d["b"]))(
        {"a": enp.asarray([1.0]), "b": enp.asarray(2)})
    (t, k), = seen
    assert isinstance(t, ember.Array) and isinstance(k, ember.Array)
    assert (float(t[0]), int(k)) == (1.0, 2)


def test_bad_arguments_are_clear():
    with pytest.raises(TypeError, match="must be callable"):
        ember.debug.callback(3, 1.0)
    with pytest.raises(TypeError, match="format must be a str"):
        ember.debug.print(1.0)
    with pytest.raises(TypeError, match="argument leaf 0 is a object"):
        ember.debug.print("{}", object())


def test_jet_prints_primal(capsys):
    y0, (y1, y2) = ember.jet(lambda x: (ember.debug.print("p {}", x), enp.exp(x))[1],
                             (np.float64(0.0),), ((np.float64(1.0), np.float64(0.0)),))
    # exp along t: derivatives 1, 1 at 0
    assert (float(y0), float(y1), float(y2)) == (1.0, 1.0, 1.0)
    assert _lines(capsys) == ["p 0.0"]


@pytest.mark.parametrize("wrap", [lambda f: f, ember.jit])
@pytest.mark.parametrize("axis", [0, 1])
def test_vmap_sequential_calls_per_example(capsys, wrap, axis):
    x = np.arange(6, dtype=np.float32).reshape((3, 2) if axis == 0 else (2, 3))
    f = lambda v, s: (ember.debug.print("ex {} {}", v, s, vmap_method="sequential"), v.sum() * s)[1]  # noqa: E731
    out = wrap(ember.vmap(f, in_axes=(axis, None)))(x, 2.0)
    ex = np.moveaxis(x, axis, 0)
    np.testing.assert_allclose(np.asarray(out), ex.sum(axis=1) * 2.0)
    assert _lines(capsys) == [f"ex {row} 2.0" for row in ex]


def test_nested_vmap_sequential_and_bad_method():
    seen = []
    ember.vmap(ember.vmap(lambda v: ember.debug.callback(seen.append, v, vmap_method="sequential") or v))(
        np.arange(6.0).reshape(2, 3))
    # every example once; the inner vmap's rule runs first (it cannot see the outer axis),
    # so its index varies slowest
    assert [float(v) for v in seen] == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    with pytest.raises(ValueError, match="vmap_method must be one of"):
        ember.debug.callback(seen.append, 1.0, vmap_method="loop")
