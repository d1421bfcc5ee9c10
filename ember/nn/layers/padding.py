"""Padding layers with PyTorch's names (`ZeroPad1d/2d/3d`, `ConstantPad*`, `ReflectionPad*`,
`ReplicationPad*`, `CircularPad*`), thin modules over `F.pad`.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.ReflectionPad1d(2)(enp.asarray([[[0.0, 1.0, 2.0]]])).tolist()
    [[[2.0, 1.0, 0.0, 1.0, 2.0, 1.0, 0.0]]]
"""
from __future__ import annotations

import numpy as np

from .. import functional as F
from ..module import Module

__all__ = ["ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
           "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


def _padding_tuple(padding, n, name):
    if isinstance(padding, (int, np.integer)):
        return (int(padding),) * (2 * n)
    t = tuple(int(p) for p in padding)
    if len(t) != 2 * n:
        raise ValueError(f"{name}: padding must be an int or a tuple of {2 * n} ints (left, right"
                         f"{', top, bottom' if n > 1 else ''}{', front, back' if n > 2 else ''}), "
                         f"got {padding!r}")
    return t


class _PadNd(Module):
    _n = 1
    _mode = "constant"

    def __init__(self, padding):
        super().__init__()
        self.padding = _padding_tuple(padding, self._n, type(self).__name__)

    def _check_input(self, x):
        # PyTorch's non-constant modes take (C, spatial...) or (N, C, spatial...) only
        ok = (self._n + 1, self._n + 2)
        if x.ndim not in ok:
            raise ValueError(f"{type(self).__name__}: expected {ok[0]}D or {ok[1]}D input (got "
                             f"{x.ndim}D input of shape {tuple(x.shape)})")

    def forward(self, input):
        x = F._util.arr(input)
        self._check_input(x)
        return F.pad(x, self.padding, mode=self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float):
        super().__init__(padding)
        self.value = value

    def _check_input(self, x):
        pass  # constant padding works on any rank with enough dimensions (F.pad checks)

    def forward(self, input):
        return F.pad(input, self.padding, mode="constant", value=self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pad the last dimension with zeros by `padding` (an int or (left, right));
    negative widths crop.

    Example:
        >>> import ember.numpy as enp
        >>> ZeroPad1d((1, 2))(enp.ones((1, 1, 2))).tolist()
        [[[0.0, 1.0, 1.0, 0.0, 0.0]]]
    """
    _n = 1


class ZeroPad2d(_ZeroPadNd):
    """Pad the last two dimensions with zeros: (left, right, top, bottom).

    Example:
        >>> import ember.numpy as enp
        >>> ZeroPad2d((1, 1, 2, 0))
        ZeroPad2d((1, 1, 2, 0))
        >>> ZeroPad2d((1, 1, 2, 0))(enp.ones((1, 3, 3))).shape
        (1, 5, 5)
    """
    _n = 2


class ZeroPad3d(_ZeroPadNd):
    """Pad the last three dimensions with zeros: (left, right, top, bottom, front, back).

    Example:
        >>> import ember.numpy as enp
        >>> ZeroPad3d(1)(enp.ones((1, 1, 2, 2, 2))).shape
        (1, 1, 4, 4, 4)
    """
    _n = 3


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dimension with `value`.

    Example:
        >>> import ember.numpy as enp
        >>> ConstantPad1d(2, 3.5)
        ConstantPad1d(padding=(2, 2), value=3.5)
        >>> ConstantPad1d((1, 0), 3.5)(enp.zeros((1, 2))).tolist()
        [[3.5, 0.0, 0.0]]
    """
    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dimensions with `value`: (left, right, top, bottom).

    Example:
        >>> import ember.numpy as enp
        >>> ConstantPad2d((1, 2, 3, 4), 1.0)(enp.zeros((1, 2, 2))).shape
        (1, 9, 5)
    """
    _n = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dimensions with `value`.

    Example:
        >>> import ember.numpy as enp
        >>> ConstantPad3d(1, -1.0)(enp.zeros((1, 1, 1, 1))).shape
        (1, 3, 3, 3)
    """
    _n = 3


class ReflectionPad1d(_PadNd):
    """Pad the last dimension of (C, W) or (N, C, W) with its reflection (the edge is
    not repeated); each width must be smaller than the dimension.

    Example:
        >>> import ember.numpy as enp
        >>> ReflectionPad1d((1, 2))(enp.asarray([[0.0, 1.0, 2.0]])).tolist()
        [[1.0, 0.0, 1.0, 2.0, 1.0, 0.0]]
    """
    _n, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Reflection padding of (C, H, W) or (N, C, H, W): (left, right, top, bottom).

    Example:
        >>> import ember.numpy as enp
        >>> ReflectionPad2d(1)(enp.ones((1, 1, 3, 3))).shape
        (1, 1, 5, 5)
    """
    _n, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Reflection padding of (C, D, H, W) or (N, C, D, H, W).

    Example:
        >>> import ember.numpy as enp
        >>> ReflectionPad3d(1)(enp.ones((1, 2, 2, 2))).shape
        (1, 4, 4, 4)
    """
    _n, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Pad the last dimension of (C, W) or (N, C, W) by repeating its edge values.

    Example:
        >>> import ember.numpy as enp
        >>> ReplicationPad1d((2, 1))(enp.asarray([[0.0, 1.0]])).tolist()
        [[0.0, 0.0, 0.0, 1.0, 1.0]]
    """
    _n, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Edge-replicating padding of (C, H, W) or (N, C, H, W).

    Example:
        >>> import ember.numpy as enp
        >>> ReplicationPad2d(1)(enp.ones((1, 2, 2))).shape
        (1, 4, 4)
    """
    _n, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Edge-replicating padding of (C, D, H, W) or (N, C, D, H, W).

    Example:
        >>> import ember.numpy as enp
        >>> ReplicationPad3d((1, 0, 1, 0, 1, 0))(enp.ones((1, 1, 2, 2, 2))).shape
        (1, 1, 3, 3, 3)
    """
    _n, _mode = 3, "replicate"


class _CircularPadNd(_PadNd):
    _mode = "circular"

    def forward(self, input):
        x = F._util.arr(input)
        self._check_input(x)
        # PyTorch crops negative widths first and wraps the rest around the cropped
        # input, at most once (a width larger than the dimension is an error there)
        crop = tuple(min(p, 0) for p in self.padding)
        grow = tuple(max(p, 0) for p in self.padding)
        if any(crop):
            x = F.pad(x, crop)
        for i in range(self._n):
            n = x.shape[x.ndim - 1 - i]
            if max(grow[2 * i], grow[2 * i + 1]) > n:
                raise ValueError(f"{type(self).__name__}: padding {self.padding} wraps around more "
                                 f"than once: dimension {x.ndim - 1 - i} has size {n} (input shape "
                                 f"{tuple(x.shape)}); each width can be at most the dimension")
        return F.pad(x, grow, mode="circular")


class CircularPad1d(_CircularPadNd):
    """Pad the last dimension of (C, W) or (N, C, W) by wrapping around.

    Example:
        >>> import ember.numpy as enp
        >>> CircularPad1d(2)(enp.asarray([[0.0, 1.0, 2.0]])).tolist()
        [[1.0, 2.0, 0.0, 1.0, 2.0, 0.0, 1.0]]
    """
    _n = 1


class CircularPad2d(_CircularPadNd):
    """Circular padding of (C, H, W) or (N, C, H, W).

    Example:
        >>> import ember.numpy as enp
        >>> CircularPad2d(1)(enp.ones((1, 1, 2, 2))).shape
        (1, 1, 4, 4)
    """
    _n = 2


class CircularPad3d(_CircularPadNd):
    """Circular padding of (C, D, H, W) or (N, C, D, H, W).

    Example:
        >>> import ember.numpy as enp
        >>> CircularPad3d((1, 0, 1, 0, 1, 0))
        CircularPad3d((1, 0, 1, 0, 1, 0))
    """
    _n = 3
