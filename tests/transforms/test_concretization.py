"""Concretization errors name the jitted function's argument the value came from."""
import numpy as np
import pytest

import ember
import ember.numpy as enp


def _msg(fn, *args, **kwargs):
    with pytest.raises(ember.ConcretizationError) as e:
        fn(*args, **kwargs)
    msg = str(e.value)
    assert "test_concretization.py" in msg
    assert "ember.cond" in msg and "static_argnums" in msg and "static_argnames" in msg
    return msg


def test_bool_names_the_pytree_leaf_and_only_the_dependencies():
    def f(x, threshold, params):
        if (params["w"] * threshold).sum() > 0:
            return x
        return -x
    msg = _msg(ember.jit(f), 1.0, 2.0, {"w": np.ones(2), "b": 1.0})
    assert "`threshold` of jit(f)" in msg and "`params['w']` of jit(f)" in msg
    assert "`x`" not in msg and "params['b']" not in msg


@pytest.mark.parametrize("convert", [float, int, bool, np.asarray, lambda v: list(range(v)),
                                     lambda v: enp.zeros(v)])
def test_every_conversion_names_the_argument(convert):
    msg = _msg(ember.jit(lambda x, n: convert(n) and x), 1.0, 3)
    assert "depends on the value of the argument `n`" in msg


def test_keyword_argument_and_static_arguments():
    f = ember.jit(lambda x, mode, *, scale: x * float(scale), static_argnums=1)
    msg = _msg(f, 1.0, "a", scale=2.0)
    assert "`scale`" in msg


def test_through_grad_and_vmap_inside_jit():
    msg = _msg(ember.jit(ember.grad(lambda x, y: x * float(y))), 1.0, 2.0)
    assert "`y`" in msg
    msg = _msg(ember.jit(lambda x, y: ember.vmap(lambda a: a * float(y.sum()))(x)),
               np.ones(3), np.ones(2))
    assert "`y`" in msg


def test_through_a_loop_body_capturing_the_argument():
    f = ember.jit(lambda x, y: ember.lax.fori_loop(0, 3, lambda i, c: c + float(y), x))
    assert "`y` of jit(<lambda>)" in _msg(f, 1.0, 2.0)


def test_make_graph_names_the_argument():
    assert "`b` of make_graph" in _msg(ember.make_graph(lambda a, b: a if b > 0 else -a), 1.0, 2.0)


def test_numpy_data_dependent_shape_names_the_argument():
    with pytest.raises(ember.ConcretizationError, match="argument `mask`"):
        ember.jit(lambda x, mask: enp.nonzero(mask))(1.0, np.ones(3, bool))


def test_long_graph_walk_is_iterative():
    def f(x, y):
        for _ in range(3000):
            y = y * 1.0001
        return x if y > 0 else -x
    assert "`y`" in _msg(ember.jit(f), 1.0, 2.0)
