"""`scan`: a loop with a carry and stacked per-iteration inputs/outputs, as a primitive.

Operands are (consts, init carry, xs); the body graph maps
(consts, carry, x) -> (carry, y).  Reverse mode through scan works: partial
evaluation splits the body into a known scan that also emits per-iteration
residuals and a linear scan that the transpose runs backwards. Residuals that
are the same every iteration are computed once, before the loop.

Example:
    >>> import ember, ember.numpy as enp
    >>> carry, ys = ember.lax.scan(lambda c, x: (c + x, c * x), 0.0, enp.arange(4.0))
    >>> float(carry), ys.tolist()
    (6.0, [0.0, 0.0, 2.0, 9.0])
"""
from __future__ import annotations

import numpy as np

from ...fx.core import Primitive, Zero, get_aval, is_undefined, set_current_trace, tangent_aval, user_source
from ...fx.drivers import register_driver, scan_driver
from ...fx.ir import ClosedGraph, Graph, Var, eval_graph
from ...fx.passes.dce import dce
from ...fx.prims.convert import convert_element_type
from ...fx.prims.elementwise import add
from ...fx.prims.rules import bdim_to_front, instantiate, moveaxis, zeros
from ...fx.prims.shape import concatenate, reshape, slice_in_dim
from ...fx.staging import consts_to_inputs, trace_flat
from ...tree import tree_flatten, tree_map, tree_unflatten
from ..batching import batch_graph, vmap
from ..jvp import jvp_graph
from ..partial_eval import partial_eval_graph
from ..transpose import backward_pass
from ..util import as_ember_args, as_ember_weak, at_user, flatten_outputs, describe_value, first_type_mismatch, fun_location, mismatch_message
from .common import reorder_graph, trace_weak_carry

scan_p = Primitive("scan", multiple_results=True)
scan_p.kind = "control"


def _x_aval(a):
    return a.update(shape=a.shape[1:])


def _stack_aval(a, n):
    return a.update(shape=(n,) + a.shape)


def _scan_abstract(*avals, body, num_consts, num_carry, length, reverse):
    carry = avals[num_consts:num_consts + num_carry]
    ys = [_stack_aval(a, length) for a in body.out_avals[num_carry:]]
    return list(carry) + ys


def _split(seq, num_consts, num_carry):
    return list(seq[:num_consts]), list(seq[num_consts:num_consts + num_carry]), list(seq[num_consts + num_carry:])


def _scan_jvp(primals, tangents, *, body, num_consts, num_carry, length, reverse):
    nz = [type(t) is not Zero for t in tangents]
    c_nz, k_nz, x_nz = _split(nz, num_consts, num_carry)
    # fixpoint: a carry whose tangent becomes nonzero in the body stays nonzero
    while True:
        _, out_nz = jvp_graph(body, c_nz + k_nz + x_nz)
        new_k = [a or b for a, b in zip(k_nz, out_nz[:num_carry])]
        if new_k == k_nz:
            break
        k_nz = new_k
    n_y = len(body.out_avals) - num_carry
    _, out_nz = jvp_graph(body, c_nz + k_nz + x_nz)
    y_nz = out_nz[num_carry:]
    jg, _ = jvp_graph(body, c_nz + k_nz + x_nz, instantiate_out=k_nz + y_nz)
    # jg inputs: consts, carry, xs, t_consts, t_carry, t_xs; outputs: carry, ys, t_carry, t_ys
    nc, nk, nx = num_consts, num_carry, len(body.in_avals) - num_consts - num_carry
    ntc, ntk, ntx = sum(c_nz), sum(k_nz), sum(x_nz)
    base = nc + nk + nx
    perm = (list(range(nc)) + list(range(base, base + ntc))
            + list(range(nc, nc + nk)) + list(range(base + ntc, base + ntc + ntk))
            + list(range(nc + nk, base)) + list(range(base + ntc + ntk, base + ntc + ntk + ntx)))
    nty = sum(y_nz)
    out_perm = (list(range(nk)) + list(range(nk + n_y, nk + n_y + ntk))
                + list(range(nk, nk + n_y)) + list(range(nk + n_y + ntk, nk + n_y + ntk + nty)))
    g = reorder_graph(jg, perm, out_perm)
    g, extra = consts_to_inputs(g)
    c, k, x = _split(primals, num_consts, num_carry)
    tc, tk, tx = _split(tangents, num_consts, num_carry)
    tk = [instantiate(t) for t, z in zip(tk, k_nz) if z]
    args = (extra + c + [t for t, z in zip(tc, c_nz) if z] + k + tk
            + x + [t for t, z in zip(tx, x_nz) if z])
    outs = scan_p.bind(*args, body=g, num_consts=len(extra) + nc + ntc, num_carry=nk + ntk,
                       length=length, reverse=reverse)
    carry, t_carry = outs[:nk], outs[nk:nk + ntk]
    ys, t_ys = outs[nk + ntk:nk + ntk + n_y], outs[nk + ntk + n_y:]
    it_k, it_y = iter(t_carry), iter(t_ys)
    t_out = ([next(it_k) if z else Zero(tangent_aval(a)) for z, a in zip(k_nz, body.out_avals[:nk])]
             + [next(it_y) if z else Zero(tangent_aval(_stack_aval(a, length)))
                for z, a in zip(y_nz, body.out_avals[nk:])])
    return list(carry) + list(ys), t_out


