"""linear_cross_entropy / LinearCrossEntropyLoss (PyTorch 2.13): values and gradients
against torch, chunked against unchunked (eager, jit, grad, vmap), finite
differences, a graph check that chunking never forms the (N, C) logits, the
module's state dict, and argument errors."""
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn
from ember.nn import functional as F
from ember.nn.functional.loss_linear import LinearCrossEntropyOptions as Opts
from ember.testing import check_grads
from _nn_helpers import value_shapes

I, C = 4, 7
CHUNKS = [None, Opts(batch_chunk_size=3), Opts(batch_chunk_size=4), Opts()]


def _data(n, dtype, seed=0, ignore=True, out=()):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, I)).astype(dtype)
    w = rng.normal(size=(C,) + out + (I,)).astype(dtype)
    b = rng.normal(size=(C,) + out).astype(dtype)
    t = rng.integers(0, C, (n,) + out)
    if ignore and n > 2:
        t.flat[2] = -100
    cw = rng.random(C).astype(dtype)
    return x, w, b, t, cw


def _np(x):
    return np.asarray(x)


def _torch_ref(torch, x, w, t, b, cw, **kw):
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    tb = None if b is None else torch.tensor(b, requires_grad=True)
    tt = torch.tensor(t) if t.dtype.kind != "i" else torch.tensor(t, dtype=torch.int64)
    tcw = None if cw is None else torch.tensor(cw)
    loss = torch.nn.functional.linear_cross_entropy(tx, tw, tt, linear_bias=tb, weight=tcw, **kw)
    grads = torch.autograd.grad(loss.sum(), [a for a in (tx, tw, tb) if a is not None]) if loss.numel() \
        else [torch.zeros_like(a) for a in (tx, tw, tb) if a is not None]
    return loss.detach().numpy(), [g.numpy() for g in grads]


def _ember(x, w, t, b, cw, **kw):
    def f(x, w, *bb):
        return enp.sum(F.linear_cross_entropy(x, w, enp.asarray(t), linear_bias=bb[0] if bb else None,
                                              weight=None if cw is None else enp.asarray(cw), **kw))
    args = (enp.asarray(x), enp.asarray(w)) + (() if b is None else (enp.asarray(b),))
    loss = F.linear_cross_entropy(args[0], args[1], enp.asarray(t),
                                  linear_bias=args[2] if b is not None else None,
                                  weight=None if cw is None else enp.asarray(cw), **kw)
    grads = ember.grad(f, argnums=tuple(range(len(args))))(*args)
    return _np(loss), [_np(g) for g in grads]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("opts", CHUNKS, ids=["unchunked", "chunk3", "chunk4", "auto"])
@pytest.mark.parametrize("n", [10, 1, 0])
def test_values_and_grads_match_torch(dtype, reduction, opts, n):
    torch = pytest.importorskip("torch")
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    x, w, b, t, cw = _data(n, dtype)
    for bias, weight, ls, ii in [(None, None, 0.0, None), (b, cw, 0.0, None), (b, None, 0.3, None),
                                 (None, cw, 0.15, None), (b, cw, 0.0, 3)]:
        kw = dict(reduction=reduction, label_smoothing=ls, ignore_index=ii)
        tt = t if ii is None else np.where(t == -100, ii, t)
        want, wgrads = _torch_ref(torch, x, w, tt, bias, weight, **kw)
        got, grads = _ember(x, w, tt, bias, weight, options=opts, **kw)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, **tol)
        assert len(grads) == len(wgrads)
        for g, wg in zip(grads, wgrads):
            np.testing.assert_allclose(g, wg, **tol)


