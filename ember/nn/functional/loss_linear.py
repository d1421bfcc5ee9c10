"""Cross entropy of a linear layer's logits, computed in chunks of rows so that the
full (N, C) logits never exist at once (PyTorch 2.13's `linear_cross_entropy`).

Example:
    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> x, w = enp.ones((3, 2)), enp.zeros((4, 2))
    >>> round(F.linear_cross_entropy(x, w, enp.asarray([0, 1, 3])).item(), 4)
    1.3863
"""
from __future__ import annotations

import dataclasses
import math

from ... import dtypes as _dt
from ...fx.core import get_aval
from ...fx.spelling import user_str
from ...transforms.control_flow import map as lax_map
from ._util import arr, enp, float_arr, mean_of_sums
from .linear import linear
from .loss import _check_classes, _shape_str, _target_weights, cross_entropy, weighted_target_mean

__all__ = ["linear_cross_entropy"]

_OP = "linear_cross_entropy"
_ACC_POLICIES = ("auto", "accurate", "balanced", "compact")


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """How `linear_cross_entropy` chunks the batch (PyTorch's fields and checks).

    - `batch_chunk_size`: rows per chunk (None: decided by `chunking_method`, or
      one chunk when that is None too).
    - `chunking_method`: "auto" (= "aspect_ratio:2", PyTorch's fallback pick),
      "aspect_ratio" or "aspect_ratio:K" (chunks whose (rows, C) logits take about
      as much memory as the (N, in_features) input, divided by K), or None.
      An explicit `batch_chunk_size` switches "auto" off; setting both to values
      that disagree is a ValueError, as in PyTorch.
    - `acc_dtype`: the dtype the logits and loss are computed in (None: float32
      for float16/bfloat16 input under `acc_policy="auto"`, else the input's);
      the result has the input's dtype.
    - `acc_policy`, `allow_retain_graph`: accepted and checked for PyTorch
      compatibility; they change nothing in ember (its reverse mode recomputes
      each chunk's logits from the saved inputs and can be run any number of times).

    Example:
        >>> LinearCrossEntropyOptions(batch_chunk_size=64).batch_chunk_size
        64
        >>> LinearCrossEntropyOptions()._adjust(100, 4, 5, "float32").batch_chunk_size
        32
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in _ACC_POLICIES:
            raise ValueError(f"LinearCrossEntropyOptions: invalid acc_policy: {self.acc_policy!r} "
                             f"(use one of {', '.join(map(repr, _ACC_POLICIES))})")
        m = self.chunking_method
        if m is not None and m != "auto":
            name, sep, factor = str(m).partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"LinearCrossEntropyOptions: invalid chunking_method: {m!r} (use "
                                 f"'auto', 'aspect_ratio', 'aspect_ratio:N' with N >= 1, or None)")
        b = self.batch_chunk_size
        if not (b is None or (isinstance(b, int) and not isinstance(b, bool) and b > 0)):
            raise ValueError(f"LinearCrossEntropyOptions: batch_chunk_size must be positive int or "
                             f"None, got {b!r}")
        if self.acc_dtype is not None:
            try:
                d = _dt.canonicalize(self.acc_dtype)
            except Exception:
                d = None
            if d not in (_dt.float16, _dt.bfloat16, _dt.float32, _dt.float64):
                raise ValueError(f"LinearCrossEntropyOptions: acc_dtype must be one of None, "
                                 f"float16, bfloat16, float32, float64, got {self.acc_dtype!r}")

    def _adjust(self, num_batches, in_features, num_classes, dtype, device=None):
        """A copy with "auto" and None resolved for one call: the chunk size
        (at least 1) and the accumulation dtype, as PyTorch resolves them."""
        method = self.chunking_method
        if method == "auto" and self.batch_chunk_size is not None:
            method = None
        if method == "auto":
            method = "aspect_ratio:2"
        size = num_batches if self.batch_chunk_size is None else min(self.batch_chunk_size, num_batches)
        if method is not None:
            factor = int(method.split(":", 1)[1]) if ":" in method else 1
            target = -(-num_batches // -(-num_classes // max(in_features, 1)))
            size = min((1 << (target - 1).bit_length()) // factor, num_batches)
            if self.batch_chunk_size is not None and self.batch_chunk_size != size:
                raise ValueError(f"linear_cross_entropy: batch_chunk_size (={self.batch_chunk_size}) "
                                 f"and chunking_method ({method!r}) give different chunk sizes "
                                 f"({self.batch_chunk_size} vs {size}); pass only one.")
        dtype = _dt.canonicalize(dtype)
        if self.acc_dtype is not None:
            acc = _dt.canonicalize(self.acc_dtype)
        elif self.acc_policy == "auto" and dtype in (_dt.float16, _dt.bfloat16):
            acc = _dt.float32
        else:
            acc = dtype
        policy = "compact" if self.acc_policy == "auto" else self.acc_policy
        return dataclasses.replace(self, batch_chunk_size=max(1, size), chunking_method=method,
                                   acc_policy=policy, acc_dtype=acc)


def _desc(x):
    return user_str(get_aval(x))


def check_settings(op, label_smoothing, options):
    """The checks shared by the function and `nn.LinearCrossEntropyLoss`'s constructor."""
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"{op}: label_smoothing must be in [0, 1], got {label_smoothing}")
    if options is not None and not isinstance(options, LinearCrossEntropyOptions):
        raise TypeError(f"{op}: options must be a LinearCrossEntropyOptions or None, got "
                        f"{type(options).__name__}")


