"""Loss functions against PyTorch 2.x: legacy reduction flags, error classes, edge-case
gradients and the multi-class / multi-label / distance losses.  Expected values are
literals computed with torch (float64) or computed here with numpy."""
import warnings

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn
from ember.nn import functional as F


def a64(x):
    return enp.asarray(np.asarray(x, np.float64))


def close(got, want, rtol=1e-9, atol=1e-12):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want, np.float64), rtol=rtol, atol=atol)


X = [[0.1, -0.4, 0.9, 0.3], [1.2, 0.0, -0.7, 0.5], [-0.3, 0.8, 0.2, -1.1]]
P = [[0.2, 0.1, 0.5, 0.0], [1.0, 0.3, -0.2, 0.1], [0.0, 0.5, 0.6, -0.9]]
N = [[0.0, -0.5, 1.0, 0.2], [-1.0, 0.3, 0.2, 0.4], [0.3, 0.6, -0.1, -1.0]]
Y = [2, 0, 3]
W = [0.5, 1.0, 2.0, 0.3]


def value_and_grad(f, x):
    return f(x), ember.grad(lambda v: enp.sum(f(v)))(x)


# 1. size_average / reduce -------------------------------------------------------------

# torch's legacy_get_string: None counts as True; reduce=False wins, then size_average
LEGACY = [((None, False), "none"), ((False, None), "sum"), ((True, True), "mean"),
          ((False, True), "sum"), ((True, False), "none"), ((None, True), "mean"),
          ((False, False), "none")]

LEGACY_CALLS = {
    "mse_loss": lambda **k: F.mse_loss(a64(X), a64(P), **k),
    "l1_loss": lambda **k: F.l1_loss(a64(X), a64(P), **k),
    "smooth_l1_loss": lambda **k: F.smooth_l1_loss(a64(X), a64(P), **k),
    "nll_loss": lambda **k: F.nll_loss(a64(X), enp.asarray(Y), **k),
    "cross_entropy": lambda **k: F.cross_entropy(a64(X), enp.asarray(Y), **k),
    "kl_div": lambda **k: F.kl_div(a64(X), a64(np.abs(P)), **k),
    "binary_cross_entropy": lambda **k: F.binary_cross_entropy(a64(np.full((2, 2), 0.3)), a64(np.eye(2)), **k),
    "binary_cross_entropy_with_logits": lambda **k: F.binary_cross_entropy_with_logits(a64(X), a64(np.abs(P)), **k),
    "soft_margin_loss": lambda **k: F.soft_margin_loss(a64(X), a64(np.sign(N)), **k),
    "hinge_embedding_loss": lambda **k: F.hinge_embedding_loss(a64(X), a64(np.sign(N)), **k),
    "poisson_nll_loss": lambda **k: F.poisson_nll_loss(a64(X), a64(np.abs(P)), **k),
    "margin_ranking_loss": lambda **k: F.margin_ranking_loss(a64(X[0]), a64(P[0]), a64([1, -1, 1, -1]), **k),
    "cosine_embedding_loss": lambda **k: F.cosine_embedding_loss(a64(X), a64(P), enp.asarray([1, -1, 1]), **k),
    "triplet_margin_loss": lambda **k: F.triplet_margin_loss(a64(X), a64(P), a64(N), **k),
    "multi_margin_loss": lambda **k: F.multi_margin_loss(a64(X), enp.asarray(Y), **k),
    "multilabel_margin_loss": lambda **k: F.multilabel_margin_loss(a64(X), enp.asarray([[3, 0, -1, 1]] * 3), **k),
    "multilabel_soft_margin_loss": lambda **k: F.multilabel_soft_margin_loss(a64(X), a64(np.abs(P)), **k),
}


