"""Regression tests from the bad-input / PyTorch-habit audit of ember.nn: each mistake
either behaves as PyTorch (values verified against torch 2.13 and hard-coded here) or
raises a clear error naming the argument and the shapes."""
import numpy as np
import pytest

import ember.numpy as enp
from ember import nn
from ember.nn import functional as F


def x(*shape):
    return enp.asarray(np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 10)


def test_lstm_cell_hx_must_be_a_pair():
    cell = nn.LSTMCell(4, 5)
    with pytest.raises(TypeError, match=r"LSTMCell: hx must be a tuple \(h_0, c_0\).*\(2, 5\)"):
        cell(x(2, 4), enp.zeros((2, 5)))       # was: rows of one array taken as h and c


@pytest.mark.parametrize("cls", [nn.RNNCell, nn.LSTMCell, nn.GRUCell])
def test_cells_reject_3d_input_and_bad_hx(cls):
    cell = cls(4, 5)
    with pytest.raises(ValueError, match=r"expected input to be 1D or 2D, got 3D \(shape \(1, 2, 4\)\)"):
        cell(x(1, 2, 4))
    with pytest.raises(ValueError, match=r"input_size=4"):
        cell(x(2, 3))


def test_rnn_cell_hx_batch_mismatch():
    with pytest.raises(ValueError, match=r"RNNCell: hx has shape \(3, 5\), expected \(2, 5\)"):
        nn.RNNCell(4, 5)(x(2, 4), enp.zeros((3, 5)))


def test_flatten_start_after_end_and_unflatten_dims():
    with pytest.raises(ValueError, match=r"Flatten: start_dim=2 comes after end_dim=1"):
        nn.Flatten(2, 1)(x(2, 3, 4))           # was: shape (2, 3, 1, 4)
    with pytest.raises(IndexError, match=r"Flatten: Dimension out of range"):
        nn.Flatten()(enp.asarray(1.0))
    assert nn.Flatten(0)(enp.asarray(1.0)).shape == (1,)
    with pytest.raises(IndexError, match=r"Unflatten: Dimension out of range.*dim=1"):
        nn.Unflatten(1, (2, 2))(x(4))          # was: (2, 2)
    with pytest.raises(ValueError, match=r"Unflatten: unflattened_size=\(3, 2\).*\(4\)"):
        nn.Unflatten(1, (3, 2))(x(3, 4))
    assert nn.Unflatten(1, (2, -1))(x(3, 4)).shape == (3, 2, 2)


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax, F.softmin])
def test_softmax_dim_out_of_range(fn):
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got dim=2\)"):
        fn(x(3, 4), dim=2)
    with pytest.raises(IndexError, match=r"range of \[-1, 0\]"):
        fn(enp.asarray(1.0), dim=1)            # was: accepted
    assert float(fn(enp.asarray(2.0), dim=0)) == (0.0 if fn is F.log_softmax else 1.0)


def test_glu_dims():
    with pytest.raises(IndexError, match="glu: Dimension out of range"):
        F.glu(x(3, 4), dim=2)
    with pytest.raises(ValueError, match="glu: a 0-d input"):
        F.glu(enp.asarray(1.0))


def test_prelu_channel_checks():
    with pytest.raises(ValueError, match=r"prelu: weight has 4 parameters .* has 3 channel"):
        nn.PReLU(4)(x(2, 3, 4))
    with pytest.raises(ValueError, match=r"has 1 channel"):
        nn.PReLU(3)(x(3))                      # was: elementwise slopes
    with pytest.raises(ValueError, match="0-d input"):
        nn.PReLU(3)(enp.asarray(-1.0))
    out = nn.PReLU()(enp.asarray(-2.0))        # torch: shape (), 0.25 * -2
    assert out.shape == () and float(out) == -0.5