def _check(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
           label_smoothing, options):
    """The arrays, checked against each other, and the shape of the logits."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{_OP}: {reduction!r} is not a valid value for reduction "
                         f"(use 'none', 'mean' or 'sum')")
    check_settings(_OP, label_smoothing, options)
    x, W, t = float_arr(input), float_arr(linear_weight), arr(target)
    if x.ndim not in (1, 2):
        raise ValueError(f"{_OP}: input must be (in_features,) or (N, in_features), got {_desc(x)}")
    if W.ndim < 2:
        raise ValueError(f"{_OP}: linear_weight must be (C, in_features) or (C, d1, ..., dK, "
                         f"in_features), got {_desc(W)}")
    if W.shape[-1] != x.shape[-1]:
        raise ValueError(f"{_OP}: input {_desc(x)} and linear_weight {_desc(W)} differ in their "
                         f"last dimension (in_features): {x.shape[-1]} vs {W.shape[-1]}")
    C, out = W.shape[0], tuple(W.shape[1:-1])
    b = None
    if linear_bias is not None:
        b = float_arr(linear_bias)
        if tuple(b.shape) != (C,) + out:
            raise ValueError(f"{_OP}: linear_bias must have shape {_shape_str((C,) + out)} "
                             f"(linear_weight's shape without in_features), got {_desc(b)}")
    if out and x.ndim == 1:
        raise ValueError(f"{_OP}: the K-dimensional loss of linear_weight {_desc(W)} needs batched "
                         f"input (N, {x.shape[-1]}), got unbatched {_desc(x)}")
    logits_shape = tuple(x.shape[:-1]) + (C,) + out
    if _dt.is_integer(get_aval(t).dtype):
        want = tuple(x.shape[:-1]) + out
        if tuple(t.shape) != want:
            raise ValueError(f"{_OP}: class-index target must have shape {_shape_str(want)} for "
                             f"input {_desc(x)} and linear_weight {_desc(W)}, got {_desc(t)}")
    elif _dt.is_inexact(get_aval(t).dtype):
        if tuple(t.shape) != logits_shape:
            raise ValueError(f"{_OP}: probability target must have the logits' shape "
                             f"{_shape_str(logits_shape)} for input {_desc(x)} and linear_weight "
                             f"{_desc(W)}, got {_desc(t)}")
        if ignore_index is not None:
            raise ValueError(f"{_OP}: ignore_index={ignore_index} cannot be specified when target "
                             f"contains probabilities ({_desc(t)}); PyTorch rejects it too")
    else:
        raise TypeError(f"{_OP}: target must hold class indices (integers) or probabilities "
                        f"(floats), got {_desc(t)}")
    if weight is not None and tuple(arr(weight).shape) != (C,):
        raise ValueError(f"{_OP}: weight must have shape ({C},) (one per class), got "
                         f"{_desc(arr(weight))}")
    return x, W, t, b, logits_shape


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0, options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target, ...) with
    PyTorch 2.13's arguments: input (in_features,) or (N, in_features),
    linear_weight (C, in_features) or (C, d1, ..., dK, in_features) for a
    K-dimensional loss, class-index targets (N, d1, ...) or probabilities of the
    logits' shape (N, C, d1, ...); `ignore_index=None` means -100 for indices and
    is an error to set with probabilities.

    With `options` (a `LinearCrossEntropyOptions`) the rows are processed in
    chunks of `options.batch_chunk_size`: each chunk's logits are formed, turned
    into per-row losses by `cross_entropy` and dropped, and reverse mode recomputes
    them chunk by chunk (each chunk is an `ember.checkpoint`), so neither the
    forward nor the backward pass holds the (N, C) logits.  Unlike PyTorch, which
    falls back to the unchunked path for them, ember chunks every configuration
    (label smoothing, probability targets, K-dimensional weights); the values are
    the same either way.  `options=None` computes the logits in one piece.

    Example:
        >>> import ember.numpy as enp
        >>> from ember import random
        >>> x = random.normal(random.key(0), (10, 4)); w = random.normal(random.key(1), (7, 4))
        >>> t = enp.arange(10) % 7
        >>> a = linear_cross_entropy(x, w, t)
        >>> b = linear_cross_entropy(x, w, t, options=LinearCrossEntropyOptions(batch_chunk_size=3))
        >>> bool(enp.allclose(a, b))
        True
    """
    e = enp()
    x, W, t, b, logits_shape = _check(input, linear_weight, target, linear_bias, weight, reduction,
                                      ignore_index, label_smoothing, options)
    C, out = W.shape[0], tuple(W.shape[1:-1])
    index = _dt.is_integer(get_aval(t).dtype)
    ii = -100 if ignore_index is None else int(ignore_index)
    if index:
        _check_classes(t, C, _OP, ii)
    dtype = e.result_type(x, W, *(() if b is None else (b,)))
    rows_out = math.prod(out, start=C)
    W2 = e.reshape(e.astype(W, dtype), (rows_out, W.shape[-1]))
    b2 = None if b is None else e.reshape(e.astype(b, dtype), (rows_out,))
    kw = dict(ignore_index=ii, label_smoothing=label_smoothing)
    if options is None:
        logits = e.reshape(linear(e.astype(x, dtype), W2, b2), logits_shape)
        return cross_entropy(logits, t, weight, reduction=reduction, **kw)

    unbatched = x.ndim == 1
    if unbatched:
        x, t = x[None], t[None]
    N, in_features = x.shape
    opts = options._adjust(N, in_features, C, dtype)
    cs, acc = opts.batch_chunk_size, opts.acc_dtype
    Wa, ba = e.astype(W2, acc), None if b2 is None else e.astype(b2, acc)
    wa = None if weight is None else e.astype(arr(weight), acc)

    def rows(xc, tc, Wc, bc, wc):
        # one chunk's (n, C, d1, ...) logits and their per-row losses (n, d1, ...)
        n = xc.shape[0]
        logits = e.reshape(linear(e.astype(xc, acc), Wc, bc), (n, C) + out)
        return cross_entropy(logits, tc, wc, reduction="none", **kw)

    chunk = _checkpointed(rows)
    # The full chunks are one `lax.map` (a scan: the graph does not grow with N / cs,
    # and its reverse mode saves the loop-invariant weight once, not per chunk), the
    # remainder one more call.
    k, rest = divmod(N, cs)
    parts = []
    if k:
        xs = e.reshape(x[:k * cs], (k, cs, in_features))
        ts = e.reshape(t[:k * cs], (k, cs) + tuple(t.shape[1:]))
        per = lax_map(lambda xt: chunk(xt[0], xt[1], Wa, ba, wa), (xs, ts))
        parts.append(e.reshape(per, (k * cs,) + out))
    if rest:
        parts.append(chunk(x[k * cs:], t[k * cs:], Wa, ba, wa))
    loss = (e.concatenate(parts, axis=0) if len(parts) > 1 else parts[0]) if parts else \
        e.zeros((0,) + out, acc)
    if reduction == "none":
        loss = e.astype(loss, dtype)
        return loss[0] if unbatched else loss
    if reduction == "sum":
        res = e.sum(e.astype(loss, _dt.accumulation_dtype(acc)))
    elif index:
        res = weighted_target_mean(loss, _target_weights(t, wa, ii, C, acc)[3])
    else:
        res = mean_of_sums(loss, loss.size)
    return e.astype(res, dtype)


def _checkpointed(rows):
    """`rows` under `ember.checkpoint`, with the optional bias and class weight
    (None) kept out of its traced arguments."""
    from ...transforms.checkpoint import checkpoint

    def call(xc, tc, Wc, bc, wc):
        args = [a for a in (bc, wc) if a is not None]
        has_b, has_w = bc is not None, wc is not None

        def inner(xc, tc, Wc, *rest):
            it = iter(rest)
            return rows(xc, tc, Wc, next(it) if has_b else None, next(it) if has_w else None)

        return checkpoint(inner)(xc, tc, Wc, *args)

    return call
