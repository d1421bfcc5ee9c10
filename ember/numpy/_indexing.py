"""numpy-style indexing: `x[idx]` (basic and advanced), the functional update
helper `x.at[idx].set/add/...`, and `take` / `take_along_axis`.

Static ints and slices lower to `slice`/`rev`/`squeeze`; traced integer scalars to
`dynamic_slice`; integer arrays to one `gather`.  Out-of-range *static* indices raise
IndexError like numpy.  Traced indices cannot be checked: negative ones wrap once,
then reads clamp into range and `.at[]` updates drop out-of-range writes (as JAX).
Ranges are judged in the index's own dtype before it is narrowed to the gather's.
Boolean masks need concrete values (the result size depends on them).

Example:
    >>> import ember.numpy as enp
    >>> x = enp.arange(6).reshape(2, 3)
    >>> x[1, ::-1].tolist()
    [5, 4, 3]
    >>> x.at[0, 0].add(10).tolist()
    [[10, 1, 2], [3, 4, 5]]
"""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes as _dt
from .. import lax
from ..array import Array, wrap_buffer
from ..fx.core import AbstractArray, Tracer, current_trace, eval_trace, get_aval, user_source
from ._core import broadcast_shapes, broadcast_to, ensure_array
from ._elementwise import (add, clip, divide, floor_divide, multiply, negative, pow as _pow,
                           remainder)
from ._util import canonicalize_axis, concrete, concrete_or_none, const, no_numpy_feature
from ..fx.spelling import user_str

_EVAL = eval_trace()

__all__ = ["take", "take_along_axis", "getitem", "AtIndexer", "unravel_index",
           "ravel_multi_index", "ix_", "indices", "diag_indices", "diag_indices_from",
           "tril_indices", "triu_indices", "tril_indices_from", "triu_indices_from", "compress",
           "choose", "put_along_axis", "put", "place", "fill_diagonal", "mask_indices"]


def _where_line():
    src = user_source()
    return f"\n  at {src}" if src else ""


_VALID = ("only integers, slices (`:`), ellipsis (`...`), None (`newaxis`) and integer or "
          "boolean arrays are valid indices")


# --- parsing ---------------------------------------------------------------------------

def _as_index_array(e):
    """A numpy or ember integer/bool array for a list/array index element."""
    if isinstance(e, (Array, Tracer)):
        return e
    if isinstance(e, (list, tuple)):
        if any(isinstance(v, (Array, Tracer)) for v in _flat(e)):
            from ._creation import stack_nested
            return stack_nested(e)
        a = np.asarray(e)
        if a.size == 0 and a.dtype.kind == "f":
            a = a.astype(np.int64)
        return a
    return np.asarray(e)


def _flat(obj):
    for e in obj:
        if isinstance(e, (list, tuple)):
            yield from _flat(e)
        else:
            yield e


class _Item:
    """One index entry after parsing: kind in 'slice', 'int', 'dyn', 'adv', 'new', 'ellipsis'."""
    __slots__ = ("kind", "value")

    def __init__(self, kind, value=None):
        self.kind = kind
        self.value = value


def _slice_part(v, what):
    if v is None:
        return None
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, Tracer) and v.concrete_value() is None:
        raise TypeError(f"slice {what} must be a static integer; got the traced value {user_str(v.aval)}. "
                        f"Use ember.lax.dynamic_slice(x, start_indices, slice_sizes) for "
                        f"traced starts (the size must stay static).{_where_line()}")
    try:
        return operator.index(v)
    except TypeError:
        raise IndexError(f"slice {what} must be an integer or None, got {v!r}: {_VALID}") from None


def _parse(idx, shape, op):
    """Normalise an index into one _Item per dimension of the *expanded* operand.

    Returns (items, new_positions): `new_positions` are the dims (in the expanded shape)
    inserted for None / Python bools.
    """
    if not isinstance(idx, tuple):
        idx = (idx,)
    raw = []
    for e in idx:
        if e is None:
            raw.append(_Item("new"))
        elif e is Ellipsis:
            raw.append(_Item("ellipsis"))
        elif isinstance(e, slice):
            raw.append(_Item("slice", slice(_slice_part(e.start, "start"),
                                            _slice_part(e.stop, "stop"),
                                            _slice_part(e.step, "step"))))
        elif isinstance(e, (bool, np.bool_)):
            raw.append(_Item("boolscalar", bool(e)))
        elif isinstance(e, (int, np.integer)):
            raw.append(_Item("int", int(e)))
        else:
            if isinstance(e, (float, complex, str)) or e.__class__ is object:
                raise IndexError(f"{op}: {_VALID}; got {e!r}")
            arr = _as_index_array(e)
            a = get_aval(arr) if isinstance(arr, (Array, Tracer)) else None
            dt = a.dtype if a is not None else arr.dtype
            nd = a.ndim if a is not None else arr.ndim
            if dt == np.bool_:
                cv = concrete_or_none(arr)
                if cv is None:
                    raise TypeError(
                        f"{op}: boolean mask indexing needs concrete values: the result shape "
                        f"depends on how many entries are True, which is unknown for the traced "
                        f"mask {user_str(a)} (under jit/vmap/make_graph). Use ember.numpy.where(mask, x, "
                        f"other) to select elementwise, or nonzero(mask, size=k) for a "
                        f"fixed-size index.{_where_line()}")
                cv = np.asarray(cv)
                if nd == 0:
                    raw.append(_Item("boolscalar", bool(cv)))
                elif cv.size == 0 and nd == 1 and isinstance(e, (list, tuple)):
                    # numpy's rule: an empty Python list indexes like an empty int list (an
                    # empty boolean *array* is a mask, checked against its axis)
                    raw.append(_Item("adv", np.zeros(0, np.int64)))
                else:
                    raw.append(_Item("mask", cv))
            elif dt.kind in "iu":
                if nd == 0:
                    cv = concrete_or_none(arr) if not isinstance(arr, Tracer) else None
                    if cv is not None:
                        raw.append(_Item("int", int(cv)))
                    else:
                        raw.append(_Item("dyn", arr))
                else:
                    raw.append(_Item("adv", arr))
            else:
                raise IndexError(f"{op}: {_VALID}; got an array of dtype {dt}")
    consumed = 0
    n_ell = 0
    for it in raw:
        if it.kind in ("int", "dyn", "adv", "slice"):
            consumed += 1
        elif it.kind == "mask":
            consumed += it.value.ndim
        elif it.kind == "ellipsis":
            n_ell += 1
    if n_ell > 1:
        raise IndexError(f"{op}: an index can only have a single ellipsis ('...')")
    nd = len(shape)
    if consumed > nd:
        raise IndexError(f"{op}: too many indices for array: array is {nd}-dimensional "
                         f"(shape {tuple(shape)}), but {consumed} were indexed")
    items = []
    new_positions = []
    dim = 0  # position in the original shape
    for it in raw:
        if it.kind == "ellipsis":
            for _ in range(nd - consumed):
                items.append(_Item("slice", slice(None)))
                dim += 1
        elif it.kind == "new":
            new_positions.append(len(items))
            items.append(_Item("slice", slice(None)))
        elif it.kind == "boolscalar":
            new_positions.append(len(items))
            items.append(_Item("slice", slice(None) if it.value else slice(0, 0)))
        elif it.kind == "mask":
            m = it.value
            for k in range(m.ndim):
                # numpy takes an empty mask of any length (it selects nothing)
                if m.shape[k] != shape[dim + k] and m.size:
                    raise IndexError(
                        f"{op}: boolean index did not match indexed array along axis {dim + k}; "
                        f"size of axis is {shape[dim + k]} but size of corresponding boolean "
                        f"axis is {m.shape[k]} (array shape {tuple(shape)}, mask shape {m.shape})")
            for comp in np.nonzero(m):
                items.append(_Item("adv", comp))
            dim += m.ndim
        else:
            items.append(it)
            dim += 1
    while dim < nd:
        items.append(_Item("slice", slice(None)))
        dim += 1
    return items, new_positions