def test_conv_argument_checks():
    inp, w = x(1, 3, 5, 5), enp.ones((4, 3, 3, 3))
    with pytest.raises(ValueError, match=r"conv2d: padding must be non-negative, got padding=\(-1, -1\)"):
        F.conv2d(inp, w, padding=-1)
    with pytest.raises(ValueError, match=r"conv2d: stride must be positive"):
        F.conv2d(inp, w, stride=0)
    with pytest.raises(ValueError, match=r"conv2d: dilation must be positive"):
        F.conv2d(inp, w, dilation=0)
    with pytest.raises(ValueError, match=r"expected bias to be 1-dimensional with 4 elements.*\(5,\)"):
        F.conv2d(inp, w, enp.ones(5))
    with pytest.raises(ValueError, match=r"padded input size per channel \(2, 2\).*kernel size \(3, 3\)"):
        F.conv2d(x(1, 3, 2, 2), w)             # was: a (1, 4, 0, 0) result
    with pytest.raises(ValueError, match="kernel size"):
        nn.Conv2d(1, 1, 5)(x(1, 1, 3, 3))
    with pytest.raises(ValueError, match="conv_transpose2d: expected bias"):
        F.conv_transpose2d(x(1, 3, 4, 4), enp.ones((3, 2, 3, 3)), enp.ones(3))


def test_linear_bilinear_shape_checks():
    with pytest.raises(ValueError, match=r"linear: bias of shape \(4,\) does not match out_features=3"):
        F.linear(x(2, 4), enp.ones((3, 4)), enp.ones(4))
    with pytest.raises(ValueError, match=r"bilinear: input1 of shape \(2, 4\) and input2 of shape \(3, 3\)"):
        nn.Bilinear(4, 3, 5)(x(2, 4), x(3, 3))


def test_pool_zero_stride_and_kernel():
    with pytest.raises(ValueError, match=r"max_pool2d: stride must be positive, got stride=\(0, 0\)"):
        F.max_pool2d(x(1, 2, 5, 5), 2, stride=0)
    with pytest.raises(ValueError, match=r"kernel_size must be positive"):
        F.max_pool2d(x(1, 2, 5, 5), 0)
    # stride=[] means "the kernel size" in PyTorch
    assert F.max_pool2d(x(1, 2, 6, 6), 2, stride=[]).shape == (1, 2, 3, 3)


def test_norm_channel_mismatch_is_clear():
    with pytest.raises(ValueError, match=r"batch_norm: running_mean should contain 4 elements .* not 3"):
        nn.BatchNorm2d(3).eval()(x(2, 4, 2, 2))
    with pytest.raises(ValueError, match=r"group_norm: weight should contain 6 elements"):
        nn.GroupNorm(2, 4)(x(2, 6, 3))
    with pytest.raises(ValueError, match=r"layer_norm: expected weight to be of same shape as normalized_shape \(4,\)"):
        F.layer_norm(x(2, 3, 4), (4,), enp.ones(3))
    with pytest.raises(ValueError, match=r"instance_norm: weight should contain 3 elements"):
        F.instance_norm(x(2, 3, 5), weight=enp.ones(4))


def test_empty_batches_work_as_torch():
    assert nn.GroupNorm(1, 3)(x(0, 3, 4, 4)).shape == (0, 3, 4, 4)
    assert nn.Unfold(kernel_size=2)(x(0, 3, 4, 4)).shape == (0, 12, 9)
    assert nn.ReflectionPad1d(1)(x(0, 3, 4)).shape == (0, 3, 6)
    assert F.pad(x(0, 2, 4), (1, 1), mode="reflect").shape == (0, 2, 6)


def test_normalize_p0_and_dim():
    v = enp.asarray([[3.0, 0.0, 4.0]])
    # torch: x / max(count of non-zeros, eps)
    np.testing.assert_allclose(np.asarray(F.normalize(v, p=0)), [[1.5, 0.0, 2.0]])
    with pytest.raises(IndexError, match="normalize: Dimension out of range"):
        F.normalize(x(3, 4), dim=2)
    with pytest.raises(IndexError, match="cosine_similarity: Dimension out of range"):
        F.cosine_similarity(x(4), x(4))


