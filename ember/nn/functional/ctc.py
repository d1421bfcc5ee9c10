"""Connectionist temporal classification loss (`ctc_loss`, PyTorch's arguments).

The forward algorithm runs in log space over the blank-interleaved target
(length 2S + 1) with `ember.scan` over time, so it is differentiable, jit-able
and vmap-able; input and target lengths may be traced values (sequences past
their length keep their state; targets past theirs are never read).  Log-sum-exp
steps are guarded so that impossible alignments give an infinite loss with
finite (zero) gradients, which `zero_infinity=True` turns into a zero loss.

Gradients are the true derivatives with respect to `log_probs`.  PyTorch's
kernel instead returns the derivative with respect to the logits of a
`log_softmax` (it adds `exp(log_probs)`), so the two agree whenever `log_probs`
comes from `log_softmax`, as it should.

Example:
    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> lp = F.log_softmax(enp.zeros((3, 1, 2)), dim=-1)     # T=3, N=1, C=2 (blank=0)
    >>> round(F.ctc_loss(lp, enp.asarray([[1]]), [3], [1], reduction="sum").item(), 4)
    0.2877
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ...array import Array
from ...fx.core import Tracer, get_aval
from ._util import enp, float_arr

__all__ = ["ctc_loss"]


def _lse(*xs):
    """log(sum(exp(x))) that is -inf, with zero gradients, when every x is -inf."""
    e = enp()
    m = xs[0]
    for x in xs[1:]:
        m = e.maximum(m, x)
    finite = e.isfinite(m)
    m0 = e.where(finite, m, e.zeros_like(m))
    s = None
    for x in xs:
        term = e.exp(x - m0)
        s = term if s is None else s + term
    pos = s > 0
    return e.where(pos, m0 + e.log(e.where(pos, s, e.ones_like(s))), e.full_like(m, -np.inf))


def _concrete(x):
    """x's values when known now (eager, or under grad), else None (jit, vmap)."""
    from ...numpy._util import concrete_or_none
    return concrete_or_none(x)


