"""`cond` and `switch`: value-dependent branching as the `cond` primitive.

Operands are (index, *ops); every branch is a const-free graph over the same
ops.  Under vmap with a batched index the branches all run and a select picks
per lane, as in JAX.

Example:
    >>> import ember
    >>> float(ember.cond(True, lambda x: x + 1.0, lambda x: x - 1.0, 2.0))
    3.0
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ...fx.core import Primitive, Zero, get_aval, is_undefined, tangent_aval
from ...fx.drivers import register_driver, switch_driver
from ...fx.ir import Graph, eval_graph
from ...fx.prims import convert as _cv
from ...fx.prims import elementwise as _ew
from ...fx.prims.rules import bdim_to_front, instantiate, zeros
from ...fx.prims.shape import broadcast_in_dim
from ...fx.staging import consts_to_inputs, trace_flat
from ...tree import tree_flatten, tree_unflatten
from ..batching import batch_graph
from ..jvp import jvp_graph
from ..partial_eval import partial_eval_graph
from ..transpose import backward_pass
from ..util import as_ember, as_ember_args, as_ember_weak, at_user, flatten_outputs, first_type_mismatch, fun_location, mismatch_message

cond_p = Primitive("cond", multiple_results=True)
cond_p.kind = "control"


def _cond_abstract(index, *ops, branches):
    if index.shape != () or not (_dt.is_integer(index.dtype)):
        raise TypeError(f"cond: the branch index must be an int32 scalar, got {index.str_user()}")
    return list(branches[0].out_avals)


def _cond_jvp(primals, tangents, *, branches):
    index, *ops = primals
    nz = [type(t) is not Zero for t in tangents[1:]]
    out_nz = [False] * len(branches[0].out_avals)
    for b in branches:
        _, onz = jvp_graph(b, nz)
        out_nz = [a or c for a, c in zip(out_nz, onz)]
    jbs = tuple(jvp_graph(b, nz, instantiate_out=out_nz)[0] for b in branches)
    jbs, extra = _unify_consts(jbs)
    outs = cond_p.bind(index, *extra, *ops, *[t for t in tangents[1:] if type(t) is not Zero],
                       branches=jbs)
    n = len(branches[0].out_avals)
    it = iter(outs[n:])
    return outs[:n], [next(it) if z else Zero(tangent_aval(a)) for a, z in zip(branches[0].out_avals, out_nz)]


def _unify_consts(closed_list):
    """Move each branch's consts to inputs; every branch takes all branches' consts."""
    gs, consts = [], []
    for c in closed_list:
        g, k = consts_to_inputs(c)
        gs.append((g, len(k)))
        consts.extend(k)
    if not consts:
        return tuple(g for g, _ in gs), []
    avals = [get_aval(c) for c in consts]
    out, off = [], 0
    for g, k in gs:
        rest = g.in_avals[k:]

        def fun(*xs, g=g, k=k, off=off):
            return eval_graph(g.graph, g.consts, *xs[off:off + k], *xs[len(avals):])

        out.append(trace_flat(fun, avals + list(rest)))
        off += k
    return tuple(consts_to_inputs(o)[0] for o in out), consts


def _cond_batch(axis_size, args, dims, *, branches):
    index, *ops = args
    idim, odims = dims[0], dims[1:]
    if idim is not None:
        # A batched predicate: run every branch, then select per lane.
        ops_b = [x if d is None else bdim_to_front(x, d, axis_size) for x, d in zip(ops, odims)]
        in_b = [d is not None for d in odims]
        outs_per = []
        for b in branches:
            bg, _ = batch_graph(b, axis_size, in_b, [True] * len(b.out_avals))
            outs_per.append(eval_graph(bg.graph, bg.consts, *ops_b))
        idx = bdim_to_front(index, idim, axis_size)
        idx = _ew.clamp(np.array(0, get_aval(idx).dtype), idx,
                        np.array(len(branches) - 1, get_aval(idx).dtype))
        res = []
        for j in range(len(branches[0].out_avals)):
            cases = [o[j] for o in outs_per]
            shape = get_aval(cases[0]).shape
            sel = broadcast_in_dim(idx, shape, (0,))
            if len(cases) == 2:
                sel = _cv.convert_element_type(sel, _dt.bool_)
            res.append(_ew.select_n(sel, *cases))
        return res, [0] * len(res)
    ops_b = [x if d is None else bdim_to_front(x, d, axis_size) for x, d in zip(ops, odims)]
    in_b = [d is not None for d in odims]
    out_b = [False] * len(branches[0].out_avals)
    for b in branches:
        _, ob = batch_graph(b, axis_size, in_b)
        out_b = [x or y for x, y in zip(out_b, ob)]
    bbs = [batch_graph(b, axis_size, in_b, out_b)[0] for b in branches]
    bbs, extra = _unify_consts(bbs)
    outs = cond_p.bind(index, *extra, *ops_b, branches=bbs)
    return outs, [0 if b else None for b in out_b]


def _cond_partial_eval(trace, args, params):
    branches = params["branches"]
    index, *ops = args
    if trace.is_unknown(index):
        return trace.stage(cond_p, [trace.to_atom(x) for x in args], params)
    unknowns = [trace.is_unknown(x) for x in ops]
    out_u = [False] * len(branches[0].out_avals)
    for b in branches:
        _, _, ou, _ = partial_eval_graph(b, unknowns)
        out_u = [x or y for x, y in zip(out_u, ou)]
    splits = [partial_eval_graph(b, unknowns, instantiate=out_u) for b in branches]
    res_avals = [list(kg.out_avals[len(kg.out_avals) - nres:]) for kg, _, _, nres in splits]
    all_res = [a for r in res_avals for a in r]
    known_ops = [x for x, u in zip(ops, unknowns) if not u]
    n_known_out = sum(not u for u in out_u)

    # Known branches output their known outputs plus every branch's residual slots
    # (zeros in the slots of other branches).
    known_branches = []
    off = 0
    for bi, (kg, _, _, nres) in enumerate(splits):
        def kfun(*xs, kg=kg, nres=nres, off=off):
            outs = eval_graph(kg.graph, kg.consts, *xs)
            known, res = outs[:len(outs) - nres], outs[len(outs) - nres:]
            slots = []
            for j, a in enumerate(all_res):
                if off <= j < off + nres:
                    slots.append(res[j - off])
                else:
                    slots.append(zeros(a))
            return list(known) + slots
        known_branches.append(trace_flat(kfun, [get_aval(x) for x in known_ops]))
        off += nres
    kbs, kextra = _unify_consts(known_branches)
    kouts = trace.forward_known(cond_p, [index, *kextra, *known_ops], dict(branches=kbs))
    known_outs, residuals = kouts[:n_known_out], kouts[n_known_out:]

    # Unknown branches take all residual slots and the unknown ops.
    unknown_ops = [x for x, u in zip(ops, unknowns) if u]
    ubs = []
    off = 0
    for (kg, ug, _, nres) in splits:
        def ufun(*xs, ug=ug, nres=nres, off=off):
            res = xs[off:off + nres]
            rest = xs[len(all_res):]
            return eval_graph(ug.graph, ug.consts, *res, *rest)
        ubs.append(trace_flat(ufun, all_res + [get_aval(x) for x in unknown_ops]))
        off += nres
    ubs, uextra = _unify_consts(ubs)
    atoms = [trace.to_atom(x) for x in [index, *uextra, *residuals, *unknown_ops]]
    uouts = trace.stage(cond_p, atoms, dict(branches=ubs))
    k_it, u_it = iter(known_outs), iter(uouts)
    return [next(u_it) if u else next(k_it) for u in out_u]


def _cond_transpose(cts, index, *ops, branches):
    if is_undefined(index):
        raise TypeError("cond is not linear in its branch index")
    lin = [is_undefined(x) for x in ops]
    known_vals = [x for x, m in zip(ops, lin) if not m]
    ct_nz = [type(c) is not Zero for c in cts]
    tbs = []
    for b in branches:
        g = b.graph
        lg = Graph([v for v, m in zip(g.inputs, lin) if not m], [v for v, m in zip(g.inputs, lin) if m],
                   g.equations, g.outputs)
        nk = len(known_vals)

        def tfun(*xs, lg=lg, nk=nk):
            it = iter(xs[nk:])
            full = [next(it) if z else c for c, z in zip(cts, ct_nz)]
            res = backward_pass(lg, list(xs[:nk]), full)
            return [instantiate(r) for r in res]

        tbs.append(trace_flat(tfun, [get_aval(x) for x in known_vals]
                              + [get_aval(c) for c, z in zip(cts, ct_nz) if z]))
    tbs, extra = _unify_consts(tbs)
    outs = cond_p.bind(index, *extra, *known_vals, *[c for c, z in zip(cts, ct_nz) if z], branches=tbs)
    it = iter(outs)
    return [None] + [next(it) if m else None for m in lin]


cond_p.abstract_eval = _cond_abstract
register_driver(cond_p, switch_driver)   # the impl: the shared driver, bodies interpreted
cond_p.jvp = _cond_jvp
cond_p.batch = _cond_batch
cond_p.partial_eval = _cond_partial_eval
cond_p.transpose = _cond_transpose


def switch(index, branches, *operands):
    """Apply branches[index](*operands); the index is clamped into range.

    Example:
        >>> import ember
        >>> float(switch(2, [lambda x: x, lambda x: x * 2.0, lambda x: x * 3.0], 1.0))
        3.0
    """
    branches = list(branches)
    if not branches:
        raise ValueError("switch needs at least one branch")
    return _switch(index, branches, operands, [f"branches[{i}]" for i in range(len(branches))],
                   "switch")


def _switch(index, branches, operands, names, what):
    """switch/cond; `names` are the branches as the user wrote them (for errors)."""
    leaves, in_tree = tree_flatten(tuple(operands))
    # Python-scalar operands stay weakly typed in the branches, as in JAX
    leaves = as_ember_args(what, branches[0], leaves, in_tree, root="operands", convert=as_ember_weak)
    avals = [get_aval(x) for x in leaves]
    closed, out_trees = [], []
    for br in branches:
        box = []

        def flat(*xs, br=br, box=box):
            out = br(*tree_unflatten(in_tree, list(xs)))
            o, t = flatten_outputs(what, br, out)
            box.append(t)
            return o

        closed.append(trace_flat(flat, avals))
        out_trees.append(box[0])
    ref = len(closed) - 1 if what == "cond" else 0  # cond: true_fun first, as written
    for i in range(len(closed)):
        bad = first_type_mismatch(out_trees[ref], closed[ref].out_avals, out_trees[i],
                                  closed[i].out_avals, "output")
        if bad is not None:
            raise TypeError(mismatch_message(
                f"{what}: {names[ref]} and {names[i]} must return the same structure, shapes "
                f"and dtypes", (f"{names[ref]} = {fun_location(branches[ref])}",
                                f"{names[i]} = {fun_location(branches[i])}"), bad) + at_user())
    gs, cat = _unify_consts(closed)
    idx = as_ember(index)
    ia = get_aval(idx)
    if ia.shape != ():
        raise TypeError(f"{what}: the {'predicate' if what == 'cond' else 'index'} must be a "
                        f"scalar, got {ia.str_user()}; use ember.numpy.where for elementwise "
                        f"selection{at_user()}")
    if what == "switch" and not (_dt.is_integer(ia.dtype) or ia.dtype == _dt.bool_):
        # truncating a float index would silently pick a branch (JAX refuses it too)
        raise TypeError(f"switch: the index must be an integer scalar, got {ia.str_user()}; "
                        f"convert it explicitly (e.g. enp.int32(enp.floor(i))){at_user()}")
    if ia.dtype != _dt.int32:
        idx = _cv.convert_element_type(idx, _dt.int32)
    outs = cond_p.bind(idx, *cat, *leaves, branches=tuple(gs))
    return tree_unflatten(out_trees[0], outs)


def cond(pred, true_fun, false_fun, *operands):
    """true_fun(*operands) if pred else false_fun(*operands), traceable under jit/vmap/grad.

    Example:
        >>> import ember
        >>> float(cond(False, lambda x: x * 2.0, lambda x: -x, 3.0))
        -3.0
    """
    pred = as_ember(pred)
    pa = get_aval(pred)
    if pa.dtype != _dt.bool_ and pa.shape == ():
        # a numeric predicate means `pred != 0` (as in JAX): converting it to the
        # branch index would clamp -1 to false_fun and truncate 0.5 to false_fun
        pred = _ew.ne(pred, _cv.convert_element_type(0, pa.dtype))
    return _switch(pred, [false_fun, true_fun], operands, ["false_fun", "true_fun"], "cond")


# --- Taylor rule (ember.jet): the jet of each branch, selected by the same index ----------

def _cond_taylor(primals, series, *, branches):
    from ..jet import jet_graph, nonzero_series, series_operands, split_series
    index, *ops = primals
    K = len(series[0])
    nz = nonzero_series(series[1:])
    out_nz = [False] * len(branches[0].out_avals)
    for b in branches:
        out_nz = [a or c for a, c in zip(out_nz, jet_graph(b, nz, K)[1])]
    jbs, extra = _unify_consts(tuple(jet_graph(b, nz, K, instantiate_out=out_nz)[0] for b in branches))
    outs = cond_p.bind(index, *extra, *ops, *series_operands(ops, series[1:], nz), branches=jbs)
    n = len(branches[0].out_avals)
    return outs[:n], split_series(outs[n:], out_nz, None, K)


cond_p.taylor = _cond_taylor
