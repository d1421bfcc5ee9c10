"""lax.reduce / lax.reduce_window with user computations: monoids become the
reduce primitives, anything else runs the generic tree / window fold; checked
against numpy loops, with derivatives against finite differences, under jit and vmap."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember import lax
from ember.testing import check_grads

RNG = np.random.default_rng(1)


def _eqn_names(f, *args):
    return [e.prim.name for e in ember.make_graph(f)(*args).equations]


def test_monoids_become_reduce_primitives():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    assert "reduce_sum" in _eqn_names(lambda v: lax.reduce(v, 0.0, lax.add, (1,)), x)
    assert "reduce_max" in _eqn_names(lambda v: lax.reduce(v, -np.inf, lambda a, b: lax.max(a, b), (0,)), x)
    np.testing.assert_allclose(lax.reduce(x, 0.0, lax.add, (1,)), x.sum(1), rtol=1e-6)
    np.testing.assert_array_equal(lax.reduce(x, np.inf, lax.min, (0, 1)), x.min())
    i = RNG.integers(-50, 50, (4, 5)).astype(np.int32)
    np.testing.assert_array_equal(lax.reduce(i, -1, lax.bitwise_and, (0,)), np.bitwise_and.reduce(i, 0))
    np.testing.assert_array_equal(lax.reduce(i, 0, lax.bitwise_xor, (1,)), np.bitwise_xor.reduce(i, 1))
    # a non-identity initial value is folded in once, as XLA on CPU does
    np.testing.assert_allclose(lax.reduce(x, 10.0, lax.add, (1,)), x.sum(1) + 10, rtol=1e-6)
    np.testing.assert_array_equal(lax.reduce(x, 0.5, lax.max, (1,)), np.maximum(x.max(1), 0.5))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=3), st.data())
def test_generic_computation_matches_a_sequential_fold(shape, data):
    x = RNG.standard_normal(shape)
    dims = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))))

    def comp(a, b):  # associative, not a single primitive
        return a + b + a * b

    got = lax.reduce(x, 0.0, comp, dims)
    rest = tuple(s for d, s in enumerate(shape) if d not in dims)
    n = int(np.prod([shape[d] for d in dims]))
    moved = np.moveaxis(x, dims, range(len(dims))).reshape((n,) + rest)
    want = np.zeros(moved.shape[1:])
    for row in moved:
        want = comp(want, row)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_argmax_as_a_pair_reduction_with_jit_and_vmap():
    x = RNG.standard_normal((6, 7)).astype(np.float32)
    x[2, 3] = x[2, 5] = 9.0  # a tie: the lower index wins

    def pick(a, b):
        take_b = (b[0] > a[0]) | ((b[0] == a[0]) & (b[1] < a[1]))
        return lax.select(take_b, b[0], a[0]), lax.select(take_b, b[1], a[1])

    def argmax(v):
        idx = lax.broadcasted_iota(np.int32, v.shape, v.ndim - 1)
        return lax.reduce((v, idx), (np.float32(-np.inf), np.int32(0)), pick, (v.ndim - 1,))[1]

    np.testing.assert_array_equal(argmax(x), np.argmax(x, 1))
    np.testing.assert_array_equal(ember.jit(argmax)(x), np.argmax(x, 1))
    np.testing.assert_array_equal(ember.vmap(argmax, in_axes=1)(x), np.argmax(x, 0))


def test_generic_reduce_gradients():
    x = RNG.standard_normal((3, 5))
    check_grads(lambda v: lax.reduce(v, 1.0, lambda a, b: a * b + 0.1 * a, (1,)), (x,), order=2)


def test_empty_reduction_gives_the_initial_value():
    np.testing.assert_array_equal(lax.reduce(np.zeros((0, 3)), 2.0, lambda a, b: a + b, (0,)),
                                  [2.0, 2.0, 2.0])


def _window_ref(x, init, comp, wd, ws, pads, bd, rd):
    """XLA's reduce_window by loops over the padded, base-dilated operand."""
    nd = x.ndim
    dil_shape = [(n - 1) * b + 1 if n else 0 for n, b in zip(x.shape, bd)]
    base = np.full(dil_shape, init, x.dtype)
    base[tuple(slice(None, None, b) for b in bd)] = x
    padded = np.full([n + lo + hi for n, (lo, hi) in zip(dil_shape, pads)], init, x.dtype)
    padded[tuple(slice(lo, lo + n) for n, (lo, _) in zip(dil_shape, pads))] = base
    eff = [(w - 1) * r + 1 for w, r in zip(wd, rd)]
    out_shape = [max((p - e) // s + 1, 0) for p, e, s in zip(padded.shape, eff, ws)]
    out = np.full(out_shape, init, x.dtype)
    for o in np.ndindex(*out_shape):
        acc = init
        for w in np.ndindex(*wd):
            acc = comp(acc, padded[tuple(o[d] * ws[d] + w[d] * rd[d] for d in range(nd))])
        out[o] = acc
    return out


@settings(max_examples=20, deadline=None)
@given(st.data())
def test_reduce_window_generic_and_monoid_match_loops(data):
    nd = data.draw(st.integers(1, 2))
    shape = tuple(data.draw(st.integers(1, 5)) for _ in range(nd))
    wd = tuple(data.draw(st.integers(1, 3)) for _ in range(nd))
    ws = tuple(data.draw(st.integers(1, 2)) for _ in range(nd))
    bd = tuple(data.draw(st.integers(1, 2)) for _ in range(nd))
    rd = tuple(data.draw(st.integers(1, 2)) for _ in range(nd))
    pads = tuple((data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))) for _ in range(nd))
    x = RNG.standard_normal(shape)
    cases = [(-np.inf, lax.max, np.maximum), (0.0, lax.add, np.add),
             (0.25, lambda a, b: lax.max(a, b), np.maximum),       # non-identity init
             (0.0, lambda a, b: a + 2 * b, lambda a, b: a + 2 * b)]  # not a monoid
    for init, comp, ref in cases:
        got = lax.reduce_window(x, init, comp, wd, ws, pads, bd, rd)
        np.testing.assert_allclose(got, _window_ref(x, init, ref, wd, ws, pads, bd, rd), rtol=1e-12)


def test_reduce_window_gradient_and_errors():
    x = RNG.standard_normal((4, 5))
    check_grads(lambda v: lax.reduce_window(v, 0.0, lambda a, b: a + b * b, (2, 2), (1, 2), "SAME"),
                (x,), order=2)
    with pytest.raises(TypeError, match="must return scalars of dtypes"):
        lax.reduce_window(x, 0.0, lambda a, b: (a + b).astype(np.float32), (2, 2))
    with pytest.raises(TypeError, match="init_values must have the structure of operands"):
        lax.reduce((x, x), 0.0, lambda a, b: a, (0,))
