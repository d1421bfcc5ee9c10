"""max_pool*d / adaptive_max_pool*d with return_indices=True and max_unpool*d, against
numpy brute-force references (checked against PyTorch 2.13 when written) and PyTorch
literals: values, indices, gradients, vmap, jit and the errors."""
import itertools

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn
from ember.nn import functional as F
from ember.testing import check_grads, check_vmap


def _out_size(n, k, s, p, d, ceil):
    num = n + 2 * p - d * (k - 1) - 1
    o = (-(-num // s) if ceil else num // s) + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def ref_max_pool(x, k, s, p, d, ceil):
    """PyTorch's semantics by brute force: the first maximum over the real taps, in
    row-major tap order, and its flat index within the (N, C) plane."""
    sp = x.shape[2:]
    outs = [_out_size(*a, ceil) for a in zip(sp, k, s, p, d)]
    y = np.zeros(x.shape[:2] + tuple(outs), x.dtype)
    ind = np.zeros(y.shape, np.int64)
    for nc in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o in itertools.product(*map(range, outs)):
            best = bi = None
            for t in itertools.product(*map(range, k)):
                pos = tuple(oo * ss - pp + dd * tt for oo, ss, pp, dd, tt in zip(o, s, p, d, t))
                if all(0 <= q < n for q, n in zip(pos, sp)):
                    v = x[nc + pos]
                    if best is None or v > best:
                        best, bi = v, np.ravel_multi_index(pos, sp)
            y[nc + o], ind[nc + o] = best, bi
    return y, ind


def ref_adaptive_max(x, outs):
    sp = x.shape[2:]
    bounds = [[((i * n) // o, -(-((i + 1) * n) // o)) for i in range(o)] for n, o in zip(sp, outs)]
    y = np.zeros(x.shape[:2] + tuple(outs), x.dtype)
    ind = np.zeros(y.shape, np.int64)
    for nc in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o in itertools.product(*map(range, outs)):
            best = bi = None
            for pos in itertools.product(*[range(*bounds[a][o[a]]) for a in range(len(sp))]):
                if best is None or x[nc + pos] > best:
                    best, bi = x[nc + pos], np.ravel_multi_index(pos, sp)
            y[nc + o], ind[nc + o] = best, bi
    return y, ind


def ref_unpool(x, ind, sizes):
    out = np.zeros(x.shape[:2] + (int(np.prod(sizes)),), x.dtype)
    for nc in itertools.product(range(x.shape[0]), range(x.shape[1])):
        out[nc][ind[nc].ravel()] = x[nc].ravel()
    return out.reshape(x.shape[:2] + tuple(sizes))


def _configs(nsp, count, seed):
    rng = np.random.RandomState(seed)
    out = []
    while len(out) < count:
        k = tuple(int(v) for v in rng.randint(1, 4, nsp))
        s = tuple(int(v) for v in rng.randint(1, 4, nsp))
        d = tuple(int(v) for v in rng.randint(1, 3, nsp))
        p = tuple(int(rng.randint(0, kk // 2 + 1)) for kk in k)
        ceil = bool(rng.randint(2))
        hi = 8 if nsp < 3 else 6
        sp = tuple(int(rng.randint(dd * (kk - 1) + 1, hi)) for kk, dd in zip(k, d))
        if all(_out_size(*a, ceil) > 0 for a in zip(sp, k, s, p, d)):
            out.append((sp, k, s, p, d, ceil))
    return out


_POOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
_UNPOOL = {1: F.max_unpool1d, 2: F.max_unpool2d, 3: F.max_unpool3d}
_ADAPTIVE = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d, 3: F.adaptive_max_pool3d}


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_max_pool_indices_match_reference_with_ties(nsp):
    # values in {0, 1, 2}: most windows hold tied maxima, so the first-max rule is tested
    rng = np.random.RandomState(nsp)
    for sp, k, s, p, d, ceil in _configs(nsp, 12, seed=10 + nsp):
        x = rng.randint(0, 3, (2, 3) + sp).astype(np.float32)
        y, i = _POOL[nsp](enp.asarray(x), k, s, p, d, ceil, return_indices=True)
        ry, ri = ref_max_pool(x, k, s, p, d, ceil)
        np.testing.assert_array_equal(np.asarray(y), ry, err_msg=str((sp, k, s, p, d, ceil)))
        np.testing.assert_array_equal(np.asarray(i), ri, err_msg=str((sp, k, s, p, d, ceil)))
        assert i.dtype == enp.int32
        # the values are the ones the return_indices=False path gives
        np.testing.assert_array_equal(np.asarray(_POOL[nsp](enp.asarray(x), k, s, p, d, ceil)), ry)


def test_max_pool2d_indices_torch_literals():
    x = enp.asarray([[[[1., 2, 2, 0, 3], [3, 1, 0, 3, 2], [0, 3, 2, 1, 1], [2, 2, 3, 0, 1]]]])
    y, i = F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, return_indices=True)
    assert y.tolist() == [[[[3.0, 3.0, 3.0], [3.0, 3.0, 3.0], [2.0, 3.0, 1.0]]]]
    assert i.tolist() == [[[[5, 8, 4], [5, 8, 8], [15, 17, 19]]]]
    y, i = F.max_pool2d(x, 2, stride=1, dilation=2, return_indices=True)
    assert y.tolist() == [[[[2.0, 3.0, 3.0], [3.0, 3.0, 3.0]]]]
    assert i.tolist() == [[[[2, 11, 4], [5, 8, 17]]]]
    # a window whose real taps are all -inf still names a real element
    y, i = F.max_pool1d(enp.asarray([[[-np.inf, -np.inf, 1.0]]]), 2, 1, 1, return_indices=True)
    assert i.tolist() == [[[0, 0, 2, 2]]]


def test_max_pool2d_gradient_goes_to_the_index_torch_literal():
    x = enp.asarray([[[[1., 2, 2, 0, 3], [3, 1, 0, 3, 2], [0, 3, 2, 1, 1], [2, 2, 3, 0, 1]]]])
    w = enp.arange(1.0, 10.0).reshape(1, 1, 3, 3)

    def f(x):
        y, _ = F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, return_indices=True)
        return (y * w).sum()

    expected = [[[[0.0, 0.0, 0.0, 0.0, 3.0], [5.0, 0.0, 0.0, 13.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0],
                  [7.0, 0.0, 8.0, 0.0, 9.0]]]]  # torch 2.13
    assert ember.grad(f)(x).tolist() == expected
    assert ember.jit(ember.grad(f))(x).tolist() == expected


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_max_pool_gradient_scatters_to_indices(nsp):
    rng = np.random.RandomState(20 + nsp)
    for sp, k, s, p, d, ceil in _configs(nsp, 4, seed=30 + nsp):
        x = rng.randint(0, 3, (1, 2) + sp).astype(np.float64)
        _, ri = ref_max_pool(x, k, s, p, d, ceil)
        w = rng.standard_normal(ri.shape)
        expected = np.zeros((1, 2, int(np.prod(sp))))
        for c in range(2):
            np.add.at(expected[0, c], ri[0, c].ravel(), w[0, c].ravel())
        g = ember.grad(lambda x: (_POOL[nsp](x, k, s, p, d, ceil, return_indices=True)[0]
                                  * enp.asarray(w)).sum())(enp.asarray(x))
        np.testing.assert_allclose(np.asarray(g), expected.reshape(x.shape), rtol=1e-12)


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_adaptive_max_pool_indices_match_reference(nsp):
    rng = np.random.RandomState(40 + nsp)
    for _ in range(6):
        sp = tuple(int(v) for v in rng.randint(1, 8 if nsp < 3 else 6, nsp))
        outs = tuple(int(rng.randint(1, n + 2)) for n in sp)
        x = rng.randint(0, 3, (2, 2) + sp).astype(np.float32)
        y, i = _ADAPTIVE[nsp](enp.asarray(x), outs, return_indices=True)
        ry, ri = ref_adaptive_max(x, outs)
        np.testing.assert_array_equal(np.asarray(y), ry)
        np.testing.assert_array_equal(np.asarray(i), ri)
        np.testing.assert_array_equal(np.asarray(_ADAPTIVE[nsp](enp.asarray(x), outs)), ry)
    # torch 2.13
    assert F.adaptive_max_pool2d(enp.ones((1, 1, 5, 5)), 2, return_indices=True)[1].tolist() == \
        [[[[0, 2], [10, 12]]]]


def test_unbatched_inputs_give_unbatched_indices():
    x = enp.arange(16.0).reshape(1, 4, 4)
    y, i = F.max_pool2d(x, 2, return_indices=True)
    assert i.tolist() == [[[5, 7], [13, 15]]]
    y3, i3 = F.adaptive_max_pool3d(enp.arange(8.0).reshape(1, 2, 2, 2), 1, return_indices=True)
    assert y3.tolist() == [[[[7.0]]]] and i3.tolist() == [[[[7]]]]
    assert F.max_unpool2d(y, i, 2).tolist() == [[[0.0, 0.0, 0.0, 0.0], [0.0, 5.0, 0.0, 7.0],
                                                 [0.0, 0.0, 0.0, 0.0], [0.0, 13.0, 0.0, 15.0]]]


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_max_unpool_inverts_max_pool(nsp):
    rng = np.random.RandomState(50 + nsp)
    sp = (6, 5, 4)[:nsp]
    x = rng.standard_normal((2, 3) + sp).astype(np.float32)
    even = tuple(2 * (n // 2) for n in sp)
    y, i = _POOL[nsp](enp.asarray(x[(Ellipsis,) + tuple(slice(0, n) for n in even)]), 2,
                      return_indices=True)
    u = _UNPOOL[nsp](y, i, 2)
    assert u.shape == (2, 3) + even
    np.testing.assert_array_equal(np.asarray(u), ref_unpool(np.asarray(y), np.asarray(i), even))
    # an odd size: the default (even) output cannot hold the indices, output_size can
    y, i = _POOL[nsp](enp.asarray(x), 2, return_indices=True)
    # output_size as spatial sizes or the full shape restores the odd sizes
    for os_ in (sp, (2, 3) + sp):
        u = _UNPOOL[nsp](y, i, 2, output_size=os_)
        np.testing.assert_array_equal(np.asarray(u), ref_unpool(np.asarray(y), np.asarray(i), sp))
    # int64 indices (from PyTorch, say) work too
    u64 = _UNPOOL[nsp](y, enp.astype(i, enp.int64), 2, output_size=sp)
    np.testing.assert_array_equal(np.asarray(u64), np.asarray(u))


def test_max_unpool_kernel_stride_padding_defaults_torch_literal():
    y = enp.asarray([[[1.0, 2.0, 3.0]]])
    i = enp.asarray([[[0, 3, 6]]])
    # L_out = (3 - 1) * 3 - 2 * 1 + 4 = 8 (torch 2.13)
    u = F.max_unpool1d(y, i, 4, stride=3, padding=1)
    assert u.tolist() == [[[1.0, 0.0, 0.0, 2.0, 0.0, 0.0, 3.0, 0.0]]]
    assert nn.MaxUnpool1d(4, 3, 1)(y, i).tolist() == u.tolist()


def test_max_unpool_duplicate_indices_grad_as_torch():
    v = enp.asarray([[[1.0, 2.0, 3.0]]])
    i = enp.asarray([[[1, 1, 4]]])
    w = enp.arange(1.0, 6.0)

    def f(v):
        return (F.max_unpool1d(v, i, 2, stride=2, output_size=(5,)) * w).sum()

    u = F.max_unpool1d(v, i, 2, stride=2, output_size=(5,))
    assert u.tolist() == [[[0.0, 2.0, 0.0, 0.0, 3.0]]]  # torch 2.13 (CPU) keeps the last
    # torch 2.13: every value gets the cotangent at its index
    assert ember.grad(f)(v).tolist() == [[[2.0, 2.0, 5.0]]]
    assert ember.jit(ember.grad(f))(v).tolist() == [[[2.0, 2.0, 5.0]]]


def test_max_unpool_grads_fwd_and_rev():
    y, i = F.max_pool2d(enp.asarray(np.random.RandomState(0).standard_normal((1, 2, 4, 4))), 2,
                        return_indices=True)
    check_grads(lambda y: F.max_unpool2d(y, i, 2), (y,), order=2, modes=("fwd", "rev"))
    x = enp.asarray(np.random.RandomState(1).standard_normal((1, 2, 5, 5)))
    check_grads(lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True)[0], (x,), order=1,
                modes=("fwd", "rev"))


def test_vmap_matches_a_loop():
    rng = np.random.RandomState(3)
    x = enp.asarray(rng.standard_normal((3, 2, 4, 6, 5)).astype(np.float32))
    for axis in (0, 2):
        check_vmap(lambda x: F.max_pool2d(x, 2, 1, 1, 2, return_indices=True), (x,), in_axes=axis)
        check_vmap(lambda x: F.adaptive_max_pool2d(x, (2, 3), return_indices=True), (x,), in_axes=axis)
    y, i = F.max_pool3d(x, 2, return_indices=True)
    check_vmap(lambda y, i: F.max_unpool3d(y, i, 2, output_size=(4, 6, 5)), (y, i))
    y2, i2 = ember.vmap(lambda x: F.max_pool2d(x, 2, return_indices=True))(x[..., :4])
    yb, ib = enp.moveaxis(y2, 0, 2), enp.moveaxis(i2, 0, 2)
    check_vmap(lambda y, i: F.max_unpool2d(y, i, 2), (yb, ib), in_axes=(2, 2))
    # unbatched indices under a batched input
    check_vmap(lambda y: F.max_unpool3d(y, i[0], 2, output_size=(4, 6, 5)), (y,), in_axes=0)


def test_jit_matches_eager():
    x = enp.asarray(np.random.RandomState(4).randint(0, 3, (2, 3, 7, 6)).astype(np.float32))

    def roundtrip(x):
        y, i = F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True)
        return y, i, F.max_unpool2d(y, i, 3, 2, 1, output_size=(7, 6))

    for a, b in zip(roundtrip(x), ember.jit(roundtrip)(x)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert a.dtype == b.dtype
    ya, ia = F.adaptive_max_pool2d(x, 3, return_indices=True)
    yb, ib = ember.jit(lambda x: F.adaptive_max_pool2d(x, 3, return_indices=True))(x)
    np.testing.assert_array_equal(np.asarray(ia), np.asarray(ib))


def test_modules_return_indices_and_unpool():
    x = enp.asarray(np.random.RandomState(5).standard_normal((2, 3, 8, 8)).astype(np.float32))
    pool, unpool = nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2)
    y, i = pool(x)
    assert pool.return_indices is True
    u = unpool(y, i)
    np.testing.assert_array_equal(np.asarray(u), ref_unpool(np.asarray(y), np.asarray(i), (8, 8)))
    assert unpool(y, i, output_size=(9, 9)).shape == (2, 3, 9, 9)
    assert repr(unpool) == "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"
    assert repr(nn.MaxUnpool1d(3, 2)) == "MaxUnpool1d(kernel_size=(3,), stride=(2,), padding=(0,))"
    y1, i1 = nn.MaxPool1d(2, return_indices=True)(x[:, :, 0])
    assert nn.MaxUnpool1d(2)(y1, i1).shape == (2, 3, 8)
    y3, i3 = nn.AdaptiveMaxPool3d(2, return_indices=True)(x[:, :, None])
    assert y3.shape == i3.shape == (2, 3, 2, 2, 2)
    np.testing.assert_array_equal(np.asarray(i3), ref_adaptive_max(np.asarray(x[:, :, None]), (2, 2, 2))[1])
    yy, ii = nn.AdaptiveMaxPool2d(3, return_indices=True)(x)
    np.testing.assert_array_equal(np.asarray(ii), ref_adaptive_max(np.asarray(x), (3, 3))[1])
    assert nn.MaxPool3d(2).return_indices is False
    assert not isinstance(nn.MaxPool2d(2)(x), tuple)


def test_invalid_indices_raise_like_torch():
    y, i = F.max_pool2d(enp.arange(16.0).reshape(1, 1, 4, 4), 2, return_indices=True)
    with pytest.raises(IndexError, match=r"max_unpool2d: found an invalid max index 13 .*\[0, 9\)"):
        F.max_unpool2d(y, i, 2, output_size=(3, 3))
    with pytest.raises(RuntimeError, match="invalid max index -95"):
        F.max_unpool2d(y, i - 100, 2)
    with pytest.raises(TypeError, match="indices must be an integer array.*float32"):
        F.max_unpool2d(y, enp.astype(i, enp.float32), 2)
    with pytest.raises(ValueError, match=r"indices shape \(1, 1, 2, 1\) must equal the input shape \(1, 1, 2, 2\)"):
        F.max_unpool2d(y, i[..., :1], 2)
    # under jit the indices are not known: out-of-range ones are dropped, not wrapped
    # into another plane
    out = ember.jit(lambda y, i: F.max_unpool2d(y, i, 2))(y, i + 100)
    assert np.asarray(out).sum() == 0.0


def test_invalid_output_size_raises_like_torch():
    y, i = F.max_pool2d(enp.arange(16.0).reshape(1, 1, 4, 4), 2, return_indices=True)
    with pytest.raises(ValueError, match=r"invalid output_size \(6, 6\) \(dim 0 must be between 2 and 6"):
        F.max_unpool2d(y, i, 2, output_size=(6, 6))
    with pytest.raises(ValueError, match="invalid output_size"):
        F.max_unpool2d(y, i, 2, output_size=(1, 1, 4, 2))
    with pytest.raises(ValueError, match="2 or 4 elements, but it has a length of 3"):
        F.max_unpool2d(y, i, 2, output_size=(2, 5, 5))
    assert F.max_unpool2d(y, i, 2, output_size=(5, 4)).shape == (1, 1, 5, 4)


def test_empty_batch():
    y, i = F.max_pool2d(enp.zeros((0, 3, 4, 4)), 2, return_indices=True)
    assert y.shape == i.shape == (0, 3, 2, 2)
    assert F.max_unpool2d(y, i, 2).shape == (0, 3, 4, 4)
    y, i = F.adaptive_max_pool2d(enp.zeros((0, 3, 4, 4)), 2, return_indices=True)
    assert y.shape == i.shape == (0, 3, 2, 2)
