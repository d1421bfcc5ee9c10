"""`while_loop` as a primitive, and `fori_loop` (a scan when its bounds are static).

Operands are (cond consts, body consts, carry).  Forward mode and vmap work
(a batched predicate runs until every lane is done); reverse mode has no rule
because the trip count is dynamic: use `scan` or `fori_loop` with static bounds.

Example:
    >>> import ember
    >>> float(ember.lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, 1.0))
    16.0
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ...fx.core import Primitive, Tracer, Zero, get_aval, tangent_aval
from ...fx.drivers import register_driver, while_driver
from ...fx.ir import eval_graph
from ...fx.prims import elementwise as _ew
from ...fx.prims.convert import convert_element_type
from ...fx.prims.elementwise import lt
from ...fx.prims.reduce import reduce_or
from ...fx.prims.rules import bdim_to_front, instantiate
from ...fx.prims.shape import broadcast_in_dim
from ...fx.staging import consts_to_inputs, trace_flat
from ...tree import tree_flatten, tree_unflatten
from ..batching import batch_graph
from ..jvp import jvp_graph
from ..util import as_ember, as_ember_args, as_ember_weak, at_user, flatten_outputs, describe_value, first_type_mismatch, fun_location, mismatch_message
from .common import graph_with_extra_inputs, reorder_graph, trace_weak_carry
from .scan import scan

while_p = Primitive("while_loop", multiple_results=True)
while_p.kind = "control"


def _while_abstract(*avals, cond_graph, body_graph, cond_nconsts, body_nconsts):
    return list(avals[cond_nconsts + body_nconsts:])


def _while_jvp(primals, tangents, *, cond_graph, body_graph, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    cc, bc, carry = primals[:nc], primals[nc:nc + nb], primals[nc + nb:]
    t_bc, t_carry = tangents[nc:nc + nb], tangents[nc + nb:]
    bc_nz = [type(t) is not Zero for t in t_bc]
    k_nz = [type(t) is not Zero for t in t_carry]
    while True:
        _, out_nz = jvp_graph(body_graph, bc_nz + k_nz)
        new = [a or b for a, b in zip(k_nz, out_nz)]
        if new == k_nz:
            break
        k_nz = new
    jg, _ = jvp_graph(body_graph, bc_nz + k_nz, instantiate_out=k_nz)
    nk, ntb, ntk = len(carry), sum(bc_nz), sum(k_nz)
    # jg inputs: bc, carry, t_bc, t_carry -> reorder to (bc, t_bc, carry, t_carry)
    perm = (list(range(nb)) + list(range(nb + nk, nb + nk + ntb)) + list(range(nb, nb + nk))
            + list(range(nb + nk + ntb, nb + nk + ntb + ntk)))
    body2, bextra = consts_to_inputs(reorder_graph(jg, perm))
    t_k_avals = [tangent_aval(get_aval(c)) for c, z in zip(carry, k_nz) if z]
    cond2 = consts_to_inputs(graph_with_extra_inputs(cond_graph, t_k_avals, nc + nk))[0]
    tk = [instantiate(t) for t, z in zip(t_carry, k_nz) if z]
    outs = while_p.bind(*cc, *bextra, *bc, *[t for t, z in zip(t_bc, bc_nz) if z], *carry, *tk,
                        cond_graph=cond2, body_graph=body2, cond_nconsts=nc,
                        body_nconsts=len(bextra) + nb + ntb)
    it = iter(outs[nk:])
    return outs[:nk], [next(it) if z else Zero(tangent_aval(get_aval(c))) for c, z in zip(carry, k_nz)]


def _while_batch(axis_size, args, dims, *, cond_graph, body_graph, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    cc, bc, carry = args[:nc], args[nc:nc + nb], args[nc + nb:]
    cc_d, bc_d, k_d = dims[:nc], dims[nc:nc + nb], dims[nc + nb:]
    cc_b = [d is not None for d in cc_d]
    bc_b = [d is not None for d in bc_d]
    k_b = [d is not None for d in k_d]
    while True:
        _, out_b = batch_graph(body_graph, axis_size, bc_b + k_b)
        new = [a or b for a, b in zip(k_b, out_b)]
        _, pred_b = batch_graph(cond_graph, axis_size, cc_b + new)
        if pred_b[0]:
            new = [True] * len(new)  # a per-lane predicate needs every carry per lane
        if new == k_b:
            break
        k_b = new
    _, pred_b = batch_graph(cond_graph, axis_size, cc_b + k_b)
    cc2 = [v if d is None else bdim_to_front(v, d, axis_size) for v, d in zip(cc, cc_d)]
    bc2 = [v if d is None else bdim_to_front(v, d, axis_size) for v, d in zip(bc, bc_d)]
    k2 = [bdim_to_front(v, d, axis_size) if b else v for v, d, b in zip(carry, k_d, k_b)]
    bg, _ = batch_graph(body_graph, axis_size, bc_b + k_b, k_b)
    cg, _ = batch_graph(cond_graph, axis_size, cc_b + k_b, [pred_b[0]])
    if not pred_b[0]:
        bg, bextra = consts_to_inputs(bg)
        cg, cextra = consts_to_inputs(cg)
        outs = while_p.bind(*cextra, *cc2, *bextra, *bc2, *k2, cond_graph=cg, body_graph=bg,
                            cond_nconsts=len(cextra) + nc, body_nconsts=len(bextra) + nb)
        return outs, [0 if b else None for b in k_b]
    # Batched predicate: loop while any lane is running; finished lanes keep their carry.
    ncc = len(cc2)

    def cond_any(*xs):
        (p,) = eval_graph(cg.graph, cg.consts, *xs)
        return [reduce_or(p, (0,))]

    def body_sel(*xs):
        ccv, rest = xs[:ncc], xs[ncc:]
        bcv, kv = rest[:len(bc2)], rest[len(bc2):]
        (p,) = eval_graph(cg.graph, cg.consts, *ccv, *kv)
        new = eval_graph(bg.graph, bg.consts, *bcv, *kv)
        out = []
        for n_, o in zip(new, kv):
            sel = broadcast_in_dim(p, get_aval(o).shape, (0,))
            out.append(_ew.select_n(sel, o, n_))
        return out

    c_avals = [get_aval(v) for v in cc2]
    b_avals = [get_aval(v) for v in bc2]
    k_avals = [get_aval(v) for v in k2]
    cg2, cextra = consts_to_inputs(trace_flat(cond_any, c_avals + k_avals))
    bg2, bextra = consts_to_inputs(trace_flat(body_sel, c_avals + b_avals + k_avals))
    outs = while_p.bind(*cextra, *cc2, *bextra, *cc2, *bc2, *k2, cond_graph=cg2, body_graph=bg2,
                        cond_nconsts=len(cextra) + ncc, body_nconsts=len(bextra) + ncc + len(bc2))
    return outs, [0] * len(outs)


while_p.abstract_eval = _while_abstract
register_driver(while_p, while_driver)   # the impl: the shared driver, bodies interpreted
while_p.jvp = _while_jvp
while_p.batch = _while_batch
# No transpose: the trip count is dynamic.  backward_pass reports this with a hint.
while_p.not_applicable.add("transpose")


def while_loop(cond_fun, body_fun, init_val):
    """Repeat `val = body_fun(val)` while `cond_fun(val)`; returns the final value.

    Not reverse-differentiable (dynamic trip count); use scan/fori_loop for that.

    Example:
        >>> float(while_loop(lambda c: c < 5.0, lambda c: c + 2.0, 0.0))
        6.0
    """
    leaves, tree = tree_flatten(init_val)
    leaves = as_ember_args("while_loop", body_fun, leaves, tree, root="init_val",
                           convert=as_ember_weak)
    avals = [get_aval(v) for v in leaves]
    box = []

    def cflat(*xs):
        p = cond_fun(tree_unflatten(tree, list(xs)))
        try:
            pa = get_aval(p)
        except TypeError:
            pa = None
        if pa is None or pa.shape != () or pa.dtype != _dt.bool_:
            got = describe_value(p)
            hint = ("; reduce it (e.g. enp.all / enp.any)" if pa is not None and pa.shape != ()
                    else "")
            raise TypeError(f"while_loop: cond_fun must return a boolean scalar (bool[]), but "
                            f"{fun_location(cond_fun)} returned {got}{hint}{at_user()}")
        return [p]

    def bflat(*xs):
        out = body_fun(tree_unflatten(tree, list(xs)))
        o, t = flatten_outputs("while_loop", body_fun, out)
        box.append(t)
        return [convert_element_type(v, a.dtype) if get_aval(v).weak_type and get_aval(v).dtype != a.dtype
                and not a.weak_type else v for v, a in zip(o, avals)]

    # the body first: it settles the weak carries' types, which the predicate then sees
    bg, leaves, avals = trace_weak_carry(bflat, leaves, avals, [], box)
    bg, bconsts = consts_to_inputs(bg)
    cg, cconsts = consts_to_inputs(trace_flat(cflat, avals))
    bad = first_type_mismatch(tree, avals, box[0], bg.out_avals, "init_val")
    if bad is not None:
        raise TypeError(mismatch_message(
            "while_loop: body_fun must return a value of the same structure, shapes and dtypes "
            "as init_val", ("init_val", f"the value returned by {fun_location(body_fun)}"), bad)
            + at_user())
    outs = while_p.bind(*cconsts, *bconsts, *leaves, cond_graph=cg, body_graph=bg,
                        cond_nconsts=len(cconsts), body_nconsts=len(bconsts))
    return tree_unflatten(tree, outs)


def _static_int(x):
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, Tracer):
        v = x.concrete_value()
        return None if v is None else int(np.asarray(v))
    try:
        return int(np.asarray(x))
    except TypeError:
        return None


def fori_loop(lower, upper, body_fun, init_val):
    """`for i in range(lower, upper): val = body_fun(i, val)`.

    With static bounds it lowers to `scan` (reverse-differentiable); with traced
    bounds to `while_loop`.

    Example:
        >>> float(fori_loop(0, 4, lambda i, v: v + i, 0.0))
        6.0
    """
    lo, hi = _static_int(lower), _static_int(upper)
    if lo is not None and hi is not None:
        n = max(hi - lo, 0)

        def step(carry, _):
            i, v = carry
            return (i + np.int32(1), body_fun(i, v)), None

        (_, out), _ = scan(step, (as_ember(np.int32(lo)), init_val), None, length=n)
        return out
    lo_v = convert_element_type(as_ember(lower), _dt.int32)
    hi_v = convert_element_type(as_ember(upper), _dt.int32)

    def c(carry):
        return lt(carry[0], carry[1])

    def b(carry):
        i, h, v = carry
        return i + np.int32(1), h, body_fun(i, v)

    return while_loop(c, b, (lo_v, hi_v, init_val))[2]


# --- Taylor rule (ember.jet): the body's jet, the carries' series as extra loop state ------

def _while_taylor(primals, series, *, cond_graph, body_graph, cond_nconsts, body_nconsts):
    from ..jet import grouped_order, jet_graph, nonzero_series, series_operands, split_series
    from .common import reorder_graph
    K = len(series[0])
    nc, nb = cond_nconsts, body_nconsts
    cc, bc, carry = primals[:nc], primals[nc:nc + nb], primals[nc + nb:]
    nz = nonzero_series(series)
    bc_nz, k_nz = nz[nc:nc + nb], nz[nc + nb:]
    while True:
        _, out_nz = jet_graph(body_graph, bc_nz + k_nz, K)
        new = [a or b for a, b in zip(k_nz, out_nz)]
        if new == k_nz:
            break
        k_nz = new
    jg, _ = jet_graph(body_graph, bc_nz + k_nz, K, instantiate_out=k_nz)
    nk = len(carry)
    body2, bextra = consts_to_inputs(reorder_graph(jg, grouped_order([nb, nk], bc_nz + k_nz, K)))
    s_avals = [tangent_aval(get_aval(c)) for c, z in zip(carry, k_nz) if z for _ in range(K)]
    cond2 = consts_to_inputs(graph_with_extra_inputs(cond_graph, s_avals, nc + nk))[0]
    sb, sk = series[nc:nc + nb], series[nc + nb:]
    outs = while_p.bind(*cc, *bextra, *bc, *series_operands(bc, sb, bc_nz), *carry,
                        *series_operands(carry, sk, k_nz), cond_graph=cond2, body_graph=body2,
                        cond_nconsts=nc, body_nconsts=len(bextra) + nb + K * sum(bc_nz))
    return outs[:nk], split_series(outs[nk:], k_nz, None, K)


while_p.taylor = _while_taylor