def _scan_batch(axis_size, args, dims, *, body, num_consts, num_carry, length, reverse):
    c_d, k_d, x_d = _split(dims, num_consts, num_carry)
    c, k, x = _split(args, num_consts, num_carry)
    c_b = [d is not None for d in c_d]
    k_b = [d is not None for d in k_d]
    x_b = [d is not None for d in x_d]
    while True:
        _, out_b = batch_graph(body, axis_size, c_b + k_b + x_b)
        new = [a or b for a, b in zip(k_b, out_b[:num_carry])]
        if new == k_b:
            break
        k_b = new
    n_y = len(body.out_avals) - num_carry
    _, out_b = batch_graph(body, axis_size, c_b + k_b + x_b, k_b + [False] * n_y)
    y_b = out_b[num_carry:]
    bg, _ = batch_graph(body, axis_size, c_b + k_b + x_b, k_b + y_b)
    bg, extra = consts_to_inputs(bg)
    c2 = [v if d is None else moveaxis(v, d, 0) for v, d in zip(c, c_d)]
    k2 = [bdim_to_front(v, d, axis_size) if b else v for v, d, b in zip(k, k_d, k_b)]
    # xs are sliced on axis 0, so their batch axis goes to 1 (axis 0 per iteration)
    x2 = [v if d is None else moveaxis(v, d, 1) for v, d in zip(x, x_d)]
    outs = scan_p.bind(*extra, *c2, *k2, *x2, body=bg, num_consts=len(extra) + num_consts,
                       num_carry=num_carry, length=length, reverse=reverse)
    odims = [0 if b else None for b in k_b] + [1 if b else None for b in y_b]
    return outs, odims


