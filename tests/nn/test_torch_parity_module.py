"""PyTorch parity of Module traversal, state_dict and nn.utils (expected values were
computed with torch 2.x and are written as literals)."""
import numpy as np
import pytest

import ember.numpy as enp
from ember import nn
from ember.nn import utils


class _Shared(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)
        self.b = self.a                      # one submodule under two names
        self.c = nn.Linear(2, 1)
        self.register_buffer("z", enp.zeros(1))
        self.d = nn.Linear(2, 1)
        self.d.weight = self.c.weight        # one array in two slots


def test_state_dict_lists_a_shared_submodule_under_every_name():
    m = _Shared()
    # torch: list(t.state_dict())
    assert list(m.state_dict()) == ["z", "a.weight", "a.bias", "b.weight", "b.bias",
                                    "c.weight", "c.bias", "d.weight", "d.bias"]
    assert m.state_dict()["b.weight"] is m.a.weight


def test_load_state_dict_accepts_the_shared_layout():
    src, dst = _Shared(), _Shared()
    sd = {k: np.asarray(v) + 1.0 for k, v in src.state_dict().items()}
    res = dst.load_state_dict(sd)
    assert res.missing_keys == [] and res.unexpected_keys == []
    np.testing.assert_allclose(np.asarray(dst.b.weight), np.asarray(src.a.weight) + 1.0, rtol=1e-6)
    assert dst.a is dst.b
    # strict loading wants both names, as torch does
    del sd["b.bias"]
    with pytest.raises(RuntimeError, match="b.bias"):
        _Shared().load_state_dict(sd)


def test_traversal_order_and_dedup_match_torch():
    m = _Shared()
    # torch: named_modules / named_children dedup modules
    assert [n for n, _ in m.named_modules()] == ["", "a", "c", "d"]
    assert [n for n, _ in m.named_children()] == ["a", "c", "d"]
    assert [n for n, _ in m.named_modules(remove_duplicate=False)] == ["", "a", "b", "c", "d"]
    # torch named_parameters() (remove_duplicate=True) drops the tied d.weight
    assert [n for n, _ in m.named_parameters(remove_duplicate=True)] == [
        "a.weight", "a.bias", "c.weight", "c.bias", "d.bias"]
    # ember's default keeps every slot (see the docstring): a shared module is still once
    assert [n for n, _ in m.named_parameters()] == [
        "a.weight", "a.bias", "c.weight", "c.bias", "d.weight", "d.bias"]
    assert [n for n, _ in m.named_buffers()] == ["z"]


def test_buffers_dedup_by_identity_when_asked():
    m = nn.Module()
    t = enp.zeros(2, dtype="int32")
    m.register_buffer("x", t)
    m.register_buffer("y", t)
    assert [n for n, _ in m.named_buffers()] == ["x", "y"]
    assert [n for n, _ in m.named_buffers(remove_duplicate=True)] == ["x"]
