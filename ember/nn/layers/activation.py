"""Activation layers (PyTorch names and arguments), thin modules over
`ember.nn.functional`.

Example:
    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.GELU(approximate="tanh")(enp.zeros(2)).tolist()
    [0.0, 0.0]
"""
from __future__ import annotations

from .. import functional as F
from .. import init
from ..module import Module, next_rng_key

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Sigmoid", "Tanh",
           "Softplus", "Softsign", "Mish", "Hardswish", "Hardsigmoid", "Hardtanh", "LogSigmoid",
           "Tanhshrink", "Softshrink", "Hardshrink", "Threshold", "GLU", "PReLU", "Softmax",
           "LogSoftmax", "Softmin", "RReLU", "Softmax2d"]


class _Simple(Module):
    _fn = None

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input)


class ReLU(_Simple):
    """max(x, 0).

    Example:
        >>> import ember.numpy as enp
        >>> ReLU()(enp.asarray([-1.0, 1.0])).tolist()
        [0.0, 1.0]
    """
    _fn = staticmethod(F.relu)


class ReLU6(_Simple):
    """min(max(x, 0), 6).

    Example:
        >>> import ember.numpy as enp
        >>> ReLU6()(enp.asarray([7.0])).tolist()
        [6.0]
    """
    _fn = staticmethod(F.relu6)


class SELU(_Simple):
    """Scaled ELU.

    Example:
        >>> import ember.numpy as enp
        >>> SELU()(enp.asarray([0.0])).tolist()
        [0.0]
    """
    _fn = staticmethod(F.selu)


class SiLU(_Simple):
    """x * sigmoid(x).

    Example:
        >>> import ember.numpy as enp
        >>> SiLU()(enp.asarray([0.0])).tolist()
        [0.0]
    """
    _fn = staticmethod(F.silu)


class Mish(_Simple):
    """x * tanh(softplus(x)).

    Example:
        >>> import ember.numpy as enp
        >>> Mish()(enp.asarray([0.0])).tolist()
        [0.0]
    """
    _fn = staticmethod(F.mish)


class Hardswish(_Simple):
    """x * relu6(x + 3) / 6.

    Example:
        >>> import ember.numpy as enp
        >>> Hardswish()(enp.asarray([3.0])).tolist()
        [3.0]
    """
    _fn = staticmethod(F.hardswish)


class Hardsigmoid(_Simple):
    """relu6(x + 3) / 6.

    Example:
        >>> import ember.numpy as enp
        >>> Hardsigmoid()(enp.asarray([0.0])).tolist()
        [0.5]
    """
    _fn = staticmethod(F.hardsigmoid)


class _NoArg(Module):
    _fn = None

    def forward(self, input):
        return type(self)._fn(input)


class Sigmoid(_NoArg):
    """1 / (1 + exp(-x)).

    Example:
        >>> import ember.numpy as enp
        >>> Sigmoid()(enp.asarray([0.0])).tolist()
        [0.5]
    """
    _fn = staticmethod(F.sigmoid)


class Tanh(_NoArg):
    """tanh(x).

    Example:
        >>> import ember.numpy as enp
        >>> Tanh()(enp.asarray([0.0])).tolist()
        [0.0]
    """
    _fn = staticmethod(F.tanh)


class Softsign(_NoArg):
    """x / (1 + |x|).

    Example:
        >>> import ember.numpy as enp
        >>> Softsign()(enp.asarray([1.0])).tolist()
        [0.5]
    """
    _fn = staticmethod(F.softsign)


class LogSigmoid(_NoArg):
    """log(sigmoid(x)).

    Example:
        >>> import ember.numpy as enp
        >>> round(LogSigmoid()(enp.asarray([0.0])).tolist()[0], 4)
        -0.6931
    """
    _fn = staticmethod(F.logsigmoid)


class Tanhshrink(_NoArg):
    """x - tanh(x).

    Example:
        >>> import ember.numpy as enp
        >>> Tanhshrink()(enp.asarray([0.0])).tolist()
        [0.0]
    """
    _fn = staticmethod(F.tanhshrink)


class LeakyReLU(Module):
    """x if x >= 0 else negative_slope * x.

    Example:
        >>> import ember.numpy as enp
        >>> LeakyReLU(0.5)(enp.asarray([-2.0])).tolist()
        [-1.0]
    """

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}"


