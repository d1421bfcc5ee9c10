"""The `jax.lax` functions that are compositions of other primitives rather than
primitives of their own: creation (`full`, `broadcast`, ...), splitting and stacking,
`select`, the convolution shorthands, `scatter_sub`, `approx_max_k` and the special
functions whose definitions live in `ember.scipy.special`.

Example:
    >>> from ember import lax
    >>> lax.full((2,), 3.0).tolist(), lax.collapse(lax.full((2, 3), 1), 0).shape
    ([3.0, 3.0], (6,))
"""
from __future__ import annotations

import numpy as np

from . import dtypes as _dt
from .fx.core import get_aval
from .fx.prims.conv import conv_general_dilated
from .fx.prims.elementwise import div, neg, select_n
from .fx.prims.indexing import scatter_add
from .fx.prims.shape import broadcast_in_dim, concatenate, reshape, slice_in_dim, squeeze
from .fx.prims.sort import top_k
from .transforms.misc import stop_gradient  # noqa: F401  (jax.lax.stop_gradient)

__all__ = ["approx_max_k", "approx_min_k", "bessel_i0e", "bessel_i1e", "betainc", "broadcast",
           "broadcast_to_rank", "broadcasted_iota", "collapse", "conv", "conv_with_general_padding",
           "empty", "full", "full_like", "igamma", "igammac", "optimization_barrier", "reciprocal",
           "scatter_sub",
           "select", "split", "stack", "stop_gradient", "tile", "unstack", "zeta"]


def _array(x, dtype=None):
    from .numpy import asarray
    return asarray(x, dtype=dtype)


def full(shape, fill_value, dtype=None):
    """An array of `shape` filled with the scalar `fill_value` (of `dtype`, default the
    fill value's own: a Python float gives the default float).

    Example:
        >>> from ember import lax
        >>> lax.full((2, 2), 7, dtype="int8").tolist()
        [[7, 7], [7, 7]]
    """
    fill = _array(fill_value, dtype)
    if get_aval(fill).ndim:
        raise TypeError(f"full: fill_value must be a scalar, got an array of shape "
                        f"{get_aval(fill).shape}; use ember.numpy.broadcast_to for arrays")
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    return broadcast_in_dim(fill, shape, ())


def full_like(x, fill_value, dtype=None, shape=None):
    """`full` with `x`'s shape and dtype unless `shape` / `dtype` are given.

    Example:
        >>> import ember.numpy as enp
        >>> from ember import lax
        >>> lax.full_like(enp.zeros((2,), "float16"), 1.5).dtype
        dtype('float16')
    """
    a = get_aval(_array(x))
    return full(a.shape if shape is None else shape, fill_value,
                a.dtype if dtype is None else dtype)


def empty(shape, dtype):
    """An array of `shape` and `dtype` whose values are unspecified in JAX; here zeros.

    Example:
        >>> from ember import lax
        >>> lax.empty((2,), "int32").shape
        (2,)
    """
    return full(shape, 0, dtype)


def broadcasted_iota(dtype, shape, dimension):
    """An array of `shape` counting 0, 1, ... along `dimension` (jax.lax.broadcasted_iota).

    Example:
        >>> from ember import lax
        >>> lax.broadcasted_iota("int32", (2, 2), 0).tolist()
        [[0, 0], [1, 1]]
    """
    from .fx.prims.shape import iota
    return iota(dtype, shape, dimension)


def broadcast(operand, sizes):
    """`operand` with new leading dimensions of `sizes` (its values repeated along them).

    Example:
        >>> from ember import lax
        >>> lax.broadcast(lax.full((2,), 1.0), (3,)).shape
        (3, 2)
    """
    x = _array(operand)
    nd, sizes = get_aval(x).ndim, tuple(int(s) for s in sizes)
    return broadcast_in_dim(x, sizes + get_aval(x).shape, tuple(range(len(sizes), len(sizes) + nd)))


def broadcast_to_rank(x, rank):
    """`x` with leading size-1 dimensions added until it has `rank` dimensions.

    Example:
        >>> from ember import lax
        >>> lax.broadcast_to_rank(lax.full((3,), 0.0), 3).shape
        (1, 1, 3)
    """
    x = _array(x)
    nd = get_aval(x).ndim
    return x if nd >= rank else broadcast(x, (1,) * (rank - nd))


def collapse(operand, start_dimension, stop_dimension=None):
    """`operand` with dimensions [start, stop) merged into one.

    Example:
        >>> from ember import lax
        >>> lax.collapse(lax.full((2, 3, 4), 0.0), 1, 3).shape
        (2, 12)
    """
    x = _array(operand)
    shape = get_aval(x).shape
    lo, hi, _ = slice(start_dimension, stop_dimension).indices(len(shape))
    if hi < lo:
        raise ValueError(f"collapse: stop_dimension {stop_dimension} comes before start_dimension "
                         f"{start_dimension} for shape {shape}")
    return reshape(x, shape[:lo] + (int(np.prod(shape[lo:hi], dtype=np.int64)),) + shape[hi:])


