"""Vectorisation: the batch trace, `vmap`, and `batch_graph` for higher-order primitives.

Example:
    >>> import ember, ember.numpy as enp
    >>> ember.vmap(lambda x: x * 2.0)(enp.arange(3.0)).tolist()
    [0.0, 2.0, 4.0]
"""
from __future__ import annotations

import contextlib
import contextvars
import functools

from ..fx.axis_env import bind_axis
from ..fx.core import Trace, Tracer, check_foreign, current_trace, get_aval, new_trace, set_current_trace, user_source
from ..fx.ir import ClosedGraph, eval_graph
from ..fx.prims.rules import bdim_to_front, moveaxis
from ..fx.staging import trace_flat
from ..tree import tree_flatten, tree_unflatten
from .util import as_ember, as_ember_args, bad_output_error, is_value, leaf_names


class BatchTracer(Tracer):
    __slots__ = ("val", "bdim")

    def __init__(self, trace, val, bdim: int):
        self._trace = trace
        self.val = val
        self.bdim = bdim

    def inner_values(self):
        return (self.val,)

    @property
    def aval(self):
        a = get_aval(self.val)
        shape = a.shape[:self.bdim] + a.shape[self.bdim + 1:]
        return a.update(shape=shape)


# The axis name of the batch trace whose batch rule is running: a rule that
# re-traces a sub-graph (jit_call, cond, scan, ...) batches it under the same
# name, so collectives inside the sub-graph see their axis.
_RULE_AXIS: contextvars.ContextVar = contextvars.ContextVar("ember_batch_rule_axis", default=None)


class BatchTrace(Trace):
    def __init__(self, parent, axis_size: int, axis_name=None):
        super().__init__(parent)
        self.axis_size = axis_size
        self.axis_name = axis_name

    def lift(self, x, prim=None):
        if isinstance(x, BatchTracer) and x._trace is self:
            return x.val, x.bdim
        if isinstance(x, Tracer):
            check_foreign(self, x, prim)
        return x, None

    def process_primitive(self, prim, args, params):
        vals, dims, any_b = [], [], False
        for x in args:
            v, d = self.lift(x, prim)
            vals.append(v)
            dims.append(d)
            any_b |= d is not None
        collective = getattr(prim, "collective_batch", None)
        if collective is not None:
            # a collective is batched even when no operand is: its axis may be this one
            with set_current_trace(self.parent):
                out, odim = collective(self.axis_name, self.axis_size, vals, dims, **params)
            return self.wrap(out, odim)
        with set_current_trace(self.parent):
            if not any_b:
                return prim.bind(*vals, **params)
            if self.axis_size == 0 and not prim.effectful:
                return self._empty(prim, vals, dims, params)
            if prim.batch is None:
                raise NotImplementedError(f"batching rule for '{prim.name}' not implemented")
            token = _RULE_AXIS.set(self.axis_name)
            try:
                out, odim = prim.batch(self.axis_size, vals, dims, **params)
            finally:
                _RULE_AXIS.reset(token)
        if prim.multiple_results:
            return [self.wrap(o, d) for o, d in zip(out, odim)]
        return self.wrap(out, odim)

    def _empty(self, prim, vals, dims, params):
        """A batch of zero examples: the per-example types (checked as usual) with
        a leading 0; no rule has to handle groups or strides of size 0."""
        from ..fx.core import AbstractArray
        from ..fx.prims.rules import zeros
        avals = []
        for v, d in zip(vals, dims):
            a = get_aval(v)
            avals.append(a if d is None else a.update(shape=a.shape[:d] + a.shape[d + 1:]))
        out = prim.abstract_eval(*avals, **params)
        outs = out if prim.multiple_results else [out]
        res = [self.wrap(zeros(AbstractArray((0,) + o.shape, o.dtype, o.weak_type)), 0) for o in outs]
        return res if prim.multiple_results else res[0]

    def wrap(self, val, d):
        if d is None:
            return val
        return BatchTracer(self, val, d)


