"""Spatial transformers: `affine_grid` (sampling grids from affine matrices) and
`grid_sample` (read an image at arbitrary normalised coordinates), with PyTorch's
coordinate conventions.

`grid_sample` gathers the 2^d corner values of each sample point from the
flattened image (`take_along_axis`) and blends them with the interpolation
weights, so gradients reach both the image (a scatter-add) and the grid (through
the weights), and vmap and jit apply as to any gather.

Example:
    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> theta = enp.asarray([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])      # the identity
    >>> img = enp.arange(4.0).reshape(1, 1, 2, 2)
    >>> grid = F.affine_grid(theta, (1, 1, 2, 2), align_corners=False)
    >>> F.grid_sample(img, grid, align_corners=False).tolist()
    [[[[0.0, 1.0], [2.0, 3.0]]]]
"""
from __future__ import annotations

import itertools

from ...fx.core import get_aval
from ._util import enp, float_arr

__all__ = ["affine_grid", "grid_sample"]


def _base_coords(n: int, align_corners: bool, dtype):
    e = enp()
    if n <= 1 and align_corners:
        return e.zeros((n,), dtype=dtype)
    i = e.arange(n, dtype=dtype)
    if align_corners:
        return i * (2.0 / (n - 1)) - 1.0
    return (i * 2.0 + 1.0) / n - 1.0


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) that the affine maps
    `theta` (N, 2, 3) (or (N, 3, 4)) give for an output of `size` (N, C, H, W)
    (or (N, C, D, H, W)); coordinates are normalised to [-1, 1], x first.
    `align_corners` defaults to False, as in PyTorch.

    Example:
        >>> import ember.numpy as enp
        >>> g = affine_grid(enp.asarray([[[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]]]), (1, 1, 1, 2), True)
        >>> g.tolist()
        [[[[-2.0, 0.0], [2.0, 0.0]]]]
    """
    e = enp()
    th = float_arr(theta)
    size = tuple(int(s) for s in size)
    nsp = len(size) - 2
    if nsp not in (2, 3):
        raise ValueError(f"affine_grid: size must be (N, C, H, W) or (N, C, D, H, W), got {size}")
    if th.ndim != 3 or tuple(th.shape[1:]) != (nsp, nsp + 1) or th.shape[0] != size[0]:
        raise ValueError(f"affine_grid: for size {size} theta must be {size[0]} x {nsp} x {nsp + 1} "
                         f"(one affine matrix per batch entry), got {get_aval(th).str_user()}")
    if any(s <= 0 for s in size[2:]):
        raise ValueError(f"affine_grid: the spatial sizes must be positive, got {size}")
    ac = bool(align_corners)
    spatial = size[2:]
    # x runs along the last axis, y (and z) along the earlier ones
    axes = [_base_coords(n, ac, th.dtype) for n in reversed(spatial)]
    mesh = e.meshgrid(*axes[::-1], indexing="ij")[::-1]
    base = e.stack(list(mesh) + [e.ones(spatial, dtype=th.dtype)], axis=-1)   # (*spatial, nsp+1)
    flat = e.reshape(base, (-1, nsp + 1))
    grid = e.einsum("pk,nik->npi", flat, th)
    return e.reshape(grid, (size[0],) + spatial + (nsp,))


def _unnormalize(coord, n, align_corners):
    if align_corners:
        return (coord + 1.0) * ((n - 1) / 2.0)
    return ((coord + 1.0) * n - 1.0) / 2.0


def _reflect(x, twice_low, twice_high):
    e = enp()
    if twice_low == twice_high:
        return e.zeros_like(x)
    lo = twice_low / 2.0
    span = (twice_high - twice_low) / 2.0
    x = e.abs(x - lo)
    extra = e.fmod(x, span)
    flips = e.floor(x / span)
    even = e.fmod(flips, 2.0) == 0
    return e.where(even, extra + lo, span - extra + lo)


def _source_coords(coord, n, padding_mode, align_corners):
    e = enp()
    x = _unnormalize(coord, n, align_corners)
    if padding_mode == "border":
        x = e.clip(x, 0.0, n - 1.0)
    elif padding_mode == "reflection":
        if align_corners:
            x = _reflect(x, 0, 2 * (n - 1))
        else:
            x = _reflect(x, -1, 2 * n - 1)
        x = e.clip(x, 0.0, n - 1.0)
    return x


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample `input` (N, C, H, W) at `grid` (N, H_out, W_out, 2), coordinates in
    [-1, 1] with x (width) first; 5-d inputs take (N, D_out, H_out, W_out, 3) grids
    (trilinear under the name "bilinear", as in PyTorch).  `mode`: "bilinear" or
    "nearest" (round half to even); `padding_mode`: "zeros", "border" or
    "reflection"; `align_corners` defaults to False.

    Example:
        >>> import ember.numpy as enp
        >>> img = enp.asarray([[[[0.0, 10.0]]]])
        >>> grid_sample(img, enp.asarray([[[[0.0, 0.0]]]]), align_corners=True).tolist()
        [[[[5.0]]]]
    """
    e = enp()
    x = float_arr(input)
    g = float_arr(grid)
    nsp = x.ndim - 2
    if nsp not in (2, 3):
        raise ValueError(f"grid_sample: input must be (N, C, H, W) or (N, C, D, H, W), got "
                         f"{get_aval(x).str_user()}")
    if g.ndim != nsp + 2 or g.shape[0] != x.shape[0] or g.shape[-1] != nsp:
        raise ValueError(f"grid_sample: for input {get_aval(x).str_user()} grid must be (N, "
                         f"{'D_out, ' if nsp == 3 else ''}H_out, W_out, {nsp}) with N={x.shape[0]}, "
                         f"got {get_aval(g).str_user()}")
    if mode not in ("bilinear", "nearest"):
        raise ValueError(f"grid_sample: mode must be 'bilinear' or 'nearest', got {mode!r}")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"grid_sample: padding_mode must be 'zeros', 'border' or 'reflection', got "
                         f"{padding_mode!r}")
    if g.dtype != x.dtype:
        g = g.astype(x.dtype)
    ac = bool(align_corners)
    N, C = x.shape[:2]
    spatial = tuple(x.shape[2:])
    out_spatial = tuple(g.shape[1:-1])
    P = 1
    for s in out_spatial:
        P *= s
    flat_img = e.reshape(x, (N, C, -1))
    gf = e.reshape(g, (N, P, nsp))
    # per spatial axis (in array order), the source coordinate of every sample point
    coords = [_source_coords(gf[..., nsp - 1 - a], spatial[a], padding_mode, ac) for a in range(nsp)]
    strides = [1] * nsp
    for a in range(nsp - 2, -1, -1):
        strides[a] = strides[a + 1] * spatial[a + 1]

    def tap(idx):
        """Values at integer positions idx (per axis, (N, P)), zero where outside."""
        inside = None
        lin = 0
        for a in range(nsp):
            ok = (idx[a] >= 0) & (idx[a] <= spatial[a] - 1)
            inside = ok if inside is None else inside & ok
            lin = lin + e.clip(idx[a], 0, spatial[a] - 1).astype(e.int32) * strides[a]
        vals = e.take_along_axis(flat_img, lin[:, None, :], axis=-1, mode="clip")
        return e.where(inside[:, None, :], vals, e.zeros((), dtype=x.dtype))

    if mode == "nearest":
        out = tap([e.round(c) for c in coords])
    else:
        lo = [e.floor(c) for c in coords]
        frac = [c - f for c, f in zip(coords, lo)]
        out = None
        for corner in itertools.product((0, 1), repeat=nsp):
            w = None
            for a, bit in enumerate(corner):
                wa = frac[a] if bit else 1.0 - frac[a]
                w = wa if w is None else w * wa
            term = tap([lo[a] + bit for a, bit in enumerate(corner)]) * w[:, None, :]
            out = term if out is None else out + term
    return e.reshape(out, (N, C) + out_spatial)
