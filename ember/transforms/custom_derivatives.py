"""`custom_jvp` and `custom_vjp`: user-defined derivative rules.

Both are primitives whose params carry the traced function and the user's
rules, so they compose with vmap (the rules are vmapped too), jit (they are
staged as they are) and higher-order differentiation (the rules are ordinary
ember code, differentiated by the outer transform).

Example:
    >>> import ember, ember.numpy as enp
    >>> @ember.custom_jvp
    ... def f(x):
    ...     return enp.sin(x)
    >>> @f.defjvp
    ... def f_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return f(x), 2.0 * t
    >>> float(ember.grad(f)(0.0))
    2.0
"""
from __future__ import annotations

import functools

from .. import dtypes as _dt
from ..fx.core import Primitive, Zero, get_aval, tangent_aval
from ..fx.drivers import call_driver, register_driver
from ..fx.ir import eval_graph
from ..fx.prims.rules import bdim_to_front, instantiate
from ..fx.spelling import user_str
from ..fx.staging import consts_to_inputs, trace_flat
from ..tree import tree_flatten, tree_unflatten
from .batching import batch_graph, vmap
from .jvp import jvp_graph
from .util import (argument_names, as_ember, as_ember_args, at_user, flatten_outputs, describe_value, first_type_mismatch,
                   fun_location, mismatch_message)

custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)
custom_jvp_call_p.kind = "control"
custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_vjp_call_p.kind = "control"
custom_lin_p = Primitive("custom_lin", multiple_results=True)
custom_lin_p.kind = "control"


def _call_abstract(*avals, call, **_):
    return list(call.out_avals)


def _split_nondiff(args, nondiff_argnums):
    nondiff = {i: args[i] for i in nondiff_argnums}
    diff = [a for i, a in enumerate(args) if i not in nondiff]
    return nondiff, diff


def _merge(nondiff, diff, n):
    it = iter(diff)
    return [nondiff[i] if i in nondiff else next(it) for i in range(n)]


def _trace_call(fun, leaves, tree, api, user_fun):
    box = []

    def flat(*xs):
        out = fun(*tree_unflatten(tree, list(xs)))
        o, t = flatten_outputs(api, user_fun, out)
        box.append(t)
        return o

    closed = trace_flat(flat, [get_aval(x) for x in leaves])
    g, consts = consts_to_inputs(closed)
    return g, consts, box[0]


def _prepare_call(fun, args, nondiff_argnums, api):
    """Split off the non-differentiable arguments, flatten the rest and stage the
    function over them: (nondiff, diff, leaves, in_tree, graph, consts, out_tree)."""
    n = len(args)
    nondiff, diff = _split_nondiff(args, nondiff_argnums)
    leaves, tree = tree_flatten(tuple(diff))
    leaves = as_ember_args(api, fun, leaves, tree, [i for i in range(n) if i not in nondiff])
    g, consts, out_tree = _trace_call(lambda *d: fun(*_merge(nondiff, d, n)), leaves, tree, api, fun)
    return nondiff, diff, leaves, tree, g, consts, out_tree


# --- custom_jvp ------------------------------------------------------------------------

