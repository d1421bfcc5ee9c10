"""ember.jet on whole programs (MLP, scan RNN, cond, while_loop), its composition with
jit/vmap/grad, what is built on it (taylor.derivatives, laplacian, hvp), and its errors."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember import lax

R = np.random.default_rng(1)


def nested(f, x, v, order):
    out, g = [], f
    for _ in range(order):
        g = (lambda g: lambda x: ember.jvp(g, (x,), (v,))[1])(g)
        out.append(np.asarray(g(x)))
    return out


def line(v, order):
    return [v] + [enp.zeros_like(v)] * (order - 1)


def assert_close(got, ref, rtol=1e-12):
    for k, (a, b) in enumerate(zip(got, ref), start=1):
        a, b = np.asarray(a), np.asarray(b)
        scale = max(1.0, float(np.max(np.abs(b))))
        assert float(np.max(np.abs(a - b))) <= rtol * scale, f"order {k}"


def _mlp_params(sizes):
    return [(R.normal(size=(m, n)) / math.sqrt(m), R.normal(size=n) * 0.1) for m, n in zip(sizes, sizes[1:])]


def mlp(params, x):
    for i, (w, b) in enumerate(params):
        x = x @ w + b
        if i < len(params) - 1:
            x = enp.tanh(x)
    return x


def test_mlp_against_nested_jvp():
    params = _mlp_params([3, 8, 8, 1])
    x, v = R.normal(size=(5, 3)), R.normal(size=(5, 3))
    f = lambda x: mlp(params, x)  # noqa: E731
    _, ys = ember.jet(f, (x,), (line(v, 5),))
    assert_close(ys, nested(f, x, v, 5))


def test_scan_rnn_against_nested_jvp():
    w = R.normal(size=(4, 4)) * 0.5
    u = R.normal(size=(3, 4)) * 0.5

    def rnn(x):   # x: [T, 3]
        h, hs = lax.scan(lambda h, xt: (enp.tanh(h @ w + xt @ u),) * 2, enp.zeros(4, dtype="float64"), x)
        return enp.sum(hs * hs) + enp.sum(h)

    x, v = R.normal(size=(6, 3)), R.normal(size=(6, 3))
    y, ys = ember.jet(rnn, (x,), (line(v, 5),))
    assert np.allclose(y, rnn(x), rtol=1e-15)
    assert_close(ys, nested(rnn, x, v, 5))


def test_cond_switch_and_while_loop():
    def f(x):
        y = lax.switch(np.int32(1), [lambda x: x, lambda x: enp.sin(x) * x, lambda x: -x], x)
        y = lax.cond(enp.sum(x) > 0, lambda y: enp.exp(y), lambda y: y * 2.0, y)
        return lax.while_loop(lambda c: c[1] < 4, lambda c: (enp.cos(c[0]) + c[0] * 0.5, c[1] + 1), (y, 0))[0]

    x, v = np.linspace(0.1, 0.6, 3), np.array([1.0, -0.5, 0.3])
    _, ys = ember.jet(f, (x,), (line(v, 5),))
    assert_close(ys, nested(f, x, v, 5))


def test_cond_under_vmap_selects_per_element():
    def c2(x):
        f = lambda x: lax.cond(x > 0, lambda x: x ** 3, lambda x: -x ** 2, x)  # noqa: E731
        return ember.jet(f, (x,), ([np.float64(1.0), np.float64(0.0)],))[1][1]

    out = ember.vmap(c2)(np.array([-2.0, 3.0]))
    assert out.tolist() == [-2.0, 18.0]     # (-x^2)'' = -2, (x^3)'' = 6x


def test_jit_vmap_grad_compose():
    f = lambda x: enp.tanh(x) * enp.sin(x)  # noqa: E731

    def c3(x, v):
        return ember.jet(f, (x,), (line(v, 3),))[1][2]

    x, v = np.linspace(0.1, 0.9, 3), np.ones(3)
    eager = np.asarray(c3(x, v))
    np.testing.assert_allclose(ember.jit(c3)(x, v), eager, rtol=1e-14)
    batched = ember.vmap(c3)(np.stack([x, 2 * x]), np.stack([v, v]))
    np.testing.assert_allclose(batched[1], c3(2 * x, v), rtol=1e-14)
    # jet inside jit and of a jitted function: one jit_call with the jet graph inside
    inner = ember.jit(lambda x, v: ember.jet(ember.jit(f), (x,), (line(v, 3),))[1][2])
    np.testing.assert_allclose(inner(x, v), eager, rtol=1e-14)
    # grad of a Taylor coefficient: the third derivative's derivative is the fourth
    g = ember.grad(lambda x: c3(x, np.float64(1.0)))(np.float64(0.4))
    d4 = ember.jet(f, (np.float64(0.4),), (line(np.float64(1.0), 4),))[1][3]
    np.testing.assert_allclose(g, d4, rtol=1e-12)
    ember.testing.check_grads(lambda x: c3(x, v), (x,), order=1, modes=("rev",))


def test_jit_of_jet_graph_grows_quadratically():
    f = lambda x: enp.tanh(enp.tanh(x) * 2.0)  # noqa: E731
    sizes = []
    for K in (4, 8):
        g = ember.make_graph(lambda x, v: ember.jet(f, (x,), (line(v, K),))[1])(np.ones(3), np.ones(3))
        sizes.append(len(g.graph.equations))
    assert sizes[1] < 5 * sizes[0]      # ~K^2: 4x, where nested jvp grows 16x


def test_derivatives_closed_form():
    d = ember.taylor.derivatives(lambda x: enp.exp(2.0 * x), np.float64(0.0), np.float64(1.0), 6)
    np.testing.assert_allclose([float(t) for t in d], [2.0 ** k for k in range(7)], rtol=1e-14)
    x, v = R.normal(size=3), R.normal(size=3)
    f = lambda x: enp.sum(enp.sin(x) ** 2)  # noqa: E731
    d = ember.taylor.derivatives(f, x, v, 4)
    assert_close(d[1:], nested(f, x, v, 4))
    assert ember.taylor.derivatives(f, x, v, 0)[0] == f(x)


def _mlp_scalar(params):
    return lambda x: mlp(params, x)[0]


@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 4), width=st.integers(1, 6), seed=st.integers(0, 100))
def test_laplacian_vs_trace_of_hessian(n, width, seed):
    rng = np.random.default_rng(seed)
    params = [(rng.normal(size=(n, width)), rng.normal(size=width)), (rng.normal(size=(width, 1)), rng.normal(size=1))]
    f = lambda x: enp.sum(enp.sin(mlp(params, x)) * enp.exp(-enp.sum(x * x)))  # noqa: E731
    x = rng.normal(size=n)
    lap = ember.laplacian(f)(x)
    ref = enp.trace(ember.hessian(f)(x))
    np.testing.assert_allclose(lap, ref, rtol=1e-11, atol=1e-12)


def test_laplacian_closed_form_vmap_jit_and_shapes():
    u = lambda x: enp.sin(x[0]) * enp.sinh(x[1]) + x[0] ** 2 * x[1] ** 3  # noqa: E731
    pts = R.normal(size=(7, 2))
    got = ember.jit(ember.vmap(ember.laplacian(u)))(pts)
    a, b = pts[:, 0], pts[:, 1]
    np.testing.assert_allclose(got, 2 * b ** 3 + 6 * a ** 2 * b, rtol=1e-12)   # sin sinh is harmonic
    # a matrix argument, a vector output: the Laplacian of each output element
    f = lambda m, c: enp.tanh(m).sum(axis=0) * c  # noqa: E731
    m = R.normal(size=(3, 2))
    lap = ember.laplacian(f)(m, 2.0)
    t = np.tanh(m)
    np.testing.assert_allclose(lap, (2.0 * (-2 * t * (1 - t ** 2))).sum(axis=0), rtol=1e-12)
    # grad of a Laplacian (a PINN loss) against finite differences
    ember.testing.check_grads(lambda x: ember.laplacian(u)(x), (pts[0],), order=1, modes=("rev",))


def test_hvp_vs_hessian_times_v():
    f = lambda x: enp.sum(enp.tanh(x) ** 3) + enp.prod(enp.cos(x))  # noqa: E731
    x, v = R.normal(size=4), R.normal(size=4)
    np.testing.assert_allclose(ember.hvp(f, x, v), np.asarray(ember.hessian(f)(x)) @ v, rtol=1e-12)


def test_torch_reference_for_taylor_coefficients():
    torch = pytest.importorskip("torch")
    from torch.func import jvp as tjvp
    x, v = np.linspace(0.2, 0.7, 3), np.array([0.3, -1.0, 0.5])
    g = lambda t: torch.sum(torch.tanh(t) * torch.sin(t))  # noqa: E731
    ref, h = [], g
    for _ in range(4):
        h = (lambda h: lambda t: tjvp(h, (t,), (torch.tensor(v),))[1])(h)
        ref.append(float(h(torch.tensor(x))))
    _, ys = ember.jet(lambda t: enp.sum(enp.tanh(t) * enp.sin(t)), (x,), (line(v, 4),))
    assert_close(ys, ref)


def test_bad_input_errors():
    with pytest.raises(TypeError, match="same number of terms"):
        ember.jet(enp.sin, (1.0, 2.0), ([1.0], [1.0, 0.0]))
    with pytest.raises(TypeError, match="2 primals but 1 series"):
        ember.jet(lambda a, b: a, (1.0, 2.0), ([1.0],))
    with pytest.raises(TypeError, match=r"has shape float64\[2\] but primal 0 is float64\[3\]"):
        ember.jet(enp.sin, (np.ones(3),), ([np.ones(2)],))
    with pytest.raises(TypeError, match="must be an array"):
        ember.jet(enp.sin, ({"a": 1.0},), ([1.0],))
    with pytest.raises(TypeError, match="integer/bool value"):
        ember.jet(lambda i: i * 2, (np.int32(3),), ([np.int32(1)],))
    with pytest.raises(TypeError, match="needs a float argument"):
        ember.laplacian(lambda i: i * 2)(np.arange(3))
    with pytest.raises(TypeError, match="direction v has shape"):
        ember.taylor.derivatives(enp.sin, np.ones(3), np.ones(2), 2)
