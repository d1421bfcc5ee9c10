"""Shape manipulation: reshape, concatenation and stacking, splitting, flips and
rolls, tiling and repeating, padding, diagonals and axis moves.

Example:
    >>> import ember.numpy as enp
    >>> enp.stack([enp.zeros(2), enp.ones(2)]).shape
    (2, 2)
"""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..fx.core import get_aval, shape_error
from . import _reductions as R
from ._core import broadcast_shapes, broadcast_to, ensure_array, promote_dtypes
from ._elementwise import (add, divide, floor as _floor, minimum, multiply, remainder,
                           round as _round, subtract)
from ._indexing import take
from ._reductions import cumsum, sum as _sum
from ._searching import searchsorted
from ._util import (AxisError, canonicalize_axes, canonicalize_axis, concrete, concrete_or_none,
                    const, no_numpy_feature, static_int)

__all__ = [
    "reshape", "ravel", "broadcast_arrays", "broadcast_to", "broadcast_shapes", "concat",
    "concatenate", "stack", "expand_dims", "squeeze", "flip", "flipud", "fliplr", "moveaxis",
    "swapaxes", "permute_dims", "transpose", "matrix_transpose", "repeat", "roll", "tile",
    "unstack", "split", "array_split", "hsplit", "vsplit", "dsplit", "hstack", "vstack",
    "row_stack", "dstack", "column_stack", "atleast_1d", "atleast_2d", "atleast_3d", "pad",
    "rot90", "diagonal", "trace", "append", "delete", "rollaxis", "insert", "resize",
    "trim_zeros", "block",
]


def _arr(x):
    return ensure_array(x)


def _resolve_shape(shape, size, op="reshape"):
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        shape = [operator.index(s) for s in shape]
    except TypeError:
        raise TypeError(f"{op}: shape must be a tuple of ints, got {shape!r}") from None
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise ValueError(f"{op}: can only specify one unknown dimension (-1), got {tuple(shape)}")
    if any(s < -1 for s in shape):
        raise ValueError(f"{op}: invalid shape {tuple(shape)}")
    if unknown:
        known = 1
        for s in shape:
            if s != -1:
                known *= s
        if known == 0 or size % known:
            raise ValueError(f"{op}: cannot reshape array of size {size} into shape {tuple(shape)}")
        shape[unknown[0]] = size // known
    n = 1
    for s in shape:
        n *= s
    if n != size:
        raise ValueError(f"{op}: cannot reshape array of size {size} into shape {tuple(shape)}")
    return tuple(shape)


def reshape(x, /, shape, *, copy=None, order="C"):
    """Reshape `x` (row-major); one dimension may be -1.

    Example:
        >>> import ember.numpy as enp
        >>> enp.reshape(enp.arange(6), (2, -1)).shape
        (2, 3)
    """
    no_numpy_feature("reshape", order=order)
    x = _arr(x)
    a = get_aval(x)
    return lax.reshape(x, _resolve_shape(shape, a.size))


def ravel(x, /, order="C"):
    """The flattened (1-D) array.

    Example:
        >>> import ember.numpy as enp
        >>> enp.ravel(enp.ones((2, 2))).shape
        (4,)
    """
    no_numpy_feature("ravel", order=order)
    x = _arr(x)
    return lax.reshape(x, (get_aval(x).size,))


def broadcast_arrays(*arrays):
    """Broadcast all arrays to their common shape.

    Example:
        >>> import ember.numpy as enp
        >>> [a.shape for a in enp.broadcast_arrays(enp.ones((2, 1)), enp.ones(3))]
        [(2, 3), (2, 3)]
    """
    arrays = [_arr(a) for a in arrays]
    shape = broadcast_shapes(*[get_aval(a).shape for a in arrays], op="broadcast_arrays")
    return [broadcast_to(a, shape) for a in arrays]


def _promote_all(op, arrays):
    arrays = [_arr(a) for a in arrays]
    if not arrays:
        raise ValueError(f"{op} needs at least one array")
    dts = [get_aval(a).dtype for a in arrays]
    d = _dt.promote(dts, [False] * len(dts))[0]
    return [a if get_aval(a).dtype == d else lax.convert_element_type(a, d) for a in arrays]


def concat(arrays, /, *, axis=0, dtype=None, out=None, casting="same_kind"):
    """Join arrays along an existing axis (axis=None: flatten them first).

    Example:
        >>> import ember.numpy as enp
        >>> enp.concat([enp.zeros(2), enp.ones(1)]).tolist()
        [0.0, 0.0, 1.0]
    """
    no_numpy_feature("concat", out=out)
    if hasattr(arrays, "aval") or isinstance(arrays, np.ndarray):
        arrays = list(arrays)
    arrays = _promote_all("concat", arrays)
    if dtype is not None:
        d = _dt.canonicalize(dtype)
        arrays = [lax.convert_element_type(a, d) for a in arrays]
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    avals = [get_aval(a) for a in arrays]
    nd = avals[0].ndim
    if nd == 0:
        raise ValueError("concat: zero-dimensional arrays cannot be concatenated")
    ax = canonicalize_axis(axis, nd, "concat")
    for av in avals:
        if av.ndim != nd or any(s != t for i, (s, t) in enumerate(zip(av.shape, avals[0].shape))
                                if i != ax):
            raise shape_error("concat", "all input array dimensions except for the concatenation "
                              f"axis {ax} must match, got shapes "
                              + ", ".join(str(b.shape) for b in avals))
    return lax.concatenate(arrays, ax)


def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """numpy's name for `concat`.

    Example:
        >>> import ember.numpy as enp
        >>> enp.concatenate([enp.zeros((1, 2)), enp.ones((1, 2))], axis=0).shape
        (2, 2)
    """
    return concat(arrays, axis=axis, dtype=dtype, out=out, casting=casting)