class custom_jvp:
    """Decorate a function to give it a custom JVP rule (see `defjvp`, `defjvps`).

    Example:
        >>> import ember.numpy as enp
        >>> @custom_jvp
        ... def safe_log1p(x):
        ...     return enp.log1p(x)
        >>> safe_log1p.defjvps(lambda t, ans, x: t / (1.0 + x))
        >>> float(safe_log1p(0.0))
        0.0
    """

    def __init__(self, fun, nondiff_argnums=()):
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp = None
        functools.update_wrapper(self, fun, updated=())

    def defjvp(self, jvp, symbolic_zeros: bool = False):
        """`jvp(primals, tangents) -> (primal_out, tangent_out)`, tuples of the args."""
        self.jvp = jvp
        return jvp

    def defjvps(self, *fns):
        """One function per argument: `fn(tangent, primal_out, *primals) -> contribution`."""
        def jvp(primals, tangents):
            ans = self.fun(*primals)
            out = None
            for fn, t in zip(fns, tangents):
                if fn is None:
                    continue
                c = fn(t, ans, *primals)
                out = c if out is None else out + c
            return ans, out
        self.jvp = jvp

    def __call__(self, *args):
        if self.jvp is None:
            raise AttributeError(f"custom_jvp function {self.__name__} has no JVP rule; "
                                 f"define one with @{self.__name__}.defjvp")
        nondiff, diff, leaves, tree, g, consts, out_tree = _prepare_call(
            self.fun, args, self.nondiff_argnums, "custom_jvp")
        user_jvp = self.jvp

        def jvp_flat(primals, tangents):
            ps = tree_unflatten(tree, list(primals))
            ts = tree_unflatten(tree, list(tangents))
            nd_vals = [nondiff[i] for i in sorted(nondiff)]
            out, tout = user_jvp(*nd_vals, tuple(ps), tuple(ts)) if nondiff else user_jvp(tuple(ps), tuple(ts))
            o, ot = tree_flatten(out)
            t, tt = tree_flatten(tout)
            if ot != out_tree or tt != out_tree:
                raise TypeError(f"custom_jvp rule of {self.__name__} must return (primal_out, "
                                f"tangent_out) matching the function's output structure {out_tree}; "
                                f"got {ot} and {tt}")
            return _check_jvp_output(self.__name__, o, t, g.out_avals)

        outs = custom_jvp_call_p.bind(*consts, *leaves, call=g,
                                      jvp=jvp_flat, num_consts=len(consts))
        return tree_unflatten(out_tree, outs)


def _check_jvp_output(name, primals_out, tangents_out, out_avals):
    """The rule's outputs with the function's shapes and dtypes, and each tangent its
    primal's (JAX checks the same): a float64 tangent of a float32 output would
    otherwise surface later as a dtype error deep inside transposition.  A weakly
    typed value of the right shape (a Python scalar) is cast."""
    def fit(v, want, what, i):
        a = get_aval(v)
        if a.shape == want.shape and a.dtype == want.dtype:
            return v
        if a.shape == want.shape and getattr(a, "weak_type", False):
            from ..fx.prims.convert import convert_element_type
            return convert_element_type(v, want.dtype)
        hint = f"; cast it with .astype({want.dtype})" if a.shape == want.shape else ""
        raise TypeError(f"custom_jvp rule of {name}: {what} {i} is {user_str(a)}, but the "
                        f"function's output {i} is {user_str(out_avals[i])}: "
                        + ("a tangent must have its primal's shape and dtype" if what == "tangent output"
                           else "the rule must return the function's value") + hint)
    ps = [fit(p, w, "primal output", i) for i, (p, w) in enumerate(zip(primals_out, out_avals))]
    ts = [t if type(t) is Zero or t is None else fit(t, tangent_aval(w), "tangent output", i)
          for i, (t, w) in enumerate(zip(tangents_out, out_avals))]
    return ps, ts


def _custom_jvp_jvp(primals, tangents, *, call, jvp, num_consts):
    ps = primals[num_consts:]
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        # Closed-over values with tangents: differentiate the traced function itself.
        nz = [type(t) is not Zero for t in tangents]
        jg, out_nz = jvp_graph(call, nz, instantiate_out=True)
        outs = eval_graph(jg.graph, jg.consts, *primals, *[t for t in tangents if type(t) is not Zero])
        n = len(call.out_avals)
        return outs[:n], outs[n:]
    ts = [instantiate(t) for t in tangents[num_consts:]]
    out, tout = jvp(list(ps), ts)
    return out, [as_ember(t) for t in tout]


