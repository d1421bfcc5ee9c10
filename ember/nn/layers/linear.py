"""Linear layers: `Identity`, `Linear`, `Bilinear`, `Flatten`, `Unflatten`.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.Linear(3, 2)(enp.ones((4, 3))).shape
    (4, 2)
"""
from __future__ import annotations

import math

import numpy as np

from .. import functional as F
from .. import init
from ..module import Module
from ._common import check_sizes, init_keys, param_dtype, place

__all__ = ["Identity", "Linear", "Bilinear", "Flatten", "Unflatten"]


class Identity(Module):
    """Returns its input (extra constructor arguments are ignored, as in PyTorch).

    Example:
        >>> import ember.numpy as enp
        >>> Identity(54, unused="x")(enp.ones(2)).tolist()
        [1.0, 1.0]
    """

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x W^T + b with weight (out_features, in_features); PyTorch's default
    initialisation: kaiming_uniform(a=sqrt(5)) weight, U(-1/sqrt(in), 1/sqrt(in)) bias.

    Example:
        >>> m = Linear(20, 30)
        >>> m.weight.shape, m.bias.shape
        ((30, 20), (30,))
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None, *, key=None):
        super().__init__()
        check_sizes(type(self).__name__, in_features=in_features, out_features=out_features)
        self.in_features = int(in_features)
        self.out_features = int(out_features)
        d = param_dtype(dtype)
        self.weight = place(init.zeros_((self.out_features, self.in_features), dtype=d), device)
        self.bias = place(init.zeros_((self.out_features,), dtype=d), device) if bias else None
        self.reset_parameters(key)

    def reset_parameters(self, key=None):
        """Re-draw the parameters with PyTorch's default scheme.

        Example:
            >>> from ember import random
            >>> Linear(2, 2).reset_parameters(random.key(0))
        """
        kw, kb = init_keys(key, 2)
        self.weight = init.kaiming_uniform_(self.weight, a=math.sqrt(5), key=kw)
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            self.bias = init.uniform_(self.bias, -bound, bound, key=kb)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, " \
               f"bias={self.bias is not None}"


class Bilinear(Module):
    """y_k = x1^T W_k x2 + b_k, weight (out, in1, in2), all initialised
    U(-1/sqrt(in1), 1/sqrt(in1)).

    Example:
        >>> import ember.numpy as enp
        >>> Bilinear(2, 3, 4)(enp.ones((5, 2)), enp.ones((5, 3))).shape
        (5, 4)
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device=None, dtype=None, *, key=None):
        super().__init__()
        # the initialisation bound is 1 / sqrt(in1_features)
        check_sizes(type(self).__name__, 1, in1_features=in1_features)
        check_sizes(type(self).__name__, in2_features=in2_features, out_features=out_features)
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        d = param_dtype(dtype)
        self.weight = place(init.zeros_((out_features, in1_features, in2_features), dtype=d), device)
        self.bias = place(init.zeros_((out_features,), dtype=d), device) if bias else None
        self.reset_parameters(key)

    def reset_parameters(self, key=None):
        """Re-draw the parameters.

        Example:
            >>> Bilinear(1, 1, 1).reset_parameters()
        """
        kw, kb = init_keys(key, 2)
        bound = 1 / math.sqrt(self.in1_features)
        self.weight = init.uniform_(self.weight, -bound, bound, key=kw)
        if self.bias is not None:
            self.bias = init.uniform_(self.bias, -bound, bound, key=kb)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Flatten(Module):
    """Flatten dimensions start_dim..end_dim into one.

    Example:
        >>> import ember.numpy as enp
        >>> Flatten()(enp.ones((2, 3, 4))).shape
        (2, 12)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        x = F._util.arr(input)
        s = F._util.check_dim(self.start_dim, x.ndim, "Flatten", "start_dim")
        e = F._util.check_dim(self.end_dim, x.ndim, "Flatten", "end_dim")
        if x.ndim == 0:
            return F._util.enp().reshape(x, (1,))
        if s > e:
            raise ValueError(f"Flatten: start_dim={self.start_dim} comes after end_dim="
                             f"{self.end_dim} for an input of shape {tuple(x.shape)}; PyTorch "
                             f"raises here too{F._util.at_user()}")
        shape = tuple(x.shape[:s]) + (int(np.prod(x.shape[s:e + 1])),) + tuple(x.shape[e + 1:])
        return F._util.enp().reshape(x, shape)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expand dimension `dim` into `unflattened_size`.

    Example:
        >>> import ember.numpy as enp
        >>> Unflatten(1, (3, 4))(enp.ones((2, 12))).shape
        (2, 3, 4)
    """

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        self.dim = dim
        self.unflattened_size = tuple(unflattened_size)

    def forward(self, input):
        x = F._util.arr(input)
        if x.ndim == 0:
            raise IndexError(f"Unflatten: a 0-d input has no dim={self.dim} to unflatten"
                             f"{F._util.at_user()}")
        d = F._util.check_dim(self.dim, x.ndim, "Unflatten")
        sizes = self.unflattened_size
        known = int(np.prod([v for v in sizes if v != -1]))
        n = x.shape[d]
        if (-1 not in sizes and known != n) or (-1 in sizes and (known == 0 or n % known)):
            raise ValueError(f"Unflatten: unflattened_size={sizes} does not multiply up to the "
                             f"size of dim {self.dim} ({n}) of the input of shape "
                             f"{tuple(x.shape)}; PyTorch raises here too{F._util.at_user()}")
        shape = tuple(x.shape[:d]) + sizes + tuple(x.shape[d + 1:])
        return F._util.enp().reshape(x, shape)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
