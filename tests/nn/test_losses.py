"""Losses (functional and modules) against numpy references and, when installed, PyTorch."""
import numpy as np
import pytest
import scipy.special as sp

import ember
import ember.numpy as enp
from ember import nn
from ember.nn import functional as F
from ember.testing import check_grads

from _nn_helpers import np_, rnd


def _red(v, reduction):
    return {"none": v, "mean": v.mean(), "sum": v.sum()}[reduction]


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_regression_losses(reduction):
    x, t = rnd((4, 5)), rnd((4, 5), 1, scale=2.0)
    d = np_(x).astype(np.float64) - np_(t)
    ad = np.abs(d)
    cases = [
        (nn.MSELoss(reduction=reduction), d ** 2),
        (nn.L1Loss(reduction=reduction), ad),
        (nn.HuberLoss(reduction=reduction, delta=0.7), np.where(ad < 0.7, 0.5 * d ** 2, 0.7 * (ad - 0.35))),
        (nn.SmoothL1Loss(reduction=reduction, beta=0.7), np.where(ad < 0.7, 0.5 * d ** 2 / 0.7, ad - 0.35)),
        (nn.SmoothL1Loss(reduction=reduction, beta=0.0), ad),
    ]
    for mod, ref in cases:
        np.testing.assert_allclose(np_(mod(x, t)), _red(ref, reduction), rtol=1e-5, atol=1e-6,
                                   err_msg=type(mod).__name__)


def _ce_ref(x, t, w=None, ignore=-100, reduction="mean", ls=0.0):
    """Cross entropy over (N, C) logits with class indices, from the definition."""
    lp = x - sp.logsumexp(x, axis=1, keepdims=True)
    N, C = x.shape
    w = np.ones(C) if w is None else w
    valid = t != ignore
    tt = np.where(valid, t, 0)
    nll = -lp[np.arange(N), tt] * w[tt] * valid
    smooth = -(lp * w[None]).sum(1) * valid
    wsum = (w[tt] * valid).sum()
    if reduction == "mean":
        return (1 - ls) * nll.sum() / wsum + ls / C * smooth.sum() / wsum
    if reduction == "sum":
        return (1 - ls) * nll.sum() + ls / C * smooth.sum()
    return (1 - ls) * nll + ls / C * smooth


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ls", [0.0, 0.2])
def test_cross_entropy_indices(reduction, weighted, ls):
    x = rnd((6, 4), scale=3.0)
    t = np.array([0, 3, 1, -100, 2, 3])
    w = np.array([0.5, 1.0, 2.0, 0.3], np.float32) if weighted else None
    got = F.cross_entropy(x, enp.asarray(t), None if w is None else enp.asarray(w), ignore_index=-100,
                          reduction=reduction, label_smoothing=ls)
    ref = _ce_ref(np_(x).astype(np.float64), t, None if w is None else w.astype(np.float64), -100, reduction, ls)
    np.testing.assert_allclose(np_(got), ref, rtol=1e-5, atol=1e-6)


def test_cross_entropy_probabilities_and_nd():
    x = rnd((3, 4, 2, 2))  # (N, C, d1, d2)
    p = sp.softmax(np_(rnd((3, 4, 2, 2), 1)).astype(np.float64), axis=1)
    got = F.cross_entropy(x, enp.asarray(p.astype(np.float32)), label_smoothing=0.1)
    lp = np_(x) - sp.logsumexp(np_(x).astype(np.float64), axis=1, keepdims=True)
    pt = p * 0.9 + 0.1 / 4
    np.testing.assert_allclose(np_(got), -(lp * pt).sum(1).mean(), rtol=1e-5)
    t = np.random.default_rng(0).integers(0, 4, (3, 2, 2))
    got_i = F.cross_entropy(x, enp.asarray(t), reduction="none")
    ref_i = -np.take_along_axis(lp, t[:, None], 1)[:, 0]
    np.testing.assert_allclose(np_(got_i), ref_i, rtol=1e-5, atol=1e-6)
    # unbatched (C,) input
    np.testing.assert_allclose(np_(F.cross_entropy(x[0, :, 0, 0], enp.asarray(2))), -lp[0, 2, 0, 0], rtol=1e-5)


def test_cross_entropy_is_stable_and_differentiable():
    x = enp.asarray([[1000.0, -1000.0, 0.0]])
    assert np.isfinite(np_(F.cross_entropy(x, enp.asarray([1])))).all()
    check_grads(lambda v: F.cross_entropy(v, enp.asarray([0, 2]), label_smoothing=0.1),
                (np.random.default_rng(0).standard_normal((2, 3)),), order=2)
    g = ember.grad(lambda v: F.cross_entropy(v, enp.asarray([0, -100])))(rnd((2, 3)))
    assert np.allclose(np_(g)[1], 0.0)
    with pytest.raises(ValueError):
        F.cross_entropy(rnd((2, 3)), enp.asarray([0, 1]), label_smoothing=1.5)


