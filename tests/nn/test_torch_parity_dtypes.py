"""Differential test against PyTorch: every loss in `ember.nn.functional` (and the
`ember.nn` loss modules), the common activations and the normalisations, called with
float16 / bfloat16 / float32 / float64 (and integer) arguments in every combination,
with 0-d and size-0 inputs, and with each reduction.  Where torch answers, ember must
give the same result dtype and the same values (to the rounding of the least precise
dtype involved); where torch raises, ember must raise too (TypeError / ValueError /
IndexError / RuntimeError) and, for a dtype mismatch, name the dtypes as users type
them ("float32").

Deliberate differences (torch's CPU build lacks a kernel that its CUDA build has, so
ember answering is not a silent difference): `KNOWN_CPU_GAPS`.
"""
import itertools
import re
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402

import ember.numpy as enp  # noqa: E402
from ember import nn  # noqa: E402
from ember.nn import functional as F  # noqa: E402

FLOATS = ["float16", "bfloat16", "float32", "float64"]
TOL = {"float16": 1e-2, "bfloat16": 5e-2, "float32": 2e-5, "float64": 1e-9}
ERRORS = (TypeError, ValueError, IndexError, RuntimeError)

rng = np.random.default_rng(0)
X = rng.standard_normal((3, 4))
T = rng.standard_normal((3, 4))
PROB = rng.uniform(0.05, 0.95, (3, 4))
TB = rng.uniform(0.0, 1.0, (3, 4))
SIGN = np.sign(rng.standard_normal((3, 4)))
Y = np.array([2, 0, 3])
W = np.array([0.5, 1.0, 2.0, 0.3])
POS = np.abs(rng.standard_normal((3, 4))) + 0.1


def to_torch(a, d):
    if a is None:
        return None
    a = np.asarray(a)
    if d in FLOATS:
        return torch.tensor(a.astype(np.float64)).to(getattr(torch, d))
    return torch.tensor(a.astype(d))


def to_ember(a, d):
    if a is None:
        return None
    a = np.asarray(a)
    if d in FLOATS:
        return enp.asarray(a.astype(np.float64)).astype(d)
    return enp.asarray(a.astype(d))


