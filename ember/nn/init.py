"""Parameter initialisers with PyTorch's names and formulas: each takes an array
(for its shape and dtype) or a shape, and returns a *new* array.

PyTorch's in-place spelling works on module state: given an array that a module
holds as a parameter or buffer, the initialiser also puts the new array in that
slot, so `nn.init.normal_(layer.weight)` re-initialises the layer as in PyTorch.
Arrays are immutable, so other references to the old array (`w = layer.weight`
taken before) keep the old values.  Only the result holds the new values for an
array no module holds, and for one several untied slots hold (cloned layers that
share arrays until one is replaced), which is ambiguous; a tied parameter is
re-initialised in all its slots.  In the ambiguous case write
`w = init.normal_(w)` / `layer.weight = init.normal_(layer.weight)` there (the
statement `init.normal_(layer.weight)` on such an array raises a ValueError saying
so).  Under a transform (a traced argument) nothing is rebound.

Random initialisers take `key=`; without one they draw from the global key
(`nn.manual_seed`).  `dtype` defaults to the given array's dtype, or the default float
(float32 unless changed, as `torch.set_default_dtype` does) for a shape.

Example:
    >>> from ember import random
    >>> from ember.nn import init
    >>> w = init.xavier_uniform_((3, 4), key=random.key(0))
    >>> w.shape
    (3, 4)
"""
from __future__ import annotations

import dis
import functools
import math
import sys
import warnings

import numpy as np

from .. import dtypes as _dt
from .. import random
from .. import numpy as enp
from ..fx.core import get_aval

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_",
           "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "orthogonal_", "sparse_", "fan_in_and_fan_out"]


def _shape_dtype(x, dtype):
    if isinstance(x, (tuple, list)) or isinstance(x, (int, np.integer)):
        shape = (int(x),) if isinstance(x, (int, np.integer)) else tuple(int(d) for d in x)
        d = _dt.canonicalize(dtype) if dtype is not None else _dt.default_float
    else:
        a = get_aval(x)
        shape = a.shape
        d = _dt.canonicalize(dtype) if dtype is not None else a.dtype
    if not _dt.is_float(d):
        raise TypeError(f"initialisers produce floating-point arrays, got dtype {d}")
    return shape, d


@functools.lru_cache(maxsize=1024)
def _discards_result(code, lasti) -> bool:
    # The instruction after the call: POP_TOP is a statement `init.normal_(w)`, PRINT_EXPR
    # the same at the interactive prompt; anything else uses the result.
    # (f_lasti is the call or, on 3.11, its last inline cache entry)
    for ins in dis.get_instructions(code):
        if ins.offset > lasti:
            return ins.opname in ("POP_TOP", "PRINT_EXPR")
    return False


def _in_place(fn):
    """Make `fn(x, ...)` also rebind the module slot holding the array `x` (PyTorch's
    `init.normal_(layer.weight)`, which updates the layer).  An array several slots
    hold is ambiguous: a call whose result is used leaves the slots to the caller (a
    layer assigning it), one whose result is dropped raises instead of doing nothing."""
    @functools.wraps(fn)
    def run(x, *args, **kwargs):
        out = fn(x, *args, **kwargs)
        from ..array import Array
        if type(x) is Array and type(out) is Array:
            from .module import holding_slots, rebind_array
            if not rebind_array(x, out):
                slots = holding_slots(x)
                caller = sys._getframe(1)
                if len(slots) > 1 and _discards_result(caller.f_code, caller.f_lasti):
                    where = ", ".join(f"{type(m).__name__}.{n}" for m, n in slots[:4])
                    raise ValueError(
                        f"nn.init.{fn.__name__}: this array is held by {len(slots)} module slots "
                        f"({where}{', ...' if len(slots) > 4 else ''}) that are not tied: cloned "
                        f"layers share arrays until one is replaced, so which one to "
                        f"re-initialise is ambiguous. Assign the result to the one you mean, "
                        f"e.g. layer.weight = nn.init.{fn.__name__}(layer.weight, ...)")
        return out
    return run


