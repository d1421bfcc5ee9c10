"""Loss modules (PyTorch names and arguments) over `ember.nn.functional`.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.CrossEntropyLoss(label_smoothing=0.1)(enp.zeros((2, 3)), enp.asarray([0, 2])).shape
    ()
"""
from __future__ import annotations

from collections import namedtuple

from . import functional as F
from .functional.loss import legacy_reduction
from .functional.loss_linear import LinearCrossEntropyOptions, check_settings
from .module import Module

__all__ = ["MSELoss", "L1Loss", "HuberLoss", "SmoothL1Loss", "CrossEntropyLoss", "NLLLoss", "BCELoss",
           "BCEWithLogitsLoss", "KLDivLoss", "CosineEmbeddingLoss", "MarginRankingLoss",
           "HingeEmbeddingLoss", "SoftMarginLoss", "PoissonNLLLoss", "GaussianNLLLoss",
           "TripletMarginLoss", "CosineSimilarity", "CTCLoss", "MultiMarginLoss",
           "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "TripletMarginWithDistanceLoss",
           "PairwiseDistance", "AdaptiveLogSoftmaxWithLoss", "LinearCrossEntropyLoss",
           "LinearCrossEntropyOptions"]


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        # the deprecated flags are resolved (with PyTorch's warning) once, here
        self.reduction = legacy_reduction(size_average, reduce, reduction)

    def extra_repr(self):
        return f"reduction={self.reduction!r}" if self.reduction != "mean" else ""


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        # the class weights are state, not trained: a buffer as in PyTorch
        self.register_buffer("weight", None if weight is None else F._util.float_arr(weight))


