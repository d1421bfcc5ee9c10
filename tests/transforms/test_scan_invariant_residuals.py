"""Reverse mode through scan saves a loop-invariant residual once, not once per iteration."""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.testing import check_grads
from ember.transforms.checkpoint import saved_residuals

T, H = 30, 5
rng = np.random.default_rng(0)
W0 = rng.standard_normal((H, H)) * 0.4
XS = rng.standard_normal((T, H))
H0 = rng.standard_normal(H) * 0.1


def rnn(W, h0, reverse=False):
    def step(h, x):
        h = enp.tanh(W @ h + x)
        return h, enp.sin(h) * enp.exp(W[0, 0])
    h, ys = lax.scan(step, h0, enp.asarray(XS), reverse=reverse)
    return (h ** 2).sum() + ys.sum()


def rnn_unrolled(W, h0, reverse=False):
    h, total = h0, 0.0
    for t in (reversed(range(T)) if reverse else range(T)):
        h = enp.tanh(W @ h + enp.asarray(XS[t]))
        total = total + (enp.sin(h) * enp.exp(W[0, 0])).sum()
    return (h ** 2).sum() + total


def shapes(fun, *args):
    return sorted(a.str_short() for a, _ in saved_residuals(fun, *args))


def test_the_weight_is_saved_once_not_per_iteration():
    saved = shapes(rnn, enp.asarray(W0), enp.asarray(H0))
    assert f"f64[{H},{H}]" in saved
    assert not any(s.startswith(f"f64[{T},{H},{H}]") for s in saved), saved
    # what else is saved is per iteration (hidden states: T * H) or outside the loop
    assert sum(s.startswith(f"f64[{T},") for s in saved) == 4 and len(saved) == 6, saved


def test_a_residual_computed_from_consts_alone_is_hoisted_too():
    x = enp.asarray(XS)

    def f(W):
        def step(h, xt):
            return enp.tanh(enp.exp(W) @ h + xt), None   # exp(W) is invariant
        return lax.scan(step, enp.zeros(H, enp.float64), x)[0].sum()

    saved = shapes(f, enp.asarray(W0))
    assert f"f64[{H},{H}]" in saved and not any(s.startswith(f"f64[{T},{H},{H}]") for s in saved)


@pytest.mark.parametrize("reverse", [False, True])
def test_gradients_match_the_unrolled_loop(reverse):
    W, h0 = enp.asarray(W0), enp.asarray(H0)
    want = ember.grad(rnn_unrolled, argnums=(0, 1))(W, h0, reverse)
    for fn in (ember.grad(rnn, argnums=(0, 1)), ember.jit(ember.grad(rnn, argnums=(0, 1)), static_argnums=2)):
        got = fn(W, h0, reverse)
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-12)


def test_second_order_and_finite_differences():
    check_grads(lambda W, h0: rnn(W, h0), (enp.asarray(W0), enp.asarray(H0)), order=2, modes=("rev",))
    hess = ember.hessian(lambda h0: rnn(enp.asarray(W0), h0))(enp.asarray(H0))
    want = ember.hessian(lambda h0: rnn_unrolled(enp.asarray(W0), h0))(enp.asarray(H0))
    np.testing.assert_allclose(np.asarray(hess), np.asarray(want), rtol=1e-10, atol=1e-12)


def test_vmap_of_grad_matches_a_python_loop():
    Ws = enp.asarray(np.stack([W0, W0 * 0.5, -W0]))
    g = ember.jit(ember.vmap(ember.grad(rnn), in_axes=(0, None)))(Ws, enp.asarray(H0))
    for i in range(3):
        np.testing.assert_allclose(np.asarray(g[i]), np.asarray(ember.grad(rnn)(Ws[i], enp.asarray(H0))),
                                   rtol=1e-12, atol=1e-12)