def _scan_partial_eval(trace, args, params):
    body, num_consts, num_carry = params["body"], params["num_consts"], params["num_carry"]
    length, reverse = params["length"], params["reverse"]
    unknown = [trace.is_unknown(a) for a in args]
    c_u, k_u, x_u = _split(unknown, num_consts, num_carry)
    while True:
        _, _, out_u, _ = partial_eval_graph(body, c_u + k_u + x_u)
        new = [a or b for a, b in zip(k_u, out_u[:num_carry])]
        if new == k_u:
            break
        k_u = new
    n_y = len(body.out_avals) - num_carry
    kg, ug, out_u, nres = partial_eval_graph(body, c_u + k_u + x_u, instantiate=k_u + [False] * n_y)
    y_u = out_u[num_carry:]
    c, k, x = _split(args, num_consts, num_carry)
    # Known scan: known consts, known carry, known xs -> known carry, known ys, residual ys.
    kg, kextra = consts_to_inputs(kg)
    kc = [v for v, u in zip(c, c_u) if not u]
    kk = [v for v, u in zip(k, k_u) if not u]
    kx = [v for v, u in zip(x, x_u) if not u]
    n_kk = len(kk)
    n_kky = n_kk + sum(not u for u in out_u[num_carry:])
    kg, hoisted, res_invariant = _hoist_invariant_residuals(trace, kg, kextra + kc, n_kky)
    kouts = trace.forward_known(scan_p, kextra + kc + kk + kx,
                                dict(body=kg, num_consts=len(kextra) + len(kc), num_carry=n_kk,
                                     length=length, reverse=reverse))
    n_ky = sum(not u for u in y_u)
    known_carry = kouts[:n_kk]
    known_ys = kouts[n_kk:n_kk + n_ky]
    residuals = kouts[n_kk + n_ky:]
    # Unknown scan: ug takes (residuals, unknown consts, unknown carry, unknown xs);
    # reorder to (invariant residuals, unknown consts, unknown carry, per-iteration
    # residuals, unknown xs): an invariant residual is a const of the unknown scan.
    uc = [v for v, u in zip(c, c_u) if u]
    uk = [instantiate(v) if not trace.is_unknown(v) else v for v, u in zip(k, k_u) if u]
    ux = [v for v, u in zip(x, x_u) if u]
    nuc, nuk = len(uc), len(uk)
    inv = [i for i, f in enumerate(res_invariant) if f]
    per_iter = [i for i, f in enumerate(res_invariant) if not f]
    perm = (inv + list(range(nres, nres + nuc)) + list(range(nres + nuc, nres + nuc + nuk))
            + per_iter + list(range(nres + nuc + nuk, len(ug.in_avals))))
    ug2 = consts_to_inputs(reorder_graph(ug, perm))[0]
    atoms = [trace.to_atom(v) for v in list(hoisted) + uc + uk + list(residuals) + ux]
    uouts = trace.stage(scan_p, atoms, dict(body=ug2, num_consts=len(inv) + nuc, num_carry=nuk,
                                            length=length, reverse=reverse))
    known_outs = list(known_carry) + list(known_ys)
    k_it, u_it = iter(known_outs), iter(uouts)
    return [next(u_it) if u else next(k_it) for u in out_u]


def _loop_invariant(graph: Graph, n_consts: int) -> list:
    """Per output of a scan body: whether it depends on the consts alone (the same
    value every iteration). Effectful equations count as varying."""
    varying = set(graph.inputs[n_consts:])
    for eq in graph.equations:
        if eq.prim.effectful or any(type(a) is Var and a in varying for a in eq.inputs):
            varying.update(eq.outputs)
    return [not (type(o) is Var and o in varying) for o in graph.outputs]


def _hoist_invariant_residuals(trace, kg: ClosedGraph, const_vals, n_kept: int):
    """Residuals of the known body that are the same every iteration (a weight the
    backward pass reads, say) are computed once before the loop instead of stacked
    per iteration: an RNN's (T, H, H) copies of its weight become one (H, H).

    Returns the known body without those outputs, their values (on the parent
    trace) and, per residual, whether it was hoisted.
    """
    g = kg.graph
    invariant = _loop_invariant(g, len(const_vals))[n_kept:]
    if not any(invariant):
        return kg, [], invariant
    res_outs = g.outputs[n_kept:]
    lifted = [o for o, f in zip(res_outs, invariant) if f]
    need = {o for o in lifted if type(o) is Var}
    eqs = []
    for eq in reversed(g.equations):       # the slice of the body the hoisted values need
        if any(v in need for v in eq.outputs):
            eqs.append(eq)
            need.update(a for a in eq.inputs if type(a) is Var)
    eqs.reverse()
    pre = Graph([], g.inputs[:len(const_vals)], eqs, lifted)
    with set_current_trace(trace.parent):
        hoisted = eval_graph(pre, [], *const_vals)
    kept = g.outputs[:n_kept] + [o for o, f in zip(res_outs, invariant) if not f]
    return ClosedGraph(dce(Graph([], g.inputs, g.equations, kept)), []), hoisted, invariant


