"""Helper factories that register the common rules of primitive families.

Adding a primitive is one block in one family file: define it, give it an
abstract_eval and a numpy impl, then call one of these to get its jvp,
transpose and batch rules.

Conventions (see ember.fx.core):
  jvp(primals, tangents, **params) -> (out, tangent)   tangents may be `Zero`
  transpose(ct, *args, **params) -> list, one cotangent (or None) per arg;
      linear args are `UndefinedPrimal`, ct is never a `Zero` here
  batch(axis_size, args, dims, **params) -> (out, out_dim); dim None = unbatched

Example:
    >>> from ember.fx.core import Primitive
    >>> p = defvectorized(Primitive("demo_neg")); p.batch is not None
    True
"""
from __future__ import annotations

import numpy as np

from ..core import AbstractArray, Zero, get_aval, is_undefined, tangent_aval
from ... import dtypes as _dt
from ..spelling import user_str


# --- small value helpers used by many rules ---------------------------------------

def aval_of(x) -> AbstractArray:
    return x.aval if isinstance(x, (Zero,)) or is_undefined(x) else get_aval(x)


def zeros(aval: AbstractArray):
    """A concrete/traced array of zeros with the given abstract value."""
    from .shape import broadcast_in_dim
    if aval.dtype == _dt.float0:
        return np.zeros(aval.shape, dtype=_dt.float0)
    z = np.zeros((), dtype=aval.dtype)
    if aval.ndim == 0:
        return z
    return broadcast_in_dim(z, aval.shape, ())


def instantiate(t, aval: AbstractArray | None = None):
    """Turn a symbolic Zero into actual zeros."""
    if type(t) is Zero:
        return zeros(t.aval)
    return t


def add_tangents(a, b):
    if type(a) is Zero:
        return b
    if type(b) is Zero:
        return a
    from .elementwise import add
    return add(a, b)


def broadcast_to_shape(x, shape):
    """Broadcast a rank-0 value (or an equal-shape value) to `shape`."""
    shape = tuple(shape)
    if type(x) is Zero:
        return Zero(x.aval.update(shape=shape))
    a = get_aval(x)
    if a.shape == shape:
        return x
    from .shape import broadcast_in_dim
    if a.ndim == 0:
        return broadcast_in_dim(x, shape, ())
    raise ValueError(f"cannot broadcast {user_str(a)} to {shape}")


def unbroadcast(aval: AbstractArray, ct):
    """Sum a cotangent back to an operand that was implicitly broadcast (rank 0)."""
    if type(ct) is Zero:
        return Zero(tangent_aval(aval))
    ca = get_aval(ct)
    if ca.shape != aval.shape:
        from .reduce import reduce_sum
        ct = reduce_sum(ct, tuple(range(ca.ndim)))
    if ca.dtype != aval.dtype and _dt.is_inexact(aval.dtype):
        from .convert import convert_element_type
        ct = convert_element_type(ct, aval.dtype)
    return ct


def moveaxis(x, src: int, dst: int):
    if src == dst:
        return x
    from .shape import transpose
    nd = get_aval(x).ndim
    perm = [i for i in range(nd) if i != src]
    perm.insert(dst, src)
    return transpose(x, tuple(perm))


def bdim_to_front(x, d, axis_size: int):
    """Move the batch dimension to 0, or add one by broadcasting if unbatched."""
    if d is None:
        from .shape import broadcast_in_dim
        a = get_aval(x)
        return broadcast_in_dim(x, (axis_size,) + a.shape, tuple(range(1, a.ndim + 1)))
    return moveaxis(x, d, 0)


# --- factories -------------------------------------------------------------------

def defvectorized(prim):
    """Batch rule for unary elementwise primitives: apply as is, same batch dim."""
    def batch(axis_size, args, dims, **params):
        return prim.bind(*args, **params), dims[0]
    prim.batch = batch
    prim.kind = "elementwise"
    return prim


def defbroadcasting(prim):
    """Batch rule for n-ary elementwise primitives whose operands have equal
    shapes or are rank 0 (the IR's only implicit broadcast)."""
    def batch(axis_size, args, dims, **params):
        avals = [get_aval(x) for x in args]
        out_rank = max(a.ndim - (d is not None) for a, d in zip(avals, dims))
        # Fast path: all full-rank operands batched at the same dim, scalars unbatched.
        full = [(a, d) for a, d in zip(avals, dims) if a.ndim - (d is not None) == out_rank and out_rank > 0]
        bd = {d for a, d in full}
        if len(bd) == 1 and None not in bd and all(
                d is None for a, d in zip(avals, dims) if not (a.ndim - (d is not None) == out_rank and out_rank > 0)):
            return prim.bind(*args, **params), bd.pop()
        out_shape = None
        for a, d in zip(avals, dims):
            r = a.ndim - (d is not None)
            if r == out_rank:
                s = list(a.shape)
                if d is not None:
                    s.pop(d)
                out_shape = (axis_size,) + tuple(s)
                break
        from .shape import broadcast_in_dim
        new = []
        for x, a, d in zip(args, avals, dims):
            if d is None and a.ndim == 0:
                new.append(x)
                continue
            x = bdim_to_front(x, d, axis_size)
            if get_aval(x).shape != out_shape:
                x = broadcast_in_dim(x, out_shape, (0,))
            new.append(x)
        return prim.bind(*new, **params), 0
    prim.batch = batch
    prim.kind = "elementwise"
    return prim