@pytest.mark.parametrize("opts", CHUNKS[:3], ids=["unchunked", "chunk3", "chunk4"])
def test_probability_targets_k_dim_and_unbatched_match_torch(opts):
    torch = pytest.importorskip("torch")
    tol = dict(rtol=1e-10, atol=1e-12)
    rng = np.random.default_rng(3)
    x, w, b, t, cw = _data(5, np.float64, out=(2, 3))
    for reduction in ["mean", "sum", "none"]:
        # K-dimensional, class indices
        want, wg = _torch_ref(torch, x, w, t, b, cw, reduction=reduction, label_smoothing=0.1)
        got, g = _ember(x, w, t, b, cw, reduction=reduction, label_smoothing=0.1, options=opts)
        np.testing.assert_allclose(got, want, **tol)
        for a, c in zip(g, wg):
            np.testing.assert_allclose(a, c, **tol)
        # K-dimensional, probabilities
        p = rng.random((5, C, 2, 3))
        p /= p.sum(1, keepdims=True)
        want, wg = _torch_ref(torch, x, w, p, b, cw, reduction=reduction, label_smoothing=0.2)
        got, g = _ember(x, w, p, b, cw, reduction=reduction, label_smoothing=0.2, options=opts)
        np.testing.assert_allclose(got, want, **tol)
        for a, c in zip(g, wg):
            np.testing.assert_allclose(a, c, **tol)
    # unbatched: class index () and probabilities (C,)
    x1, w1 = x[0], w[:, 0, 0]
    for tgt in [np.array(3), rng.random(C) / C]:
        want, wg = _torch_ref(torch, x1, w1, tgt, None, None)
        got, g = _ember(x1, w1, tgt, None, None, options=opts)
        np.testing.assert_allclose(got, want, **tol)
        for a, c in zip(g, wg):
            np.testing.assert_allclose(a, c, **tol)


