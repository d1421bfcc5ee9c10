"""Jacobians and Hessians built from jvp/vjp and vmap.

Example:
    >>> import ember, ember.numpy as enp
    >>> ember.jacfwd(lambda x: x * x)(enp.asarray([1.0, 2.0])).tolist()
    [[2.0, 0.0], [0.0, 4.0]]
"""
from __future__ import annotations

import functools

import numpy as np

from ..fx.core import get_aval
from ..fx.prims.shape import reshape, slice as _slice, transpose
from ..tree import tree_flatten, tree_unflatten
from .batching import vmap
from .jvp import jvp
from .util import (argument_names, as_ember, as_ember_args, aux_pair, flatten_outputs, check_diff_input, check_diff_output,
                   check_holomorphic, leaf_names, normalize_argnums)
from .vjp import vjp


def _std_basis(leaves):
    """Stacked one-hot tangents for flat leaves: a (N, *shape) array per leaf."""
    sizes = [int(np.prod(get_aval(x).shape, dtype=np.int64)) for x in leaves]
    n = sum(sizes)
    out, off = [], 0
    for x, s in zip(leaves, sizes):
        a = get_aval(x)
        eye = np.zeros((n, s), dtype=a.dtype)
        eye[np.arange(off, off + s), np.arange(s)] = 1
        out.append(as_ember(eye.reshape((n,) + a.shape)))
        off += s
    return out, sizes


def _rows(x, start, stop):
    """x[start:stop] along axis 0, as a static slice primitive."""
    a = get_aval(x)
    if (start, stop) == (0, a.shape[0]):
        return x
    return _slice(x, (start,) + (0,) * (a.ndim - 1), (stop,) + a.shape[1:])


def _out_in_blocks(col, sizes, in_leaves, out_aval):
    """Split a (N, *out_shape) block of a forward Jacobian into out_shape + in_shape blocks."""
    blocks, off = [], 0
    n_out = len(out_aval.shape)
    for x, s in zip(in_leaves, sizes):
        xa = get_aval(x)
        blk = reshape(_rows(col, off, off + s), xa.shape + out_aval.shape)
        perm = tuple(range(xa.ndim, xa.ndim + n_out)) + tuple(range(xa.ndim))
        blocks.append(transpose(blk, perm))
        off += s
    return blocks


def _prepare(fun, args, argnums, has_aux, api, holomorphic=None):
    """Flatten the differentiated arguments; return (leaves, in_tree, f_flat, box)
    where f_flat(*leaves) -> output leaves and records [out_tree, aux] in box.
    `holomorphic` (None: no check) is the inputs' complex contract."""
    single, nums = normalize_argnums(argnums, len(args))
    diff = tuple(args[i] for i in nums)
    leaves, in_tree = tree_flatten(diff[0] if single else diff)
    leaves = as_ember_args(api, fun, leaves, tree_flatten(diff)[1], nums)
    names = argument_names(fun, tree_flatten(diff)[1], nums)
    for x, nm in zip(leaves, names):
        check_diff_input(api, get_aval(x), nm)
        if holomorphic is not None:
            check_holomorphic(api, get_aval(x), nm, holomorphic, "input")
    box = {}

    def f_flat(*xs):
        new = list(args)
        vals = tree_unflatten(in_tree, list(xs))
        for i, v in ([(nums[0], vals)] if single else zip(nums, vals)):
            new[i] = v
        out = fun(*new)
        if has_aux:
            out, box["aux"] = aux_pair(api, fun, out)
        o, box["out_tree"] = flatten_outputs(api, fun, out)
        return o

    return leaves, in_tree, f_flat, box


def jacfwd(fun, argnums=0, has_aux: bool = False, holomorphic: bool = False):
    """Jacobian by forward mode (vmap of jvp over a standard basis).

    Output structure: for each output leaf, the input structure, each block of
    shape out_shape + in_shape.

    An integer or boolean output has a float0 Jacobian block (as in JAX); the
    inputs must be real floating-point, or all complex with holomorphic=True (then
    the outputs must be complex too).

    Example:
        >>> import ember.numpy as enp
        >>> jacfwd(enp.sin)(0.0).tolist()
        1.0
    """
    return _jacfwd(fun, argnums, has_aux, "jacfwd", holomorphic)