def test_nll_and_bce_losses():
    lp = np.log(sp.softmax(np_(rnd((5, 3))).astype(np.float64), 1))
    t = np.array([0, 2, 1, 1, 0])
    w = np.array([1.0, 2.0, 0.5])
    got = nn.NLLLoss(weight=enp.asarray(w.astype(np.float32)))(enp.asarray(lp.astype(np.float32)), enp.asarray(t))
    ref = (-lp[np.arange(5), t] * w[t]).sum() / w[t].sum()
    np.testing.assert_allclose(np_(got), ref, rtol=1e-5)
    p = sp.expit(np_(rnd((4, 3), 1)).astype(np.float64))
    y = (np.random.default_rng(2).random((4, 3)) > 0.5).astype(np.float64)
    bce = nn.BCELoss()(enp.asarray(p.astype(np.float32)), enp.asarray(y.astype(np.float32)))
    np.testing.assert_allclose(np_(bce), -(y * np.log(p) + (1 - y) * np.log(1 - p)).mean(), rtol=1e-5)
    # log clamping at -100 as PyTorch
    assert float(F.binary_cross_entropy(enp.asarray([0.0]), enp.asarray([1.0]))) == 100.0
    logits = np_(rnd((4, 3), 3, scale=5.0)).astype(np.float64)
    pw = np.array([1.0, 3.0, 0.5])
    got = nn.BCEWithLogitsLoss(pos_weight=enp.asarray(pw.astype(np.float32)), reduction="none")(
        enp.asarray(logits.astype(np.float32)), enp.asarray(y.astype(np.float32)))
    s = sp.expit(logits)
    ref = -(pw * y * np.log(s) + (1 - y) * np.log(1 - s))
    np.testing.assert_allclose(np_(got), ref, rtol=1e-4, atol=1e-6)
    big = F.binary_cross_entropy_with_logits(enp.asarray([200.0, -200.0]), enp.asarray([0.0, 1.0]), reduction="none")
    np.testing.assert_allclose(np_(big), [200.0, 200.0], rtol=1e-6)


def test_kl_div_and_cosine_embedding():
    q = sp.softmax(np_(rnd((3, 4))).astype(np.float64), 1)
    p = sp.softmax(np_(rnd((3, 4), 1)).astype(np.float64), 1)
    p[0, 0] = 0.0
    lq = np.log(q)
    pt = np.where(p > 0, p * (np.log(np.where(p > 0, p, 1)) - lq), 0)
    for red, ref in (("sum", pt.sum()), ("mean", pt.mean()), ("batchmean", pt.sum() / 3), ("none", pt)):
        np.testing.assert_allclose(np_(nn.KLDivLoss(reduction=red)(enp.asarray(lq), enp.asarray(p))), ref,
                                   rtol=1e-6, atol=1e-9)
    lp = np.log(sp.softmax(np_(rnd((3, 4), 2)).astype(np.float64), 1))
    np.testing.assert_allclose(np_(F.kl_div(enp.asarray(lq), enp.asarray(lp), reduction="sum", log_target=True)),
                               (np.exp(lp) * (lp - lq)).sum(), rtol=1e-6)
    a, b = np_(rnd((4, 5))).astype(np.float64), np_(rnd((4, 5), 1)).astype(np.float64)
    y = np.array([1, -1, 1, -1])
    cos = (a * b).sum(1) / np.sqrt(((a * a).sum(1) + 1e-12) * ((b * b).sum(1) + 1e-12))
    ref = np.where(y == 1, 1 - cos, np.maximum(cos - 0.1, 0))
    got = nn.CosineEmbeddingLoss(margin=0.1, reduction="none")(enp.asarray(a), enp.asarray(b), enp.asarray(y))
    np.testing.assert_allclose(np_(got), ref, rtol=1e-6)


def test_other_losses():
    a, b = rnd((6,)), rnd((6,), 1)
    y = enp.asarray([1.0, -1.0, 1.0, 1.0, -1.0, -1.0])
    np.testing.assert_allclose(np_(F.margin_ranking_loss(a, b, y, 0.5)),
                               np.maximum(-np_(y) * (np_(a) - np_(b)) + 0.5, 0).mean(), rtol=1e-5)
    np.testing.assert_allclose(np_(F.soft_margin_loss(a, y)), np.log1p(np.exp(-np_(y) * np_(a))).mean(), rtol=1e-5)
    np.testing.assert_allclose(np_(F.poisson_nll_loss(a, enp.abs(b))),
                               (np.exp(np_(a)) - np.abs(np_(b)) * np_(a)).mean(),
                               rtol=1e-5)
    v = enp.abs(b) + 0.1
    np.testing.assert_allclose(np_(F.gaussian_nll_loss(a, b, v)),
                               (0.5 * (np.log(np_(v)) + (np_(a) - np_(b)) ** 2 / np_(v))).mean(), rtol=1e-5)


