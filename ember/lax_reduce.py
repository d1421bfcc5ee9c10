"""`lax.reduce` and `lax.reduce_window` with a user computation (JAX's generic forms).

A computation that traces to one monoid primitive (add, mul, max, min, and, or, xor)
with its identity as the initial value becomes the matching `reduce_*` /
`reduce_window_*` primitive, as JAX does.  Any other computation (a lambda pairing
values with indices, a non-identity initial value, several operands) is applied to
scalars through `vmap`: `reduce` combines neighbours pairwise in a balanced tree of
log2(n) vectorised calls, keeping the operand order (so an associative but
non-commutative computation is fine), then folds the initial value in once on the
left; `reduce_window` pads with the initial value and folds the window's strided slices
into it, one vectorised call per window position.

Example:
    >>> import numpy as np
    >>> from ember import lax
    >>> lax.reduce(np.arange(6.0, dtype=np.float32).reshape(2, 3), 0.0, lax.add, (1,)).tolist()
    [3.0, 12.0]
"""
from __future__ import annotations

import numpy as np

from . import dtypes as _dt
from .fx.core import get_aval
from .fx.prims import reduce as _r
from .fx.prims import window as _w
from .fx.prims.shape import broadcast_in_dim, concatenate, pad, reshape, slice as _slice, transpose
from .numpy._util import concrete_or_none
from .tree import tree_flatten, tree_unflatten

__all__ = ["reduce", "reduce_window"]

_REDUCERS = {"add": _r.reduce_sum, "mul": _r.reduce_prod, "max": _r.reduce_max,
             "min": _r.reduce_min, "and": _r.reduce_and, "or": _r.reduce_or,
             "xor": _r.reduce_xor}
_WINDOW_REDUCERS = {"add": _w.reduce_window_sum, "max": _w.reduce_window_max,
                    "min": _w.reduce_window_min}


def _identity(name, dtype):
    d = np.dtype(dtype)
    if name == "add" or name in ("or", "xor"):
        return 0
    if name == "mul":
        return 1
    if name == "and":
        return True if d == np.bool_ else ~np.array(0, d)
    lowest = name == "max"
    if d == np.bool_:
        return not lowest
    if _dt.is_float(d):
        return -np.inf if lowest else np.inf
    info = np.iinfo(d)
    return info.min if lowest else info.max


def _monoid(computation, dtype):
    """The monoid primitive's name when `computation(a, b)` traces to exactly that one
    primitive applied to its two scalar arguments; None otherwise."""
    from .transforms.graph_api import make_graph
    z = np.zeros((), dtype)
    try:
        g = make_graph(computation)(z, z)
    except Exception:  # noqa: BLE001  (not a function of two scalars: the generic path decides)
        return None
    if len(g.equations) != 1 or len(g.graph.outputs) != 1:
        return None
    eq = g.equations[0]
    ins = g.graph.inputs
    if (eq.prim.name in _REDUCERS and len(eq.inputs) == 2 and eq.outputs == g.graph.outputs
            and {id(v) for v in eq.inputs} == {id(v) for v in ins}
            and get_aval(g.graph.outputs[0]).dtype == np.dtype(dtype)):
        return eq.prim.name
    return None


def _is_identity(init, name, dtype):
    v = concrete_or_none(init)
    if v is None or np.shape(v) != ():
        return False
    # +0.0 and -0.0 both count for add: reduce_sum's zero is the same up to the sign of an
    # all-(-0.0) sum, which numpy's sum gives as +0.0 too
    return bool(np.asarray(v).astype(dtype) == np.asarray(_identity(name, dtype)).astype(dtype))


def _arrays(tree, what, op):
    from .numpy import asarray
    leaves, treedef = tree_flatten(tree)
    if not leaves:
        raise ValueError(f"{op}: {what} is empty")
    return [asarray(x) for x in leaves], treedef


