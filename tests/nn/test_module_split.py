"""nn/module.py's helpers live in their own modules (dotted names, RNG streams,
state snapshots, functional_call); the names users import keep working from
`ember.nn` and `ember.nn.module`, and behave as specified."""
import numpy as np
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember import nn, random
from ember.nn import _names, _rng_streams, _snapshots, module, stateless


def test_names_are_importable_where_they_were():
    assert nn.functional_call is module.functional_call is stateless.functional_call
    assert nn.flatten_names is module.flatten_names is _names.flatten_names
    assert nn.unflatten_names is module.unflatten_names is _names.unflatten_names
    for name in ("manual_seed", "next_rng_key", "rng_scope"):
        assert getattr(nn, name) is getattr(module, name) is getattr(_rng_streams, name)
    # the private helpers the layers and train.py import from nn.module
    assert module._global_next_key is _rng_streams._global_next_key
    assert module._in_transform is _rng_streams._in_transform
    assert module._state_items is _snapshots._state_items
    assert module._swapped is stateless._swapped


keys = st.text("abc", min_size=1, max_size=2)
trees = st.recursive(st.integers(0, 9), lambda sub: st.dictionaries(keys, sub, min_size=1, max_size=3),
                     max_leaves=8)


@settings(max_examples=25, deadline=None)
@given(tree=st.dictionaries(keys, trees, min_size=1, max_size=3))
def test_dotted_names_round_trip(tree):
    flat = nn.flatten_names(tree)
    assert all(not isinstance(v, dict) for v in flat.values())
    assert nn.unflatten_names(flat) == tree
    # each dotted name reaches its leaf
    for name, v in flat.items():
        node = tree
        for part in name.split("."):
            node = node[part]
        assert node == v


def test_rng_stream_keys_are_fold_ins_of_the_scope_key():
    key = random.key(7)
    with nn.rng_scope(key):
        a, b = nn.next_rng_key(), nn.next_rng_key()
    np.testing.assert_array_equal(np.asarray(a), np.asarray(random.fold_in(key, 0)))
    np.testing.assert_array_equal(np.asarray(b), np.asarray(random.fold_in(key, 1)))


def test_functional_call_swaps_and_restores():
    m = nn.Linear(3, 2)
    w0 = np.asarray(m.weight)
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = np.ones((4, 3), np.float32)
    out, bufs = nn.functional_call(m, {"weight": enp.asarray(w)}, enp.asarray(x))
    np.testing.assert_allclose(np.asarray(out), x @ w.T + np.asarray(m.bias), rtol=1e-6)
    assert bufs == {} and np.array_equal(np.asarray(m.weight), w0)
    # under grad: d/dw sum(x @ w.T) = column sums of x, per output row
    g = ember.grad(lambda p: nn.functional_call(m, p, enp.asarray(x))[0].sum())({"weight": enp.asarray(w)})
    np.testing.assert_allclose(np.asarray(g["weight"]), np.full((2, 3), 4.0))
    assert [n for n, _ in _snapshots._state_items(m)] == ["weight", "bias"]