def stack(arrays, /, *, axis=0, out=None, dtype=None):
    """Join arrays of equal shape along a new axis.

    Example:
        >>> import ember.numpy as enp
        >>> enp.stack([enp.zeros(3), enp.ones(3)], axis=1).shape
        (3, 2)
    """
    no_numpy_feature("stack", out=out)
    if hasattr(arrays, "aval") or isinstance(arrays, np.ndarray):
        arrays = list(arrays)
    arrays = _promote_all("stack", arrays)
    if dtype is not None:
        arrays = [lax.convert_element_type(a, _dt.canonicalize(dtype)) for a in arrays]
    shapes = [get_aval(a).shape for a in arrays]
    if any(s != shapes[0] for s in shapes):
        raise shape_error("stack", "all input arrays must have the same shape, got "
                          + ", ".join(str(s) for s in shapes))
    nd = len(shapes[0]) + 1
    ax = canonicalize_axis(axis, nd, "stack")
    return lax.concatenate([lax.expand_dims(a, (ax,)) for a in arrays], ax)


def expand_dims(x, /, axis=0):
    """Insert size-1 axes at `axis` (an int or a tuple of positions in the result).

    Example:
        >>> import ember.numpy as enp
        >>> enp.expand_dims(enp.ones(3), axis=-1).shape
        (3, 1)
    """
    x = _arr(x)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    nd = get_aval(x).ndim + len(axes)
    norm = canonicalize_axes(tuple(axes), nd, "expand_dims")
    return lax.expand_dims(x, norm)


def squeeze(x, /, axis=None):
    """Remove size-1 axes (all of them when `axis` is None).

    Example:
        >>> import ember.numpy as enp
        >>> enp.squeeze(enp.ones((1, 3, 1)), axis=0).shape
        (3, 1)
    """
    x = _arr(x)
    a = get_aval(x)
    if axis is None:
        dims = tuple(i for i, s in enumerate(a.shape) if s == 1)
    else:
        dims = canonicalize_axes(axis, a.shape, "squeeze")
        for d in dims:
            if a.shape[d] != 1:
                raise ValueError(f"squeeze: cannot select axis {d} to squeeze out: it has size "
                                 f"{a.shape[d]}, not 1 (shape {a.shape})")
    return lax.squeeze(x, dims) if dims else x


def flip(x, /, axis=None):
    """Reverse the order of elements along `axis` (all axes when None).

    Example:
        >>> import ember.numpy as enp
        >>> enp.flip(enp.arange(3)).tolist()
        [2, 1, 0]
    """
    x = _arr(x)
    dims = canonicalize_axes(axis, get_aval(x).shape, "flip")
    return lax.rev(x, dims) if dims else x


def flipud(m):
    """Reverse along axis 0.

    Example:
        >>> import ember.numpy as enp
        >>> enp.flipud(enp.arange(2)).tolist()
        [1, 0]
    """
    return flip(m, axis=0)


def fliplr(m):
    """Reverse along axis 1.

    Example:
        >>> import ember.numpy as enp
        >>> enp.fliplr(enp.eye(2)).tolist()
        [[0.0, 1.0], [1.0, 0.0]]
    """
    return flip(m, axis=1)


def permute_dims(x, /, axes):
    """Permute the axes: output axis i is input axis axes[i].

    Example:
        >>> import ember.numpy as enp
        >>> enp.permute_dims(enp.ones((2, 3)), (1, 0)).shape
        (3, 2)
    """
    x = _arr(x)
    nd = get_aval(x).ndim
    axes = tuple(canonicalize_axis(a, nd, "permute_dims") for a in axes)
    if sorted(axes) != list(range(nd)):
        raise ValueError(f"permute_dims: axes {axes} are not a permutation of the {nd} axes of "
                         f"an array of shape {get_aval(x).shape}")
    return lax.transpose(x, axes)


def transpose(a, axes=None):
    """Permute the axes (reverse them when `axes` is None).

    Example:
        >>> import ember.numpy as enp
        >>> enp.transpose(enp.ones((2, 3, 4))).shape
        (4, 3, 2)
    """
    a = _arr(a)
    if axes is None:
        axes = tuple(range(get_aval(a).ndim))[::-1]
    return permute_dims(a, axes)


def matrix_transpose(x, /):
    """Swap the last two axes (transpose a stack of matrices).

    Example:
        >>> import ember.numpy as enp
        >>> enp.matrix_transpose(enp.ones((5, 2, 3))).shape
        (5, 3, 2)
    """
    x = _arr(x)
    nd = get_aval(x).ndim
    if nd < 2:
        raise ValueError(f"matrix_transpose needs at least 2 dimensions, got shape {get_aval(x).shape}")
    perm = tuple(range(nd - 2)) + (nd - 1, nd - 2)
    return lax.transpose(x, perm)


def moveaxis(x, source, destination, /):
    """Move axes to new positions, keeping the others in order.

    Example:
        >>> import ember.numpy as enp
        >>> enp.moveaxis(enp.ones((2, 3, 4)), 0, -1).shape
        (3, 4, 2)
    """
    x = _arr(x)
    nd = get_aval(x).ndim
    src = source if isinstance(source, (tuple, list)) else (source,)
    dst = destination if isinstance(destination, (tuple, list)) else (destination,)
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source} and destination {destination} must have "
                         f"the same number of elements")
    src = [canonicalize_axis(s, nd, "moveaxis") for s in src]
    dst = [canonicalize_axis(d, nd, "moveaxis") for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("moveaxis: repeated axis")
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return lax.transpose(x, tuple(order))


def rollaxis(a, axis, start=0):
    """numpy's older axis mover: roll `axis` backwards until it lies before `start`.

    Example:
        >>> import ember.numpy as enp
        >>> enp.rollaxis(enp.ones((2, 3, 4)), 2).shape
        (4, 2, 3)
    """
    a = _arr(a)
    nd = get_aval(a).ndim
    axis = canonicalize_axis(axis, nd, "rollaxis")
    if start < 0:
        start += nd
    if not 0 <= start <= nd:
        raise AxisError(f"rollaxis: start {start} is out of bounds for {nd} dimensions "
                        f"(valid: {-nd} to {nd})", start, nd)
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start)