def defjvp(prim, *fns):
    """JVP as a sum of per-argument contributions.

    Each `fn(g, ans, *primals, **params)` returns that argument's contribution
    to the output tangent (None marks a non-differentiable argument).
    """
    def jvp(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        out_aval = get_aval(ans)
        t = Zero(tangent_aval(out_aval))
        for fn, g in zip(fns, tangents):
            if fn is None or type(g) is Zero:
                continue
            c = broadcast_to_shape(fn(g, ans, *primals, **params), out_aval.shape)
            t = add_tangents(t, c)
        return ans, t
    prim.jvp = jvp
    return prim


def defjvp_zero(prim):
    """The output does not depend differentiably on any input (comparisons, ints)."""
    def jvp(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        if prim.multiple_results:
            return ans, [Zero(tangent_aval(get_aval(a))) for a in ans]
        return ans, Zero(tangent_aval(get_aval(ans)))
    prim.jvp = jvp
    prim.not_applicable.add("transpose")
    prim.taylor = zero_taylor(prim)
    return prim


def deflinear(prim, transpose):
    """A primitive linear in all its array arguments: the jvp applies the
    primitive to the tangents, and `transpose(ct, *args, **params)` is given."""
    def jvp(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        if all(type(t) is Zero for t in tangents):
            return ans, Zero(tangent_aval(get_aval(ans)))
        ts = [instantiate(t) for t in tangents]
        return ans, prim.bind(*ts, **params)
    prim.jvp = jvp
    prim.transpose = transpose
    prim.taylor = linear_taylor(prim)
    return prim


def defbilinear(prim):
    """JVP of a primitive linear in each of its two operands separately (a product:
    mul, dot_general, conv): d(x*y) = dx*y + x*dy, each term the primitive itself
    with the same params; an output that is not floating has a zero tangent.

    Example:
        >>> from ember.fx.core import Primitive
        >>> p = defbilinear(Primitive("my_product"))
        >>> p.jvp is not None
        True
    """
    def jvp(primals, tangents, **params):
        x, y = primals
        tx, ty = tangents
        ans = prim.bind(x, y, **params)
        out_aval = get_aval(ans)
        t = Zero(tangent_aval(out_aval))
        if not _dt.is_inexact(out_aval.dtype):
            return ans, t
        if type(tx) is not Zero:
            t = add_tangents(t, broadcast_to_shape(prim.bind(tx, y, **params), out_aval.shape))
        if type(ty) is not Zero:
            t = add_tangents(t, broadcast_to_shape(prim.bind(x, ty, **params), out_aval.shape))
        return ans, t
    prim.jvp = jvp
    return prim


# --- Taylor rules (ember.jet): series[i] is a list of K normalised coefficients, None = 0 --

def _result_avals(prim, primals, params):
    avals = prim.abstract_eval(*[aval_of(p) for p in primals], **params)
    return avals if prim.multiple_results else [avals]


def zero_taylor(prim):
    """Taylor rule of a primitive whose outputs do not vary with its inputs'
    series (integer/bool results, comparisons, rounding): every term is zero.

    Example:
        >>> from ember.fx.prims.elementwise import floor_p
        >>> import numpy as np
        >>> y, ys = floor_p.taylor([np.float64(1.5)], [[np.float64(1.0)]]); float(y), ys
        (1.0, [None])
    """
    def taylor(primals, series, **params):
        ans = prim.bind(*primals, **params)
        K = len(series[0]) if series else 0
        if prim.multiple_results:
            return ans, [[None] * K for _ in ans]
        return ans, [None] * K
    return taylor


def linear_taylor(prim, argnums=None):
    """Taylor rule of a primitive linear in the arguments `argnums` (all of them by
    default) with the others fixed: coefficient k of the output is the primitive
    applied to the k-th coefficients (zeros where an input has none).  The series
    of the other arguments are ignored: they may only select (integer indices, the
    operand whose argmax a windowed max picks).

    Example:
        >>> from ember.fx.prims.elementwise import neg_p
        >>> import numpy as np
        >>> y, (y1, y2) = linear_taylor(neg_p)([np.float64(1.0)], [[np.float64(2.0), None]])
        >>> float(y), float(y1), y2
        (-1.0, -2.0, None)
    """
    def taylor(primals, series, **params):
        ans = prim.bind(*primals, **params)
        K = len(series[0]) if series else 0
        lin = range(len(primals)) if argnums is None else argnums
        outs = ans if prim.multiple_results else [ans]
        diff = [_dt.is_inexact(aval_of(o).dtype) for o in outs]
        terms = []
        for k in range(K):
            if not any(diff) or all(series[i][k] is None for i in lin):
                terms.append(None)
                continue
            args = list(primals)
            for i in lin:
                t = series[i][k]
                args[i] = zeros(aval_of(primals[i]).strip_weak()) if t is None else t
            r = prim.bind(*args, **params)
            terms.append(r if prim.multiple_results else [r])
        per_out = [[None if t is None or not d else t[j] for t in terms] for j, d in enumerate(diff)]
        return (ans, per_out) if prim.multiple_results else (ans, per_out[0])
    return taylor