def _key(key):
    if key is None:
        from .module import _global_next_key
        return _global_next_key()
    return key


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table).

    Example:
        >>> round(calculate_gain("relu"), 4)
        1.4142
    """
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = float(param)
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def fan_in_and_fan_out(shape) -> tuple:
    """(fan_in, fan_out) of a weight shape (out, in, *kernel), as PyTorch computes them.

    Example:
        >>> fan_in_and_fan_out((8, 3, 5, 5))
        (75, 200)
    """
    shape = tuple(shape)
    if len(shape) < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


@_in_place
def uniform_(x, a: float = 0.0, b: float = 1.0, *, key=None, dtype=None):
    """Uniform values in [a, b).

    Example:
        >>> from ember import random
        >>> bool((uniform_((5,), -1.0, 1.0, key=random.key(0)) < 1.0).all())
        True
    """
    _check_range("uniform_", a, b)
    shape, d = _shape_dtype(x, dtype)
    return random.uniform(_key(key), shape, d, a, b)


def _check_range(op, a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a > b:
        raise ValueError(f"init.{op}: expects a [from, to) range, but got a={a!r} > b={b!r}; "
                         f"PyTorch raises here too. Hint: swap the bounds")


def _check_std(op, std):
    if isinstance(std, (int, float)) and std < 0:
        raise ValueError(f"init.{op}: std must be >= 0, got std={std!r}; PyTorch raises here too")


@_in_place
def normal_(x, mean: float = 0.0, std: float = 1.0, *, key=None, dtype=None):
    """Normal values with the given mean and standard deviation.

    Example:
        >>> from ember import random
        >>> normal_((2, 2), key=random.key(0)).shape
        (2, 2)
    """
    _check_std("normal_", std)
    shape, d = _shape_dtype(x, dtype)
    return random.normal(_key(key), shape, d) * std + mean


@_in_place
def trunc_normal_(x, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, *,
                  key=None, dtype=None):
    """Normal(mean, std) values truncated to [a, b] (absolute bounds, as PyTorch).

    Example:
        >>> from ember import random
        >>> w = trunc_normal_((100,), std=0.02, a=-0.04, b=0.04, key=random.key(0))
        >>> bool((abs(w) <= 0.04).all())
        True
    """
    _check_std("trunc_normal_", std)
    _check_range("trunc_normal_", a, b)
    shape, d = _shape_dtype(x, dtype)
    lo, hi = (a - mean) / std, (b - mean) / std
    z = random.truncated_normal(_key(key), lo, hi, shape, _dt.float32 if d.itemsize < 4 else d)
    out = z * std + mean
    return enp.astype(enp.clip(out, a, b), d)


@_in_place
def constant_(x, val, *, dtype=None):
    """An array full of `val`.

    Example:
        >>> constant_((2,), 0.5).tolist()
        [0.5, 0.5]
    """
    shape, d = _shape_dtype(x, dtype)
    return enp.full(shape, val, dtype=d)


@_in_place
def ones_(x, *, dtype=None):
    """An array of ones.

    Example:
        >>> ones_((2,)).tolist()
        [1.0, 1.0]
    """
    return constant_.__wrapped__(x, 1.0, dtype=dtype)


@_in_place
def zeros_(x, *, dtype=None):
    """An array of zeros.

    Example:
        >>> zeros_((2,)).tolist()
        [0.0, 0.0]
    """
    return constant_.__wrapped__(x, 0.0, dtype=dtype)


@_in_place
def eye_(x, *, dtype=None):
    """The identity matrix of a 2-d shape.

    Example:
        >>> eye_((2, 3)).tolist()
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    """
    shape, d = _shape_dtype(x, dtype)
    if len(shape) != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return enp.eye(shape[0], shape[1], dtype=d)


@_in_place
def dirac_(x, groups: int = 1, *, dtype=None):
    """A convolution kernel (out, in, *k) that passes the input through (per group).

    Example:
        >>> dirac_((2, 2, 3)).tolist()[0]
        [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
    """
    shape, d = _shape_dtype(x, dtype)
    if len(shape) not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    if shape[0] % groups:
        raise ValueError("dim 0 must be divisible by groups")
    w = np.zeros(shape, np.float64)
    out_per = shape[0] // groups
    centre = tuple(k // 2 for k in shape[2:])
    for g in range(groups):
        for i in range(min(out_per, shape[1])):
            w[(g * out_per + i, i) + centre] = 1.0
    return enp.asarray(w.astype(d))


@_in_place
def xavier_uniform_(x, gain: float = 1.0, *, key=None, dtype=None):
    """Glorot uniform: U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out)).

    Example:
        >>> from ember import random
        >>> w = xavier_uniform_((10, 10), key=random.key(0))
        >>> bool((abs(w) <= (6 / 20) ** 0.5).all())
        True
    """
    shape, d = _shape_dtype(x, dtype)
    fi, fo = fan_in_and_fan_out(shape)
    b = gain * math.sqrt(6.0 / float(fi + fo))
    return random.uniform(_key(key), shape, d, -b, b)


@_in_place
def xavier_normal_(x, gain: float = 1.0, *, key=None, dtype=None):
    """Glorot normal: N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out)).

    Example:
        >>> from ember import random
        >>> xavier_normal_((4, 4), key=random.key(0)).shape
        (4, 4)
    """
    shape, d = _shape_dtype(x, dtype)
    fi, fo = fan_in_and_fan_out(shape)
    std = gain * math.sqrt(2.0 / float(fi + fo))
    return random.normal(_key(key), shape, d) * std


def _kaiming_std(shape, a, mode, nonlinearity):
    fi, fo = fan_in_and_fan_out(shape)
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan = fi if mode == "fan_in" else fo
    return calculate_gain(nonlinearity, a) / math.sqrt(fan) if fan else 0.0


@_in_place
def kaiming_uniform_(x, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", *,
                     key=None, dtype=None):
    """He uniform: U(-b, b), b = gain(nonlinearity, a) * sqrt(3 / fan_mode).  Linear and
    Conv layers use a = sqrt(5), i.e. b = 1 / sqrt(fan_in).

    Example:
        >>> import math
        >>> from ember import random
        >>> w = kaiming_uniform_((4, 9), a=math.sqrt(5), key=random.key(0))
        >>> bool((abs(w) <= 1 / 3).all())
        True
    """
    shape, d = _shape_dtype(x, dtype)
    b = math.sqrt(3.0) * _kaiming_std(shape, a, mode, nonlinearity)
    return random.uniform(_key(key), shape, d, -b, b)


@_in_place
def kaiming_normal_(x, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", *,
                    key=None, dtype=None):
    """He normal: N(0, std^2), std = gain(nonlinearity, a) / sqrt(fan_mode).

    Example:
        >>> from ember import random
        >>> kaiming_normal_((4, 4), nonlinearity="relu", key=random.key(0)).shape
        (4, 4)
    """
    shape, d = _shape_dtype(x, dtype)
    return random.normal(_key(key), shape, d) * _kaiming_std(shape, a, mode, nonlinearity)


@_in_place
def orthogonal_(x, gain: float = 1.0, *, key=None, dtype=None):
    """A (semi-)orthogonal matrix (trailing dimensions flattened) from the QR
    decomposition of a normal matrix, signs fixed by diag(R), scaled by `gain`.

    Example:
        >>> import numpy as np
        >>> from ember import random
        >>> q = np.asarray(orthogonal_((3, 3), key=random.key(0)))
        >>> bool(np.allclose(q @ q.T, np.eye(3), atol=1e-5))
        True
    """
    e = enp
    shape, d = _shape_dtype(x, dtype)
    if len(shape) < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    rows = shape[0]
    cols = int(np.prod(shape[1:]))
    cd = _dt.float32 if d.itemsize < 4 else d
    flat = random.normal(_key(key), (rows, cols), cd)
    if rows < cols:
        flat = flat.T
    q, r = e.linalg.qr(flat)
    q = q * e.sign(e.diagonal(r))
    if rows < cols:
        q = q.T
    return e.astype(e.reshape(q * gain, shape), d)


@_in_place
def sparse_(x, sparsity: float, std: float = 0.01, *, key=None, dtype=None):
    """A 2-d normal(0, std) matrix with a fraction `sparsity` of each column zeroed.

    Example:
        >>> from ember import random
        >>> w = sparse_((10, 3), 0.5, key=random.key(0))
        >>> int((w == 0).sum())
        15
    """
    e = enp
    shape, d = _shape_dtype(x, dtype)
    if len(shape) != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = shape
    nz = int(math.ceil(sparsity * rows))
    k1, k2 = random.split(_key(key))
    w = random.normal(k1, shape, d) * std
    # Per column, zero the rows ranked first by an independent random permutation.
    ranks = e.argsort(e.argsort(random.uniform(k2, shape), axis=0), axis=0)
    return e.where(ranks < nz, 0.0, w).astype(d)


# --- PyTorch's deprecated spellings without the trailing underscore --------------------

def _deprecated(new):
    raw = getattr(new, "__wrapped__", new)
    old = new.__name__[:-1]

    def deprecated_init(x, *args, **kwargs):
        # stacklevel 3: past this function and the `_in_place` wrapper, to the caller
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new.__name__}`.",
                      FutureWarning, stacklevel=3)
        return raw(x, *args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old
    deprecated_init.__doc__ = (
        f"`{new.__name__}` under PyTorch's deprecated name: warns with FutureWarning (as "
        f"torch does), then acts as `{new.__name__}`, rebinding the module slot too.\n\n"
        f"    Example:\n"
        f"        >>> import warnings\n"
        f"        >>> from ember.nn import init\n"
        f"        >>> with warnings.catch_warnings(record=True) as w:\n"
        f"        ...     warnings.simplefilter(\"always\")\n"
        f"        ...     _ = init.{old}({'(2, 2, 3)' if old == 'dirac' else '(2, 2)'}"
        f"{', 0.5' if old in ('constant', 'sparse') else ''})\n"
        f"        >>> w[0].category.__name__\n"
        f"        'FutureWarning'\n")
    return _in_place(deprecated_init)


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
__all__ += ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
            "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]