def _axis(op, x, axis):
    nd = get_aval(x).ndim
    if not -nd <= axis < nd:
        raise ValueError(f"{op}: axis {axis} is out of range for an operand of shape {get_aval(x).shape}")
    return axis % nd


def split(operand, sizes, axis=0):
    """`operand` cut along `axis` into pieces of the given `sizes` (which must add up to
    that dimension).

    Example:
        >>> from ember import lax
        >>> [p.shape for p in lax.split(lax.full((5, 2), 0.0), (2, 3))]
        [(2, 2), (3, 2)]
    """
    x = _array(operand)
    axis = _axis("split", x, axis)
    sizes = [int(s) for s in sizes]
    n = get_aval(x).shape[axis]
    if any(s < 0 for s in sizes) or sum(sizes) != n:
        raise ValueError(f"split: sizes {tuple(sizes)} must be non-negative and add up to "
                         f"{n}, the size of axis {axis} of shape {get_aval(x).shape}")
    starts = np.cumsum([0] + sizes)
    return [slice_in_dim(x, int(a), int(b), axis=axis) for a, b in zip(starts[:-1], starts[1:])]


def stack(operands, axis=0):
    """The operands (all of one shape) joined along a new `axis`.

    Example:
        >>> from ember import lax
        >>> lax.stack([lax.full((2,), 1.0), lax.full((2,), 2.0)], 1).tolist()
        [[1.0, 2.0], [1.0, 2.0]]
    """
    xs = [_array(x) for x in operands]
    if not xs:
        raise ValueError("stack: needs at least one operand")
    shape = get_aval(xs[0]).shape
    axis = axis % (len(shape) + 1) if -len(shape) - 1 <= axis <= len(shape) else None
    if axis is None:
        raise ValueError(f"stack: axis is out of range for operands of shape {shape}")
    new = shape[:axis] + (1,) + shape[axis:]
    return concatenate([reshape(x, new) for x in xs], axis)


def unstack(x, axis=0):
    """The slices of `x` along `axis`, as a tuple.

    Example:
        >>> from ember import lax
        >>> [p.tolist() for p in lax.unstack(lax.broadcasted_iota("int32", (2, 2), 0))]
        [[0, 0], [1, 1]]
    """
    x = _array(x)
    axis = _axis("unstack", x, axis)
    return tuple(squeeze(slice_in_dim(x, i, i + 1, axis=axis), (axis,))
                 for i in range(get_aval(x).shape[axis]))


def tile(operand, reps):
    """`operand` repeated `reps[i]` times along each dimension i (reps has its rank).

    Example:
        >>> from ember import lax
        >>> lax.tile(lax.broadcasted_iota("int32", (2,), 0), (2,)).tolist()
        [0, 1, 0, 1]
    """
    x = _array(operand)
    shape, reps = get_aval(x).shape, tuple(int(r) for r in reps)
    if len(reps) != len(shape):
        raise ValueError(f"tile: reps {reps} must have one entry per dimension of shape {shape}")
    wide = broadcast_in_dim(x, tuple(v for r, s in zip(reps, shape) for v in (r, s)),
                            tuple(range(1, 2 * len(shape), 2)))
    return reshape(wide, tuple(r * s for r, s in zip(reps, shape)))


def select(pred, on_true, on_false):
    """`on_true` where the bool `pred` holds, else `on_false` (jax.lax.select; pred is
    a scalar or has the operands' shape).

    Example:
        >>> import ember.numpy as enp
        >>> from ember import lax
        >>> lax.select(enp.asarray([True, False]), enp.ones(2), enp.zeros(2)).tolist()
        [1.0, 0.0]
    """
    p = _array(pred)
    if get_aval(p).dtype != np.bool_:
        raise TypeError(f"select: pred must be bool, got {get_aval(p).dtype}; "
                        "compare it (pred != 0) or use lax.select_n for integer selectors")
    return select_n(p, on_false, on_true)


def reciprocal(x):
    """1 / x in x's dtype.

    Example:
        >>> from ember import lax
        >>> lax.reciprocal(lax.full((1,), 4.0)).tolist()
        [0.25]
    """
    x = _array(x)
    return div(_array(1, get_aval(x).dtype), x)