def _checked_inits(op, xs, inits, treedef, itreedef):
    if itreedef != treedef:
        raise TypeError(f"{op}: init_values must have the structure of operands ({treedef}), "
                        f"got {itreedef}")
    out = []
    for x, i in zip(xs, inits):
        ia, xa = get_aval(i), get_aval(x)
        if ia.ndim:
            raise TypeError(f"{op}: each init value must be a scalar, got shape {ia.shape}")
        if ia.dtype != xa.dtype:
            from .fx.prims.convert import convert_element_type
            i = convert_element_type(i, xa.dtype)
        out.append(i)
    return out


def _combiner(computation, treedef, dtypes, op):
    """computation over flat lists of equal-shaped 1-d arrays, applied elementwise."""
    from .transforms.batching import vmap
    n = len(dtypes)

    def flat(*vals):
        out = computation(tree_unflatten(treedef, list(vals[:n])),
                          tree_unflatten(treedef, list(vals[n:])))
        leaves, otree = tree_flatten(out)
        if otree != treedef:
            raise TypeError(f"{op}: the computation must return the structure of operands "
                            f"({treedef}), got {otree}")
        for v, d in zip(leaves, dtypes):
            if get_aval(v).dtype != d or get_aval(v).ndim:
                raise TypeError(f"{op}: the computation must return scalars of dtypes "
                                f"{[str(t) for t in dtypes]}, got {get_aval(v).dtype}"
                                f"{list(get_aval(v).shape)}")
        return tuple(leaves)

    batched = vmap(flat)
    return lambda xs, ys: list(batched(*xs, *ys))


def reduce(operands, init_values, computation, dimensions):
    """Reduce `operands` (an array or a pytree of equal-shaped arrays) over `dimensions`
    with `computation(x, y)`, starting from `init_values` (jax.lax.reduce).

    Example:
        >>> import numpy as np
        >>> from ember import lax
        >>> x = np.array([[3., 1., 4.], [1., 5., 9.]], np.float32)
        >>> idx = np.broadcast_to(np.arange(3, dtype=np.int32), x.shape)
        >>> def argmax_pair(a, b):  # (value, index) of the larger, the lower index on ties
        ...     take_b = (b[0] > a[0]) | ((b[0] == a[0]) & (b[1] < a[1]))
        ...     return (lax.select(take_b, b[0], a[0]), lax.select(take_b, b[1], a[1]))
        >>> v, i = lax.reduce((x, idx), (-np.inf, 0), argmax_pair, (1,))
        >>> v.tolist(), i.tolist()
        ([4.0, 9.0], [2, 2])
    """
    op = "reduce"
    xs, treedef = _arrays(operands, "operands", op)
    inits, itree = tree_flatten(init_values)
    from .numpy import asarray
    inits = _checked_inits(op, xs, [asarray(i) for i in inits], treedef, itree)
    shape = get_aval(xs[0]).shape
    if any(get_aval(x).shape != shape for x in xs):
        raise TypeError(f"{op}: operands must share one shape, got "
                        f"{[get_aval(x).shape for x in xs]}")
    nd = len(shape)
    dims = tuple(sorted({d % nd if -nd <= d < nd else _bad_dim(op, d, shape) for d in dimensions}))
    if len(xs) == 1:
        name = _monoid(computation, get_aval(xs[0]).dtype)
        if name is not None:
            out = _REDUCERS[name](xs[0], dims)
            if not _is_identity(inits[0], name, get_aval(xs[0]).dtype):
                out = computation(broadcast_in_dim(inits[0], get_aval(out).shape, ()), out)
            return tree_unflatten(treedef, [out])
    dtypes = [get_aval(x).dtype for x in xs]
    combine = _combiner(computation, treedef, dtypes, op)
    rest = tuple(d for d in range(nd) if d not in dims)
    n = int(np.prod([shape[d] for d in dims], dtype=np.int64))
    out_shape = tuple(shape[d] for d in rest)
    m = int(np.prod(out_shape, dtype=np.int64))
    vals = [reshape(transpose(x, dims + rest), (n, m)) for x in xs]
    while n > 1:  # combine neighbours (2i, 2i + 1); an odd last row waits for the next round
        h = n // 2
        pairs = [reshape(_slice(v, (0, 0), (2 * h, m)), (h, 2, m)) for v in vals]
        a = [reshape(_slice(p, (0, 0, 0), (h, 1, m)), (h * m,)) for p in pairs]
        b = [reshape(_slice(p, (0, 1, 0), (h, 2, m)), (h * m,)) for p in pairs]
        merged = [reshape(c, (h, m)) for c in combine(a, b)]
        if n % 2:
            merged = [concatenate([c, _slice(v, (n - 1, 0), (n, m))], 0) for c, v in zip(merged, vals)]
        vals, n = merged, h + n % 2
    start = [broadcast_in_dim(i, (m,), ()) for i in inits]
    if n == 0:
        outs = start
    else:
        outs = combine(start, [reshape(v, (m,)) for v in vals])
    return tree_unflatten(treedef, [reshape(o, out_shape) for o in outs])


