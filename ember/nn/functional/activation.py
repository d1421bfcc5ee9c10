"""Activation functions and (log-)softmax, as composites over `ember.numpy`/`ember.lax`
so that every transform applies.

Example:
    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.relu(enp.asarray([-1.0, 2.0])).tolist()
    [0.0, 2.0]
"""
from __future__ import annotations

import math

from ... import lax
from ...transforms.misc import stop_gradient
from ._util import arr, at_user, check_dim, dtype_of, enp, float_arr, float_input, param_like
from ...amp._autocast import full_precision

__all__ = ["relu", "relu6", "leaky_relu", "elu", "selu", "celu", "gelu", "silu", "swish",
           "sigmoid", "tanh", "softplus", "softsign", "mish", "hardswish", "hardsigmoid",
           "hardtanh", "logsigmoid", "tanhshrink", "softshrink", "hardshrink", "threshold",
           "glu", "prelu", "softmax", "log_softmax", "softmin", "logsumexp", "rrelu",
           "gumbel_softmax", "softmax2d"]


def _keep_dtype(out, x):
    """out in x's dtype: PyTorch's clamping activations (hardtanh, relu6, threshold)
    keep an integer input's dtype, where a float bound would promote it here."""
    return out if dtype_of(out) == dtype_of(x) else enp().astype(out, dtype_of(x))


def relu(x, inplace: bool = False):
    """max(x, 0); its derivative at 0 is 0, as in PyTorch.

    Example:
        >>> import ember.numpy as enp
        >>> relu(enp.asarray([-1.0, 1.0])).tolist()
        [0.0, 1.0]
    """
    x = arr(x)
    # `where` rather than `maximum`: maximum splits the gradient at the tie x == 0
    # (0.5), PyTorch gives 0; x <= 0 is False for NaN, which passes through.
    return enp().where(x <= 0, 0, x)


def relu6(x, inplace: bool = False):
    """min(max(x, 0), 6).

    Example:
        >>> import ember.numpy as enp
        >>> relu6(enp.asarray([-1.0, 7.0])).tolist()
        [0.0, 6.0]
    """
    return hardtanh(x, 0.0, 6.0)


def leaky_relu(x, negative_slope: float = 0.01, inplace: bool = False):
    """x if x > 0 else negative_slope * x (the derivative at 0 is negative_slope, as
    in PyTorch).

    Example:
        >>> import ember.numpy as enp
        >>> leaky_relu(enp.asarray([-1.0, 1.0]), 0.1).tolist()
        [-0.10000000149011612, 1.0]
    """
    x = float_input(x, "leaky_relu")
    return enp().where(x > 0, x, x * negative_slope)


def _nonpositive(x):
    # min(x, 0) whose gradient at 0 is 1 (minimum would split the tie), so the
    # exponential branch keeps the point 0, as PyTorch's backward does; positive x are
    # replaced so exp cannot overflow in the branch `where` discards.
    return enp().where(x > 0, 0.0, x)


def elu(x, alpha: float = 1.0, inplace: bool = False):
    """x if x > 0 else alpha * (exp(x) - 1); the derivative at 0 is alpha (PyTorch's
    value: the negative branch owns 0).

    Example:
        >>> import ember.numpy as enp
        >>> elu(enp.asarray([0.0, 1.0])).tolist()
        [0.0, 1.0]
    """
    x = float_input(x, "elu")
    e = enp()
    return e.where(x > 0, x, alpha * e.expm1(_nonpositive(x)))


def selu(x, inplace: bool = False):
    """scale * elu(x, alpha) with the self-normalising constants.

    Example:
        >>> import ember.numpy as enp
        >>> round(selu(enp.asarray(1.0)).item(), 4)
        1.0507
    """
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return scale * elu(x, alpha)