def _scan_transpose(cts, *args, body, num_consts, num_carry, length, reverse):
    c, k, x = _split(args, num_consts, num_carry)
    c_lin = [is_undefined(v) for v in c]
    k_lin = [is_undefined(v) for v in k]
    x_lin = [is_undefined(v) for v in x]
    # A carry whose initial value is known (instantiated zeros from the JVP) is still
    # linear inside the body; its cotangent is computed and then dropped.
    ct_carry = [instantiate(ct) if type(ct) is not Zero else zeros(ct.aval) for ct in cts[:num_carry]]
    ct_ys = [instantiate(ct) if type(ct) is not Zero else zeros(ct.aval) for ct in cts[num_carry:]]
    kc = [v for v, m in zip(c, c_lin) if not m]
    kx = [v for v, m in zip(x, x_lin) if not m]
    lc_avals = [v.aval for v, m in zip(c, c_lin) if m]
    g = body.graph
    ins_c, ins_k, ins_x = _split(g.inputs, num_consts, num_carry)
    known_vars = [v for v, m in zip(ins_c, c_lin) if not m] + [v for v, m in zip(ins_x, x_lin) if not m]
    lin_vars = [v for v, m in zip(ins_c, c_lin) if m] + list(ins_k) + [v for v, m in zip(ins_x, x_lin) if m]
    lg = Graph(known_vars, lin_vars, g.equations, g.outputs)
    nkc, nkx, nlc = len(kc), len(kx), len(lc_avals)

    # Transposed body: consts = known consts; carry = (ct accumulators of linear consts,
    # ct of the carry); xs = (known xs, ct of ys) -> ys = ct of linear xs.
    def tbody(*vals):
        kcv = list(vals[:nkc])
        acc = list(vals[nkc:nkc + nlc])
        ctk = list(vals[nkc + nlc:nkc + nlc + num_carry])
        kxv = list(vals[nkc + nlc + num_carry:nkc + nlc + num_carry + nkx])
        cty = list(vals[nkc + nlc + num_carry + nkx:])
        res = backward_pass(lg, kcv + kxv, ctk + cty)
        res = [instantiate(r) for r in res]
        r_c, r_k, r_x = res[:nlc], res[nlc:nlc + num_carry], res[nlc + num_carry:]
        acc = [add(a, r) for a, r in zip(acc, r_c)]
        return acc + r_k + r_x

    in_avals = ([get_aval(v) for v in kc] + lc_avals + [get_aval(v) for v in ct_carry]
                + [_x_aval(get_aval(v)) for v in kx] + [_x_aval(get_aval(v)) for v in ct_ys])
    tg, extra = consts_to_inputs(trace_flat(tbody, in_avals))
    acc0 = [zeros(a) for a in lc_avals]
    outs = scan_p.bind(*extra, *kc, *acc0, *ct_carry, *kx, *ct_ys, body=tg,
                       num_consts=len(extra) + nkc, num_carry=nlc + num_carry,
                       length=length, reverse=not reverse)
    ct_c_it = iter(outs[:nlc])
    ct_k = outs[nlc:nlc + num_carry]
    ct_x_it = iter(outs[nlc + num_carry:])
    return ([next(ct_c_it) if m else None for m in c_lin]
            + [ct if m else None for ct, m in zip(ct_k, k_lin)]
            + [next(ct_x_it) if m else None for m in x_lin])