def _jacfwd(fun, argnums, has_aux, api, holomorphic=False):
    @functools.wraps(fun, updated=())
    def wrapped(*args):
        leaves, in_tree, f_flat, box = _prepare(fun, args, argnums, has_aux, api, holomorphic)
        basis, sizes = _std_basis(leaves)

        def with_aux(*xs):
            return f_flat(*xs), box.get("aux")

        def push(*t):
            _, tout, aux = jvp(with_aux, tuple(leaves), tuple(t), has_aux=True)
            return tout, aux

        # aux depends on the primals only, so it comes out of vmap unbatched
        cols, aux = vmap(push, out_axes=(0, None))(*basis)
        if holomorphic:
            for c, nm in zip(cols, leaf_names(box["out_tree"], "output")):
                check_holomorphic(api, get_aval(c), "the output" if nm == "output" else nm, True, "output")
        result = [tree_unflatten(in_tree, _out_in_blocks(
            c, sizes, leaves, get_aval(c).update(shape=get_aval(c).shape[1:]))) for c in cols]
        jac = tree_unflatten(box["out_tree"], result)
        return (jac, aux) if has_aux else jac

    return wrapped


def jacrev(fun, argnums=0, has_aux: bool = False, holomorphic: bool = False):
    """Jacobian by reverse mode (vmap of vjp over a standard basis of the outputs).

    Every output must be real floating-point: an integer or boolean output has no
    cotangent to seed (TypeError, as in JAX; use `vjp` directly). With
    holomorphic=True inputs and outputs must all be complex.

    Example:
        >>> import ember.numpy as enp
        >>> jacrev(lambda x: x * 3.0)(enp.ones(2)).tolist()
        [[3.0, 0.0], [0.0, 3.0]]
    """
    return _jacrev(fun, argnums, has_aux, "jacrev", holomorphic)


def _jacrev(fun, argnums, has_aux, api, holomorphic=False):
    @functools.wraps(fun, updated=())
    def wrapped(*args):
        leaves, in_tree, f_flat, box = _prepare(fun, args, argnums, has_aux, api,
                                                True if holomorphic else None)
        out_leaves, f_vjp, aux = vjp(lambda *xs: (f_flat(*xs), box.get("aux")), *leaves, has_aux=True)
        out_names = leaf_names(box["out_tree"], "output")
        for o, nm in zip(out_leaves, out_names):
            check_diff_output(api, get_aval(o), "the output" if nm == "output" else nm)
            check_holomorphic(api, get_aval(o), "the output" if nm == "output" else nm, holomorphic, "output")
        basis, sizes = _std_basis(out_leaves)
        rows = vmap(lambda *cts: f_vjp(list(cts)))(*basis)  # per input leaf: (N_out, *in_shape)
        result, off = [], 0
        for o, s in zip(out_leaves, sizes):
            oa = get_aval(o)
            result.append(tree_unflatten(in_tree, [reshape(_rows(r, off, off + s), oa.shape + get_aval(x).shape)
                                                   for r, x in zip(rows, leaves)]))
            off += s
        jac = tree_unflatten(box["out_tree"], result)
        return (jac, aux) if has_aux else jac

    return wrapped


def hessian(fun, argnums=0, has_aux: bool = False, holomorphic: bool = False):
    """Hessian as jacfwd(jacrev(fun)) (forward-over-reverse).  Like `grad`, it
    refuses integer or boolean outputs.

    Example:
        >>> import ember.numpy as enp
        >>> hessian(lambda x: enp.sum(x ** 3))(enp.asarray([1.0, 2.0])).tolist()
        [[6.0, 0.0], [0.0, 12.0]]
    """
    return _jacfwd(_jacrev(fun, argnums, has_aux, "hessian", holomorphic), argnums, has_aux, "hessian",
                   holomorphic)


def jacobian(fun, argnums=0, has_aux: bool = False, holomorphic: bool = False):
    """JAX's `jax.jacobian`: the Jacobian by reverse mode (`jacrev`).

    Example:
        >>> import ember, ember.numpy as enp
        >>> ember.jacobian(lambda x: x * x)(enp.asarray([1.0, 2.0])).tolist()
        [[2.0, 0.0], [0.0, 4.0]]
    """
    return jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic)
