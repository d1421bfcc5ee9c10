"""Upsample / PixelShuffle modules, bicubic interpolate, grid_sample and
affine_grid against PyTorch: values and gradients, under jit and vmap."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.numpy as enp
from ember import nn
from ember.nn import functional as F
from ember.testing import check_vmap

from _nn_helpers import np_, rnd, to_torch


@settings(max_examples=25, deadline=None)
@given(mode=st.sampled_from(["nearest", "bilinear", "bicubic", "nearest-exact"]),
       h=st.integers(1, 6), w=st.integers(1, 6), how=st.sampled_from(["size", "scale"]),
       align=st.booleans(), seed=st.integers(0, 3))
def test_upsample_matches_torch(mode, h, w, how, align, seed):
    torch = pytest.importorskip("torch")
    kw = dict(size=(h + seed, max(1, w - 1))) if how == "size" else dict(scale_factor=(1.5 + seed / 2, 2.0))
    ac = align if mode in ("bilinear", "bicubic") else None
    x = rnd((2, 3, h, w), seed=seed)
    e = nn.Upsample(mode=mode, align_corners=ac, **kw)
    t = torch.nn.Upsample(mode=mode, align_corners=ac, **kw)
    assert repr(e) == repr(t)
    np.testing.assert_allclose(np_(e(x)), t(to_torch(x)).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode,ac", [("bicubic", False), ("bicubic", True), ("bilinear", False)])
def test_interpolate_gradients_match_torch_and_jit(mode, ac):
    torch = pytest.importorskip("torch")
    x = rnd((1, 2, 4, 5), seed=1)
    gy = rnd((1, 2, 7, 3), seed=2)

    def f(x):
        return (F.interpolate(x, size=(7, 3), mode=mode, align_corners=ac) * gy).sum()
    tx = to_torch(x).requires_grad_(True)
    (torch.nn.functional.interpolate(tx, size=(7, 3), mode=mode, align_corners=ac) * to_torch(gy)).sum().backward()
    np.testing.assert_allclose(np_(ember.grad(f)(x)), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np_(ember.jit(ember.grad(f))(x)), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    ember.testing.check_grads(lambda x: F.interpolate(x, scale_factor=1.5, mode=mode, align_corners=ac),
                              (np.asarray(x, np.float64),), order=1)


def test_upsampling_aliases_and_pixel_shuffle_match_torch():
    torch = pytest.importorskip("torch")
    x = rnd((2, 8, 3, 4), seed=3)
    for e, t in ((nn.UpsamplingNearest2d(scale_factor=2), torch.nn.UpsamplingNearest2d(scale_factor=2)),
                 (nn.UpsamplingBilinear2d(size=(5, 7)), torch.nn.UpsamplingBilinear2d(size=(5, 7))),
                 (nn.PixelShuffle(2), torch.nn.PixelShuffle(2))):
        np.testing.assert_allclose(np_(e(x)), t(to_torch(x)).numpy(), rtol=1e-6, atol=1e-6)
        assert repr(e) == repr(t)
    y = rnd((2, 2, 6, 4), seed=4)
    np.testing.assert_array_equal(np_(nn.PixelUnshuffle(2)(y)), torch.nn.PixelUnshuffle(2)(to_torch(y)).numpy())
    assert repr(nn.PixelUnshuffle(2)) == repr(torch.nn.PixelUnshuffle(2))
    np.testing.assert_array_equal(np_(nn.PixelShuffle(2)(nn.PixelUnshuffle(2)(y))), np_(y))
    with pytest.raises(ValueError, match="exactly one of size and scale_factor"):
        nn.Upsample()
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        nn.Upsample(scale_factor=2, align_corners=True)(x)


@settings(max_examples=25, deadline=None)
@given(mode=st.sampled_from(["bilinear", "nearest"]), pad=st.sampled_from(["zeros", "border", "reflection"]),
       align=st.booleans(), h=st.integers(1, 5), w=st.integers(1, 5), seed=st.integers(0, 5))
def test_grid_sample_matches_torch(mode, pad, align, h, w, seed):
    torch = pytest.importorskip("torch")
    x = rnd((2, 3, h, w), seed=seed)
    g = rnd((2, 4, 3, 2), seed=seed + 10, scale=0.9)
    got = F.grid_sample(x, g, mode=mode, padding_mode=pad, align_corners=align)
    want = torch.nn.functional.grid_sample(to_torch(x), to_torch(g), mode=mode, padding_mode=pad,
                                           align_corners=align)
    np.testing.assert_allclose(np_(got), want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pad", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_and_affine_grid_gradients_match_torch(pad, align):
    torch = pytest.importorskip("torch")
    x = rnd((2, 2, 4, 5), seed=1)
    theta = rnd((2, 2, 3), seed=2, scale=0.7)
    gy = rnd((2, 2, 3, 6), seed=3)

    def f(x, theta):
        grid = F.affine_grid(theta, (2, 2, 3, 6), align_corners=align)
        return (F.grid_sample(x, grid, padding_mode=pad, align_corners=align) * gy).sum()
    tx, tt = to_torch(x).requires_grad_(True), to_torch(theta).requires_grad_(True)
    tg = torch.nn.functional.affine_grid(tt, (2, 2, 3, 6), align_corners=align)
    (torch.nn.functional.grid_sample(tx, tg, padding_mode=pad, align_corners=align) * to_torch(gy)).sum().backward()
    for grads in (ember.grad(f, argnums=(0, 1))(x, theta), ember.jit(ember.grad(f, argnums=(0, 1)))(x, theta)):
        np.testing.assert_allclose(np_(grads[0]), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np_(grads[1]), tt.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_grid_sample_5d_vmap_and_errors():
    torch = pytest.importorskip("torch")
    x = rnd((1, 2, 3, 4, 5), seed=5)
    theta = rnd((1, 3, 4), seed=6, scale=0.6)
    grid = F.affine_grid(theta, (1, 2, 2, 3, 4))
    tgrid = torch.nn.functional.affine_grid(to_torch(theta), (1, 2, 2, 3, 4), align_corners=False)
    np.testing.assert_allclose(np_(grid), tgrid.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np_(F.grid_sample(x, grid, padding_mode="border")),
                               torch.nn.functional.grid_sample(to_torch(x), tgrid, padding_mode="border",
                                                               align_corners=False).numpy(), rtol=1e-5, atol=1e-5)
    imgs, grids = rnd((3, 1, 2, 4, 4), seed=7), rnd((3, 1, 2, 2, 2), seed=8)
    check_vmap(lambda im, g: F.grid_sample(im, g, padding_mode="reflection"), (imgs, grids))
    with pytest.raises(ValueError, match=r"grid must be \(N, H_out, W_out, 2\)"):
        F.grid_sample(rnd((1, 1, 2, 2)), rnd((1, 2, 2, 3)))
    with pytest.raises(ValueError, match="padding_mode"):
        F.grid_sample(rnd((1, 1, 2, 2)), rnd((1, 2, 2, 2)), padding_mode="wrap")
    with pytest.raises(ValueError, match=r"theta must be 1 x 2 x 3"):
        F.affine_grid(enp.ones((1, 3, 4)), (1, 1, 2, 2))