scan_p.abstract_eval = _scan_abstract
register_driver(scan_p, scan_driver)   # the impl: the shared driver, bodies interpreted
scan_p.jvp = _scan_jvp
scan_p.batch = _scan_batch
scan_p.partial_eval = _scan_partial_eval
scan_p.transpose = _scan_transpose


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """Loop `carry, y = f(carry, x)` over the leading axis of `xs`, stacking the ys.

    Example:
        >>> import ember.numpy as enp
        >>> c, ys = scan(lambda c, x: (c * x, c), 1.0, enp.asarray([2.0, 3.0]))
        >>> float(c), ys.tolist()
        (6.0, [1.0, 2.0])
    """
    x_leaves, x_tree = tree_flatten(xs)
    x_leaves = as_ember_args("scan", f, x_leaves, x_tree, root="xs")
    lengths = {get_aval(v).shape[0] if get_aval(v).ndim else None for v in x_leaves}
    if None in lengths:
        raise ValueError("scan: every leaf of xs needs a leading axis to scan over")
    if length is not None:
        lengths.add(int(length))
    if len(lengths) > 1:
        raise ValueError(f"scan: xs leaves and length disagree on the scan length: {sorted(lengths)}"
                         + (f"\n  at {user_source()}" if user_source() else ""))
    if not lengths:
        raise ValueError("scan needs xs or an explicit length")
    n = lengths.pop()
    c_leaves, c_tree = tree_flatten(init)
    c_leaves = as_ember_args("scan", f, c_leaves, c_tree, root="init", convert=as_ember_weak)
    c_avals = [get_aval(v) for v in c_leaves]
    x_avals = [_x_aval(get_aval(v)) for v in x_leaves]
    box = []

    def flat(*vals):
        carry = tree_unflatten(c_tree, list(vals[:len(c_avals)]))
        xv = tree_unflatten(x_tree, list(vals[len(c_avals):]))
        out = f(carry, xv)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError(f"scan: f must return a pair (new_carry, y), but {fun_location(f)} "
                            f"returned {describe_value(out)}{at_user()}")
        new_c, y = out
        nc_leaves, nc_tree = flatten_outputs("scan", f, new_c, "carry")
        y_leaves, y_tree = flatten_outputs("scan", f, y, "y")
        box.append((nc_tree, y_tree))
        fixed = []
        for v, a in zip(nc_leaves, c_avals):
            va = get_aval(v)
            if va.dtype != a.dtype and va.weak_type and not a.weak_type:
                v = convert_element_type(v, a.dtype)
            fixed.append(v)
        return fixed + y_leaves

    closed, c_leaves, c_avals = trace_weak_carry(flat, c_leaves, c_avals, x_avals, box)
    nc_tree, y_tree = box[0]
    body_c = closed.out_avals[:len(c_avals)]
    bad = first_type_mismatch(c_tree, c_avals, nc_tree, body_c, "carry")
    if bad is not None:
        raise TypeError(mismatch_message(
            "scan: f must return a new carry of the same structure, shapes and dtypes as init",
            ("init", f"the carry returned by {fun_location(f)}"), bad) + at_user())
    g, consts = consts_to_inputs(closed)
    outs = scan_p.bind(*consts, *c_leaves, *x_leaves, body=g, num_consts=len(consts),
                       num_carry=len(c_avals), length=n, reverse=bool(reverse))
    carry = tree_unflatten(c_tree, outs[:len(c_avals)])
    ys = tree_unflatten(y_tree, outs[len(c_avals):])
    return carry, ys