@pytest.mark.parametrize("name", sorted(LEGACY_CALLS))
@pytest.mark.parametrize("flags,reduction", LEGACY)
def test_legacy_flags_map_to_reduction_with_warning(name, flags, reduction):
    call = LEGACY_CALLS[name]
    with pytest.warns(UserWarning, match=f"please use reduction='{reduction}' instead"):
        got = call(size_average=flags[0], reduce=flags[1], reduction="mean")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        want = call(reduction=reduction)
    close(got, want)


def test_legacy_flags_absent_means_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.mse_loss(a64(X), a64(P), reduction="sum")
        assert nn.MSELoss(reduction="sum").reduction == "sum"


@pytest.mark.parametrize("flags,reduction", LEGACY)
def test_legacy_flags_on_loss_classes(flags, reduction):
    for cls in (nn.MSELoss, nn.L1Loss, nn.NLLLoss, nn.CrossEntropyLoss, nn.BCELoss, nn.KLDivLoss,
                nn.MultiMarginLoss, nn.MultiLabelSoftMarginLoss, nn.SoftMarginLoss):
        with pytest.warns(UserWarning, match=f"reduction='{reduction}'"):
            m = cls(size_average=flags[0], reduce=flags[1])
        assert m.reduction == reduction, cls.__name__
    with pytest.warns(UserWarning):
        m = nn.CrossEntropyLoss(size_average=False)
    close(m(a64(X), enp.asarray(Y)), F.cross_entropy(a64(X), enp.asarray(Y), reduction="sum"))


# 2. cross entropy: ignore_index with probabilities, label smoothing -------------------

PR = [[0.24549353780771846, 0.22213173889444915, 0.33138161421274126, 0.20099310908509133],
      [0.45364863749341544, 0.22527524646422672, 0.13663634385487353, 0.1844397721874843],
      [0.20502685958056147, 0.33803214445532004, 0.37358329542676594, 0.08335770053735245]]


def test_cross_entropy_probabilities_reject_ignore_index():
    with pytest.raises(ValueError, match="ignore_index=1 is not supported for probability"):
        F.cross_entropy(a64(X), a64(PR), ignore_index=1)
    with pytest.raises(ValueError, match="ignore_index"):
        nn.CrossEntropyLoss(ignore_index=0)(a64(X), a64(PR))
    F.cross_entropy(a64(X), a64(PR), ignore_index=-100)  # the default is fine


# torch.nn.functional.cross_entropy(X, ..., weight=W, label_smoothing=0.2), float64
CE_LS = {
    ("index", "none"): [1.56193603303749, 0.6537164245718586, 0.8767203713102687],
    ("index", "mean"): 1.104418867471292,
    ("index", "sum"): 3.092372828919617,
    ("prob", "none"): [1.288965737757391, 1.4660054293379963, 1.4250236690519673],
    ("prob", "mean"): 1.3933316120491182,
    ("prob", "sum"): 4.179994836147355,
}
CE_LS_GRAD_MEAN = {
    "index": [[0.11757562557908188, 0.05887153121032605, -0.3256025890762504, 0.14915543228684244],
              [-0.04357995388002996, 0.014733805872607801, -0.019530099538472238, 0.048376247545894376],
              [0.016237929078662287, 0.057747202908319355, 0.005778258981076079, -0.07976339096805772]],
    "prob": [[0.02782090956226871, -0.03411989258474563, -0.05675999146777623, 0.06305897449025313],
             [0.07061139636273518, -0.034744190897714806, -0.08535151579743812, 0.04948431033241771],
             [0.02770429943407748, 0.08357909016167678, -0.128090793277589, 0.016807403681834785]],
}


