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
from ..tree import tree_flatten, tree_map, tree_unflatten
from .batching import vmap
from .jvp import jvp
from .util import as_ember, normalize_argnums
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
    from ..fx.prims.shape import slice as _slice
    a = get_aval(x)
    if (start, stop) == (0, a.shape[0]):
        return x
    return _slice(x, (start,) + (0,) * (a.ndim - 1), (stop,) + a.shape[1:])


def _out_in_blocks(col, sizes, in_leaves, out_aval):
    """Split a (N, *out_shape) block of a forward Jacobian into out_shape + in_shape blocks."""
    from ..fx.prims.shape import reshape, transpose
    blocks, off = [], 0
    n_out = len(out_aval.shape)
    for x, s in zip(in_leaves, sizes):
        xa = get_aval(x)
        blk = reshape(_rows(col, off, off + s), xa.shape + out_aval.shape)
        perm = tuple(range(xa.ndim, xa.ndim + n_out)) + tuple(range(xa.ndim))
        blocks.append(transpose(blk, perm))
        off += s
    return blocks


def jacfwd(fun, argnums=0, has_aux: bool = False):
    """Jacobian by forward mode (vmap of jvp over a standard basis).

    Output structure: for each output leaf, the input structure, each block of
    shape out_shape + in_shape.

    Example:
        >>> import ember.numpy as enp
        >>> jacfwd(enp.sin)(0.0).tolist()
        1.0
    """
    @functools.wraps(fun, updated=())
    def wrapped(*args):
        single, nums = normalize_argnums(argnums, len(args))
        diff = tuple(args[i] for i in nums)
        leaves, in_tree = tree_flatten(diff[0] if single else diff)
        leaves = [as_ember(x) for x in leaves]

        box = []

        def f_flat(*xs):
            new = list(args)
            vals = tree_unflatten(in_tree, list(xs))
            if single:
                new[nums[0]] = vals
            else:
                for i, v in zip(nums, vals):
                    new[i] = v
            out = fun(*new)
            if has_aux:
                out, aux = out
                box.append(aux)
            o, t = tree_flatten(out)
            box.insert(0, t)
            return o

        basis, sizes = _std_basis(leaves)

        def push(*t):
            return jvp(f_flat, tuple(leaves), tuple(t))[1]

        cols = vmap(push)(*basis)  # per output leaf: (N, *out_shape)
        out_tree = box[0]
        aux = box[1] if has_aux else None
        result = [tree_unflatten(in_tree, _out_in_blocks(c, sizes, leaves, get_aval(c).update(shape=get_aval(c).shape[1:])))
                  for c in cols]
        jac = tree_unflatten(out_tree, result)
        return (jac, aux) if has_aux else jac

    return wrapped


def jacrev(fun, argnums=0, has_aux: bool = False):
    """Jacobian by reverse mode (vmap of vjp over a standard basis of the outputs).

    Example:
        >>> import ember.numpy as enp
        >>> jacrev(lambda x: x * 3.0)(enp.ones(2)).tolist()
        [[3.0, 0.0], [0.0, 3.0]]
    """
    @functools.wraps(fun, updated=())
    def wrapped(*args):
        single, nums = normalize_argnums(argnums, len(args))
        diff = tuple(args[i] for i in nums)
        leaves, in_tree = tree_flatten(diff[0] if single else diff)
        leaves = [as_ember(x) for x in leaves]
        box = []

        def f_flat(*xs):
            new = list(args)
            vals = tree_unflatten(in_tree, list(xs))
            if single:
                new[nums[0]] = vals
            else:
                for i, v in zip(nums, vals):
                    new[i] = v
            out = fun(*new)
            if has_aux:
                out, aux = out
                box.append(aux)
            o, t = tree_flatten(out)
            box.insert(0, t)
            return o

        out_leaves, f_vjp = vjp(f_flat, *leaves)
        out_tree = box[0]
        basis, sizes = _std_basis(out_leaves)

        def pull(*cts):
            return f_vjp(list(cts))

        rows = vmap(pull)(*basis)  # per input leaf: (N_out, *in_shape)
        from ..fx.prims.shape import reshape
        result = []
        off = 0
        for o, s in zip(out_leaves, sizes):
            oa = get_aval(o)
            blocks = [reshape(_rows(r, off, off + s), oa.shape + get_aval(x).shape) for r, x in zip(rows, leaves)]
            result.append(tree_unflatten(in_tree, blocks))
            off += s
        jac = tree_unflatten(out_tree, result)
        return (jac, box[1]) if has_aux else jac

    return wrapped


def hessian(fun, argnums=0, has_aux: bool = False):
    """Hessian as jacfwd(jacrev(fun)) (forward-over-reverse).

    Example:
        >>> import ember.numpy as enp
        >>> hessian(lambda x: enp.sum(x ** 3))(enp.asarray([1.0, 2.0])).tolist()
        [[6.0, 0.0], [0.0, 12.0]]
    """
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux), argnums, has_aux=has_aux)
