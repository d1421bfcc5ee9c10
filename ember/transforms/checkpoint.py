"""`checkpoint` (rematerialisation): trade compute for memory in reverse mode.

A checkpointed function is the `remat` primitive.  When it is linearized, its
partial-evaluation rule keeps as residuals only the inputs and the values the
policy saves; everything else is recomputed inside the linear graph, whose
transposition evaluates the non-linear recomputation forward first.

Policies: `None` / `nothing_saveable` (save nothing), `dots_saveable` (save
dot_general/conv outputs), `save_only_these_names(*names)` (values tagged with
`checkpoint_name`), or any `policy(equation) -> bool`.

Example:
    >>> import ember, ember.numpy as enp
    >>> f = ember.checkpoint(lambda x: enp.sin(enp.sin(x)))
    >>> round(float(ember.grad(f)(0.5)), 4)
    0.7786
"""
from __future__ import annotations

import functools

from ..fx.core import Primitive, Zero, get_aval, is_undefined, tangent_aval
from ..fx.drivers import call_driver, register_driver
from ..fx.ir import ClosedGraph, Graph, Var, eval_graph
from ..fx.parse import register_named_callable
from ..fx.passes import dce
from ..fx.prims.rules import defvectorized, instantiate, moveaxis
from ..fx.staging import consts_to_inputs, trace_flat
from ..tree import tree_flatten, tree_unflatten
from .batching import batch_graph
from .jvp import jvp_graph
from .linearize import linearize_flat
from .partial_eval import partial_eval_graph
from .transpose import backward_pass
from .util import as_ember_args, as_ember_weak, flatten_outputs, fun_location, normalize_argnums

remat_p = Primitive("remat", multiple_results=True)
remat_p.kind = "control"
name_p = Primitive("checkpoint_name")


# --- policies ---------------------------------------------------------------------------

def nothing_saveable(eq) -> bool:
    """Checkpoint policy: save no intermediate; the backward pass recomputes all (the default)."""
    return False


def everything_saveable(eq) -> bool:
    """Checkpoint policy: save every intermediate (no recomputation, as without checkpoint)."""
    return True


def dots_saveable(eq) -> bool:
    """Checkpoint policy: save matmul and convolution outputs, recompute the cheap rest."""
    return eq.prim.name in ("dot_general", "conv_general_dilated")


def save_only_these_names(*names):
    """Checkpoint policy: save only the values tagged with `checkpoint_name(x, name)`.

    Example:
        >>> policy = save_only_these_names("h")
        >>> policy.__name__
        'save_only_these_names(h)'
    """
    names = set(names)

    def policy(eq):
        return eq.prim is name_p and eq.params["name"] in names
    policy.__name__ = f"save_only_these_names({', '.join(sorted(names))})"
    return policy


for _policy in (nothing_saveable, everything_saveable, dots_saveable, save_only_these_names):
    register_named_callable(_policy.__name__, _policy)


# --- checkpoint_name ---------------------------------------------------------------------

name_p.abstract_eval = lambda x, *, name: x
name_p.impl = lambda x, *, name: x
defvectorized(name_p)
name_p.kind = "identity"
name_p.jvp = lambda primals, tangents, *, name: (name_p.bind(primals[0], name=name), tangents[0])
name_p.transpose = lambda ct, x, *, name: [ct]


def checkpoint_name(x, name: str):
    """Tag a value so `save_only_these_names(name)` keeps it as a residual.

    Example:
        >>> import ember.numpy as enp
        >>> checkpoint_name(enp.ones(2), "h").shape
        (2,)
    """
    return name_p.bind(x, name=str(name))


# --- the primitive -----------------------------------------------------------------------

def _remat_abstract(*avals, graph, policy):
    return list(graph.out_avals)


