"""Regressions from a differential audit of control flow and transforms against JAX's
semantics (written without JAX: closed forms and Python loops)."""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax

H16 = np.ones(2, np.float16)


# --- cond: a numeric predicate means `pred != 0` --------------------------------------

def _inc_or_dec(p, x):
    return lax.cond(p, lambda v: v + 1.0, lambda v: v - 1.0, x)


@pytest.mark.parametrize("p, want", [(np.int32(-1), 4.0), (np.int32(2), 4.0), (np.int32(0), 2.0),
                                     (-2, 4.0), (0.5, 4.0), (np.float32(0.0), 2.0), (True, 4.0)])
def test_cond_numeric_predicate_is_nonzero(p, want):
    x = np.float64(3.0)
    assert float(_inc_or_dec(p, x)) == want
    assert float(ember.jit(_inc_or_dec)(p, x)) == want


def test_cond_numeric_predicate_batched():
    got = ember.vmap(_inc_or_dec)(np.array([2, 0, -1], np.int32), np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(got, [2.0, 1.0, 4.0])


def test_switch_float_index_is_an_error():
    with pytest.raises(TypeError, match="index must be an integer"):
        lax.switch(1.7, [lambda: 1.0, lambda: 2.0])
    assert float(lax.switch(np.int32(7), [lambda: 1.0, lambda: 2.0])) == 2.0  # clamped


# --- weakly typed (Python scalar) loop carries and operands -----------------------------

def test_weak_scan_carry_takes_the_body_dtype():
    # 0.0 is weak: c + float16 is float16, so the carry is float16 (init promoted)
    c, ys = lax.scan(lambda c, x: (c + x, c), 0.0, H16)
    assert c.dtype == np.float16 and ys.dtype == np.float16
    assert float(c) == 2.0 and ys.tolist() == [0.0, 1.0]
    c2, _ = lax.scan(lambda c, x: (c + x, c), 0.0, np.ones(2, np.float64))
    assert c2.dtype == np.float64


def test_weak_int_fori_carry_becomes_float():
    out = lax.fori_loop(0, 3, lambda i, v: v + 0.5, 0)
    assert out.dtype == np.float32 and float(out) == 1.5
    n = np.int32(3)
    out2 = ember.jit(lambda n: lax.fori_loop(0, n, lambda i, v: v + 0.5, 0))(n)   # while_loop path
    assert out2.dtype == np.float32 and float(out2) == 1.5


@pytest.mark.parametrize("loop", [
    lambda: lax.fori_loop(0, 3, lambda i, v: v + v, 1.0),
    lambda: ember.jit(lambda n: lax.fori_loop(0, n, lambda i, v: v + v, 1.0))(np.int32(3)),
    lambda: lax.scan(lambda c, _: (c + c, None), 1.0, None, length=3)[0],
    lambda: lax.while_loop(lambda c: c < 8.0, lambda c: c + c, 1.0),
])
def test_weak_carry_stays_weak(loop):
    out = loop()
    assert out.weak_type and float(out) == 8.0
    assert (out + H16).dtype == np.float16       # promotes like the Python float it was


def test_strong_body_output_makes_weak_carry_strong():
    out = lax.fori_loop(0, 2, lambda i, v: v + np.float32(1.0), 0.0)
    assert not out.weak_type and (out + H16).dtype == np.float32


def test_cond_and_checkpoint_keep_weak_python_operands():
    assert (lax.cond(True, lambda v: v, lambda v: v, 1.0) + H16).dtype == np.float16
    assert (lax.switch(0, [lambda v: v + v], 1.0) + H16).dtype == np.float16
    assert (ember.checkpoint(lambda v: v)(1.0) + H16).dtype == np.float16


def test_grad_through_weak_init_loops():
    # v_{k+1} = v_k (1 + w), v_0 = 1: v_3 = (1 + w)^3
    w = np.float64(0.5)
    f = lambda w: lax.fori_loop(0, 3, lambda i, v: v + v * w, 1.0)
    assert f(w).dtype == np.float64
    np.testing.assert_allclose(ember.grad(f)(w), 3 * 1.5 ** 2, rtol=1e-12)
    np.testing.assert_allclose(ember.hessian(f)(w), 6 * 1.5, rtol=1e-12)
    ws = np.array([0.5, -0.25])
    np.testing.assert_allclose(ember.vmap(ember.grad(f))(ws), 3 * (1 + ws) ** 2, rtol=1e-12)
    g = lambda lim: lax.while_loop(lambda c: c < lim, lambda c: c + c, 1.0)
    np.testing.assert_array_equal(ember.vmap(g)(np.array([3.0, 10.0, 0.5])), [4.0, 16.0, 1.0])


# --- lax.map(batch_size=) -------------------------------------------------------------

@pytest.mark.parametrize("bs", [1, 2, 3, 5, 7])
def test_map_batch_size_matches_loop(bs):
    x = np.arange(10.0).reshape(5, 2)
    f = lambda v: {"s": enp.sum(enp.sin(v)), "d": (v * 2.0, None)}
    got = lax.map(f, x, batch_size=bs)
    np.testing.assert_allclose(got["s"], [np.sin(r).sum() for r in x], rtol=1e-12)
    np.testing.assert_array_equal(got["d"][0], x * 2.0)
    assert got["d"][1] is None
    g = ember.grad(lambda x: enp.sum(lax.map(lambda v: enp.sin(v) ** 2, x, batch_size=bs)))(x)
    np.testing.assert_allclose(g, np.sin(2 * x), rtol=1e-12)


def test_map_batch_size_edge_cases():
    assert lax.map(lambda v: v * 2.0, np.zeros((0, 3)), batch_size=2).shape == (0, 3)
    np.testing.assert_array_equal(
        ember.jit(lambda x: lax.map(lambda v: v * 2.0, x, batch_size=3))(np.arange(7.0)),
        np.arange(7.0) * 2)
    with pytest.raises(ValueError, match="batch_size"):
        lax.map(lambda v: v, np.ones(3), batch_size=0)


# --- JAX keyword arguments that change nothing, and negative static_argnums ------------

def test_checkpoint_negative_static_argnums_and_prevent_cse():
    def f(x, n):
        for _ in range(n):     # Python control flow on the static argument
            x = enp.sin(x)
        return x
    x = np.float64(0.5)
    want = np.cos(np.sin(np.sin(x))) * np.cos(np.sin(x)) * np.cos(x)
    for kw in ({"static_argnums": (1,)}, {"static_argnums": (-1,)}, {"static_argnums": -1, "prevent_cse": False}):
        np.testing.assert_allclose(ember.grad(lambda x: ember.checkpoint(f, **kw)(x, 3))(x), want, rtol=1e-12)
    with pytest.raises(ValueError, match="out of range"):
        ember.checkpoint(f, static_argnums=2)(x, 3)


def test_vmap_spmd_axis_name_and_jit_keep_unused_are_accepted():
    np.testing.assert_array_equal(ember.vmap(lambda v: v * 2.0, spmd_axis_name="d")(np.arange(3.0)),
                                  [0.0, 2.0, 4.0])
    assert float(ember.jit(lambda x, y: x * 2.0, keep_unused=True)(np.float64(2.0), np.float64(1.0))) == 4.0
