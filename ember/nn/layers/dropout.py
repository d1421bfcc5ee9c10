"""Dropout layers; active in training mode only.  Keys come from the forward
pass's RNG stream (the model's key eagerly, `rng=` under `functional_call`, the
threaded key in `TrainStep`).

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.Dropout(0.5).eval()(enp.ones(3)).tolist()
    [1.0, 1.0, 1.0]
"""
from __future__ import annotations

from .. import functional as F
from ..module import Module, next_rng_key

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _Dropout(Module):
    _fn = None

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = float(p), inplace

    def forward(self, input):
        if not self.training or self.p == 0.0:
            return input
        return type(self)._fn(input, self.p, True, key=next_rng_key())

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_Dropout):
    """Zero elements with probability p and scale the rest by 1 / (1 - p).

    Example:
        >>> Dropout(0.2).p
        0.2
    """
    _fn = staticmethod(F.dropout)


class Dropout1d(_Dropout):
    """Zero whole channels of (N, C, L).

    Example:
        >>> Dropout1d().p
        0.5
    """
    _fn = staticmethod(F.dropout1d)


class Dropout2d(_Dropout):
    """Zero whole channels of (N, C, H, W).

    Example:
        >>> Dropout2d(0.1).p
        0.1
    """
    _fn = staticmethod(F.dropout2d)


class Dropout3d(_Dropout):
    """Zero whole channels of (N, C, D, H, W).

    Example:
        >>> Dropout3d().p
        0.5
    """
    _fn = staticmethod(F.dropout3d)


class AlphaDropout(_Dropout):
    """Dropout for SELU networks (keeps mean and variance).

    Example:
        >>> AlphaDropout(0.1).p
        0.1
    """
    _fn = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_Dropout):
    """Alpha dropout of whole channels of (N, C, ...) (see
    `functional.feature_alpha_dropout`).

    Example:
        >>> FeatureAlphaDropout(0.2).p
        0.2
    """
    _fn = staticmethod(F.feature_alpha_dropout)
