"""Algebraic simplification: bit-exact rewrites of a graph before it is compiled.

Every rewrite gives the same bits as the original on every input, -0.0, +-inf and NaN
included (NaN stays NaN; its sign and payload are not data IEEE arithmetic preserves
anyway: x86 keeps the operand's sign in `x * -1`).  So `x * 1 -> x`, `x - 0 -> x`,
`x + (-0) -> x`, `x / 1 -> x`, `x * -1 -> neg x`, `neg (neg x) -> x`, `x + neg y -> x - y`,
`x - neg y -> x + y`, `neg x * neg y -> x * y`, `x * neg y -> neg (x * y)` (a neg used
once moves out, where those absorb it) and `x + x -> x * 2` are done, and for
integers also `x + 0 -> x` and `0 - x -> neg x`; `x + 0 -> x` is not done for floats
(`-0 + 0` is `+0`), nor `x * 0 -> 0` (`inf * 0` is NaN) nor `x - x -> 0`.  Structural
identities (a convert to the same dtype, a reshape to the same shape, an identity
transpose or broadcast, squeeze/expand_dims/rev of no axes) forward their operand, and a
reshape of a reshape or a broadcast of a broadcast becomes one equation.  A
"constant" is a rank-0 literal or a `broadcast_in_dim` of one (how `ones_like` seeds
reverse mode).  Rewrites only replace a variable by one of the same shape and dtype, and a
graph output only by one of the same weak type too, so a graph's output types never change.

Example:
    >>> import ember, ember.lax as lax, ember.numpy as enp
    >>> g = ember.make_graph(lambda x: lax.neg(lax.neg(x * 1.0)) - 0.0)(enp.ones(3))
    >>> [e.prim.name for e in g.graph.equations]
    ['mul', 'neg', 'neg', 'sub']
    >>> from ember.fx.passes import dce
    >>> len(dce(simplify(g.graph)).equations)
    0
"""
from __future__ import annotations

import numpy as np

from ..core import AbstractArray
from ..ir import Graph, Literal, Var

__all__ = ["simplify"]


def _real(d) -> bool:
    return d.kind in "iuf" or d.name == "bfloat16"


def _is_float(d) -> bool:
    return d.kind == "f" or d.name == "bfloat16"


def _scalar(a, defs):
    """The scalar value of a constant operand (a rank-0 literal or a broadcast of one), or
    None.  Returned as a numpy 0-d array in the operand's dtype."""
    if type(a) is Var:
        eq = defs.get(a)
        if eq is None or eq.prim.name != "broadcast_in_dim" or type(eq.inputs[0]) is not Literal:
            return None
        a = eq.inputs[0]
    v = np.asarray(a.value)
    if v.size != 1:
        return None
    return v.reshape(())


def _is(v, target, sign=None) -> bool:
    """`v` equals `target` exactly; for zero, `sign` says which zero (True: -0)."""
    if v is None:
        return False
    if v.dtype.kind == "b":
        return False
    with np.errstate(invalid="ignore"):
        if not bool(v == target):
            return False
    if sign is not None and _is_float(v.dtype):
        return bool(np.signbit(v.astype(np.float32) if v.dtype.name == "bfloat16" else v)) == sign
    return True


def _producer(a, defs, name):
    if type(a) is Var:
        eq = defs.get(a)
        if eq is not None and eq.prim.name == name:
            return eq
    return None


def _same(a, out, outputs) -> bool:
    # Inside a graph the weak flag has no effect (operands' dtypes are explicit), so a
    # value may stand for one that differs only in it; a graph output keeps its own.
    aa, oa = a.aval, out.aval
    if out in outputs:
        return aa == oa
    return aa.shape == oa.shape and aa.dtype == oa.dtype


_STRUCTURAL = {"convert_element_type", "reshape", "squeeze", "expand_dims", "rev"}


