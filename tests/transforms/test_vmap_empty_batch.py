"""vmap over a batch of zero examples: every primitive gives its per-example type
with a leading 0 (grouped convolutions and gathers from a batched operand divided
by, or indexed into, the empty axis), per-example errors are still raised, and
transforms compose."""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax

W = np.ones((4, 2, 3, 3), np.float32)


def _grouped_conv(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=2)


@pytest.mark.parametrize("mapped", ["lhs", "rhs", "both"])
def test_grouped_conv_over_an_empty_batch(mapped):
    x = np.ones((1, 4, 8, 8), np.float32)
    xs, ws = np.zeros((0,) + x.shape, np.float32), np.zeros((0,) + W.shape, np.float32)
    axes = {"lhs": (0, None), "rhs": (None, 0), "both": (0, 0)}[mapped]
    args = (xs if axes[0] == 0 else x, ws if axes[1] == 0 else W)
    for f in (ember.vmap(_grouped_conv, in_axes=axes), ember.jit(ember.vmap(_grouped_conv, in_axes=axes))):
        out = f(*args)
        assert out.shape == (0, 1, 4, 8, 8) and out.dtype == np.float32
    g = ember.vmap(ember.grad(lambda x, w: _grouped_conv(x, w).sum(), argnums=(0, 1)), in_axes=axes)(*args)
    # per-example gradients, of the unmapped argument too (out_axes=0)
    assert g[0].shape == (0,) + x.shape and g[1].shape == (0,) + W.shape


def test_gathers_from_a_batched_operand_over_an_empty_batch():
    v = np.zeros((0, 5))
    assert ember.vmap(lambda r: r[np.array([0, 2])])(v).shape == (0, 2)
    assert ember.vmap(lambda r, i: r[i])(v, np.zeros((0,), np.int32)).shape == (0,)
    assert ember.vmap(lambda r: enp.take_along_axis(r, np.array([1, 0]), 0))(v).shape == (0, 2)
    assert ember.vmap(lambda r: r.at[np.array([0, 0])].multiply(2.0))(v).shape == (0, 5)
    assert ember.jit(ember.vmap(lambda r: r[1:3] * 2))(v).shape == (0, 2)


def test_empty_batch_through_control_flow_linalg_and_reverse_mode():
    c, ys = ember.vmap(lambda r: lax.scan(lambda c, x: (c + x, c), np.float64(0), r))(np.zeros((0, 5)))
    assert c.shape == (0,) and ys.shape == (0, 5)
    assert ember.vmap(enp.linalg.det)(np.zeros((0, 3, 3))).shape == (0,)
    g = ember.grad(lambda v: ember.vmap(lambda r: (r * r).sum())(v).sum())(np.zeros((0, 5)))
    assert g.shape == (0, 5)
    # the per-example result of a size-0 batch keeps its dtype (and weak type rules)
    assert ember.vmap(lambda r: r.astype(np.int8) + 1)(np.zeros((0, 3))).dtype == np.int8


def test_empty_batch_still_checks_each_example():
    with pytest.raises(TypeError, match="not aligned"):
        ember.vmap(lambda r: r @ np.ones((3, 2)))(np.zeros((0, 4)))
    with pytest.raises(TypeError, match="conv"):
        ember.vmap(lambda x: _grouped_conv(x, np.ones((4, 3, 3, 3), np.float32)))(np.zeros((0, 1, 4, 8, 8), np.float32))