def swapaxes(x, axis1, axis2, /):
    """Interchange two axes.

    Example:
        >>> import ember.numpy as enp
        >>> enp.swapaxes(enp.ones((2, 3)), 0, 1).shape
        (3, 2)
    """
    x = _arr(x)
    nd = get_aval(x).ndim
    a1 = canonicalize_axis(axis1, nd, "swapaxes")
    a2 = canonicalize_axis(axis2, nd, "swapaxes")
    perm = list(range(nd))
    perm[a1], perm[a2] = perm[a2], perm[a1]
    return lax.transpose(x, tuple(perm))


def _take_static(x, idx, axis):
    if np.size(idx) == 0:
        return lax.slice_in_dim(x, 0, 0, 1, axis)
    return take(x, np.asarray(idx, dtype=np.int64 if np.size(idx) and np.max(idx) >= 2 ** 31 - 1
                              else np.int32), axis=axis)


def repeat(x, repeats, /, *, axis=None, total_repeat_length=None):
    """Repeat each element `repeats` times along `axis` (flattened when None).

    An array of `repeats` needs concrete values (the output size depends on them),
    unless `total_repeat_length` fixes the output size.

    Example:
        >>> import ember.numpy as enp
        >>> enp.repeat(enp.asarray([1, 2]), 2).tolist()
        [1, 1, 2, 2]
    """
    x = _arr(x)
    if axis is None:
        x = ravel(x)
        axis = 0
    a = get_aval(x)
    ax = canonicalize_axis(axis, a.shape, "repeat") if a.ndim else 0
    if a.ndim == 0:
        x = lax.reshape(x, (1,))
        a = get_aval(x)
    n = a.shape[ax]
    if isinstance(repeats, (int, np.integer)) or (hasattr(repeats, "shape") and np.shape(repeats) == ()
                                                   and concrete_or_none(repeats) is not None):
        r = static_int(repeats, "repeat", "repeats")
        if r < 0:
            raise ValueError(f"repeat: repeats must be non-negative, got {r}")
        shape = a.shape[:ax + 1] + (r,) + a.shape[ax + 1:]
        dims = tuple(range(ax + 1)) + tuple(range(ax + 2, a.ndim + 1))
        y = lax.broadcast_in_dim(x, shape, dims)
        return lax.reshape(y, a.shape[:ax] + (n * r,) + a.shape[ax + 1:])
    rv = concrete_or_none(repeats)
    if rv is None:
        if total_repeat_length is None:
            concrete(repeats, "repeat", "with an array of repeats the output size depends on "
                     "their values (pass total_repeat_length= to fix it)")
        return _repeat_traced(x, repeats, ax, int(total_repeat_length))
    rv = np.asarray(rv)
    if rv.ndim > 1 or (rv.ndim == 1 and rv.shape[0] not in (1, n)):
        raise ValueError(f"repeat: repeats of shape {rv.shape} cannot be broadcast to the "
                         f"{n} elements of axis {ax}")
    if np.any(rv < 0):
        raise ValueError("repeat: repeats must be non-negative")
    rv = np.broadcast_to(rv, (n,))
    idx = np.repeat(np.arange(n), rv)
    if total_repeat_length is not None:
        t = int(total_repeat_length)
        idx = idx[:t] if len(idx) >= t else np.concatenate([idx, np.full(t - len(idx), n - 1)])
    return _take_static(x, idx, ax)


def _repeat_traced(x, repeats, ax, total):
    n = get_aval(x).shape[ax]
    reps = ensure_array(repeats)
    if get_aval(reps).shape != (n,):
        reps = broadcast_to(reps, (n,))
    ends = cumsum(reps)
    pos = lax.iota(get_aval(ends).dtype, (total,), 0) if total else None
    if pos is None:
        return lax.slice_in_dim(x, 0, 0, 1, ax)
    idx = minimum(searchsorted(ends, pos, side="right"), n - 1)
    return take(x, idx, axis=ax)


def tile(x, repetitions, /):
    """Repeat the whole array `repetitions` times along each axis.

    Example:
        >>> import ember.numpy as enp
        >>> enp.tile(enp.asarray([1, 2]), 2).tolist()
        [1, 2, 1, 2]
    """
    x = _arr(x)
    reps = (repetitions,) if isinstance(repetitions, (int, np.integer)) else tuple(repetitions)
    reps = tuple(operator.index(r) for r in reps)
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: repetitions must be non-negative, got {reps}")
    a = get_aval(x)
    nd = max(a.ndim, len(reps))
    shape = (1,) * (nd - a.ndim) + a.shape
    reps = (1,) * (nd - len(reps)) + reps
    x = lax.reshape(x, shape)
    big = tuple(v for pair in zip(reps, shape) for v in pair)
    y = lax.broadcast_in_dim(x, big, tuple(range(1, 2 * nd, 2)))
    return lax.reshape(y, tuple(r * s for r, s in zip(reps, shape)))


def roll(x, /, shift, *, axis=None):
    """Roll elements along `axis` (the flattened array when None); shifts may be traced.

    Example:
        >>> import ember.numpy as enp
        >>> enp.roll(enp.arange(4), 1).tolist()
        [3, 0, 1, 2]
    """
    x = _arr(x)
    a = get_aval(x)
    if axis is None:
        return lax.reshape(roll(ravel(x), shift, axis=0), a.shape)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(axes) == 1 and len(shifts) > 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift {shift} and axis {axis} must have the same length")
    for s, ax in zip(shifts, axes):
        ax = canonicalize_axis(ax, a.shape, "roll")
        n = a.shape[ax]
        if n == 0:
            continue
        sv = concrete_or_none(s)
        if sv is not None and np.ndim(sv) == 0:
            k = int(sv) % n
            if k:
                x = lax.concatenate([lax.slice_in_dim(x, n - k, n, 1, ax),
                                     lax.slice_in_dim(x, 0, n - k, 1, ax)], ax)
        else:
            s = ensure_array(s)
            idt = get_aval(s).dtype if _dt.kind(get_aval(s).dtype) in "iu" else _dt.int32
            idx = remainder(subtract(lax.iota(idt, (n,), 0), lax.convert_element_type(s, idt)), n)
            x = take(x, idx, axis=ax)
    return x


