"""A PyTorch Tensor habit on an ember array raises an AttributeError naming the ember spelling;
unknown attributes stay plain AttributeErrors (hasattr/getattr defaults keep working)."""
import pickle

import pytest

import ember
import ember.numpy as enp


@pytest.mark.parametrize("name, hint", [
    ("numpy", "np.asarray(x)"), ("detach", "stop_gradient"), ("view", "x.reshape"),
    ("backward", "ember.grad(loss_fn)"), ("requires_grad", "ember.grad"), ("add_", "immutable"),
    ("float", "x.astype('float32')"), ("long", "x.astype('int64')"), ("cpu", "device_put"),
    ("unsqueeze", "expand_dims"), ("permute", "x.transpose"), ("masked_fill", "where"),
    ("dim", "x.ndim"), ("numel", "x.size"),
])
def test_torch_habit_names_the_ember_spelling(name, hint):
    x = enp.ones(3)
    with pytest.raises(AttributeError, match="PyTorch Tensor method") as e:
        getattr(x, name)
    assert hint in str(e.value)


def test_tracers_give_the_same_hint():
    seen = []

    def f(t):
        try:
            t.detach()
        except AttributeError as e:
            seen.append(str(e))
        return t * 2.0

    ember.jit(f)(enp.ones(2))
    ember.grad(lambda t: f(t).sum())(enp.ones(2))
    assert len(seen) == 2 and all("stop_gradient" in s for s in seen)


def test_unknown_attributes_are_plain_attribute_errors():
    x = enp.ones(3)
    assert not hasattr(x, "no_such_thing") and getattr(x, "numpy", 7) == 7
    with pytest.raises(AttributeError, match=r"^'Array' object has no attribute 'no_such_thing'$"):
        x.no_such_thing
    assert pickle.loads(pickle.dumps(x)).tolist() == [1.0, 1.0, 1.0]
