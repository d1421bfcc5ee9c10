"""Small helpers shared by the `ember.nn.functional` families."""
from __future__ import annotations

import math

import numpy as np

from ... import dtypes as _dt
from ...fx.core import get_aval
from ...transforms.util import at_user  # noqa: F401  (the one helper for the user's line)


def check_dim(dim, ndim: int, op: str, name: str = "dim") -> int:
    """`dim` as a non-negative axis of an `ndim`-d input, or PyTorch's IndexError
    ("Dimension out of range") naming `op`, the argument and the valid range; a 0-d
    input accepts dim 0 and -1, as in PyTorch.

    Example:
        >>> check_dim(-1, 3, "softmax")
        2
    """
    import operator
    try:
        d = operator.index(dim)
    except TypeError:
        raise TypeError(f"{op}: {name} must be an int, got {type(dim).__name__} {dim!r}"
                        f"{at_user()}") from None
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of [{-n}, "
                         f"{n - 1}], but got {name}={d}) for a {ndim}-d input; PyTorch raises "
                         f"here too{at_user()}")
    return d % n if ndim else 0


def enp():
    import ember.numpy as m
    return m


def arr(x):
    """x as an ember array (Python scalars become weakly typed float32/int32)."""
    return enp().asarray(x)


def float_arr(x):
    """x as a floating-point array (integers promote to float32)."""
    x = arr(x)
    if not _dt.is_inexact(get_aval(x).dtype):
        x = enp().astype(x, _dt.float32)
    return x


def float_input(x, op: str):
    """x as an array that must already be floating point: TypeError, naming `op`, for
    an integer or bool one where PyTorch has no integer kernel (gelu, softmax, ...);
    `float_arr` instead promotes integers to float32, as torch's unary float functions
    (sigmoid, tanh) do.

    Example:
        >>> import ember.numpy as enp
        >>> float_input(enp.asarray([1, 2]), "gelu")
        Traceback (most recent call last):
        ...
        TypeError: gelu: input must be a floating-point array (float16, bfloat16, float32 or float64), got int32; PyTorch raises here too. Hint: input.astype('float32')
    """
    from ...fx.spelling import user_str
    x = arr(x)
    d = dtype_of(x)
    if not _dt.is_inexact(d):
        raise TypeError(f"{op}: input must be a floating-point array (float16, bfloat16, float32 "
                        f"or float64), got {user_str(d)}; PyTorch raises here too. Hint: "
                        f"input.astype('float32')")
    return x


def dtype_of(x):
    return get_aval(x).dtype


def is_array(v) -> bool:
    """v is an ember array (or a traced one), whose dtype PyTorch would check; a Python
    list or scalar has no dtype of its own and takes the input's."""
    from ...array import Array
    from ...fx.core import Tracer
    return isinstance(v, (Array, Tracer))


def param_like(p, x, name: str, op: str, mixed_half: bool = True):
    """A normalisation's `name` parameter (weight, bias, running statistics) in x's
    dtype, as PyTorch's kernels need it: an array of another dtype raises TypeError,
    except float32 parameters of a float16/bfloat16 input (mixed precision, which
    PyTorch accepts and answers in the input's dtype; `mixed_half=False` refuses that
    too, as torch's prelu does).  A Python list or scalar takes x's dtype.

    Example:
        >>> import ember.numpy as enp
        >>> str(param_like(enp.ones(2), enp.ones(2, dtype="float16"), "weight", "layer_norm").dtype)
        'float16'
    """
    from ...fx.spelling import user_str
    dx = dtype_of(x)
    a = arr(p)
    dp = dtype_of(a)
    half_ok = mixed_half and dp == np.dtype(np.float32) and dx.itemsize == 2 and _dt.is_inexact(dx)
    if is_array(p) and dp != dx and not half_ok:
        also = (f" (it accepts float32 {name} only for a float16/bfloat16 input)"
                if mixed_half else "")
        raise TypeError(f"{op}: {name} ({user_str(dp)}) must have the input's dtype "
                        f"({user_str(dx)}); PyTorch raises here too{also}. Hint: "
                        f"{name}.astype('{user_str(dx)}'), or module.to(dtype) to convert a "
                        f"layer's parameters")
    return a if dp == dx else enp().astype(a, dx)


def same_param_dtype(op: str, **params):
    """TypeError when the array parameters given (e.g. weight=, bias=) differ in dtype,
    which PyTorch's normalisation kernels refuse even where each alone would do."""
    from ...fx.spelling import user_str
    given = {k: dtype_of(v) for k, v in params.items() if is_array(v)}
    if len(set(given.values())) > 1:
        spelled = ", ".join(f"{k} {user_str(d)}" for k, d in given.items())
        raise TypeError(f"{op}: {' and '.join(given)} must have one dtype, got {spelled}; PyTorch "
                        f"raises here too. Hint: convert them together, e.g. module.to(dtype)")


def tuple_n(v, n: int, name: str) -> tuple:
    """An int or a sequence of n ints as an n-tuple of ints."""
    if isinstance(v, (int, np.integer)):
        return (int(v),) * n
    t = tuple(int(a) for a in v)
    if len(t) == 1 and n > 1:
        t = t * n
    if len(t) != n:
        raise ValueError(f"{name} must be an int or a sequence of {n} ints, got {v!r}")
    return t


def reduce_loss(loss, reduction: str, op: str):
    """Apply a PyTorch `reduction` ('none' | 'mean' | 'sum') to elementwise losses."""
    if reduction == "none":
        return loss
    if reduction == "mean":
        return enp().mean(loss)
    if reduction == "sum":
        return enp().sum(loss)
    raise ValueError(f"{op}: {reduction!r} is not a valid value for reduction "
                     f"(use 'none', 'mean' or 'sum')")


def mean_of_sums(num, den, axis=None, keepdims=False, floor=None):
    """sum(num) / sum(den) over `axis` (`den` may be a Python count instead), summed and
    divided in `ember.dtypes.accumulation_dtype` so half-precision counts and sums do
    not overflow; the result has `num`'s dtype.  `floor` clamps the denominator below.

    Example:
        >>> import ember.numpy as enp
        >>> mean_of_sums(enp.ones(70000, dtype="float16"), 70000).item()
        1.0
    """
    e = enp()
    d = dtype_of(num)
    acc = _dt.accumulation_dtype(d)
    s = e.sum(e.astype(num, acc), axis=axis, keepdims=keepdims)
    if isinstance(den, (int, float, np.integer, np.floating)):
        n = float(den)
    else:
        n = e.sum(e.astype(den, acc), axis=axis, keepdims=keepdims)
    if floor is not None:
        n = e.maximum(n, floor)
    return e.astype(s / n, d)


def sqrt(v: float) -> float:
    return math.sqrt(v)