def celu(x, alpha: float = 1.0, inplace: bool = False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); the derivative at 0 is 1.

    Example:
        >>> import ember.numpy as enp
        >>> celu(enp.asarray(2.0)).item()
        2.0
    """
    x = float_input(x, "celu")
    e = enp()
    return e.where(x > 0, x, alpha * e.expm1(_nonpositive(x) / alpha))


def gelu(x, approximate: str = "none"):
    """Gaussian error linear unit: x * Phi(x) exactly (`approximate="none"`, via erf)
    or with the tanh approximation (`approximate="tanh"`).

    Example:
        >>> import ember.numpy as enp
        >>> round(gelu(enp.asarray(1.0)).item(), 4)
        0.8413
    """
    x = float_input(x, "gelu")
    e = enp()
    if approximate == "tanh":
        c = math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + e.tanh(c * (x + 0.044715 * x * x * x)))
    if approximate != "none":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    d = dtype_of(x)
    return 0.5 * x * (1.0 + lax.erf(x * d.type(1.0 / math.sqrt(2.0))))


def silu(x, inplace: bool = False):
    """x * sigmoid(x) (a.k.a. swish).

    Example:
        >>> import ember.numpy as enp
        >>> silu(enp.asarray(0.0)).item()
        0.0
    """
    x = float_input(x, "silu")
    return x * sigmoid(x)


swish = silu


def sigmoid(x):
    """1 / (1 + exp(-x)), computed stably.

    Example:
        >>> import ember.numpy as enp
        >>> sigmoid(enp.asarray(0.0)).item()
        0.5
    """
    return lax.logistic(float_arr(x))


def tanh(x):
    """Hyperbolic tangent.

    Example:
        >>> import ember.numpy as enp
        >>> tanh(enp.asarray(0.0)).item()
        0.0
    """
    return enp().tanh(float_arr(x))


def softplus(x, beta: float = 1.0, threshold: float = 20.0):
    """log(1 + exp(beta * x)) / beta, reverting to x where beta * x > threshold.

    Example:
        >>> import ember.numpy as enp
        >>> round(softplus(enp.asarray(0.0)).item(), 4)
        0.6931
    """
    x = float_input(x, "softplus")
    e = enp()
    bx = x * beta
    soft = e.logaddexp(bx, 0.0) / beta
    return e.where(bx > threshold, x, soft)


def softsign(x):
    """x / (1 + |x|).

    Example:
        >>> import ember.numpy as enp
        >>> softsign(enp.asarray(1.0)).item()
        0.5
    """
    x = float_arr(x)
    return x / (1.0 + enp().abs(x))


def mish(x, inplace: bool = False):
    """x * tanh(softplus(x)).

    Example:
        >>> import ember.numpy as enp
        >>> mish(enp.asarray(0.0)).item()
        0.0
    """
    x = float_input(x, "mish")
    return x * enp().tanh(softplus(x))


def hardsigmoid(x, inplace: bool = False):
    """relu6(x + 3) / 6.

    Example:
        >>> import ember.numpy as enp
        >>> hardsigmoid(enp.asarray(0.0)).item()
        0.5
    """
    x = float_input(x, "hardsigmoid")
    return relu6(x + 3.0) / 6.0


def hardswish(x, inplace: bool = False):
    """x * relu6(x + 3) / 6.

    Example:
        >>> import ember.numpy as enp
        >>> hardswish(enp.asarray(3.0)).item()
        3.0
    """
    x = float_input(x, "hardswish")
    return x * hardsigmoid(x)


def hardtanh(x, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    """x clamped to [min_val, max_val]; the derivative is 1 strictly inside and 0 at
    and beyond the bounds, as in PyTorch.

    Example:
        >>> import ember.numpy as enp
        >>> hardtanh(enp.asarray([-2.0, 0.5])).tolist()
        [-1.0, 0.5]
    """
    if isinstance(min_val, (int, float)) and isinstance(max_val, (int, float)) and min_val > max_val:
        raise ValueError(f"hardtanh: min_val cannot be greater than max_val, got min_val={min_val} "
                         f"and max_val={max_val}")
    x = arr(x)
    e = enp()
    # two `where`s, not minimum/maximum: those give 0.5 at a bound (a tie), PyTorch 0
    out = e.where(x <= min_val, min_val, e.where(x >= max_val, max_val, x))
    return _keep_dtype(out, x)


def logsigmoid(x):
    """log(sigmoid(x)) = -softplus(-x), computed stably.

    Example:
        >>> import ember.numpy as enp
        >>> round(logsigmoid(enp.asarray(0.0)).item(), 4)
        -0.6931
    """
    x = float_input(x, "logsigmoid")
    return -enp().logaddexp(-x, 0.0)


def tanhshrink(x):
    """x - tanh(x).

    Example:
        >>> import ember.numpy as enp
        >>> tanhshrink(enp.asarray(0.0)).item()
        0.0
    """
    x = float_arr(x)
    return x - enp().tanh(x)


def softshrink(x, lambd: float = 0.5):
    """x - lambd if x > lambd, x + lambd if x < -lambd, else 0.

    Example:
        >>> import ember.numpy as enp
        >>> softshrink(enp.asarray([1.0, 0.2])).tolist()
        [0.5, 0.0]
    """
    x = float_input(x, "softshrink")
    e = enp()
    return e.where(x > lambd, x - lambd, e.where(x < -lambd, x + lambd, 0.0))


def hardshrink(x, lambd: float = 0.5):
    """x where |x| > lambd, else 0.

    Example:
        >>> import ember.numpy as enp
        >>> hardshrink(enp.asarray([1.0, 0.2])).tolist()
        [1.0, 0.0]
    """
    x = float_input(x, "hardshrink")
    e = enp()
    return e.where(e.abs(x) > lambd, x, 0.0)


def threshold(x, threshold: float, value: float, inplace: bool = False):
    """x where x > threshold, else value.

    Example:
        >>> import ember.numpy as enp
        >>> threshold(enp.asarray([1.0, 3.0]), 2.0, -1.0).tolist()
        [-1.0, 3.0]
    """
    x = arr(x)
    return _keep_dtype(enp().where(x > threshold, x, value), x)


def glu(x, dim: int = -1):
    """Gated linear unit: a * sigmoid(b) for the two halves of x along `dim`.

    Example:
        >>> import ember.numpy as enp
        >>> glu(enp.asarray([2.0, 0.0])).tolist()
        [1.0]
    """
    x = float_input(x, "glu")
    if x.ndim == 0:
        raise ValueError(f"glu: a 0-d input has no dimension to halve; PyTorch raises here too"
                         f"{at_user()}")
    dim = check_dim(dim, x.ndim, "glu")
    n = x.shape[dim]
    if n % 2:
        raise ValueError(f"glu: dimension {dim} must have an even size, got {n} (input shape "
                         f"{tuple(x.shape)}){at_user()}")
    a, b = enp().split(x, 2, axis=dim)
    return a * sigmoid(b)


def prelu(x, weight):
    """x if x > 0 else weight * x, `weight` broadcast over the channel dimension 1
    (the derivative in x at 0 is the weight, as in PyTorch).

    Example:
        >>> import ember.numpy as enp
        >>> prelu(enp.asarray([[-1.0, 1.0]]), enp.asarray([0.5])).tolist()
        [[-0.5, 1.0]]
    """
    x = float_input(x, "prelu")
    w = param_like(weight, x, "weight", "prelu", mixed_half=False)  # torch: no promotion
    if w.size == 1:  # one slope shared by every element: the output keeps x's shape
        w = enp().reshape(w, ())
    elif x.ndim == 0:
        raise ValueError(f"prelu: a 0-d input is not allowed with a weight of shape "
                         f"{tuple(w.shape)}; PyTorch raises here too{at_user()}")
    else:
        channels = x.shape[1] if x.ndim >= 2 else 1
        if w.ndim != 1 or w.size != channels:
            raise ValueError(f"prelu: weight has {w.size} parameters (shape {tuple(w.shape)}) but "
                             f"the input (shape {tuple(x.shape)}) has {channels} channel(s) at dim "
                             f"{1 if x.ndim >= 2 else 0}; PyTorch raises here too. Hint: "
                             f"PReLU(num_parameters=C) for C channels, or 1 parameter shared by "
                             f"all{at_user()}")
    if w.size > 1 and x.ndim >= 2:
        w = enp().reshape(w, (w.shape[0],) + (1,) * (x.ndim - 2))
    return enp().where(x > 0, x, w * x)


def _axis(x, dim, op):
    if dim is None:
        if x.ndim in (0, 1, 3):
            return 0
        return 1
    return check_dim(dim, x.ndim, op)


@full_precision
def softmax(x, dim=None, dtype=None):
    """exp(x) / sum(exp(x)) along `dim` (shifted by the maximum for stability).  As in
    PyTorch, `dim=None` picks 0 for 0-, 1- and 3-d inputs and 1 otherwise.

    Example:
        >>> import ember.numpy as enp
        >>> softmax(enp.asarray([0.0, 0.0]), dim=0).tolist()
        [0.5, 0.5]
    """
    e = enp()
    # an integer input needs dtype= (torch casts to it first), as in PyTorch
    x = float_input(x, "softmax") if dtype is None else e.astype(arr(x), dtype)
    ax = _axis(x, dim, "softmax")
    if x.ndim == 0:
        return e.ones_like(x)
    if x.size == 0:  # nothing to normalise: an empty result, as in PyTorch
        return x
    m = stop_gradient(e.max(x, axis=ax, keepdims=True))
    m = e.where(e.isfinite(m), m, 0.0)
    z = e.exp(x - m)
    return z / e.sum(z, axis=ax, keepdims=True)


@full_precision
def log_softmax(x, dim=None, dtype=None):
    """x - logsumexp(x) along `dim`, computed stably.

    Example:
        >>> import ember.numpy as enp
        >>> [round(v, 4) for v in log_softmax(enp.asarray([0.0, 0.0]), dim=0).tolist()]
        [-0.6931, -0.6931]
    """
    e = enp()
    # an integer input needs dtype= (torch casts to it first), as in PyTorch
    x = float_input(x, "log_softmax") if dtype is None else e.astype(arr(x), dtype)
    ax = _axis(x, dim, "log_softmax")
    if x.ndim == 0:
        return e.zeros_like(x)
    if x.size == 0:  # nothing to normalise: an empty result, as in PyTorch
        return x
    m = stop_gradient(e.max(x, axis=ax, keepdims=True))
    m = e.where(e.isfinite(m), m, 0.0)
    s = x - m
    return s - e.log(e.sum(e.exp(s), axis=ax, keepdims=True))


def softmin(x, dim=None, dtype=None):
    """softmax(-x).

    Example:
        >>> import ember.numpy as enp
        >>> softmin(enp.asarray([0.0, 0.0]), dim=0).tolist()
        [0.5, 0.5]
    """
    x = float_input(x, "softmin") if dtype is None else enp().astype(arr(x), dtype)
    return softmax(-x, dim)


@full_precision
def logsumexp(x, dim=None, keepdim: bool = False):
    """log(sum(exp(x))) over `dim` (all axes when None), computed stably.

    Example:
        >>> import ember.numpy as enp
        >>> round(logsumexp(enp.asarray([0.0, 0.0])).item(), 4)
        0.6931
    """
    x = float_arr(x)
    e = enp()
    axes = tuple(range(x.ndim)) if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    m = stop_gradient(e.max(x, axis=axes, keepdims=True))
    m = e.where(e.isfinite(m), m, 0.0)
    out = e.log(e.sum(e.exp(x - m), axis=axes, keepdims=True)) + m
    return out if keepdim else e.squeeze(out, axis=axes)


def _rng_key(key):
    if key is None:
        from ..module import next_rng_key
        return next_rng_key()
    return key


def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False, *, key=None):
    """Randomized leaky ReLU: x if x > 0 else a * x.  In training each element draws
    its own slope a ~ U(lower, upper) (from `key`, by default the forward pass's RNG
    stream, as dropout); otherwise a is the fixed mean (lower + upper) / 2.

    Example:
        >>> import ember.numpy as enp
        >>> rrelu(enp.asarray([-2.0, 3.0]), 0.25, 0.75).tolist()
        [-1.0, 3.0]
    """
    x = float_input(input, "rrelu")
    lower, upper = float(lower), float(upper)
    if not lower <= upper:
        raise ValueError(f"rrelu: lower bound should be less than or equal to the upper bound, got "
                         f"lower={lower}, upper={upper}")
    e = enp()
    if not training:
        return e.where(x > 0, x, x * ((lower + upper) / 2))
    from ... import random
    a = random.uniform(_rng_key(key), tuple(x.shape), dtype_of(x), lower, upper)
    return e.where(x > 0, x, x * a)


def gumbel_softmax(logits, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1,
                   *, key=None):
    """Sample from the Gumbel-softmax (concrete) distribution: softmax((logits + g) / tau)
    along `dim` with g standard Gumbel noise (from `key`, by default the forward pass's
    RNG stream).  `hard=True` returns the one-hot of the sample's argmax whose gradient
    is the soft sample's (the straight-through estimator).  `eps` is unused, as in
    PyTorch, which deprecated it.

    Example:
        >>> import ember.numpy as enp
        >>> from ember import random
        >>> y = gumbel_softmax(enp.zeros((2, 3)), hard=True, key=random.key(0))
        >>> y.sum(-1).tolist()
        [1.0, 1.0]
    """
    from ... import random
    x = float_input(logits, "gumbel_softmax")
    if x.ndim == 0:
        raise ValueError("gumbel_softmax: logits must have at least one dimension, got a 0-d array")
    e = enp()
    g = random.gumbel(_rng_key(key), tuple(x.shape), dtype_of(x))
    y = softmax((x + g) / tau, dim)
    if not hard:
        return y
    ax = dim % x.ndim
    idx = e.argmax(y, axis=ax, keepdims=True)
    pos = lax.broadcasted_iota("int32", tuple(x.shape), ax)
    y_hard = e.where(pos == idx, 1.0, 0.0).astype(dtype_of(y))
    return y_hard - stop_gradient(y) + y


def softmax2d(input):
    """Softmax over the channels of (N, C, H, W) or unbatched (C, H, W): dim -3, as
    `nn.Softmax2d`.

    Example:
        >>> import ember.numpy as enp
        >>> softmax2d(enp.zeros((2, 1, 1))).ravel().tolist()
        [0.5, 0.5]
    """
    x = float_input(input, "Softmax2d")
    if x.ndim not in (3, 4):
        raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {x.ndim}D instead "
                         f"(shape {tuple(x.shape)})")
    return softmax(x, -3)