def _expanded_shape(shape, new_positions, n_items):
    out = []
    it = iter(shape)
    newset = set(new_positions)
    for i in range(n_items):
        out.append(1 if i in newset else next(it))
    return tuple(out)


def _index_dtype(shape):
    return _dt.int64 if any(s >= 2 ** 31 - 1 for s in shape) else _dt.int32


def _bounded_int(i, n):
    """A static index for an axis of size n with negative values wrapped once and the
    out-of-range ones pinned to -1 or n, so it fits any index dtype and still reads as
    out of range (to the left or right) to gather's clip/fill and scatter's drop."""
    i = int(i)
    if i < 0:
        i += n
    return -1 if i < 0 else n if i > n else i


def _prepare_adv(arr, n, axis, shape, check, idt, op):
    """An index array for an axis of size n: negative entries wrapped, bounds checked when
    static (and `check`), in the index dtype `idt`.

    Wrapping and range handling happen in a dtype that holds both the user's values and
    n; only then is the result narrowed to `idt` (an int64 index 2**32 + 1 narrowed
    first would wrap to 1, in range).
    """
    cv = concrete_or_none(arr) if not isinstance(arr, Tracer) else None
    if cv is not None:
        cv = np.asarray(cv)
        if cv.dtype == np.uint64:
            cv = np.minimum(cv, np.uint64(n))
        cv = cv.astype(np.int64)
        if check and cv.size and (cv.min() < -n or cv.max() >= n):
            bad = cv[(cv < -n) | (cv >= n)].ravel()[0]
            raise IndexError(f"{op}: index {bad} is out of bounds for axis {axis} with size {n} "
                             f"(array shape {tuple(shape)}){_where_line()}")
        cv = np.where(cv < 0, cv + n, cv)
        return np.clip(cv, -1, n).astype(idt)
    src = get_aval(arr).dtype
    if _dt.kind(src) not in "iu":
        return lax.convert_element_type(arr, idt)
    signed = _dt.kind(src) == "i"
    si, ti = np.iinfo(src), np.iinfo(idt)
    narrow_first = si.min >= ti.min and si.max <= ti.max
    if narrow_first:
        # every value of the user's dtype is exact in idt, and so is n
        arr = lax.convert_element_type(arr, idt) if src != idt else arr
    work = idt if narrow_first else src
    if signed:
        zero = const(work, 0)
        sh = get_aval(arr).shape
        nb = lax.broadcast_in_dim(const(work, n), sh, ()) if sh else const(work, n)
        arr = lax.select_n(lax.lt(arr, zero), arr, lax.add(arr, nb))
    if not narrow_first:
        # n < idt's max (see _index_dtype), so n fits the wider user dtype too
        lo = const(src, -1 if signed else 0)
        arr = lax.convert_element_type(lax.clamp(lo, arr, const(src, n)), idt)
    return arr


def _slice_params(s, n):
    start, stop, step = s.indices(n)
    length = len(range(start, stop, step))
    if length == 0:
        return 0, 0, 1, 0, False
    if step > 0:
        return start, start + (length - 1) * step + 1, step, length, False
    first = start + (length - 1) * step
    return first, start + 1, -step, length, True


def _apply_slices(x, items, shape):
    """Apply every 'slice' item (ints too when marked) statically; returns the new array."""
    starts, limits, strides, rev = [], [], [], []
    for d, (it, n) in enumerate(zip(items, shape)):
        if it.kind == "slice":
            st, lim, stp, length, r = _slice_params(it.value, n)
            starts.append(st)
            limits.append(lim)
            strides.append(stp)
            if r and length > 1:
                rev.append(d)
        elif it.kind == "int":
            i = it.value
            starts.append(i)
            limits.append(i + 1)
            strides.append(1)
        else:
            starts.append(0)
            limits.append(n)
            strides.append(1)
    if (any(s != 0 for s in starts) or tuple(limits) != tuple(shape) or any(s != 1 for s in strides)):
        x = lax.slice(x, starts, limits, strides)
    if rev:
        x = lax.rev(x, tuple(rev))
    return x


def _check_int(i, n, axis, shape, op):
    if not -n <= i < n:
        raise IndexError(f"{op}: index {i} is out of bounds for axis {axis} with size {n} "
                         f"(array shape {tuple(shape)}){_where_line()}")
    return i + n if i < 0 else i


