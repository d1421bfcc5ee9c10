"""Composable gradient transformations: clipping, scaling, weight decay with masks,
per-subset rules (`multi_transform`) and gradient accumulation over micro-batches.

Numeric arguments of the public transformations live in their state as arrays
(see `inject_hyperparams`), so `set_hyperparam(state, "lr", v)` reaches a
`chain` built from these pieces.

Example:
    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> tx = optim.chain(optim.clip_by_global_norm(1.0), optim.scale_by_learning_rate(0.1))
    >>> p = {"w": enp.asarray([0.0, 0.0])}
    >>> u, s = tx.update({"w": enp.asarray([3.0, 4.0])}, tx.init(p), p)
    >>> [round(v, 4) for v in u["w"].tolist()]
    [-0.06, -0.08]
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import optree

from .. import tree
from ..fx.core import get_aval
from . import _ops
from .core import (
    EmptyState,
    GradientTransformation,
    check_same_structure,
    inject_hyperparams,
    require_params,
)

__all__ = ["identity", "scale", "scale_by_learning_rate", "scale_by_schedule",
           "clip_by_global_norm", "clip_by_value", "add_decayed_weights", "default_decay_mask",
           "multi_transform", "accumulate_gradients", "ScaleByScheduleState",
           "MultiTransformState", "AccumulateState"]


def _times(x, factor):
    return x * _ops.cast(factor, get_aval(x).dtype)


def identity() -> GradientTransformation:
    """Pass gradients through unchanged.

    Example:
        >>> identity().update([1.0], EmptyState())[0]
        [1.0]
    """
    return GradientTransformation(lambda params: EmptyState(),
                                  lambda grads, state, params=None: (grads, state), "identity")


def _scale(step_size):
    """Multiply updates by `step_size`.

    Example:
        >>> import ember.numpy as enp
        >>> tx = scale(2.0)
        >>> tx.update([enp.asarray(1.5)], tx.init([]))[0][0].tolist()
        3.0
    """
    def update(grads, state, params=None):
        return tree.map(lambda g: _times(g, step_size), grads), state
    return GradientTransformation(lambda params: EmptyState(), update, "scale")


scale = inject_hyperparams(_scale, name="scale")


def _scale_by_learning_rate(lr, flip_sign=True):
    """Multiply updates by `-lr` (or `lr` with `flip_sign=False`); the hyperparameter is
    called `lr` so `set_hyperparam(state, "lr", v)` finds it.  A callable `lr` is a
    schedule of the update count.

    Example:
        >>> import ember.numpy as enp
        >>> tx = scale_by_learning_rate(0.25)
        >>> tx.update([enp.asarray(2.0)], tx.init([]))[0][0].tolist()
        -0.5
    """
    m = -lr if flip_sign else lr
    return _scale(m)


scale_by_learning_rate = inject_hyperparams(_scale_by_learning_rate, static_args=("flip_sign",),
                                            name="scale_by_learning_rate")


class ScaleByScheduleState(NamedTuple):
    """State of `scale_by_schedule`: how many updates were made."""
    count: Any


def scale_by_schedule(step_size_fn: Callable) -> GradientTransformation:
    """Multiply updates by `step_size_fn(count)`, `count` the number of earlier updates.

    Example:
        >>> import ember.numpy as enp
        >>> tx = scale_by_schedule(lambda c: 0.5)
        >>> tx.update([enp.asarray(1.0)], tx.init([]))[0][0].tolist()
        0.5
    """
    if not callable(step_size_fn):
        raise TypeError(f"scale_by_schedule needs a callable step -> value, got "
                        f"{type(step_size_fn).__name__}")

    def init(params):
        return ScaleByScheduleState(_ops.asarray(np.int32(0)))

    def update(grads, state, params=None):
        f = step_size_fn(state.count)
        return tree.map(lambda g: _times(g, f), grads), ScaleByScheduleState(state.count + 1)
    return GradientTransformation(init, update, "scale_by_schedule")


def _clip_by_global_norm(max_norm):
    """Scale all gradients by `min(1, max_norm / (global_norm + 1e-6))`, the formula of
    `torch.nn.utils.clip_grad_norm_`.

    Example:
        >>> import ember.numpy as enp
        >>> tx = clip_by_global_norm(1.0)
        >>> [round(v, 4) for v in tx.update([enp.asarray([3.0, 4.0])], tx.init([]))[0][0].tolist()]
        [0.6, 0.8]
    """
    def update(grads, state, params=None):
        leaves = tree.leaves(grads)
        if not leaves:
            return grads, state
        norm = _ops.global_norm(leaves)
        coef = _ops.minimum(_ops.cast(max_norm, get_aval(norm).dtype) / (norm + 1e-6), 1.0)
        return tree.map(lambda g: _times(g, coef), grads), state
    return GradientTransformation(lambda params: EmptyState(), update, "clip_by_global_norm")


clip_by_global_norm = inject_hyperparams(_clip_by_global_norm, name="clip_by_global_norm")


def _clip_by_value(clip_value):
    """Clamp every gradient element to `[-clip_value, clip_value]`, like
    `torch.nn.utils.clip_grad_value_`.

    Example:
        >>> import ember.numpy as enp
        >>> tx = clip_by_value(1.0)
        >>> tx.update([enp.asarray([-3.0, 0.5])], tx.init([]))[0][0].tolist()
        [-1.0, 0.5]
    """
    def update(grads, state, params=None):
        def clip(g):
            c = _ops.cast(clip_value, get_aval(g).dtype)
            return _ops.minimum(_ops.maximum(g, -c), c)
        return tree.map(clip, grads), state
    return GradientTransformation(lambda params: EmptyState(), update, "clip_by_value")


clip_by_value = inject_hyperparams(_clip_by_value, name="clip_by_value")


def default_decay_mask(params):
    """A weight-decay mask that decays matrices and kernels (ndim >= 2) and leaves out
    biases and normalisation scales (ndim <= 1).

    Example:
        >>> import ember.numpy as enp
        >>> default_decay_mask({"w": enp.asarray([[1.0]]), "b": enp.asarray([1.0])})
        {'w': True, 'b': False}
    """
    return tree.map(lambda p: get_aval(p).ndim >= 2, params)


def _resolve_mask(mask, params):
    if mask is None:
        return tree.map(lambda p: True, params)
    m = mask(params) if callable(mask) else mask
    if isinstance(m, (bool, np.bool_)):
        return tree.map(lambda p: bool(m), params)
    check_same_structure(m, params, "mask", "params")
    return m


def _add_decayed_weights(weight_decay=0.0, mask=None):
    """Add `weight_decay * param` to the updates (L2 / coupled weight decay when used
    before the optimiser's scaling, decoupled when after).

    `mask` (a pytree of bools shaped like the params, or a callable params -> mask)
    selects the leaves that decay; e.g. `default_decay_mask` leaves out biases and
    norm scales.

    Example:
        >>> import ember.numpy as enp
        >>> p = {"w": enp.asarray([[1.0]]), "b": enp.asarray([1.0])}
        >>> tx = add_decayed_weights(0.5, mask=default_decay_mask)
        >>> u, _ = tx.update({"w": enp.asarray([[0.0]]), "b": enp.asarray([0.0])}, tx.init(p), p)
        >>> u["w"].tolist(), u["b"].tolist()
        ([[0.5]], [0.0])
    """
    def update(grads, state, params=None):
        require_params(params, "add_decayed_weights")
        m = _resolve_mask(mask, params)

        def leaf(g, p, on):
            if isinstance(on, (bool, np.bool_)):
                return g + _times(p, weight_decay) if on else g
            return _ops.where(on, g + _times(p, weight_decay), g)
        return tree.map(leaf, grads, params, m), state
    return GradientTransformation(lambda params: EmptyState(), update, "add_decayed_weights")


add_decayed_weights = inject_hyperparams(_add_decayed_weights, static_args=("mask",),
                                         name="add_decayed_weights")


# --- multi_transform ---------------------------------------------------------------

class MultiTransformState(NamedTuple):
    """State of `multi_transform`: one inner state per label."""
    inner_states: dict


def multi_transform(transforms: dict, param_labels) -> GradientTransformation:
    """Apply a different transformation to each labelled subset of the parameters.

    `param_labels` is a pytree of label strings shaped like the params, or a
    callable params -> labels.  Each inner transformation sees the params and
    grads of its subset, with `None` in place of the others.

    Example:
        >>> import ember.numpy as enp
        >>> from ember.optim import sgd
        >>> tx = multi_transform({"fast": sgd(lr=1.0), "frozen": scale(0.0)},
        ...                      {"w": "fast", "b": "frozen"})
        >>> p = {"w": enp.asarray(1.0), "b": enp.asarray(1.0)}
        >>> u, _ = tx.update({"w": enp.asarray(1.0), "b": enp.asarray(1.0)}, tx.init(p), p)
        >>> u["w"].tolist(), u["b"].tolist()
        (-1.0, 0.0)
    """
    if not isinstance(transforms, dict) or not transforms:
        raise TypeError("multi_transform needs a non-empty dict label -> GradientTransformation")
    for k, t in transforms.items():
        if not isinstance(t, GradientTransformation):
            raise TypeError(f"multi_transform: transforms[{k!r}] is a {type(t).__name__}, "
                            f"not a GradientTransformation")

    def labels_for(params):
        labels = param_labels(params) if callable(param_labels) else param_labels
        check_same_structure(labels, params, "param_labels", "params")
        unknown = sorted({str(l) for l in tree.leaves(labels)} - set(map(str, transforms)))
        if unknown:
            raise ValueError(f"multi_transform: labels {unknown} have no transformation; "
                             f"known labels: {sorted(map(str, transforms))}")
        return labels

    def masked(t, labels, label):
        return tree.map(lambda x, l: x if l == label else None, t, labels)

    def init(params):
        labels = labels_for(params)
        return MultiTransformState({k: t.init(masked(params, labels, k))
                                    for k, t in transforms.items()})

    def update(grads, state, params=None):
        ref = params if params is not None else grads
        labels = labels_for(ref)
        if params is not None:
            check_same_structure(grads, params)
        full_leaves, full_def = optree.tree_flatten(grads, none_is_leaf=True, namespace=tree.NAMESPACE)
        label_leaves = optree.tree_flatten(labels, none_is_leaf=True, namespace=tree.NAMESPACE)[0]
        out = list(full_leaves)
        new_states = {}
        for k, t in transforms.items():
            g = masked(grads, labels, k)
            p = None if params is None else masked(params, labels, k)
            u, new_states[k] = t.update(g, state.inner_states[k], p)
            u_leaves = optree.tree_flatten(u, none_is_leaf=True, namespace=tree.NAMESPACE)[0]
            if len(u_leaves) != len(out):
                raise ValueError(f"multi_transform: the transformation for {k!r} changed the "
                                 f"structure of its updates")
            for i, (lab, v) in enumerate(zip(label_leaves, u_leaves)):
                if lab == k:
                    out[i] = v
        return optree.tree_unflatten(full_def, out), MultiTransformState(new_states)

    return GradientTransformation(init, update, "multi_transform")


# --- gradient accumulation ---------------------------------------------------------

class AccumulateState(NamedTuple):
    """State of `accumulate_gradients`: the micro-batch index within the current group of
    `every_k`, how many inner steps were taken, the running gradient sum, the inner state."""
    mini_step: Any
    gradient_step: Any
    acc_grads: Any
    inner_state: Any


def accumulate_gradients(inner: GradientTransformation, every_k: int) -> GradientTransformation:
    """Accumulate gradients over `every_k` micro-batches, then apply `inner` to their mean.

    The first `every_k - 1` calls return zero updates and only add to the running
    sum; the `every_k`-th applies `inner` and resets it.  The choice is made with
    `ember.numpy.where` on the micro-step counter, so it jits without retracing.

    Example:
        >>> import ember.numpy as enp
        >>> from ember.optim import sgd
        >>> tx = accumulate_gradients(sgd(lr=1.0), every_k=2)
        >>> p = [enp.asarray(0.0)]
        >>> s = tx.init(p)
        >>> u, s = tx.update([enp.asarray(1.0)], s, p); u[0].tolist()
        0.0
        >>> u, s = tx.update([enp.asarray(3.0)], s, p); u[0].tolist()
        -2.0
    """
    if not isinstance(inner, GradientTransformation):
        raise TypeError(f"accumulate_gradients wraps a GradientTransformation, got "
                        f"{type(inner).__name__}")
    if isinstance(every_k, bool) or not isinstance(every_k, (int, np.integer)) or every_k < 1:
        raise ValueError(f"accumulate_gradients: every_k must be a positive int, got {every_k!r}")
    every_k = int(every_k)

    def init(params):
        return AccumulateState(_ops.asarray(np.int32(0)), _ops.asarray(np.int32(0)),
                               tree.map(_ops.zeros_like, params), inner.init(params))

    def update(grads, state, params=None):
        if params is not None:
            check_same_structure(grads, params)
        acc = tree.map(lambda a, g: a + _ops.astype(g, get_aval(a).dtype), state.acc_grads, grads)
        emit = _ops.equal(state.mini_step, every_k - 1)
        mean = tree.map(lambda a: a / _ops.cast(every_k, get_aval(a).dtype), acc)
        upd, new_inner = inner.update(mean, state.inner_state, params)
        updates = tree.map(lambda u: _ops.where(emit, u, _ops.zeros_like(u)), upd)
        inner_state = tree.map(lambda n, o: _ops.where(emit, n, o), new_inner, state.inner_state)
        acc = tree.map(lambda a: _ops.where(emit, _ops.zeros_like(a), a), acc)
        mini = _ops.where(emit, _ops.asarray(np.int32(0)), state.mini_step + 1)
        gstep = state.gradient_step + _ops.astype(emit, _ops.int32)
        return updates, AccumulateState(mini, gstep, acc, inner_state)

    return GradientTransformation(init, update, "accumulate_gradients")
