"""ravel_pytree: round trips, JAX's promotion of mixed dtypes, differentiable and batchable
unravel, and errors for vectors of the wrong shape or dtype."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember.flatten_util import ravel_pytree
from ember.testing import check_grads, check_vmap

DTYPES = ["bool", "int8", "int32", "uint8", "float16", "bfloat16", "float32", "float64"]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(DTYPES),
                          st.lists(st.integers(0, 3), max_size=3)), max_size=4))
def test_round_trip_and_promotion(spec):
    rng = np.random.default_rng(len(spec))
    tree = {f"k{i}": enp.asarray((rng.normal(size=tuple(s)) * 3).astype(np.float64)).astype(d)
            for i, (d, s) in enumerate(spec)}
    flat, unravel = ravel_pytree(tree)
    leaves = ember.tree.leaves(tree)
    want = ember.dtypes.result_type(*leaves) if leaves else ember.dtypes.float32
    assert flat.dtype == want and flat.ndim == 1
    assert flat.shape[0] == sum(int(np.prod(x.shape)) for x in leaves)
    # numpy's concatenation of the raveled, promoted leaves (in the tree's key order)
    ref = np.concatenate([np.asarray(x).astype(want).ravel() for x in leaves]) if leaves \
        else np.zeros(0, want)
    np.testing.assert_array_equal(np.asarray(flat), ref)
    back = unravel(flat)
    assert ember.tree.structure(back) == ember.tree.structure(tree)
    for k in tree:
        assert back[k].dtype == tree[k].dtype and back[k].shape == tree[k].shape
        np.testing.assert_array_equal(np.asarray(back[k]), np.asarray(tree[k]))


def test_mixed_float_int_promotes_to_float_as_jax():
    flat, unravel = ravel_pytree((enp.ones(2, dtype="int32"), enp.ones(3, dtype="float16"), 2.0))
    assert flat.dtype == ember.dtypes.float16      # int32 + float16 + weak float
    flat, _ = ravel_pytree([enp.ones(2, dtype="int64"), enp.ones(1, dtype="float32")])
    assert flat.dtype == ember.dtypes.float32
    flat, _ = ravel_pytree([])
    assert flat.shape == (0,) and flat.dtype == ember.dtypes.float32


def test_unravel_is_differentiable_and_batchable():
    params = {"w": enp.asarray(np.arange(6.0).reshape(2, 3)), "b": enp.asarray(np.array([0.5, -1.0]))}
    flat, unravel = ravel_pytree(params)

    def loss(v):
        p = unravel(v)
        return enp.sum(enp.tanh(p["w"]) ** 2) + enp.sum(p["b"] ** 3)
    check_grads(loss, (flat,), order=2)
    g = ember.grad(loss)(flat)
    g_tree = ember.grad(lambda p: loss(ravel_pytree(p)[0]))(params)
    np.testing.assert_allclose(np.asarray(g), np.asarray(ravel_pytree(g_tree)[0]), rtol=1e-12)
    check_vmap(lambda v: unravel(v)["w"], (enp.stack([flat, 2 * flat]),))
    out = ember.jit(lambda v: unravel(v)["b"])(flat)
    assert out.tolist() == [0.5, -1.0]
    # ravel under jit and vmap too
    check_vmap(lambda w: ravel_pytree({"w": w, "c": w * 2})[0], (enp.ones((3, 2)),))


def test_unravel_errors():
    flat, unravel = ravel_pytree({"a": enp.ones(3)})
    with pytest.raises(TypeError, match=r"expected a vector float32\[3\], got float32\[4\]"):
        unravel(enp.ones(4))
    with pytest.raises(TypeError, match=r"expected a vector of dtype float32, got float64\[3\]"):
        unravel(enp.ones(3, dtype="float64"))