def test_chunked_equals_unchunked_under_jit_grad_and_vmap():
    x, w, b, t, cw = _data(11, np.float32)
    x, w, b, t, cw = map(enp.asarray, (x, w, b, t, cw))

    def loss(opts):
        return lambda x, w, b: F.linear_cross_entropy(x, w, t, linear_bias=b, weight=cw,
                                                      label_smoothing=0.1, options=opts)
    ref = loss(None)(x, w, b)
    gref = ember.grad(loss(None), argnums=(0, 1, 2))(x, w, b)
    for opts in [Opts(batch_chunk_size=1), Opts(batch_chunk_size=4), Opts(batch_chunk_size=11)]:
        np.testing.assert_allclose(_np(ember.jit(loss(opts))(x, w, b)), _np(ref), rtol=1e-6)
        for g, gr in zip(ember.jit(ember.grad(loss(opts), argnums=(0, 1, 2)))(x, w, b), gref):
            np.testing.assert_allclose(_np(g), _np(gr), rtol=1e-5, atol=1e-7)
    # vmap over a batch of inputs sharing the weight
    xs = enp.asarray(np.random.default_rng(1).normal(size=(3, 11, I)).astype(np.float32))
    v_ref = ember.vmap(loss(None), in_axes=(0, None, None))(xs, w, b)
    v_chk = ember.vmap(loss(Opts(batch_chunk_size=4)), in_axes=(0, None, None))(xs, w, b)
    np.testing.assert_allclose(_np(v_chk), _np(v_ref), rtol=1e-6)
    gv = ember.vmap(ember.grad(loss(Opts(batch_chunk_size=4)), argnums=1), in_axes=(0, None, None))(xs, w, b)
    gv_ref = ember.vmap(ember.grad(loss(None), argnums=1), in_axes=(0, None, None))(xs, w, b)
    np.testing.assert_allclose(_np(gv), _np(gv_ref), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("opts", [None, Opts(batch_chunk_size=2)], ids=["unchunked", "chunked"])
def test_derivatives_match_finite_differences(opts):
    x, w, b, t, cw = _data(5, np.float64)
    t, cw = enp.asarray(t), enp.asarray(cw)

    def f(x, w, b):
        return F.linear_cross_entropy(x, w, t, linear_bias=b, weight=cw, label_smoothing=0.2,
                                      options=opts)
    check_grads(f, (x, w, b), order=2, modes=("rev",))
    check_grads(f, (x, w, b), order=1, modes=("fwd",))


def test_chunked_never_materialises_the_logits():
    n, c, cs = 64, 50, 8
    rng = np.random.default_rng(0)
    x = enp.asarray(rng.normal(size=(n, I)).astype(np.float32))
    w = enp.asarray(rng.normal(size=(c, I)).astype(np.float32))
    t = enp.asarray(rng.integers(0, c, n))

    def loss(opts):
        return lambda x, w: F.linear_cross_entropy(x, w, t, options=opts)
    for f in (loss(Opts(batch_chunk_size=cs)), ember.grad(loss(Opts(batch_chunk_size=cs)), argnums=(0, 1))):
        shapes = value_shapes(ember.make_graph(f)(x, w).graph)
        assert (n, c) not in shapes and (cs, c) in shapes
    # reverse mode keeps the chunks' inputs and the weight once, never logits
    res = [a.shape for a, _ in ember.saved_residuals(loss(Opts(batch_chunk_size=cs)), x, w)]
    assert (n, c) not in res and (cs, c) not in res
    assert res.count((c, I)) == 1
    # the unchunked path does form them (so the check above can see them)
    assert (n, c) in value_shapes(ember.make_graph(ember.grad(loss(None), argnums=(0, 1)))(x, w).graph)


def test_options_resolve_like_torch():
    torch = pytest.importorskip("torch")
    TO = torch.nn.LinearCrossEntropyOptions
    for kw in [{}, dict(batch_chunk_size=7), dict(chunking_method="aspect_ratio"),
               dict(chunking_method="aspect_ratio:4"), dict(chunking_method=None),
               dict(chunking_method=None, batch_chunk_size=5)]:
        for n, i, c in [(100, 4, 5), (1000, 16, 3000), (3, 8, 2), (0, 4, 5)]:
            want = TO(**kw)._adjust(n, i, c, torch.float32)
            got = Opts(**kw)._adjust(n, i, c, "float32")
            assert got.batch_chunk_size == want.batch_chunk_size, (kw, n, i, c)
            assert got.chunking_method == want.chunking_method
    with pytest.raises(ValueError, match="batch_chunk_size"):
        Opts(batch_chunk_size=3, chunking_method="aspect_ratio")._adjust(100, 4, 5, "float32")
    assert Opts()._adjust(4, 4, 4, "bfloat16").acc_dtype == np.dtype("float32")
    assert Opts()._adjust(4, 4, 4, "float64").acc_dtype == np.dtype("float64")


def test_half_precision_accumulates_in_float32():
    x, w, b, t, cw = _data(9, np.float32)
    xb, wb = enp.asarray(x).astype("bfloat16"), enp.asarray(w).astype("bfloat16")
    got = F.linear_cross_entropy(xb, wb, enp.asarray(t), options=Opts(batch_chunk_size=4))
    assert got.dtype == np.dtype(xb.dtype)
    ref = F.linear_cross_entropy(xb.astype("float32"), wb.astype("float32"), enp.asarray(t))
    np.testing.assert_allclose(float(got), float(ref), rtol=1e-2)


@pytest.mark.parametrize("bias,out", [(False, ()), (True, ()), (True, (4, 3))])
def test_module_state_dict_matches_torch(bias, out):
    torch = pytest.importorskip("torch")
    cw = torch.rand(C, dtype=torch.float64)
    tm = torch.nn.LinearCrossEntropyLoss(I, C, out_features=out, bias=bias, weight=cw, dtype=torch.float64,
                                         label_smoothing=0.1)
    m = nn.LinearCrossEntropyLoss(I, C, out_features=out, bias=bias, weight=enp.ones(C, dtype="float64"),
                                  dtype="float64", label_smoothing=0.1)
    want = {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    assert {k: tuple(v.shape) for k, v in m.state_dict().items()} == want
    m.load_state_dict({k: v.numpy() for k, v in tm.state_dict().items()})
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, I))
    t = rng.integers(0, C, (6,) + out)
    ref = tm(torch.tensor(x), torch.tensor(t)).item()
    np.testing.assert_allclose(m(enp.asarray(x), enp.asarray(t)).item(), ref, rtol=1e-12)
    m.options = Opts(batch_chunk_size=4)
    np.testing.assert_allclose(m(enp.asarray(x), enp.asarray(t)).item(), ref, rtol=1e-12)
    assert "num_classes=7" in repr(m) and "linear" in dict(m.named_children())