@pytest.mark.parametrize("kind", ["index", "prob"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_label_smoothing_weight_vs_torch(kind, reduction):
    t = enp.asarray(Y) if kind == "index" else a64(PR)
    f = lambda x: F.cross_entropy(x, t, a64(W), reduction=reduction, label_smoothing=0.2)  # noqa: E731
    close(f(a64(X)), CE_LS[kind, reduction])
    if reduction == "mean":
        close(ember.grad(f)(a64(X)), CE_LS_GRAD_MEAN[kind])


# 3. gaussian_nll_loss --------------------------------------------------------------

def test_gaussian_nll_var_gradient_is_unclamped_like_torch():
    var = a64([1e-8, 0.5, 2.0])
    f = lambda v: F.gaussian_nll_loss(a64([0.0, 0.0, 0.0]), a64([1.0, 1.0, 1.0]), v, reduction="sum")  # noqa: E731
    val, g = value_and_grad(f, var)
    vc = np.maximum([1e-8, 0.5, 2.0], 1e-6)
    close(val, np.sum(0.5 * (np.log(vc) + 1.0 / vc)))
    # d/dv 0.5 (log v + d^2 / v) at the clamped v: torch gives [-5e11, -1, 0.125]
    close(g, 0.5 * (1.0 / vc - 1.0 / vc ** 2))
    assert float(np.asarray(g)[0]) < -4.9e11


def test_gaussian_nll_var_checks():
    x, t = a64(np.zeros((3, 2))), a64(np.ones((3, 2)))
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(x, t, a64(-np.ones((3, 2))))
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(x, t, -0.5)
    with pytest.raises(ValueError, match=r"incorrect size.*\(2,\).*\(3, 2\)"):
        F.gaussian_nll_loss(x, t, a64([1.0, 2.0]))
    # homoscedastic shapes: one fewer axis, a size-1 axis, a Python float
    v = np.array([0.5, 1.0, 2.0])
    want = np.mean(0.5 * (np.log(v[:, None]) + 1.0 / v[:, None]) * np.ones((3, 2)))
    close(F.gaussian_nll_loss(x, t, a64(v)), want)
    close(F.gaussian_nll_loss(x, t, a64(v[:, None])), want)
    close(F.gaussian_nll_loss(x, t, 0.5), 0.5 * (np.log(0.5) + 2.0))


# 4. class indices out of range -------------------------------------------------------

@pytest.mark.parametrize("bad", [4, -1, 7])
def test_out_of_range_targets_raise_index_error(bad):
    t = enp.asarray([0, bad, 1])
    with pytest.raises(IndexError, match=f"Target {bad} is out of bounds"):
        F.nll_loss(a64(X), t)
    with pytest.raises(IndexError, match=f"Target {bad} is out of bounds"):
        F.cross_entropy(a64(X), t, label_smoothing=0.1)
    with pytest.raises(IndexError, match=f"Target {bad} is out of bounds"):
        F.multi_margin_loss(a64(X), t)
    with pytest.raises(IndexError, match=f"Target {bad} is out of bounds"):
        nn.CrossEntropyLoss()(a64(X), t)


def test_out_of_range_ignore_index_is_allowed():
    t = enp.asarray([0, 4, 1])
    got = F.cross_entropy(a64(X), t, ignore_index=4, reduction="sum")
    want = F.cross_entropy(a64([X[0], X[2]]), enp.asarray([0, 1]), reduction="sum")
    close(got, want)


def test_multilabel_margin_out_of_range():
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        F.multilabel_margin_loss(a64(X), enp.asarray([[4, -1, 0, 0]] * 3))
    with pytest.raises(IndexError, match="Target -2 is out of bounds"):
        F.multilabel_margin_loss(a64(X), enp.asarray([[1, -2, -1, 0]] * 3))


def test_out_of_range_targets_under_jit_are_nan():
    t = enp.asarray([0, 4, 1])
    got = np.asarray(ember.jit(lambda x, y: F.nll_loss(x, y, reduction="none"))(a64(X), t))
    assert np.isnan(got[1]) and np.isfinite(got[[0, 2]]).all()
    assert np.isnan(np.asarray(ember.jit(lambda x, y: F.cross_entropy(x, y))(a64(X), t)))
    got = np.asarray(ember.jit(lambda x, y: F.multi_margin_loss(x, y, reduction="none"))(a64(X), t))
    assert np.isnan(got[1]) and np.isfinite(got[[0, 2]]).all()


def test_one_hot_out_of_range():
    with pytest.raises(ValueError, match="smaller than num_classes=3, got 3"):
        F.one_hot(enp.asarray([0, 3]), 3)
    with pytest.raises(ValueError, match="non-negative, got -1"):
        F.one_hot(enp.asarray([0, -1]), 3)
    with pytest.raises(ValueError, match="non-negative"):
        F.one_hot(enp.asarray([0, -1]))
    assert F.one_hot(enp.asarray([2, 0]), 3).tolist() == [[0, 0, 1], [1, 0, 0]]
    # under jit the values are unknown: an out-of-range index gives a zero row
    got = ember.jit(lambda t: F.one_hot(t, 3))(enp.asarray([1, 3, -1]))
    assert np.asarray(got).tolist() == [[0, 1, 0], [0, 0, 0], [0, 0, 0]]


def test_nll_all_targets_ignored_is_nan_with_zero_gradient():
    f = lambda lp: F.nll_loss(lp, enp.asarray(-100))  # noqa: E731
    val, g = value_and_grad(f, a64([-1.0, -2.0]))
    assert np.isnan(np.asarray(val))
    close(g, [0.0, 0.0])


# 5. shapes of binary losses, hinge formula ------------------------------------------

def test_binary_losses_reject_target_shape_mismatch():
    p, t = a64(np.full((3, 1), 0.4)), a64([1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match=r"target shape \(3,\) differs from input shape \(3, 1\)"):
        F.binary_cross_entropy(p, t)
    with pytest.raises(ValueError, match=r"target shape \(3, 1\) differs from input shape \(3,\)"):
        F.binary_cross_entropy(t, p)
    with pytest.raises(ValueError, match="differs from input shape"):
        F.binary_cross_entropy_with_logits(p, t)
    with pytest.raises(ValueError, match="differs from input shape"):
        nn.BCEWithLogitsLoss()(p, t)
    with pytest.raises(ValueError, match=r"keeps the input's shape"):
        F.soft_margin_loss(p, t)
    # a target that broadcasts to the input's shape is fine for soft_margin (as in torch)
    close(F.soft_margin_loss(a64(np.zeros((2, 3))), a64([1.0, -1.0, 1.0])), np.log(2.0))
    with pytest.raises(ValueError, match="same number of dimensions"):
        F.margin_ranking_loss(p, t, t)
    with pytest.raises(ValueError, match="same number of dimensions"):
        F.triplet_margin_loss(a64(X), a64(P), a64(N[0]))


def test_regression_losses_warn_when_broadcasting():
    with pytest.warns(UserWarning, match=r"target size \(3,\) that is different to the input size \(3, 1\)"):
        got = F.mse_loss(a64(np.zeros((3, 1))), a64([1.0, 2.0, 3.0]))
    close(got, np.mean(np.broadcast_to([1.0, 4.0, 9.0], (3, 3))))
    with pytest.warns(UserWarning, match="different to the input size"):
        F.l1_loss(a64(np.zeros((3, 1))), a64([1.0, 2.0, 3.0]))


def test_hinge_embedding_matches_torch_for_every_target_value():
    x = a64([0.3, -0.5, 2.0, 0.7, 1.0])
    y = a64([1.0, -1.0, -1.0, 0.5, -1.0])
    val, g = value_and_grad(lambda v: F.hinge_embedding_loss(v, y, reduction="none"), x)
    # torch: x where y != -1, plus max(0, margin - x) where y != 1; at margin - x = 0 the
    # clamp passes the gradient
    close(val, [0.3, 1.5, 0.0, 1.0, 0.0])
    close(g, [1.0, -1.0, 0.0, 0.0, -1.0])


# 6. values and gradients at edges ---------------------------------------------------

def test_bce_gradient_at_saturated_probabilities_is_torchs():
    p = a64([0.0, 1.0, 0.3])
    t = a64([1.0, 0.0, 0.5])
    val, g = value_and_grad(lambda v: F.binary_cross_entropy(v, t, reduction="sum"), p)
    close(val, 200.78032387413234)
    close(g, [-1000000003995.8029, 1000000003995.8029, -0.9523809523809524])


def test_margin_ties_follow_torch():
    a, b = a64([1.0, 2.0, 0.5]), a64([0.5, 2.0, 0.25])
    y = a64([1.0, 1.0, -1.0])
    f = lambda u, v: F.margin_ranking_loss(u, v, y, margin=0.5, reduction="sum")  # noqa: E731
    close(f(a, b), 1.25)
    ga, gb = ember.grad(f, argnums=(0, 1))(a, b)
    close(ga, [-1.0, -1.0, 1.0])
    close(gb, [1.0, 1.0, -1.0])
    # multi_margin counts a term only when it is > 0: no gradient at the tie
    val, g = value_and_grad(lambda v: F.multi_margin_loss(v, enp.asarray([1])), a64([[0.5, 1.5, 0.0, 1.0]]))
    close(val, 0.125)
    close(g, [[0.0, -0.25, 0.0, 0.25]])


def test_weighted_regression_means():
    x, t = a64([[0.5, -1.0], [2.0, 0.0]]), a64([[0.0, 1.0], [1.0, 1.0]])
    w = a64([[1.0, 2.0], [0.5, 0.0]])
    close(F.mse_loss(x, t, weight=w), 2.5)            # sum(w l) / sum(w)
    close(F.l1_loss(x, t, weight=w), 1.4285714285714286)
    close(F.huber_loss(x, t, weight=w), 0.84375)      # mean(w l)
    with pytest.raises(ValueError, match="weight must have the input's shape"):
        F.mse_loss(x, t, weight=a64([1.0, 2.0]))


def test_cosine_similarity_clamps_each_norm():
    got = F.cosine_similarity(a64([[1e-5, 2e-5]]), a64([[3e-5, -1e-5]]))
    close(got, [0.1414213562373095])
    val, g = value_and_grad(lambda u: F.cosine_similarity(u, a64([[1.0, 2.0, 2.0]])), a64(np.zeros((1, 3))))
    close(val, [0.0])
    close(g, [[33333333.333333332, 66666666.666666664, 66666666.666666664]], rtol=1e-7)


# 7. the multi-class, multi-label and distance losses ---------------------------------

MM = {  # F.multi_margin_loss(X, Y), p=1 margin=1, and p=2 margin=0.7 weight=W
    (1, "none"): [0.15, 0.075, 1.75], (1, "mean"): 0.6583333333333333, (1, "sum"): 1.975,
    (2, "none"): [0.005, 0.0, 0.97575], (2, "mean"): 0.32691666666666663, (2, "sum"): 0.98075,
}
MM_GRAD_SUM = {
    1: [[0.25, 0.0, -0.5, 0.25], [-0.25, 0.0, 0.0, 0.25], [0.25, 0.25, 0.25, -0.75]],
    2: [[0.0, 0.0, -0.1, 0.1], [0.0, 0.0, 0.0, 0.0], [0.225, 0.39, 0.3, -0.915]],
}


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multi_margin_loss_vs_torch(p, reduction):
    kw = dict(p=1) if p == 1 else dict(p=2, margin=0.7, weight=a64(W))
    close(F.multi_margin_loss(a64(X), enp.asarray(Y), reduction=reduction, **kw), MM[p, reduction])
    m = nn.MultiMarginLoss(reduction=reduction, **kw)
    close(m(a64(X), enp.asarray(Y)), MM[p, reduction])
    if reduction == "sum":
        g = ember.grad(lambda x: F.multi_margin_loss(x, enp.asarray(Y), reduction="sum", **kw))(a64(X))
        close(g, MM_GRAD_SUM[p], atol=1e-12)


def test_multi_margin_unbatched_and_argument_errors():
    close(F.multi_margin_loss(a64(X[2]), enp.asarray(3), reduction="none"), 1.75)
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        F.multi_margin_loss(a64(X), enp.asarray(Y), p=3)
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match=r"target must have shape \(3,\)"):
        F.multi_margin_loss(a64(X), enp.asarray([0, 1]))
    with pytest.raises(TypeError, match="class indices"):
        F.multi_margin_loss(a64(X), a64([0.0, 1.0, 2.0]))


def test_multilabel_margin_loss_vs_torch():
    t = enp.asarray([[3, 0, -1, 1], [0, 1, 2, 3], [-1, 1, 2, 3]])
    close(F.multilabel_margin_loss(a64(X), t, reduction="none"), [1.05, 0.0, 0.0])
    close(nn.MultiLabelMarginLoss()(a64(X), t), 0.35)
    g = ember.grad(lambda x: F.multilabel_margin_loss(x, t, reduction="sum"))(a64(X))
    close(g, [[-0.5, 0.5, 0.5, -0.5], [0.0] * 4, [0.0] * 4])
    close(F.multilabel_margin_loss(a64(X[0]), enp.asarray([3, 0, -1, 1]), reduction="none"), 1.05)


MLSM = {"none": [0.44345697631036796, 0.9433459018134772, 0.5201891561199635],
        "mean": 0.6356640114146028, "sum": 1.9069920342438085}


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multilabel_soft_margin_loss_vs_torch(reduction):
    t = a64([[1, 0, 1, 0], [0, 0, 1, 1], [1, 1, 1, 0]])
    close(F.multilabel_soft_margin_loss(a64(X), t, a64(W), reduction=reduction), MLSM[reduction])
    close(nn.MultiLabelSoftMarginLoss(a64(W), reduction=reduction)(a64(X), t), MLSM[reduction])
    if reduction == "mean":
        g = ember.grad(lambda x: F.multilabel_soft_margin_loss(x, t, a64(W)))(a64(X))
        close(g[1], [0.032021865979125735, 0.041666666666666664, -0.11136462869469434,
                     -0.009438516719953636])


def test_triplet_margin_with_distance_loss_vs_torch():
    f = lambda a: F.triplet_margin_with_distance_loss(a, a64(P), a64(N), swap=True, reduction="none")  # noqa: E731
    val, g = value_and_grad(f, a64(X))
    close(val, [1.5141419828775804, 0.0, 0.9093339286242401])
    close(g[0], [-0.6400290806347284, -1.200141004417879, 1.0601058240817105, -0.07991715685157769])

    def cos(u, v):
        return 1.0 - F.cosine_similarity(u, v)
    m = nn.TripletMarginWithDistanceLoss(distance_function=cos, margin=0.5, reduction="sum")
    close(m(a64(X), a64(P), a64(N)), 1.1924475017814329)
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        F.triplet_margin_with_distance_loss(a64(X), a64(P), a64(N), margin=0.0)
    with pytest.raises(ValueError, match="same number of dimensions"):
        F.triplet_margin_with_distance_loss(a64(X), a64(P[0]), a64(N))


def test_pairwise_distance_vs_torch():
    close(F.pairwise_distance(a64(X), a64(P)), [0.7141429828850803, 0.7348466506720978, 0.6164404269708469])
    close(F.pairwise_distance(a64(X), a64(P), p=1, keepdim=True), [[1.3], [1.4], [1.1999980000000001]])
    close(nn.PairwiseDistance(p=float("inf"))(a64(X), a64(P)), [0.499999, 0.49999899999999997, 0.399999])
    close(F.triplet_margin_loss(a64(X), a64(P), a64(N), reduction="none"),
          np.maximum(np.asarray(F.pairwise_distance(a64(X), a64(P)))
                     - np.asarray(F.pairwise_distance(a64(X), a64(N))) + 1.0, 0.0))


def test_new_losses_are_exported():
    for name in ("MultiMarginLoss", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss",
                 "TripletMarginWithDistanceLoss", "PairwiseDistance", "AdaptiveLogSoftmaxWithLoss"):
        assert name in nn.__all__ and hasattr(nn, name)
    for name in ("multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
                 "triplet_margin_with_distance_loss", "pairwise_distance"):
        assert name in F.__all__


# ctc_loss ---------------------------------------------------------------------------

def _ctc_setup():
    logits = np.random.default_rng(0).standard_normal((6, 3, 5))   # T=6, N=3, C=5
    return a64(logits), enp.asarray([6, 4, 5]), enp.asarray([3, 1, 2])


def test_ctc_nonzero_blank_vs_torch():
    x, il, tl = _ctc_setup()
    tg = enp.asarray([[1, 2, 2], [3, 0, 0], [3, 3, 1]])

    def f(z):
        return F.ctc_loss(F.log_softmax(z, dim=-1), tg, il, tl, blank=4, reduction="none")
    val, g = value_and_grad(f, x)
    close(val, [5.507014107881226, 5.336077151040045, 6.306432502685704], rtol=1e-9)
    close(np.asarray(g)[:, 2],
          [[0.19375594427313836, 0.376606091005851, 0.03533390680988799, -0.658551637037519, 0.05285569494864153],
           [0.2852775029834997, 0.12346415291040795, 0.10330902375959478, 0.01833963821929314, -0.5303903178727954],
           [0.023354282815192057, 0.37381824088590976, 0.3159934044551696, -0.5221764224097609, -0.19098950574651047],
           [0.2537978502095567, 0.2627701562509741, 0.34290682005560186, -0.470993454769995, -0.3884813717461376],
           [0.0843602243787352, 0.15865836327603985, 0.2185530150614977, -0.07120651962309944, -0.3903650830931734],
           [0.0] * 5], rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("label,exc,msg", [(5, IndexError, "label 5 at position 1, out of bounds for C=5"),
                                           (-1, IndexError, "label -1 at position 1"),
                                           (0, ValueError, "blank index 0 at position 1")])
def test_ctc_bad_labels_raise(label, exc, msg):
    x, il, tl = _ctc_setup()
    lp = F.log_softmax(x, dim=-1)
    tg = enp.asarray([[1, label, 2], [3, 0, 0], [4, 4, 1]])
    with pytest.raises(exc, match=msg):
        F.ctc_loss(lp, tg, il, tl)
    # padding past a target's length may hold anything (here the blank 0 of row 1)
    F.ctc_loss(lp, enp.asarray([[1, 2, 2], [3, 0, 0], [4, 4, 1]]), il, tl)
    # under jit the labels are unknown while tracing: that sequence's loss is NaN
    got = np.asarray(ember.jit(lambda t: F.ctc_loss(lp, t, il, tl, reduction="none"))(tg))
    assert np.isnan(got[0]) and np.isfinite(got[1:]).all()


def test_argument_checks_like_torch():
    x, t = a64([0.5, -1.0, 2.0]), a64([0.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="beta must be non-negative"):
        F.smooth_l1_loss(x, t, beta=-1.0)
    with pytest.raises(ValueError, match="delta must be positive"):
        F.huber_loss(x, t, delta=0.0)
    with pytest.raises(ValueError, match="'avg' is not a valid value for reduction.*batchmean"):
        F.kl_div(x, t, reduction="avg")
    a = a64(np.ones((3, 4)))
    for target in (a64(np.ones((3, 1))), a64(np.ones(2))):
        with pytest.raises(ValueError, match=r"cosine_embedding_loss: expected .* target \((3, 1|2,)\)"):
            F.cosine_embedding_loss(a, a, target)
    with pytest.raises(ValueError, match=r"input2 \(3, 5\)"):
        F.cosine_embedding_loss(a, a64(np.ones((3, 5))), a64(np.ones(3)))
    close(F.cosine_embedding_loss(a64([1.0, 0.0]), a64([0.0, 1.0]), enp.asarray(1)), 1.0)


def test_value_checks_also_run_under_grad():
    # under grad the values are known, so the eager errors still fire
    with pytest.raises(ValueError, match="negative"):
        ember.grad(lambda v: F.gaussian_nll_loss(a64([0.0, 1.0]), a64([1.0, 1.0]), v))(a64([-1.0, 1.0]))
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        ember.grad(lambda x: F.cross_entropy(x, enp.asarray([0, 4, 1])))(a64(X))


def _asm():
    m = nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4, 7], div_value=2.0, head_bias=True)
    rng = np.random.default_rng(0)
    # drawn in PyTorch's state_dict order, the literals below come from torch with these weights
    shapes = [("head.weight", (6, 8)), ("head.bias", (6,)), ("tail.0.0.weight", (4, 8)),
              ("tail.0.1.weight", (3, 4)), ("tail.1.0.weight", (2, 8)), ("tail.1.1.weight", (3, 2))]
    sd = {k: a64(rng.standard_normal(s) * 0.5) for k, s in shapes}
    assert {k: tuple(v.shape) for k, v in m.state_dict().items()} == dict(shapes)
    m.load_state_dict(sd)
    return m, a64(rng.standard_normal((4, 8)))


def test_adaptive_log_softmax_with_loss_vs_torch():
    m, x = _asm()
    t = enp.asarray([0, 5, 9, 3])
    out, loss = m(x, t)
    close(out, [-2.105855204698666, -2.80646839450568, -2.441746990636519, -2.107725775109541], rtol=1e-6)
    close(loss, 2.3654490912376014, rtol=1e-6)
    g = ember.grad(lambda v: m(v, t).loss)(x)
    close(np.asarray(g)[1], [-0.0644378672229178, -0.04753653650522273, 0.025738703748814415,
                             0.010426014576367368, -0.02258936611499462, 0.02286168959249403,
                             -0.12773167970682892, -0.09174037479246902], rtol=1e-5, atol=1e-7)
    close(np.asarray(m.log_prob(x))[2],
          [-1.311655239763182, -2.554296046380119, -1.9603009318257902, -1.8027452989032313,
           -2.581515615547002, -2.2497241874046, -3.0978748084918775, -4.887728298853574,
           -3.6329656885644193, -2.441746990636519], rtol=1e-6)
    assert np.asarray(m.predict(x)).tolist() == [3, 2, 0, 1]
    # unbatched
    o1, l1 = m(x[1], enp.asarray(5))
    close(o1, -2.80646839450568, rtol=1e-6)
    close(l1, 2.80646839450568, rtol=1e-6)


def test_adaptive_log_softmax_errors():
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[7, 4])
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4, 10])
    with pytest.raises(ValueError, match="length larger than 0"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[])
    m, x = _asm()
    with pytest.raises(IndexError, match="Target 10 is out of bounds"):
        m(x, enp.asarray([0, 10, 1, 2]))
    with pytest.raises(ValueError, match="same size in the batch dimension"):
        m(x, enp.asarray([0, 1]))
    with pytest.raises(ValueError, match="0-D target expects a 1-D input"):
        m(x, enp.asarray(1))
    got = ember.jit(lambda v, t: m(v, t).output)(x, enp.asarray([0, 10, 1, 2]))
    assert np.isnan(np.asarray(got)[1]) and np.isfinite(np.asarray(got)[[0, 2, 3]]).all()


def test_warnings_point_at_the_callers_line():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        F.mse_loss(a64([1.0, 2.0]), a64([0.0, 0.0]), size_average=False)
        nn.NLLLoss(reduce=False)
        F.l1_loss(a64(np.zeros((2, 1))), a64([0.0, 0.0]))
    assert len(caught) == 3
    assert all(w.filename == __file__ for w in caught), [w.filename for w in caught]