def batch_flat(fun, args, dims, axis_size, axis_name=None):
    """Run `fun` over flat batched args; returns (outs, out_dims) with None for unbatched.
    A named axis is in scope (`fx.axis_env`) while `fun` runs, for its collectives."""
    trace = BatchTrace(current_trace(), axis_size, axis_name)
    named = bind_axis(axis_name, axis_size) if axis_name is not None else contextlib.nullcontext()
    with named, new_trace(trace):
        ins = [x if d is None else BatchTracer(trace, x, d) for x, d in zip(args, dims)]
        outs = fun(*ins)
        res, rdims = [], []
        for o in outs:
            if isinstance(o, BatchTracer) and o._trace is trace:
                res.append(o.val)
                rdims.append(o.bdim)
            else:
                if isinstance(o, Tracer):
                    check_foreign(trace, o)
                res.append(o)
                rdims.append(None)
    return res, rdims


def batch_graph(closed: ClosedGraph, axis_size: int, in_batched, out_batched=None):
    """Vectorise a closed graph: batched inputs carry the batch on axis 0.

    Returns (new_graph, out_batched) where batched outputs have the batch on
    axis 0; `out_batched` (a list of bools) forces outputs to be batched.
    """
    in_avals = [a.update(shape=(axis_size,) + a.shape) if b else a
                for a, b in zip(closed.in_avals, in_batched)]
    box = []

    def fun(*args):
        dims = [0 if b else None for b in in_batched]
        outs, odims = batch_flat(lambda *xs: eval_graph(closed.graph, closed.consts, *xs),
                                 list(args), dims, axis_size, _RULE_AXIS.get())
        force = out_batched or [False] * len(outs)
        res, ob = [], []
        for o, d, f in zip(outs, odims, force):
            if d is None and not f:
                res.append(o)
                ob.append(False)
            else:
                res.append(bdim_to_front(o, d, axis_size))
                ob.append(True)
        box.append(ob)
        return res

    g = trace_flat(fun, in_avals)
    return g, box[0]


def _short_reason(e):
    # optree's messages end by printing the offending subtree, whose arrays can be huge
    msg = str(e)
    for cut in ("; dict:", ", got ("):
        if cut in msg:
            msg = msg[:msg.index(cut)]
    return msg.rstrip(".")


def _flatten_axes(what, tree, axes, n_leaves_tree):
    """Broadcast an in_axes/out_axes prefix tree to the leaves of `tree`.

    In the prefix a None is a leaf ("not mapped", covering a whole subtree), while in
    the value a None is an empty node with no leaves; treating both alike would shift
    the later axes onto the wrong leaves.
    """
    if axes is None or (isinstance(axes, int) and not isinstance(axes, bool)):
        return [axes] * n_leaves_tree.num_leaves
    import optree
    from ..tree import NAMESPACE
    ax_leaves, ax_def = optree.tree_flatten(axes, none_is_leaf=True, namespace=NAMESPACE)
    for a in ax_leaves:
        if a is not None and (isinstance(a, bool) or not isinstance(a, int)):
            raise TypeError(f"vmap {what} must be built from ints and None; got the entry {a!r} "
                            f"(of type {type(a).__name__}) in {what}={axes!r}")
    try:
        subtrees = ax_def.flatten_up_to(tree)
    except (ValueError, TypeError) as e:
        raise ValueError(f"vmap {what} specification must be a tree prefix of the corresponding "
                         f"value; got {what}={axes!r} for a value of structure {n_leaves_tree}: "
                         f"{_short_reason(e)}"
                         f"\n  hint: use one entry per argument/output (None for unmapped ones), or a "
                         f"single int/None for all") from None
    flat = []
    for a, sub in zip(ax_leaves, subtrees):
        flat.extend([a] * optree.tree_structure(sub, none_is_leaf=False, namespace=NAMESPACE).num_leaves)
    return flat


