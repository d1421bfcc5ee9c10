"""RNG streams for forward passes: the keys `Dropout` and friends draw
(`next_rng_key`), threaded explicitly (`rng_scope`, `functional_call(..., rng=)`)
or split eagerly from a module's own key or the global seed (`manual_seed`).

Example:
    >>> from ember import nn, random
    >>> with nn.rng_scope(random.key(0)):
    ...     a, b = nn.next_rng_key(), nn.next_rng_key()
    >>> a.tolist() != b.tolist()
    True
"""
from __future__ import annotations

import contextlib
import contextvars

from .. import random
from ..fx.core import current_trace, eval_trace, set_current_trace


class _Stream:
    """Keys for one forward pass: fold_in(base, 0), fold_in(base, 1), ...  `base` is
    either given (explicit) or drawn lazily from a module's or the global key."""
    __slots__ = ("base", "count", "source")

    def __init__(self, base=None, source=None):
        self.base = base
        self.count = 0
        self.source = source

    def next(self):
        if self.base is None:
            self.base = _draw_eager_key(self.source)
        k = random.fold_in(self.base, self.count)
        self.count += 1
        return k


_STREAM: contextvars.ContextVar = contextvars.ContextVar("ember_nn_rng_stream", default=None)
_GLOBAL_KEY = [None]


def manual_seed(seed: int) -> None:
    """Seed the global key that parameter initialisation and eager dropout draw from
    when no key is given (the default seed is 0).

    Example:
        >>> from ember import nn
        >>> nn.manual_seed(1); a = nn.Linear(2, 2).weight
        >>> nn.manual_seed(1); b = nn.Linear(2, 2).weight
        >>> a.tolist() == b.tolist()
        True
    """
    _GLOBAL_KEY[0] = random.key(seed)


def _in_transform() -> bool:
    return current_trace() is not eval_trace()


def _global_next_key():
    """Split the global key eagerly (even when called under a trace)."""
    with set_current_trace(eval_trace()):
        if _GLOBAL_KEY[0] is None:
            _GLOBAL_KEY[0] = random.key(0)
        new, sub = random.split(_GLOBAL_KEY[0])
        _GLOBAL_KEY[0] = new
    return sub


def _draw_eager_key(module):
    if _in_transform():
        raise RuntimeError(
            "a module drew a random key (dropout in training mode?) under a transform without an "
            "explicit key: the key would be baked into the traced program and repeat on every "
            "call. Pass one explicitly: nn.functional_call(model, state, *args, rng=key), or use "
            "nn.value_and_grad / nn.TrainStep, which thread the model's key; or call model.eval().")
    k = module._rng_key if module is not None else None
    if k is None:
        return _global_next_key()
    new, sub = random.split(k)
    object.__setattr__(module, "_rng_key", new)
    return sub


def next_rng_key():
    """The next key of the current forward pass's RNG stream (what `Dropout` uses).
    Outside a forward pass, a key split from the global key (eagerly only).

    Example:
        >>> from ember import nn, random
        >>> with nn.rng_scope(random.key(0)):
        ...     k = nn.next_rng_key()
        >>> k.shape
        (2,)
    """
    s = _STREAM.get()
    if s is None:
        return _draw_eager_key(None)
    return s.next()


@contextlib.contextmanager
def rng_scope(key):
    """Run the enclosed forward passes with keys derived from `key` (explicitly
    threaded randomness, e.g. inside a function you jit yourself).

    Example:
        >>> from ember import nn, random
        >>> drop = nn.Dropout(0.5)
        >>> with nn.rng_scope(random.key(3)):
        ...     y = drop(random.normal(random.key(0), (4,)))
    """
    key = random._check_key(key, "rng_scope")
    token = _STREAM.set(_Stream(key))
    try:
        yield
    finally:
        _STREAM.reset(token)