def _remat_jvp(primals, tangents, *, graph, policy):
    nz = [type(t) is not Zero for t in tangents]
    jg, out_nz = jvp_graph(graph, nz)
    jg, extra = consts_to_inputs(jg)
    outs = remat_p.bind(*extra, *primals, *[t for t in tangents if type(t) is not Zero],
                        graph=jg, policy=policy)
    n = len(graph.out_avals)
    it = iter(outs[n:])
    return outs[:n], [next(it) if z else Zero(tangent_aval(a)) for a, z in zip(graph.out_avals, out_nz)]


def _remat_batch(axis_size, args, dims, *, graph, policy):
    vals = [x if d is None else moveaxis(x, d, 0) for x, d in zip(args, dims)]
    bg, out_b = batch_graph(graph, axis_size, [d is not None for d in dims])
    bg, extra = consts_to_inputs(bg)
    outs = remat_p.bind(*extra, *vals, graph=bg, policy=policy)
    return outs, [0 if b else None for b in out_b]


def _remat_partial_eval(trace, args, params):
    graph, policy = params["graph"], params["policy"]
    unknown = [trace.is_unknown(x) for x in args]
    g = graph.graph
    # Which variables are known (computable from known inputs only)?
    known_vars = {v for v, u in zip(g.inputs, unknown) if not u}
    saved = []
    for eq in g.equations:
        if all(type(a) is not Var or a in known_vars for a in eq.inputs):
            known_vars.update(eq.outputs)
            if policy(eq):
                saved.extend(eq.outputs)
    out_unknown = [type(a) is Var and a not in known_vars for a in g.outputs]
    known_in = [v for v, u in zip(g.inputs, unknown) if not u]
    # Known side: known outputs plus the saved values, computed on the parent trace.
    known_outs_vars = [a for a, u in zip(g.outputs, out_unknown) if not u]
    kg = _subgraph(g, known_in, known_outs_vars + saved)
    kvals = trace.forward_known(remat_p, [x for x, u in zip(args, unknown) if not u],
                                dict(graph=kg, policy=policy))
    n_known = len(known_outs_vars)
    known_outs, saved_vals = kvals[:n_known], kvals[n_known:]
    # Unknown side: recompute everything not saved from the inputs (known inputs become
    # residuals), with the saved values as extra inputs replacing their equations.
    ug = _subgraph(g, saved + list(g.inputs), [a for a, u in zip(g.outputs, out_unknown) if u],
                   drop=set(saved))
    atoms = [trace.to_atom(x) for x in list(saved_vals) + list(args)]
    uouts = trace.stage(remat_p, atoms, dict(graph=ug, policy=policy))
    k_it, u_it = iter(known_outs), iter(uouts)
    return [next(u_it) if u else next(k_it) for u in out_unknown]


def _subgraph(g: Graph, inputs, outputs, drop=frozenset()) -> ClosedGraph:
    """The equations of `g` needed to compute `outputs` from `inputs` (DCE'd);
    equations defining any variable in `drop` are replaced by inputs."""
    eqs = [eq for eq in g.equations if not any(v in drop for v in eq.outputs)]
    return ClosedGraph(dce(Graph([], list(inputs), eqs, list(outputs))), [])


def _remat_transpose(cts, *args, graph, policy):
    # Split the rematerialised graph into its non-linear part (the recomputation,
    # run forward now, inside the backward pass) and its linear part, which is
    # transposed.  Partial evaluation, not a flat backward pass, so that
    # higher-order primitives inside (scan, cond, ...) split through their rules.
    lin = [is_undefined(a) for a in args]
    kg, ug, out_unknown, nres = partial_eval_graph(graph, lin)
    known = [a for a, m in zip(args, lin) if not m]
    kouts = eval_graph(kg.graph, kg.consts, *known)
    residuals = kouts[len(kouts) - nres:]
    g = ug.graph
    lg = Graph(g.inputs[:nres], g.inputs[nres:], g.equations, g.outputs)
    res = backward_pass(lg, list(residuals), [c for c, u in zip(cts, out_unknown) if u])
    it = iter(res)
    return [instantiate(next(it)) if m else None for m in lin]


