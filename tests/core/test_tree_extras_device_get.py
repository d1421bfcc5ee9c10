"""tree.reduce / flatten_with_path / transpose (JAX semantics) and ember.device_get."""
import collections
import functools
import operator

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import tree


def test_reduce_is_functools_reduce_over_leaves():
    t = {"b": [1, 2], "a": (3, None, 4)}
    assert tree.reduce(operator.add, t) == functools.reduce(operator.add, tree.leaves(t))
    assert tree.reduce(lambda acc, x: acc + [x], t, []) == tree.leaves(t)
    assert tree.reduce(max, [], -1) == -1
    with pytest.raises(TypeError, match="needs an initializer"):
        tree.reduce(operator.add, {"a": None})
    total = tree.reduce(lambda a, b: a + b.sum(), {"w": enp.ones(3), "b": enp.ones(2)}, 0.0)
    assert float(total) == 5.0
    # is_leaf stops the descent, as in jax.tree.reduce
    assert tree.reduce(lambda a, b: a + len(b), [[1, 2], [3]], 0,
                       is_leaf=lambda x: isinstance(x, list) and not isinstance(x[0], list)) == 3


def test_flatten_with_path_matches_leaves_with_path_and_unflattens():
    Point = collections.namedtuple("Point", "x y")
    t = {"p": Point(1, [2, 3]), "q": None, "r": 4}
    pairs, td = tree.flatten_with_path(t)
    assert pairs == tree.leaves_with_path(t)
    assert pairs == [(("p", 0), 1), (("p", 1, 0), 2), (("p", 1, 1), 3), (("r",), 4)]
    assert tree.unflatten(td, [v for _, v in pairs]) == t
    assert td == tree.structure(t)


def test_transpose_list_of_dicts_and_back():
    rows = [{"x": 1, "y": (2, 3)}, {"x": 4, "y": (5, 6)}, {"x": 7, "y": (8, 9)}]
    outer, inner = tree.structure([0, 0, 0]), tree.structure({"x": 0, "y": (0, 0)})
    cols = tree.transpose(outer, inner, rows)
    assert cols == {"x": [1, 4, 7], "y": ([2, 5, 8], [3, 6, 9])}
    assert tree.transpose(outer, None, rows) == cols
    assert tree.transpose(inner, outer, cols) == rows
    with pytest.raises(TypeError, match="tree.transpose: expected"):
        tree.transpose(outer, inner, rows[:2])


def test_device_get_returns_writable_numpy_and_passes_other_leaves():
    x = enp.arange(4.0)
    out = ember.device_get({"x": x, "n": 3, "s": "tag", "nested": [enp.ones((2, 2), "int8")]})
    assert isinstance(out["x"], np.ndarray) and out["x"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert out["x"].dtype == np.float32 and out["nested"][0].dtype == np.int8
    assert out["n"] == 3 and out["s"] == "tag"
    out["x"][0] = 9.0  # a copy: the ember array stays as it was
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert ember.device_get(enp.ones(2)).tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="traced value"):
        ember.jit(lambda v: ember.device_get(v))(x)