def getitem(x, idx, mode=None, fill_value=None):
    """`x[idx]` with numpy semantics (see the module docstring for out-of-range rules).

    `mode` (None, 'clip', 'fill', 'promise_in_bounds') selects how array indices that are
    out of range are handled; with a mode given, static indices are not bounds-checked.
    'fill' reads `fill_value`, by default JAX's (NaN for inexact dtypes, the extreme
    value for integers, True for bool).

    Example:
        >>> import ember.numpy as enp
        >>> enp.arange(5)[enp.asarray([4, -1, 0])].tolist()
        [4, 4, 0]
    """
    x = ensure_array(x)
    xa = get_aval(x)
    shape = xa.shape
    op = "getitem"
    # Fast path: a single static int or slice on the first axis.
    if type(idx) is int and mode is None and shape:
        i = _check_int(idx, shape[0], 0, shape, op)
        if type(x) is Array and x._device._execute is None and current_trace() is _EVAL:
            # eager on a device whose eager ops are the numpy impls: slice + squeeze is
            # this read-only view (x[0] in a Python loop: 18 -> ~2 us)
            return wrap_buffer(x._value[i], x._device, AbstractArray(shape[1:], xa.dtype, xa.weak_type))
        y = lax.slice(x, (i,) + (0,) * (len(shape) - 1), (i + 1,) + shape[1:])
        return lax.squeeze(y, (0,))
    items, new_positions = _parse(idx, shape, op)
    eshape = _expanded_shape(shape, new_positions, len(items))
    if new_positions:
        x = lax.reshape(x, eshape)
    orig_axis = _orig_axes(len(items), new_positions)
    has_adv = any(it.kind == "adv" for it in items)
    if mode is not None:
        # every integer index goes through gather so that `mode` applies to it
        for it in items:
            if it.kind == "int":
                # saturated to int64 (n is smaller, so in/out of range is unchanged);
                # _prepare_adv wraps it once like any index array
                it.kind, it.value = "adv", np.asarray(min(max(it.value, -2 ** 63), 2 ** 63 - 1),
                                                      np.int64)
        has_adv = any(it.kind in ("adv", "dyn") for it in items)
    if not has_adv:
        for d, it in enumerate(items):
            if it.kind == "int":
                it.value = _check_int(it.value, eshape[d], orig_axis[d], shape, op)
        x = _apply_slices(x, items, eshape)
        dyn = [d for d, it in enumerate(items) if it.kind == "dyn"]
        if dyn:
            sizes = tuple(1 if d in dyn else s for d, s in enumerate(get_aval(x).shape))
            starts = [items[d].value if d in dyn else 0 for d in range(len(items))]
            x = lax.dynamic_slice(x, starts, sizes)
        drop = tuple(d for d, it in enumerate(items) if it.kind in ("int", "dyn"))
        return lax.squeeze(x, drop) if drop else x
    # Advanced indexing: ints and traced scalars join the array indices.
    for d, it in enumerate(items):
        if it.kind == "int":
            if mode is None:
                it.value = _check_int(it.value, eshape[d], orig_axis[d], shape, op)
            it.kind, it.value = "adv", np.asarray(it.value)
        elif it.kind == "dyn":
            it.kind = "adv"
    x = _apply_slices(x, items, eshape)
    sshape = get_aval(x).shape
    adv = [d for d, it in enumerate(items) if it.kind == "adv"]
    idt = _index_dtype(sshape)
    arrs = [_prepare_adv(items[d].value, sshape[d], orig_axis[d], shape, mode is None, idt, op)
            for d in adv]
    bshape = _index_broadcast([np.shape(a) if isinstance(a, np.ndarray) else get_aval(a).shape
                               for a in arrs], op)
    comps = []
    for a in arrs:
        if isinstance(a, np.ndarray):
            a = np.broadcast_to(a, bshape)
            comps.append(a.reshape(bshape + (1,)))
        else:
            comps.append(lax.reshape(broadcast_to(a, bshape), bshape + (1,)))
    if all(isinstance(c, np.ndarray) for c in comps):
        indices = np.concatenate(comps, axis=-1) if comps else np.zeros(bshape + (0,), idt)
        indices = ensure_array(np.ascontiguousarray(indices))
    else:
        comps = [ensure_array(c) if isinstance(c, np.ndarray) else c for c in comps]
        indices = lax.concatenate(comps, len(bshape))
    adjacent = adv == list(range(adv[0], adv[0] + len(adv))) and _adv_consecutive_in_tuple(idx)
    rest = [d for d in range(len(items)) if d not in adv]
    nb = len(bshape)
    if any(sshape[d] == 0 for d in adv):
        # nothing to gather from: only an empty index is valid
        if int(np.prod(bshape, dtype=np.int64)) != 0:
            raise IndexError(f"{op}: cannot index into an empty axis (array shape {tuple(shape)})"
                             f"{_where_line()}")
        rs = [sshape[d] for d in rest]
        out_shape = (tuple(rs[:adv[0]]) + bshape + tuple(rs[adv[0]:])) if adjacent else \
            bshape + tuple(rs)
        return lax.broadcast_in_dim(const(xa.dtype, 0), out_shape, ())
    if adjacent:
        nbefore = adv[0]  # every dim before the (contiguous) advanced block is a slice
        offset_dims = tuple(range(nbefore)) + tuple(range(nbefore + nb, nb + len(rest)))
    else:
        offset_dims = tuple(range(nb, nb + len(rest)))
    dn = lax.GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=tuple(adv),
                                    start_index_map=tuple(adv))
    slice_sizes = tuple(1 if d in adv else s for d, s in enumerate(sshape))
    gmode = "clip" if mode is None else mode
    return lax.gather(x, indices, dn, slice_sizes, mode=gmode,
                      fill_value=_read_fill(gmode, fill_value, xa.dtype))


_FILL_MODES = ("fill", "drop", "fill_or_drop")


def _read_fill(mode, fill_value, dtype):
    """The value an out-of-range read gives in `mode`: `fill_value`, else JAX's default
    (NaN for inexact dtypes, the most negative / largest value of a signed / unsigned
    integer dtype, True for bool). ``lax.gather`` itself fills 0 (it stays linear)."""
    if fill_value is not None or mode not in _FILL_MODES:
        return fill_value
    d = np.dtype(dtype)
    if d == _dt.bool_:
        return True
    if _dt.kind(d) in "fc":
        return float("nan")
    return int(np.iinfo(d).min if _dt.kind(d) == "i" else np.iinfo(d).max)


def _index_broadcast(shapes, op):
    try:
        return broadcast_shapes(*shapes, op=op)
    except TypeError:
        raise IndexError(f"{op}: shape mismatch: indexing arrays could not be broadcast together "
                         f"with shapes {' '.join(str(tuple(s)) for s in shapes)}"
                         f"{_where_line()}") from None


def _orig_axes(n_items, new_positions):
    """Map expanded-dim positions to the user's axis numbers (for error messages)."""
    out, k = [], 0
    newset = set(new_positions)
    for i in range(n_items):
        out.append(-1 if i in newset else k)
        if i not in newset:
            k += 1
    return out


# --- functional updates ----------------------------------------------------------------

class AtIndexer:
    """`x.at[idx]`: the entry point of functional index updates.

    Example:
        >>> import ember.numpy as enp
        >>> enp.zeros(3).at[1].set(5.0).tolist()
        [0.0, 5.0, 0.0]
    """
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, idx):
        return _IndexUpdateRef(self.array, idx)