def _rewrite(eq, defs, prims, outputs, uses, consumer):
    """What `eq` simplifies to: ("alias", atom), ("eq", new equation) or None."""
    name = eq.prim.name
    out = eq.outputs[0] if len(eq.outputs) == 1 else None
    if out is None:
        return None
    ins = eq.inputs
    d = out.aval.dtype
    if name in _STRUCTURAL or name == "transpose" or name == "broadcast_in_dim":
        x = ins[0]
        ident = tuple(range(out.aval.ndim))
        if (_same(x, out, outputs)
                and (name != "transpose" or tuple(eq.params["permutation"]) == ident)
                and (name != "broadcast_in_dim"
                     or tuple(eq.params["broadcast_dimensions"]) == ident)
                and (name != "rev" or all(out.aval.shape[i] <= 1 for i in eq.params["dimensions"]))):
            return ("alias", x)
    if name == "transpose":
        inner = _producer(ins[0], defs, "concatenate")
        if inner is not None and uses.get(ins[0], 0) == 1 and ins[0] not in outputs:
            # a transposed concatenate is the concatenate of the transposed operands: the
            # slabs are then written where they end up (the full Hessian's last pass)
            perm = tuple(eq.params["permutation"])
            new = []
            for a in inner.inputs:
                t = Var(AbstractArray(tuple(a.aval.shape[p] for p in perm), a.aval.dtype))
                new.append(eq.replace(inputs=[a], outputs=[t]))
            new.append(eq.replace(prim=prims["concatenate"], inputs=[t.outputs[0] for t in new],
                                  params={"dimension": perm.index(inner.params["dimension"])}))
            return ("eqs", new)
    if name == "reshape":
        inner = _producer(ins[0], defs, "reshape")
        if inner is not None:  # a reshape of a reshape is one reshape (row-major order)
            return ("eq", eq.replace(inputs=[inner.inputs[0]]))
        cat = _producer(ins[0], defs, "concatenate")
        if cat is not None and uses.get(ins[0], 0) == 1 and ins[0] not in outputs:
            return _reshape_through_concatenate(eq, cat, prims)
        return None
    if name == "broadcast_in_dim" and len(ins) == 1:
        inner = _producer(ins[0], defs, "broadcast_in_dim")
        if inner is not None and len(inner.inputs) == 1:
            dims = eq.params["broadcast_dimensions"]
            composed = tuple(dims[i] for i in inner.params["broadcast_dimensions"])
            return ("eq", eq.replace(inputs=[inner.inputs[0]],
                                     params=dict(eq.params, broadcast_dimensions=composed)))
        return None
    if name == "neg":
        inner = _producer(ins[0], defs, "neg")
        if inner is not None and _same(inner.inputs[0], out, outputs):
            return ("alias", inner.inputs[0])
        return None
    if len(ins) != 2 or not _real(d):
        return None
    x, y = ins
    sx, sy = _scalar(x, defs), _scalar(y, defs)
    integer = d.kind in "iu"
    if name == "mul":
        for a, s in ((x, sy), (y, sx)):
            if _is(s, 1) and _same(a, out, outputs):
                return ("alias", a)
        for a, s in ((x, sy), (y, sx)):
            if _is(s, -1) and d.kind != "u" and _same(a, out, outputs):
                return ("eq", eq.replace(prim=prims["neg"], inputs=[a], params={}))
        nx, ny = _producer(x, defs, "neg"), _producer(y, defs, "neg")
        if nx is not None and ny is not None:
            return ("eq", eq.replace(inputs=[nx.inputs[0], ny.inputs[0]]))
        # a * neg b = neg (a * b) exactly (rounding is sign-symmetric): the neg moves out
        # where a later add/sub/neg absorbs it.  Only for a neg used once, so it never adds
        # an equation.
        for n, other, first in ((ny, x, True), (nx, y, False)):
            if n is not None and uses.get(n.outputs[0], 0) == 1 and _scalar(other, defs) is None:
                t = Var(out.aval)
                pair = [n.inputs[0], other] if not first else [other, n.inputs[0]]
                inner = eq.replace(inputs=pair, outputs=[t])
                return ("eqs", [inner, eq.replace(prim=prims["neg"], inputs=[t], params={})])
        return None
    if name == "div":
        if _is(sy, 1) and _same(x, out, outputs):
            return ("alias", x)
        # (ints: INT_MIN / -1 overflows, which is not neg's wrap on every backend)
        if not integer and _is(sy, -1) and _same(x, out, outputs):
            return ("eq", eq.replace(prim=prims["neg"], inputs=[x], params={}))
        return None
    if name == "add":
        r = _sum_of_pads(eq, defs, prims, outputs, uses, consumer)
        if r is not None:
            return r
        # x + (-0) is x for every float x; x + (+0) is not (-0 + +0 = +0); ints have one 0
        zero_sign = None if integer else True
        for a, s in ((x, sy), (y, sx)):
            if _is(s, 0, zero_sign) and _same(a, out, outputs):
                return ("alias", a)
        ny = _producer(y, defs, "neg")
        if ny is not None:
            return ("eq", eq.replace(prim=prims["sub"], inputs=[x, ny.inputs[0]]))
        nx = _producer(x, defs, "neg")
        if nx is not None:
            return ("eq", eq.replace(prim=prims["sub"], inputs=[y, nx.inputs[0]]))
        if x is y and type(x) is Var and d.kind != "b":
            two = Literal(np.array(2, d)[()], AbstractArray((), d, x.aval.weak_type))
            return ("eq", eq.replace(prim=prims["mul"], inputs=[x, two]))
        return None
    if name == "sub":
        if _is(sy, 0, None if integer else False) and _same(x, out, outputs):
            return ("alias", x)
        if integer and d.kind != "u" and _is(sx, 0) and _same(y, out, outputs):
            return ("eq", eq.replace(prim=prims["neg"], inputs=[y], params={}))
        ny = _producer(y, defs, "neg")
        if ny is not None:
            return ("eq", eq.replace(prim=prims["add"], inputs=[x, ny.inputs[0]]))
        return None
    return None