def test_local_response_norm_checks():
    with pytest.raises(ValueError, match=r"3-d or higher input.*\(2, 5\)"):
        F.local_response_norm(x(2, 5), 3)
    with pytest.raises(ValueError, match="size must be a positive int"):
        F.local_response_norm(x(2, 5, 3), 0)


def test_pad_value_with_non_constant_mode():
    with pytest.raises(ValueError, match=r"pad: padding mode 'reflect' doesn't take in value argument"):
        F.pad(x(1, 2, 4), (1, 1), mode="reflect", value=3.0)
    assert F.pad(x(1, 2, 4), (1, 1), mode="reflect", value=0).shape == (1, 2, 6)


def test_interpolate_non_positive_sizes():
    with pytest.raises(ValueError, match=r"output sizes should be greater than 0.*scale_factor=0"):
        F.interpolate(x(1, 1, 3, 3), scale_factor=0)
    with pytest.raises(ValueError, match=r"size=0"):
        F.interpolate(x(1, 1, 3, 3), size=0)


def test_pixel_shuffle_takes_any_leading_dims():
    u = enp.arange(16.0).reshape(4, 2, 2)
    # torch.nn.functional.pixel_shuffle(torch.arange(16.).reshape(4, 2, 2), 2)
    assert F.pixel_shuffle(u, 2).tolist() == [[[0.0, 4.0, 1.0, 5.0], [8.0, 12.0, 9.0, 13.0],
                                              [2.0, 6.0, 3.0, 7.0], [10.0, 14.0, 11.0, 15.0]]]
    assert F.pixel_shuffle(enp.ones((1, 2, 8, 2, 2)), 2).shape == (1, 2, 2, 4, 4)
    back = F.pixel_unshuffle(F.pixel_shuffle(u, 2), 2)
    assert back.tolist() == u.tolist()


def test_bce_range_and_weight_shapes():
    with pytest.raises(ValueError, match=r"all elements of input should be between 0 and 1, got 1.5"):
        F.binary_cross_entropy(enp.asarray([0.5, 1.5]), enp.asarray([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"all elements of target should be between 0 and 1"):
        F.binary_cross_entropy(enp.asarray([0.5, 0.5]), enp.asarray([2.0, 1.0]))
    with pytest.raises(ValueError, match=r"binary_cross_entropy: weight of shape \(3,\) must broadcast to .*\(3, 4\)"):
        F.binary_cross_entropy(enp.full((3, 4), 0.5), enp.full((3, 4), 0.5), weight=enp.ones(3))
    with pytest.raises(ValueError, match=r"pos_weight of shape \(3,\)"):
        F.binary_cross_entropy_with_logits(x(3, 4), enp.full((3, 4), 0.5), pos_weight=enp.ones(3))


def test_triplet_margin_must_be_positive():
    a = x(3, 4)
    with pytest.raises(ValueError, match="margin must be greater than 0, got margin=0.0"):
        F.triplet_margin_loss(a, a, a, margin=0.0)
    with pytest.raises(ValueError, match="TripletMarginLoss: expected margin to be greater than 0"):
        nn.TripletMarginLoss(margin=-1)


def test_nll_loss_0d_input():
    with pytest.raises(ValueError, match="nll_loss: expected an input of 1 or more dimensions"):
        F.nll_loss(enp.asarray(1.0), enp.asarray(0))


def test_init_ranges():
    w = nn.Linear(3, 2).weight
    with pytest.raises(ValueError, match=r"init.uniform_: expects a \[from, to\) range, but got a=1.0 > b=-1.0"):
        nn.init.uniform_(w, 1.0, -1.0)
    with pytest.raises(ValueError, match=r"init.normal_: std must be >= 0, got std=-1.0"):
        nn.init.normal_(w, 0.0, -1.0)
    with pytest.raises(ValueError, match=r"init.trunc_normal_"):
        nn.init.trunc_normal_(w, a=2.0, b=-2.0)