def _custom_jvp_batch(axis_size, args, dims, *, call, jvp, num_consts):
    vals = [x if d is None else bdim_to_front(x, d, axis_size) for x, d in zip(args, dims)]
    in_b = [d is not None for d in dims]
    n_out = len(call.out_avals)
    bg, _ = batch_graph(call, axis_size, in_b, [True] * n_out)
    bg, extra = consts_to_inputs(bg)
    p_axes = [0 if b else None for b in in_b[num_consts:]]

    def bjvp(primals, tangents):
        # a tangent is batched exactly when its primal is
        return vmap(lambda ps, ts: jvp(list(ps), list(ts)), in_axes=(list(p_axes), list(p_axes)),
                    axis_size=axis_size)(list(primals), list(tangents))

    outs = custom_jvp_call_p.bind(*extra, *vals, call=bg, jvp=bjvp, num_consts=len(extra) + num_consts)
    return outs, [0] * n_out


custom_jvp_call_p.abstract_eval = _call_abstract
register_driver(custom_jvp_call_p, call_driver("call"))
custom_jvp_call_p.jvp = _custom_jvp_jvp
custom_jvp_call_p.batch = _custom_jvp_batch
custom_jvp_call_p.not_applicable.add("transpose")


# --- custom_vjp ------------------------------------------------------------------------

class custom_vjp:
    """Decorate a function to give it a custom VJP (see `defvjp`).

    Example:
        >>> import ember, ember.numpy as enp
        >>> @custom_vjp
        ... def clip_grad(x):
        ...     return x
        >>> clip_grad.defvjp(lambda x: (x, None), lambda res, g: (enp.clip(g, -1.0, 1.0),))
        >>> float(ember.grad(lambda x: 5.0 * clip_grad(x))(2.0))
        1.0
    """

    def __init__(self, fun, nondiff_argnums=()):
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd = None
        self.bwd = None
        functools.update_wrapper(self, fun, updated=())

    def defvjp(self, fwd, bwd):
        """`fwd(*args) -> (out, residuals)`; `bwd(residuals, ct) -> tuple of input cotangents`
        (with nondiff_argnums, `bwd(*nondiff_args, residuals, ct)`)."""
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args):
        if self.fwd is None:
            raise AttributeError(f"custom_vjp function {self.__name__} has no rule; define one "
                                 f"with {self.__name__}.defvjp(fwd, bwd)")
        n = len(args)
        nondiff, diff, leaves, tree, g, consts, out_tree = _prepare_call(
            self.fun, args, self.nondiff_argnums, "custom_vjp")
        user_fwd, user_bwd, name = self.fwd, self.bwd, self.__name__
        nd_vals = [nondiff[i] for i in sorted(nondiff)]
        in_avals = [get_aval(x) for x in leaves]

        n_diff = len(diff)
        arg_names = argument_names(self.fun, tree, [i for i in range(n) if i not in nondiff])
        out_avals = list(g.out_avals)

        def fwd_flat(primals):
            got = user_fwd(*_merge(nondiff, tree_unflatten(tree, list(primals)), n))
            if not (isinstance(got, tuple) and len(got) == 2):
                raise TypeError(f"custom_vjp {name}: fwd = {fun_location(user_fwd)} must return a "
                                f"pair (output, residuals), got {describe_value(got)}{at_user()}")
            out, res = got
            o, ot = tree_flatten(out)
            bad = first_type_mismatch(out_tree, out_avals, ot, [get_aval(as_ember(x)) for x in o],
                                      "output")
            if bad is not None:
                raise TypeError(mismatch_message(
                    f"custom_vjp {name}: fwd's output must match the function's output",
                    (name, f"fwd = {fun_location(user_fwd)}"), bad) + at_user())
            r, rt = tree_flatten(res)
            return o, [as_ember(x) for x in r], rt

        def bwd_flat(res_tree, res, cts):
            r = tree_unflatten(res_tree, list(res))
            ct = tree_unflatten(out_tree, list(cts))
            got = user_bwd(*nd_vals, r, ct)
            return _check_bwd_output(got, diff, in_avals, arg_names, n_diff, name, user_bwd)

        outs = custom_vjp_call_p.bind(*consts, *leaves, call=g, fwd=fwd_flat, bwd=bwd_flat,
                                      num_consts=len(consts), name=fun_location(self.fun))
        return tree_unflatten(out_tree, outs)


