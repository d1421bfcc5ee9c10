"""Collectives over a named axis: psum, pmax, pmin, all_gather, all_to_all, ppermute, axis_index.

Under `vmap(..., axis_name="i")` the members of axis "i" are the lanes of the
batch: the batch trace hands every collective naming its axis to the
primitive's `collective_batch` rule, which rewrites it as ordinary array ops
over the batch dimension (`psum` -> `reduce_sum`). Under
`ember.distributed.data_parallel` the members are processes: the primitive
stays in the program and its impl calls the axis's communicator (MPI).

Derivatives are those of the whole mapped function (JAX's classic rules):
psum is linear and its transpose is psum, so the gradient of a replicated
value flows back to every member (`grad` of a psum is a broadcast of the
cotangent); all_gather transposes to a sum then each member's slice,
all_to_all to the inverse exchange, ppermute to the inverse permutation.

Example:
    >>> import ember, ember.numpy as enp
    >>> ember.vmap(lambda x: psum(x, "i"), axis_name="i")(enp.arange(3.0)).tolist()
    [3.0, 3.0, 3.0]
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ..axis_env import lookup
from ..core import AbstractArray, Primitive, Zero, get_aval, shape_error, tangent_aval
from . import convert, elementwise as ew, reduce as red, shape as sh
from .rules import bdim_to_front, deflinear, moveaxis
from ..spelling import user_str

psum_p = Primitive("psum")
pmax_p = Primitive("pmax")
pmin_p = Primitive("pmin")
all_gather_p = Primitive("all_gather")
all_to_all_p = Primitive("all_to_all")
ppermute_p = Primitive("ppermute")
axis_index_p = Primitive("axis_index")
COLLECTIVES = (psum_p, pmax_p, pmin_p, all_gather_p, all_to_all_p, ppermute_p, axis_index_p)
for _p in COLLECTIVES:
    _p.kind = "collective"


def _frame(name, op):
    return lookup(name, op)


def _process_comm(name, op):
    """The communicator of a process axis; a vmap axis never reaches an impl."""
    frame = _frame(name, op)
    if frame.comm is None:
        raise NameError(f"{op}: axis {name!r} is a vmap axis here, but the collective was "
                        "evaluated outside the vmap that binds it (a function traced under "
                        "vmap and called again without it?)")
    return frame.comm


# --- abstract evaluation -----------------------------------------------------------

def _same_abstract(op):
    def abstract_eval(x, *, axis_name):
        _frame(axis_name, op)
        return x
    return abstract_eval


psum_p.abstract_eval = _same_abstract("psum")
pmax_p.abstract_eval = _same_abstract("pmax")
pmin_p.abstract_eval = _same_abstract("pmin")


def _all_gather_abstract(x, *, axis_name, axis):
    n = _frame(axis_name, "all_gather").size
    if not 0 <= axis <= x.ndim:
        raise shape_error("all_gather", f"axis {axis} is out of range for an operand {user_str(x)}")
    return AbstractArray(x.shape[:axis] + (n,) + x.shape[axis:], x.dtype, x.weak_type)


all_gather_p.abstract_eval = _all_gather_abstract


def _all_to_all_abstract(x, *, axis_name, split_axis, concat_axis):
    n = _frame(axis_name, "all_to_all").size
    if not (0 <= split_axis < x.ndim and 0 <= concat_axis < x.ndim):
        raise shape_error("all_to_all", f"split_axis {split_axis} / concat_axis {concat_axis} "
                                        f"out of range for an operand {user_str(x)}")
    if x.shape[split_axis] != n:
        raise shape_error("all_to_all", f"the split axis {split_axis} of {user_str(x)} must have the axis "
                                        f"{axis_name!r}'s size {n} (use tiled=True to split a "
                                        "multiple of it)")
    rest = x.shape[:split_axis] + x.shape[split_axis + 1:]
    return AbstractArray(rest[:concat_axis] + (n,) + rest[concat_axis:], x.dtype, x.weak_type)


all_to_all_p.abstract_eval = _all_to_all_abstract


def _ppermute_abstract(x, *, axis_name, perm):
    n = _frame(axis_name, "ppermute").size
    srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts) or any(
            not 0 <= i < n for i in srcs + dsts):
        raise ValueError(f"ppermute: perm {list(perm)} must pair distinct sources with distinct "
                         f"destinations in range({n}) (the size of axis {axis_name!r})")
    return x


ppermute_p.abstract_eval = _ppermute_abstract
axis_index_p.abstract_eval = lambda *, axis_name: (
    _frame(axis_name, "axis_index"), AbstractArray((), _dt.int32))[1]


# --- impls: a process axis's communicator ------------------------------------------

# Buffers go to the communicator as they are (numpy arrays, or device arrays on a
# GPU backend): the communicator decides how to move them (MPI from host memory,
# NCCL from device memory), so nothing here converts.
psum_p.impl = lambda x, *, axis_name: _process_comm(axis_name, "psum").allreduce(x, "sum")
pmax_p.impl = lambda x, *, axis_name: _process_comm(axis_name, "pmax").allreduce(x, "max")
pmin_p.impl = lambda x, *, axis_name: _process_comm(axis_name, "pmin").allreduce(x, "min")
# The reductions also come split in two for a compiled program that overlaps them
# with other work (backends/kernels/overlap.py): `start_impl` posts the reduction
# and returns the communicator's `Pending`, whose `wait()` gives what `impl` gives.
psum_p.start_impl = lambda x, *, axis_name: _process_comm(axis_name, "psum").start_allreduce(x, "sum")
pmax_p.start_impl = lambda x, *, axis_name: _process_comm(axis_name, "pmax").start_allreduce(x, "max")
pmin_p.start_impl = lambda x, *, axis_name: _process_comm(axis_name, "pmin").start_allreduce(x, "min")
all_gather_p.impl = lambda x, *, axis_name, axis: np.moveaxis(
    _process_comm(axis_name, "all_gather").allgather(x), 0, axis)


def _all_to_all_impl(x, *, axis_name, split_axis, concat_axis):
    comm = _process_comm(axis_name, "all_to_all")
    # np.moveaxis dispatches to the buffer's own library (__array_function__)
    chunks = np.moveaxis(x, split_axis, 0)                        # chunk j goes to member j
    received = comm.alltoall(chunks)                             # received[j] came from member j
    return np.moveaxis(received, 0, concat_axis)


all_to_all_p.impl = _all_to_all_impl
ppermute_p.impl = lambda x, *, axis_name, perm: _process_comm(axis_name, "ppermute").permute(x, perm)
axis_index_p.impl = lambda *, axis_name: np.asarray(_process_comm(axis_name, "axis_index").rank,
                                                    dtype=np.int32)


# --- batching: the lanes of a vmap are the members ---------------------------------

def _mine(trace_axis, name) -> bool:
    return trace_axis is not None and trace_axis == name


def _foreign(prim, vals, dims, params, *, shift=()):
    """A collective over an outer axis inside this vmap: each lane takes part on its
    own, so bind it on the parent with the batch axis moved to the front (and the
    axis-valued params that `shift` names moved past it)."""
    if not vals:
        return prim.bind(**params), None
    (x,), (d,) = vals, dims
    if d is None:
        return prim.bind(x, **params), None
    if not shift:
        return prim.bind(x, **params), d
    x = moveaxis(x, d, 0)
    params = dict(params, **{k: params[k] + 1 for k in shift})
    return prim.bind(x, **params), 0


def _reducing_batch(prim, reducer):
    def rule(trace_axis, axis_size, vals, dims, /, **params):
        if not _mine(trace_axis, params["axis_name"]):
            return _foreign(prim, vals, dims, params)
        (x,), (d,) = vals, dims
        if d is None:   # every lane holds the same value
            return (ew.mul(x, _scalar(axis_size, get_aval(x).dtype)) if prim is psum_p else x), None
        return reducer(x, (d,)), None
    return rule


def _scalar(v, dtype):
    return np.asarray(v, dtype=dtype)


psum_p.collective_batch = _reducing_batch(psum_p, red.reduce_sum)
pmax_p.collective_batch = _reducing_batch(pmax_p, red.reduce_max)
pmin_p.collective_batch = _reducing_batch(pmin_p, red.reduce_min)


def _all_gather_batch(trace_axis, axis_size, vals, dims, /, **params):
    if not _mine(trace_axis, params["axis_name"]):
        return _foreign(all_gather_p, vals, dims, params, shift=("axis",))
    (x,), (d,) = vals, dims
    x = bdim_to_front(x, d, axis_size)                  # (n, *per-lane)
    return moveaxis(x, 0, params["axis"]), None         # every lane sees the whole stack


all_gather_p.collective_batch = _all_gather_batch


def _all_to_all_batch(trace_axis, axis_size, vals, dims, /, **params):
    if not _mine(trace_axis, params["axis_name"]):
        return _foreign(all_to_all_p, vals, dims, params, shift=("split_axis", "concat_axis"))
    (x,), (d,) = vals, dims
    s, c = params["split_axis"], params["concat_axis"]
    x = bdim_to_front(x, d, axis_size)                  # (j: sender, *per-lane with i at s)
    x = moveaxis(x, s + 1, 0)                           # (i: receiver, j: sender, *rest)
    return moveaxis(x, 1, c + 1), 0                     # lane i: j inserted at concat_axis


all_to_all_p.collective_batch = _all_to_all_batch


def _ppermute_batch(trace_axis, axis_size, vals, dims, /, **params):
    if not _mine(trace_axis, params["axis_name"]):
        return _foreign(ppermute_p, vals, dims, params)
    (x,), (d,) = vals, dims
    x = bdim_to_front(x, d, axis_size)
    source = dict((dst, src) for src, dst in params["perm"])
    aval = get_aval(x)
    zero = sh.broadcast_in_dim(_scalar(0, aval.dtype), (1,) + aval.shape[1:], ())
    lanes = [sh.index_in_dim(x, source[i], 0) if i in source else zero for i in range(axis_size)]
    return sh.concatenate(lanes, 0), 0


ppermute_p.collective_batch = _ppermute_batch


def _axis_index_batch(trace_axis, axis_size, vals, dims, /, **params):
    if not _mine(trace_axis, params["axis_name"]):
        return axis_index_p.bind(**params), None
    return sh.iota(_dt.int32, (axis_size,), 0), 0


axis_index_p.collective_batch = _axis_index_batch


def _checked(prim):
    """Validate the per-lane operands with the primitive's abstract_eval (the batch
    trace bypasses it), so a bad shape or perm gets the same error under vmap."""
    rule = prim.collective_batch

    def checked(trace_axis, axis_size, vals, dims, /, **params):
        lanes = []
        for v, d in zip(vals, dims):
            a = get_aval(v)
            lanes.append(a if d is None else a.update(shape=a.shape[:d] + a.shape[d + 1:]))
        prim.abstract_eval(*lanes, **params)
        return rule(trace_axis, axis_size, vals, dims, **params)
    prim.collective_batch = checked


for _p in COLLECTIVES:
    _checked(_p)


# --- derivatives -------------------------------------------------------------------

deflinear(psum_p, lambda ct, x, *, axis_name: [psum_p.bind(ct, axis_name=axis_name)])
deflinear(ppermute_p, lambda ct, x, *, axis_name, perm: [
    ppermute_p.bind(ct, axis_name=axis_name, perm=tuple((d, s) for s, d in perm))])
deflinear(all_to_all_p, lambda ct, x, *, axis_name, split_axis, concat_axis: [
    all_to_all_p.bind(ct, axis_name=axis_name, split_axis=concat_axis, concat_axis=split_axis)])


def _all_gather_transpose(ct, x, *, axis_name, axis):
    total = psum_p.bind(ct, axis_name=axis_name)        # every member's contribution to each slot
    me = axis_index_p.bind(axis_name=axis_name)
    return [sh.dynamic_index_in_dim(total, me, axis, keepdims=False)]


deflinear(all_gather_p, _all_gather_transpose)


def _extremum_jvp(prim):
    def jvp(primals, tangents, *, axis_name):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axis_name=axis_name)
        if type(t) is Zero:
            return ans, Zero(tangent_aval(get_aval(ans)))
        # the tangent of the member(s) attaining the extremum, averaged over ties
        hit = ew.eq(x, ans)
        dtype = get_aval(t).dtype
        zero = sh.broadcast_in_dim(_scalar(0, dtype), get_aval(t).shape, ())
        num = psum_p.bind(ew.select_n(hit, zero, t), axis_name=axis_name)
        den = psum_p.bind(convert.convert_element_type(hit, dtype), axis_name=axis_name)
        return ans, ew.div(num, den)
    prim.jvp = jvp
    prim.not_applicable.add("transpose")


_extremum_jvp(pmax_p)
_extremum_jvp(pmin_p)
axis_index_p.jvp = lambda primals, tangents, *, axis_name: (
    axis_index_p.bind(axis_name=axis_name), Zero(tangent_aval(AbstractArray((), _dt.int32))))
axis_index_p.not_applicable.add("transpose")
for _p in COLLECTIVES:
    # collectives are batched by `collective_batch` (the batch trace's hook), never by
    # the positional rule: without an axis name the lanes would be lost
    _p.not_applicable.add("batch")


# --- the lax API ---------------------------------------------------------------------

def _names(axis_name) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _tree_map(fn, tree):
    from ...tree import tree_map
    return tree_map(fn, tree)


def psum(x, axis_name):
    """Sum of `x` over the members of the named axis (a pytree of arrays; a tuple
    of names sums over each), as `jax.lax.psum`.

    Example:
        >>> import ember, ember.numpy as enp
        >>> ember.vmap(lambda v: psum(v, "i"), axis_name="i")(enp.ones(4)).tolist()
        [4.0, 4.0, 4.0, 4.0]
    """
    def one(v):
        for name in _names(axis_name):
            v = psum_p.bind(v, axis_name=name)
        return v
    return _tree_map(one, x)


def axis_size(axis_name) -> int:
    """The number of members of a named axis in scope (the product for a tuple).

    Example:
        >>> import ember, ember.numpy as enp
        >>> ember.vmap(lambda v: v * axis_size("i"), axis_name="i")(enp.ones(3)).tolist()
        [3.0, 3.0, 3.0]
    """
    n = 1
    for name in _names(axis_name):
        n *= lookup(name, "axis_size").size
    return n


def pmean(x, axis_name):
    """Mean of `x` over the members of the named axis, as `jax.lax.pmean`.

    Example:
        >>> import ember, ember.numpy as enp
        >>> ember.vmap(lambda v: pmean(v, "i"), axis_name="i")(enp.arange(4.0)).tolist()
        [1.5, 1.5, 1.5, 1.5]
    """
    n = axis_size(axis_name)
    return _tree_map(lambda v: ew.div(v, _scalar(n, get_aval(v).dtype)), psum(x, axis_name))


def pmax(x, axis_name):
    """Maximum of `x` over the members of the named axis, as `jax.lax.pmax`.

    Example:
        >>> import ember, ember.numpy as enp
        >>> ember.vmap(lambda v: pmax(v, "i"), axis_name="i")(enp.asarray([1., 5., 2.])).tolist()
        [5.0, 5.0, 5.0]
    """
    def one(v):
        for name in _names(axis_name):
            v = pmax_p.bind(v, axis_name=name)
        return v
    return _tree_map(one, x)


def pmin(x, axis_name):
    """Minimum of `x` over the members of the named axis, as `jax.lax.pmin`.

    Example:
        >>> import ember, ember.numpy as enp
        >>> ember.vmap(lambda v: pmin(v, "i"), axis_name="i")(enp.asarray([1., 5., 2.])).tolist()
        [1.0, 1.0, 1.0]
    """
    def one(v):
        for name in _names(axis_name):
            v = pmin_p.bind(v, axis_name=name)
        return v
    return _tree_map(one, x)


def all_gather(x, axis_name, *, axis: int = 0, tiled: bool = False):
    """Every member's `x`, stacked along a new `axis` (concatenated along it with
    `tiled=True`), as `jax.lax.all_gather`.

    Example:
        >>> import ember, ember.numpy as enp
        >>> ember.vmap(lambda v: all_gather(v, "i"), axis_name="i")(enp.arange(2.0)).tolist()
        [[0.0, 1.0], [0.0, 1.0]]
    """
    def one(v):
        a = axis + get_aval(v).ndim if axis < 0 else axis
        out = all_gather_p.bind(v, axis_name=axis_name, axis=a)
        if tiled:
            shape = get_aval(out).shape
            out = sh.reshape(out, shape[:a] + (shape[a] * shape[a + 1],) + shape[a + 2:])
        return out
    return _tree_map(one, x)


def all_to_all(x, axis_name, split_axis: int, concat_axis: int, *, tiled: bool = False):
    """Split `x` along `split_axis` into one chunk per member, send chunk j to
    member j, and stack what arrives along `concat_axis` (concatenate with
    `tiled=True`), as `jax.lax.all_to_all`.

    Example:
        >>> import ember, ember.numpy as enp
        >>> x = enp.arange(4.0).reshape(2, 2)        # lane i holds row i
        >>> ember.vmap(lambda v: all_to_all(v, "i", 0, 0), axis_name="i")(x).tolist()
        [[0.0, 2.0], [1.0, 3.0]]
    """
    n = axis_size(axis_name)

    def one(v):
        shape = get_aval(v).shape
        s = split_axis % len(shape)
        c = concat_axis % len(shape)
        if not tiled:
            return all_to_all_p.bind(v, axis_name=axis_name, split_axis=s, concat_axis=c)
        if shape[s] % n:
            raise shape_error("all_to_all", f"tiled: the split axis {s} of shape {shape} is not "
                                            f"a multiple of the axis {axis_name!r}'s size {n}")
        v = sh.reshape(v, shape[:s] + (n, shape[s] // n) + shape[s + 1:])
        out = all_to_all_p.bind(v, axis_name=axis_name, split_axis=s, concat_axis=c)
        o = get_aval(out).shape                         # member index at c, its chunk's axis at c+1
        return sh.reshape(out, o[:c] + (o[c] * o[c + 1],) + o[c + 2:])
    return _tree_map(one, x)


def ppermute(x, axis_name, perm):
    """Send `x` from member `src` to member `dst` for each `(src, dst)` in `perm`;
    members nobody sends to get zeros, as `jax.lax.ppermute`.

    Example:
        >>> import ember, ember.numpy as enp
        >>> shift = lambda v: ppermute(v, "i", [(0, 1), (1, 2), (2, 0)])
        >>> ember.vmap(shift, axis_name="i")(enp.asarray([1., 2., 3.])).tolist()
        [3.0, 1.0, 2.0]
    """
    perm = tuple((int(s), int(d)) for s, d in perm)
    return _tree_map(lambda v: ppermute_p.bind(v, axis_name=axis_name, perm=perm), x)


def axis_index(axis_name):
    """This member's index along the named axis (an int32 scalar), as `jax.lax.axis_index`.

    Example:
        >>> import ember, ember.numpy as enp
        >>> ember.vmap(lambda v: v + axis_index("i"), axis_name="i")(enp.zeros(3)).tolist()
        [0.0, 1.0, 2.0]
    """
    return axis_index_p.bind(axis_name=axis_name)
