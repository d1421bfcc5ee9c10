"""Dropout, with an explicit key (or the current forward pass's RNG stream).

Example:
    >>> import ember.numpy as enp
    >>> from ember import random
    >>> from ember.nn import functional as F
    >>> F.dropout(enp.ones(4), 0.5, training=False).tolist()
    [1.0, 1.0, 1.0, 1.0]
"""
from __future__ import annotations

import warnings

from ... import random
from ._util import enp, float_arr

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]


def _key(key):
    if key is None:
        from ..module import next_rng_key
        return next_rng_key()
    return key


def _check_p(p, op):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False, *, key=None):
    """Zero each element with probability `p` and scale the rest by 1 / (1 - p) when
    `training`; the identity otherwise.  `key` defaults to the next key of the
    current forward pass (see `nn.functional_call(..., rng=)`).

    Example:
        >>> import ember.numpy as enp
        >>> from ember import random
        >>> y = dropout(enp.ones(1000), 0.5, key=random.key(0))
        >>> sorted(set(y.tolist()))
        [0.0, 2.0]
    """
    _check_p(p, "dropout")
    x = float_arr(input)
    if not training or p == 0.0:
        return x
    e = enp()
    if p == 1.0:
        return e.zeros_like(x)
    keep = random.bernoulli(_key(key), 1.0 - p, tuple(x.shape))
    return e.where(keep, x / (1.0 - p), 0.0)


def _channel_dropout(x, p, training, key, nsp, op):
    _check_p(p, op)
    x = float_arr(x)
    # the layout is settled (and warned about) before `training` is looked at, as in
    # PyTorch, so a model warns the same in train and eval mode
    batched = _channel_layout(x.ndim, nsp, op)
    if not training or p == 0.0:
        return x
    e = enp()
    if p == 1.0:
        return e.zeros_like(x)
    if batched:  # (N, C, ...): one draw per sample and channel
        mshape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2)
    else:  # unbatched (C, ...)
        mshape = (x.shape[0],) + (1,) * (x.ndim - 1)
    keep = random.bernoulli(_key(key), 1.0 - p, mshape)
    return e.where(keep, x / (1.0 - p), 0.0)


def _channel_layout(ndim, nsp, op):
    """Whether dim 0 is a batch dim, with PyTorch 2's warnings for odd ranks."""
    if nsp == 1 or ndim < 2:
        if ndim not in (nsp + 1, nsp + 2):
            raise ValueError(f"{op}: expected a {nsp + 1}-d (C, ...) or {nsp + 2}-d (N, C, ...) input, "
                             f"got a {ndim}-d input")
        return ndim == nsp + 2
    if nsp == 2 and ndim == 3:
        warnings.warn("dropout2d: got a 3-d input, read as (N, C, L) with whole channels dropped "
                      "(channel-wise 1-d dropout), as PyTorch does for now; PyTorch plans to read it "
                      "as an unbatched (C, H, W) input instead, so use dropout1d for (N, C, L)",
                      UserWarning, stacklevel=4)
        return True
    if ndim == nsp + 1:
        return False
    if ndim != nsp + 2:
        warnings.warn(f"{op}: got a {ndim}-d input, which is deprecated (PyTorch will make it an "
                      f"error); it is read as (N, C, ...) with whole channels dropped. {op} is for "
                      f"{nsp + 1}-d (C, ...) or {nsp + 2}-d (N, C, ...) inputs; use dropout for "
                      f"element-wise dropout", UserWarning, stacklevel=4)
    return True


def dropout1d(input, p=0.5, training=True, inplace=False, *, key=None):
    """Zero whole channels of (N, C, L) with probability `p`.

    Example:
        >>> import ember.numpy as enp
        >>> from ember import random
        >>> dropout1d(enp.ones((2, 3, 4)), key=random.key(0)).shape
        (2, 3, 4)
    """
    return _channel_dropout(input, p, training, key, 1, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False, *, key=None):
    """Zero whole channels of (N, C, H, W) or unbatched (C, H, W) with probability `p`.

    As in PyTorch 2, a 3-d input is read as (N, C, L) (channel-wise 1-d dropout) with a
    UserWarning, and other ranks as (N, C, ...) with a deprecation warning.

    Example:
        >>> import ember.numpy as enp
        >>> from ember import random
        >>> dropout2d(enp.ones((2, 3, 4, 4)), key=random.key(0)).shape
        (2, 3, 4, 4)
    """
    return _channel_dropout(input, p, training, key, 2, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False, *, key=None):
    """Zero whole channels of (N, C, D, H, W) or unbatched (C, D, H, W) with
    probability `p` (other ranks: (N, C, ...) with a deprecation warning, as PyTorch).

    Example:
        >>> import ember.numpy as enp
        >>> from ember import random
        >>> dropout3d(enp.ones((1, 2, 2, 2, 2)), key=random.key(0)).shape
        (1, 2, 2, 2, 2)
    """
    return _channel_dropout(input, p, training, key, 3, "dropout3d")


def alpha_dropout(input, p=0.5, training=False, inplace=False, *, key=None):
    """Dropout that keeps the self-normalising property of SELU networks (mean and
    variance preserved).

    Example:
        >>> import ember.numpy as enp
        >>> alpha_dropout(enp.ones(3), training=False).tolist()
        [1.0, 1.0, 1.0]
    """
    _check_p(p, "alpha_dropout")
    x = float_arr(input)
    if not training or p == 0.0:
        return x
    e = enp()
    if p == 1.0:
        return e.zeros_like(x)
    return _alpha_mask(x, p, key, tuple(x.shape))


def _alpha_mask(x, p, key, mshape):
    e = enp()
    alpha_p = -1.7580993408473766  # -scale * alpha of SELU
    keep = random.bernoulli(_key(key), 1.0 - p, mshape)
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    return a * e.where(keep, x, alpha_p) + b


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False, *, key=None):
    """Alpha dropout of whole channels: each (sample, channel) slice of (N, C, ...) is
    kept or set to SELU's negative saturation together, then the affine correction
    of `alpha_dropout` keeps mean and variance (a 2-d (N, C) input drops single
    elements).  The identity unless `training` (False by default, as PyTorch).

    Example:
        >>> import ember.numpy as enp
        >>> from ember import random
        >>> y = feature_alpha_dropout(enp.zeros((1, 2, 3)), 0.5, True, key=random.key(0))
        >>> [len(set(row)) for row in y[0].tolist()]
        [1, 1]
    """
    _check_p(p, "feature_alpha_dropout")
    x = float_arr(input)
    if x.ndim < 2:
        raise ValueError(f"feature_alpha_dropout: feature dropout requires at least 2 dimensions "
                         f"in the input (N, C, ...), got shape {tuple(x.shape)}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return enp().zeros_like(x)
    return _alpha_mask(x, p, key, tuple(x.shape[:2]) + (1,) * (x.ndim - 2))