class _IndexUpdateRef:
    """`x.at[idx]` bound to an index: `.get/.set/.add/.multiply/.divide/.power/.min/.max`."""
    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def __repr__(self):
        return f"_IndexUpdateRef({get_aval(self.array)}, {self.index!r})"

    def get(self, *, mode=None, fill_value=None, indices_are_sorted=False, unique_indices=False):
        """`x[idx]`, with an optional out-of-range `mode` ('clip', 'fill')."""
        return getitem(self.array, self.index, mode=mode, fill_value=fill_value)

    def set(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """`x` with `x[idx] = values` (the last of duplicate indices wins)."""
        return _scatter(self.array, self.index, values, "set", mode)

    def add(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """`x` with `x[idx] += values`; duplicate indices accumulate."""
        return _scatter(self.array, self.index, values, "add", mode)

    def subtract(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """`x` with `x[idx] -= values`; duplicate indices accumulate."""
        return _scatter(self.array, self.index, negative(ensure_array(values)), "add", mode)

    def multiply(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """`x` with `x[idx] *= values`; duplicate indices multiply together."""
        return _scatter(self.array, self.index, values, "mul", mode)

    mul = multiply

    def divide(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """`x` with `x[idx] /= values`; a duplicate index divides once per occurrence
        (as in JAX: `x / d` with `d` the values multiplied onto ones, so an integer `x`
        gives a float result like `divide`)."""
        return divide(self.array, self._product_of_values(values, mode))

    def power(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """`x` with `x[idx] **= values`; duplicate indices multiply their exponents (as in
        JAX: `x ** e` with `e` the values multiplied onto ones)."""
        return _pow(self.array, self._product_of_values(values, mode))

    def _product_of_values(self, values, mode):
        # every occurrence of an index multiplies its value in; untouched entries stay 1
        a = get_aval(self.array)
        one = const(a.dtype, 1)
        ones = lax.broadcast_in_dim(one, a.shape, ()) if a.shape else ensure_array(one)
        return _scatter(ones, self.index, values, "mul", mode)

    def min(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):  # noqa: A003
        """`x` with `x[idx] = minimum(x[idx], values)`."""
        return _scatter(self.array, self.index, values, "min", mode)

    def max(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):  # noqa: A003
        """`x` with `x[idx] = maximum(x[idx], values)`."""
        return _scatter(self.array, self.index, values, "max", mode)

    def apply(self, func, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """`x` with `x[idx] = func(x[idx])`, `func` applied once per occurrence of an index
        (as JAX: an element the index names k times becomes `func` applied k times).
        `func` should be elementwise; its result is cast to `x`'s dtype.

        Example:
            >>> import ember.numpy as enp
            >>> enp.asarray([1.0, 2.0, 3.0]).at[enp.asarray([0, 2, 0])].apply(lambda v: v * 10).tolist()
            [100.0, 2.0, 30.0]
        """
        gmode = None if mode is None else "clip"
        a = get_aval(self.array)
        # how many times each occurrence's element is named (0-d zeros for a 0-d x)
        zero = const(_dt.int32, 0)
        zeros = lax.broadcast_in_dim(zero, a.shape, ()) if a.shape else ensure_array(zero)
        occ = getitem(_scatter(zeros, self.index, 1, "add", mode), self.index, mode=gmode)

        def once(v):
            return lax.convert_element_type(ensure_array(func(v)), a.dtype)

        def again(j, v):  # the (j+1)-th application, only where the element is named > j times
            return lax.select_n(lax.gt(occ, lax.convert_element_type(j, _dt.int32)),
                                v, once(v))

        v = once(getitem(self.array, self.index, mode=gmode))
        n = concrete_or_none(occ)
        if n is not None:  # concrete indices: unroll to the largest repeat count
            for j in range(1, int(n.max()) if n.size else 0):
                v = again(const(_dt.int32, j), v)
        elif get_aval(occ).size > 1:  # traced: at most one application per occurrence
            v = lax.fori_loop(1, get_aval(occ).size, again, v)
        return _scatter(self.array, self.index, v, "set", mode)


def _values_for(values, dtype, shape, op):
    v = ensure_array(values) if not isinstance(values, (bool, int, float, complex)) else values
    if isinstance(v, (bool, int, float, complex)):
        try:
            v = np.array(v, dtype=dtype)[()]
        except OverflowError:
            raise OverflowError(f"{op}: value {values!r} does not fit in dtype {dtype}") from None
        return lax.broadcast_in_dim(v, shape, ()) if shape else ensure_array(v)
    va = get_aval(v)
    if va.dtype != dtype:
        v = lax.convert_element_type(v, dtype)
    # numpy lets the value carry extra leading size-1 dimensions
    vs = va.shape
    while len(vs) > len(shape) and vs[0] == 1:
        vs = vs[1:]
    if vs != va.shape:
        v = lax.reshape(v, vs)
    try:
        bs = broadcast_shapes(vs, shape, op=op)
    except TypeError:
        bs = None
    if bs != tuple(shape):
        raise ValueError(f"{op}: cannot broadcast values of shape {va.shape} to the indexed "
                         f"shape {tuple(shape)}")
    return broadcast_to(v, shape)


_COMBINE = {"set": None, "add": "add", "mul": "mul", "min": "min", "max": "max"}


def _combine(kind, cur, v):
    if kind == "set":
        return v
    if kind == "add":
        return lax.add(cur, v)
    if kind == "mul":
        return lax.mul(cur, v)
    if kind == "min":
        return lax.min(cur, v)
    return lax.max(cur, v)


def _adv_consecutive_in_tuple(idx) -> bool:
    """numpy keeps the advanced-index block in place only when the advanced
    entries (arrays and integers) are consecutive in the index tuple itself: an
    Ellipsis or None between them separates them even if it covers no axis."""
    entries = idx if isinstance(idx, tuple) else (idx,)
    pos = [i for i, e in enumerate(entries)
           if not (e is None or e is Ellipsis or isinstance(e, slice))]
    return not pos or pos == list(range(pos[0], pos[0] + len(pos)))


def _scatter(x, idx, values, kind, mode):
    x = ensure_array(x)
    xa = get_aval(x)
    shape = xa.shape
    op = {"set": "at[].set", "add": "at[].add", "mul": "at[].multiply", "min": "at[].min",
          "max": "at[].max"}[kind]
    if kind in ("min", "max") and _dt.kind(xa.dtype) == "c":
        raise TypeError(f"{op} does not support complex dtype {xa.dtype}")
    items, new_positions = _parse(idx, shape, op)
    eshape = _expanded_shape(shape, new_positions, len(items))
    orig_axis = _orig_axes(len(items), new_positions)
    # numpy's result layout of x[idx]
    arr_dims = [d for d, it in enumerate(items) if it.kind in ("int", "dyn", "adv")]
    has_arrays = any(it.kind == "adv" for it in items)
    idt = _index_dtype(eshape)
    check = mode is None
    adv_vals = {}
    for d in arr_dims:
        it = items[d]
        if it.kind == "int":
            i = it.value
            if check:
                i = _check_int(i, eshape[d], orig_axis[d], shape, op)
            else:
                i = _bounded_int(i, eshape[d])
            adv_vals[d] = np.asarray(i, dtype=idt)
        else:
            adv_vals[d] = _prepare_adv(it.value, eshape[d], orig_axis[d], shape, check, idt, op)
    bshape = _index_broadcast([np.shape(a) if isinstance(a, np.ndarray) else get_aval(a).shape
                               for a in adv_vals.values()], op) if adv_vals else ()
    # layout entries: ('B',) block or ('S', d)
    slices = [d for d, it in enumerate(items) if it.kind == "slice"]
    adjacent = (bool(arr_dims) and arr_dims == list(range(arr_dims[0], arr_dims[0] + len(arr_dims)))
                and _adv_consecutive_in_tuple(idx))
    layout = []
    if not arr_dims:
        layout = [("S", d) for d in slices]
    elif adjacent:
        layout = [("S", d) for d in slices if d < arr_dims[0]] + [("B",)] + \
                 [("S", d) for d in slices if d > arr_dims[0]]
    else:
        layout = [("B",)] + [("S", d) for d in slices]
    sparams = {d: _slice_params(items[d].value, eshape[d]) for d in slices}
    ushape = []
    for e in layout:
        if e[0] == "B":
            ushape.extend(bshape)
        else:
            ushape.append(sparams[e[1]][3])
    ushape = tuple(ushape)
    v = _values_for(values, xa.dtype, ushape, op)
    xe = lax.reshape(x, eshape) if new_positions else x
    full = [d for d in slices if sparams[d][3] == eshape[d] and sparams[d][2] == 1
            and not sparams[d][4]]
    partial = [d for d in slices if d not in full]
    indexed = arr_dims + partial
    if not indexed:
        # every dim is a full slice: an elementwise update
        out = _combine(kind, xe, v) if kind != "set" else v
        return lax.reshape(out, shape) if new_positions else out
    # scatter batch shape: the layout without full-slice dims
    batch_entries = [e for e in layout if not (e[0] == "S" and e[1] in full)]
    batch_shape = []
    pos = {}
    for e in batch_entries:
        if e[0] == "B":
            pos["B"] = len(batch_shape)
            batch_shape.extend(bshape)
        else:
            pos[e[1]] = len(batch_shape)
            batch_shape.append(sparams[e[1]][3])
    batch_shape = tuple(batch_shape)
    nbatch = len(batch_shape)
    # index vectors known while tracing are built in numpy, so they reach the
    # scatter as constants (its derivative rules then group updates at trace time)
    comps = []
    for d in indexed:
        if d in adv_vals:
            a = adv_vals[d]
            p = pos["B"]
            bd = tuple(range(p + len(bshape) - len(np.shape(a) if isinstance(a, np.ndarray)
                                                    else get_aval(a).shape), p + len(bshape)))
        else:
            st, lim, stp, length, r = sparams[d]
            start, _, step = items[d].value.indices(eshape[d])
            a = (start + step * np.arange(length)).astype(idt)
            bd = (pos[d],)
        if isinstance(a, np.ndarray):
            lead = bd[0] if bd else nbatch
            a = np.broadcast_to(a.reshape((1,) * lead + a.shape + (1,) * (nbatch - lead - a.ndim)),
                                batch_shape)
        else:
            a = lax.broadcast_in_dim(a, batch_shape, bd) if batch_shape else a
        comps.append(a)
    if all(isinstance(c, np.ndarray) for c in comps):
        indices = np.concatenate([c.reshape(batch_shape + (1,)) for c in comps], nbatch)
    else:
        comps = [ensure_array(np.array(c)) if isinstance(c, np.ndarray) else c for c in comps]
        indices = lax.concatenate([lax.reshape(c, batch_shape + (1,)) for c in comps], nbatch)
    # updates: move full-slice (window) dims to their positions; they are already in order
    window_pos = tuple(i for i, e in enumerate(_expand_layout(layout, bshape))
                       if e[0] == "S" and e[1] in full)
    inserted = tuple(sorted(indexed))
    dn = lax.ScatterDimensionNumbers(update_window_dims=window_pos,
                                     inserted_window_dims=inserted,
                                     scatter_dims_to_operand_dims=tuple(indexed))
    smode = "drop" if mode is None else mode
    fn = {"set": lax.scatter, "add": lax.scatter_add, "mul": lax.scatter_mul,
          "min": lax.scatter_min, "max": lax.scatter_max}[kind]
    out = fn(xe, indices, v, dn, mode=smode)
    return lax.reshape(out, shape) if new_positions else out


def _expand_layout(layout, bshape):
    out = []
    for e in layout:
        if e[0] == "B":
            out.extend([("B",)] * len(bshape))
        else:
            out.append(e)
    return out


# --- take / take_along_axis ------------------------------------------------------------

def take(x, indices, /, axis=None, out=None, mode=None, *, unique_indices=False,
         indices_are_sorted=False, fill_value=None):
    """Elements of `x` at `indices` along `axis` (the flattened array when None).

    `mode`: None (static indices are bounds-checked; traced ones fill, as JAX's default),
    'raise' (static ones checked, traced ones clamp), 'clip', 'wrap', or 'fill'
    (out-of-range reads give `fill_value`, by default NaN for inexact
    dtypes, the most negative / largest value for signed / unsigned integers, True for
    bool, as in JAX).  Bounds are judged on the index values as given, in their own dtype
    (an int64 index 2**32 + 1 is out of range, not 1).

    Example:
        >>> import ember.numpy as enp
        >>> enp.take(enp.asarray([[1, 2], [3, 4]]), enp.asarray([1, 0]), axis=1).tolist()
        [[2, 1], [4, 3]]
        >>> enp.take(enp.asarray([1.0, 2.0]), enp.asarray([1, 5]), mode="fill").tolist()
        [2.0, nan]
    """
    no_numpy_feature("take", out=out)
    x = ensure_array(x)
    if axis is None:
        x = lax.reshape(x, (get_aval(x).size,))
        axis = 0
    a = get_aval(x)
    ax = canonicalize_axis(axis, a.shape, "take")
    idx = indices
    if isinstance(idx, (list, tuple)) or isinstance(idx, (int, np.integer)):
        idx = np.asarray(idx)
    ia = get_aval(idx) if isinstance(idx, (Array, Tracer)) else None
    idt = ia.dtype if ia is not None else np.asarray(idx).dtype
    if idt.kind not in "iu":
        raise IndexError(f"take: indices must be integers, got dtype {idt}")
    n = a.shape[ax]
    if mode == "wrap":
        if n == 0:
            raise IndexError("take: cannot wrap indices into an empty axis")
        idx = remainder(ensure_array(idx), n)
        mode = "raise"  # in range now: checked if static, a plain clamped read if traced
    elif mode == "clip" and n > 0:
        # numpy clips the index as given: -1 reads element 0, it does not wrap to n - 1
        idx = clip(ensure_array(idx), 0, n - 1)
    key = (slice(None),) * ax + (idx,)
    if mode in (None, "raise") and ia is not None and not isinstance(idx, Array):
        # a traced index cannot be checked: JAX's default fills, 'raise' clamps
        out = getitem(x, key, mode="clip")
        if mode == "raise":
            return out
        return _fill_outside(out, idx, n, ax, fill_value)
    return getitem(x, key, mode=None if mode == "raise" else mode, fill_value=fill_value)


def _fill_outside(out, idx, n, ax, fill_value):
    """`out` (read with clamped indices `idx` into an axis of size `n`, the index's
    dimensions starting at `ax` of `out`) with the reads of out-of-range indices
    replaced by the 'fill' value. A select after a clamped gather, not a 'fill'
    gather: the same values, and it exports to ONNX."""
    oa, ia = get_aval(out), get_aval(idx)
    d = np.dtype(ia.dtype)
    info = np.iinfo(d)
    valid = None
    if n <= info.max:
        valid = lax.lt(idx, const(d, n))
    if _dt.kind(d) == "i" and -n >= info.min:  # negative indices wrap once
        low = lax.ge(idx, const(d, -n))
        valid = low if valid is None else lax.bitwise_and(valid, low)
    if valid is None:
        return out
    dims = tuple(range(ax, ax + ia.ndim))
    if ia.shape != oa.shape:
        valid = lax.broadcast_in_dim(valid, oa.shape, dims)
    fill = _read_fill("fill", fill_value, oa.dtype)
    fill = lax.broadcast_in_dim(const(oa.dtype, fill), oa.shape, ()) if oa.shape else \
        ensure_array(const(oa.dtype, fill))
    return lax.select_n(valid, fill, out)


def take_along_axis(x, indices, /, axis=-1, mode=None, fill_value=None):
    """Pick values along `axis` at `indices` (same rank as `x`; other axes broadcast).

    `mode` as in `take`: by default static indices are bounds-checked and traced ones
    read `fill_value` (NaN, or the dtype's extreme) where out of range, as in JAX.

    Example:
        >>> import ember.numpy as enp
        >>> x = enp.asarray([[10, 30, 20]])
        >>> enp.take_along_axis(x, enp.argsort(x, axis=1), axis=1).tolist()
        [[10, 20, 30]]
    """
    x = ensure_array(x)
    idx = ensure_array(indices)
    if axis is None:
        x = lax.reshape(x, (get_aval(x).size,))
        if get_aval(idx).ndim != 1:
            raise ValueError("take_along_axis: with axis=None the indices must be 1-D")
        axis = 0
    xa, ia = get_aval(x), get_aval(idx)
    if _dt.kind(ia.dtype) not in "iu":
        raise IndexError(f"take_along_axis: indices must be integers, got dtype {ia.dtype}")
    if xa.ndim != ia.ndim:
        raise ValueError(f"take_along_axis: indices (shape {ia.shape}) and x (shape {xa.shape}) "
                         f"must have the same number of dimensions")
    ax = canonicalize_axis(axis, xa.shape, "take_along_axis")
    other = [d for d in range(xa.ndim) if d != ax]
    bs = broadcast_shapes(tuple(xa.shape[d] for d in other), tuple(ia.shape[d] for d in other),
                          op="take_along_axis")
    xs = list(bs)
    xs.insert(ax, xa.shape[ax])
    is_ = list(bs)
    is_.insert(ax, ia.shape[ax])
    if 0 in is_:
        # nothing to read; gather cannot express it either (its unit slices along the batch
        # axes do not fit an empty operand axis)
        return lax.broadcast_in_dim(const(xa.dtype, 0), tuple(is_), ())
    x = broadcast_to(x, tuple(xs))
    idx = broadcast_to(idx, tuple(is_))
    n = xa.shape[ax]
    idt = _index_dtype(tuple(xs))
    raw = idx
    idx = _prepare_adv(idx, n, ax, xa.shape, mode is None, idt, "take_along_axis")
    if isinstance(idx, np.ndarray):
        idx = ensure_array(idx)
    ind = lax.reshape(idx, tuple(is_) + (1,))
    dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(ax,),
                                    start_index_map=(ax,), operand_batching_dims=tuple(other),
                                    start_indices_batching_dims=tuple(other))
    slice_sizes = (1,) * xa.ndim
    if n == 0 and get_aval(idx).size:
        raise IndexError(f"take_along_axis: cannot take from the empty axis {ax} of shape "
                         f"{xa.shape}")
    gmode = "clip" if mode is None else mode
    out = lax.gather(x, ind, dn, slice_sizes, mode=gmode,
                     fill_value=_read_fill(gmode, fill_value, xa.dtype))
    if mode is None and not isinstance(idx, Array):
        # traced indices are unchecked: JAX's default for take_along_axis fills
        out = _fill_outside(out, raw, n, 0, fill_value)
    return out


def put_along_axis(arr, indices, values, axis, inplace=False, *, mode=None):
    """`arr` with `values` written at `indices` along `axis` (functional).

    Example:
        >>> import ember.numpy as enp
        >>> enp.put_along_axis(enp.zeros((1, 3)), enp.asarray([[1]]), 5.0, axis=1).tolist()
        [[0.0, 5.0, 0.0]]
    """
    if inplace:
        raise TypeError("put_along_axis: ember arrays are immutable; pass inplace=False and use "
                        "the returned array")
    x = ensure_array(arr)
    idx = ensure_array(indices)
    xa, ia = get_aval(x), get_aval(idx)
    ax = canonicalize_axis(axis, xa.shape, "put_along_axis")
    grids = []
    for d in range(xa.ndim):
        if d == ax:
            grids.append(idx)
        else:
            shp = [1] * xa.ndim
            shp[d] = xa.shape[d]
            grids.append(lax.reshape(lax.iota(_index_dtype(xa.shape), (xa.shape[d],), 0)
                                     if xa.shape[d] else ensure_array(np.zeros(0, np.int32)),
                                     tuple(shp)))
    return _scatter(x, tuple(grids), values, "set", mode)


# --- index helpers ----------------------------------------------------------------------

def unravel_index(indices, shape):
    """Convert flat indices into a tuple of coordinate arrays for `shape`.

    Example:
        >>> import ember.numpy as enp
        >>> [a.tolist() for a in enp.unravel_index(enp.asarray([5]), (2, 3))]
        [[1], [2]]
    """
    idx = ensure_array(indices)
    shape = tuple(operator.index(s) for s in shape)
    out = []
    rem = idx
    for s in reversed(shape):
        out.append(remainder(rem, s) if s else rem)
        rem = floor_divide(rem, s) if s else rem
    return tuple(reversed(out))


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """Flat indices of coordinate arrays in an array of shape `dims` (row-major).

    Example:
        >>> import ember.numpy as enp
        >>> enp.ravel_multi_index((enp.asarray([1]), enp.asarray([2])), (2, 3)).tolist()
        [5]
    """
    if order != "C":
        raise TypeError("ravel_multi_index: only order='C' is supported")
    dims = tuple(operator.index(d) for d in dims)
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: {len(multi_index)} index arrays for {len(dims)} dims")
    total = None
    for m, n in zip(multi_index, dims):
        m = ensure_array(m)
        cv = concrete_or_none(m)
        if mode == "raise":
            if cv is not None and (np.any(cv < 0) or np.any(cv >= n)):
                raise ValueError(f"ravel_multi_index: invalid entry in coordinates for dim size {n}")
        elif mode == "clip":
            m = clip(m, 0, n - 1)
        elif mode == "wrap":
            m = remainder(m, n)
        total = m if total is None else add(multiply(total, n), m)
    return total


def ix_(*args):
    """Open meshes from 1-D sequences, for cross-product indexing `x[ix_(a, b)]`.

    Example:
        >>> import ember.numpy as enp
        >>> [a.shape for a in enp.ix_(enp.asarray([0, 1]), enp.asarray([2]))]
        [(2, 1), (1, 1)]
    """
    out = []
    n = len(args)
    for k, a in enumerate(args):
        a = ensure_array(a)
        if get_aval(a).ndim != 1:
            raise ValueError("ix_: cross index must be 1 dimensional")
        if get_aval(a).dtype == _dt.bool_:
            # numpy takes a boolean sequence as the positions of its True entries
            cv = concrete_or_none(a) if not isinstance(a, Tracer) else None
            if cv is None:
                raise TypeError(f"ix_: boolean argument {k} must be concrete (its True count "
                                f"sets the result shape); pass nonzero(mask)[0] with a "
                                f"size= instead")
            a = ensure_array(np.nonzero(np.asarray(cv))[0].astype(np.int32))
        shp = [1] * n
        shp[k] = get_aval(a).shape[0]
        out.append(lax.reshape(a, tuple(shp)))
    return tuple(out)


def indices(dimensions, dtype=None, sparse=False):
    """A grid of index arrays of the given shape (stacked, or a tuple when sparse).

    Example:
        >>> import ember.numpy as enp
        >>> enp.indices((2, 2))[0].tolist()
        [[0, 0], [1, 1]]
    """
    from ._creation import full
    from ._manipulation import stack
    from ._creation import _shape_arg
    dims = _shape_arg(dimensions, "indices")
    d = _dt.default_int if dtype is None else _dt.canonicalize(dtype)
    grids = []
    for k, n in enumerate(dims):
        if sparse:
            shp = [1] * len(dims)
            shp[k] = n
            grids.append(lax.reshape(lax.iota(d, (n,), 0) if n else full((0,), 0, d), tuple(shp)))
        else:
            grids.append(lax.iota(d, dims, k) if all(dims) else full(dims, 0, d))
    if sparse:
        return tuple(grids)
    if not grids:
        return full((0,), 0, d)
    return stack(grids)


def diag_indices(n, ndim=2):
    """Indices of the main diagonal of an n x ... x n array.

    Example:
        >>> import ember.numpy as enp
        >>> [a.tolist() for a in enp.diag_indices(2)]
        [[0, 1], [0, 1]]
    """
    i = ensure_array(np.arange(n, dtype=np.int32))
    return (i,) * ndim


def diag_indices_from(arr):
    """`diag_indices` for a square array.

    Example:
        >>> import ember.numpy as enp
        >>> len(enp.diag_indices_from(enp.ones((3, 3))))
        2
    """
    s = get_aval(ensure_array(arr)).shape
    if len(s) < 2 or len(set(s)) != 1:
        raise ValueError(f"diag_indices_from: all dimensions must be equal, got shape {s}")
    return diag_indices(s[0], len(s))


def tril_indices(n, k=0, m=None):
    """Row and column indices of the lower triangle of an n x m array.

    Example:
        >>> import ember.numpy as enp
        >>> [a.tolist() for a in enp.tril_indices(2)]
        [[0, 1, 1], [0, 0, 1]]
    """
    r, c = np.tril_indices(n, k, m)
    return ensure_array(r.astype(np.int32)), ensure_array(c.astype(np.int32))


def triu_indices(n, k=0, m=None):
    """Row and column indices of the upper triangle of an n x m array.

    Example:
        >>> import ember.numpy as enp
        >>> [a.tolist() for a in enp.triu_indices(2)]
        [[0, 0, 1], [0, 1, 1]]
    """
    r, c = np.triu_indices(n, k, m)
    return ensure_array(r.astype(np.int32)), ensure_array(c.astype(np.int32))


def tril_indices_from(arr, k=0):
    """`tril_indices` for the shape of a 2-D array.

    Example:
        >>> import ember.numpy as enp
        >>> len(enp.tril_indices_from(enp.ones((2, 2)))[0])
        3
    """
    s = get_aval(ensure_array(arr)).shape
    if len(s) != 2:
        raise ValueError(f"tril_indices_from needs a 2-D array, got shape {s}")
    return tril_indices(s[0], k, s[1])


def triu_indices_from(arr, k=0):
    """`triu_indices` for the shape of a 2-D array.

    Example:
        >>> import ember.numpy as enp
        >>> len(enp.triu_indices_from(enp.ones((2, 2)))[0])
        3
    """
    s = get_aval(ensure_array(arr)).shape
    if len(s) != 2:
        raise ValueError(f"triu_indices_from needs a 2-D array, got shape {s}")
    return triu_indices(s[0], k, s[1])


def compress(condition, a, axis=None, out=None):
    """Entries of `a` along `axis` where `condition` is True (eager: needs concrete values).

    Example:
        >>> import ember.numpy as enp
        >>> enp.compress([True, False, True], enp.arange(3)).tolist()
        [0, 2]
    """
    no_numpy_feature("compress", out=out)
    c = np.asarray(concrete(condition, "compress")).astype(bool).ravel()
    x = ensure_array(a)
    if axis is None:
        x = lax.reshape(x, (get_aval(x).size,))
        axis = 0
    n = get_aval(x).shape[canonicalize_axis(axis, get_aval(x).shape, "compress")]
    if c.shape[0] > n:
        raise IndexError(f"compress: condition of length {c.shape[0]} is longer than axis "
                         f"of size {n}")
    return take(x, np.nonzero(c)[0].astype(np.int32), axis=axis)


def choose(a, choices, out=None, mode="raise"):
    """Pick from `choices[a[i]]` elementwise (modes 'raise', 'wrap', 'clip').

    Example:
        >>> import ember.numpy as enp
        >>> enp.choose(enp.asarray([1, 0]), [enp.asarray([1, 2]), enp.asarray([3, 4])]).tolist()
        [3, 2]
    """
    from ._manipulation import broadcast_arrays
    no_numpy_feature("choose", out=out)
    idx = ensure_array(a)
    n = len(choices)
    if mode == "wrap":
        idx = remainder(idx, n)
    elif mode == "clip":
        idx = clip(idx, 0, n - 1)
    else:
        cv = concrete_or_none(idx)
        if cv is not None and (np.any(cv < 0) or np.any(cv >= n)):
            raise ValueError("choose: invalid entry in choice array")
    from ._manipulation import _promote_all
    parts = broadcast_arrays(idx, *_promote_all("choose", list(choices)))
    idx, cs = parts[0], parts[1:]
    if get_aval(idx).dtype != _dt.int32:
        idx = lax.convert_element_type(idx, _dt.int32)
    return lax.select_n(idx, *cs)


# --- functional versions of numpy's in-place writers -------------------------------------

def _no_inplace(op, inplace):
    if inplace:
        raise ValueError(f"{op}: ember arrays are immutable, so {op} cannot modify its input "
                         f"in place; pass inplace=False and use the returned array "
                         f"(a = enp.{op}(a, ..., inplace=False))")


def _tile_to(v, n):
    """The flat `v` cycled to length `n` (numpy repeats short value lists)."""
    k = get_aval(v).shape[0]
    if k == n:
        return v
    reps = -(-n // k)
    return lax.slice_in_dim(lax.reshape(lax.broadcast_in_dim(v, (reps, k), (1,)), (reps * k,)),
                            0, n, 1, 0)


def _flatten(x):
    return lax.reshape(x, (get_aval(x).size,))


def put(a, ind, v, mode=None, *, inplace=True):
    """`a` with the flat positions `ind` set to `v` (cycled to len(ind)); JAX's put, which
    needs `inplace=False` and returns the new array. `mode`: None (JAX's default) counts
    negative indices from the end once and clamps the rest into range, 'clip' clamps every
    index into [0, a.size - 1], 'wrap' wraps around.

    Example:
        >>> import ember.numpy as enp
        >>> enp.put(enp.zeros(5), enp.asarray([0, 2]), 1.0, inplace=False).tolist()
        [1.0, 0.0, 1.0, 0.0, 0.0]
    """
    from ._searching import where as jnp_where
    _no_inplace("put", inplace)
    x = ensure_array(a)
    idx = _flatten(ensure_array(ind))
    vals = ensure_array(v)
    xa = get_aval(x)
    if _dt.kind(get_aval(idx).dtype) not in "iu":
        raise TypeError(f"put: the indices ind must be integers, got {get_aval(idx).str_user()}")
    if not xa.size or not get_aval(idx).size or not get_aval(vals).size:
        return x
    if get_aval(vals).dtype != xa.dtype:
        vals = lax.convert_element_type(vals, xa.dtype)
    vals = _tile_to(_flatten(vals), get_aval(idx).shape[0])
    scatter_mode = "drop"
    if mode is None:
        # JAX's default: negative indices count from the end once, the rest are clamped
        idx = clip(jnp_where(idx < 0, idx + xa.size, idx), 0, xa.size - 1)
    elif mode == "clip":
        idx = clip(idx, 0, xa.size - 1)
    elif mode == "wrap":
        idx = remainder(idx, xa.size)
    elif mode == "raise":
        raise NotImplementedError("put: mode='raise' is not supported (ember cannot raise "
                                  "from inside a compiled program); use mode='clip' or 'wrap'")
    else:
        raise ValueError(f"put: mode must be None, 'clip' or 'wrap', got {mode!r}")
    return _flatten(x).at[idx].set(vals, mode=scatter_mode).reshape(xa.shape)


def place(arr, mask, vals, *, inplace=True):
    """`arr` with its `mask`-ed entries set to `vals`, cycled in order (numpy's place; JAX's
    form: `inplace=False`, returns the new array). Works under jit with a traced mask.

    Example:
        >>> import ember.numpy as enp
        >>> x = enp.arange(5)
        >>> enp.place(x, x > 1, enp.asarray([10, 20]), inplace=False).tolist()
        [0, 1, 10, 20, 10]
    """
    from ._searching import where
    _no_inplace("place", inplace)
    x = ensure_array(arr)
    m = ensure_array(mask)
    vals = ensure_array(vals)
    xa = get_aval(x)
    if get_aval(m).shape != xa.shape:
        raise ValueError(f"place: mask must have the shape of arr, got mask "
                         f"{get_aval(m).str_user()} for arr {xa.str_user()}")
    if not xa.size or not get_aval(vals).size:
        return x
    if get_aval(vals).dtype != xa.dtype:
        vals = lax.convert_element_type(vals, xa.dtype)
    # the k-th True position receives vals[k % len(vals)]; unused slots point past the end
    # and are dropped
    pos = where(_flatten(m), size=xa.size, fill_value=xa.size)[0]
    return _flatten(x).at[pos].set(_tile_to(_flatten(vals), xa.size), mode="drop").reshape(xa.shape)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """`a` with its main diagonal set to `val` (a scalar, or values cycled along it); JAX's
    form: `inplace=False`, returns the new array. All axes must be equal for ndim > 2; a tall
    2-D array's diagonal restarts every ncols + 1 rows when `wrap=True`, as in numpy.

    Example:
        >>> import ember.numpy as enp
        >>> enp.fill_diagonal(enp.zeros((2, 2)), 5.0, inplace=False).tolist()
        [[5.0, 0.0], [0.0, 5.0]]
    """
    _no_inplace("fill_diagonal", inplace)
    x = ensure_array(a)
    vals = ensure_array(val)
    xa = get_aval(x)
    if xa.ndim < 2:
        raise ValueError(f"fill_diagonal: the array must be at least 2-D, got {xa.str_user()}")
    if xa.ndim > 2 and len(set(xa.shape)) != 1:
        raise ValueError(f"fill_diagonal: all dimensions of the array must be of equal "
                         f"length for ndim > 2, got {xa.str_user()}")
    if xa.ndim == 2:
        step = xa.shape[1] + 1
        end = xa.size if wrap else min(xa.size, xa.shape[1] * xa.shape[1])
    else:
        step = 1 + int(np.cumprod(xa.shape[:-1]).sum())
        end = xa.size
    pos = np.arange(0, end, step, dtype=np.int64)
    if not pos.size or not get_aval(vals).size:
        return x
    if get_aval(vals).dtype != xa.dtype:
        vals = lax.convert_element_type(vals, xa.dtype)
    vals = _tile_to(_flatten(vals), pos.size)
    idx = ensure_array(pos.astype(np.int32 if xa.size < 2 ** 31 else np.int64))
    return _flatten(x).at[idx].set(vals).reshape(xa.shape)


def mask_indices(n, mask_func, k=0, *, size=None):
    """The indices where `mask_func(ones((n, n)), k)` is non-zero (numpy's mask_indices, e.g.
    with `enp.triu`). The count depends on the mask's values, so without `size=` the mask
    must be concrete; with `size=` it is fixed (JAX's argument).

    Example:
        >>> import ember.numpy as enp
        >>> [a.tolist() for a in enp.mask_indices(2, enp.triu)]
        [[0, 0, 1], [0, 1, 1]]
    """
    from ._creation import ones
    from ._searching import nonzero
    n = operator.index(n)
    m = mask_func(ones((n, n), dtype=np.int32), k)
    return nonzero(m, size=size)