def _check_bwd_output(got, diff, in_avals, arg_names, n_diff, name, user_bwd):
    """The cotangents a user's `bwd` returned, flat and checked against the primal
    inputs (as JAX does): a tuple with one entry per differentiable argument, each
    with that argument's structure, shapes and dtypes; None (for a whole argument
    or a leaf) means zero; integer inputs take None/float0 (any value is ignored).
    A wrong cotangent would otherwise flow on as a silently wrong gradient."""
    where = f"bwd = {fun_location(user_bwd)}"
    if not isinstance(got, tuple) or len(got) != n_diff:
        what = (f"a tuple of length {len(got)}" if isinstance(got, tuple) else describe_value(got))
        hint = " (for one argument, return a 1-tuple: `return (ct_x,)`)" if n_diff == 1 else ""
        top = list(dict.fromkeys(nm.split("[")[0] for nm in arg_names))
        raise TypeError(f"custom_vjp {name}: {where} must return a tuple with one cotangent per "
                        f"differentiable argument, but returned {what} for {n_diff} "
                        f"differentiable argument{'s' if n_diff != 1 else ''} "
                        f"({', '.join(top)}){hint}{at_user()}")
    flat, k = [], 0
    for arg, c in zip(diff, got):
        none_leaf = lambda x: x is None  # noqa: E731 - a None leaf is a zero cotangent
        a_tree = tree_flatten(arg)[1]
        if c is None:
            c_leaves, c_tree = [None] * a_tree.num_leaves, a_tree
        else:
            c_leaves, c_tree = tree_flatten(c, is_leaf=none_leaf)
            if c_tree != a_tree:  # the argument itself may hold None nodes
                c_leaves, c_tree = tree_flatten(c)
        if c_tree != a_tree:
            first = arg_names[k].split("[")[0] if arg_names[k:] else "the argument"
            raise TypeError(f"custom_vjp {name}: {where} returned a cotangent for `{first}` with "
                            f"structure {c_tree}, but the argument has structure {a_tree}"
                            f"{at_user()}")
        for cl in c_leaves:
            a, nm = in_avals[k], arg_names[k]
            k += 1
            if cl is None or not _dt.is_inexact(a.dtype):
                flat.append(Zero(tangent_aval(a)))
                continue
            try:
                ca = get_aval(cl)
            except TypeError:
                raise TypeError(f"custom_vjp {name}: {where} returned {describe_value(cl)} as the "
                                f"cotangent of `{nm}`; expected an array {a.str_user()}"
                                f"{at_user()}") from None
            if ca.shape != a.shape or (ca.dtype != a.dtype and not ca.weak_type):
                raise TypeError(f"custom_vjp {name}: {where} returned a cotangent "
                                f"{ca.str_user()} for `{nm}`, which is {a.str_user()}: each "
                                f"cotangent must have the shape and dtype of its argument"
                                f"{at_user()}")
            flat.append(as_ember(cl, a.dtype))
    return flat


def _custom_vjp_jvp(primals, tangents, *, call, fwd, bwd, num_consts, name):
    # As in JAX: the tangent map is `custom_lin`, which only reverse mode can use
    # (it is transposed into a call of bwd); evaluating it forward is the error below.
    ps = primals[num_consts:]
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise TypeError(f"custom_vjp function {name} closes over a value that is being "
                        f"differentiated; pass it as an explicit argument{at_user()}")
    out, res, res_tree = fwd(list(ps))
    t_in = [instantiate(t) for t in tangents[num_consts:]]
    t_out = custom_lin_p.bind(*res, *t_in, num_res=len(res), bwd=bwd, res_tree=res_tree,
                              out_avals=tuple(tangent_aval(get_aval(o)) for o in out), name=name)
    return out, t_out