class ELU(Module):
    """x if x > 0 else alpha * (exp(x) - 1).

    Example:
        >>> import ember.numpy as enp
        >>> ELU()(enp.asarray([1.0])).tolist()
        [1.0]
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha)

    def extra_repr(self):
        return f"alpha={self.alpha}"


class CELU(ELU):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).

    Example:
        >>> import ember.numpy as enp
        >>> CELU()(enp.asarray([1.0])).tolist()
        [1.0]
    """

    def forward(self, input):
        return F.celu(input, self.alpha)


class GELU(Module):
    """Gaussian error linear unit, exact (`approximate="none"`) or tanh-approximated.

    Example:
        >>> GELU().approximate
        'none'
    """

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """log(1 + exp(beta x)) / beta, linear above `threshold`.

    Example:
        >>> Softplus(beta=2.0).beta
        2.0
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """x clamped to [min_val, max_val].

    Example:
        >>> import ember.numpy as enp
        >>> Hardtanh(-2.0, 2.0)(enp.asarray([3.0])).tolist()
        [2.0]
    """

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        if max_val <= min_val:
            raise ValueError(f"Hardtanh: max_val ({max_val}) must be greater than min_val "
                             f"({min_val}); swap them if they were given in the wrong order")
        self.min_val, self.max_val = min_val, max_val

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"


class Softshrink(Module):
    """Soft thresholding by lambd.

    Example:
        >>> import ember.numpy as enp
        >>> Softshrink()(enp.asarray([1.0])).tolist()
        [0.5]
    """

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.softshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Hardshrink(Softshrink):
    """Hard thresholding by lambd.

    Example:
        >>> import ember.numpy as enp
        >>> Hardshrink()(enp.asarray([0.2])).tolist()
        [0.0]
    """

    def forward(self, input):
        return F.hardshrink(input, self.lambd)


class Threshold(Module):
    """x where x > threshold, else value.

    Example:
        >>> import ember.numpy as enp
        >>> Threshold(0.1, 20.0)(enp.asarray([0.0])).tolist()
        [20.0]
    """

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold, self.value = threshold, value
        self.inplace = inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class GLU(Module):
    """Gated linear unit along `dim`.

    Example:
        >>> import ember.numpy as enp
        >>> GLU()(enp.ones((2, 4))).shape
        (2, 2)
    """

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class PReLU(Module):
    """x if x >= 0 else a * x with a learnt `weight` (num_parameters values, init 0.25).

    Example:
        >>> PReLU().weight.tolist()
        [0.25]
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        from ._common import param_dtype
        self.num_parameters = num_parameters
        self.weight = _init.constant_((num_parameters,), init, dtype=param_dtype(dtype))

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


_init = init


class Softmax(Module):
    """softmax along `dim`.

    Example:
        >>> import ember.numpy as enp
        >>> Softmax(dim=-1)(enp.zeros((1, 2))).tolist()
        [[0.5, 0.5]]
    """

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """log_softmax along `dim`.

    Example:
        >>> import ember.numpy as enp
        >>> [round(v, 4) for v in LogSoftmax(dim=-1)(enp.zeros(2)).tolist()]
        [-0.6931, -0.6931]
    """

    def forward(self, input):
        return F.log_softmax(input, self.dim)


class Softmin(Softmax):
    """softmin along `dim`.

    Example:
        >>> import ember.numpy as enp
        >>> Softmin(dim=-1)(enp.zeros(2)).tolist()
        [0.5, 0.5]
    """

    def forward(self, input):
        return F.softmin(input, self.dim)


class RReLU(Module):
    """Randomized leaky ReLU: in training each negative element is scaled by its own
    slope drawn from U(lower, upper) (keys from the forward pass's RNG stream, as
    `Dropout`); in eval mode by the fixed mean slope (lower + upper) / 2.

    Example:
        >>> import ember.numpy as enp
        >>> RReLU(0.25, 0.75).eval()(enp.asarray([-2.0, 3.0])).tolist()
        [-1.0, 3.0]
    """

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        if not float(lower) <= float(upper):
            raise ValueError(f"RReLU: lower bound should be less than or equal to the upper bound, "
                             f"got lower={lower}, upper={upper}")
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        if not self.training:
            return F.rrelu(input, self.lower, self.upper, False)
        return F.rrelu(input, self.lower, self.upper, True, key=next_rng_key())

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of (N, C, H, W) or (C, H, W).

    Example:
        >>> import ember.numpy as enp
        >>> Softmax2d()(enp.zeros((1, 4, 2, 2)))[0, :, 0, 0].tolist()
        [0.25, 0.25, 0.25, 0.25]
    """

    def forward(self, input):
        return F.softmax2d(input)