def outcome_torch(f, arrays, dts, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = f(*[to_torch(a, d) for a, d in zip(arrays, dts)], **kw)
        except Exception as ex:  # noqa: BLE001 - any torch refusal counts
            return "error", ex
    return str(r.dtype).replace("torch.", ""), r.detach().to(torch.float64).numpy()


def outcome_ember(f, arrays, dts, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = f(*[to_ember(a, d) for a, d in zip(arrays, dts)], **kw)
        except ERRORS as ex:
            return "error", ex
    return str(r.dtype), np.asarray(r.astype("float64"))


# torch's CPU build has no half kernel for these (its CUDA build has): ember answers
KNOWN_CPU_GAPS = ("not implemented for 'Half'", "not implemented for 'BFloat16'")


def compare(f_ember, f_torch, arrays, dts, kw=None):
    """None when ember agrees with torch, else a line saying how they differ."""
    kw = kw or {}
    td, tv = outcome_torch(f_torch, arrays, dts, kw)
    ed, ev = outcome_ember(f_ember, arrays, dts, kw)
    where = f"dtypes {dts} {kw}"
    if td == "error":
        if isinstance(tv, NotImplementedError) and any(g in str(tv) for g in KNOWN_CPU_GAPS):
            return None
        if ed != "error":
            return f"{where}: torch raises {type(tv).__name__}({str(tv)[:80]!r}), ember returns {ed}"
        msg = str(ev)
        if not msg:
            return f"{where}: ember raises {type(ev).__name__} with no message"
        if re.search(r"dtype|scalar type|Found", str(tv)) and not any(d in msg for d in dts):
            return f"{where}: ember's dtype error does not name the dtypes: {msg!r}"
        return None
    if ed == "error":
        return f"{where}: torch returns {td}, ember raises {type(ev).__name__}: {ev}"
    if td != ed:
        return f"{where}: torch returns {td}, ember {ed}"
    if tv.shape != ev.shape:
        return f"{where}: torch's shape {tv.shape}, ember's {ev.shape}"
    tol = max(TOL.get(d, 0.0) for d in set(dts) | {td})
    if not np.allclose(tv, ev, rtol=tol, atol=tol, equal_nan=True):
        return f"{where}: values differ (max |diff| {np.nanmax(np.abs(tv - ev)):.3g}, tol {tol})"
    return None


def check_all(f_ember, f_torch, arrays, dtype_sets, kw=None):
    bad = [m for dts in dtype_sets if (m := compare(f_ember, f_torch, arrays, dts, kw))]
    assert not bad, f"{len(bad)} mismatches with torch:\n" + "\n".join(bad[:20])


def with_y(fn, y=Y):
    """fn with the class-index target (int64) bound as its second argument."""
    return lambda x, *rest, **k: fn(x, y_of(x, y), *rest, **k)


def y_of(x, y):
    return torch.tensor(y) if isinstance(x, torch.Tensor) else enp.asarray(y)


def kwarg(fn, *names):
    """fn(a, b, c=...) called positionally as fn(a, b, c) for the named keywords."""
    n = len(names)

    def call(*args, **k):
        pos, extra = args[:len(args) - n], args[len(args) - n:]
        return fn(*pos, **dict(zip(names, extra)), **k)
    return call


# name: (ember, torch, arrays); each array gets each float dtype in turn
LOSSES = {
    "mse_loss": (F.mse_loss, TF.mse_loss, [X, T]),
    "l1_loss": (F.l1_loss, TF.l1_loss, [X, T]),
    "huber_loss": (F.huber_loss, TF.huber_loss, [X, T]),
    "smooth_l1_loss": (F.smooth_l1_loss, TF.smooth_l1_loss, [X, T]),
    "binary_cross_entropy": (F.binary_cross_entropy, TF.binary_cross_entropy, [PROB, TB]),
    "binary_cross_entropy+weight": (kwarg(F.binary_cross_entropy, "weight"),
                                    kwarg(TF.binary_cross_entropy, "weight"), [PROB, TB, POS]),
    "bce_with_logits": (F.binary_cross_entropy_with_logits, TF.binary_cross_entropy_with_logits,
                        [X, TB]),
    "bce_with_logits+weight": (kwarg(F.binary_cross_entropy_with_logits, "weight"),
                               kwarg(TF.binary_cross_entropy_with_logits, "weight"), [X, TB, POS]),
    "bce_with_logits+pos_weight": (kwarg(F.binary_cross_entropy_with_logits, "pos_weight"),
                                   kwarg(TF.binary_cross_entropy_with_logits, "pos_weight"),
                                   [X, TB, W]),
    "kl_div": (F.kl_div, TF.kl_div, [X, TB]),
    "kl_div+log_target": (lambda a, b, **k: F.kl_div(a, b, log_target=True, **k),
                          lambda a, b, **k: TF.kl_div(a, b, log_target=True, **k), [X, T]),
    "poisson_nll_loss": (F.poisson_nll_loss, TF.poisson_nll_loss, [X, TB]),
    "gaussian_nll_loss": (F.gaussian_nll_loss, TF.gaussian_nll_loss, [X, T, POS]),
    "cross_entropy+probs": (F.cross_entropy, TF.cross_entropy, [X, TB]),
    "cross_entropy+probs+weight": (kwarg(F.cross_entropy, "weight"), kwarg(TF.cross_entropy, "weight"),
                                   [X, TB, W]),
    "cross_entropy+index+weight": (with_y(kwarg(F.cross_entropy, "weight")),
                                   with_y(kwarg(TF.cross_entropy, "weight")), [X, W]),
    "cross_entropy+index+smoothing": (with_y(lambda x, y, **k: F.cross_entropy(x, y, label_smoothing=0.1, **k)),
                                      with_y(lambda x, y, **k: TF.cross_entropy(x, y, label_smoothing=0.1, **k)),
                                      [X]),
    "nll_loss+weight": (with_y(kwarg(F.nll_loss, "weight")), with_y(kwarg(TF.nll_loss, "weight")),
                        [X, W]),
    "soft_margin_loss": (F.soft_margin_loss, TF.soft_margin_loss, [X, SIGN]),
    "hinge_embedding_loss": (F.hinge_embedding_loss, TF.hinge_embedding_loss, [X, SIGN]),
    "multilabel_soft_margin_loss": (F.multilabel_soft_margin_loss, TF.multilabel_soft_margin_loss,
                                    [X, TB]),
    "multilabel_soft_margin_loss+weight": (kwarg(F.multilabel_soft_margin_loss, "weight"),
                                           kwarg(TF.multilabel_soft_margin_loss, "weight"), [X, TB, W]),
    "multi_margin_loss+weight": (with_y(kwarg(F.multi_margin_loss, "weight")),
                                 with_y(kwarg(TF.multi_margin_loss, "weight")), [X, W]),
    "multilabel_margin_loss": (with_y(F.multilabel_margin_loss, np.array([[3, 0, -1, 1]] * 3)),
                               with_y(TF.multilabel_margin_loss, np.array([[3, 0, -1, 1]] * 3)), [X]),
    "margin_ranking_loss": (F.margin_ranking_loss, TF.margin_ranking_loss, [X[0], T[0], SIGN[0]]),
    "cosine_embedding_loss": (with_y(lambda a, y, b, **k: F.cosine_embedding_loss(a, b, y, **k),
                                     np.array([1, -1, 1])),
                              with_y(lambda a, y, b, **k: TF.cosine_embedding_loss(a, b, y, **k),
                                     np.array([1, -1, 1])), [X, T]),
    "triplet_margin_loss": (F.triplet_margin_loss, TF.triplet_margin_loss, [X, T, PROB]),
    "triplet_margin_with_distance_loss": (F.triplet_margin_with_distance_loss,
                                          TF.triplet_margin_with_distance_loss, [X, T, PROB]),
}


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_dtypes_match_torch(name, reduction):
    fe, ft, arrays = LOSSES[name]
    check_all(fe, ft, arrays, list(itertools.product(FLOATS, repeat=len(arrays))),
              dict(reduction=reduction))


# integer (and bool) arguments where torch wants floats, or accepts them
INT_CASES = [("float32", "int64"), ("float16", "int64"), ("float64", "int32"), ("int64", "float32"),
             ("int64", "int64"), ("float32", "bool"), ("bool", "float32")]
INT_LOSSES = ["mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss", "binary_cross_entropy",
              "bce_with_logits", "kl_div", "poisson_nll_loss", "cross_entropy+probs",
              "soft_margin_loss", "hinge_embedding_loss", "multilabel_soft_margin_loss"]


@pytest.mark.parametrize("name", INT_LOSSES)
def test_loss_integer_arguments_match_torch(name):
    fe, ft, arrays = LOSSES[name]
    ints = [np.round(np.abs(a) * 2) for a in arrays]   # integral values, valid as targets
    check_all(fe, ft, ints, INT_CASES, dict(reduction="mean"))


@pytest.mark.parametrize("name", ["pairwise_distance", "cosine_similarity"])
def test_distances_dtypes_match_torch(name):
    fe, ft = getattr(F, name), getattr(TF, name)
    check_all(fe, ft, [X, T], list(itertools.product(FLOATS, repeat=2)))
    check_all(fe, ft, [np.round(X), np.round(T)], [("float32", "int64"), ("int64", "int64")])
    if name == "cosine_similarity":   # torch refuses two integer arrays: the error says x1, x2
        with pytest.raises(TypeError, match=r"x1 \(int64\) and x2 \(int64\)"):
            fe(enp.asarray(np.ones((2, 3), np.int64)), enp.asarray(np.ones((2, 3), np.int64)))


def test_class_weight_dtype_error_is_clear():
    x, y = enp.asarray(X.astype(np.float32)), enp.asarray(Y)
    w = enp.asarray(W.astype(np.float64))
    for f in (F.cross_entropy, F.nll_loss, F.multi_margin_loss):
        with pytest.raises(TypeError, match=r"weight \(float64\) must have the input's dtype "
                                            r"\(float32\).*Hint: weight.astype\('float32'\)"):
            f(x, y, weight=w)
    # a Python list has no dtype of its own: it takes the input's, as before
    assert F.cross_entropy(x, y, weight=W.tolist()).dtype == "float32"


def test_bce_dtype_error_names_both():
    with pytest.raises(TypeError, match=r"input \(float32\) and target \(float64\) must have the "
                                        r"same dtype.*target.astype\('float32'\)"):
        F.binary_cross_entropy(enp.asarray(PROB.astype(np.float32)), enp.asarray(TB))


# 0-d and size-0 inputs, each reduction -----------------------------------------------

SHAPE_LOSSES = ["mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss", "binary_cross_entropy",
                "bce_with_logits", "kl_div", "poisson_nll_loss", "soft_margin_loss",
                "hinge_embedding_loss", "gaussian_nll_loss"]


@pytest.mark.parametrize("shape", [(), (0,), (0, 4)])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name", SHAPE_LOSSES)
def test_loss_0d_and_empty_match_torch(name, reduction, shape):
    fe, ft, arrays = LOSSES[name]
    arrays = [np.resize(a, shape) if np.prod(shape) else np.zeros(shape) + 0.5 for a in arrays]
    check_all(fe, ft, arrays, [("float32",) * len(arrays), ("float64",) * len(arrays)],
              dict(reduction=reduction))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_class_losses_empty_batch_match_torch(reduction):
    e = np.zeros((0, 4))
    y = np.zeros((0,), np.int64)
    for fe, ft in ((F.cross_entropy, TF.cross_entropy), (F.nll_loss, TF.nll_loss)):
        check_all(with_y(fe, y), with_y(ft, y), [e], [("float32",), ("float64",)],
                  dict(reduction=reduction))


def test_ctc_loss_dtypes_match_torch():
    lp = np.log(rng.dirichlet(np.ones(5), size=(6, 2)))            # T=6, N=2, C=5

    def call(mod):
        def f(x, **k):
            tg = mod.tensor if mod is torch else enp.asarray
            return (TF if mod is torch else F).ctc_loss(
                x, tg(np.array([[1, 2, 3], [2, 2, 0]])), tg(np.array([6, 5])), tg(np.array([3, 2])), **k)
        return f
    for red in ("none", "mean", "sum"):
        check_all(call(enp), call(torch), [lp], [("float32",), ("float64",)], dict(reduction=red))


# the nn loss modules ------------------------------------------------------------------

MODULES = [  # (class name, constructor kwargs (arrays get a dtype), arrays for the call)
    ("MSELoss", {}, [X, T]), ("L1Loss", {}, [X, T]), ("HuberLoss", {}, [X, T]),
    ("SmoothL1Loss", {}, [X, T]), ("BCELoss", {"weight": POS}, [PROB, TB]),
    ("BCEWithLogitsLoss", {"pos_weight": W}, [X, TB]), ("KLDivLoss", {}, [X, TB]),
    ("CrossEntropyLoss", {"weight": W}, [X, TB]), ("CrossEntropyLoss", {"weight": W}, [X]),
    ("NLLLoss", {"weight": W}, [X]), ("SoftMarginLoss", {}, [X, SIGN]),
    ("HingeEmbeddingLoss", {}, [X, SIGN]), ("PoissonNLLLoss", {}, [X, TB]),
    ("GaussianNLLLoss", {}, [X, T, POS]), ("MultiLabelSoftMarginLoss", {"weight": W}, [X, TB]),
    ("MultiMarginLoss", {"weight": W}, [X]), ("TripletMarginLoss", {}, [X, T, PROB]),
    ("MarginRankingLoss", {}, [X[0], T[0], SIGN[0]]),
]


@pytest.mark.parametrize("case", range(len(MODULES)),
                         ids=[f"{m[0]}-{len(m[2])}" for m in MODULES])
def test_loss_modules_match_torch(case):
    cls, kw, arrays = MODULES[case]
    index_target = len(arrays) == 1
    n_kw = len(kw)
    bad = []
    for dts in itertools.product(FLOATS, repeat=len(arrays) + n_kw):
        adts, kdts = dts[:len(arrays)], dts[len(arrays):]
        for red in ("none", "mean"):
            def make(mod, conv, nsp):
                def f(*args, **_):
                    k = {name: conv(v, d) for (name, v), d in zip(kw.items(), kdts)}
                    loss = getattr(nsp, cls)(reduction=red, **k)
                    if index_target:
                        return loss(args[0], y_of(args[0], Y))
                    return loss(*args)
                return f
            try:
                fe = make(enp, to_ember, nn)
                m = compare(fe, make(torch, to_torch, torch.nn), arrays, adts + kdts)
            except ERRORS as ex:   # constructing the module itself refused the dtype
                m = f"{cls}{dts}: constructor raised {ex}"
            if m:
                bad.append(f"{cls}(kw dtypes {kdts}) {m}")
    assert not bad, f"{len(bad)} mismatches with torch:\n" + "\n".join(bad[:20])


# activations and normalisations ---------------------------------------------------------

X3 = rng.standard_normal((2, 3, 4))
ACTIVATIONS = ["relu", "relu6", "leaky_relu", "elu", "selu", "celu", "gelu", "silu", "sigmoid",
               "tanh", "softplus", "softsign", "mish", "hardswish", "hardsigmoid", "hardtanh",
               "logsigmoid", "tanhshrink", "softshrink", "hardshrink"]


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_dtypes_match_torch(name):
    check_all(getattr(F, name), getattr(TF, name), [X3], [(d,) for d in FLOATS])
    check_all(getattr(F, name), getattr(TF, name), [np.zeros(())], [(d,) for d in FLOATS])
    check_all(getattr(F, name), getattr(TF, name), [np.zeros((0, 3))], [(d,) for d in FLOATS])


INTS = [np.round(X3 * 3)]


@pytest.mark.parametrize("name", ACTIVATIONS + ["tanhshrink", "softsign"])
def test_activation_integer_input_matches_torch(name):
    # torch: most refuse integers (ember: TypeError), sigmoid/tanh give float32,
    # relu/relu6/hardtanh keep int64
    check_all(getattr(F, name), getattr(TF, name), INTS, [("int64",), ("int32",)])


def test_threshold_glu_normalize_softmax_integer_input_matches_torch():
    for fe, ft in ((lambda x: F.threshold(x, 0.1, 20.0), lambda x: TF.threshold(x, 0.1, 20.0)),
                   (lambda x: F.glu(x, dim=-1), lambda x: TF.glu(x, dim=-1)),
                   (F.normalize, TF.normalize),
                   (lambda x: F.softmax(x, dim=1), lambda x: TF.softmax(x, dim=1)),
                   (lambda x: F.log_softmax(x, dim=1), lambda x: TF.log_softmax(x, dim=1)),
                   (lambda x: F.softmin(x, dim=1), lambda x: TF.softmin(x, dim=1)),
                   (lambda x: F.softmax(x, dim=1, dtype="float64"),
                    lambda x: TF.softmax(x, dim=1, dtype=torch.float64))):
        check_all(fe, ft, INTS, [("int64",)])


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_softmax_family_dtypes_match_torch(name):
    fe, ft = getattr(F, name), getattr(TF, name)
    for out in [None] + FLOATS:
        check_all(lambda x: fe(x, dim=1, dtype=out),
                  lambda x: ft(x, dim=1, dtype=None if out is None else getattr(torch, out)),
                  [X3], [(d,) for d in FLOATS])
    check_all(lambda x: fe(x, dim=0), lambda x: ft(x, dim=0), [np.zeros((0, 3))],
              [(d,) for d in FLOATS])


def test_gelu_tanh_glu_normalize_dtypes_match_torch():
    for fe, ft in ((lambda x: F.gelu(x, approximate="tanh"), lambda x: TF.gelu(x, approximate="tanh")),
                   (lambda x: F.glu(x, dim=-1), lambda x: TF.glu(x, dim=-1)),
                   (F.normalize, TF.normalize)):
        check_all(fe, ft, [X3], [(d,) for d in FLOATS])


W3, B3, W4, B4 = (rng.standard_normal(n) for n in (3, 3, 4, 4))
NORMS = {
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (4,), w, b),
                   lambda x, w, b: TF.layer_norm(x, (4,), w, b), [X3, W4, B4]),
    "group_norm": (lambda x, w, b: F.group_norm(x, 3, w, b),
                   lambda x, w, b: TF.group_norm(x, 3, w, b), [X3, W3, B3]),
    "batch_norm": (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                   lambda x, w, b: TF.batch_norm(x, None, None, w, b, training=True), [X3, W3, B3]),
    "instance_norm": (lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
                      lambda x, w, b: TF.instance_norm(x, weight=w, bias=b), [X3, W3, B3]),
    "rms_norm": (lambda x, w: F.rms_norm(x, (4,), w), lambda x, w: TF.rms_norm(x, (4,), w), [X3, W4]),
    "prelu": (F.prelu, TF.prelu, [X3, np.abs(W3)]),
}


@pytest.mark.parametrize("name", sorted(NORMS))
def test_normalisation_dtypes_match_torch(name):
    fe, ft, arrays = NORMS[name]
    check_all(fe, ft, arrays, list(itertools.product(FLOATS, repeat=len(arrays))))


def test_norm_param_dtype_error_is_clear():
    x = enp.asarray(X3.astype(np.float32))
    with pytest.raises(TypeError, match=r"layer_norm: weight \(float64\) must have the input's "
                                        r"dtype \(float32\).*Hint"):
        F.layer_norm(x, (4,), enp.asarray(W4))
    with pytest.raises(TypeError, match=r"weight and bias must have one dtype"):
        F.layer_norm(x.astype("float16"), (4,), enp.asarray(W4.astype(np.float32)),
                     enp.asarray(B4.astype(np.float16)))