def unstack(x, /, *, axis=0):
    """Split along `axis` into a tuple of arrays with that axis removed.

    Example:
        >>> import ember.numpy as enp
        >>> len(enp.unstack(enp.ones((3, 2))))
        3
    """
    x = _arr(x)
    a = get_aval(x)
    if a.ndim == 0:
        raise ValueError("unstack: zero-dimensional arrays cannot be unstacked")
    ax = canonicalize_axis(axis, a.shape, "unstack")
    return tuple(lax.squeeze(lax.slice_in_dim(x, i, i + 1, 1, ax), (ax,))
                 for i in range(a.shape[ax]))


def _split_at(x, points, ax):
    n = get_aval(x).shape[ax]
    bounds = [0] + [min(max(int(p) + (n if int(p) < 0 else 0), 0), n) for p in points] + [n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        out.append(lax.slice_in_dim(x, lo, max(lo, hi), 1, ax))
    return out


def array_split(ary, indices_or_sections, axis=0):
    """Split into sub-arrays; a number of sections need not divide the axis evenly.

    Example:
        >>> import ember.numpy as enp
        >>> [a.shape for a in enp.array_split(enp.arange(5), 2)]
        [(3,), (2,)]
    """
    x = _arr(ary)
    a = get_aval(x)
    ax = canonicalize_axis(axis, a.shape, "array_split")
    n = a.shape[ax]
    ios = concrete_or_none(indices_or_sections) if not isinstance(indices_or_sections, int) \
        else indices_or_sections
    if ios is None:
        concrete(indices_or_sections, "array_split", "split points must be static")
    if np.ndim(ios) == 0:
        k = int(ios)
        if k <= 0:
            raise ValueError("array_split: number of sections must be larger than 0")
        q, r = divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
        points = list(np.cumsum(sizes)[:-1])
    else:
        points = [int(p) for p in np.asarray(ios).ravel()]
    return _split_at(x, points, ax)


def split(ary, indices_or_sections, axis=0):
    """Split into equal sections (which must divide the axis) or at given indices.

    Example:
        >>> import ember.numpy as enp
        >>> [a.tolist() for a in enp.split(enp.arange(4), 2)]
        [[0, 1], [2, 3]]
    """
    if isinstance(indices_or_sections, (int, np.integer)):
        x = _arr(ary)
        a = get_aval(x)
        ax = canonicalize_axis(axis, a.shape, "split")
        if indices_or_sections <= 0 or a.shape[ax] % int(indices_or_sections):
            raise ValueError(f"split: array split does not result in an equal division: axis "
                             f"{ax} of shape {a.shape} into {indices_or_sections} sections")
    return array_split(ary, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
    """Split along axis 1 (axis 0 for 1-D input).

    Example:
        >>> import ember.numpy as enp
        >>> len(enp.hsplit(enp.ones((2, 4)), 2))
        2
    """
    x = _arr(ary)
    return split(x, indices_or_sections, axis=1 if get_aval(x).ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    """Split along axis 0 (input needs at least 2 dimensions).

    Example:
        >>> import ember.numpy as enp
        >>> len(enp.vsplit(enp.ones((4, 2)), 2))
        2
    """
    x = _arr(ary)
    if get_aval(x).ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(x, indices_or_sections, axis=0)


def dsplit(ary, indices_or_sections):
    """Split along axis 2 (input needs at least 3 dimensions).

    Example:
        >>> import ember.numpy as enp
        >>> len(enp.dsplit(enp.ones((1, 1, 4)), 2))
        2
    """
    x = _arr(ary)
    if get_aval(x).ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(x, indices_or_sections, axis=2)


def atleast_1d(*arys):
    """View inputs as arrays with at least one dimension.

    Example:
        >>> import ember.numpy as enp
        >>> enp.atleast_1d(1.0).shape
        (1,)
    """
    out = []
    for x in arys:
        x = _arr(x)
        out.append(lax.reshape(x, (1,)) if get_aval(x).ndim == 0 else x)
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    """View inputs as arrays with at least two dimensions (1-D becomes a row).

    Example:
        >>> import ember.numpy as enp
        >>> enp.atleast_2d(enp.ones(3)).shape
        (1, 3)
    """
    out = []
    for x in arys:
        x = _arr(x)
        a = get_aval(x)
        if a.ndim < 2:
            x = lax.reshape(x, (1,) * (2 - a.ndim) + a.shape)
        out.append(x)
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys):
    """View inputs as arrays with at least three dimensions (numpy's placement rules).

    Example:
        >>> import ember.numpy as enp
        >>> enp.atleast_3d(enp.ones((2, 3))).shape
        (2, 3, 1)
    """
    out = []
    for x in arys:
        x = _arr(x)
        a = get_aval(x)
        if a.ndim == 0:
            x = lax.reshape(x, (1, 1, 1))
        elif a.ndim == 1:
            x = lax.reshape(x, (1, a.shape[0], 1))
        elif a.ndim == 2:
            x = lax.reshape(x, a.shape + (1,))
        out.append(x)
    return out[0] if len(out) == 1 else out


def _seq(tup, op):
    if hasattr(tup, "aval") or isinstance(tup, np.ndarray):
        return list(tup)
    if not isinstance(tup, (list, tuple)):
        raise TypeError(f"{op} needs a sequence of arrays, got {type(tup).__name__}")
    return list(tup)


def hstack(tup, *, dtype=None):
    """Stack horizontally (along axis 1; axis 0 for 1-D inputs).

    Example:
        >>> import ember.numpy as enp
        >>> enp.hstack([enp.ones(2), enp.zeros(1)]).shape
        (3,)
    """
    arrs = [atleast_1d(a) for a in _seq(tup, "hstack")]
    axis = 0 if arrs and get_aval(arrs[0]).ndim == 1 else 1
    return concat(arrs, axis=axis, dtype=dtype)


def vstack(tup, *, dtype=None):
    """Stack vertically (along axis 0, 1-D inputs become rows).

    Example:
        >>> import ember.numpy as enp
        >>> enp.vstack([enp.ones(2), enp.zeros(2)]).shape
        (2, 2)
    """
    return concat([atleast_2d(a) for a in _seq(tup, "vstack")], axis=0, dtype=dtype)


row_stack = vstack


def dstack(tup):
    """Stack along the third axis.

    Example:
        >>> import ember.numpy as enp
        >>> enp.dstack([enp.ones((2, 2)), enp.zeros((2, 2))]).shape
        (2, 2, 2)
    """
    return concat([atleast_3d(a) for a in _seq(tup, "dstack")], axis=2)


def column_stack(tup):
    """Stack 1-D arrays as columns of a 2-D array (2-D inputs are joined along axis 1).

    Example:
        >>> import ember.numpy as enp
        >>> enp.column_stack([enp.ones(3), enp.zeros(3)]).shape
        (3, 2)
    """
    arrs = []
    for a in _seq(tup, "column_stack"):
        a = _arr(a)
        if get_aval(a).ndim < 2:
            a = lax.reshape(a, (get_aval(a).size, 1))
        arrs.append(a)
    return concat(arrs, axis=1)


# --- pad ------------------------------------------------------------------------------

def _pad_pairs(pad_width, nd, op="pad"):
    pw = concrete_or_none(pad_width)
    if pw is None:
        concrete(pad_width, op, "pad widths must be static")
    pw = np.asarray(pw)
    if pw.dtype.kind not in "iu":
        if pw.size and np.all(np.equal(np.mod(pw, 1), 0)):
            pw = pw.astype(np.int64)
        else:
            raise TypeError(f"{op}: pad_width must be integers, got {pad_width!r}")
    try:
        pw = np.broadcast_to(pw, (nd, 2))
    except ValueError:
        raise ValueError(f"{op}: pad_width {pad_width!r} cannot be broadcast to ({nd}, 2) for "
                         f"an array of {nd} dimensions") from None
    if np.any(pw < 0):
        raise ValueError(f"{op}: pad widths must be non-negative, got {pad_width!r}")
    return [(int(a), int(b)) for a, b in pw]


def _pad_index(n, lo, hi, mode, reflect_type="even"):
    i = np.arange(-lo, n + hi)
    if mode == "edge":
        return np.clip(i, 0, n - 1)
    if mode == "wrap":
        return np.mod(i, n)
    if mode == "reflect":
        if n == 1:
            return np.zeros_like(i)
        p = 2 * (n - 1)
        j = np.mod(i, p)
        return np.where(j >= n, p - j, j)
    if mode == "symmetric":
        p = 2 * n
        j = np.mod(i, p)
        return np.where(j >= n, p - 1 - j, j)
    raise AssertionError(mode)


_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap", "empty", "maximum", "minimum",
              "mean", "median", "linear_ramp")


def pad(array, pad_width, mode="constant", **kwargs):
    """Pad an array (numpy's modes: constant, edge, reflect, symmetric, wrap, maximum,
    minimum, mean, median, linear_ramp, empty).

    Example:
        >>> import ember.numpy as enp
        >>> enp.pad(enp.asarray([1, 2]), 1, mode="edge").tolist()
        [1, 1, 2, 2]
    """
    x = _arr(array)
    a = get_aval(x)
    if callable(mode):
        raise TypeError("pad: a callable mode is not supported; compose the padding with "
                        "concat/where instead")
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode {mode!r} is not supported; choose one of {_PAD_MODES}")
    allowed = {"constant": {"constant_values"}, "linear_ramp": {"end_values"},
               "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
               "maximum": {"stat_length"}, "minimum": {"stat_length"}, "mean": {"stat_length"},
               "median": {"stat_length"}}.get(mode, set())
    bad = set(kwargs) - allowed
    if bad:
        raise ValueError(f"pad: unsupported keyword(s) {sorted(bad)} for mode {mode!r}")
    pads = _pad_pairs(pad_width, a.ndim)
    if a.ndim == 0:
        return x
    if mode in ("constant", "empty"):
        cv = kwargs.get("constant_values", 0)
        cvv = concrete_or_none(cv)
        if cvv is not None and np.ndim(cvv) == 0:
            cv_s = np.array(cvv).astype(a.dtype) if _dt.kind(a.dtype) != "b" or np.asarray(cvv).dtype == bool \
                else np.array(cvv).astype(bool)
            return lax.pad(x, const(a.dtype, cv_s[()]), tuple((lo, hi, 0) for lo, hi in pads))
        if cvv is None:
            v = lax.convert_element_type(ensure_array(cv), a.dtype)
            if get_aval(v).ndim:
                raise TypeError("pad: traced constant_values must be a scalar")
            return lax.pad(x, v, tuple((lo, hi, 0) for lo, hi in pads))
        cvs = np.broadcast_to(np.asarray(cvv), (a.ndim, 2))
        for ax, ((lo, hi), (vlo, vhi)) in enumerate(zip(pads, cvs)):
            cfg = [(0, 0, 0)] * a.ndim
            if lo:
                cfg[ax] = (lo, 0, 0)
                x = lax.pad(x, const(a.dtype, vlo), tuple(cfg))
            if hi:
                cfg[ax] = (0, hi, 0)
                x = lax.pad(x, const(a.dtype, vhi), tuple(cfg))
        return x
    if mode in ("maximum", "minimum", "mean", "median", "linear_ramp"):
        return _pad_stat(x, pads, mode, kwargs)
    reflect_type = kwargs.get("reflect_type", "even")
    if reflect_type not in ("even", "odd"):
        raise ValueError(f"pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}")
    for ax, (lo, hi) in enumerate(pads):
        if not lo and not hi:
            continue
        n = get_aval(x).shape[ax]
        if n == 0:
            raise ValueError(f"pad: can't extend empty axis {ax} using modes other than "
                             f"'constant' or 'empty'")
        if reflect_type == "odd" and mode in ("reflect", "symmetric") and n > 1:
            x = _odd_reflect(x, n, lo, hi, ax, mode == "symmetric")
        else:
            x = _take_static(x, _pad_index(n, lo, hi, mode), ax)
    return x


def _odd_reflect(x, n, lo, hi, ax, include_edge):
    """numpy's reflect_type='odd': reflect chunk by chunk, each chunk mirrored through the
    current edge value (2 * edge - mirrored), so large pads keep extrapolating."""
    off = 1 if include_edge else 0
    while lo > 0 or hi > 0:
        length = get_aval(x).shape[ax]
        if include_edge:
            chunk_max = length // n * n
        else:
            chunk_max = (length - 1) // (n - 1) * (n - 1)
        if lo > 0:
            c = min(chunk_max, lo)
            seg = lax.rev(lax.slice_in_dim(x, 1 - off, c + 1 - off, 1, ax), (ax,))
            edge = lax.slice_in_dim(x, 0, 1, 1, ax)
            left = subtract(multiply(edge, 2), seg)
        if hi > 0:
            c2 = min(chunk_max, hi)
            seg = lax.rev(lax.slice_in_dim(x, length - 1 + off - c2, length - 1 + off, 1, ax), (ax,))
            edge = lax.slice_in_dim(x, length - 1, length, 1, ax)
            right = subtract(multiply(edge, 2), seg)
        parts = ([left] if lo > 0 else []) + [x] + ([right] if hi > 0 else [])
        if lo > 0:
            lo -= c
        if hi > 0:
            hi -= c2
        x = concat(parts, axis=ax)
    return x


def _pad_stat(x, pads, mode, kwargs):
    stat_length = kwargs.get("stat_length")
    nd = get_aval(x).ndim
    sl = None if stat_length is None else _pad_pairs(stat_length, nd, "pad(stat_length)")
    ev = kwargs.get("end_values", 0)
    evs = np.broadcast_to(np.asarray(concrete(ev, "pad", "end_values must be static")), (nd, 2))
    for ax, (lo, hi) in enumerate(pads):
        if not lo and not hi:
            continue
        a = get_aval(x)
        n = a.shape[ax]
        parts = []
        for side, width in (("lo", lo), ("hi", hi)):
            if not width:
                continue
            if mode == "linear_ramp":
                edge = lax.slice_in_dim(x, 0, 1, 1, ax) if side == "lo" else \
                    lax.slice_in_dim(x, n - 1, n, 1, ax)
                end = evs[ax][0 if side == "lo" else 1]
                seg = _ramp_segment(edge, end, width, ax, side == "lo")
            else:
                if n == 0:
                    raise ValueError(f"pad: can't extend empty axis {ax} with mode {mode!r}")
                length = n if sl is None else max(1, min(n, sl[ax][0 if side == "lo" else 1]))
                region = lax.slice_in_dim(x, 0, length, 1, ax) if side == "lo" else \
                    lax.slice_in_dim(x, n - length, n, 1, ax)
                fn = {"maximum": R.max, "minimum": R.min, "mean": R.mean, "median": R.median}[mode]
                st = fn(region, axis=ax, keepdims=True)
                if _dt.kind(a.dtype) in "iu" and mode in ("mean", "median"):
                    st = lax.convert_element_type(_round(st), a.dtype)
                elif get_aval(st).dtype != a.dtype:
                    st = lax.convert_element_type(st, a.dtype)
                shape = a.shape[:ax] + (width,) + a.shape[ax + 1:]
                seg = broadcast_to(st, shape)
            parts.append((side, seg))
        lo_parts = [s for side, s in parts if side == "lo"]
        hi_parts = [s for side, s in parts if side == "hi"]
        x = concat(lo_parts + [x] + hi_parts, axis=ax)
    return x


def _ramp_segment(edge, end, width, ax, left):
    """numpy's linear_ramp: linspace(end, edge, width, endpoint=False) in double precision
    (reversed on the right side), rounded down into integer dtypes."""
    a = get_aval(edge)
    wd = _dt.complex128 if _dt.kind(a.dtype) == "c" else _dt.float64
    e = lax.convert_element_type(edge, wd)
    shape = a.shape[:ax] + (width,) + a.shape[ax + 1:]
    step = divide(subtract(e, const(wd, end)), const(wd, width))
    i = lax.iota(_dt.float64, (width,), 0)
    if not left:
        i = lax.rev(i, (0,))
    ib = lax.convert_element_type(lax.broadcast_in_dim(i, shape, (ax,)), wd)
    vals = add(multiply(ib, broadcast_to(step, shape)), const(wd, end))
    if _dt.kind(a.dtype) in "iu":
        vals = _floor(vals)
    return lax.convert_element_type(vals, a.dtype)


def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees `k` times in the plane of `axes`.

    Example:
        >>> import ember.numpy as enp
        >>> enp.rot90(enp.asarray([[1, 2], [3, 4]])).tolist()
        [[2, 4], [1, 3]]
    """
    m = _arr(m)
    nd = get_aval(m).ndim
    if len(axes) != 2:
        raise ValueError("rot90: axes must have length 2")
    a0 = canonicalize_axis(axes[0], nd, "rot90")
    a1 = canonicalize_axis(axes[1], nd, "rot90")
    if a0 == a1:
        raise ValueError("rot90: axes must be different")
    k = operator.index(k) % 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, axis=a0), axis=a1)
    perm = list(range(nd))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return lax.transpose(flip(m, axis=a1), tuple(perm))
    return flip(lax.transpose(m, tuple(perm)), axis=a1)


def diagonal(x, /, offset=0, axis1=0, axis2=1):
    """The `offset` diagonal of the matrices spanned by `axis1`/`axis2` (as the last axis).

    Example:
        >>> import ember.numpy as enp
        >>> enp.diagonal(enp.asarray([[1, 2], [3, 4]])).tolist()
        [1, 4]
    """
    x = _arr(x)
    a = get_aval(x)
    if a.ndim < 2:
        raise ValueError(f"diagonal: x must have at least 2 dimensions, got shape {a.shape}")
    a1 = canonicalize_axis(axis1, a.shape, "diagonal")
    a2 = canonicalize_axis(axis2, a.shape, "diagonal")
    if a1 == a2:
        raise ValueError("diagonal: axis1 and axis2 cannot be the same")
    k = operator.index(offset)
    rest = [i for i in range(a.ndim) if i not in (a1, a2)]
    x = lax.transpose(x, tuple(rest) + (a1, a2))
    batch = tuple(a.shape[i] for i in rest)
    n, m = a.shape[a1], a.shape[a2]
    length = max(0, min(n, m - k)) if k >= 0 else max(0, min(n + k, m))
    flat = lax.reshape(x, batch + (n * m,))
    nb = len(batch)
    if length == 0:
        return lax.slice(flat, (0,) * (nb + 1), batch + (0,))
    start = k if k >= 0 else -k * m
    limit = start + (length - 1) * (m + 1) + 1
    return lax.slice(flat, (0,) * nb + (start,), batch + (limit,), (1,) * nb + (m + 1,))


def trace(x, /, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along a diagonal (numpy's axis conventions: the first two axes by default).

    Example:
        >>> import ember.numpy as enp
        >>> int(enp.trace(enp.asarray([[1, 2], [3, 4]])))
        5
    """
    no_numpy_feature("trace", out=out)
    if get_aval(_arr(x)).ndim < 2:
        raise ValueError(f"trace: x must have at least 2 dimensions, got shape "
                         f"{get_aval(_arr(x)).shape}")
    return _sum(diagonal(x, offset, axis1, axis2), axis=-1, dtype=dtype)


def append(arr, values, axis=None):
    """`arr` with `values` appended (both flattened when `axis` is None).

    Example:
        >>> import ember.numpy as enp
        >>> enp.append(enp.asarray([1, 2]), 3).tolist()
        [1, 2, 3]
    """
    arr, values = promote_dtypes("append", _arr(arr), values)
    if axis is None:
        return concat([ravel(arr), ravel(values)], axis=0)
    return concat([arr, values], axis=axis)


def delete(arr, obj, axis=None):
    """`arr` without the entries `obj` (static ints, a slice, or a boolean mask) along `axis`.

    Example:
        >>> import ember.numpy as enp
        >>> enp.delete(enp.arange(5), [0, 2]).tolist()
        [1, 3, 4]
    """
    x = _arr(arr)
    if axis is None:
        x = ravel(x)
        axis = 0
    a = get_aval(x)
    ax = canonicalize_axis(axis, a.shape, "delete")
    n = a.shape[ax]
    keep = np.ones(n, dtype=bool)
    if isinstance(obj, slice):
        keep[obj] = False
    else:
        ov = concrete(obj, "delete", "the indices to delete fix the output shape, so they must "
                      "be static")
        ov = np.asarray(ov)
        if ov.dtype == bool:
            if ov.shape != (n,):
                raise ValueError(f"delete: boolean mask of shape {ov.shape} does not match axis "
                                 f"{ax} of length {n}")
            keep &= ~ov
        else:
            ov = ov.astype(np.int64).ravel()
            if np.any((ov < -n) | (ov >= n)):
                raise IndexError(f"delete: index out of bounds for axis {ax} with size {n}")
            keep[ov] = False
    return _take_static(x, np.nonzero(keep)[0], ax)


def insert(arr, obj, values, axis=None):
    """`arr` with `values` inserted before the indices `obj` (an int, a 1-D integer array or
    a slice) along `axis` (flattened when None), as numpy's insert. The output length only
    depends on the number of indices, so traced indices and values work under jit;
    out-of-range indices are clipped (JAX's rule).

    Example:
        >>> import ember.numpy as enp
        >>> enp.insert(enp.asarray([1, 2, 3]), 1, 9).tolist()
        [1, 9, 2, 3]
        >>> enp.insert(enp.asarray([1, 2, 3]), enp.asarray([0, 3]), enp.asarray([7, 8])).tolist()
        [7, 1, 2, 3, 8]
    """
    from ._creation import arange, full, ones, zeros
    from ._elementwise import clip
    from ._searching import where
    from ._sorting import argsort
    a = _arr(arr)
    if axis is None:
        a = ravel(a)
        axis = 0
    ax = canonicalize_axis(static_int(axis, "insert", "axis"), get_aval(a).shape, "insert")
    n_input = get_aval(a).shape[ax]
    if isinstance(obj, slice):
        idx = _arr(np.arange(*obj.indices(n_input), dtype=np.int32))
    else:
        idx = _arr(obj) if not isinstance(obj, (list, tuple)) or len(obj) else \
            _arr(np.zeros(0, np.int32))
    ia = get_aval(idx)
    if ia.ndim > 1:
        raise ValueError(f"insert: obj must be a slice, a 1-D integer array or a scalar, got "
                         f"{ia.str_user()}")
    if _dt.kind(ia.dtype) not in "iu":
        raise ValueError(f"insert: the indices obj must be integers, got {ia.str_user()}")
    d = get_aval(a).dtype
    v = lax.convert_element_type(_arr(values), d) if get_aval(_arr(values)).dtype != d \
        else _arr(values)
    if get_aval(v).ndim < get_aval(a).ndim:
        v = reshape(v, (1,) * (get_aval(a).ndim - get_aval(v).ndim) + get_aval(v).shape)
    if ia.size == 1:
        index = ravel(idx)[0]
        if ia.ndim == 0:
            # a scalar index inserts `values` as one slab: its first axis goes to `axis`
            v = moveaxis(v, 0, ax)
        idx = full((get_aval(v).shape[ax],), index)
    n_vals = get_aval(v).shape[ax] if get_aval(v).ndim > ax else 1
    n_insert = broadcast_shapes(get_aval(idx).shape, (n_vals,))[0]
    if n_insert == 0:
        return a
    idx = broadcast_to(idx, (n_insert,))
    out_shape = list(get_aval(a).shape)
    out_shape[ax] += n_insert
    out = zeros(tuple(out_shape), d)
    idx = where(idx < 0, idx + n_input, idx)
    idx = clip(idx, 0, n_input)
    # each inserted value lands after the ones before it: shift by its rank among them
    values_ind = idx.at[argsort(idx)].add(arange(n_insert, dtype=get_aval(idx).dtype))
    keep = ones((n_input + n_insert,), dtype=bool).at[values_ind].set(False)
    arr_ind = where(keep, size=n_input)[0]
    lead = (slice(None),) * ax
    vshape = list(out_shape)
    vshape[ax] = n_insert
    out = out.at[lead + (values_ind,)].set(broadcast_to(v, tuple(vshape)))
    return out.at[lead + (arr_ind,)].set(a)


def resize(a, new_shape):
    """An array of `new_shape` filled with `a`'s flattened elements, repeated as needed
    (numpy's resize: cycles, does not pad with zeros; an empty `a` gives zeros).

    Example:
        >>> import ember.numpy as enp
        >>> enp.resize(enp.asarray([1, 2, 3]), (2, 4)).tolist()
        [[1, 2, 3, 1], [2, 3, 1, 2]]
    """
    from ._creation import zeros
    a = ravel(_arr(a))
    if isinstance(new_shape, (int, np.integer)) or (
            hasattr(new_shape, "ndim") and getattr(new_shape, "ndim") == 0):
        new_shape = (new_shape,)
    new_shape = tuple(static_int(s, "resize", "new_shape") for s in new_shape)
    if any(s < 0 for s in new_shape):
        raise ValueError(f"resize: all elements of new_shape must be non-negative, got "
                         f"{new_shape}")
    size = get_aval(a).shape[0]
    new_size = int(np.prod(new_shape, dtype=np.int64))
    if size == 0 or new_size == 0:
        return zeros(new_shape, get_aval(a).dtype)
    reps = -(-new_size // size)
    return reshape(tile(a, (reps,))[:new_size], new_shape)


def trim_zeros(filt, trim="fb", axis=None):
    """`filt` without its leading ('f') and/or trailing ('b') zeros along each of `axis`
    (all axes when None; a slab is trimmed when it is all zero). The output shape depends on
    the values, so `filt` must be concrete (not traced), as in JAX.

    Example:
        >>> import ember.numpy as enp
        >>> enp.trim_zeros(enp.asarray([0, 0, 1, 2, 0])).tolist()
        [1, 2]
        >>> enp.trim_zeros(enp.asarray([0, 1, 0]), trim="f").tolist()
        [1, 0]
    """
    x = _arr(filt)
    v = concrete(x, "trim_zeros", "the output shape depends on where the zeros are")
    if not isinstance(trim, str):
        raise TypeError(f"trim_zeros: trim must be a string of 'f' and/or 'b', got {trim!r}")
    t = trim.lower()
    axes = canonicalize_axes(axis, v.shape, "trim_zeros")
    if not axes or ("f" not in t and "b" not in t):
        return x
    items = []
    for ax in range(v.ndim):
        if ax not in axes:
            items.append(slice(None))
            continue
        mask = np.any(v != 0, axis=tuple(i for i in range(v.ndim) if i != ax))
        if not mask.any():
            items.append(slice(0, 0))
            continue
        nz = np.nonzero(mask)[0]
        items.append(slice(int(nz[0]) if "f" in t else None,
                           int(nz[-1]) + 1 if "b" in t else None))
    return x[tuple(items)]


def block(arrays):
    """An array assembled from nested lists of blocks (numpy's block): the innermost lists
    are joined along the last axis, the next level along the second-to-last, and so on;
    blocks get leading unit axes up to the result's rank. Tuples are not lists here.

    Example:
        >>> import ember.numpy as enp
        >>> enp.block([[enp.ones((2, 2)), enp.zeros((2, 1))], [enp.zeros((1, 3))]]).shape
        (3, 3)
    """
    def depth(x, path):
        if isinstance(x, tuple):
            raise TypeError(f"block: arrays{path} is a tuple; only lists may hold blocks "
                            f"(tuples are ambiguous)")
        if isinstance(x, list):
            if not x:
                raise ValueError(f"block: arrays{path} is an empty list")
            ds = [depth(e, f"{path}[{i}]") for i, e in enumerate(x)]
            if len({d for d, _ in ds}) != 1:
                raise ValueError(f"block: list depths are mismatched inside arrays{path}: "
                                 f"every block must be nested equally deep")
            return ds[0][0] + 1, max(n for _, n in ds)
        return 0, get_aval(_arr(x)).ndim

    list_ndim, max_ndim = depth(arrays, "")
    result_ndim = max(list_ndim, max_ndim)

    def build(x, level):
        if isinstance(x, list):
            parts = [build(e, level + 1) for e in x]
            return concatenate(parts, axis=-(list_ndim - level))
        a = _arr(x)
        nd = get_aval(a).ndim
        return reshape(a, (1,) * (result_ndim - nd) + get_aval(a).shape) if nd < result_ndim else a

    if list_ndim == 0:
        return _arr(arrays)
    return build(arrays, 0)