def optimization_barrier(operand, /):
    """The identity on a pytree of arrays.  XLA uses it to stop fusion and
    rematerialisation from moving work across it; ember's scheduler never moves a value
    computed once into a later kernel on its own, so nothing more is needed.

    Example:
        >>> from ember import lax
        >>> lax.optimization_barrier((1.0, 2.0))
        (1.0, 2.0)
    """
    return operand


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """`conv_general_dilated` with no dilation and NCHW / OIHW layouts.

    Example:
        >>> from ember import lax
        >>> lax.conv(lax.full((1, 1, 4, 4), 1.0), lax.full((1, 1, 3, 3), 1.0), (1, 1), "VALID").shape
        (1, 1, 2, 2)
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    """`conv_general_dilated` with NCHW / OIHW layouts.

    Example:
        >>> from ember import lax
        >>> lax.conv_with_general_padding(lax.full((1, 1, 4, 4), 1.0), lax.full((1, 1, 3, 3), 1.0),
        ...                               (1, 1), [(1, 1), (1, 1)], None, (2, 2)).shape
        (1, 1, 2, 2)
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                                precision=precision, preferred_element_type=preferred_element_type)


def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
                unique_indices=False, mode=None):
    """`scatter_add` of the negated updates (wrapping for unsigned integers, as XLA).

    Example:
        >>> import numpy as np
        >>> from ember import lax
        >>> dn = lax.ScatterDimensionNumbers((), (0,), (0,))
        >>> lax.scatter_sub(np.zeros(3, np.float32), np.array([[1], [1]]), np.ones(2, np.float32),
        ...                 dn).tolist()
        [0.0, -2.0, 0.0]
    """
    return scatter_add(operand, scatter_indices, neg(_array(updates)), dimension_numbers, mode,
                       indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)


def _k_along(op, operand, k, axis, largest):
    from .numpy import argsort, take_along_axis
    x = _array(operand)
    axis = _axis(op, x, axis)
    n = get_aval(x).shape[axis]
    if not 0 <= k <= n:
        raise ValueError(f"{op}: k={k} must lie in [0, {n}], the size of axis {axis}")
    if largest:
        return top_k(x, k, axis=axis)
    # ascending, NaN last; stable so ties come lower index first, as top_k's
    i = slice_in_dim(argsort(x, axis=axis, stable=True), 0, k, axis=axis)
    return take_along_axis(x, i, axis, mode="clip"), i.astype(_dt.int32)


def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
    """The `k` largest values along `reduction_dimension` and their indices.  JAX may
    approximate on a TPU; on CPUs and GPUs it returns the exact top k, and so does this.

    Example:
        >>> import numpy as np
        >>> from ember import lax
        >>> v, i = lax.approx_max_k(np.array([3., 1., 2.], np.float32), 2)
        >>> v.tolist(), i.tolist()
        ([3.0, 2.0], [0, 2])
    """
    return _k_along("approx_max_k", operand, int(k), reduction_dimension, True)


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
    """The `k` smallest values along `reduction_dimension`, ascending, and their indices
    (exact, as `approx_max_k`).

    Example:
        >>> import numpy as np
        >>> from ember import lax
        >>> v, i = lax.approx_min_k(np.array([3., 1., 2.], np.float32), 2)
        >>> v.tolist(), i.tolist()
        ([1.0, 2.0], [1, 2])
    """
    return _k_along("approx_min_k", operand, int(k), reduction_dimension, False)


def bessel_i0e(x):
    """exp(-|x|) I0(x) (jax.lax.bessel_i0e; `ember.scipy.special.i0e`).

    Example:
        >>> from ember import lax
        >>> round(float(lax.bessel_i0e(0.0)), 6)
        1.0
    """
    from .scipy.special import i0e
    return i0e(x)


def bessel_i1e(x):
    """exp(-|x|) I1(x) (jax.lax.bessel_i1e; `ember.scipy.special.i1e`).

    Example:
        >>> from ember import lax
        >>> round(float(lax.bessel_i1e(0.0)), 6)
        0.0
    """
    from .scipy.special import i1e
    return i1e(x)


def zeta(x, q):
    """The Hurwitz zeta function (jax.lax.zeta; `ember.scipy.special.zeta`).

    Example:
        >>> from ember import lax
        >>> round(float(lax.zeta(2.0, 1.0)), 6)  # pi**2 / 6
        1.644934
    """
    from .scipy.special import zeta as _zeta
    return _zeta(x, q)


def igamma(a, x):
    """The regularized lower incomplete gamma function P(a, x) (jax.lax.igamma;
    `ember.scipy.special.gammainc`).

    Example:
        >>> from ember import lax
        >>> round(float(lax.igamma(1.0, 1.0)), 5)  # 1 - exp(-1)
        0.63212
    """
    from .scipy.special import gammainc
    return gammainc(a, x)


def igammac(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)
    (jax.lax.igammac; `ember.scipy.special.gammaincc`).

    Example:
        >>> from ember import lax
        >>> round(float(lax.igammac(1.0, 1.0)), 5)  # exp(-1)
        0.36788
    """
    from .scipy.special import gammaincc
    return gammaincc(a, x)


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b) (jax.lax.betainc;
    `ember.scipy.special.betainc`).

    Example:
        >>> from ember import lax
        >>> round(float(lax.betainc(1.0, 1.0, 0.25)), 6)
        0.25
    """
    from .scipy.special import betainc as _betainc
    return _betainc(a, b, x)
