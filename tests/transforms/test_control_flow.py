"""cond/switch, scan, while_loop and fori_loop under every transform."""
import numpy as np
import pytest

import ember
from ember import lax
from ember.testing import check_grads


def _branchy(x):
    return ember.cond(lax.gt(x, np.float64(0.0)), lambda v: lax.mul(lax.sin(v), v),
                      lambda v: lax.mul(v, np.float64(3.0)), x)


@pytest.mark.parametrize("x", [0.7, -0.4])
def test_cond_grads_and_jit(x):
    check_grads(_branchy, (np.float64(x),), order=2)
    np.testing.assert_allclose(ember.jit(ember.grad(_branchy))(np.float64(x)),
                               ember.grad(_branchy)(np.float64(x)))


def test_cond_batched_predicate_is_a_select():
    xs = np.array([0.7, -0.4, 2.0])
    got = ember.vmap(_branchy)(xs)
    expect = [float(_branchy(np.float64(v))) for v in xs]
    np.testing.assert_allclose(got, expect)
    g = ember.vmap(ember.grad(_branchy))(xs)
    np.testing.assert_allclose(g, [float(ember.grad(_branchy)(np.float64(v))) for v in xs])


def test_switch_clamps_index():
    br = [lambda v: v, lambda v: lax.mul(v, np.float64(2.0)), lambda v: lax.mul(v, np.float64(3.0))]
    assert float(ember.switch(7, br, np.float64(1.0))) == 3.0
    assert float(ember.switch(-2, br, np.float64(1.0))) == 1.0


def test_cond_branch_mismatch_error():
    with pytest.raises(TypeError, match="same structure"):
        ember.cond(True, lambda v: v, lambda v: (v, v), np.float64(1.0))


XS = np.array([0.5, 1.0, 1.5, -0.3])


def _scan_f(w):
    c, ys = ember.scan(lambda c, x: (lax.sin(lax.add(lax.mul(c, w), x)), lax.mul(c, x)), np.float64(0.3), XS)
    return lax.add(c, lax.reduce_sum(ys, (0,)))


def _unrolled(w):
    c = np.float64(0.3)
    total = 0.0
    for x in XS:
        total = lax.add(total, lax.mul(c, x))
        c = lax.sin(lax.add(lax.mul(c, w), x))
    return lax.add(c, total)


def test_scan_matches_unrolled_loop_and_grads():
    w = np.float64(0.7)
    np.testing.assert_allclose(_scan_f(w), _unrolled(w), rtol=1e-12)
    np.testing.assert_allclose(ember.grad(_scan_f)(w), ember.grad(_unrolled)(w), rtol=1e-12)
    np.testing.assert_allclose(ember.grad(ember.grad(_scan_f))(w), ember.grad(ember.grad(_unrolled))(w), rtol=1e-10)
    np.testing.assert_allclose(ember.jit(ember.grad(_scan_f))(w), ember.grad(_unrolled)(w), rtol=1e-12)
    check_grads(_scan_f, (w,), order=2)


def test_scan_vmap_matches_loop():
    ws = np.array([0.7, -0.2, 1.3])
    np.testing.assert_allclose(ember.vmap(_scan_f)(ws), [float(_scan_f(w)) for w in ws], rtol=1e-12)
    np.testing.assert_allclose(ember.vmap(ember.grad(_scan_f))(ws),
                               [float(ember.grad(_unrolled)(w)) for w in ws], rtol=1e-12)


def test_scan_reverse():
    c, ys = ember.scan(lambda c, x: (lax.add(c, x), c), np.float64(0.0), np.array([1.0, 2.0, 3.0]), reverse=True)
    assert float(c) == 6.0
    np.testing.assert_allclose(ys, [5.0, 3.0, 0.0])


def test_while_loop_jvp_vmap_and_reverse_mode_error():
    def f(x):
        return ember.while_loop(lambda c: lax.lt(c[0], np.int32(3)),
                                lambda c: (lax.add(c[0], np.int32(1)), lax.mul(lax.sin(c[1]), x)),
                                (np.int32(0), x))[1]
    check_grads(f, (np.float64(0.5),), order=2, modes=("fwd",))
    with pytest.raises(TypeError, match="scan"):
        ember.grad(f)(np.float64(0.5))
    h = lambda x: ember.while_loop(lambda c: lax.lt(c, np.float64(10.0)), lambda c: lax.mul(c, np.float64(2.0)), x)
    np.testing.assert_allclose(ember.vmap(h)(np.array([1.0, 3.0, 20.0])), [16.0, 12.0, 20.0])


def test_fori_loop_static_bounds_is_reverse_differentiable():
    f = lambda x: ember.fori_loop(0, 3, lambda i, v: lax.mul(lax.sin(v), x), x)
    check_grads(f, (np.float64(0.5),), order=2)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 13])
@pytest.mark.parametrize("reverse", [False, True])
def test_associative_scan_matches_cumsum(n, reverse):
    x = np.random.default_rng(n).standard_normal((n, 2))
    got = lax.associative_scan(lambda a, b: lax.add(a, b), x, reverse=reverse)
    expect = np.cumsum(x[::-1], 0)[::-1] if reverse else np.cumsum(x, 0)
    np.testing.assert_allclose(got, expect, rtol=1e-12)


def test_associative_scan_transforms():
    from ember.testing import check_vmap
    x = np.random.default_rng(0).random(7) + 0.5
    check_grads(lambda v: lax.associative_scan(lambda a, b: lax.mul(a, b), v), (x,), order=2)
    check_vmap(lambda v: lax.associative_scan(lambda a, b: lax.max(a, b), v), (np.random.rand(3, 5),))
