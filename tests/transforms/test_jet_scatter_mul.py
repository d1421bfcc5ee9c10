"""scatter_mul's direct Taylor rule: against nested jvp (order 6), against
products of the truncated polynomials in numpy (order 10, zero updates meeting at
one position, window updates, dropped indices), under jit and vmap, and fast at
order 10 (the jvp-derived rule took 110 s there)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember import lax
from ember.transforms.jet import jet

from test_jet_rules import check, _vec


def _poly_reference(x_series, u_series, targets, K):
    """Derivative-convention series of x.at[targets].multiply(u) by multiplying,
    per position, the truncated polynomials (normalised coefficients) in numpy."""
    fac = np.array([math.factorial(k) for k in range(K + 1)], float)
    xs = np.stack(x_series) / fac.reshape(-1, *([1] * x_series[0].ndim))
    us = np.stack(u_series) / fac.reshape(-1, *([1] * u_series[0].ndim))
    out = xs.copy()
    for j, pos in enumerate(targets):
        if pos is None:
            continue
        for w in np.ndindex(*us.shape[2:]):
            cur = out[(slice(None), pos) + w]
            out[(slice(None), pos) + w] = np.convolve(cur, us[(slice(None), j) + w])[:K + 1]
    return out * fac.reshape(-1, *([1] * x_series[0].ndim))


def _jet_values(f, x_series, u_series):
    y, ys = jet(f, (x_series[0], u_series[0]), (list(x_series[1:]), list(u_series[1:])))
    return np.stack([np.asarray(y)] + [np.asarray(t) for t in ys])


def _assert_close(got, ref, rtol=1e-12):
    scale = np.maximum(1.0, np.abs(ref).reshape(ref.shape[0], -1).max(axis=1))
    err = np.abs(got - ref).reshape(ref.shape[0], -1).max(axis=1) / scale
    assert err.max() <= rtol, err


def test_against_nested_jvp_with_repeated_indices():
    idx = np.array([1, 3, 1, 1])
    check(lambda a, b: enp.asarray(a).at[idx].multiply(lax.sin(b)), [_vec(), _vec(4)], 6, 1e-12)


def test_zero_updates_meeting_at_one_position():
    K = 10
    rng = np.random.default_rng(1)
    idx = np.array([1, 3, 1, 1, 0])
    xs = [rng.normal(size=4) for _ in range(K + 1)]
    us = [rng.normal(size=5) for _ in range(K + 1)]
    us[0][[0, 2]] = 0.0          # two zero primals at position 1 ...
    us[1][0] = 0.0               # ... one of them zero to first order too
    us[0][4] = 0.0               # and a lone zero at position 0
    f = lambda x, u: enp.asarray(x).at[idx].multiply(u)
    ref = _poly_reference(xs, us, list(idx), K)
    _assert_close(_jet_values(f, xs, us), ref)
    jf = ember.jit(lambda x, u, xt, ut: jet(f, (x, u), (xt, ut)))
    y, ys = jf(xs[0], us[0], xs[1:], us[1:])
    _assert_close(np.stack([np.asarray(y)] + [np.asarray(t) for t in ys]), ref)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 6), m=st.integers(1, 4), K=st.integers(1, 7), seed=st.integers(0, 2 ** 16),
       zero_frac=st.sampled_from([0.0, 0.5]))
def test_window_updates_against_polynomial_products(n, m, K, seed, zero_frac):
    # x: (m, 3); rows scattered (window of 3 per update)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, m, size=n)
    xs = [rng.normal(size=(m, 3)) for _ in range(K + 1)]
    us = [rng.normal(size=(n, 3)) for _ in range(K + 1)]
    us[0][rng.random((n, 3)) < zero_frac] = 0.0
    f = lambda x, u: enp.asarray(x).at[idx].multiply(u)
    _assert_close(_jet_values(f, xs, us), _poly_reference(xs, us, list(idx), K))


def test_dropped_indices_end_the_rounds():
    K = 4
    rng = np.random.default_rng(3)
    idx = np.array([0, 7, 2, 2])                       # 7 is out of bounds and dropped
    xs = [rng.normal(size=3) for _ in range(K + 1)]
    us = [rng.normal(size=4) for _ in range(K + 1)]
    f = lambda x, u: enp.asarray(x).at[idx].multiply(u, mode="drop")
    ref = _poly_reference(xs, us, [0, None, 2, 2], K)
    _assert_close(_jet_values(f, xs, us), ref)


def test_under_vmap_of_directions():
    idx = np.array([0, 0, 2])
    x, u = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    f = lambda x, u: enp.asarray(x).at[idx].multiply(u)
    dirs = np.random.default_rng(0).normal(size=(5, 3))

    def first_two(d):
        _, ys = jet(f, (x, u), ([np.zeros(3), np.zeros(3)], [d, np.zeros(3)]))
        return ys[1]
    got = np.asarray(ember.vmap(first_two)(dirs))
    for i, d in enumerate(dirs):
        ref = _poly_reference([x, np.zeros(3), np.zeros(3)], [u, d, np.zeros(3)], list(idx), 2)
        np.testing.assert_allclose(got[i], ref[2], rtol=1e-12, atol=1e-12)


def test_order_ten_is_fast():
    K = 10
    rng = np.random.default_rng(0)
    xs = [rng.normal(size=8) for _ in range(K + 1)]
    us = [rng.normal(size=6) for _ in range(K + 1)]
    idx = np.array([1, 3, 1, 5, 5, 5])
    f = lambda a, b: enp.asarray(a).at[idx].multiply(lax.sin(b))
    t0 = time.perf_counter()
    _jet_values(f, xs, us)
    ember.jit(lambda x, u, xt, ut: jet(f, (x, u), (xt, ut)))(xs[0], us[0], xs[1:], us[1:])
    assert time.perf_counter() - t0 < 5.0


def test_reverse_mode_through_the_series_with_few_slots():
    idx = np.array([0, 0, 1])
    f = lambda x, u: enp.asarray(x).at[idx].multiply(u)

    def h(u):
        _, ys = jet(f, (np.ones(2), u), ([np.zeros(2)] * 2, [enp.sin(u), np.zeros(3)]))
        return ys[1].sum()
    u = np.array([0.3, -0.7, 1.1])
    ember.testing.check_grads(h, (u,), order=1, modes=("fwd", "rev"))


def test_many_slots_use_the_dynamic_rounds():
    # 40 update slots (> the static bound) with at most 3 per position
    K = 3
    rng = np.random.default_rng(5)
    idx = np.repeat(np.arange(14), 3)[:40]
    xs = [rng.normal(size=14) for _ in range(K + 1)]
    us = [rng.normal(size=40) for _ in range(K + 1)]
    f = lambda x, u: enp.asarray(x).at[idx].multiply(u)
    _assert_close(_jet_values(f, xs, us), _poly_reference(xs, us, list(idx), K))