@pytest.mark.parametrize("call,exc,words", [
    (lambda: F.linear_cross_entropy(enp.ones((2, 3, 4)), enp.ones((5, 4)), enp.zeros(2, "int32")),
     ValueError, ["input", "float32[2,3,4]"]),
    (lambda: F.linear_cross_entropy(enp.ones((2, 4)), enp.ones(4), enp.zeros(2, "int32")),
     ValueError, ["linear_weight", "float32[4]"]),
    (lambda: F.linear_cross_entropy(enp.ones((2, 4)), enp.ones((5, 3)), enp.zeros(2, "int32")),
     ValueError, ["in_features", "float32[2,4]", "float32[5,3]"]),
    (lambda: F.linear_cross_entropy(enp.ones((2, 4)), enp.ones((5, 4)), enp.zeros(3, "int32")),
     ValueError, ["(2,)", "int32[3]"]),
    (lambda: F.linear_cross_entropy(enp.ones((2, 4)), enp.ones((5, 4)), enp.zeros((2, 4))),
     ValueError, ["(2, 5)", "float32[2,4]"]),
    (lambda: F.linear_cross_entropy(enp.ones((2, 4)), enp.ones((5, 4)), enp.zeros((2, 5)), ignore_index=1),
     ValueError, ["ignore_index=1", "probabilities"]),
    (lambda: F.linear_cross_entropy(enp.ones((2, 4)), enp.ones((5, 4)), enp.zeros(2, "int32"),
                                    linear_bias=enp.ones(4)),
     ValueError, ["linear_bias", "(5,)", "float32[4]"]),
    (lambda: F.linear_cross_entropy(enp.ones(4), enp.ones((5, 2, 4)), enp.zeros(2, "int32")),
     ValueError, ["batched", "float32[4]"]),
    (lambda: F.linear_cross_entropy(enp.ones((2, 4)), enp.ones((5, 4)), enp.zeros(2, "int32"),
                                    weight=enp.ones(4)), ValueError, ["weight", "(5,)", "float32[4]"]),
    (lambda: F.linear_cross_entropy(enp.ones((2, 4)), enp.ones((5, 4)), enp.zeros(2, "int32"),
                                    reduction="avg"), ValueError, ["'avg'", "reduction"]),
    (lambda: F.linear_cross_entropy(enp.ones((2, 4)), enp.ones((5, 4)), enp.zeros(2, "int32"),
                                    label_smoothing=1.5), ValueError, ["1.5"]),
    (lambda: F.linear_cross_entropy(enp.ones((2, 4)), enp.ones((5, 4)), enp.asarray([0, 5]),
                                    options=Opts(batch_chunk_size=1)), IndexError, ["Target 5", "C=5"]),
    (lambda: F.linear_cross_entropy(enp.ones((2, 4)), enp.ones((5, 4)), enp.zeros(2, "int32"), options=4),
     TypeError, ["LinearCrossEntropyOptions", "int"]),
    (lambda: F.linear_cross_entropy(enp.ones((2, 4)), enp.ones((5, 4)), enp.zeros(2, "bool")),
     TypeError, ["bool[2]"]),
    (lambda: Opts(batch_chunk_size=0), ValueError, ["batch_chunk_size", "0"]),
    (lambda: Opts(chunking_method="rows"), ValueError, ["'rows'"]),
    (lambda: Opts(acc_policy="fast"), ValueError, ["'fast'"]),
    (lambda: Opts(acc_dtype="int32"), ValueError, ["acc_dtype", "int32"]),
    (lambda: nn.LinearCrossEntropyLoss(4, 0), ValueError, ["num_classes=0"]),
    (lambda: nn.LinearCrossEntropyLoss(4, 3, out_features=(2, 0)), ValueError, ["out_features=(2, 0)"]),
    (lambda: nn.LinearCrossEntropyLoss(4, 3, weight=enp.ones(2)), ValueError, ["(3,)", "(2,)"]),
    (lambda: nn.LinearCrossEntropyLoss(4, 3, label_smoothing=-0.1), ValueError, ["-0.1"]),
])
def test_errors_name_shapes_and_dtypes(call, exc, words):
    with pytest.raises(exc) as err:
        call()
    for w in words:
        assert w in str(err.value), (w, str(err.value))


def test_chunked_graph_does_not_grow_with_the_number_of_chunks_and_saves_the_weight_once():
    rng = np.random.default_rng(3)
    W = rng.standard_normal((11, 5)).astype(np.float32)

    def sizes(n):
        x = rng.standard_normal((n, 5)).astype(np.float32)
        t = rng.integers(0, 11, n).astype(np.int32)
        f = lambda x, W: F.linear_cross_entropy(x, W, t, options=Opts(batch_chunk_size=4))  # noqa: E731
        eqns = len(ember.make_graph(ember.grad(f, argnums=(0, 1)))(x, W).equations)
        weights = [a for a, _ in ember.saved_residuals(f, x, W) if a.shape == W.shape]
        return eqns, len(weights)

    assert sizes(4 * 3 + 1) == sizes(4 * 50 + 1)
    assert sizes(4 * 50 + 1)[1] == 1