class MSELoss(_Loss):
    """Mean squared error.

    Example:
        >>> import ember.numpy as enp
        >>> MSELoss(reduction="sum")(enp.zeros(2), enp.ones(2)).item()
        2.0
    """

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error.

    Example:
        >>> import ember.numpy as enp
        >>> L1Loss()(enp.zeros(2), enp.ones(2)).item()
        1.0
    """

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class HuberLoss(_Loss):
    """Huber loss with threshold `delta`.

    Example:
        >>> HuberLoss(delta=2.0).delta
        2.0
    """

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, self.reduction, self.delta)


class SmoothL1Loss(_Loss):
    """Smooth L1 loss with threshold `beta`.

    Example:
        >>> SmoothL1Loss(beta=0.5).beta
        0.5
    """

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy over logits with class indices or probabilities, `weight`,
    `ignore_index` and `label_smoothing` (see `functional.cross_entropy`).

    Example:
        >>> import ember.numpy as enp
        >>> round(CrossEntropyLoss()(enp.zeros((1, 2)), enp.asarray([1])).item(), 4)
        0.6931
    """

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class LinearCrossEntropyLoss(_WeightedLoss):
    """Cross entropy of the logits of its own `linear` layer (in_features ->
    num_classes x out_features), computed by `functional.linear_cross_entropy`
    (in chunks when `options` is a `LinearCrossEntropyOptions`).  As in PyTorch the
    layer's storage is flat, `linear.weight` (C * prod(out_features), in_features)
    and `linear.bias` (C * prod(out_features),), reshaped in `forward`, so state
    dicts are interchangeable with PyTorch's.  `ignore_index=None` means -100 for
    class-index targets.

    Example:
        >>> import ember.numpy as enp
        >>> m = LinearCrossEntropyLoss(5, 10, out_features=(4, 3), bias=True)
        >>> m.linear.weight.shape, m.linear.bias.shape
        ((120, 5), (120,))
        >>> m(enp.ones((2, 5)), enp.zeros((2, 4, 3), dtype="int32")).shape
        ()
    """

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None,
                 dtype=None, reduction="mean", weight=None, ignore_index=None, label_smoothing=0.0,
                 options=None, key=None):
        import math
        from .layers import Linear
        from .layers._common import check_sizes
        name = type(self).__name__
        check_sizes(name, in_features=in_features)
        check_sizes(name, 1, num_classes=num_classes)
        out_features = tuple(out_features)
        check_sizes(name, 1, out_features=out_features)
        if weight is not None and tuple(F._util.arr(weight).shape) != (num_classes,):
            raise ValueError(f"{name}: weight must have shape ({num_classes},) (num_classes="
                             f"{num_classes}), got {tuple(F._util.arr(weight).shape)}")
        check_settings(name, label_smoothing, options)
        super().__init__(weight, reduction=reduction)
        self.num_classes, self.out_features = int(num_classes), out_features
        self.ignore_index, self.label_smoothing, self.options = ignore_index, label_smoothing, options
        self.linear = Linear(in_features, math.prod(out_features, start=int(num_classes)), bias=bias,
                             device=device, dtype=dtype, key=key)

    def forward(self, input, target):
        import ember.numpy as enp
        shape = (self.num_classes,) + self.out_features
        b = self.linear.bias
        return F.linear_cross_entropy(
            input, enp.reshape(self.linear.weight, shape + (self.linear.in_features,)), target,
            linear_bias=None if b is None else enp.reshape(b, shape), weight=self.weight,
            reduction=self.reduction, ignore_index=self.ignore_index,
            label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self):
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction!r}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of log-probabilities.

    Example:
        >>> import ember.numpy as enp
        >>> NLLLoss()(enp.asarray([[-1.0, -2.0]]), enp.asarray([1])).item()
        2.0
    """

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities (logs clamped at -100).

    Example:
        >>> import ember.numpy as enp
        >>> round(BCELoss()(enp.asarray([0.5]), enp.asarray([0.0])).item(), 4)
        0.6931
    """

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid + binary cross entropy, stable, with `weight` and `pos_weight`.

    Example:
        >>> import ember.numpy as enp
        >>> m = BCEWithLogitsLoss(pos_weight=enp.asarray([2.0]))
        >>> round(m(enp.asarray([0.0]), enp.asarray([1.0])).item(), 4)
        1.3863
    """

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", None if weight is None else F._util.float_arr(weight))
        self.register_buffer("pos_weight", None if pos_weight is None else F._util.float_arr(pos_weight))

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class KLDivLoss(_Loss):
    """KL divergence of log-probability inputs from targets (probabilities, or
    log-probabilities with `log_target`); reduction "batchmean" is the true KL.

    Example:
        >>> import ember.numpy as enp
        >>> KLDivLoss(reduction="batchmean")(enp.log(enp.asarray([[0.5, 0.5]])), enp.asarray([[0.5, 0.5]])).item()
        0.0
    """

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class CosineEmbeddingLoss(_Loss):
    """1 - cos for similar pairs (target 1), max(0, cos - margin) for dissimilar (-1).

    Example:
        >>> import ember.numpy as enp
        >>> CosineEmbeddingLoss()(enp.ones((1, 2)), enp.ones((1, 2)), enp.asarray([-1])).item()
        1.0
    """

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, self.margin, reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """max(0, -y (x1 - x2) + margin).

    Example:
        >>> MarginRankingLoss(margin=0.5).margin
        0.5
    """

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """x for y = 1, max(0, margin - x) for y = -1.

    Example:
        >>> HingeEmbeddingLoss().margin
        1.0
    """

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """log(1 + exp(-y x)).

    Example:
        >>> import ember.numpy as enp
        >>> round(SoftMarginLoss()(enp.zeros(1), enp.ones(1)).item(), 4)
        0.6931
    """

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood.

    Example:
        >>> PoissonNLLLoss(log_input=False).log_input
        False
    """

    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, self.log_input, self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Gaussian negative log-likelihood with predicted variance.

    Example:
        >>> GaussianNLLLoss(full=True).full
        True
    """

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(reduction=reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)


class TripletMarginLoss(_Loss):
    """max(d(a, p) - d(a, n) + margin, 0).

    Example:
        >>> TripletMarginLoss(margin=2.0).margin
        2.0
    """

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        if isinstance(margin, (int, float)) and not margin > 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got "
                             f"margin={margin!r}; PyTorch raises here too")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, self.margin, self.p, self.eps,
                                     self.swap, reduction=self.reduction)


class CosineSimilarity(Module):
    """Cosine similarity along `dim`.

    Example:
        >>> import ember.numpy as enp
        >>> CosineSimilarity()(enp.asarray([[2.0, 0.0]]), enp.asarray([[1.0, 0.0]])).tolist()
        [1.0]
    """

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class CTCLoss(_Loss):
    """Connectionist temporal classification loss (see `functional.ctc_loss`):
    `loss(log_probs, targets, input_lengths, target_lengths)`.

    Example:
        >>> import ember.numpy as enp
        >>> from ember.nn import functional as F
        >>> lp = F.log_softmax(enp.zeros((4, 2, 3)), dim=-1)
        >>> CTCLoss()(lp, enp.asarray([[1, 2], [1, 1]]), [4, 4], [2, 2]).shape
        ()
    """

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction=reduction)
        self.blank = int(blank)
        self.zero_infinity = bool(zero_infinity)

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=self.blank,
                          reduction=self.reduction, zero_infinity=self.zero_infinity)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss over scores (N, C) and class indices (N,), with the
    margin's power `p` (1 or 2) and class `weight` (see `functional.multi_margin_loss`).

    Example:
        >>> import ember.numpy as enp
        >>> x = enp.asarray([[0.1, 0.2, 0.4, 0.8]])
        >>> round(MultiMarginLoss()(x, enp.asarray([3])).item(), 4)
        0.325
    """

    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: only p == 1 and p == 2 are supported, got p={p}")
        self.p, self.margin = p, margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss; each target row lists class indices, ended by -1
    (see `functional.multilabel_margin_loss`).

    Example:
        >>> import ember.numpy as enp
        >>> x = enp.asarray([[0.1, 0.2, 0.4, 0.8]])
        >>> round(MultiLabelMarginLoss()(x, enp.asarray([[3, 0, -1, 1]])).item(), 4)
        0.85
    """

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Per-class logistic loss over multi-hot targets, averaged over the classes
    (see `functional.multilabel_soft_margin_loss`).

    Example:
        >>> import ember.numpy as enp
        >>> round(MultiLabelSoftMarginLoss()(enp.zeros((1, 3)), enp.asarray([[1.0, 0.0, 1.0]])).item(), 4)
        0.6931
    """

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, self.weight, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet loss with any distance function (default `functional.pairwise_distance`).

    Example:
        >>> import ember.numpy as enp
        >>> m = TripletMarginWithDistanceLoss(margin=0.5)
        >>> round(m(enp.zeros((1, 2)), enp.zeros((1, 2)), enp.ones((1, 2))).item(), 4)
        0.0
    """

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: margin must be greater than 0, got {margin}")
        self.distance_function = distance_function
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


class PairwiseDistance(Module):
    """p-norm distance between rows, ||x1 - x2 + eps||_p over the last axis.

    Example:
        >>> import ember.numpy as enp
        >>> round(PairwiseDistance()(enp.asarray([[3.0, 0.0]]), enp.asarray([[0.0, 4.0]])).item(), 4)
        5.0
    """

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


# PyTorch's name and fields for AdaptiveLogSoftmaxWithLoss's result
_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax (Grave et al. 2016): a head over the `cutoffs[0]` most
    frequent classes plus one entry per tail cluster, and a low-rank projection per
    cluster (hidden size in_features // div_value^(i+1)); PyTorch's layout, so
    state dicts are interchangeable.  `forward(input, target)` returns
    `(output, loss)`: each target's log-probability, (N,) or () unbatched, and the
    mean negative log-likelihood.  `log_prob(input)` gives all n_classes
    log-probabilities and `predict(input)` their argmax.

    The log-probabilities are computed for every cluster (PyTorch only evaluates
    the clusters its targets hit) so that the layer jits and vmaps; the values and
    gradients are the same.

    Example:
        >>> import ember.numpy as enp
        >>> m = AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4, 7])
        >>> out, loss = m(enp.ones((3, 8)), enp.asarray([0, 5, 9]))
        >>> out.shape, loss.shape, m.log_prob(enp.ones((3, 8))).shape
        ((3,), (), (3, 10))
    """

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None,
                 dtype=None, *, key=None):
        super().__init__()
        from .layers import Linear, ModuleList, Sequential
        from .layers._common import init_keys
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of length "
                             "larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError(f"AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of unique, "
                             f"positive integers sorted in an increasing order, where each value is "
                             f"between 1 and n_classes-1 ({n_classes - 1}), got {cutoffs}")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = [int(c) for c in cutoffs] + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        keys = init_keys(key, 1 + 2 * self.n_clusters)
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device, dtype=dtype,
                           key=keys[0])
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(
                Linear(in_features, hsz, bias=False, device=device, dtype=dtype, key=keys[1 + 2 * i]),
                Linear(hsz, osz, bias=False, device=device, dtype=dtype, key=keys[2 + 2 * i])))

    def log_prob(self, input):
        """log-probabilities of all n_classes classes, (N, n_classes) (or (n_classes,))."""
        import ember.numpy as enp
        head = F.log_softmax(self.head(input), dim=-1)
        parts = [head[..., :self.shortlist_size]]
        for i, proj in enumerate(self.tail):
            parts.append(F.log_softmax(proj(input), dim=-1)
                         + head[..., self.shortlist_size + i:self.shortlist_size + i + 1])
        return enp.concatenate(parts, axis=-1)

    def predict(self, input):
        """The most probable class of each example, (N,)."""
        import ember.numpy as enp
        return enp.argmax(self.log_prob(input), axis=-1)

    def forward(self, input, target):
        import ember.numpy as enp
        from .functional._util import float_arr
        from .functional.loss import _check_classes, _shape_str
        x, t = float_arr(input), enp.asarray(target)
        if t.ndim == 1:
            if x.ndim != 2:
                raise ValueError(f"AdaptiveLogSoftmaxWithLoss: a 1-D target expects a 2-D input "
                                 f"(N, in_features), got input {_shape_str(x.shape)}")
            if x.shape[0] != t.shape[0]:
                raise ValueError(f"AdaptiveLogSoftmaxWithLoss: input and target should have the "
                                 f"same size in the batch dimension, got input "
                                 f"{_shape_str(x.shape)} and target {_shape_str(t.shape)}")
        elif t.ndim == 0:
            if x.ndim != 1:
                raise ValueError(f"AdaptiveLogSoftmaxWithLoss: a 0-D target expects a 1-D input "
                                 f"(in_features,), got input {_shape_str(x.shape)}")
        else:
            raise ValueError(f"AdaptiveLogSoftmaxWithLoss: 0-D or 1-D target expected, "
                             f"multi-target not supported; got target {_shape_str(t.shape)}")
        _check_classes(t, self.n_classes, "AdaptiveLogSoftmaxWithLoss")
        lp = self.log_prob(x)
        C = self.n_classes
        in_range = (t >= 0) & (t < C)
        picked = enp.take_along_axis(lp, enp.expand_dims(enp.where(in_range, t, 0), -1), axis=-1,
                                    mode="clip")
        # under jit the targets are unknown: an out-of-range one gives NaN, not a wrong value
        output = enp.where(in_range, picked[..., 0], float("nan"))
        return _ASMoutput(output, enp.mean(-output))