def _reshape_through_concatenate(eq, cat, prims):
    """A reshape that only adds or removes unit axes of a concatenate is the
    concatenate of the reshaped operands (so a transpose after it can move through
    too), or None."""
    old, new_shape = tuple(cat.outputs[0].aval.shape), tuple(eq.outputs[0].aval.shape)
    d = cat.params["dimension"]
    kept_old = [i for i, n in enumerate(old) if n != 1]
    kept_new = [i for i, n in enumerate(new_shape) if n != 1]
    if [old[i] for i in kept_old] != [new_shape[i] for i in kept_new] or d not in kept_old:
        return None
    axis = kept_new[kept_old.index(d)]
    parts = []
    for a in cat.inputs:
        shape = list(new_shape)
        shape[axis] = a.aval.shape[d]
        t = Var(AbstractArray(tuple(shape), a.aval.dtype))
        parts.append(eq.replace(inputs=[a], outputs=[t], params=dict(eq.params, new_sizes=tuple(shape))))
    cat_eq = eq.replace(prim=prims["concatenate"], inputs=[p.outputs[0] for p in parts], params={"dimension": axis})
    return ("eqs", parts + [cat_eq])


def _prims():
    from ..prims import elementwise as ew, shape as sh
    return {"neg": ew.neg_p, "sub": ew.sub_p, "add": ew.add_p, "mul": ew.mul_p,
            "concatenate": sh.concatenate_p, "broadcast_in_dim": sh.broadcast_in_dim_p}


def _padded_pieces(eq, defs, uses, outputs):
    """For a tree of adds (inner ones used once) whose leaves are zero-pads of
    disjoint slabs along one axis (how reverse mode accumulates the gradients of
    slices of one array): (axis, [(start, operand)] sorted), else None."""
    d = eq.outputs[0].aval.dtype
    axis, pieces, stack = None, [], list(eq.inputs)
    while stack:
        a = stack.pop()
        e = defs.get(a) if type(a) is Var else None
        if e is None:
            return None
        if e.prim.name == "add" and uses.get(a, 0) == 1 and a not in outputs:
            stack.extend(e.inputs)
            continue
        if e.prim.name != "pad" or not _is(_scalar(e.inputs[1], defs), 0, False if _is_float(d) else None):
            return None
        cfg = e.params["padding_config"]
        moved = [i for i, (lo, hi, interior) in enumerate(cfg) if (lo, hi, interior) != (0, 0, 0)]
        if len(moved) != 1 or any(lo < 0 or hi < 0 or interior for lo, hi, interior in cfg):
            return None
        if axis is None:
            axis = moved[0]
        elif axis != moved[0]:
            return None
        pieces.append((cfg[axis][0], e.inputs[0]))
    pieces.sort(key=lambda p: p[0])
    for (s0, x0), (s1, _) in zip(pieces, pieces[1:]):
        if s0 + x0.aval.shape[axis] > s1:
            return None          # overlapping slabs really add
    return axis, pieces