def _int_vector(x, n, name):
    e = enp()
    a = x if isinstance(x, (Array, Tracer)) else e.asarray(np.asarray(x))
    if not _dt.is_integer(get_aval(a).dtype):
        raise TypeError(f"ctc_loss: {name} must hold integers, got {get_aval(a).str_user()}")
    a = e.reshape(a, (-1,))
    if a.shape[0] != n:
        raise ValueError(f"ctc_loss: {name} must have one entry per batch element ({n}), got "
                         f"{a.shape[0]}")
    return a.astype(e.int32)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """The negative log-likelihood of `targets` under CTC, from `log_probs` (T, N, C)
    (or (T, C) unbatched), log-softmax outputs over C classes with `blank` among
    them.  `targets` is (N, S) padded or 1-D, the N targets concatenated;
    `input_lengths` and `target_lengths` give each sequence's lengths.
    `reduction`: "mean" (each loss divided by its target length, then the batch
    mean, as in PyTorch), "sum" or "none".  A label outside [0, C) raises
    IndexError and a blank label ValueError (PyTorch does not check); under `jit`
    the labels are not known, and such a sequence's loss is NaN.

    Example:
        >>> import ember.numpy as enp
        >>> lp = enp.log(enp.full((2, 1, 3), 1 / 3))
        >>> round(ctc_loss(lp, enp.asarray([2]), [2], [1], reduction="none").tolist()[0], 4)
        1.0986
    """
    e = enp()
    lp = float_arr(log_probs)
    if lp.ndim not in (2, 3):
        raise ValueError(f"ctc_loss: log_probs must be (T, N, C) or unbatched (T, C), got "
                         f"{get_aval(lp).str_user()}")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"ctc_loss: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    unbatched = lp.ndim == 2
    if unbatched:
        lp = lp[:, None, :]
    T, N, C = lp.shape
    if not 0 <= int(blank) < C:
        raise ValueError(f"ctc_loss: blank={blank} must be a class index in [0, {C})")
    blank = int(blank)
    il = _int_vector(input_lengths, N, "input_lengths")
    tl = _int_vector(target_lengths, N, "target_lengths")
    il_c, tl_c = _concrete(il), _concrete(tl)
    if il_c is not None and (np.any(il_c > T) or np.any(il_c < 1)):
        raise ValueError(f"ctc_loss: input_lengths must lie in [1, {T}] (T of log_probs "
                         f"{get_aval(lp).str_user()}), got {il_c.tolist()}")
    tg = targets if isinstance(targets, (Array, Tracer)) else e.asarray(np.asarray(targets))
    if not _dt.is_integer(get_aval(tg).dtype):
        raise TypeError(f"ctc_loss: targets must hold class indices (integers), got "
                        f"{get_aval(tg).str_user()}")
    tg = tg.astype(e.int32)
    if unbatched:
        if tg.ndim != 1:
            raise ValueError(f"ctc_loss: with unbatched log_probs (T, C) the target must be 1-D (S,), "
                             f"got {get_aval(tg).str_user()}")
        tg = tg[None, :]
    if tg.ndim == 1:
        # concatenated targets: sequence n starts after the lengths before it
        S = int(tl_c.max()) if tl_c is not None and tl_c.size else tg.shape[0]
        starts = e.cumsum(tl) - tl
        j = e.arange(max(S, 1), dtype=e.int32)
        pos = e.clip(starts[:, None] + j[None, :], 0, max(tg.shape[0] - 1, 0))
        padded = tg[pos] if tg.shape[0] else e.full((N, max(S, 1)), blank, dtype=e.int32)
        S = max(S, 1)
    elif tg.ndim == 2:
        if tg.shape[0] != N:
            raise ValueError(f"ctc_loss: padded targets must be (N, S) with N={N}, got "
                             f"{get_aval(tg).str_user()}")
        padded, S = tg, tg.shape[1]
    else:
        raise ValueError(f"ctc_loss: targets must be (N, S) padded or 1-D concatenated, got "
                         f"{get_aval(tg).str_user()}")
    if tl_c is not None and (np.any(tl_c > S) or np.any(tl_c < 0)):
        raise ValueError(f"ctc_loss: target_lengths must lie in [0, {S}], got {tl_c.tolist()}")
    if S == 0:
        padded, S = e.full((N, 1), blank, dtype=e.int32), 1
    j = e.arange(S, dtype=e.int32)
    inside = j[None, :] < tl[:, None]
    # a label must be a class other than blank; PyTorch does not check and returns an
    # out-of-bounds read (label >= C) or a gradient that does not match its loss (blank)
    bad_label = inside & ((padded < 0) | (padded >= C) | (padded == blank))
    bad_c = _concrete(bad_label)
    if bad_c is not None and bad_c.any():
        n, k = (int(v[0]) for v in np.nonzero(bad_c))
        label = int(np.asarray(padded)[n, k])
        if label == blank:
            raise ValueError(f"ctc_loss: target {n} holds the blank index {blank} at position {k}; "
                             f"targets must not contain blank. Hint: pass blank= the index your "
                             f"model reserves for it, or remove it from the targets")
        raise IndexError(f"ctc_loss: target {n} holds label {label} at position {k}, out of bounds "
                         f"for C={C} classes (log_probs {get_aval(lp).str_user()})")
    padded = e.where(inside, padded, blank)  # padding is never read as a label
    padded = e.clip(padded, 0, C - 1)
    L = 2 * S + 1
    labels = e.reshape(e.stack([e.full((N, S), blank, dtype=e.int32), padded], axis=-1), (N, 2 * S))
    ext = e.concatenate([labels, e.full((N, 1), blank, dtype=e.int32)], axis=-1)         # (N, L)
    prev2 = e.concatenate([e.full((N, 2), blank, dtype=e.int32), ext[:, :-2]], axis=-1)
    can_skip = (ext != blank) & (ext != prev2)
    emit = e.take_along_axis(lp, e.broadcast_to(ext[None], (T, N, L)), axis=2, mode="clip")         # (T, N, L)
    neg = e.full((N, 1), -np.inf, dtype=lp.dtype)
    s_idx = e.arange(L)
    alpha0 = e.where(s_idx[None, :] < 2, emit[0], -np.inf).astype(lp.dtype)

    def step(alpha, xs):
        em, t = xs
        one = e.concatenate([neg, alpha[:, :-1]], axis=-1)
        two = e.where(can_skip, e.concatenate([neg, neg, alpha[:, :-2]], axis=-1), -np.inf)
        new = _lse(alpha, one, two) + em
        return e.where((t < il)[:, None], new, alpha), None

    import ember
    alpha, _ = ember.scan(step, alpha0, (emit[1:], e.arange(1, T, dtype=e.int32)))
    last = e.take_along_axis(alpha, (2 * tl)[:, None], axis=1, mode="clip")[:, 0]
    before = e.take_along_axis(alpha, e.maximum(2 * tl - 1, 0)[:, None], axis=1, mode="clip")[:, 0]
    before = e.where(tl > 0, before, -np.inf)
    loss = -_lse(last, before)
    # under jit the labels are unknown when tracing: a bad one makes its loss NaN
    loss = e.where(e.any(bad_label, axis=1), np.nan, loss)
    if zero_infinity:
        loss = e.where(e.isinf(loss), e.zeros_like(loss), loss)
    if reduction == "none":
        return loss[0] if unbatched else loss
    if reduction == "sum":
        return e.sum(loss)
    return e.mean(loss / e.maximum(tl, 1).astype(loss.dtype))