def _custom_vjp_batch(axis_size, args, dims, *, call, fwd, bwd, num_consts, name):
    vals = [bdim_to_front(x, d, axis_size) for x, d in zip(args, dims)]
    n_out = len(call.out_avals)
    bg, _ = batch_graph(call, axis_size, [True] * len(vals), [True] * n_out)
    bg, extra = consts_to_inputs(bg)
    box = []

    def bfwd(primals):
        def one(ps):
            out, res, rt = fwd(list(ps))
            box.append(rt)
            return out, res
        out, res = vmap(one)(list(primals))
        return out, res, box[-1]

    def bbwd(res_tree, res, cts):
        def one(r, c):
            return [instantiate(x) for x in bwd(res_tree, r, c)]
        return vmap(one)(list(res), [instantiate(c) for c in cts])

    outs = custom_vjp_call_p.bind(*extra, *vals, call=bg, fwd=bfwd, bwd=bbwd,
                                  num_consts=len(extra) + num_consts, name=name)
    return outs, [0] * n_out


custom_vjp_call_p.abstract_eval = _call_abstract
register_driver(custom_vjp_call_p, call_driver("call"))
custom_vjp_call_p.jvp = _custom_vjp_jvp
custom_vjp_call_p.batch = _custom_vjp_batch
custom_vjp_call_p.not_applicable.add("transpose")


def _lin_abstract(*avals, num_res, bwd, res_tree, out_avals, name):
    return list(out_avals)


def forward_mode_error(name) -> TypeError:
    """JAX's error for jvp of a custom_vjp function, naming the function and the way out."""
    return TypeError(f"can't apply forward-mode autodiff (jvp) to a custom_vjp function: {name} "
                     f"defines only a reverse-mode rule, so jvp/jacfwd/linearize's f_jvp cannot "
                     f"use it. Use grad / jacrev (for second derivatives jacrev(jacrev(f)); "
                     f"hessian = jacfwd(jacrev(f)) works only while fwd does not call the "
                     f"custom_vjp function itself), or give the function a forward rule with "
                     f"ember.custom_jvp.{at_user()}")


def _lin_forward(*args, name, **_):
    # Every way of evaluating custom_lin other than transposing it is forward mode.
    raise forward_mode_error(name)


def _lin_batch(axis_size, args, dims, *, name, **_):
    raise forward_mode_error(name)


def _lin_jvp(primals, tangents, *, name, **_):
    raise forward_mode_error(name)


def _lin_transpose(cts, *args, num_res, bwd, res_tree, out_avals, name):
    res = args[:num_res]
    cts = [instantiate(c) for c in cts]
    got = bwd(res_tree, list(res), cts)
    return [None] * num_res + list(got)


custom_lin_p.abstract_eval = _lin_abstract
custom_lin_p.impl = _lin_forward
custom_lin_p.transpose = _lin_transpose
custom_lin_p.batch = _lin_batch
custom_lin_p.jvp = _lin_jvp


# --- Taylor rules (ember.jet): the series of the primal function, as JAX does --------------

def _custom_taylor(primals, series, *, call, **_):
    from .jet import jet_flat
    return jet_flat(lambda *xs: eval_graph(call.graph, call.consts, *xs), list(primals), series,
                    len(series[0]))


custom_jvp_call_p.taylor = _custom_taylor
custom_vjp_call_p.taylor = _custom_taylor
# custom_lin is the linear part of a custom VJP inside reverse mode; jet evaluates
# custom_vjp functions through their primal, so it never meets one.
custom_lin_p.not_applicable.add("taylor")