def _bad_dim(op, d, shape):
    raise ValueError(f"{op}: dimension {d} is out of range for operands of shape {shape}")


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
    """Reduce each sliding window of `operand` (an array or a pytree of equal-shaped
    arrays) with `computation`, padding and base-dilation holes holding `init_value`
    (jax.lax.reduce_window).

    Example:
        >>> import numpy as np
        >>> from ember import lax
        >>> x = np.array([1., 3., 2., 5.], np.float32)
        >>> lax.reduce_window(x, -np.inf, lax.max, (2,), (1,), "VALID").tolist()
        [3.0, 3.0, 5.0]
        >>> lax.reduce_window(x, 0.0, lambda a, b: a + 2 * b, (2,), (2,), "VALID").tolist()
        [8.0, 14.0]
    """
    op = "reduce_window"
    xs, treedef = _arrays(operand, "operand", op)
    inits, itree = tree_flatten(init_value)
    from .numpy import asarray
    inits = _checked_inits(op, xs, [asarray(i) for i in inits], treedef, itree)
    params = _w._window_params(xs[0], window_dimensions, window_strides, padding, base_dilation,
                               window_dilation)
    if len(xs) == 1:
        dtype = get_aval(xs[0]).dtype
        name = _monoid(computation, dtype)
        if name in _WINDOW_REDUCERS and _is_identity(inits[0], name, dtype):
            return tree_unflatten(treedef, [_WINDOW_REDUCERS[name](
                xs[0], params["window_dimensions"], params["window_strides"], params["padding"],
                params["base_dilation"], params["window_dilation"])])
    wd, ws, pads = params["window_dimensions"], params["window_strides"], params["padding"]
    bd, rd = params["base_dilation"], params["window_dilation"]
    padded = [pad(x, i, [(lo, hi, b - 1) for (lo, hi), b in zip(pads, bd)])
              for x, i in zip(xs, inits)]
    pshape = get_aval(padded[0]).shape
    eff = [(w - 1) * r + 1 for w, r in zip(wd, rd)]
    out_shape = tuple(max((p - e) // s + 1, 0) for p, e, s in zip(pshape, eff, ws))
    m = int(np.prod(out_shape, dtype=np.int64))
    dtypes = [get_aval(x).dtype for x in xs]
    combine = _combiner(computation, treedef, dtypes, op)
    acc = [broadcast_in_dim(i, (m,), ()) for i in inits]
    if m:
        for offset in np.ndindex(*wd):  # fold each window position's strided slice in
            start = tuple(o * r for o, r in zip(offset, rd))
            limit = tuple(st + (n - 1) * s + 1 for st, n, s in zip(start, out_shape, ws))
            acc = combine(acc, [reshape(_slice(p, start, limit, ws), (m,)) for p in padded])
    return tree_unflatten(treedef, [reshape(a, out_shape) for a in acc])