def vmap(fun, in_axes=0, out_axes=0, axis_size=None, axis_name=None, spmd_axis_name=None):
    """Vectorise `fun` over a batch axis of its inputs.

    in_axes/out_axes: an int, None (not batched), or a pytree prefix of the
    arguments / outputs; negative axes count from the end.  `axis_size` is
    needed only when no argument is mapped.  `axis_name` is recorded on the
    batch trace for collective operations (none exist yet).  `spmd_axis_name`
    (JAX's sharding hint for the mapped axis) is accepted and ignored: ember
    does not shard a vmapped axis, and the values do not depend on it.

    Example:
        >>> import ember.numpy as enp
        >>> vmap(lambda a, b: a @ b, in_axes=(0, None))(enp.ones((4, 2, 3)), enp.ones(3)).shape
        (4, 2)
    """
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)

    @functools.wraps(fun, updated=())
    def wrapped(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(f"vmap in_axes has {len(in_axes)} entries but the function was called "
                             f"with {len(args)} positional arguments"
                             + (f"\n  at {user_source()}" if user_source() else ""))
        leaves, tree = tree_flatten(args)
        ax = in_axes if not isinstance(in_axes, tuple) else tuple(in_axes)
        axes = _flatten_axes("in_axes", args, ax, tree)
        vals, dims, sizes = [], [], []
        for i, (x, a) in enumerate(zip(as_ember_args("vmap", fun, leaves, tree), axes)):
            if a is None:
                # an unmapped Python scalar reaches `fun` as itself, as in JAX, so code
                # that branches on it (or passes it on as a static argument) still can
                raw = leaves[i]
                vals.append(raw if type(raw) in (bool, int, float, complex) else x)
                dims.append(None)
                continue
            vals.append(x)
            nd = get_aval(x).ndim
            if not -nd <= a < nd:
                raise ValueError(f"vmap in_axes={a} is out of range for argument leaf {i} of shape "
                                 f"{get_aval(x).shape}" + (f"\n  at {user_source()}" if user_source() else ""))
            a %= nd
            dims.append(a)
            sizes.append((get_aval(x).shape[a], i))
        k_leaves, k_tree = tree_flatten(kwargs)
        kvals = as_ember_args("vmap", fun, k_leaves, tree_flatten(((), kwargs))[1], with_kwargs=True)
        for x in kvals:  # keyword arguments are batched along axis 0, as in JAX
            if get_aval(x).ndim == 0:
                raise ValueError("vmap: keyword arguments are mapped over axis 0 and must not be scalars")
            sizes.append((get_aval(x).shape[0], "kw"))
        n = axis_size
        for s, i in sizes:
            if n is None:
                n = s
            elif s != n:
                raise ValueError("vmap got inconsistent sizes for the mapped axis: "
                                 + ", ".join(f"arg leaf {j} has size {t}" for t, j in sizes)
                                 + (f"\n  at {user_source()}" if user_source() else ""))
        if n is None:
            raise ValueError("vmap needs at least one mapped argument, or axis_size")
        box = []

        def flat(*xs):
            a = tree_unflatten(tree, xs[:len(vals)])
            kw = tree_unflatten(k_tree, xs[len(vals):])
            out = fun(*a, **kw)
            o_leaves, o_tree = tree_flatten(out)
            box.append((o_tree, out))
            return o_leaves

        outs, odims = batch_flat(flat, vals + kvals, dims + [0] * len(kvals), n, axis_name)
        o_tree, _ = box[0]
        oaxes = _flatten_axes("out_axes", tree_unflatten(o_tree, outs), out_axes, o_tree)
        res = []
        for i, (o, d, a) in enumerate(zip(outs, odims, oaxes)):
            if a is not None and not is_value(o):
                # (an unmapped output, out_axes=None, may be any Python value)
                raise bad_output_error("vmap", fun, leaf_names(o_tree, "output")[i], o)
            if a is None:
                if d is not None:
                    raise ValueError(f"vmap has mapped output but out_axes is None: "
                                     f"{leaf_names(o_tree, 'output')[i]} is batched on axis {d}\n"
                                     f"  hint: give that output an int out_axes, or make it "
                                     f"independent of the mapped inputs")
                res.append(o)
                continue
            o = bdim_to_front(as_ember(o), d, n)
            nd = get_aval(o).ndim
            if not -nd <= a < nd:
                # wrapping it modulo the rank would silently put the batch elsewhere
                raise ValueError(f"vmap out_axes={a} is out of range for "
                                 f"{leaf_names(o_tree, 'output')[i]}, which has {nd} dimension"
                                 f"{'s' if nd != 1 else ''} with the batch axis (shape "
                                 f"{get_aval(o).shape}); valid axes are {-nd}..{nd - 1}")
            res.append(moveaxis(o, 0, a % nd))
        return tree_unflatten(o_tree, res)

    return wrapped