def _sum_of_pads(eq, defs, prims, outputs, uses, consumer):
    """add(pad(a), pad(b), ...) of disjoint slabs -> concatenate(a + 0, zeros, b + 0, ...):
    the same bits (`+ 0` turns -0 into +0 as the sum with the other pads' zeros does), and
    a stored concatenate is written slab by slab instead of every element summing every
    pad.  Only at the root of an add tree (an add whose single user is an add waits)."""
    out = eq.outputs[0]
    if consumer.get(out) == "add" or out.aval.ndim == 0:
        return None
    found = _padded_pieces(eq, defs, uses, outputs)
    if found is None or len(found[1]) < 2:
        return None
    axis, pieces = found
    d, shape = out.aval.dtype, tuple(out.aval.shape)
    zero = Literal(np.array(0, d)[()], AbstractArray((), d, False))
    new, parts, pos = [], [], 0

    def zeros(n):
        z = Var(AbstractArray(shape[:axis] + (n,) + shape[axis + 1:], d))
        new.append(eq.replace(prim=prims["broadcast_in_dim"], inputs=[zero], outputs=[z],
                              params={"shape": z.aval.shape, "broadcast_dimensions": ()}))
        return z

    for start, x in pieces:
        if start > pos:
            parts.append(zeros(start - pos))
        if _is_float(d):
            t = Var(AbstractArray(x.aval.shape, d))
            new.append(eq.replace(prim=prims["add"], inputs=[x, zero], outputs=[t], params={}))
            x = t
        parts.append(x)
        pos = start + x.aval.shape[axis]
    if pos < shape[axis]:
        parts.append(zeros(shape[axis] - pos))
    new.append(eq.replace(prim=prims["concatenate"], inputs=parts, params={"dimension": axis}))
    return ("eqs", new)


def simplify(graph: Graph) -> Graph:
    """The graph with the bit-exact algebraic rewrites above applied, in one forward
    walk over the equations (a rewrite's result is itself simplified as later equations
    see it, so `neg (neg (x * -1))` -> `neg x`).  Dead equations are left to `dce`.

    Example:
        >>> import ember, ember.numpy as enp
        >>> g = ember.make_graph(lambda x: 1.0 * x)(enp.ones(3))
        >>> simplify(g.graph).outputs == g.graph.inputs
        True
    """
    prims = _prims()
    outputs = {a for a in graph.outputs if type(a) is Var}
    uses: dict = {}
    consumer: dict = {}   # var -> the name of the primitive using it (its last user)
    for e in graph.equations:
        for a in e.inputs:
            if type(a) is Var:
                uses[a] = uses.get(a, 0) + 1
                consumer[a] = e.prim.name
    for a in outputs:
        uses[a] = uses.get(a, 0) + 2   # an output is always live
    rename: dict = {}
    defs: dict = {}
    out_eqs = []
    changed = False
    for eq in graph.equations:
        inputs = [rename.get(a, a) if type(a) is Var else a for a in eq.inputs]
        if inputs != eq.inputs:
            eq = eq.replace(inputs=inputs)
            changed = True
        # a rewritten equation may match again (mul x -1 -> neg x, then neg (neg y) -> y)
        for _ in range(4):
            r = _rewrite(eq, defs, prims, outputs, uses, consumer) if not eq.prim.multiple_results else None
            if r is None:
                break
            changed = True
            if r[0] == "alias":
                rename[eq.outputs[0]] = r[1]
                eq = None
                break
            if r[0] == "eqs":
                *first, eq = r[1]
                for f in first:
                    for v in f.outputs:
                        defs[v] = f
                    out_eqs.append(f)
                continue
            eq = r[1]
        if eq is None:
            continue
        for v in eq.outputs:
            defs[v] = eq
        out_eqs.append(eq)
    if not changed:
        return graph
    outs = [rename.get(a, a) if type(a) is Var else a for a in graph.outputs]
    return Graph(graph.constvars, graph.inputs, out_eqs, outs)