def map(f, xs, *, batch_size=None):  # noqa: A001 - lax.map
    """Apply `f` to each slice of `xs` along axis 0 sequentially (a scan without carry).

    With `batch_size`, `f` is vmapped over blocks of that many slices, the blocks run
    sequentially, and a last shorter block (the remainder) runs once, vmapped, as in JAX.

    Example:
        >>> import ember.numpy as enp
        >>> map(lambda x: x * 2.0, enp.arange(3.0)).tolist()
        [0.0, 2.0, 4.0]
        >>> map(lambda x: x * 2.0, enp.arange(5.0), batch_size=2).tolist()
        [0.0, 2.0, 4.0, 6.0, 8.0]
    """
    if batch_size is None:
        _, ys = scan(lambda c, x: (c, f(x)), (), xs)
        return ys
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"map: batch_size must be a positive int, got {batch_size!r}{at_user()}")
    leaves, tree = tree_flatten(xs)
    leaves = as_ember_args("map", f, leaves, tree, root="xs")
    if not leaves:
        raise ValueError("map: xs has no arrays to map over" + at_user())
    n = get_aval(leaves[0]).shape[0] if get_aval(leaves[0]).ndim else None
    if n is None or any(not get_aval(v).ndim or get_aval(v).shape[0] != n for v in leaves):
        raise ValueError("map: every leaf of xs needs the same leading axis length" + at_user())
    if n == 0:   # no block to vmap over: the 0-length scan gives the (0, ...) ys
        return scan(lambda c, x: (c, f(x)), (), xs)[1]
    bs = int(batch_size)
    nb, rem = divmod(n, bs)
    vf = vmap(f)
    parts = []
    if nb:
        blocks = [reshape(slice_in_dim(v, 0, nb * bs), (nb, bs) + get_aval(v).shape[1:]) for v in leaves]
        _, ys = scan(lambda c, x: (c, vf(x)), (), tree_unflatten(tree, blocks))
        parts.append(tree_map(lambda y: reshape(y, (nb * bs,) + get_aval(y).shape[2:]), ys))
    if rem:
        parts.append(vf(tree_unflatten(tree, [slice_in_dim(v, nb * bs, n) for v in leaves])))
    if len(parts) == 1:
        return parts[0]
    return tree_map(lambda a, b: concatenate([a, b], 0), *parts)


# --- Taylor rule (ember.jet): the body's jet, its carries' series carried as loop state ----

def _scan_taylor(primals, series, *, body, num_consts, num_carry, length, reverse):
    from ..jet import grouped_order, jet_graph, nonzero_series, series_operands, split_series
    from .common import reorder_graph
    K = len(series[0])
    nz = nonzero_series(series)
    c_nz, k_nz, x_nz = _split(nz, num_consts, num_carry)
    while True:  # a carry whose series becomes nonzero in the body keeps one
        _, out_nz = jet_graph(body, c_nz + k_nz + x_nz, K)
        new_k = [a or b for a, b in zip(k_nz, out_nz[:num_carry])]
        if new_k == k_nz:
            break
        k_nz = new_k
    y_nz = out_nz[num_carry:]
    nzs = c_nz + k_nz + x_nz
    jg, _ = jet_graph(body, nzs, K, instantiate_out=k_nz + y_nz)
    nx = len(body.in_avals) - num_consts - num_carry
    in_perm = grouped_order([num_consts, num_carry, nx], nzs, K)
    out_perm = grouped_order([num_carry, len(y_nz)], k_nz + y_nz, K)
    g, extra = consts_to_inputs(reorder_graph(jg, in_perm, out_perm))
    c, k, x = _split(primals, num_consts, num_carry)
    sc, sk, sx = _split(series, num_consts, num_carry)
    args = (extra + c + series_operands(c, sc, c_nz) + k + series_operands(k, sk, k_nz)
            + x + series_operands(x, sx, x_nz))
    nkk = num_carry + K * sum(k_nz)
    outs = scan_p.bind(*args, body=g, num_consts=len(extra) + num_consts + K * sum(c_nz),
                       num_carry=nkk, length=length, reverse=reverse)
    carry, ys = outs[:num_carry], outs[nkk:nkk + len(y_nz)]
    s_carry = split_series(outs[num_carry:nkk], k_nz, None, K)
    s_ys = split_series(outs[nkk + len(y_nz):], y_nz, None, K)
    return list(carry) + list(ys), s_carry + s_ys


scan_p.taylor = _scan_taylor
