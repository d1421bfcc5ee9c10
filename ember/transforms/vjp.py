"""Reverse mode: `vjp`, `grad`, `value_and_grad` (linearize + transpose).

Example:
    >>> import ember, ember.numpy as enp
    >>> float(ember.grad(lambda x: x ** 3)(2.0))
    12.0
"""
from __future__ import annotations

import functools

import numpy as np

from .. import dtypes as _dt
from ..fx.core import Zero, get_aval, tangent_aval, user_source
from ..fx.prims.convert import convert_element_type
from ..fx.prims.rules import instantiate
from ..tree import tree_flatten, tree_unflatten
from .linearize import linearize_flat
from .transpose import backward_pass
from .util import (argument_names, as_ember, as_ember_args, as_ember_weak, check_diff_input, check_diff_output,
                   check_holomorphic,
                   flat_with_aux, float0_zeros, normalize_argnums, split_aux)


def vjp_flat(fun, primals, nonzeros=None):
    """(outs, vjp_fn(cts) -> cotangents of the primals (Zero where none))."""
    outs, lin, out_nz = linearize_flat(fun, primals, nonzeros)

    def vjp_fn(cts):
        res = backward_pass(lin.graph, lin.consts, cts)
        it = iter(res)
        nz = nonzeros or [True] * len(primals)
        return [next(it) if n else Zero(_cot_aval(p)) for p, n in zip(primals, nz)]

    vjp_fn.linear_graph = lin
    return outs, vjp_fn


def _cot_aval(x):
    return tangent_aval(get_aval(x))


def _materialize(ct, primal):
    if type(ct) is Zero:
        if ct.aval.dtype == _dt.float0:
            return float0_zeros(ct.aval)
        ct = instantiate(ct)
    a = get_aval(primal)
    if a.weak_type and get_aval(ct).dtype == a.dtype:
        # the gradient of a Python-scalar input promotes like it, as in JAX
        ct = convert_element_type(ct, a.dtype, weak_type=True)
    return ct


def vjp(fun, *primals, has_aux: bool = False):
    """Return (fun(*primals), vjp_fn) where vjp_fn(ct) = ct @ J for each primal.

    Example:
        >>> import ember.numpy as enp
        >>> y, f_vjp = vjp(enp.sin, 0.0)
        >>> float(f_vjp(1.0)[0])
        1.0
    """
    p_leaves, p_tree = tree_flatten(tuple(primals))
    p_leaves = as_ember_args("vjp", fun, p_leaves, p_tree, convert=as_ember_weak)
    flat, store = flat_with_aux(fun, p_tree, has_aux, "vjp")
    outs, f = vjp_flat(flat, p_leaves)
    outs, aux = split_aux(store, outs)
    out_tree = store["out_tree"]
    out_avals = [get_aval(o) for o in outs]
    n_aux = len(f.linear_graph.out_avals) - len(outs)

    def vjp_fn(ct):
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != out_tree:
            raise TypeError(f"vjp: cotangent structure {ct_tree} does not match the output "
                            f"structure {out_tree}")
        cts = []
        for c, a in zip(ct_leaves, out_avals):
            ca = get_aval(c)
            if ca.shape != a.shape:
                raise TypeError(f"vjp: cotangent shape {ca.shape} does not match output shape {a.shape}")
            cts.append(as_ember(c, a.dtype) if _dt.is_inexact(a.dtype) else Zero(_cot_aval(c)))
        res = f(cts + [None] * n_aux)
        return tree_unflatten(p_tree, [_materialize(r, p) for r, p in zip(res, p_leaves)])

    res = (tree_unflatten(out_tree, outs), vjp_fn)
    return res + (aux,) if has_aux else res


def value_and_grad(fun, argnums=0, has_aux: bool = False, allow_int: bool = False,
                   holomorphic: bool = False):
    """Return a function computing (fun(*args), gradient w.r.t. args[argnums]).

    The output must be a real scalar; with holomorphic=True the inputs and the output
    must be complex, and the result is f'(z).

    Example:
        >>> import ember.numpy as enp
        >>> v, g = value_and_grad(lambda x: enp.sum(x * x))(enp.asarray([1.0, 2.0]))
        >>> g.tolist()
        [2.0, 4.0]
    """
    return _value_and_grad(fun, argnums, has_aux, allow_int, "value_and_grad", holomorphic)


def _value_and_grad(fun, argnums, has_aux, allow_int, api, holomorphic=False):
    @functools.wraps(fun, updated=())
    def wrapped(*args, **kwargs):
        single, nums = normalize_argnums(argnums, len(args))
        diff = [args[i] for i in nums]
        leaves, tree = tree_flatten(tuple(diff))
        leaves = as_ember_args(api, fun, leaves, tree, nums, convert=as_ember_weak)
        for x, nm in zip(leaves, argument_names(fun, tree, nums)):
            check_diff_input(api, get_aval(x), nm, allow_int)
            if holomorphic:
                check_holomorphic(api, get_aval(x), nm, True, "input")

        def call(*diff_vals):
            new_args = list(args)
            for i, v in zip(nums, diff_vals):
                new_args[i] = v
            return fun(*new_args, **kwargs)

        flat, store = flat_with_aux(call, tree, has_aux, api, fun)

        def checked(*xs):
            res = flat(*xs)
            out_leaves = res[:store["n_out"]]
            if len(out_leaves) != 1:
                raise TypeError(f"{api} requires a scalar output, got a pytree with {len(out_leaves)} "
                                f"leaves; use vjp or jacrev for non-scalar outputs")
            a = get_aval(out_leaves[0])
            if a.shape != ():
                raise TypeError(f"{api} requires a scalar (shape ()) output, got shape {a.shape}; "
                                f"reduce it (e.g. .sum()) or use vjp/jacrev"
                                + (f"\n  at {user_source()}" if user_source() else ""))
            check_diff_output(api, a, "the output")
            check_holomorphic(api, a, "the output", holomorphic, "output")
            return res

        outs, f = vjp_flat(checked, leaves)
        outs, aux = split_aux(store, outs)
        one = np.ones((), dtype=get_aval(outs[0]).dtype)
        cts = f([one] + [None] * (len(f.linear_graph.out_avals) - 1))
        grads = tree_unflatten(tree, [_materialize(c, p) for c, p in zip(cts, leaves)])
        g = grads[0] if single else grads
        val = outs[0]
        if has_aux:
            return (val, aux), g
        return val, g

    return wrapped


def grad(fun, argnums=0, has_aux: bool = False, allow_int: bool = False, holomorphic: bool = False):
    """Gradient of a scalar function w.r.t. args[argnums] (an int or tuple of ints).

    The output must be a real scalar (complex inputs are fine); for f'(z) of a
    holomorphic complex function pass holomorphic=True.

    Example:
        >>> import ember.numpy as enp
        >>> float(grad(enp.tanh)(0.0))
        1.0
    """
    vg = _value_and_grad(fun, argnums, has_aux, allow_int, "grad", holomorphic)

    @functools.wraps(fun, updated=())
    def wrapped(*args, **kwargs):
        (val_or_pair), g = vg(*args, **kwargs)
        if has_aux:
            return g, val_or_pair[1]
        return g

    return wrapped