def test_losses_against_torch():
    torch = pytest.importorskip("torch")
    tF = torch.nn.functional
    x = np_(rnd((5, 4, 3), scale=2.0))
    t = np.array([[0, 3, 1], [2, -1, 3], [1, 1, 0], [3, 2, -1], [0, 0, 2]])
    w = np.array([0.3, 1.0, 2.0, 0.7], np.float32)
    for kw in (dict(), dict(weight=w), dict(ignore_index=-1), dict(label_smoothing=0.15),
               dict(weight=w, ignore_index=-1, label_smoothing=0.3), dict(reduction="sum", ignore_index=-1),
               dict(reduction="none", ignore_index=-1, weight=w, label_smoothing=0.1)):
        tk = {k: (torch.from_numpy(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        ek = {k: (enp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        tt = torch.from_numpy(np.where(t < 0, kw.get("ignore_index", -100), t))
        et = enp.asarray(np.where(t < 0, kw.get("ignore_index", -100), t))
        if "ignore_index" not in kw:
            tt = torch.from_numpy(np.abs(t))
            et = enp.asarray(np.abs(t))
        want = tF.cross_entropy(torch.from_numpy(x), tt, **tk).numpy()
        got = np_(nn.CrossEntropyLoss(**ek)(enp.asarray(x), et))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=str(kw))
    probs = sp.softmax(np_(rnd((5, 4, 3), 1)), axis=1).astype(np.float32)
    for kw in (dict(), dict(label_smoothing=0.2), dict(weight=w, reduction="sum")):
        tk = {k: (torch.from_numpy(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        ek = {k: (enp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        want = tF.cross_entropy(torch.from_numpy(x), torch.from_numpy(probs), **tk).numpy()
        got = np_(F.cross_entropy(enp.asarray(x), enp.asarray(probs), **ek))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=str(kw))
    logits = np_(rnd((4, 3), 2, scale=3.0))
    y = (np.random.default_rng(0).random((4, 3)) > 0.5).astype(np.float32)
    pw = np.array([2.0, 0.5, 1.0], np.float32)
    want = tF.binary_cross_entropy_with_logits(torch.from_numpy(logits), torch.from_numpy(y),
                                               pos_weight=torch.from_numpy(pw)).numpy()
    got = np_(F.binary_cross_entropy_with_logits(enp.asarray(logits), enp.asarray(y), pos_weight=enp.asarray(pw)))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    lq = np.log(sp.softmax(logits, 1)).astype(np.float32)
    p = sp.softmax(np_(rnd((4, 3), 5)), 1).astype(np.float32)
    for red in ("batchmean", "sum", "mean"):
        want = tF.kl_div(torch.from_numpy(lq), torch.from_numpy(p), reduction=red).numpy()
        np.testing.assert_allclose(np_(F.kl_div(enp.asarray(lq), enp.asarray(p), reduction=red)), want, rtol=1e-5)
    for fn, args in ((tF.huber_loss, dict(delta=0.5)), (tF.smooth_l1_loss, dict(beta=0.5))):
        want = fn(torch.from_numpy(logits), torch.from_numpy(y), **args).numpy()
        got = np_(getattr(F, fn.__name__)(enp.asarray(logits), enp.asarray(y), **args))
        np.testing.assert_allclose(got, want, rtol=1e-5)
    a, b = np_(rnd((4, 5))), np_(rnd((4, 5), 1))
    yy = np.array([1, -1, 1, -1])
    want = tF.cosine_embedding_loss(torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(yy), margin=0.2).numpy()
    got = np_(F.cosine_embedding_loss(enp.asarray(a), enp.asarray(b), enp.asarray(yy), margin=0.2))
    np.testing.assert_allclose(got, want, rtol=1e-5)


# --- half-precision counts and sums (audit #12 item 1) -----------------------------

@pytest.mark.parametrize("d", ["float16", "bfloat16"])
def test_half_losses_over_many_elements(d):
    import ember.numpy as enp
    from ember.nn import functional as F
    n = 65536
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(n, 4)).astype(np.float32)
    t = rng.integers(0, 4, n).astype(np.int32)
    lp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    want = -lp[np.arange(n), t].mean()
    lg = enp.asarray(logits).astype(d)
    for got in (F.cross_entropy(lg, enp.asarray(t)),
                F.cross_entropy(lg, enp.asarray(t), weight=enp.ones(4, dtype=d)),
                ember.jit(F.cross_entropy)(lg, enp.asarray(t))):
        assert got.dtype == np.dtype(lg.dtype)
        np.testing.assert_allclose(float(got), want, rtol=2e-2)
    smooth = F.cross_entropy(lg, enp.asarray(t), label_smoothing=0.1)
    want_s = 0.9 * want + 0.1 * (-lp.mean(1)).mean()
    np.testing.assert_allclose(float(smooth), want_s, rtol=2e-2)
    probs = np.eye(4, dtype=np.float32)[t]
    np.testing.assert_allclose(float(F.cross_entropy(lg, enp.asarray(probs).astype(d))), want,
                               rtol=2e-2)
    x = rng.uniform(0.5, 1.5, n).astype(np.float32)
    got = F.mse_loss(enp.asarray(x).astype(d), enp.zeros(n, dtype=d))
    np.testing.assert_allclose(float(got), (x * x).mean(), rtol=2e-2)
    got = F.kl_div(enp.zeros((n, 1), dtype=d), enp.ones((n, 1), dtype=d), reduction="batchmean")
    assert float(got) == 0.0


@pytest.mark.parametrize("d", ["float16", "bfloat16"])
def test_half_normalisation_over_many_elements(d):
    import ember.numpy as enp
    from ember.nn import functional as F
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, 100000)).astype(np.float32)
    xh = np.asarray(enp.asarray(x).astype(d)).astype(np.float64)
    want = (xh - xh.mean()) / np.sqrt(xh.var() + 1e-5)
    got = F.layer_norm(enp.asarray(x).astype(d), (100000,))
    np.testing.assert_allclose(np.asarray(got).astype(np.float64), want, atol=5e-2)
    xb = rng.normal(size=(70000, 2)).astype(np.float32)
    xbh = np.asarray(enp.asarray(xb).astype(d)).astype(np.float64)
    want = (xbh - xbh.mean(0)) / np.sqrt(xbh.var(0) + 1e-5)
    got = F.batch_norm(enp.asarray(xb).astype(d), None, None, training=True)
    np.testing.assert_allclose(np.asarray(got).astype(np.float64), want, atol=5e-2)


def test_half_embedding_bag_mean():
    import ember.numpy as enp
    from ember.nn import functional as F
    n = 70000
    w = enp.ones((3, 2), dtype="float16")
    idx = enp.asarray(np.ones((1, n), np.int32))
    got = F.embedding_bag(idx, w, mode="mean", padding_idx=0)
    assert got.tolist() == [[1.0, 1.0]]


@pytest.mark.parametrize("loss", ["huber", "smooth_l1"])
def test_huber_and_smooth_l1_hessians_at_zero_residual(loss):
    # the quadratic piece 0.5 r**2 / beta has second derivative 1 / beta at r == 0 too;
    # squared through abs(r) (derivative sign(0) = 0) it came out 0
    t = np.array([0.5, 0.0, 2.3])
    x = np.array([0.5, 1.5, 2.0])          # residuals 0, 1.5 (linear piece), -0.3
    if loss == "huber":
        f = lambda v: F.huber_loss(v, t, delta=0.8, reduction="sum")  # noqa: E731
        want = [1.0, 0.0, 1.0]
    else:
        f = lambda v: F.smooth_l1_loss(v, t, beta=0.8, reduction="sum")  # noqa: E731
        want = [1 / 0.8, 0.0, 1 / 0.8]
    np.testing.assert_allclose(np.asarray(ember.hessian(f)(x)), np.diag(want), rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(np.asarray(ember.jit(ember.hessian(f))(x)), np.diag(want), rtol=1e-14, atol=1e-14)
    ember.testing.check_grads(f, (x + np.array([0.1, 0.0, 0.0]),), order=2)


def test_pairwise_distance_hessian_where_a_difference_is_zero():
    # ||x1 - x2 + eps||**2 has Hessian 2 I in x1; through abs(r) * abs(r) the entry of
    # the component with r == 0 (x1 - x2 == -eps) came out 0
    x2 = np.array([[1e-6, 0.0, 0.5]])
    x1 = np.array([[0.0, 1.0, -0.5]])
    h = ember.hessian(lambda v: F.pairwise_distance(v, x2)[0] ** 2)(x1)
    np.testing.assert_allclose(np.asarray(h).reshape(3, 3), 2 * np.eye(3), rtol=1e-12, atol=1e-12)
