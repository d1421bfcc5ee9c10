"""vmap in_axes/out_axes prefixes with None leaves, against a Python loop (JAX semantics)."""
import numpy as np
import pytest

import ember

rng = np.random.default_rng(0)
X = rng.standard_normal((4, 3))
Y = rng.standard_normal((3, 4))
V = rng.standard_normal(3)


def _loop(f, in_axes, args, n=4):
    """Reference: slice every mapped leaf by hand (leaves listed with their axis)."""
    outs = [f(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)])
            for i in range(n)]
    return np.stack([np.asarray(o) for o in outs])


def test_none_argument_does_not_shift_later_axes():
    # the middle argument is None (an empty pytree): the axis 1 belongs to the third argument
    got = ember.vmap(lambda a, n, b: a + b.T, in_axes=(0, None, 1))(X, None, Y)
    np.testing.assert_allclose(np.asarray(got), X + Y.T)
    got = ember.vmap(lambda a, n, b: a + b.T, in_axes=(0, 0, 1))(X, None, Y)
    np.testing.assert_allclose(np.asarray(got), X + Y.T)


def test_none_inside_tuple_argument():
    got = ember.vmap(lambda t, b: t[0] + t[2].T + b, in_axes=((0, None, 1), 0))((X, None, Y), X)
    np.testing.assert_allclose(np.asarray(got), X + Y.T + X)


def test_dict_prefix_with_none_leaf_covers_subtree():
    d = {"p": (V, 2.0 * V), "q": X}
    got = ember.vmap(lambda d, b: d["p"][0] * d["p"][1] + d["q"] * b,
                     in_axes=({"p": None, "q": 0}, 0))(d, X)
    np.testing.assert_allclose(np.asarray(got), 2 * V * V + X * X)


def test_dict_prefix_none_leaf_over_subtree_holding_none():
    d = {"p": (V, None), "q": X}
    got = ember.vmap(lambda d, b: d["p"][0] + d["q"] + b, in_axes=({"p": None, "q": 0}, 0))(d, X)
    np.testing.assert_allclose(np.asarray(got), V + 2 * X)


def test_unmapped_dict_entry_then_mapped_one_matches_loop():
    a, b = V, rng.standard_normal((4, 3))
    got = ember.vmap(lambda d, x: d["a"] + d["b"] * x, in_axes=({"a": None, "b": 0}, 1))(
        {"a": a, "b": b}, Y)
    want = _loop(lambda bb, x: a + bb * x, (0, 1), (b, Y))
    np.testing.assert_allclose(np.asarray(got), want)


# (in_axes, (a, b, c)) with the flat axes of a, b, c; the second argument is always None
PREFIXES = [
    ((1, None, (0, -1)), (X.T, X, X.T), (1, 0, -1)),
    ((-1, None, (None, 0)), (X.T, V, X), (-1, None, 0)),
    ((0, None, None), (X, V, V), (0, None, None)),
    ((0, 0, (1, None)), (X, X.T, V), (0, 1, None)),
    ((None, None, 0), (V, X, X), (None, 0, 0)),
]


@pytest.mark.parametrize("in_axes,args,flat_axes", PREFIXES)
def test_many_prefix_shapes_vs_loop(in_axes, args, flat_axes):
    a, b, c = args
    got = ember.vmap(lambda a, none, bc: a * 2.0 + bc[0] - bc[1], in_axes=in_axes)(a, None, (b, c))
    want = _loop(lambda a, b, c: a * 2.0 + b - c, flat_axes, (a, b, c))
    np.testing.assert_allclose(np.asarray(got), want)


def test_out_axes_none_leaf_first():
    u, w = ember.vmap(lambda a, v: (v, a * 2.0), in_axes=(0, None), out_axes=(None, 0))(X, V)
    np.testing.assert_allclose(np.asarray(u), V)
    np.testing.assert_allclose(np.asarray(w), 2 * X)


def test_out_axes_with_none_output_does_not_shift():
    # JAX: the None output is an empty node; out_axes (0, None, 1) puts the third on axis 1
    a, n, b = ember.vmap(lambda a: (a, None, a), out_axes=(0, None, 1))(X)
    assert n is None
    assert np.asarray(a).shape == (4, 3) and np.asarray(b).shape == (3, 4)
    np.testing.assert_allclose(np.asarray(b), X.T)


def test_out_axes_none_output_first():
    n, a = ember.vmap(lambda a: (None, a), out_axes=(None, 0))(X)
    assert n is None
    np.testing.assert_allclose(np.asarray(a), X)


def test_out_axes_dict_prefix():
    out = ember.vmap(lambda a: {"u": a, "v": (a, a * 3.0)}, out_axes={"u": 0, "v": 1})(X)
    np.testing.assert_allclose(np.asarray(out["u"]), X)
    np.testing.assert_allclose(np.asarray(out["v"][1]), 3 * X.T)


def test_mismatched_prefix_error_names_specification():
    with pytest.raises(ValueError, match=r"in_axes specification must be a tree prefix.*key") as e:
        ember.vmap(lambda d, x: x, in_axes=({"a": 0}, 0))({"b": X}, X)
    assert "array(" not in str(e.value)  # no dump of the argument values
    with pytest.raises(ValueError, match=r"tree prefix.*list"):
        ember.vmap(lambda t, x: x, in_axes=([0, 1], 0))((X, X), X)


def test_mapped_output_with_out_axes_none_names_the_output():
    with pytest.raises(ValueError, match=r"out_axes is None: output\[1\] is batched on axis 0"):
        ember.vmap(lambda a: (a, a), out_axes=(0, None))(X)


def test_non_int_axis_is_a_type_error():
    with pytest.raises(TypeError, match=r"ints and None.*0\.5.*float"):
        ember.vmap(lambda a, b: a, in_axes=(0.5, 0))(X, X)
