"""Linear maps: `linear` (x @ W.T + b) and `bilinear` (x1^T W_k x2 + b_k).

Example:
    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.linear(enp.ones((2, 3)), enp.ones((4, 3))).shape
    (2, 4)
"""
from __future__ import annotations

from ._util import arr, at_user, enp
from ...amp._autocast import lower_precision

__all__ = ["linear", "bilinear"]


def _promote(*xs):
    e = enp()
    xs = [arr(x) for x in xs]
    d = e.result_type(*xs)
    return [x if x.dtype == d else e.astype(x, d) for x in xs]


@lower_precision
def linear(input, weight, bias=None):
    """y = input @ weight.T + bias, for weight of shape (out_features, in_features).

    Example:
        >>> import ember.numpy as enp
        >>> linear(enp.ones(2), enp.ones((1, 2)), enp.ones(1)).tolist()
        [3.0]
    """
    x, w = _promote(input, weight)
    if w.ndim not in (1, 2):
        raise ValueError(f"linear: weight must be 1-d or 2-d, got shape {w.shape}")
    if x.shape[-1:] != w.shape[-1:]:
        raise ValueError(f"linear: input with last dimension {x.shape[-1:]} cannot be multiplied "
                         f"by weight of shape {w.shape} (in_features={w.shape[-1]})")
    e = enp()
    y = e.matmul(x, w.T if w.ndim == 2 else w)
    if bias is not None:
        b = arr(bias)
        out = w.shape[0] if w.ndim == 2 else None
        if out is not None and b.ndim and b.shape[-1] not in (1, out):
            raise ValueError(f"linear: bias of shape {tuple(b.shape)} does not match "
                             f"out_features={out} (weight shape {tuple(w.shape)}); PyTorch raises "
                             f"here too. Hint: bias has shape ({out},){at_user()}")
        y = y + b
    return y


@lower_precision
def bilinear(input1, input2, weight, bias=None):
    """y_k = input1^T weight[k] input2 + bias[k], weight of shape (out, in1, in2).

    Example:
        >>> import ember.numpy as enp
        >>> bilinear(enp.ones((5, 2)), enp.ones((5, 3)), enp.ones((4, 2, 3))).shape
        (5, 4)
    """
    x1, x2, w = _promote(input1, input2, weight)
    if w.ndim != 3 or x1.shape[-1] != w.shape[1] or x2.shape[-1] != w.shape[2]:
        raise ValueError(f"bilinear: weight of shape {w.shape} does not match inputs "
                         f"{x1.shape} and {x2.shape}")
    if x1.shape[:-1] != x2.shape[:-1]:
        raise ValueError(f"bilinear: input1 of shape {tuple(x1.shape)} and input2 of shape "
                         f"{tuple(x2.shape)} must have the same batch dimensions; PyTorch raises "
                         f"here too{at_user()}")
    y = enp().einsum("...i,kij,...j->...k", x1, w, x2)
    if bias is not None:
        y = y + arr(bias)
    return y