remat_p.abstract_eval = _remat_abstract
register_driver(remat_p, call_driver("graph"))
remat_p.jvp = _remat_jvp
remat_p.batch = _remat_batch
remat_p.partial_eval = _remat_partial_eval
remat_p.transpose = _remat_transpose


def checkpoint(fun, *, prevent_cse=True, policy=None, static_argnums=()):
    """Wrap `fun` so reverse mode recomputes its intermediates instead of storing them.

    `static_argnums` (ints, negative counting from the end) are passed through as
    Python values; `prevent_cse` is accepted for JAX compatibility (the `remat`
    primitive is never merged with the forward computation, so it changes nothing).

    Example:
        >>> import ember, ember.numpy as enp
        >>> f = checkpoint(lambda x: enp.exp(x) * x, policy=dots_saveable)
        >>> float(ember.grad(f)(0.0))
        1.0
    """
    policy = policy or nothing_saveable
    del prevent_cse

    @functools.wraps(fun, updated=())
    def wrapped(*args):
        # normalised so a negative index marks the same argument as static and not traced
        _, nums = normalize_argnums(static_argnums, len(args), f"checkpoint({fun_location(fun)}): static_argnums")
        static = {i: args[i] for i in nums}
        dyn = [a for i, a in enumerate(args) if i not in static]
        leaves, tree = tree_flatten(tuple(dyn))
        # Python scalars stay weakly typed, as without checkpoint
        leaves = as_ember_args("checkpoint", fun, leaves, tree,
                               [i for i in range(len(args)) if i not in static], convert=as_ember_weak)
        box = []

        def flat(*xs):
            it = iter(tree_unflatten(tree, list(xs)))
            full = [static[i] if i in static else next(it) for i in range(len(args))]
            o, t = flatten_outputs("checkpoint", fun, fun(*full))
            box.append(t)
            return o

        closed = trace_flat(flat, [get_aval(x) for x in leaves])
        g, consts = consts_to_inputs(closed)
        outs = remat_p.bind(*consts, *leaves, graph=g, policy=policy)
        return tree_unflatten(box[0], outs)

    return wrapped


remat = checkpoint


def saved_residuals(fun, *args):
    """List the residuals reverse mode would save for `fun(*args)`: (aval, source) pairs.

    Example:
        >>> import ember.numpy as enp
        >>> [a.str_short() for a, _ in saved_residuals(lambda x: enp.sin(x) * x, enp.ones(3))]
        ['f32[3]', 'f32[3]', 'f32[3]']
    """
    leaves, tree = tree_flatten(tuple(args))
    leaves = as_ember_args("saved_residuals", fun, leaves, tree)

    def flat(*xs):
        return flatten_outputs("saved_residuals", fun, fun(*tree_unflatten(tree, list(xs))))[0]

    _, lin, _ = linearize_flat(flat, leaves)
    g = dce(lin.graph)
    used = {a for eq in g.equations for a in eq.inputs if type(a) is Var} | {
        a for a in g.outputs if type(a) is Var}
    return [(v.aval, "residual") for v, c in zip(lin.graph.constvars, lin.consts) if v in used]


# --- Taylor rules (ember.jet) --------------------------------------------------------------

def _remat_taylor(primals, series, *, graph, policy):
    from .jet import jet_graph, nonzero_series, series_operands, split_series
    K = len(series[0])
    nz = nonzero_series(series)
    jg, out_nz = jet_graph(graph, nz, K)
    jg, extra = consts_to_inputs(jg)
    outs = remat_p.bind(*extra, *primals, *series_operands(primals, series, nz), graph=jg, policy=policy)
    n = len(graph.out_avals)
    return outs[:n], split_series(outs[n:], out_nz, None, K)


remat_p.taylor = _remat_taylor
from ..fx.prims.rules import linear_taylor  # noqa: E402

name_p.taylor = linear_taylor(name_p)
